"""Recurrent layers on npu: LSTM/GRU (cells and full layers) run the fused cell kernels natively
(_thnn_fused_lstm_cell / _thnn_fused_gru_cell and their backward) and match CPU PyTorch in values and
gradients; bad arguments to the fused ops are clear errors."""
import copy

import pytest
import torch

import torch_npu_sim  # noqa: F401

TOL = {torch.float32: 2e-5, torch.float64: 1e-12, torch.float16: 1e-2, torch.bfloat16: 6e-2}


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("TORCH_NPU_FALLBACK_CPU_DISABLE", "1")


def run(module, inputs, dtype):
    """Forward + backward of sum(outputs**2); returns outputs, input grads and parameter grads."""
    inputs = [t.detach().clone().requires_grad_() for t in inputs]
    out = module(*inputs)
    flat = [o for o in (out if isinstance(out, tuple) else (out,)) for o in (o if isinstance(o, tuple) else (o,))]
    sum((o.float() ** 2).sum() for o in flat).backward()
    return [o.detach().cpu().float() for o in flat] + [t.grad.cpu().float() for t in inputs] + \
           [p.grad.cpu().float() for p in module.parameters()]


def compare(make, inputs, dtype):
    torch.manual_seed(0)
    cpu = make().to(dtype)
    npu = copy.deepcopy(cpu).npu()
    ref_dtype = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    # the reference runs in float32 for 16-bit types (CPU's own half cells round differently)
    ref = run(copy.deepcopy(cpu).to(ref_dtype), [t.to(dtype).to(ref_dtype) for t in inputs], ref_dtype)
    got = run(npu, [t.to(dtype).npu() for t in inputs], dtype)
    assert len(ref) == len(got)
    for r, g in zip(ref, got):
        torch.testing.assert_close(g, r, rtol=TOL[dtype], atol=TOL[dtype] * 4)


DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell"])
@pytest.mark.parametrize("bias", [True, False])
def test_cells(kind, dtype, bias):
    x, h = torch.randn(5, 8), torch.randn(5, 6)
    if kind == "LSTMCell":
        cell = lambda: torch.nn.LSTMCell(8, 6, bias=bias)  # noqa: E731
        compare(lambda: Wrap(cell()), [x, h, torch.randn(5, 6)], dtype)
    else:
        compare(lambda: torch.nn.GRUCell(8, 6, bias=bias), [x, h], dtype)


class Wrap(torch.nn.Module):
    """LSTMCell taking (x, h, c) as separate inputs so all three get gradients."""

    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def forward(self, x, h, c):
        return self.cell(x, (h, c))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_layers(kind, dtype):
    make = lambda: getattr(torch.nn, kind)(8, 6, num_layers=2, bidirectional=True, batch_first=True)  # noqa: E731
    compare(make, [torch.randn(3, 7, 8)], dtype)


def test_lstm_gradient_through_cell_state_only():
    torch.manual_seed(0)
    cell = torch.nn.LSTMCell(4, 3)
    x = torch.randn(2, 4)
    _, c = cell(x)
    c.sum().backward()
    ref = [p.grad.clone() for p in cell.parameters()]
    cell.zero_grad()
    cell_n = cell.npu()
    _, c_n = cell_n(x.npu())
    c_n.sum().backward()
    for r, p in zip(ref, cell_n.parameters()):
        torch.testing.assert_close(p.grad.cpu(), r, rtol=1e-5, atol=1e-6)


def test_fused_cell_bad_arguments():
    ig = torch.randn(2, 12, device="npu")
    with pytest.raises(RuntimeError, match=r"_thnn_fused_lstm_cell: expected cx of shape \[2, 3\]"):
        torch.ops.aten._thnn_fused_lstm_cell(ig, ig, torch.randn(2, 4, device="npu"))
    with pytest.raises(RuntimeError, match="_thnn_fused_gru_cell: expected input_gates of shape"):
        torch.ops.aten._thnn_fused_gru_cell(torch.randn(2, 10, device="npu"), torch.randn(2, 10, device="npu"),
                                   torch.randn(2, 3, device="npu"))
    with pytest.raises(RuntimeError, match="_thnn_fused_gru_cell: expected hidden_gates of dtype Float"):
        torch.ops.aten._thnn_fused_gru_cell(torch.randn(2, 9, device="npu"), torch.randn(2, 9, device="npu").double(),
                                   torch.randn(2, 3, device="npu"))
    with pytest.raises(RuntimeError, match="_thnn_fused_lstm_cell: expected cx on npu:0"):
        torch.ops.aten._thnn_fused_lstm_cell(ig, ig, torch.randn(2, 3))
    with pytest.raises(RuntimeError, match="input_bias and hidden_bias must both be given"):
        torch.ops.aten._thnn_fused_lstm_cell(ig, ig, torch.randn(2, 3, device="npu"), torch.randn(12, device="npu"))
