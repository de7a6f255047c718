"""F.unfold (im2col) and F.fold (col2im) on npu against CPU PyTorch: kernel/dilation/padding/stride
combinations, batched and unbatched, values and gradients in four float dtypes, bool unfold, out=,
and CPU's argument errors; nothing falls back to the CPU."""
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim  # noqa: F401  (registers "npu")

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-12, atol=1e-12),
       torch.float16: dict(rtol=2e-2, atol=2e-2), torch.bfloat16: dict(rtol=5e-2, atol=8e-2)}
GEOMETRY = [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=(1, 2)), dict(kernel_size=3, padding=1),
            dict(kernel_size=(3, 2), dilation=(2, 1), padding=(1, 0), stride=2)]


pytestmark = pytest.mark.usefixtures("native_only")  # conftest: no op may reach the CPU fallback


def same(got, want):
    got = got.cpu()
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    torch.testing.assert_close(got, want, **TOL.get(want.dtype, dict(rtol=0, atol=0)))


def fwd_bwd(fn, x):
    xc, xn = x.clone().requires_grad_(), x.to("npu").requires_grad_()
    yc, yn = fn(xc), fn(xn)
    same(yn.detach(), yc.detach())
    g = torch.randn(yc.shape, generator=torch.Generator().manual_seed(1)).to(yc.dtype)
    yc.backward(g)
    yn.backward(g.to("npu"))
    same(xn.grad, xc.grad)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("geo", range(len(GEOMETRY)))
@pytest.mark.parametrize("batched", [True, False])
def test_unfold(dtype, geo, batched):
    x = torch.randn((2, 3, 7, 8) if batched else (3, 7, 8), generator=torch.Generator().manual_seed(0)).to(dtype)
    fwd_bwd(lambda t: F.unfold(t, **GEOMETRY[geo]), x)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("geo", range(len(GEOMETRY)))
@pytest.mark.parametrize("batched", [True, False])
def test_fold(dtype, geo, batched):
    kw = GEOMETRY[geo]
    cols_shape = F.unfold(torch.zeros(1, 3, 7, 8), **kw).shape[1:]
    shape = ((2,) if batched else ()) + tuple(cols_shape)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0)).to(dtype)
    fwd_bwd(lambda t: F.fold(t, (7, 8), **kw), x)


def test_unfold_bool_and_integer_dtypes():
    x = torch.randint(0, 2, (2, 2, 5, 5))
    same(F.unfold(x.bool().to("npu"), 3, padding=1), F.unfold(x.bool(), 3, padding=1))
    for dtype in [torch.int64, torch.uint8]:  # not supported by CPU either
        with pytest.raises(NotImplementedError, match="im2col"):
            F.unfold(x.to(dtype), 3)
        with pytest.raises(NotImplementedError, match="im2col"):
            F.unfold(x.to(dtype).to("npu"), 3)


def test_out_and_strided_input():
    x = torch.randn(2, 3, 6, 7).transpose(2, 3)
    out = torch.empty(0, device="npu")
    torch._C._nn.im2col(x.to("npu"), [2, 2], [1, 1], [0, 0], [1, 1], out=out)
    same(out, torch._C._nn.im2col(x, [2, 2], [1, 1], [0, 0], [1, 1]))
    cols = torch.randn(2, 12, 30).transpose(0, 1).contiguous().transpose(0, 1)
    out = torch.empty(0, device="npu")
    torch._C._nn.col2im(cols.to("npu"), [6, 7], [2, 2], [1, 1], [0, 0], [1, 1], out=out)
    same(out, torch._C._nn.col2im(cols, [6, 7], [2, 2], [1, 1], [0, 0], [1, 1]))


def test_bad_inputs():
    x = torch.randn(1, 2, 4, 4)
    cols = torch.randn(1, 8, 9)
    cases = [(lambda t: torch._C._nn.im2col(t, [2], [1, 1], [0, 0], [1, 1]), x, "kernel_size equals to 2"),
             (lambda t: F.unfold(t, 0), x, "kernel size should be greater than zero"),
             (lambda t: F.unfold(t, 5), x, "too small|Given input with spatial size"),
             (lambda t: F.fold(t, (4, 4), 3), cols, "divisible|Expected size of input"),
             (lambda t: F.fold(t, (4, 4), 2, stride=0), cols, "stride should be greater than zero")]
    for fn, t, match in cases:
        with pytest.raises(RuntimeError, match=match):
            fn(t)
        with pytest.raises(RuntimeError, match=match):
            fn(t.to("npu"))
