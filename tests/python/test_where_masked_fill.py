"""where and masked_fill / masked_fill_ on npu (one select kernel reading the condition as bytes) against CPU
PyTorch: every dtype, host scalars and CPU 0-dim tensors in each operand position, broadcasting, strided operands,
out=, autograd, and CPU's errors for bad input."""
import warnings

import pytest
import torch

import torch_npu_sim

DEV = "npu"
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
          torch.uint8, torch.bool, torch.complex64, torch.complex128]


def make(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_complex:
        return torch.randn(shape, dtype=dtype, generator=g)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(0, 100, shape, generator=g).to(dtype)


def same(got, want):
    got = got.cpu()
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    assert torch.equal(got, want), (got, want)  # a select moves values: bit-equal


def to_npu(x):
    return x.to(DEV) if isinstance(x, torch.Tensor) else x


@pytest.fixture(autouse=True)
def _native_only():
    torch_npu_sim.reset_fallback_ops()
    yield
    fell = [op for op in torch_npu_sim.fallback_ops() if "where" in op or "masked_fill" in op]
    assert not fell, fell


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_where_every_dtype_with_broadcasting(dtype):
    cond = torch.rand(6, 1, 5, generator=torch.Generator().manual_seed(1)) > 0.4
    x, y = make((1, 7, 5), dtype, 2), make((5,), dtype, 3)
    same(torch.where(cond.to(DEV), x.to(DEV), y.to(DEV)), torch.where(cond, x, y))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.complex64], ids=str)
def test_where_scalars_and_cpu_zero_dim_operands(dtype):
    cond = torch.rand(64, 33, generator=torch.Generator().manual_seed(4)) > 0.5
    x = make((64, 33), dtype, 5)
    scalar = 2 if not dtype.is_floating_point and not dtype.is_complex else 0.5
    cases = [(cond, x, scalar), (cond, scalar, x), (cond, scalar, -scalar),
             (cond, x, torch.tensor(scalar)), (cond, torch.tensor(scalar, dtype=dtype), x),
             (torch.tensor(True), x, torch.tensor(scalar)), (torch.tensor(False), x, torch.zeros((), dtype=dtype))]
    for c, a, b in cases:
        want = torch.where(c, a, b)
        # CPU 0-dim tensors stay on the CPU (host scalars, as CUDA allows them); everything else moves
        move = lambda t: t if isinstance(t, torch.Tensor) and t.dim() == 0 else to_npu(t)
        same(torch.where(move(c), move(a), move(b)), want)
        same(torch.where(to_npu(c), to_npu(a), to_npu(b)), want)


def test_where_promotes_as_cpu():
    cond = torch.tensor([True, False, True, False])
    cases = [(torch.arange(4), torch.ones(4)), (torch.arange(4, dtype=torch.int32), torch.arange(4)),
             (torch.ones(4, dtype=torch.float16), 2.5), (torch.arange(4), 2.5), (torch.ones(4), torch.tensor(1.0 + 2j)),
             (torch.ones(4, dtype=torch.bfloat16), torch.ones(4, dtype=torch.float16)),
             (torch.ones(4, dtype=torch.bool), 3), (torch.ones(4, dtype=torch.float16), torch.tensor(2.0, dtype=torch.float64))]
    for a, b in cases:
        same(torch.where(cond.to(DEV), to_npu(a), b if not isinstance(b, torch.Tensor) or b.dim() == 0 else to_npu(b)),
             torch.where(cond, a, b))


def test_where_strided_operands():
    g = torch.Generator().manual_seed(6)
    base = torch.randn(40, 64, generator=g)
    cond = (torch.rand(64, 40, generator=g) > 0.5).t()  # transposed
    x = base[:, ::2].repeat(1, 2)                       # contiguous copy of a stepped view
    y = torch.randn(40, 128, generator=g)[:, ::2]       # stepped
    same(torch.where(cond.to(DEV), base.to(DEV).t().t(), y.to(DEV)[:, :]), torch.where(cond, base, y))
    yn = torch.randn(40, 128, generator=g)
    same(torch.where(cond.to(DEV), x.to(DEV), yn.to(DEV)[:, 1::2]), torch.where(cond, x, yn[:, 1::2]))
    expanded = torch.randn(1, 64, generator=g).expand(40, 64)
    same(torch.where(cond.to(DEV), expanded.to(DEV), y.to(DEV)), torch.where(cond, expanded, y))


def test_where_uint8_condition_reads_nonzero():
    cond = torch.tensor([0, 1, 2, 255, 0], dtype=torch.uint8)
    x, y = torch.arange(5.0), -torch.arange(5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.where(cond, x, y)
        got = torch.where(cond.to(DEV), x.to(DEV), y.to(DEV))
    same(got, want)


def test_where_out():
    cond = torch.rand(8, 9) > 0.5
    x, y = torch.randn(8, 9), torch.randn(9)
    out = torch.empty(3, device=DEV)
    with pytest.warns(UserWarning, match="was resized"):  # as on CPU
        torch.where(cond.to(DEV), x.to(DEV), y.to(DEV), out=out)
    same(out, torch.where(cond, x, y))
    with pytest.raises(RuntimeError, match="Expected out type to be Float but got Double"):
        torch.where(cond.to(DEV), x.to(DEV), y.to(DEV), out=torch.empty(0, dtype=torch.float64, device=DEV))


def test_where_bad_condition_and_devices():
    x = torch.randn(4)
    for dev in ("cpu", DEV):
        with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor, but got a tensor "
                                               "with dtype Float"):
            torch.where(x.to(dev), x.to(dev), x.to(dev))
    with pytest.raises(RuntimeError, match="same device"):
        torch.where(torch.ones(4, dtype=torch.bool), x.to(DEV), x.to(DEV))  # a CPU condition of 4 elements


def test_where_autograd():
    cond = torch.rand(5, 6) > 0.5
    x, y = torch.randn(5, 6, requires_grad=True), torch.randn(6, requires_grad=True)
    xn, yn = x.detach().to(DEV).requires_grad_(), y.detach().to(DEV).requires_grad_()
    g = torch.randn(5, 6)
    torch.where(cond, x, y).backward(g)
    torch.where(cond.to(DEV), xn, yn).backward(g.to(DEV))
    torch.testing.assert_close(xn.grad.cpu(), x.grad)
    torch.testing.assert_close(yn.grad.cpu(), y.grad)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_masked_fill_every_dtype(dtype):
    x = make((33, 17), dtype, 7)
    mask = torch.rand(33, 17, generator=torch.Generator().manual_seed(8)) > 0.5
    value = True if dtype == torch.bool else 3
    same(x.to(DEV).masked_fill(mask.to(DEV), value), x.masked_fill(mask, value))
    xn = x.to(DEV)
    xn.masked_fill_(mask.to(DEV), value)
    same(xn, x.clone().masked_fill_(mask, value))
    # a 0-dim value tensor, on the CPU and on npu (an operand of the launch: no host read)
    for v in (torch.tensor(value, dtype=dtype), torch.tensor(value, dtype=dtype).to(DEV)):
        same(x.to(DEV).masked_fill(mask.to(DEV), v), x.masked_fill(mask, v.cpu()))
        xn = x.to(DEV)
        xn.masked_fill_(mask.to(DEV), v)
        same(xn, x.clone().masked_fill_(mask, v.cpu()))


def test_masked_fill_values_convert_as_on_cpu():
    mask = torch.tensor([True, False, True])
    for dtype in (torch.float32, torch.int32, torch.float16, torch.complex64, torch.uint8, torch.bool):
        x = make((3,), dtype, 9)
        for v in (2.7, -1, 1 + 0j, True, float("inf"), 1 + 2j, 300, torch.tensor(2.5, dtype=torch.float64)):
            try:
                want = x.clone().masked_fill_(mask, v)
            except Exception as e:  # CPU refuses: npu raises the same type and message
                with pytest.raises(type(e), match=str(e).split("\n")[0][:40].replace("(", r"\(").replace(")", r"\)")):
                    x.to(DEV).masked_fill_(mask.to(DEV), v)
                continue
            xn = x.to(DEV)
            xn.masked_fill_(mask.to(DEV), v)
            same(xn, want)


def test_masked_fill_broadcasting():
    g = torch.Generator().manual_seed(10)
    x = torch.randn(4, 1, 6, generator=g)
    mask = torch.rand(5, 6, generator=g) > 0.5
    same(x.to(DEV).masked_fill(mask.to(DEV), -1.0), x.masked_fill(mask, -1.0))  # out of place: both broadcast
    y = torch.randn(4, 5, 6, generator=g)
    yn = y.to(DEV)
    yn.masked_fill_(mask.to(DEV), -1.0)  # in place: the mask broadcasts to self
    same(yn, y.clone().masked_fill_(mask, -1.0))
    with pytest.raises(RuntimeError, match=r"masked_fill_: mask of shape \[4, 5, 6\] cannot be broadcast to \[5, 6\]"):
        torch.randn(5, 6, device=DEV).masked_fill_(torch.ones(4, 5, 6, dtype=torch.bool, device=DEV), 1.0)


def test_masked_fill_strided_self_in_place():
    g = torch.Generator().manual_seed(11)
    base = torch.randn(30, 40, generator=g)
    mask = torch.rand(40, 30, generator=g) > 0.5
    bn = base.to(DEV)
    bn.t().masked_fill_(mask.to(DEV), 9.0)  # a transposed view of self
    want = base.clone()
    want.t().masked_fill_(mask, 9.0)
    same(bn, want)
    cn = base.to(DEV)
    cn[:, ::2].masked_fill_(mask.t()[:, :20].to(DEV), -9.0)
    want = base.clone()
    want[:, ::2].masked_fill_(mask.t()[:, :20], -9.0)
    same(cn, want)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single"):
        torch.zeros(1, 5, device=DEV).expand(4, 5).masked_fill_(torch.ones(4, 5, dtype=torch.bool, device=DEV), 1.0)


def test_masked_fill_bad_mask_and_value():
    x = torch.randn(4, device=DEV)
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks, but got mask with dtype Float"):
        x.masked_fill_(torch.ones(4, device=DEV), 1.0)
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks, but got mask with dtype Byte"):
        x.masked_fill(torch.ones(4, dtype=torch.uint8, device=DEV), 1.0)
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor, but got tensor with 1 dim"):
        x.masked_fill(torch.ones(4, dtype=torch.bool, device=DEV), torch.ones(1, device=DEV))


def test_masked_fill_autograd():
    x = torch.randn(6, 7, requires_grad=True)
    mask = torch.rand(6, 7) > 0.5
    xn = x.detach().to(DEV).requires_grad_()
    g = torch.randn(6, 7)
    x.masked_fill(mask, 0.25).backward(g)
    xn.masked_fill(mask.to(DEV), 0.25).backward(g.to(DEV))
    torch.testing.assert_close(xn.grad.cpu(), x.grad)
