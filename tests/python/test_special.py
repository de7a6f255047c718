"""digamma, polygamma (orders 0 and 1 native; higher orders are a recorded CPU fallback) and erfinv
on npu against CPU PyTorch: values incl. poles and domain edges, gradients, integer inputs, out=."""
import os

import pytest
import torch

import torch_npu_sim

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
# our trigamma is a longer asymptotic series than CPU's (CPU's is ~1e-9 off), hence the float64 tolerance
TOL = {torch.float32: dict(rtol=2e-5, atol=2e-5), torch.float64: dict(rtol=1e-8, atol=1e-8),
       torch.float16: dict(rtol=2e-2, atol=2e-2), torch.bfloat16: dict(rtol=5e-2, atol=5e-2)}


@pytest.fixture(autouse=True)
def _reset():
    torch_npu_sim.reset_fallback_ops()
    yield


def same(got, want):
    got = got.cpu()
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    tol = TOL.get(want.dtype, dict(rtol=0, atol=0))
    torch.testing.assert_close(got.double(), want.double(), equal_nan=True, **tol)


def fwd_bwd(fn, x):
    xc, xn = x.clone().requires_grad_(), x.to("npu").requires_grad_()
    yc, yn = fn(xc), fn(xn)
    same(yn.detach(), yc.detach())
    g = torch.randn(yc.shape, generator=torch.Generator().manual_seed(1)).to(yc.dtype)
    yc.backward(g)
    yn.backward(g.to("npu"))
    same(xn.grad, xc.grad)


@pytest.mark.parametrize("dtype", FLOATS)
def test_digamma(dtype):
    x = torch.tensor([-2.5, -0.3, 0.001, 0.5, 1.0, 1.4616, 3.7, 12.5, 150.0, 7.25]).to(dtype)
    fwd_bwd(torch.digamma, x)
    poles = torch.tensor([0.0, -0.0, -1.0, -3.0]).to(dtype)
    same(torch.digamma(poles.to("npu")), torch.digamma(poles))
    assert not torch_npu_sim.fallback_ops(), torch_npu_sim.fallback_ops()


@pytest.mark.parametrize("dtype", FLOATS)
def test_polygamma(dtype):
    x = torch.tensor([-2.5, -0.3, 0.05, 0.5, 1.0, 3.7, 12.5, 40.0]).to(dtype)
    for n in (0, 1):
        same(torch.polygamma(n, x.to("npu")), torch.polygamma(n, x))
    fwd_bwd(lambda t: torch.polygamma(0, t), x)
    out = torch.empty(0, dtype=dtype, device="npu")
    torch.polygamma(1, x.to("npu"), out=out)
    same(out, torch.polygamma(1, x))
    assert not torch_npu_sim.fallback_ops(), torch_npu_sim.fallback_ops()


def test_polygamma_higher_order_is_a_recorded_fallback():
    x = torch.tensor([0.5, 1.5, 4.0])
    if os.environ.get("TORCH_NPU_FALLBACK_CPU_DISABLE") == "1":
        with pytest.raises(NotImplementedError, match="polygamma.out.*CPU fallback is disabled"):
            torch.polygamma(3, x.to("npu"))
        return
    same(torch.polygamma(3, x.to("npu")), torch.polygamma(3, x))
    assert "aten::polygamma.out" in torch_npu_sim.fallback_ops()


@pytest.mark.parametrize("dtype", FLOATS)
def test_erfinv(dtype):
    x = torch.tensor([-0.999, -0.7, -0.2, 0.0, 1e-4, 0.3, 0.5, 0.9, 0.995]).to(dtype)
    fwd_bwd(torch.erfinv, x)
    edges = torch.tensor([-1.0, 1.0, 1.5, -2.0, float("nan"), -0.0]).to(dtype)
    same(torch.erfinv(edges.to("npu")), torch.erfinv(edges))
    assert torch.erfinv(edges.to("npu"))[-1].item() == 0.0 and torch.erfinv(edges.to("npu")).cpu()[-1].signbit()
    assert not torch_npu_sim.fallback_ops(), torch_npu_sim.fallback_ops()


def test_integer_inputs_promote():
    i = torch.tensor([1, 2, 5])
    same(torch.digamma(i.to("npu")), torch.digamma(i))
    same(torch.erfinv(torch.tensor([0, 1]).to("npu")), torch.erfinv(torch.tensor([0, 1])))
    assert not torch_npu_sim.fallback_ops(), torch_npu_sim.fallback_ops()
