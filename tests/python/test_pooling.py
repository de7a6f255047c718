"""2-D and 3-D pooling on npu against CPU: max (with indices, dilation, ceil_mode, padding), average
(count_include_pad, divisor_override, ceil_mode), adaptive average and max; forward and backward; batched and
unbatched; float32/float64/bfloat16; errors with CPU's messages."""
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim

CASES = {
    "max2": lambda x: F.max_pool2d(x, 2),
    "max_pad_ceil": lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
    "max_dilation": lambda x: F.max_pool2d(x, 3, 1, 1, dilation=2),
    "max_rect": lambda x: F.max_pool2d(x, (2, 3), (1, 2)),
    "avg2": lambda x: F.avg_pool2d(x, 2),
    "avg_pad": lambda x: F.avg_pool2d(x, 3, 2, 1),
    "avg_no_pad_count": lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False, ceil_mode=True),
    "avg_divisor": lambda x: F.avg_pool2d(x, 2, divisor_override=3),
    "adaptive_3x5": lambda x: F.adaptive_avg_pool2d(x, (3, 5)),
    "adaptive_7": lambda x: F.adaptive_avg_pool2d(x, 7),
    "adaptive_max_3x5": lambda x: F.adaptive_max_pool2d(x, (3, 5)),
    "adaptive_max_4": lambda x: F.adaptive_max_pool2d(x, 4),
    "adaptive_max_up": lambda x: F.adaptive_max_pool2d(x, (12, 13)),
}


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-6), (torch.float64, 1e-12), (torch.bfloat16, 2e-2),
                                       (torch.float16, 2e-3)])
@pytest.mark.parametrize("name", sorted(CASES))
def test_pooling_forward_backward(name, dtype, tol):
    torch_npu_sim.reset_fallback_ops()
    g = torch.Generator().manual_seed(0)
    for shape in [(2, 3, 9, 11), (3, 8, 10)]:
        x = torch.randn(shape, generator=g).to(dtype)
        xc, xn = x.clone().requires_grad_(), x.npu().requires_grad_()
        yc, yn = CASES[name](xc), CASES[name](xn)
        grad = torch.randn(yc.shape, generator=g).to(dtype)
        yc.backward(grad)
        yn.backward(grad.npu())
        torch.testing.assert_close(yn.detach().cpu(), yc.detach(), atol=tol, rtol=tol)
        torch.testing.assert_close(xn.grad.cpu(), xc.grad, atol=tol * 4, rtol=tol * 4)
    assert not [op for op in torch_npu_sim.fallback_ops() if "pool" in op], torch_npu_sim.fallback_ops()


def test_max_pool_indices_match_cpu():
    x = torch.randn(2, 2, 6, 6)
    _, ic = F.max_pool2d(x, 2, return_indices=True)
    _, inpu = F.max_pool2d(x.npu(), 2, return_indices=True)
    assert torch.equal(inpu.cpu(), ic)


def test_pooling_errors_match_cpu():
    x = torch.randn(1, 1, 4, 4)
    for bad in [lambda t: F.max_pool2d(t, 3, 1, 2), lambda t: F.avg_pool2d(t, 2, divisor_override=0),
                lambda t: F.max_pool2d(t, 5)]:
        with pytest.raises(RuntimeError) as cpu_err:
            bad(x)
        with pytest.raises(RuntimeError) as npu_err:
            bad(x.npu())
        assert str(cpu_err.value).split(":")[-1].strip()[:20] in str(npu_err.value)


def test_adaptive_max_pool_indices_and_out():
    torch_npu_sim.reset_fallback_ops()
    x = torch.randn(2, 3, 7, 9)
    vc, ic = F.adaptive_max_pool2d(x, (3, 4), return_indices=True)
    vn, inpu = F.adaptive_max_pool2d(x.npu(), (3, 4), return_indices=True)
    assert torch.equal(inpu.cpu(), ic) and torch.equal(vn.cpu(), vc)
    out, idx = torch.empty(0, device="npu"), torch.empty(0, dtype=torch.long, device="npu")
    torch._C._nn.adaptive_max_pool2d(x.npu(), [3, 4], out=(out, idx))
    assert torch.equal(out.cpu(), vc) and torch.equal(idx.cpu(), ic)
    assert not [op for op in torch_npu_sim.fallback_ops() if "pool" in op], torch_npu_sim.fallback_ops()


def test_adaptive_max_pool_errors_match_cpu():
    pool = torch._C._nn.adaptive_max_pool2d
    for x, size in [(torch.randn(2, 0, 4), (2, 2)), (torch.randn(4, 4), (2, 2)), (torch.randn(1, 2, 4, 4), (2, 2, 2))]:
        with pytest.raises(RuntimeError):
            pool(x, size)
        with pytest.raises(RuntimeError, match="adaptive_max_pool2d"):
            pool(x.npu(), size)


CASES_3D = {
    "max3": lambda x: F.max_pool3d(x, 2),
    "max3_pad_ceil_dilation": lambda x: F.max_pool3d(x, (2, 3, 3), (1, 2, 2), (1, 1, 0), dilation=(1, 1, 2),
                                                    ceil_mode=True),
    "avg3": lambda x: F.avg_pool3d(x, 2),
    "avg3_pad_no_count": lambda x: F.avg_pool3d(x, 3, 2, 1, count_include_pad=False, ceil_mode=True),
    "avg3_divisor": lambda x: F.avg_pool3d(x, (1, 2, 2), divisor_override=3),
    "adaptive3": lambda x: F.adaptive_avg_pool3d(x, (2, 3, 4)),
    "adaptive3_up": lambda x: F.adaptive_avg_pool3d(x, (7, 1, 9)),
    "adaptive_max3": lambda x: F.adaptive_max_pool3d(x, (2, 3, 4)),
    "adaptive_max3_up": lambda x: F.adaptive_max_pool3d(x, (6, 9, 2)),
}


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-6), (torch.float64, 1e-12), (torch.bfloat16, 2e-2)])
@pytest.mark.parametrize("name", sorted(CASES_3D))
def test_pooling_3d_forward_backward(name, dtype, tol):
    """3-D pooling runs the 2-D kernels with a depth axis (video, medical volumes): batched and unbatched."""
    torch_npu_sim.reset_fallback_ops()
    g = torch.Generator().manual_seed(1)
    for shape in [(2, 3, 5, 9, 11), (3, 6, 8, 10)]:
        x = torch.randn(shape, generator=g).to(dtype)
        # CPU has no bfloat16 avg_pool3d (CUDA has): the reference is then computed in float32 and rounded.
        ref_dtype = torch.float32 if dtype == torch.bfloat16 and "avg" in name else dtype
        xc, xn = x.to(ref_dtype, copy=True).requires_grad_(), x.npu().requires_grad_()
        yc, yn = CASES_3D[name](xc), CASES_3D[name](xn)
        grad = torch.randn(yc.shape, generator=g).to(dtype)
        yc.backward(grad.to(ref_dtype))
        yn.backward(grad.npu())
        torch.testing.assert_close(yn.detach().cpu(), yc.detach().to(dtype), atol=tol, rtol=tol)
        torch.testing.assert_close(xn.grad.cpu(), xc.grad.to(dtype), atol=tol * 4, rtol=tol * 4)
    assert not torch_npu_sim.fallback_ops(), torch_npu_sim.fallback_ops()


def test_max_pool3d_indices_nan_and_errors_match_cpu():
    x = torch.randn(2, 2, 4, 6, 6)
    x[0, 0, 1, 2, 3] = float("nan")
    for fn in [lambda t: F.max_pool3d(t, 2, return_indices=True), lambda t: F.adaptive_max_pool3d(t, 3, True)]:
        (vc, ic), (vn, inpu) = fn(x), fn(x.npu())
        assert torch.equal(inpu.cpu(), ic)
        torch.testing.assert_close(vn.cpu(), vc, equal_nan=True)
    for bad in [lambda t: F.max_pool3d(t, 3, 1, 2), lambda t: F.avg_pool3d(t, 2, divisor_override=0),
                lambda t: F.max_pool3d(t, 7), lambda t: F.max_pool3d(t, (2, 2))]:
        with pytest.raises(RuntimeError) as cpu_err:
            bad(x)
        with pytest.raises(RuntimeError) as npu_err:
            bad(x.npu())
        assert str(cpu_err.value).split(":")[-1].strip()[:20] in str(npu_err.value), (cpu_err.value, npu_err.value)
