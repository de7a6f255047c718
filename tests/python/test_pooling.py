"""2-D and 3-D pooling on npu against CPU: max (with indices, dilation, ceil_mode, padding), average
(count_include_pad, divisor_override, ceil_mode), adaptive average and max; forward and backward; batched and
unbatched; float32/float64/bfloat16; errors with CPU's messages."""
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim
from conftest import acknowledge_device_error

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


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8])
def test_max_pool_integers_match_cpu(dtype, native_only):
    # a comparison: CPU and CUDA take integer inputs (label maps, masks); ties keep the first index as CPU
    x = torch.randint(0, 9, (2, 3, 9, 8), generator=torch.Generator().manual_seed(1)).to(dtype)
    for fn in (lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True),
               lambda t: F.max_pool2d(t, (2, 3), (1, 2), dilation=2, ceil_mode=True, return_indices=True),
               lambda t: F.max_pool3d(t[None], (2, 2, 2), return_indices=True),
               lambda t: F.max_pool1d(t[0], 3, return_indices=True)):
        (v, i), (vn, i_n) = fn(x), fn(x.npu())
        assert torch.equal(vn.cpu(), v) and torch.equal(i_n.cpu(), i)


def test_integer_average_pooling_is_refused_naming_op_and_dtype():
    # CUDA refuses it (CPU computes it): a NotImplementedError naming the op and the dtype, not a bare device error
    x = torch.ones(1, 2, 4, 4, dtype=torch.int64, device="npu")
    for fn, op in ((lambda t: F.avg_pool2d(t, 2), "avg_pool2d"), (lambda t: F.avg_pool3d(t[None], 2), "avg_pool3d"),
                   (lambda t: F.adaptive_avg_pool2d(t, 2), "adaptive_avg_pool2d"),
                   (lambda t: F.adaptive_max_pool2d(t, 2), "adaptive_max_pool2d")):
        with pytest.raises(NotImplementedError, match=f"{op}.*Long"):
            fn(x)


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


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_max_unpool_forward_backward(dtype):
    # unpooling what max_pool returned (1-D, 2-D, 3-D; batched and not; an output_size larger than the default;
    # channels_last input), out=, then repeated indices
    torch_npu_sim.reset_fallback_ops()
    g = torch.Generator().manual_seed(2)
    cases = [
        (F.max_pool1d, F.max_unpool1d, (2, 3, 11), dict(kernel_size=2), dict(kernel_size=2, output_size=(11,))),
        (F.max_pool2d, F.max_unpool2d, (2, 3, 9, 10), dict(kernel_size=3, stride=2, padding=1),
         dict(kernel_size=3, stride=2, padding=1, output_size=(9, 10))),
        (F.max_pool2d, F.max_unpool2d, (3, 8, 8), dict(kernel_size=2), dict(kernel_size=2, output_size=(9, 9))),
        (F.max_pool3d, F.max_unpool3d, (2, 2, 5, 6, 7), dict(kernel_size=2), dict(kernel_size=2, output_size=(5, 6, 7))),
        (F.max_pool3d, F.max_unpool3d, (2, 4, 6, 5), dict(kernel_size=(1, 2, 2), stride=(1, 2, 2)),
         dict(kernel_size=(1, 2, 2), stride=(1, 2, 2), output_size=(4, 6, 5))),
    ]
    for pool, unpool, shape, pool_kw, unpool_kw in cases:
        x = torch.randn(shape, generator=g).to(dtype)
        y, idx = pool(x, return_indices=True, **pool_kw)
        yc, yn = y.clone().requires_grad_(), y.npu().requires_grad_()
        oc, on = unpool(yc, idx, **unpool_kw), unpool(yn, idx.npu(), **unpool_kw)
        assert on.shape == oc.shape and on.dtype == oc.dtype
        torch.testing.assert_close(on.detach().cpu(), oc.detach(), atol=0, rtol=0)
        grad = torch.randn(oc.shape, generator=g).to(dtype)
        oc.backward(grad)
        on.backward(grad.npu())
        torch.testing.assert_close(yn.grad.cpu(), yc.grad, atol=0, rtol=0)
    x = torch.randn(2, 4, 6, 6, generator=g).to(dtype).contiguous(memory_format=torch.channels_last)
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    oc, on = F.max_unpool2d(y, idx, 2), F.max_unpool2d(y.npu(), idx.npu(), 2)
    assert on.stride() == oc.stride()
    torch.testing.assert_close(on.cpu(), oc, atol=0, rtol=0)
    same_index = torch.zeros(1, 1, 2, 2, dtype=torch.long)
    vals = torch.arange(4.0).reshape(1, 1, 2, 2).to(dtype)
    # repeated indices: PyTorch leaves the winner undefined (CPU's float32 and float64 kernels differ); npu's is
    # the last write
    assert F.max_unpool2d(vals.npu(), same_index.npu(), 2).cpu()[0, 0, 0, 0].item() == 3.0
    out = torch.empty(0, dtype=dtype, device="npu")
    torch.ops.aten.max_unpool2d.out(y.npu(), idx.npu(), [6, 6], out=out)
    torch.testing.assert_close(out.cpu(), oc, atol=0, rtol=0)
    assert not [op for op in torch_npu_sim.fallback_ops() if "unpool" in op], torch_npu_sim.fallback_ops()


def test_max_unpool_errors():
    y = torch.randn(1, 1, 2, 2)
    idx = torch.tensor([[[[0, 1], [4, 5]]]])
    for bad in [lambda t, i: F.max_unpool2d(t, i.int(), 2),                       # int32 indices
                lambda t, i: F.max_unpool2d(t, i[..., :1], 2),                    # shape mismatch
                lambda t, i: torch.ops.aten.max_unpool2d(t, i, [4, 4, 4]),       # output_size length
                lambda t, i: torch.ops.aten.max_unpool2d(t[0, 0], i[0, 0], [4, 4]),  # 2-D input
                lambda t, i: torch.ops.aten.max_unpool3d(t[None], i[None], [1, 4, 4], [1, 0, 2], [0, 0, 0])]:
        with pytest.raises(RuntimeError) as cpu_err:
            bad(y, idx)
        with pytest.raises(RuntimeError) as npu_err:
            bad(y.npu(), idx.npu())
        assert str(npu_err.value).splitlines()[0] == str(cpu_err.value).splitlines()[0]
    # an index outside the output plane: CPU raises at once, npu (as CUDA) fails the kernel; nothing is read back
    with pytest.raises(RuntimeError, match="Found an invalid max index: 30 \\(output volumes are of size 4x4\\)"):
        F.max_unpool2d(y, idx.clone().fill_(30), 2)
    out = F.max_unpool2d(y.npu(), idx.npu().fill_(30), 2)
    with pytest.raises(RuntimeError, match="Found an invalid max index: 30 \\(output volumes are of size 4x4\\)"):
        out.cpu()
    acknowledge_device_error()
