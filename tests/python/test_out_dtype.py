# out= tensors of another dtype than the result's: npu raises where CPU raises and otherwise writes CPU's values.
# Before, sort / topk / msort wrote float32 bits into a float64 out (garbage), complex results were cast into real
# outs (imaginary parts dropped), and a dozen ops cast where CPU and CUDA refuse.
import pytest
import torch

import torch_npu_sim  # noqa: F401  (registers "npu")

D, L, C = torch.float64, torch.long, torch.complex64
x = torch.randn(1, 2, 4, 4, generator=torch.Generator().manual_seed(0))
i = torch.tensor([0, 1])
a = x[0, 0] + 4 * torch.eye(4)

# (name, call(dev, empty), out dtype(s)): `empty(dtype)` makes an empty out on the device
CASES = [
    ("sort values", lambda d, e: torch.sort(x.to(d), out=(e(D), e(L)))),
    ("sort indices int32", lambda d, e: torch.sort(x.to(d), out=(e(torch.float32), e(torch.int32)))),
    ("msort", lambda d, e: torch.msort(x.to(d), out=e(D))),
    ("topk", lambda d, e: torch.topk(x.to(d), 2, out=(e(D), e(L)))),
    ("kthvalue", lambda d, e: torch.kthvalue(x.to(d), 2, out=(e(D), e(L)))),
    ("median", lambda d, e: torch.median(x.to(d), -1, out=(e(D), e(L)))),
    ("max", lambda d, e: torch.max(x.to(d), out=e(D))),
    ("max into int64", lambda d, e: torch.max(x.to(d), out=e(L))),
    ("min", lambda d, e: torch.min(x.to(d), out=e(torch.float16))),
    ("std float64", lambda d, e: torch.std(x.to(d), 1, out=e(D))),
    ("var float16", lambda d, e: torch.var(x.to(d), 1, out=e(torch.float16))),
    ("std int64", lambda d, e: torch.std(x.to(d), 1, out=e(L))),
    ("std complex into float64", lambda d, e: torch.std(x.to(d).to(C), out=e(D))),
    ("logsumexp complex", lambda d, e: torch.logsumexp(x.to(d), 1, out=e(C))),
    ("logsumexp int64", lambda d, e: torch.logsumexp(x.to(d), 1, out=e(L))),
    ("nansum float into int64", lambda d, e: torch.nansum(x.to(d), out=e(L))),
    ("nansum int into complex", lambda d, e: torch.nansum(i.to(d), out=e(C))),
    ("where", lambda d, e: torch.where(x.to(d) > 0, x.to(d), x.to(d), out=e(D))),
    ("where complex into real", lambda d, e: torch.where(i.to(d) > 0, i.to(d) * 1j, 1j, out=e(torch.float32))),
    ("clamp tensor bounds into int64", lambda d, e: torch.clamp(x.to(d), torch.zeros(()).to(d), out=e(L))),
    ("clamp tensor bounds into float64", lambda d, e: torch.clamp(x.to(d), torch.zeros(()).to(d), out=e(D))),
    ("clamp", lambda d, e: torch.clamp(x.to(d), 0, 1, out=e(D))),
    ("clamp_min", lambda d, e: torch.clamp_min(x.to(d), 0, out=e(D))),
    ("elu", lambda d, e: torch._C._nn.elu(x.to(d), out=e(D))),
    ("masked_select", lambda d, e: torch.masked_select(x.to(d), x.to(d) > 0, out=e(D))),
    ("take", lambda d, e: torch.take(x.to(d), i.to(d), out=e(D))),
    ("index", lambda d, e: torch.ops.aten.index.Tensor_out(x.to(d), [torch.zeros(2, dtype=L).to(d)], out=e(D))),
    ("narrow_copy", lambda d, e: torch.narrow_copy(x.to(d), 1, 0, 1, out=e(D))),
    ("avg_pool2d", lambda d, e: torch._C._nn.avg_pool2d(x.to(d), 2, out=e(D))),
    ("avg_pool3d", lambda d, e: torch._C._nn.avg_pool3d(x.to(d), 2, out=e(D))),
    ("max_pool2d_with_indices", lambda d, e: torch._C._nn.max_pool2d_with_indices(x.to(d), 2, out=(e(D), e(L)))),
    ("adaptive_avg_pool2d", lambda d, e: torch._C._nn.adaptive_avg_pool2d(x.to(d), 2, out=e(D))),
    ("searchsorted int16", lambda d, e: torch.searchsorted(torch.arange(5.).to(d), 2.0, out=e(torch.int16))),
    ("mvlgamma float64", lambda d, e: torch.mvlgamma(x.abs().to(d) + 3, 2, out=e(D))),
    ("mvlgamma int64", lambda d, e: torch.mvlgamma(x.abs().to(d) + 3, 2, out=e(L))),
    ("ihfft2 complex128", lambda d, e: torch.fft.ihfft2(x.to(d), out=e(torch.complex128))),
    ("eigvals into float64", lambda d, e: torch.linalg.eigvals(a.to(d), out=e(D))),
    ("eigvals into complex128", lambda d, e: torch.linalg.eigvals(a.to(d), out=e(torch.complex128))),
    ("solve_triangular", lambda d, e: torch.linalg.solve_triangular(a.to(d), a.to(d), upper=True, out=e(D))),
    ("solve_triangular complex into real",
     lambda d, e: torch.linalg.solve_triangular(a.to(d).to(C), a.to(d).to(C), upper=True, out=e(torch.float32))),
]


def run(call, dev):
    try:
        result = call(dev, lambda dtype: torch.empty(0, dtype=dtype, device=dev))
        torch.npu.synchronize()
        return result
    except Exception as e:  # noqa: BLE001 (the error is the result compared)
        return e


@pytest.mark.parametrize("name, call", CASES, ids=[c[0] for c in CASES])
def test_out_of_another_dtype_follows_cpu(name, call):
    want, got = run(call, "cpu"), run(call, "npu")
    assert torch.npu._device_error(None) is None  # refused on the host, never by a failed kernel
    if isinstance(want, Exception):
        assert isinstance(got, type(want)) or (isinstance(got, RuntimeError) and isinstance(want, RuntimeError)), \
            f"{name}: CPU raised {want!r}, npu gave {got!r}"
        return
    assert not isinstance(got, Exception), f"{name}: CPU computed, npu raised {got!r}"
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert g.dtype == w.dtype and g.shape == w.shape, (name, g.dtype, w.dtype, g.shape, w.shape)
        torch.testing.assert_close(g.cpu(), w, rtol=2e-3, atol=1e-4)



def test_nansum_of_a_real_input_into_a_complex_out():
    # CUDA reduces complex too (CPU has no complex nansum kernel and raises): the real sum, imaginary 0
    nan_x = x.clone()
    nan_x[0, 0, 0, :2] = float("nan")
    got = torch.nansum(nan_x.to("npu"), 1, out=torch.empty(0, dtype=C, device="npu"))
    torch.testing.assert_close(got.cpu(), torch.nansum(nan_x, 1).to(C))
