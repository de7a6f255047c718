"""Op sweep: every OpInfo of PyTorch's op_db that reaches a native npu op (an aten op with a PrivateUse1
kernel of ours, see op_sweep.native_registrations()), run on npu and on CPU with its samples transformed into
input variants, and compared.

Variants (op_sweep.VARIANTS): as_is; zero_dim (tensors made 0-dim: every operand for elementwise ops, the input
otherwise); empty (numel 0 along dim 0); one_elem (every tensor 1 element, same ndim); transposed (last two
dims' strides swapped, same values); step_sliced (every other element of a buffer twice as wide); expanded
(dim 0 of stride 0); channels_last (4-D tensors). The npu copy of a sample keeps its exact sizes, strides and
storage offset.

Compared: success on both or a raise on both (same exception type); output shapes, dtypes, values
(dtype-appropriate tolerances, NaN equal), and strides (significant ones) for elementwise ops.

Dtypes: an op's CPU dtypes and its CUDA dtypes (OpInfo's dtypesIfCUDA) among float32, float64, float16,
bfloat16, int32, int64, bool, complex64. A dtype only CUDA accepts must work on npu (fallback dtype parity,
docs/fallback_dtype_parity.md) with CUDA's values; a dtype only CPU accepts may be refused.

Runs:
  default (CI)            float32, int32 and float16, the first FAST_SAMPLES samples per dtype (plus the OpInfo's
                          own 0-dim and empty samples), all variants: ~13k cases, about 2 minutes on 2 cores;
  NPU_SIM_SWEEP_FULL=1    every dtype above, the first FULL_SAMPLES samples: ~71k cases, about 6-8 minutes;
  NPU_SIM_SWEEP_OPS=a,b   only these OpInfos (names as in op_db, "name.variant" for a variant);
  NPU_SIM_SWEEP_REPORT=f  writes the counts (ops x cases, failures, native ops never reached) to f.
Forward only: the native ops reached only through autograd (*_backward, fused RNN cells, ...) or only by random
factories are listed as never reached in the report; tools/opinfo_conformance.py compares gradients.

CUDA semantics where CPU differs (each applied in judge() or in the tables below):
  - a dtype CUDA supports and CPU does not (OpInfo dtypesIfCUDA minus dtypes): npu must accept it; the
    reference is the CPU op run in a wider dtype (float16/bfloat16 -> float32, integers/bool -> int64, then
    float64) and cast back, or the op's own reference in REFERENCES (histc on integers: CUDA's integer bin
    arithmetic; nansum/nanmean on complex: an element with a NaN part counts as zero, as CUDA's NanSumOps).
    The list is docs/fallback_dtype_parity.md;
  - a dtype CPU supports and CUDA does not: npu may refuse it (any error where CPU raises too);
  - an out-of-range index is a device-side error on CUDA (a RuntimeError at the next sync, sticky): an npu
    device error is accepted where CPU raises IndexError or RuntimeError;
  - unique(sorted=False): CUDA always sorts; the reference is CPU's sorted unique;
  - native_batch_norm & co. return float32 saved statistics for float16/bfloat16 inputs (CUDA_ACC_STATS), and in
    evaluation mode the running mean and 1 / sqrt(running_var + eps) where CPU returns empty tensors;
  - CUDA_RAISES: batch norm updating expanded running statistics (CUDA's TensorIterator refuses the overlapping
    output), native_dropout_backward with a mask that does not broadcast to grad;
  - float16/bfloat16 results: CUDA computes in float (opmath) and rounds once where CPU rounds intermediates: a
    result matching CPU's op run in float32 and rounded is right; so is one within 4 units in the last place of
    the output's largest magnitude (op_sweep._close_normwise: cancellation of differently rounded intermediates).
Where CPU's result depends on the layout of the same values (a bug: median along a stride-0 dim reads the storage
as if contiguous; or rounding: batch norm of a channel of equal values), a layout variant whose npu result matches
CPU's result on contiguous copies passes and is listed under "cpu_layout_dependent" in the report.
CPU_ARTIFACT_ERRORS (CPU internal asserts) are not held against npu, nor a float16/bfloat16 sample npu refuses where
CPU's reduced-precision kernel accepts it but CPU's float32 kernel refuses it alike (a check missing from one CPU path).
LAPACK build dependence (CPU PyTorch uses MKL, npu OpenBLAS): eigenvectors are compared up to their phase (CANONICAL);
the expanded variant of the factorizations and solvers in RANK_DEFICIENT_EXPANDED makes every matrix rank 1, where
the result is the library's choice (reflectors, pivots, whether a diagonal is exactly 0): there npu is compared with
its own result on contiguous copies (the layout is read right) and every other variant against CPU.
"""
import itertools
import json
import os
import warnings

import pytest
import torch
import torch.utils._pytree as pytree

import torch_npu_sim
import op_sweep

FULL = os.environ.get("NPU_SIM_SWEEP_FULL") == "1"
FAST_DTYPES = (torch.float32, torch.int32, torch.float16)
FULL_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.bool,
               torch.complex64)
DTYPES = FULL_DTYPES if FULL else FAST_DTYPES
FAST_SAMPLES, FULL_SAMPLES = 2, 6
SAMPLES = FULL_SAMPLES if FULL else FAST_SAMPLES
LOOKAHEAD = 200 if FULL else 16

# Compared by shape, dtype and device only, with the reason: their values are not defined to match CPU's.
SHAPE_ONLY = {
    # nondeterministic: values are random draws
    **{name: "random values" for name in (
        "bernoulli", "normal", "normal.number_mean", "normal.in_place", "rand_like", "randn_like", "randint_like",
        "randint", "randn", "rand", "multinomial", "uniform", "cauchy", "exponential", "geometric", "log_normal",
        "nn.functional.dropout", "nn.functional.dropout2d", "nn.functional.dropout3d", "nn.functional.alpha_dropout",
        "nn.functional.feature_alpha_dropout", "nn.functional.feature_alpha_dropout.with_train",
        "nn.functional.feature_alpha_dropout.without_train", "nn.functional.rrelu",
        "nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d", "randperm",
        "svd_lowrank", "pca_lowrank")},
    # the values of the result are uninitialized memory
    **{name: "uninitialized values" for name in (
        "empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided", "empty_permuted", "resize_",
        "resize_as_")},
    # CPU's result is itself undefined
    **{name: "overlapping pooling windows give duplicate indices: which write wins is undefined" for name in (
        "nn.functional.max_unpool1d", "nn.functional.max_unpool2d", "nn.functional.max_unpool3d",
        "nn.functional.max_unpool1d.grad", "nn.functional.max_unpool2d.grad", "nn.functional.max_unpool3d.grad")},
}
# Not collected at all (nothing to run them against here), with the reason.
NOT_SWEPT = {
    # outside the backend's scope: npu tensors are strided (dense) only, as its copy_ says
    **{name: "sparse layout inputs: npu tensors are strided only" for name in (
        "sparse.sampled_addmm", "sparse.mm.reduce", "to_sparse")},
    # CUDA-only kernels: nothing on CPU to compare with
    "torch.ops.aten._flash_attention_forward": "CUDA-only kernel",
    "torch.ops.aten._efficient_attention_forward": "CUDA-only kernel",
}
# Variants not run for an op, with the reason.
SKIP_VARIANTS = {
    ("_chunk_cat", "zero_dim"): "CPU PyTorch itself segfaults on 0-dim inputs",
    ("_segment_reduce.offsets", "empty"): "CPU PyTorch itself segfaults on an empty data tensor with offsets",
    ("lu_unpack", "empty"): "CPU PyTorch itself segfaults (an empty LU batch with the sample's pivots); npu refuses "
                            "the batch mismatch (test_linalg.py::test_lu_unpack_refuses_pivots_of_another_batch)",
    ("_upsample_bilinear2d_aa", "one_elem"): "ATen's antialias kernel reads uninitialized weights for output pixels "
                                             "outside a 1-pixel input's support: CPU itself returns NaN there at "
                                             "random (11 of 300 runs)",
    ("native_group_norm", "expanded"): "ATen's kernels (CPU and CUDA) read weight and bias as contiguous: a stride-0 "
                                       "weight makes them read past its storage, an undefined result",
}
# Where CUDA raises and CPU does not: npu raising with this message is right. op name -> (message part, why)
CUDA_RAISES = {
    **{name: ("more than one element of the written-to tensor refers to a single memory location",
              "CUDA updates the running statistics through a TensorIterator that refuses an expanded output")
       for name in ("native_batch_norm", "_native_batch_norm_legit", "_batch_norm_with_update",
                    "nn.functional.batch_norm", "nn.functional.batch_norm.without_cudnn")},
    "native_dropout_backward": ("doesn't match the broadcast shape",
                                "CUDA's kernel writes an output of grad's shape: the mask must broadcast to it"),
    **{name: ("`driver` other than `gels` is not supported on CUDA",
              "ATen's linalg_lstsq accepts the drivers gelsy/gelsd/gelss on CPU tensors only")
       for name in ("linalg.lstsq", "linalg.lstsq.grad_oriented")},
}
# The expanded variant makes index tensors repeat one index: for ops that *write* through indices, which of the
# duplicate writes wins is undefined on CPU (and on CUDA).
# (embedding: max_norm renormalizes the looked-up rows of the weight in place; an expanded weight is overlapping memory.)
NO_EXPANDED = {"index_put", "index_copy", "scatter", "put", "_unsafe_index_put", "masked_scatter", "index_fill",
               "scatter_reduce.amax", "scatter_reduce.amin", "index_reduce.amax", "index_reduce.amin",
               "nn.functional.embedding"}
# Ops returning the position of a value among equal ones (ties): the index is undefined when the input has
# duplicates, so index outputs are compared only for inputs without duplicates.
TIE_INDEX_OPS = {"sort", "argsort", "topk", "kthvalue", "median", "nanmedian", "mode", "msort", "max.reduction_with_dim",
                 "min.reduction_with_dim", "argmax", "argmin", "cummax", "cummin", "nn.functional.max_pool1d",
                 "nn.functional.max_pool2d", "nn.functional.max_pool3d", "nn.functional.adaptive_max_pool1d",
                 "nn.functional.adaptive_max_pool2d", "nn.functional.adaptive_max_pool3d"}
# Ops whose result on a rank-deficient matrix is defined by the LAPACK build (which Householder reflector, whether a
# diagonal comes out exactly 0 or 1e-8, so which rank a cutoff sees): CPU PyTorch uses MKL, npu OpenBLAS. The
# expanded variant (dim 0 of stride 0) makes every matrix of these samples rank 1: there npu is compared with its
# own result on contiguous copies of the same values (the layout is read right); every other variant against CPU.
RANK_DEFICIENT_EXPANDED = {"qr", "linalg.qr", "geqrf", "ormqr", "householder_product", "pinverse", "linalg.pinv",
                           "linalg.pinv.hermitian", "linalg.cond", "linalg.matrix_rank", "linalg.matrix_rank.hermitian",
                           "linalg.lstsq", "linalg.lstsq.grad_oriented", "lu", "linalg.lu", "linalg.lu_factor",
                           "linalg.lu_factor_ex", "linalg.solve_triangular", "triangular_solve", "linalg.tensorsolve"}


def _eigenvector_phase_fixed(out):
    """(w, V) with each eigenvector scaled so that its largest entry is real and positive: eigenvectors are defined
    only up to that unit factor, and LAPACK builds differ in it."""
    w, v = out
    if v.numel() == 0:
        return out
    pivot = v.gather(-2, v.abs().argmax(dim=-2, keepdim=True))
    return w, v / (pivot / pivot.abs())


# Ops whose outputs are compared in a canonical form (both sides): op name -> fn(result)
CANONICAL = {"linalg.eigh": _eigenvector_phase_fixed}
# CPU errors that are artifacts of CPU's implementation (an internal size overflow where a check is missing): any
# npu error is accepted in their place.
# (MKL's DFTI refuses a transform over an empty batch; CUDA's cuFFT path and CPU builds on pocketfft return the empty
# spectrum.)
CPU_ARTIFACT_ERRORS = ("SmallVector unable to grow", "INTERNAL ASSERT FAILED",
                       "Intel oneMKL DFTI ERROR: Inconsistent configuration parameters")
# Ops whose samples ask for dropout (dropout_p > 0 or training=True): random values, shape and dtype compared.
DROPOUT_OPS = {"nn.functional.scaled_dot_product_attention", "nn.functional.multi_head_attention_forward"}
# CUDA returns the saved batch statistics of a float16/bfloat16 input in float32 (toAccumulateType(.., is_cuda));
# CPU in the input's dtype: these outputs are compared in float32.
CUDA_ACC_STATS = {"native_batch_norm": (1, 2), "_native_batch_norm_legit": (1, 2), "_batch_norm_with_update": (1, 2)}
# Failures this sweep found that are not fixed yet: (op name, dtype or None, variant or None) -> reason.
KNOWN_FAILURES = {
    **{(f"fft.{k}", torch.float16, None): "left: CUDA's half-precision FFTs (power-of-two sizes, complex32 results) have "
                                           "no npu or CPU path yet; CPU refuses float16"
       for k in ("fft", "fft2", "fftn", "hfft", "hfft2", "hfftn", "rfft", "rfft2", "rfftn", "ifft", "ifft2", "ifftn",
                 "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2", "irfftn")},
}

WIDER = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.int8: torch.int64, torch.uint8: torch.int64,
         torch.int16: torch.int64, torch.int32: torch.int64, torch.bool: torch.int64}


def _histc_cuda_integer(x, bins=100, min=0, max=0):
    """CUDA's histc on an integer tensor: bounds truncated to int64, integer bin arithmetic, bins of x's dtype."""
    lo, hi = int(min), int(max)
    v = x.reshape(-1).to(torch.int64)
    if lo == hi and v.numel() > 0:
        lo, hi = int(v.min()), int(v.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not lo < hi:
        raise RuntimeError("max must be larger than min")
    v = v[(v >= lo) & (v <= hi)]
    b = torch.div((v - lo) * bins, hi - lo, rounding_mode="floor").clamp_max(bins - 1)
    return torch.bincount(b, minlength=bins).to(x.dtype)


def _nansum_cuda_complex(x, *args, **kwargs):
    return torch.sum(torch.where(torch.isnan(x), torch.zeros((), dtype=x.dtype), x), *args, **kwargs)


def _nanmean_cuda_complex(x, dim=None, keepdim=False, dtype=None):
    s = _nansum_cuda_complex(x, dim, keepdim=keepdim, dtype=dtype)
    n = (~torch.isnan(x)).sum(dim, keepdim=keepdim)
    return s / n


# CUDA's result where CPU refuses the dtype and widening is not CUDA's arithmetic: (name, dtype kind) -> fn
REFERENCES = {
    ("histc", "int"): lambda s: _histc_cuda_integer(s.input, *s.args, **s.kwargs),
    ("trace", "int"): lambda s: torch.trace(s.input.long()),  # CUDA: diagonal().sum(), int64 for bool
    ("nansum", "complex"): lambda s: _nansum_cuda_complex(s.input, *s.args, **s.kwargs),
    ("nanmean", "complex"): lambda s: _nanmean_cuda_complex(s.input, *s.args, **s.kwargs),
}
HOST_ARGS_OPS = {"tensor_split"}


def _pixel_unshuffle_math(x, downscale_factor):
    """CUDA's pixel_unshuffle (ATen's math_pixel_unshuffle): CPU's own kernel returns an empty input unchanged
    instead of with the unshuffled shape."""
    if x.numel() > 0 or x.dim() < 3:  # CPU's kernel agrees (or raises CPU's error)
        return torch.nn.functional.pixel_unshuffle(x, downscale_factor)
    *b, c, h, w = x.shape
    r = downscale_factor
    y = x.reshape(*b, c, h // r, r, w // r, r)
    n = len(b)
    y = y.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return y.reshape(*b, c * r * r, h // r, w // r)


# CUDA's result where CPU's differs for every dtype (a CPU-only quirk): op name -> fn(sample)
CUDA_SEMANTICS = {
    "nn.functional.pixel_unshuffle": lambda s: _pixel_unshuffle_math(s.input, *s.args, **s.kwargs),
}


# CPU's float64 kernels of these evaluate single-precision-grade rational approximations (up to 1.3e-6 off,
# measured against mpmath in test_special.py); npu's libstdc++ functions are within 1e-13: 100x the tolerance.
CPU_COARSE_FLOAT64 = {"special.bessel_j0", "special.bessel_j1", "special.bessel_y0", "special.bessel_y1",
                      "special.airy_ai"}


def dtype_kind(dtype):
    if dtype.is_complex:
        return "complex"
    if dtype.is_floating_point:
        return "float"
    return "int"


def full_name(op):
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def _swept_dtypes(op):
    cpu_dtypes, cuda_dtypes = set(op.supported_dtypes("cpu")), set(op.supported_dtypes("cuda"))
    return [d for d in DTYPES if d in cpu_dtypes or d in cuda_dtypes]


def _all_ops():
    """Every OpInfo with a swept dtype, except NOT_SWEPT (OpInfos only of other dtypes are not collected)."""
    from torch.testing._internal.common_methods_invocations import op_db
    wanted = set(filter(None, os.environ.get("NPU_SIM_SWEEP_OPS", "").split(",")))
    ops = []
    for op in op_db:
        name = full_name(op)
        if wanted and name not in wanted and op.name not in wanted:
            continue
        if name in NOT_SWEPT or not _swept_dtypes(op):
            continue
        ops.append(pytest.param(op, id=name))
    return ops


STATS = {"ops_swept": 0, "ops_fallback": 0, "cases": 0, "passed": 0, "failed": 0, "known": 0,
         "native_reached": set(), "failures": {}, "cpu_layout_dependent": []}
LAYOUT_VARIANTS = {"transposed", "step_sliced", "expanded", "channels_last"}


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    native = op_sweep.native_base_names()
    summary = {k: v for k, v in STATS.items() if k not in ("native_reached",)}
    summary["native_ops"] = len(native)
    summary["native_ops_reached"] = len(STATS["native_reached"] & native)
    summary["native_ops_not_reached"] = sorted(native - STATS["native_reached"])
    print("\nop sweep:", json.dumps({k: v for k, v in summary.items() if k != "failures"}))
    path = os.environ.get("NPU_SIM_SWEEP_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump(summary, f, indent=1, sort_keys=True)


def _samples(op, dtype, n, lookahead):
    """The first n samples, plus (within the first `lookahead`) the first whose inputs are all 0-dim and the first
    with an empty input: the OpInfo's own edge cases, whose other arguments fit them (k=1 for kthvalue, ...)."""
    picked, zero_dim, empty = [], None, None
    try:
        for s in itertools.islice(op.sample_inputs("cpu", dtype, requires_grad=False), lookahead):
            if len(picked) < n:
                picked.append(s)
                continue
            ins = op_sweep._input_tensors(s)
            if zero_dim is None and ins and all(t.dim() == 0 for t in ins):
                zero_dim = s
            if empty is None and any(t.numel() == 0 for t in ins):
                empty = s
            if zero_dim is not None and empty is not None:
                break
    except Exception:  # noqa: BLE001 - an OpInfo without (more) samples at this dtype
        pass
    return picked + [s for s in (zero_dim, empty) if s is not None]


def _native_reached(op, samples, host_args):
    """Native npu ops the first sample reaches (ops under a CPU fallback excluded)."""
    native = op_sweep.native_base_names()
    for s in samples:
        if op_sweep.run_cpu(op, s).error is not None:
            continue
        n = op_sweep.sample_to_npu(s, host_args)
        torch_npu_sim.reset_fallback_ops()
        with torch.autograd.profiler.profile(use_cpu=True) as prof:
            op_sweep.run_npu(op, n)
        fell_back = {op_sweep.base_name(k) for k in torch_npu_sim.fallback_ops()}
        reached = set()
        for e in prof.function_events:
            if not e.name.startswith("aten::"):
                continue
            p, under_fallback = e.cpu_parent, False
            while p is not None:
                if p.name.startswith("aten::") and op_sweep.base_name(p.name) in fell_back:
                    under_fallback = True
                    break
                p = p.cpu_parent
            b = op_sweep.base_name(e.name)
            if not under_fallback and b not in fell_back:
                reached.add(b)
        return reached & native
    return set()


def _widened_reference(op, s, dtype):
    kind_ref = REFERENCES.get((op.name, dtype_kind(dtype)))
    if kind_ref is not None:
        try:
            return op_sweep.Outcome(kind_ref(s))
        except Exception as e:  # noqa: BLE001
            return op_sweep.Outcome(error=e)
    for wide in (WIDER.get(dtype), torch.float64):
        if wide is None:
            continue
        ws = op_sweep._map_tensors(s, lambda t: t.to(wide), lambda t: t.dtype == dtype)
        if ws is None:
            return None
        out = op_sweep.run_cpu(op, ws)
        if out.error is None:
            out.result = pytree.tree_map(
                lambda t: t.to(dtype) if isinstance(t, torch.Tensor) and t.dtype == wide else t, out.result)
            return out
    return None


def _opmath_reference(op, s, dtype):
    """CPU's result with float16/bfloat16 operands computed in float32 and rounded back: what CUDA's kernels do
    (opmath), where CPU's own reduced-precision kernel rounds intermediates."""
    ws = op_sweep._map_tensors(s, lambda t: t.float(), lambda t: t.dtype == dtype)
    if ws is None:
        return None
    out = op_sweep.run_cpu(op, ws)
    if out.error is not None:
        return None
    return pytree.tree_map(lambda t: t.to(dtype) if isinstance(t, torch.Tensor) and t.dtype == torch.float32 else t,
                           out.result)


def _compare(op, dtype, s, got, ref, shape_only):
    try:
        _compare_or_raise(op, dtype, s, got, ref, shape_only)
    except AssertionError:
        raise
    except Exception as e:  # noqa: BLE001 - reading the npu result back failed: a difference too
        raise AssertionError(f"reading the result back raised {type(e).__name__}: {str(e).splitlines()[0][:150]}")


def _compare_or_raise(op, dtype, s, got, ref, shape_only):
    skip_idx = op.name in TIE_INDEX_OPS or full_name(op) in TIE_INDEX_OPS
    if skip_idx:
        xs = [t for t in pytree.tree_leaves(s.input) if isinstance(t, torch.Tensor)]
        skip_idx = any(t.numel() != torch.unique(t).numel() for t in xs if t.numel() > 0 and not t.is_complex())
    if shape_only:
        for g, r in zip(pytree.tree_leaves(got), pytree.tree_leaves(ref)):
            if isinstance(r, torch.Tensor) and (g.shape != r.shape or g.dtype != r.dtype):
                raise AssertionError(f"shape/dtype {tuple(g.shape)}/{g.dtype} != CPU {tuple(r.shape)}/{r.dtype}")
        return
    tol_scale = 100.0 if dtype == torch.float64 and full_name(op) in CPU_COARSE_FLOAT64 else 1.0
    # matrix_exp's float32 samples reach 9.3e4: CPU and npu both sit ~6e-7 of the largest entry from float64
    if dtype == torch.float32 and full_name(op) == "matrix_exp":
        tol_scale = 10.0
    op_sweep.compare_values(got, ref, check_strides=op_sweep.is_elementwise(op), tol_scale=tol_scale,
                            skip_index_outputs=skip_idx)


def _contiguous_reference(op, s):
    """CPU's result on contiguous copies of a layout variant's tensors: the same values by definition, for CPU kernels
    that misread a layout (median along a stride-0 dim reads the storage as if contiguous, ...)."""
    cs = op_sweep._map_tensors(s, lambda t: t.contiguous(), lambda t: not t.is_contiguous())
    if cs is None:
        return None
    out = op_sweep.run_cpu(op, cs)
    return None if out.error is not None else out.result


def _float32_refuses_alike(op, s, dtype, error):
    """CPU refuses the sample in float32 with npu's error type: its float16/bfloat16 kernel (oneDNN's
    conv_transpose, ...) misses a check its float32 kernel makes, and npu checks alike for every dtype."""
    ws = op_sweep._map_tensors(s, lambda t: t.float(), lambda t: t.dtype == dtype)
    out = op_sweep.run_cpu(op, ws) if ws is not None else None
    return out is not None and out.error is not None and type(out.error) is type(error)


def _npu_contiguous_reference(op, s, host_args):
    """npu's own outcome on contiguous copies of the sample's tensors, read back to the host."""
    cs = op_sweep._map_tensors(s, lambda t: t.contiguous(), lambda t: not t.is_contiguous()) or s
    out = op_sweep.run_npu(op, op_sweep.sample_to_npu(cs, host_args))
    if out.error is None:
        out.result = pytree.tree_map(lambda t: t.cpu() if isinstance(t, torch.Tensor) else t, out.result)
    return out


def judge(op, dtype, s, ref, got, cpu_dtypes, cuda_dtypes, shape_only, layout_variant=False):
    """None if npu's outcome is right, else a one-line description of the difference."""
    cuda_only = dtype in cuda_dtypes and dtype not in cpu_dtypes
    cpu_only = dtype in cpu_dtypes and dtype not in cuda_dtypes
    if cuda_only and ref.error is not None:
        wide = _widened_reference(op, s, dtype)
        if wide is not None:
            ref = wide
    if ref.error is not None and got.error is not None:
        if type(ref.error) is type(got.error) or cuda_only or cpu_only:  # (CUDA refuses a CPU-only dtype anyway)
            return None
        if got.device_error and isinstance(ref.error, (IndexError, RuntimeError)):
            return None
        if any(a in str(ref.error) for a in CPU_ARTIFACT_ERRORS):
            return None
        return f"error types differ: CPU {ref.describe()} | npu {got.describe()}"
    if ref.error is not None:
        if any(a in str(ref.error) for a in CPU_ARTIFACT_ERRORS):
            return None
        return f"npu accepts what CPU rejects ({ref.describe()})"
    if got.error is not None:
        cuda = CUDA_RAISES.get(full_name(op))
        if cpu_only or (cuda is not None and cuda[0] in str(got.error)):
            return None
        if dtype in (torch.float16, torch.bfloat16) and _float32_refuses_alike(op, s, dtype, got.error):
            return None
        return f"npu raises: {got.describe()} (CPU ok)"
    expected, result = ref.result, got.result
    if (op.name in ("native_batch_norm", "_native_batch_norm_legit") and len(s.args) == 7 and not s.args[4]
            and expected[1].numel() == 0):
        # evaluation: CUDA returns the running statistics it normalised with, [C] in float32 for 16-bit input (ATen's
        # decomposition and meta function for non-CPU devices too); CPU returns empty tensors
        rm, rv, eps = s.args[2].float(), s.args[3].float(), s.args[6]
        stats = rm.to(result[1].dtype), (rv + eps).rsqrt().to(result[2].dtype)
        expected = (expected[0], *(x.to(expected[1].dtype) for x in stats), *expected[3:])
    if op.name in CUDA_ACC_STATS and dtype in (torch.float16, torch.bfloat16):
        stats = CUDA_ACC_STATS[op.name]
        if any(result[i].dtype != torch.float32 for i in stats):
            return f"saved statistics of dtype {[str(result[i].dtype) for i in stats]}, CUDA's are float32"
        result = tuple(g.to(dtype) if i in stats else g for i, g in enumerate(result))
    try:
        _compare(op, dtype, s, result, expected, shape_only)
    except AssertionError as e:
        opmath = _opmath_reference(op, s, dtype) if dtype in (torch.float16, torch.bfloat16) else None
        if opmath is not None:
            try:
                _compare(op, dtype, s, result, opmath, shape_only)
                return None
            except AssertionError:
                pass
        contiguous = _contiguous_reference(op, s) if layout_variant else None
        if contiguous is not None:
            try:
                _compare(op, dtype, s, result, contiguous, shape_only)
                STATS["cpu_layout_dependent"].append(f"{full_name(op)} {str(dtype)[6:]}: {' '.join(str(e).split())[:120]}")
                return None
            except AssertionError:
                pass
        return " ".join(str(e).split())[:300]
    return None


def _known(name, dtype, variant):
    for key in ((name, dtype, variant), (name, dtype, None), (name, None, variant), (name, None, None)):
        if key in KNOWN_FAILURES:
            return KNOWN_FAILURES[key]
    return None


@pytest.mark.parametrize("op", _all_ops())
def test_op_sweep(op):
    name = full_name(op)
    cpu_dtypes, cuda_dtypes = set(op.supported_dtypes("cpu")), set(op.supported_dtypes("cuda"))
    dtypes = _swept_dtypes(op)
    host_args = op.name in HOST_ARGS_OPS
    first = _samples(op, dtypes[0], SAMPLES, LOOKAHEAD)
    reached = _native_reached(op, first, host_args)
    parity = [d for d in dtypes if d in cuda_dtypes and d not in cpu_dtypes]  # fallback dtype parity
    if not reached:
        # An op of the CPU fallback: swept at its first dtype (the fallback's copies of 0-dim, empty,
        # strided, expanded and channels-last operands and results) and at the dtypes only CUDA accepts.
        STATS["ops_fallback"] += 1
        dtypes = list(dict.fromkeys(dtypes[:1] + parity))
    STATS["native_reached"] |= reached
    STATS["ops_swept"] += 1
    failures, known = [], 0
    for dtype in dtypes:
        samples = first if dtype == dtypes[0] else _samples(op, dtype, SAMPLES, LOOKAHEAD)
        for si, sample in enumerate(samples):
            for vname, vfn in op_sweep.VARIANTS.items():
                if vname == "expanded" and (op.name in NO_EXPANDED or name in NO_EXPANDED):
                    continue
                if (name, vname) in SKIP_VARIANTS:
                    continue
                cs = vfn(op, sample)
                if cs is None:
                    continue
                if op.name == "unique" and cs.kwargs.get("sorted") is False:  # CUDA always sorts
                    ref_sample = op_sweep.SampleInput(cs.input, args=cs.args, kwargs={**cs.kwargs, "sorted": True})
                else:
                    ref_sample = cs
                ns = op_sweep.sample_to_npu(cs, host_args)
                if name in CUDA_SEMANTICS:
                    try:
                        ref = op_sweep.Outcome(CUDA_SEMANTICS[name](ref_sample))
                    except Exception as e:  # noqa: BLE001
                        ref = op_sweep.Outcome(error=e)
                elif vname == "expanded" and name in RANK_DEFICIENT_EXPANDED:
                    ref = _npu_contiguous_reference(op, cs, host_args)
                else:
                    ref = op_sweep.run_cpu(op, ref_sample)
                got = op_sweep.run_npu(op, ns)
                if name in CANONICAL:
                    for side in (ref, got):
                        if side.error is None:
                            side.result = CANONICAL[name](side.result)
                STATS["cases"] += 1
                shape_only = name in SHAPE_ONLY or (
                    name in DROPOUT_OPS and (cs.kwargs.get("dropout_p", 0) > 0 or cs.kwargs.get("training") is True))
                why = judge(op, dtype, cs, ref, got, cpu_dtypes, cuda_dtypes, shape_only, vname in LAYOUT_VARIANTS)
                if why is None:
                    STATS["passed"] += 1
                    continue
                reason = _known(name, dtype, vname)
                if reason is not None:
                    STATS["known"] += 1
                    known += 1
                    continue
                STATS["failed"] += 1
                shapes = [tuple(t.shape) for t in pytree.tree_leaves((cs.input, cs.args, cs.kwargs))
                          if isinstance(t, torch.Tensor)]
                failures.append(f"{str(dtype)[6:]} sample{si} {vname} {shapes}: {why}")
    if failures:
        STATS["failures"][name] = failures
    assert not failures, f"{len(failures)} failing cases:\n" + "\n".join(failures[:12])


# ---- the reproducers, kept as plain tests ------------------------------------------------------------

def test_kthvalue_zero_dim():
    v, i = torch.kthvalue(torch.tensor(3.0, device="npu"), 1)
    assert v.shape == () and i.shape == ()
    assert v.item() == 3.0 and i.item() == 0


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int16, torch.int8, torch.uint8])
def test_histc_integer(dtype):
    x = torch.tensor([0, 1, 2, 2, 5, 9, 9, 9, 12], dtype=dtype)
    got = torch.histc(x.to("npu"), bins=4, min=0, max=9)
    assert got.dtype == dtype
    assert got.cpu().tolist() == _histc_cuda_integer(x, 4, 0, 9).tolist() == [4, 0, 1, 3]
    got = torch.histc(x.to("npu"), bins=3)  # min == max: the data's range
    assert got.cpu().tolist() == _histc_cuda_integer(x, 3).tolist()


# Fallback dtype parity (docs/fallback_dtype_parity.md): dtypes CUDA accepts and CPU does not.
def _parity_cases():
    import torch.nn.functional as F
    x5 = torch.randn(2, 3, 4, 4, 4)
    x4 = torch.randn(1, 2, 6, 8)
    scores, target = torch.randn(3, 5), torch.tensor([0, 4, 2])
    ml_target = torch.tensor([[0, 3, -1, 1, 2], [4, -1, 0, 0, 0], [1, 2, 3, -1, 0]])
    return {
        "avg_pool3d": (lambda x: F.avg_pool3d(x, 2), [x5]),
        "multi_margin_loss": (lambda x, t: F.multi_margin_loss(x, t), [scores, target]),
        "multilabel_margin_loss": (lambda x, t: F.multilabel_margin_loss(x, t), [scores, ml_target]),
        "interpolate_bilinear_aa": (lambda x: F.interpolate(x, size=(3, 5), mode="bilinear", antialias=True), [x4]),
        "interpolate_bicubic_aa": (lambda x: F.interpolate(x, size=(3, 5), mode="bicubic", antialias=True), [x4]),
    }


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("case", sorted(_parity_cases()))
def test_fallback_dtype_parity(case, dtype):
    """CPU refuses these ops at float16/bfloat16, CUDA computes them in float and rounds once: so does npu, forward and
    backward."""
    fn, args = _parity_cases()[case]
    ins = [a.to(dtype) if a.is_floating_point() else a for a in args]
    with pytest.raises(NotImplementedError):  # CPU itself refuses the dtype
        fn(*ins)
    ref_in = ins[0].float().requires_grad_()
    ref = fn(ref_in, *ins[1:])
    ref.sum().backward()
    got_in = ins[0].to("npu").requires_grad_()
    got = fn(got_in, *[a.to("npu") for a in ins[1:]])
    assert got.dtype == dtype
    torch.testing.assert_close(got.cpu(), ref.to(dtype), rtol=0, atol=0)
    got.sum().backward()
    assert got_in.grad.dtype == dtype
    torch.testing.assert_close(got_in.grad.cpu(), ref_in.grad.to(dtype), rtol=0, atol=0)


def test_parity_trace_nansum_isnan_chalf():
    assert torch.trace(torch.eye(4, dtype=torch.bool, device="npu")).cpu().item() == 4
    c = torch.tensor([1 + 1j, complex(float("nan"), 0), complex(0, float("nan")), 2j], dtype=torch.complex64)
    assert torch.nansum(c.to("npu")).cpu().item() == 1 + 3j
    assert torch.nanmean(c.to("npu")).cpu().item() == (1 + 3j) / 2
    assert torch.isnan(c.to("npu")).cpu().tolist() == [False, True, True, False]
    h = torch.randn(3, 2, dtype=torch.float16)
    got = torch.view_as_complex(h.to("npu")).cpu()
    assert got.dtype == torch.complex32 and torch.equal(torch.view_as_real(got), h)
