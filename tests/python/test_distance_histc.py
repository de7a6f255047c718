"""torch.cdist / torch.pdist and torch.histc / torch.histogram on npu against CPU: values and gradients for every p
(0, 1, 2, inf, general, p < 1), batched and broadcast cdist, every compute_mode (the p = 2 mm path runs
_euclidean_dist's native ops, the others _cdist_forward), CPU's subgradients at zero distances, empty shapes;
float histc / histogram with CPU's binning (closed last bin, NaN / inf / outside skipped, min == max, weights,
density); CPU's error types and messages; no CPU fallback."""
import math
import re

import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim  # noqa: F401  (registers npu)

PS = [0.0, 1.0, 2.0, math.inf, 3.0, 1.5, 0.5]
TOL = {torch.float64: dict(rtol=1e-10, atol=1e-10), torch.float32: dict(rtol=1e-5, atol=1e-5)}
MODES = ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"]


def first_line(err):
    return str(err.value).splitlines()[0]


def same_error(fn, *cpu_args):
    """fn raises on CPU and on npu with the same exception type and first message line."""
    with pytest.raises(Exception) as cpu_err:
        fn(*cpu_args)
    with pytest.raises(Exception) as npu_err:
        fn(*[a.npu() if isinstance(a, torch.Tensor) else a for a in cpu_args])
    assert npu_err.type is cpu_err.type, (npu_err.value, cpu_err.value)
    norm = lambda s: s.replace("-nan", "nan")  # noqa: E731  (the sign of a NaN bound is not specified)
    assert norm(first_line(npu_err)) == norm(first_line(cpu_err))


def grads(fn, inputs, seed=0):
    """fn(*inputs), and the inputs' gradients under a fixed random output gradient, on the host."""
    xs = [x.detach().clone().requires_grad_() for x in inputs]
    out = fn(*xs)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    out.backward(g.to(out.dtype).to(out.device))
    return [out.detach().cpu()] + [x.grad.cpu() for x in xs]


def compare(fn, inputs, dtype, **tol):
    want = grads(fn, inputs)
    got = grads(fn, [x.npu() for x in inputs])
    for name, a, b in zip(["value"] + [f"grad {i}" for i in range(len(inputs))], got, want):
        torch.testing.assert_close(a, b, equal_nan=True, **(tol or TOL[dtype]), msg=lambda m: f"{name}: {m}")


def randn(*shape, dtype, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shapes", [((5, 4), (7, 4)), ((2, 1, 3, 4), (3, 5, 4)), ((3, 6), (2, 4, 6))])
def test_cdist_matches_cpu(p, dtype, shapes, native_only):
    x1, x2 = randn(*shapes[0], dtype=dtype, seed=1), randn(*shapes[1], dtype=dtype, seed=2)
    compare(lambda a, b: torch.cdist(a, b, p=p), [x1, x2], dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows", [4, 30])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_cdist_p2_every_compute_mode_is_native(mode, rows, dtype, native_only):
    """p = 2 with more than 25 rows (or use_mm_for_euclid_dist) is CPU's mm path (_euclidean_dist); otherwise
    _cdist_forward: both paths, batched too, forward and backward, without a CPU fallback."""
    x1, x2 = randn(2, rows, 5, dtype=dtype, seed=3), randn(2, 6, 5, dtype=dtype, seed=4)
    # the mm path subtracts squared norms: float32 loses ~1e-6 of them
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-9, atol=1e-9)
    compare(lambda a, b: torch.cdist(a, b, p=2.0, compute_mode=mode), [x1, x2], dtype, **tol)
    compare(lambda a, b: torch.cdist(a, b, p=2.0, compute_mode=mode), [x1[0], x2[0]], dtype, **tol)


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_aten_cdist_forward_and_backward_match_cpu(p, dtype, native_only):
    """_cdist_forward called directly (p = 2 with 30 rows takes the mm path inside it, as on CPU)."""
    for r1 in (3, 30):
        x1, x2 = randn(r1, 4, dtype=dtype, seed=5), randn(6, 4, dtype=dtype, seed=6)
        tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 and r1 > 25 and p == 2 else TOL[dtype]
        compare(lambda a, b: torch.ops.aten._cdist_forward(a, b, p, None), [x1, x2], dtype, **tol)


@pytest.mark.parametrize("p", PS)
def test_cdist_subgradients_at_zero_distance_match_cpu(p, native_only):
    """Equal rows (distance 0) and equal coordinates: CPU's subgradients (0 where the formula divides by 0, sign(0)
    = 0, the inf norm's ties all get the gradient)."""
    x1 = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [2.0, -1.0, 2.0]], dtype=torch.float64)
    x2 = torch.tensor([[1.0, 2.0, 3.0], [1.0, 5.0, 3.0], [0.0, -3.0, 4.0]], dtype=torch.float64)
    compare(lambda a, b: torch.cdist(a, b, p=p, compute_mode="donot_use_mm_for_euclid_dist"), [x1, x2],
            torch.float64)
    compare(lambda a: F.pdist(a, p=p), [torch.cat([x1, x2])], torch.float64)


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("n", [2, 7, 40])
def test_pdist_matches_cpu(p, dtype, n, native_only):
    x = randn(n, 5, dtype=dtype, seed=n)
    compare(lambda a: F.pdist(a, p=p), [x], dtype)
    compare(lambda a: torch.pdist(a.t(), p=p), [randn(5, n, dtype=dtype, seed=8)], dtype)  # made contiguous


def test_empty_shapes_match_cpu(native_only):
    for shapes in [((0, 3), (4, 3)), ((3, 0), (4, 0)), ((2, 3, 4), (2, 0, 4)), ((0, 3, 4), (1, 5, 4))]:
        for p in (1.0, 2.0):
            x1, x2 = randn(*shapes[0], dtype=torch.float64, seed=1), randn(*shapes[1], dtype=torch.float64, seed=2)
            compare(lambda a, b: torch.cdist(a, b, p=p), [x1, x2], torch.float64)
    for shape in [(1, 3), (4, 0)]:
        compare(lambda a: F.pdist(a), [randn(*shape, dtype=torch.float64, seed=3)], torch.float64)
    # no rows: CPU's _pdist_backward crashes (its column loop never ends); npu gives an empty gradient
    x = torch.empty(0, 2, device="npu", dtype=torch.float64, requires_grad=True)
    F.pdist(x).sum().backward()
    assert x.grad.shape == (0, 2)


def test_cdist_pdist_on_a_second_stream(native_only):
    x1, x2 = randn(9, 4, dtype=torch.float32, seed=1), randn(11, 4, dtype=torch.float32, seed=2)
    s = torch.npu.Stream()
    with torch.npu.stream(s):
        d = torch.cdist(x1.npu(), x2.npu(), p=1.5)
        e = F.pdist(x1.npu(), p=3.0)
    s.synchronize()
    torch.testing.assert_close(d.cpu(), torch.cdist(x1, x2, p=1.5))
    torch.testing.assert_close(e.cpu(), F.pdist(x1, p=3.0))


A = torch.ops.aten
X, Y = torch.randn(3, 4), torch.randn(5, 4)
DIST_BAD_CALLS = {
    "cdist 1-D": (lambda a, b: torch.cdist(a, b), torch.randn(4), Y),
    "cdist columns": (lambda a, b: torch.cdist(a, b), X, torch.randn(5, 3)),
    "cdist integers": (lambda a, b: torch.cdist(a, b), X.long(), Y.long()),
    "cdist negative p": (lambda a, b: torch.cdist(a, b, p=-1.0), X, Y),
    "cdist bad batch": (lambda a, b: torch.cdist(a, b), torch.randn(2, 3, 4), torch.randn(3, 5, 4)),
    "cdist float16": (lambda a, b: torch.cdist(a, b), X.half(), Y.half()),
    "cdist bfloat16 p=1": (lambda a, b: torch.cdist(a, b, p=1.0), X.bfloat16(), Y.bfloat16()),
    "cdist mixed dtypes": (lambda a, b: torch.cdist(a, b, p=1.0), X, Y.double()),
    "_cdist_forward mode": (lambda a, b: A._cdist_forward(a, b, 1.0, 3), X, Y),
    "_cdist_forward 1-D": (lambda a, b: A._cdist_forward(a, b, 1.0, None), X, torch.randn(4)),
    "_cdist_backward float16": (lambda g, a, b, d: A._cdist_backward(g, a, b, 1.0, d), torch.randn(3, 5).half(),
                                X.half(), Y.half(), torch.randn(3, 5).half()),
    "_cdist_backward mixed dtypes": (lambda g, a, b, d: A._cdist_backward(g, a, b, 1.0, d), torch.randn(3, 5),
                                     X, Y.double(), torch.randn(3, 5)),
    "pdist 3-D": (lambda a: torch.pdist(a), torch.randn(2, 3, 4)),
    "pdist integers": (lambda a: torch.pdist(a), X.long()),
    "pdist negative p": (lambda a: torch.pdist(a, p=-1.0), X),
    "pdist float16": (lambda a: torch.pdist(a), X.half()),
    "_pdist_forward strided": (lambda a: A._pdist_forward(a, 2.0), torch.randn(4, 3).t()),
    "_pdist_forward integers": (lambda a: A._pdist_forward(a, 2.0), X.long()),
    "_pdist_backward strided": (lambda g, a, d: A._pdist_backward(g, a, 2.0, d), torch.randn(3), torch.randn(4, 3).t(),
                                torch.randn(3)),
    "_pdist_backward float16": (lambda g, a, d: A._pdist_backward(g, a, 2.0, d), torch.randn(3).half(), X.half(),
                                torch.randn(3).half()),
}


@pytest.mark.parametrize("name", list(DIST_BAD_CALLS))
def test_distance_bad_arguments_raise_cpus_errors(name, native_only):
    fn, *args = DIST_BAD_CALLS[name]
    same_error(fn, *args)


def test_distance_checks_cpu_leaves_out():
    """CPU reads grad / cdist of the wrong shape and a 3-D _pdist_forward input unchecked: npu refuses them."""
    with pytest.raises(RuntimeError, match=r"_cdist_backward: expected grad of shape \[3, 5\], but got \[3, 4\]"):
        A._cdist_backward(torch.randn(3, 4).npu(), X.npu(), Y.npu(), 1.0, torch.randn(3, 5).npu())
    with pytest.raises(RuntimeError, match=r"_pdist_forward: expected self to be a 2-D tensor, but got 3-D"):
        A._pdist_forward(torch.randn(2, 3, 4).npu(), 2.0)
    with pytest.raises(RuntimeError, match=r"_pdist_backward: expected pdist of shape \[3\], but got \[2\]"):
        A._pdist_backward(torch.randn(3).npu(), X.npu(), 2.0, torch.randn(2).npu())


# ---- histc / histogram ----

FLOATS = [torch.float64, torch.float32, torch.float16, torch.bfloat16]


def histc_data(dtype, seed=0):
    """3000 normal values; 250 for 16-bit types: CPU counts each thread's share of a bin in the input dtype, so its
    bfloat16 counts stop at 256 and its float16 ones at 2048 (npu counts exactly and rounds once)."""
    n = 250 if dtype in (torch.float16, torch.bfloat16) else 3000
    x = torch.randn(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)
    x[:4] = torch.tensor([0.0, 1.0, -1.0, 2.0], dtype=dtype)  # edges of the bins below
    return x


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("args", [(10, -1.0, 2.0), (7, 0, 0), (1, -3.0, 3.0), (100, 0.5, 0.75), (4, -1, 1)])
def test_histc_matches_cpu(dtype, args, native_only):
    x = histc_data(dtype)
    want = torch.histc(x, *args)
    got = torch.histc(x.npu(), *args)
    assert got.dtype == want.dtype and got.device.type == "npu"
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", FLOATS)
def test_histc_skips_nan_inf_and_outside(dtype, native_only):
    x = torch.tensor([0.5, float("nan"), float("inf"), -float("inf"), 1.0, 0.0, 5.0, -2.0, 0.25], dtype=dtype)
    for bins, lo, hi in [(4, 0, 1), (3, -2, 5)]:
        torch.testing.assert_close(torch.histc(x.npu(), bins, lo, hi).cpu(), torch.histc(x, bins, lo, hi))


@pytest.mark.parametrize("dtype", FLOATS)
def test_histc_empty_and_constant_inputs_match_cpu(dtype, native_only):
    xs = [torch.tensor([], dtype=dtype), torch.full((5,), 3.0, dtype=dtype), torch.zeros(4, dtype=dtype)]
    if dtype in (torch.float32, torch.float64):
        xs.append(torch.full((2, 3), 1e10, dtype=dtype))  # widened by a step of the dtype where 1 is too small
    for x in xs:
        for args in [(5,), (3, 3.0, 3.0), (4, -1.0, 1.0)]:
            torch.testing.assert_close(torch.histc(x.npu(), *args).cpu(), torch.histc(x, *args))


def test_histc_out_and_method_match_cpu(native_only):
    x = histc_data(torch.float32)
    out = torch.empty(0, device="npu")
    torch.histc(x.npu(), 6, -2, 2, out=out)
    torch.testing.assert_close(out.cpu(), torch.histc(x, 6, -2, 2))
    torch.testing.assert_close(x.npu()[::3].histc(5).cpu(), x[::3].histc(5))  # strided input, data range


HIST_BAD_CALLS = {
    "bins 0": (lambda a: torch.histc(a, 0), X),
    "min > max": (lambda a: torch.histc(a, 4, 2, 1), X),
    "nan bound": (lambda a: torch.histc(a, 4, float("nan"), 1), X),
    "nan data range": (lambda a: torch.histc(a, 4), torch.tensor([1.0, float("nan")])),
    "inf data range": (lambda a: torch.histc(a, 4), torch.tensor([1.0, float("inf")])),
    "out dtype": (lambda a, o: torch.histc(a, 4, out=o), X, torch.empty(4, dtype=torch.float64)),
    "histogram bins 0": (lambda a: torch.histogram(a, 0), X),
    "histogram min > max": (lambda a: torch.histogram(a, 3, range=(1.0, 0.0)), X),
    "histogram range size": (lambda a: torch.histogram(a, 3, range=(0.0, 1.0, 2.0)), X),
    "histogram infinite range": (lambda a: torch.histogram(a, 3, range=(0.0, float("inf"))), X),
    "histogram float16 without range": (lambda a: torch.histogram(a, 3), X.half()),
    "histogram weight dtype": (lambda a, w: torch.histogram(a, 3, weight=w), X, torch.ones(3, 4).double()),
    "histogram weight size": (lambda a, w: torch.histogram(a, 3, weight=w), X, torch.ones(11)),
    "histogram edges dtype": (lambda a, b: torch.histogram(a, b), X, torch.tensor([0.0, 1.0]).double()),
    "histogram edges 0-D": (lambda a, b: torch.histogram(a, b), X, torch.tensor(1.0)),
    "histogram edges empty": (lambda a, b: torch.histogram(a, b), X, torch.tensor([])),
    "histogram one edge": (lambda a, b: torch.histogram(a, b), X, torch.tensor([1.0])),
}


@pytest.mark.parametrize("name", list(HIST_BAD_CALLS))
def test_histogram_bad_arguments_raise_cpus_errors(name, native_only):
    fn, *args = HIST_BAD_CALLS[name]
    same_error(fn, *args)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("density", [False, True])
def test_histogram_matches_cpu(dtype, weighted, density, native_only):
    x = histc_data(dtype).reshape(30, 100)  # weight: any shape with as many elements
    w = torch.rand(30, 100, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(dtype)
    kw = dict(weight=w if weighted else None, density=density)
    tol = dict(rtol=0, atol=0) if not (weighted or density) else TOL[dtype]
    npu_kw = dict(kw, weight=w.npu() if weighted else None)
    for args, extra in [((10,), {}), ((7,), dict(range=(-1.0, 2.0))), ((3,), dict(range=(1.0, 1.0)))]:
        want = torch.histogram(x, *args, **extra, **kw)
        got = torch.histogram(x.npu(), *args, **extra, **npu_kw)
        torch.testing.assert_close(got.bin_edges.cpu(), want.bin_edges, rtol=0, atol=0)
        torch.testing.assert_close(got.hist.cpu(), want.hist, **tol)
    edges = torch.tensor([-3.0, -1.0, -0.5, 0.0, 0.1, 1.0, 2.5], dtype=dtype)
    want = torch.histogram(x, edges, **kw)
    got = torch.histogram(x.npu(), edges.npu(), **npu_kw)
    torch.testing.assert_close(got.bin_edges.cpu(), want.bin_edges, rtol=0, atol=0)
    torch.testing.assert_close(got.hist.cpu(), want.hist, **tol)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_histogram_16_bit_with_a_range_matches_cpu(dtype, native_only):
    x = histc_data(dtype)
    want = torch.histogram(x, 8, range=(-2.0, 2.0))
    got = torch.histogram(x.npu(), 8, range=(-2.0, 2.0))
    torch.testing.assert_close(got.bin_edges.cpu(), want.bin_edges, rtol=0, atol=0)
    torch.testing.assert_close(got.hist.cpu(), want.hist, rtol=0, atol=0)


def test_histogram_out_and_empty_input_match_cpu(native_only):
    x = histc_data(torch.float32)
    hist, edges = torch.empty(0, device="npu"), torch.empty(0, device="npu")
    torch.histogram(x.npu(), 5, range=(-1.0, 1.0), out=(hist, edges))
    want = torch.histogram(x, 5, range=(-1.0, 1.0))
    torch.testing.assert_close(hist.cpu(), want.hist)
    torch.testing.assert_close(edges.cpu(), want.bin_edges)
    empty = torch.tensor([])
    for args in [(4,), (torch.tensor([0.0, 0.5, 2.0]),)]:
        npu_args = [a.npu() if isinstance(a, torch.Tensor) else a for a in args]
        got, want = torch.histogram(empty.npu(), *npu_args), torch.histogram(empty, *args)
        torch.testing.assert_close(got.hist.cpu(), want.hist)
        torch.testing.assert_close(got.bin_edges.cpu(), want.bin_edges)


def points(dtype, n=2000, dims=3, seed=2, nan=False):
    """n points of `dims` normal coordinates, a few on bin edges; with nan, one NaN coordinate (that point is
    skipped; bins from the data's range refuse it)."""
    x = torch.randn(n, dims, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)
    x[:3] = torch.tensor([[0.0] * dims, [1.0] * dims, [-1.0] * dims], dtype=dtype)
    if nan:
        x[3, -1] = float("nan")
    return x


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("density", [False, True])
def test_histogramdd_matches_cpu(dtype, weighted, density, native_only):
    x = points(dtype, nan=True).reshape(40, 50, 3)  # leading dimensions are flattened into points
    w = torch.rand(40, 50, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(dtype)
    kw = dict(weight=w if weighted else None, density=density)
    npu_kw = dict(kw, weight=w.npu() if weighted else None)
    tol = dict(rtol=0, atol=0) if not (weighted or density) else TOL[dtype]
    xf = torch.where(x.isnan(), 0.0, x)
    edges = [torch.tensor([-2.0, -0.5, 0.0, 1.0, 3.0], dtype=dtype), torch.linspace(-1, 1, 4, dtype=dtype),
             torch.tensor([0.0, 0.25], dtype=dtype)]
    cases = [(xf, [4, 3, 5], {}), (xf, 6, {}), (x, [2, 3, 4], dict(range=[-1.0, 1.0, -2.0, 2.0, 0.0, 0.0])),
             (x, edges, {})]
    for pts, bins, extra in cases:
        want = torch.histogramdd(pts, bins, **extra, **kw)
        nbins = [b.npu() for b in bins] if isinstance(bins, list) and isinstance(bins[0], torch.Tensor) else bins
        got = torch.histogramdd(pts.npu(), nbins, **extra, **npu_kw)
        assert got.hist.shape == want.hist.shape and got.hist.is_npu
        torch.testing.assert_close(got.hist.cpu(), want.hist, **tol)
        assert len(got.bin_edges) == len(want.bin_edges)
        for g, e in zip(got.bin_edges, want.bin_edges):
            torch.testing.assert_close(g.cpu(), e, rtol=0, atol=0)


def test_histogramdd_one_and_many_dims_empty_and_16_bit_match_cpu(native_only):
    x = points(torch.float32, n=500, dims=1)
    for pts, bins, extra in [(x, [7], {}), (points(torch.float32, n=300, dims=5), 2, {}),
                             (torch.empty(0, 2), [3, 2], {}),
                             (points(torch.float16, n=200, dims=2), [4, 4], dict(range=[-2.0, 2.0, -2.0, 2.0]))]:
        want = torch.histogramdd(pts, bins, **extra)
        got = torch.histogramdd(pts.npu(), bins, **extra)
        torch.testing.assert_close(got.hist.cpu(), want.hist, rtol=0, atol=0)
        for g, e in zip(got.bin_edges, want.bin_edges):
            torch.testing.assert_close(g.cpu(), e, rtol=0, atol=0)


X2 = torch.randn(10, 2, generator=torch.Generator().manual_seed(3))
HISTDD_BAD_CALLS = {
    "1-D input": (lambda a: torch.histogramdd(a, [3]), X2[:, 0]),
    "bin counts size": (lambda a: torch.histogramdd(a, [3, 3, 3]), X2),
    "bins 0": (lambda a: torch.histogramdd(a, [3, 0]), X2),
    "range size": (lambda a: torch.histogramdd(a, [3, 3], range=[0.0, 1.0]), X2),
    "range min > max": (lambda a: torch.histogramdd(a, [3, 3], range=[0.0, 1.0, 2.0, 1.0]), X2),
    "infinite range": (lambda a: torch.histogramdd(a, [3, 3], range=[0.0, float("inf"), 0.0, 1.0]), X2),
    "nan data range": (lambda a: torch.histogramdd(a, [3, 3]), torch.tensor([[1.0, float("nan")], [0.0, 0.0]])),
    "float16 without range": (lambda a: torch.histogramdd(a, [3, 3]), X2.half()),
    "edges count": (lambda a, b: torch.histogramdd(a, [b]), X2, torch.tensor([0.0, 1.0])),
    "edges dtype": (lambda a, b: torch.histogramdd(a, [b, b]), X2, torch.tensor([0.0, 1.0]).double()),
    "edges 2-D": (lambda a, b: torch.histogramdd(a, [b, b]), X2, torch.ones(2, 2)),
    "one edge": (lambda a, b: torch.histogramdd(a, [b, b]), X2, torch.tensor([1.0])),
    "weight shape": (lambda a, w: torch.histogramdd(a, [2, 2], weight=w), X2, torch.ones(20)),
    "weight dtype": (lambda a, w: torch.histogramdd(a, [2, 2], weight=w), X2, torch.ones(10).double()),
}


@pytest.mark.parametrize("name", list(HISTDD_BAD_CALLS))
def test_histogramdd_bad_arguments_raise_cpus_errors(name, native_only):
    fn, *args = HISTDD_BAD_CALLS[name]
    same_error(fn, *args)


def test_integer_histc_keeps_cudas_bins(native_only):
    x = torch.tensor([0, 1, 2, 9, 9, 5, 7, 8, 10, -1])
    assert torch.histc(x.npu(), bins=4, min=0, max=9).cpu().tolist() == [3, 0, 1, 4]
    assert re.match(r"^bins must be > 0", _error(lambda: torch.histc(x.npu(), bins=0)))


def _error(fn):
    with pytest.raises(RuntimeError) as err:
        fn()
    return first_line(err)
