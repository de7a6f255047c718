"""Reductions on npu against CPU PyTorch: sum/mean/prod/max/min/amax/amin/argmax/argmin/var/std/
var_mean/std_mean/all/any/vector_norm/logsumexp/cumsum/cumprod, forward and backward, dtypes, dims
(negative, several, keepdim), non-contiguous inputs, empty tensors, large full reductions (two-phase
path), out= forms, errors, and no CPU fallback for them."""
import pytest
import torch

import torch_npu_sim

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int64, torch.int32, torch.uint8, torch.bool]


def tol(dtype):
    return {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-10, atol=1e-10),
            torch.float16: dict(rtol=2e-2, atol=2e-2), torch.bfloat16: dict(rtol=5e-2, atol=5e-2)}.get(
                dtype, dict(rtol=0, atol=0))


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if not dtype.is_floating_point:
        return torch.randint(0, 5, shape, generator=g).to(dtype)
    return torch.randn(shape, generator=g).to(dtype)


def same(npu_value, cpu_value, dtype=None, **kw):
    dtype = dtype or cpu_value.dtype
    t = dict(tol(dtype))
    t.update(kw)
    got = npu_value.cpu()
    assert got.dtype == cpu_value.dtype, (got.dtype, cpu_value.dtype)
    assert got.shape == cpu_value.shape, (got.shape, cpu_value.shape)
    if cpu_value.dtype.is_floating_point:
        torch.testing.assert_close(got.double(), cpu_value.double(), equal_nan=True, **t)
    else:
        assert torch.equal(got, cpu_value)


# (dim, keepdim) combinations for a 3-D input
DIMS = [(None, False), (0, False), (-1, True), ((0, 2), False), ((-1, -2), True), ((), False)]


@pytest.fixture(autouse=True)
def _no_fallback_record():
    torch_npu_sim.reset_fallback_ops()
    yield


def no_fallback(*words):
    hit = [op for op in torch_npu_sim.fallback_ops() if any(w in op for w in words)]
    assert not hit, hit


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim,keepdim", DIMS)
def test_sum_mean_float(dtype, dim, keepdim):
    x = rand(4, 5, 6, dtype=dtype)
    xn = x.to("npu")
    kw = {} if dim is None else dict(dim=dim, keepdim=keepdim)
    same(torch.sum(xn, **kw), torch.sum(x, **kw))
    same(torch.mean(xn, **kw), torch.mean(x, **kw))
    no_fallback("sum", "mean")


@pytest.mark.parametrize("dtype", INTS)
def test_sum_prod_integers(dtype):
    x = rand(3, 4, 5, dtype=dtype)
    xn = x.to("npu")
    same(xn.sum(), x.sum())
    same(xn.sum(1), x.sum(1))
    same(xn.sum((0, 2), keepdim=True), x.sum((0, 2), keepdim=True))
    same(xn.prod(1), x.prod(1))
    same(xn.prod(), x.prod())
    same(xn.sum(dtype=torch.float64), x.sum(dtype=torch.float64))
    no_fallback("sum", "prod")


@pytest.mark.parametrize("dtype, out_dtype", [(torch.bool, torch.int64), (torch.int8, torch.int64),
                                              (torch.uint8, torch.int64), (torch.int32, torch.int64),
                                              (torch.float16, torch.float32), (torch.bfloat16, torch.float32)])
def test_sum_into_the_accumulation_type_reads_the_input_as_it_is(dtype, out_dtype):
    # mask.sum() (bool -> int64) converted the whole mask to int64 first: 8x its size in device memory (a 2^31-element
    # mask asked for 16 GiB); sum / mean(dtype=float32) of a 16-bit tensor made a float32 copy. The kernel now reads
    # the input in its own dtype and writes the accumulation type.
    x = (torch.rand(1024, 1024, generator=torch.Generator().manual_seed(3)) * 200 - 50).to(dtype)
    xn = x.npu()
    kw = {} if dtype in (torch.bool, torch.int8, torch.uint8, torch.int32) else dict(dtype=out_dtype)
    torch.npu.synchronize()
    torch.npu.reset_peak_memory_stats()
    before = torch.npu.memory_allocated()
    results = [xn.sum(**kw), xn.sum(0, **kw), xn.sum(1, **kw)]
    if dtype.is_floating_point:
        results += [xn.mean(**kw), xn.mean(1, **kw)]
    torch.npu.synchronize()
    assert torch.npu.max_memory_allocated() - before < 64 * 1024, torch.npu.max_memory_allocated() - before
    expected = [x.sum(**kw), x.sum(0, **kw), x.sum(1, **kw)]
    if dtype.is_floating_point:
        expected += [x.mean(**kw), x.mean(1, **kw)]
    for got, want in zip(results, expected):
        assert got.dtype == want.dtype == out_dtype
        torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-2 if dtype.is_floating_point else 0)
    no_fallback("sum", "mean")


@pytest.mark.parametrize("dtype", FLOATS)
def test_prod_float(dtype):
    x = (rand(3, 4, 5, dtype=torch.float64) * 0.3 + 1).to(dtype)
    xn = x.to("npu")
    same(xn.prod(), x.prod())
    same(xn.prod(-1, keepdim=True), x.prod(-1, keepdim=True))


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.int32, torch.uint8])
def test_max_min_family(dtype):
    x = rand(4, 7, 5, dtype=dtype, seed=3)
    xn = x.to("npu")
    same(xn.max(), x.max())
    same(xn.min(), x.min())
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            v, i = xn.max(dim, keepdim=keepdim)
            cv, ci = x.max(dim, keepdim=keepdim)
            same(v, cv)
            same(i, ci)
            v, i = xn.min(dim, keepdim=keepdim)
            cv, ci = x.min(dim, keepdim=keepdim)
            same(v, cv)
            same(i, ci)
            same(xn.argmax(dim, keepdim=keepdim), x.argmax(dim, keepdim=keepdim))
            same(xn.argmin(dim, keepdim=keepdim), x.argmin(dim, keepdim=keepdim))
    same(xn.argmax(), x.argmax())
    same(xn.argmin(), x.argmin())
    same(xn.amax((0, 2)), x.amax((0, 2)))
    same(xn.amin(-1, keepdim=True), x.amin(-1, keepdim=True))
    same(xn.amax(()), x.amax(()))
    no_fallback("max", "min", "argmax", "argmin", "amax", "amin")


def test_max_nan_and_ties():
    x = torch.tensor([[1.0, 3.0, 3.0, float("nan"), 2.0], [5.0, 5.0, 1.0, 0.0, 5.0]])
    xn = x.to("npu")
    same(xn.max(), x.max())
    same(xn.amax(1), x.amax(1))
    v, i = xn.max(1)
    cv, ci = x.max(1)
    same(v, cv)
    same(i, ci)
    same(xn.argmax(1), x.argmax(1))
    same(xn.argmin(1), x.argmin(1))


@pytest.mark.parametrize("n", [1, 7, 31, 32, 33, 64, 100, 1000, 4099])
def test_row_extremes_and_norms_around_the_vector_width(n):
    # rows reduced in 32-lane vectors with a scalar tail: NaN anywhere (first vector, body, tail), infinities,
    # all-negative rows, and lengths either side of a multiple of 32, for amax/amin/max, the p-norms and sum / mean
    g = torch.Generator().manual_seed(n)
    x = torch.randn(9, n, generator=g)
    if n > 5:
        x[1, n // 2] = float("nan")
        x[2, -1] = float("nan")
        x[3, 0] = float("inf")
        x[4, 3] = float("-inf")
        x[5] = -x[5].abs()
        x[6, 2] = float("nan")
        x[7, n - 1] = 0.0
    xn = x.npu()
    cases = {"amax": lambda a: a.amax(1), "amin": lambda a: a.amin(1), "max": lambda a: a.max(1).values,
             "min": lambda a: a.min(1).values}
    for p in (float("inf"), float("-inf"), 0, 1, 2, 3):
        cases[f"norm{p}"] = lambda a, p=p: torch.linalg.vector_norm(a, p, 1)
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        cases[f"norm1 {dtype}"] = lambda a, dtype=dtype: torch.linalg.vector_norm(a.to(dtype), 1, 1)
        cases[f"norm2 {dtype}"] = lambda a, dtype=dtype: torch.linalg.vector_norm(a.to(dtype), 2, 1)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):  # sums: the same lanes, fp32 accumulation
        cases[f"sum {dtype}"] = lambda a, dtype=dtype: a.nan_to_num(0.0, 0.0, 0.0).to(dtype).sum(1)
        cases[f"mean {dtype}"] = lambda a, dtype=dtype: a.to(dtype).mean(1)
    for name, fn in cases.items():
        want = fn(x)
        # sums of thousands of terms in another order than CPU's: a few float32 ulps
        tol = dict(rtol=1e-2, atol=1e-2) if want.dtype in (torch.float16, torch.bfloat16) else {}
        tol = dict(rtol=1e-5, atol=1e-5) if want.dtype == torch.float32 else tol
        torch.testing.assert_close(fn(xn).cpu(), want, equal_nan=True, msg=name, **tol)


def test_argmax_flat_noncontiguous():
    x = rand(6, 8, seed=5)
    xn = x.to("npu").t()
    same(xn.argmax(), x.t().argmax())
    same(xn.argmin(), x.t().argmin())


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("correction", [0, 1, 2.5])
def test_var_std(dtype, correction):
    x = rand(5, 6, 7, dtype=dtype, seed=1) + 3
    xn = x.to("npu")
    for dim, keepdim in DIMS[:5]:
        kw = dict(dim=dim, keepdim=keepdim, correction=correction)
        same(torch.var(xn, **kw), torch.var(x, **kw))
        same(torch.std(xn, **kw), torch.std(x, **kw))
        v, m = torch.var_mean(xn, **kw)
        cv, cm = torch.var_mean(x, **kw)
        same(v, cv)
        same(m, cm)
        s, m = torch.std_mean(xn, **kw)
        cs, cm = torch.std_mean(x, **kw)
        same(s, cs)
        same(m, cm)
    no_fallback("var", "std")


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_all_any(dtype):
    x = rand(4, 5, 6, dtype=dtype, seed=2)
    if dtype.is_floating_point:
        x = torch.where(x > 0.5, x, torch.zeros_like(x))
    xn = x.to("npu")
    same(xn.all(), x.all())
    same(xn.any(), x.any())
    same(xn.all(1), x.all(1))
    same(xn.any(-1, keepdim=True), x.any(-1, keepdim=True))
    same(torch.all(xn, dim=(0, 2)), torch.all(x, dim=(0, 2)))
    same(torch.any(xn, dim=(0, 2)), torch.any(x, dim=(0, 2)))
    no_fallback("all", "any")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ord", [2, 1, 0, 3, float("inf"), -float("inf")])
def test_vector_norm(dtype, ord):
    x = rand(4, 5, 6, dtype=dtype, seed=4)
    xn = x.to("npu")
    same(torch.linalg.vector_norm(xn, ord), torch.linalg.vector_norm(x, ord))
    same(torch.linalg.vector_norm(xn, ord, dim=(0, -1), keepdim=True),
         torch.linalg.vector_norm(x, ord, dim=(0, -1), keepdim=True))
    same(torch.norm(xn, dim=1), torch.norm(x, dim=1))
    no_fallback("norm")


@pytest.mark.parametrize("dtype", FLOATS)
def test_legacy_norm_overloads(dtype):
    # aten::norm.ScalarOpt_dim(_dtype) / norm.out / norm.dtype_out: what torch.dist, F.pairwise_distance and the
    # triplet losses call
    x, y = rand(6, 7, dtype=dtype, seed=8), rand(6, 7, dtype=dtype, seed=9)
    xn, yn = x.to("npu"), y.to("npu")
    for p in (None, 1, 2, 3.5, float("inf"), 0):
        same(torch.ops.aten.norm.ScalarOpt_dim(xn, p, [1], True), torch.ops.aten.norm.ScalarOpt_dim(x, p, [1], True))
        same(torch.ops.aten.norm.ScalarOpt_dim_dtype(xn, p, [0], False, dtype=torch.float64),
             torch.ops.aten.norm.ScalarOpt_dim_dtype(x, p, [0], False, dtype=torch.float64))
    out = torch.empty(0, dtype=dtype, device="npu")
    torch.ops.aten.norm.out(xn, 2, [0, 1], False, out=out)
    same(out, torch.ops.aten.norm.out(x, 2, [0, 1], False, out=torch.empty(0, dtype=dtype)))
    same(torch.dist(xn, yn, 3), torch.dist(x, y, 3))
    same(torch.nn.functional.pairwise_distance(xn, yn), torch.nn.functional.pairwise_distance(x, y))
    if dtype in (torch.float32, torch.float64):
        a, p_, n = (rand(5, 7, dtype=dtype, seed=s).requires_grad_() for s in (10, 11, 12))
        an, pn, nn_ = (t.detach().to("npu").requires_grad_() for t in (a, p_, n))
        lc = torch.nn.functional.triplet_margin_loss(a, p_, n)
        ln = torch.nn.functional.triplet_margin_loss(an, pn, nn_)
        same(ln, lc)
        lc.backward()
        ln.backward()
        same(an.grad, a.grad)
    with pytest.raises(RuntimeError, match="norm\\(\\): input dtype should be either floating point or complex"):
        torch.ops.aten.norm.ScalarOpt_dim(torch.arange(3, device="npu"), 2, [0])
    no_fallback("norm")


@pytest.mark.parametrize("dtype", FLOATS)
def test_logsumexp(dtype):
    x = rand(4, 5, 6, dtype=dtype, seed=6) * 10
    xn = x.to("npu")
    same(torch.logsumexp(xn, 1), torch.logsumexp(x, 1))
    same(torch.logsumexp(xn, (0, 2), keepdim=True), torch.logsumexp(x, (0, 2), keepdim=True))
    y = torch.tensor([[-float("inf"), -float("inf")], [1.0, float("inf")], [0.0, -float("inf")]])
    same(torch.logsumexp(y.to("npu"), 1), torch.logsumexp(y, 1))
    no_fallback("logsumexp")


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.int32, torch.bool])
def test_cumsum_cumprod(dtype):
    x = rand(3, 4, 5, dtype=dtype, seed=7)
    if dtype.is_floating_point:
        x = (x.double() * 0.2 + 1).to(dtype)
    xn = x.to("npu")
    for dim in (0, 1, -1):
        same(torch.cumsum(xn, dim), torch.cumsum(x, dim))
        same(torch.cumprod(xn, dim), torch.cumprod(x, dim))
    same(torch.cumsum(xn, 1, dtype=torch.float64), torch.cumsum(x, 1, dtype=torch.float64))
    no_fallback("cumsum", "cumprod")


@pytest.mark.parametrize("dtype", FLOATS)
def test_logcumsumexp(dtype):
    x = rand(3, 40, 5, dtype=dtype, seed=13) * 30
    x[0, 3, 1] = float("inf")
    x[1, 5, 2] = -float("inf")
    x[2, 7, 3] = float("nan")
    x[:, 0, 4] = -float("inf")  # a line that starts at -inf
    xn = x.to("npu")

    def want(t, dim):  # 16-bit: CUDA accumulates in float and rounds each output once (CPU rounds every step)
        if dtype in (torch.float16, torch.bfloat16):
            return torch.logcumsumexp(t.float(), dim).to(dtype)
        return torch.logcumsumexp(t, dim)

    for dim in (0, 1, -1):
        same(torch.logcumsumexp(xn, dim), want(x, dim))
    same(torch.logcumsumexp(xn[:, ::3].transpose(0, 1), 0), want(x[:, ::3].transpose(0, 1), 0))
    same(torch.logcumsumexp(xn[0, 0, 0], 0), torch.logcumsumexp(x[0, 0, 0], 0))  # 0-dim
    out = torch.empty(0, dtype=dtype, device="npu")
    torch.logcumsumexp(xn, 1, out=out)
    same(out, want(x, 1))
    g = torch.randn(3, 40, 5, generator=torch.Generator().manual_seed(1)).to(dtype)
    # the backward's exp of differences magnifies rounding: float32 accumulates in double as CPU (at this spread
    # a float accumulator was 3e-3 off); the 16-bit backward composes 16-bit ops, compared at a narrow spread
    spread = 9 if dtype in (torch.float32, torch.float64) else 1
    finite = (rand(3, 40, 5, dtype=torch.float64, seed=14) * spread).to(dtype)
    xc, xg = finite.clone().requires_grad_(), finite.to("npu").requires_grad_()
    want(xc, 1).backward(g)
    torch.logcumsumexp(xg, 1).backward(g.to("npu"))
    same(xg.grad, xc.grad)
    no_fallback("logcumsumexp")
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        torch.logcumsumexp(torch.arange(3, device="npu"), 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.logcumsumexp(xn[0, 0, 0], 1)


@pytest.mark.parametrize("dtype", FLOATS)
def test_renorm(dtype):
    x = rand(4, 5, 6, dtype=dtype, seed=15) * 3
    xn = x.to("npu")
    for p, dim, maxnorm in [(2, 0, 5.0), (1, 1, 4.0), (3.5, -1, 2.0), (float("inf"), 2, 1.5), (2, 0, 100.0)]:
        same(torch.renorm(xn, p, dim, maxnorm), torch.renorm(x, p, dim, maxnorm))
        y = xn.clone()
        y.renorm_(p, dim, maxnorm)
        same(y, torch.renorm(x, p, dim, maxnorm))
    if dtype in (torch.float32, torch.float64):
        xc, xg = x.clone().requires_grad_(), xn.clone().requires_grad_()
        torch.renorm(xc, 2, 1, 3.0).sum().backward()
        torch.renorm(xg, 2, 1, 3.0).sum().backward()
        same(xg.grad, xc.grad)
    no_fallback("renorm", "norm")
    for bad in [lambda t: torch.renorm(t, 0, 0, 1.0), lambda t: torch.renorm(t, 2, 0, -1.0),
                lambda t: torch.renorm(t[0, 0], 2, 0, 1.0)]:
        with pytest.raises(RuntimeError) as cpu_err:
            bad(x)
        with pytest.raises(RuntimeError) as npu_err:
            bad(xn)
        assert str(npu_err.value).splitlines()[0] == str(cpu_err.value).splitlines()[0]


def test_noncontiguous_inputs():
    base = rand(6, 8, 10, seed=8)
    x = base.permute(2, 0, 1)[:, ::2, 1:]
    xn = base.to("npu").permute(2, 0, 1)[:, ::2, 1:]
    assert not xn.is_contiguous()
    for dim in (None, 0, 1, 2, (0, 2), (1, 2)):
        kw = {} if dim is None else dict(dim=dim)
        same(xn.sum(**kw), x.sum(**kw))
        same(xn.mean(**kw), x.mean(**kw))
        same(xn.var(**kw), x.var(**kw))
        same(xn.amax(**({} if dim is None else kw)), x.amax(**({} if dim is None else kw)))
    same(xn.max(1)[1], x.max(1)[1])
    same(xn.cumsum(1), x.cumsum(1))


def test_column_reduction_tiles():
    # reduced dim not contiguous, kept dim contiguous: the tiled path
    x = rand(300, 130, seed=9)
    xn = x.to("npu")
    same(xn.sum(0), x.sum(0), rtol=1e-5, atol=1e-4)
    same(xn.var(0), x.var(0))
    same(xn.max(0)[1], x.max(0)[1])
    same(xn.argmin(0), x.argmin(0))


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64])
@pytest.mark.parametrize("shape", [(4096, 8), (3000, 200), (2051, 1100), (40, 5000)])
def test_column_reductions_wide_tiles_and_split_rows(dtype, shape):
    # The tiled path with page-wide tiles, and few wide tiles over >= 1024 reduced rows, whose rows are split among
    # blocks and merged in order: NaN in one part of a column, the max / min reached in two parts (argmax keeps the
    # first), a column of -inf, integers without NaN.
    x = rand(*shape, dtype=dtype, seed=11)
    rows, cols = shape
    if dtype.is_floating_point:
        x[rows - 3, 1] = float("nan")
        x[:, 2] = float("-inf")
    x[5, 3] = x[rows - 5, 3] = 100
    x[7, 4] = x[rows - 2, 4] = -100
    xn = x.to("npu")
    for f in (lambda t: t.amax(0), lambda t: t.amin(0), lambda t: t.max(0)[1], lambda t: t.argmin(0),
              lambda t: t.argmax(0)):
        same(f(xn), f(x))
    if dtype.is_floating_point:
        same(xn.sum(0), x.sum(0), **({"rtol": 1e-4, "atol": 1e-3} if dtype == torch.float32 else {}))
        finite = torch.nan_to_num(x, nan=0.0, neginf=0.0)
        same(finite.to("npu").var(0), finite.var(0), **({"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32 else {}))
    else:
        same(xn.sum(0), x.sum(0))


def test_empty_tensors():
    x = torch.empty(0, 4)
    xn = x.to("npu")
    same(xn.sum(0), x.sum(0))
    same(xn.sum(), x.sum())
    same(xn.prod(0), x.prod(0))
    same(xn.mean(0), x.mean(0))
    same(xn.amax(1), x.amax(1))
    same(xn.all(), x.all())
    same(xn.any(), x.any())
    same(xn.sum(1), x.sum(1))
    same(xn.cumsum(0), x.cumsum(0))
    with pytest.raises(RuntimeError):
        xn.max()
    with pytest.raises((RuntimeError, IndexError)):
        xn.amax(0)


def test_scalar_input():
    x = torch.tensor(3.5)
    xn = x.to("npu")
    same(xn.sum(), x.sum())
    same(xn.max(), x.max())
    same(xn.argmax(), x.argmax())
    same(xn.sum(0), x.sum(0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_large_full_reductions(dtype):
    x = torch.rand(10_000_000, generator=torch.Generator().manual_seed(0)).to(dtype)
    xn = x.to("npu")
    ref = x.double().sum()
    got = xn.sum().cpu().double()
    rtol = {torch.float32: 1e-5, torch.float64: 1e-12, torch.float16: 1e-2}[dtype]
    if dtype != torch.float16:  # fp16 overflows at 5M; CPU gives inf too
        assert abs(got - ref) <= rtol * abs(ref), (got, ref)
        torch.testing.assert_close(xn.mean().cpu().double(), ref / x.numel(), rtol=rtol, atol=0)
        torch.testing.assert_close(xn.var().cpu().double(), x.double().var(), rtol=1e-4 if dtype == torch.float32 else 1e-10, atol=0)
    same(xn.amax(), x.amax())
    same(xn.argmax(), x.argmax())
    y = x.view(2, -1)
    same(xn.view(2, -1).argmin(1), y.argmin(1))
    same(xn.view(2, -1).max(1)[0], y.max(1)[0])


def test_out_forms():
    x = rand(4, 5)
    xn = x.to("npu")
    out = torch.empty(0, device="npu")
    torch.sum(xn, 1, out=out)
    same(out, x.sum(1))
    out.resize_(0)
    torch.mean(xn, 0, keepdim=True, out=out)
    same(out, x.mean(0, keepdim=True))
    out.resize_(0)
    torch.amax(xn, 1, out=out)
    same(out, x.amax(1))
    idx = torch.empty(0, dtype=torch.long, device="npu")
    torch.argmax(xn, 1, out=idx)
    same(idx, x.argmax(1))
    v = torch.empty(0, device="npu")
    torch.max(xn, 1, out=(v, idx))
    same(v, x.max(1)[0])
    same(idx, x.max(1)[1])
    out.resize_(0)
    torch.logsumexp(xn, 1, out=out)
    same(out, torch.logsumexp(x, 1))
    out.resize_(0)
    torch.cumsum(xn, 1, out=out)
    same(out, x.cumsum(1))
    # an integer out= tensor sets the dtype, as on CPU
    o = torch.empty(0, dtype=torch.int64)
    on = torch.empty(0, dtype=torch.int64, device="npu")
    same(torch.sum(xn, 1, out=on), torch.sum(x, 1, out=o))


def test_bad_dims_raise_like_cpu():
    x = rand(3, 4)
    xn = x.to("npu")
    for fn in (lambda t: t.sum(2), lambda t: t.mean(-3), lambda t: t.max(5), lambda t: t.argmax(2),
               lambda t: t.var(4), lambda t: t.cumsum(3), lambda t: t.amax(7), lambda t: t.all(2)):
        with pytest.raises(IndexError):
            fn(x)
        with pytest.raises(IndexError):
            fn(xn)
    with pytest.raises(RuntimeError):
        xn.int().mean()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_backward(dtype):
    x = rand(4, 5, 6, dtype=dtype, seed=11)
    fns = [lambda t: t.sum((0, 2)), lambda t: t.mean(1, keepdim=True), lambda t: t.amax(-1),
           lambda t: t.var(1, correction=0), lambda t: t.std((0, 1)), lambda t: torch.linalg.vector_norm(t, 2, 1),
           lambda t: torch.logsumexp(t, 2), lambda t: t.cumsum(1), lambda t: t.prod(2), lambda t: t.max(1)[0]]
    for fn in fns:
        xc = x.clone().requires_grad_()
        xn = x.to("npu").requires_grad_()
        yc, yn = fn(xc), fn(xn)
        g = torch.randn(yc.shape, dtype=dtype, generator=torch.Generator().manual_seed(1))
        yc.backward(g)
        yn.backward(g.to("npu"))
        same(yn.detach(), yc.detach())
        same(xn.grad, xc.grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int32])
def test_nansum_count_nonzero_aminmax(dtype):
    x = rand(4, 5, 6, dtype=dtype, seed=21)
    if dtype.is_floating_point:
        x[0, 1, 2] = float("nan")
        x[3, 0, 0] = 0
    xn = x.to("npu")
    same(torch.nansum(xn), torch.nansum(x))
    same(torch.nansum(xn, (0, 2), keepdim=True), torch.nansum(x, (0, 2), keepdim=True))
    same(torch.count_nonzero(xn, 1), torch.count_nonzero(x, 1))
    same(torch.count_nonzero(xn), torch.count_nonzero(x))
    y, yn = x.nan_to_num() if dtype.is_floating_point else x, xn.nan_to_num() if dtype.is_floating_point else xn
    for kw in ({}, dict(dim=1), dict(dim=-1, keepdim=True)):
        a, b = torch.aminmax(yn, **kw)
        ca, cb = torch.aminmax(y, **kw)
        same(a, ca)
        same(b, cb)
    no_fallback("nansum", "count_nonzero", "aminmax")


@pytest.mark.parametrize("fn", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                                   torch.int32, torch.uint8, torch.bool])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cummax_cummin(fn, dtype, dim):
    torch_npu_sim.reset_fallback_ops()
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, 4, (4, 6, 5), generator=g).to(dtype)  # small range: many ties (the latest index wins)
    v, i = getattr(torch, fn)(x.to("npu"), dim)
    cv, ci = getattr(torch, fn)(x, dim)
    assert torch.equal(v.cpu(), cv) and torch.equal(i.cpu(), ci)
    xt = x.transpose(0, 2)  # strided input
    assert torch.equal(getattr(torch, fn)(xt.to("npu"), dim)[1].cpu(), getattr(torch, fn)(xt, dim)[1])
    if dtype.is_floating_point:
        xf = torch.randn(4, 6, 5, generator=g).to(dtype)
        xf[1, 2, 3] = xf[2, 0, 1] = xf[2, 4, 1] = float("nan")
        v, i = getattr(torch, fn)(xf.to("npu"), dim)
        cv, ci = getattr(torch, fn)(xf, dim)
        torch.testing.assert_close(v.cpu(), cv, equal_nan=True, rtol=0, atol=0)
        assert torch.equal(i.cpu(), ci)
        xc, xn = xf.clone().requires_grad_(), xf.to("npu").requires_grad_()
        gr = torch.randn(xf.shape, generator=g).to(dtype)
        getattr(torch, fn)(xc, dim)[0].backward(gr)
        getattr(torch, fn)(xn, dim)[0].backward(gr.to("npu"))
        torch.testing.assert_close(xn.grad.cpu(), xc.grad, equal_nan=True, rtol=1e-2, atol=1e-2)
    s = torch.tensor(3).to(dtype)
    assert torch.equal(getattr(torch, fn)(s.to("npu"), 0)[1].cpu(), getattr(torch, fn)(s, 0)[1])
    assert not [op for op in torch_npu_sim.fallback_ops() if "cum" in op], torch_npu_sim.fallback_ops()
