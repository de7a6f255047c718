"""sort / topk / kthvalue / median / unique on long lines, against CPU PyTorch: the paths short OpInfo samples never
reach (the radix sort of lines of 4096 elements or more, the counting sort of 1-byte lines and unique's count of 1-byte values, the selection that keeps
k of a long line in a bounded buffer cut back every 65536 elements), with ties, NaNs, signed zeros, descending
order and strided lines. Equal values come in position order on npu (a stable order); CPU's stable sort is the
reference for the indices."""
import pytest
import torch

import torch_npu_sim  # noqa: F401  (registers "npu")

pytestmark = pytest.mark.usefixtures("native_only")  # conftest: no op may reach the CPU fallback

N = 200_003  # past three cuts of the selection buffer, not a multiple of anything


def line(dtype, n=N, seed=0):
    """n values with many ties; floats also with NaNs, -0.0 / +0.0 and infinities."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    lo = -60 if dtype not in (torch.uint8,) else 0
    x = torch.randint(lo, 60, (n,), generator=g).to(dtype)
    if dtype.is_floating_point:
        x = x / 4
        x[torch.randint(0, n, (50,), generator=g)] = float("nan")
        x[torch.randint(0, n, (50,), generator=g)] = -0.0
        x[torch.randint(0, n, (20,), generator=g)] = float("-inf")
        x[torch.randint(0, n, (20,), generator=g)] = float("inf")
    return x


def same(got, want):
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, equal_nan=True)


DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64, torch.int32, torch.int16,
          torch.int8, torch.uint8, torch.bool]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_long_line_is_stable(dtype, descending):
    x = line(dtype)
    want = x.sort(stable=True, descending=descending)
    got = x.to("npu").sort(descending=descending)
    same(got.values, want.values)
    same(got.indices, want.indices)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int8, torch.bool], ids=str)
def test_sort_strided_long_lines(dtype):
    # 3 lines of 20000 along dim 0 of a transposed view: every key read through a stride
    x = line(dtype, 60_000).reshape(3, 20_000).t()
    want = x.sort(dim=0, stable=True, descending=True)
    got = x.to("npu").sort(dim=0, descending=True)
    same(got.values, want.values)
    same(got.indices, want.indices)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.uint8], ids=str)
@pytest.mark.parametrize("k", [1, 7, 70_000, N // 4 + 1, N - 1, N])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_long_line(dtype, k, largest):
    x = line(dtype)
    want = x.sort(stable=True, descending=largest)
    got = x.to("npu").topk(k, largest=largest)
    same(got.values, want.values[:k])
    same(got.indices, want.indices[:k])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.uint8], ids=str)
@pytest.mark.parametrize("k", [1, 3, N // 2, N - 5, N])
def test_kthvalue_long_line(dtype, k):
    x = line(dtype)
    order = x.sort(stable=True)
    v, i = x.to("npu").kthvalue(k)
    same(v, order.values[k - 1])
    same(i, order.indices[k - 1])  # the k-th in a stable order: among equal values, the one CPU's stable sort puts there


@pytest.mark.parametrize("fn", ["median", "nanmedian"])
def test_median_long_lines(fn):
    x = line(torch.float32, 3 * 70_001).reshape(3, 70_001)
    x[1] = x[1].nan_to_num(0.5)  # one line without NaNs
    x[2, :] = float("nan")
    x[2, 1000] = 3.0  # nanmedian: the only number; median: the first NaN
    v, i = getattr(x.to("npu"), fn)(dim=1)
    want_v, want_i = getattr(x, fn)(dim=1)
    same(v, want_v)
    if fn == "median":
        same(i, want_i)  # line 0 has NaNs: its first NaN, as on CPU
    else:
        same(i[1:], want_i[1:])  # (line 0: CPU's index among equal medians is its quickselect's; ours the first)
        assert x[0, i[0].item()] == want_v[0]
    same(getattr(x.to("npu"), fn)(), getattr(x, fn)())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.uint8, torch.int8, torch.bool],
                         ids=str)
def test_unique_long(dtype):
    x = line(dtype)
    if dtype.is_floating_point:
        x = x.nan_to_num(7.0)  # (CPU keeps each NaN apart, as npu does; compared without them here)
    got = torch.unique(x.to("npu"), return_inverse=True, return_counts=True)
    want = torch.unique(x, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        same(g, w)


@pytest.mark.parametrize("dtype, most", [(torch.bool, 2), (torch.uint8, 256), (torch.int16, 65536)], ids=str)
def test_unique_of_a_narrow_dtype_allocates_for_its_values_not_its_length(dtype, most):
    # a uint8 input of 2^31 elements has at most 256 distinct values: its counts are 256 int64s, where they were
    # one per element (16 GiB, past the device's capacity). Checked on 2^20 elements through the peak allocation.
    n = 1 << 20
    x = torch.randint(0, 2 if dtype == torch.bool else 200, (n,), dtype=torch.int32).to(dtype)
    d = x.to("npu")
    torch.npu.synchronize()
    torch.npu.reset_peak_memory_stats()
    before = torch.npu.memory_allocated()
    got = torch.unique(d, return_counts=True)
    peak = torch.npu.max_memory_allocated() - before
    assert peak < n * x.element_size() // 4 + most * 9 + (1 << 16), (peak, n)
    for g, w in zip(got, torch.unique(x, return_counts=True)):
        same(g, w)


@pytest.mark.parametrize("name, call, error, message", [
    ("sort", lambda t: t.sort(), RuntimeError, "Sort does not support complex dtypes"),
    ("argsort", lambda t: t.argsort(), RuntimeError, "Sort does not support complex dtypes"),
    ("topk", lambda t: t.topk(2), RuntimeError, "topk does not support complex dtypes"),
    ("kthvalue", lambda t: t.kthvalue(2), NotImplementedError, "not implemented for 'ComplexFloat'"),
    ("median", lambda t: t.median(), NotImplementedError, "not implemented for 'ComplexFloat'"),
    ("median dim", lambda t: t.median(0), NotImplementedError, "not implemented for 'ComplexFloat'"),
    ("unique", lambda t: torch.unique(t), NotImplementedError, "not implemented for 'ComplexFloat'"),
])
def test_complex_inputs_are_refused_at_the_call(name, call, error, message):
    # complex numbers have no order: refused on the host with CPU's error type, as CPU refuses them; before, the
    # kernel failed on the stream and left a sticky device error for the next sync
    x = torch.randn(5, dtype=torch.complex64)
    with pytest.raises(error):
        call(x)
    with pytest.raises(error, match=message):
        call(x.to("npu"))
    torch.npu.synchronize()
    assert torch.npu._device_error(None) is None


@pytest.mark.parametrize("name, call, error, message", [
    ("topk", lambda t: t.topk(1), RuntimeError, "topk does not support bool"),
    ("kthvalue", lambda t: t.kthvalue(1), NotImplementedError, "not implemented for 'Bool'"),
    ("median", lambda t: t.median(), NotImplementedError, "not implemented for 'Bool'"),
    ("median dim", lambda t: t.median(0), NotImplementedError, "not implemented for 'Bool'"),
    ("nanmedian", lambda t: t.nanmedian(), NotImplementedError, "not implemented for 'Bool'"),
])
def test_bool_inputs_are_refused_as_cpu_and_cuda_refuse_them(name, call, error, message):
    x = torch.tensor([True, False, True])
    with pytest.raises(error):
        call(x)
    with pytest.raises(error, match=message):
        call(x.to("npu"))


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8], ids=str)
@pytest.mark.parametrize("n", [1, 5, 100, 5000])
def test_one_byte_kthvalue_and_median_by_counting(dtype, n):
    # 1-byte lines select by counting: the k-th element of the stable order (value and position), and CPU's median
    x = torch.randint(-3 if dtype == torch.int8 else 0, 3, (4, n), generator=torch.Generator().manual_seed(n)).to(dtype)
    s = torch.sort(x, dim=1, stable=True)
    for k in sorted({1, (n + 1) // 2, n}):
        got = x.to("npu").kthvalue(k, 1)
        same(got.values, s.values[:, k - 1])
        same(got.indices, s.indices[:, k - 1])
        same(x.t().contiguous().to("npu").kthvalue(k, 0).indices, s.indices[:, k - 1])  # (a strided line)
    same(x.to("npu").median(1).values, x.median(1).values)
    same(x.to("npu").median(1).indices, s.indices[:, (n - 1) // 2])
    same(x.to("npu").median(), x.median())
