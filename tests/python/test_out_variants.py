"""out= overloads served by their functional kernel (the out_variants family of csrc/aten/ops.yaml): natively, into
strided and empty out tensors, with ATen's out= errors; and in-place / out= paths of ATen composites that reached
kernels npu lacked (conj_physical_, fft_ihfft2's out=)."""
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim


def rand(*shape, seed=0, dtype=torch.float32):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.fixture
def native_only():
    torch_npu_sim.reset_fallback_ops()
    yield
    assert not torch_npu_sim.fallback_ops(), torch_npu_sim.fallback_ops()


def strided_out(shape, dtype):
    """An npu out tensor of `shape` at doubled strides, over a buffer of NaN / 77 (an unwritten element shows)."""
    fill = float("nan") if dtype.is_floating_point or dtype.is_complex else 77
    return torch.full((*shape, 2), fill, dtype=dtype, device="npu")[..., 1]


x4 = rand(2, 3, 6, 6, seed=1)
x5 = rand(2, 3, 4, 6, 6, seed=2)
idx = torch.tensor([[0, 2], [1, 1]])
CASES = {
    "clamp": (lambda x, **o: torch.clamp(x, -0.5, 0.7, **o), (x4,)),
    "clamp_min": (lambda x, **o: torch.clamp_min(x, 0.1, **o), (x4,)),
    "clamp_max": (lambda x, **o: torch.clamp_max(x, 0.1, **o), (x4,)),
    "elu": (lambda x, **o: torch._C._nn.elu(x, 0.5, **o), (x4,)),
    "index": (lambda x, i, **o: torch.ops.aten.index.Tensor_out(x, [None, i], **o) if o else x[:, i], (x4, idx)),
    "masked_select": (lambda x, **o: torch.masked_select(x, x > 0.3, **o), (x4,)),
    "take": (lambda x, i, **o: torch.take(x, i, **o), (x4, idx)),
    "searchsorted": (lambda x, **o: torch.searchsorted(x.flatten().sort().values, 0.25, **o), (x4,)),
    "mvlgamma": (lambda x, **o: torch.mvlgamma(x.abs() + 2, 3, **o), (x4,)),
    "narrow_copy": (lambda x, **o: torch.narrow_copy(x, 2, 1, 3, **o), (x4,)),
    "avg_pool2d": (lambda x, **o: torch._C._nn.avg_pool2d(x, 2, **o), (x4,)),
    "avg_pool3d": (lambda x, **o: torch._C._nn.avg_pool3d(x, 2, **o), (x5,)),
    "adaptive_avg_pool2d": (lambda x, **o: torch._C._nn.adaptive_avg_pool2d(x, (4, 3), **o), (x4,)),
    "adaptive_avg_pool3d": (lambda x, **o: torch._C._nn.adaptive_avg_pool3d(x, (2, 4, 3), **o), (x5,)),
}


@pytest.mark.parametrize("strided", [True, False], ids=["strided", "empty"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_out_variant_is_native_and_writes_the_out_tensor(name, strided, native_only):
    fn, inputs = CASES[name]
    want = fn(*inputs)
    out = strided_out(want.shape, want.dtype) if strided and want.numel() > 1 else torch.empty(0, dtype=want.dtype, device="npu")
    got = fn(*[t.npu() for t in inputs], out=out)
    assert got is out or got.data_ptr() == out.data_ptr()
    assert out.shape == want.shape and (out.stride() != want.stride()) == (strided and want.numel() > 1)
    torch.testing.assert_close(out.cpu(), want, rtol=1e-5, atol=1e-5)


def test_max_pool_with_indices_out(native_only):
    want, want_i = torch.ops.aten.max_pool2d_with_indices(x4, [2, 2])
    out, out_i = strided_out(want.shape, want.dtype), strided_out(want_i.shape, want_i.dtype)
    torch.ops.aten.max_pool2d_with_indices.out(x4.npu(), [2, 2], out=out, indices=out_i)
    assert torch.equal(out.cpu(), want) and torch.equal(out_i.cpu(), want_i)


def test_batch_norm_out_gives_cuda_statistics(native_only):
    x, w, b = rand(4, 3, 5, seed=3), rand(3, seed=4), rand(3, seed=5)
    rm, rv = torch.zeros(3), torch.ones(3)
    y, mean, invstd = torch.native_batch_norm(x, w, b, rm.clone(), rv.clone(), True, 0.1, 1e-5)
    outs = [torch.empty(0, device="npu") for _ in range(3)]
    rmn, rvn = rm.npu(), rv.npu()
    torch.ops.aten.native_batch_norm.out(x.npu(), w.npu(), b.npu(), rmn, rvn, True, 0.1, 1e-5, out=outs[0],
                                         save_mean=outs[1], save_invstd=outs[2])
    for got, ref in zip(outs + [rmn], [y, mean, invstd, rm * 0.9 + 0.1 * x.mean((0, 2))]):
        torch.testing.assert_close(got.cpu(), ref, rtol=1e-5, atol=1e-5)


def test_out_errors_as_aten():
    x = rand(3, 4).npu()
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        torch.clamp(x, 0, 1, out=torch.empty(3, 4, dtype=torch.long, device="npu"))
    with pytest.raises(RuntimeError, match="Expected out tensor to have device npu:0, but got cpu instead"):
        torch.clamp(x, 0, 1, out=torch.empty(3, 4))
    out = torch.empty(5, device="npu")  # a non-empty out of another shape: resized, with ATen's warning
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        torch.clamp(x, 0, 1, out=out)
    assert out.shape == (3, 4)


def test_conj_physical_in_place_and_complex_svd_out(native_only):
    z = rand(4, 3, dtype=torch.complex64, seed=6)
    zn = z.npu()
    assert zn.conj_physical_() is zn and torch.equal(zn.cpu(), z.conj_physical())
    lazy = z.npu().conj()  # a lazily conjugated tensor: its values conjugated in place
    lazy.conj_physical_()
    assert torch.equal(lazy.resolve_conj().cpu(), z)
    # svd's out= conjugates V in place: an INTERNAL ASSERT (a DispatchStub without an npu kernel) before
    u, s, v = (torch.empty(0, dtype=t, device="npu") for t in (torch.complex64, torch.float32, torch.complex64))
    torch.svd(z.npu(), out=(u, s, v))
    torch.testing.assert_close(((u * s.to(u.dtype)) @ v.mH).cpu(), z, rtol=1e-5, atol=1e-5)


def test_ihfft2_out_over_one_dim_writes_out(native_only):
    # ATen's composite leaves out unwritten here (CPU as well): npu serves this out= from the functional result
    x = rand(5, 6, 7, seed=7)
    out = strided_out((3, 6, 7), torch.complex64)
    torch.fft.ihfft2(x.npu(), dim=0, out=out)
    torch.testing.assert_close(out.cpu(), torch.fft.ihfft2(x, dim=0), rtol=1e-5, atol=1e-5)
    out = torch.empty(0, dtype=torch.complex64, device="npu")
    torch.fft.ihfftn(x.npu(), dim=(1,), out=out)
    torch.testing.assert_close(out.cpu(), torch.fft.ihfftn(x, dim=(1,)), rtol=1e-5, atol=1e-5)

