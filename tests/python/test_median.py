"""median / nanmedian on npu against CPU PyTorch: whole tensor and along a dim (keepdim, negative dims,
0-dim input), NaN handling, ties, integer dtypes, the out= form, the gradient, and bad inputs; nothing
falls back to the CPU."""
import pytest
import torch

import torch_npu_sim  # noqa: F401  (registers "npu")

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.uint8]


pytestmark = pytest.mark.usefixtures("native_only")  # conftest: no op may reach the CPU fallback


def data(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randperm(int(torch.tensor(shape).prod()), generator=g).reshape(shape).to(dtype) / 7
    return torch.randint(0, 50, shape, generator=g).to(dtype)


def same(got, want):
    got = got.cpu()
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", ["median", "nanmedian"])
def test_median_all(dtype, fn):
    for shape in [(7,), (4, 6), (3, 4, 5)]:
        x = data(shape, dtype)
        same(getattr(x.to("npu"), fn)(), getattr(x, fn)())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", ["median", "nanmedian"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_median_dim(dtype, fn, dim, keepdim):
    x = data((4, 6, 5), dtype)  # integer data has ties: the lowest index wins on both sides
    v, i = getattr(x.to("npu"), fn)(dim, keepdim)
    cv, ci = getattr(x, fn)(dim, keepdim)
    same(v, cv)
    same(i, ci)


@pytest.mark.parametrize("fn", ["median", "nanmedian"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_median_nan(fn, dtype):
    nan = float("nan")
    x = torch.tensor([[1.0, nan, 3.0, 2.0, nan], [nan, nan, nan, nan, nan], [5.0, 4.0, 3.0, 2.0, 1.0],
                      [2.0, 2.0, nan, 1.0, 2.0]], dtype=dtype)
    v, i = getattr(x.to("npu"), fn)(1)
    cv, ci = getattr(x, fn)(1)
    same(v, cv)
    # Row 1 is all NaN: CPU's nanmedian index there is whatever std::nth_element leaves (PyTorch documents
    # median indices of non-unique values as device-specific); ours is the first NaN. Both must be NaNs.
    rows = [0, 2, 3] if fn == "nanmedian" else [0, 1, 2, 3]
    same(i[rows], ci[rows])
    assert torch.isnan(x[1, i[1].item()])
    same(getattr(x.to("npu"), fn)(), getattr(x, fn)())
    same(getattr(x[2].to("npu"), fn)(), getattr(x[2], fn)())


def test_median_scalar_empty_and_out():
    s = torch.tensor(2.5)
    v, i = s.to("npu").median(0)
    same(v, s.median(0)[0])
    same(i, s.median(0)[1])
    same(torch.empty(0, 3).to("npu").median(), torch.empty(0, 3).median())
    x = data((5, 4), torch.float32)
    values, indices = torch.empty(0, device="npu"), torch.empty(0, dtype=torch.long, device="npu")
    torch.median(x.to("npu"), 0, out=(values, indices))
    same(values, x.median(0)[0])
    same(indices, x.median(0)[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_median_gradient(dtype):
    x = data((4, 7), dtype)
    for f in [lambda t: t.median(), lambda t: t.median(1)[0], lambda t: t.nanmedian(0, True)[0]]:
        xc, xn = x.clone().requires_grad_(), x.to("npu").requires_grad_()
        yc, yn = f(xc), f(xn)
        yc.sum().backward()
        yn.sum().backward()
        same(xn.grad, xc.grad)


def test_median_bad_inputs():
    x = torch.empty(3, 0)
    for fn in [lambda t: t.median(1), lambda t: t.nanmedian(1), lambda t: t.median(5),
               lambda t: torch.median(t.new_ones(3, 2), 0, out=(t.new_empty(0), t.new_empty(0)))]:
        with pytest.raises(Exception) as cpu_err:
            fn(x)
        with pytest.raises(type(cpu_err.value), match="median|dim|Long|range"):
            fn(x.to("npu"))
