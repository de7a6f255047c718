"""OpInfo conformance harness: runs the float32 (or --dtype) sample inputs of every OpInfo in PyTorch's op_db
(torch.testing._internal.common_methods_invocations, shipped in the wheel) on npu and on CPU and compares
the forward results and, for ops that support autograd, the gradients of every differentiable input
under a fixed random output gradient. Forward and backward are each recorded as:
  native    - every sample matched and no op fell back to the CPU
  fallback  - every sample matched, some op went through the CPU fallback
  mismatch  - a sample produced different values, shapes or dtypes
  error     - a sample raised on npu (but not on CPU)
(backward also: n/a - no differentiable sample, or a random op).
Usage: python tools/opinfo_conformance.py [--dtype float32|float16|bfloat16|complex64|float64|int64|int32|uint8|bool]
       [--ops name,name] [--max-samples N (0: all)] [--noncontiguous] [--out | --inplace] [--no-backward]
       [--summary FILE]
--noncontiguous runs every sample with its tensors made non-contiguous (OpInfo's SampleInput.noncontiguous():
the same values at doubled strides and an offset), where kernels that assume dense inputs read the wrong elements.
--out runs the out= variants instead, into a strided out tensor of the right shape and into an empty one;
--inplace the in-place variants (x.add_(y)) on the samples CPU takes in place.
The full runs' summaries are committed as docs/opinfo_summary.md (float32) and docs/opinfo_summary_<dtype>.md.
16-bit results are compared with CPU's 16-bit results at 16-bit tolerances: CPU computes some ops in float32
internally and rounds once, the npu kernels do the same or accumulate in float32, so the last bits may differ."""
import argparse
import collections
import sys
import time
import warnings

import torch
import torch.utils._pytree as pytree

import torch_npu_sim

# Ops whose outputs are random draws: compared by shape and dtype only.
RANDOM_OPS = {"bernoulli", "normal", "rand_like", "randn_like", "randint_like", "multinomial", "uniform",
              "nn.functional.dropout", "nn.functional.dropout2d", "nn.functional.dropout3d",
              "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout", "nn.functional.rrelu",
              "cauchy", "exponential", "geometric", "log_normal", "randn", "rand", "randint", "empty",
              "empty_like", "new_empty", "empty_strided", "new_empty_strided", "empty_permuted",
              "nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d",
              "svd_lowrank", "pca_lowrank"}  # the last two draw a random projection on the input's device
# Ops whose samples are random draws when they ask for dropout (dropout_p > 0 or training=True).
DROPOUT_OPS = {"nn.functional.scaled_dot_product_attention", "nn.functional.multi_head_attention_forward"}


def is_random_sample(op, sample):
    if op.name in RANDOM_OPS:
        return True
    kw = sample.kwargs
    return op.name in DROPOUT_OPS and (kw.get("dropout_p", 0) > 0 or kw.get("training") is True)


def column_phase(x):
    """The unit factor of each column of x (over dim -2) that makes its largest entry real and positive."""
    pivot = x.gather(-2, x.abs().argmax(dim=-2, keepdim=True))
    return (pivot / pivot.abs()).detach()


def eigenvector_phase_fixed(out):
    """(w, V) with each eigenvector scaled so that its largest entry is real and positive: eigenvectors are only
    defined up to that unit factor, and LAPACK builds differ in it (CPU PyTorch's MKL against OpenBLAS here)."""
    w, v = out
    return (w, v) if v.numel() == 0 else (w, v / column_phase(v))


def singular_vectors_phase_fixed(out, vh):
    """(U, S, V) (or Vh) with the first min(m, n) singular vector pairs scaled by one unit factor each, so that the
    largest entry of each U column is real and positive, and the remaining (null-space) columns dropped: a pair is
    only defined up to that factor, and a null-space basis not at all (MKL and OpenBLAS pick different ones)."""
    u, s, v = out
    k = s.shape[-1]
    u, v = u[..., :k], (v[..., :k, :] if vh else v[..., :k])
    if u.numel() == 0:
        return u, s, v
    phase = column_phase(u)
    return u / phase, s, (v * phase.mT if vh else v / phase)


# Ops whose outputs are compared in a canonical form (both sides), and differentiated through it.
GAUGE_OPS = {"linalg.eigh": eigenvector_phase_fixed,
             "svd": lambda out: singular_vectors_phase_fixed(out, vh=False),
             "linalg.svd": lambda out: singular_vectors_phase_fixed(out, vh=True)}


# Why an aten op still runs on the CPU fallback: (substring of the aten op's name, reason). The first match wins;
# an op matching none is reported as "no npu kernel yet".
FALLBACK_REASONS = (
)


# Why a mismatch is CPU's defect rather than ours: (OpInfo name, reason), shown in the mismatch tables.
_GRID_16BIT = ("16-bit backward: CPU accumulates the gradients in the 16-bit dtype, npu in float32 (CUDA's opmath); "
               "against CPU's float32 gradients npu is the closer one (a bfloat16 grid gradient: CPU 16.8 off, npu 0.24)")
_CONV_BF16_AVX2 = ("bfloat16 on a CPU without AVX512-BF16 (an AVX2 host; none on AVX-512 hosts): a bfloat16 ulp apart "
                   "from CPU's oneDNN, npu's values never farther from the float64 result than CPU's (grouped "
                   "conv2d backward: CPU up to 0.32 off, npu 0.07-0.17; conv_transpose1d: CPU 0.29, npu 0.21)")
MISMATCH_REASONS = {
    "grid_sampler_2d": _GRID_16BIT, "grid_sampler_3d": _GRID_16BIT, "nn.functional.grid_sample": _GRID_16BIT,
    "nn.functional.normalize": "bfloat16 backward, p = 0.5 over a size-1 dim: the float32 gradient is ~2e-6 and both "
                               "CPU and npu land 0.03-0.06 from it (cancellation in 16 bits), rounding differently",
    "matrix_exp": "samples whose exponential reaches 9.3e4. float32: CPU and npu both land within 6e-7 of the largest "
                  "entry from the float64 result (CPU 0.005-0.05 off, npu 0.023), so they differ by more than the "
                  "tolerance on the small entries; 16-bit: CPU computes in the 16-bit dtype and overflows (its "
                  "bfloat16 exp of a 3 x 3 matrix of norm 0.3 is -1.3e30), npu computes in float32. "
                  "tests/python/test_remaining_ops.py checks npu against CPU relative to the largest entry",
    "nn.functional.conv2d": _CONV_BF16_AVX2, "nn.functional.conv_transpose1d": _CONV_BF16_AVX2,
    "nn.functional.conv3d": "float16 backward, dilation 3 with 'same' padding: CPU accumulates the input gradient in "
                            "float16 (0.107 off the float64 gradient), npu in float32 (0.030 off)",
    "istft": "complex64 backward: the sample's window is a leaf view into a longer tensor, and CPU's autograd gives "
             "it no gradient; a fresh copy of the same window gets one, equal to npu's and to complex128's within 1e-6",
    "special.bessel_j0": "float64, near the function's zeros: CPU's values are up to 7e-6 (relative) off mpmath's "
                         "40-digit ones, npu's within 7e-15",
    "special.bessel_y1": "float64, near the function's zeros: CPU's values are up to 7e-6 (relative) off mpmath's "
                         "40-digit ones, npu's within 5e-15",
    "renorm": "complex, p = inf: CPU's gradient is NaN (its |x| never equals the norm it computed, so norm_backward "
              "divides 0 by 0); npu's norm is the max of the same |x|, and its gradient is the formula's",
}


# Why an op raises on npu where CPU computes: (part of the error, reason). CUDA's semantics where CPU's differ.
_CUDA_FLOAT_ONLY = "CUDA takes floating types only here too (CPU also computes integers)"
ERROR_REASONS = (
    ("Cube unit has no kernel for dtype", "CUDA has no integer GEMM or convolution either (\"addmm_cuda\" not "
                                          "implemented for 'Long'); CPU computes them"),
    ('"masked_scale" not implemented', _CUDA_FLOAT_ONLY),
    ("avg_pool", _CUDA_FLOAT_ONLY),
    ("driver` other than `gels`", "CUDA's message and rule: lstsq on CUDA has only the gels driver"),
    ("addbmm_: self of shape", "addbmm_ with a self that only broadcasts to the result: CPU and CUDA resize self to "
                               "the result's shape in place; npu refuses, as addmm_ and baddbmm_ do on every backend"),
    ("Sparse", "sparse layouts have no npu kernels (sparse tensors stay on the CPU)"),
)


def error_reason(detail):
    return next((r for key, r in ERROR_REASONS if key in detail), "")


def fallback_reason(detail):
    """The reasons of the fallen-back aten ops in `detail` (a comma-separated list), deduplicated."""
    reasons = []
    for aten_op in filter(None, detail.split(",")):
        why = next((r for key, r in FALLBACK_REASONS if key in aten_op), "no npu kernel yet")
        if why not in reasons:
            reasons.append(why)
    return "; ".join(reasons)


# Ops that may return equal values in any order without stable=True (CPU's quickselect and CUDA's sort differ, and
# either is right): the position of their dim argument after the input.
TIE_OPS = {"sort": 0, "argsort": 0, "topk": 1, "kthvalue": 1}


def ties_resolved(name, out, args, kwargs):
    """A sort / argsort / topk / kthvalue result with its indices replaced by the input's values at them, plus a check
    that they are what indices must be (a permutation along dim for sort and argsort, distinct for topk): two results
    that differ only in the order of equal values then compare equal, and any other difference still shows."""
    x = args[0]
    if kwargs.get("stable") or not isinstance(x, torch.Tensor) or x.dim() == 0:
        return out
    rest, pos = args[1:], TIE_OPS[name]
    dim = rest[pos] if len(rest) > pos else kwargs.get("dim", -1)
    squeezed = name == "kthvalue" and not (rest[2] if len(rest) > 2 else kwargs.get("keepdim", False))
    indices = out if name == "argsort" else out[1]
    indices = indices.unsqueeze(dim) if squeezed else indices
    picked = x.detach().gather(dim, indices)
    picked = picked.squeeze(dim) if squeezed else picked
    in_order = indices.sort(dim=dim).values
    if name == "argsort":
        return picked, in_order
    if name == "sort":
        return out[0], picked, in_order
    if name == "kthvalue":
        return out[0], picked
    return out[0], picked, (in_order.diff(dim=dim) > 0).all() if indices.shape[dim] > 1 else x.new_ones((), dtype=bool)


def canonical(op, out, args, kwargs):
    """The output of op(*args, **kwargs) in the form both sides are compared in."""
    if op.name in TIE_OPS:
        return ties_resolved(op.name, out, args, kwargs)
    return GAUGE_OPS[op.name](out) if op.name in GAUGE_OPS else out


def call(op, *args, **kwargs):
    return canonical(op, op(*args, **kwargs), args, kwargs)


# Ops whose non-input tensor arguments must stay on the host (as on CUDA): only the input moves.
HOST_ARGS_OPS = {"tensor_split"}


def storage_to_npu(x):
    """x on npu over a copy of its whole storage, with its sizes, strides and storage offset: ops that address
    the storage itself (as_strided with a storage_offset) see the same elements as on CPU, which x.to("npu"),
    a compact copy of the view alone, would not give them."""
    if (x.device.type != "cpu" or x.layout != torch.strided or x.is_conj() or x.is_neg() or x.is_quantized
            or (x.storage_offset() == 0 and x.untyped_storage().nbytes() == x.numel() * x.element_size())):
        return None
    whole = torch.empty(0, dtype=x.dtype).set_(x.untyped_storage()).to("npu")
    return whole.as_strided(x.size(), x.stride(), x.storage_offset())


def to_npu(x):
    """Moves tensors to npu; device arguments naming the CPU (factories, .to) name npu instead."""
    if isinstance(x, torch.Tensor):
        same_storage = storage_to_npu(x.detach()) if not x.requires_grad else None
        return same_storage if same_storage is not None else x.to("npu")
    if isinstance(x, torch.device) and x.type == "cpu":
        return torch.device("npu")
    if isinstance(x, str) and x == "cpu":
        return "npu"
    return x


DTYPE = torch.float32
NONCONTIGUOUS = False


def samples_of(op, max_samples, requires_grad):
    samples = list(op.sample_inputs("cpu", DTYPE, requires_grad=requires_grad))
    samples = samples[:max_samples] if max_samples else samples
    return [s.noncontiguous() for s in samples] if NONCONTIGUOUS else samples
# (forward, backward) atol = rtol per dtype: a few units in the last place of the dtype, the backward's looser
TOLERANCE = {torch.float32: (1e-4, 1e-3), torch.complex64: (1e-4, 1e-3), torch.float16: (1e-2, 2e-2),
             torch.bfloat16: (3e-2, 8e-2), torch.float64: (1e-7, 1e-6), torch.int64: (0, 0), torch.int32: (0, 0),
             torch.uint8: (0, 0), torch.bool: (0, 0)}


def names_a_device(sample):
    """Whether the sample has a tensor or a device argument: a factory without either (arange(2)) builds on the CPU."""
    return any(isinstance(x, (torch.Tensor, torch.device)) or x == "cpu"
               for x in pytree.tree_leaves((sample.input, sample.args, sample.kwargs)))


def compare(got, ref, shape_only, on_npu=True):
    if isinstance(ref, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            raise AssertionError(f"expected a tensor, got {type(got)}")
        if on_npu and got.device.type != "npu" and ref.device.type == "cpu" and ref.numel() > 0:
            raise AssertionError(f"output on {got.device}, expected npu")
        if got.shape != ref.shape or got.dtype != ref.dtype:
            raise AssertionError(f"shape/dtype {tuple(got.shape)}/{got.dtype} != {tuple(ref.shape)}/{ref.dtype}")
        if not shape_only:
            # integer results exactly; floating results of integer inputs (cos of an int64) at float32's tolerance
            exact = not (DTYPE.is_floating_point or DTYPE.is_complex)
            tol = TOLERANCE[torch.float32 if exact and (ref.is_floating_point() or ref.is_complex()) else DTYPE][0]
            torch.testing.assert_close(got.cpu(), ref, atol=tol, rtol=tol, equal_nan=True, check_device=False)
    elif isinstance(ref, (list, tuple)):
        if len(got) != len(ref):
            raise AssertionError("output structure differs")
        for g, r in zip(got, ref):
            compare(g, r, shape_only, on_npu)
    elif isinstance(ref, (int, float, bool, complex)):
        if not shape_only and got != ref and not (ref != ref and got != got):
            raise AssertionError(f"{got} != {ref}")


def npu_copy(x):
    """A sample's tensor on npu, a new leaf that requires grad exactly when the CPU one does."""
    if isinstance(x, torch.Tensor):
        same_storage = storage_to_npu(x.detach())
        return (same_storage if same_storage is not None else x.detach().to("npu")).requires_grad_(x.requires_grad)
    return to_npu(x)


def diff_outputs(out):
    return [o for o in pytree.tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad
            and (o.is_floating_point() or o.is_complex())]


def leaves_of(sample):
    return [t for t in pytree.tree_leaves((sample.input, sample.args, sample.kwargs))
            if isinstance(t, torch.Tensor) and t.requires_grad]


def prepared_samples(op, max_samples, requires_grad, failed):
    """(the op's samples, None), with the fallback record reset; or (None, a row of status `failed`) when the sample
    generator itself raises (a harness records whatever it does)."""
    try:
        samples = samples_of(op, max_samples, requires_grad=requires_grad)
    except Exception as e:  # noqa: BLE001
        return None, (failed, f"sample_inputs failed: {e}")
    torch_npu_sim.reset_fallback_ops()
    return samples, None


def on_npu(s):
    """The sample with its tensors on npu, and its args and kwargs with device arguments naming npu."""
    n = s.transform(to_npu)
    return n, [to_npu(a) for a in n.args], {k: to_npu(v) for k, v in n.kwargs.items()}


def error_row(e):
    """The row of a sample that raised on npu (but not on CPU)."""
    return "error", f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"


def passed_row():
    """The row of an op whose samples all matched: native, or fallback with the aten ops that fell back."""
    return ("fallback" if torch_npu_sim.fallback_ops() else "native"), ",".join(sorted(torch_npu_sim.fallback_ops()))


def output_grads(op, outs):
    """Random output gradients; for ops that may order equal values either way (sort & co.), a function of each
    output's value instead, so that equal values get equal gradients and either order gives the same input gradient."""
    if op.name in TIE_OPS or op.name == "msort":
        return [torch.sin(o.detach() * 7.3 + 0.5) for o in outs]
    g = torch.Generator().manual_seed(0)
    return [torch.randn(o.shape, generator=g, dtype=o.dtype) for o in outs]


def run_backward(op, max_samples):
    """Gradients on npu vs CPU for up to max_samples differentiable samples."""
    if not op.supports_autograd or op.name in RANDOM_OPS or op.name in DROPOUT_OPS or not DTYPE.is_floating_point and \
            not DTYPE.is_complex:  # integer inputs have no gradients
        return "n/a", ""
    samples, row = prepared_samples(op, max_samples, requires_grad=True, failed="n/a")
    if row:
        return row
    checked = 0
    for s in samples:
        try:
            outs, leaves = diff_outputs(call(op, s.input, *s.args, **s.kwargs)), leaves_of(s)
            if not outs or not leaves:
                continue
            gouts = output_grads(op, outs)
            ref = torch.autograd.grad(outs, leaves, gouts, allow_unused=True)
        except Exception:  # noqa: BLE001 - the CPU itself cannot differentiate this sample
            continue
        try:
            if op.name in HOST_ARGS_OPS:
                n = type(s)(npu_copy(s.input), args=s.args, kwargs=s.kwargs)
                got_out = diff_outputs(call(op, n.input, *n.args, **n.kwargs))
            else:
                n = s.transform(npu_copy)
                got_out = diff_outputs(call(op, n.input, *[to_npu(a) for a in n.args],
                                          **{k: to_npu(v) for k, v in n.kwargs.items()}))
            if len(got_out) != len(outs):
                return "mismatch", f"{len(got_out)} differentiable outputs, expected {len(outs)}"
            got = torch.autograd.grad(got_out, leaves_of(n), [t.to("npu") for t in gouts], allow_unused=True)
            torch.npu.synchronize()
        except Exception as e:  # noqa: BLE001
            return error_row(e)
        try:
            for a, b in zip(got, ref):
                if (a is None) != (b is None):
                    raise AssertionError("a gradient is missing on one side")
                if b is not None:
                    tol = TOLERANCE[DTYPE][1]
                    torch.testing.assert_close(a.cpu(), b, atol=tol, rtol=tol, equal_nan=True, check_device=False)
        except Exception as e:  # noqa: BLE001
            return "mismatch", str(e).splitlines()[0][:160]
        checked += 1
    if not checked:
        return "n/a", "no differentiable sample"
    return passed_row()


def cuda_reference(op, s, ref):
    """CUDA's result where CPU's differs: native_batch_norm & co. in evaluation mode return the running mean and
    1 / sqrt(running_var + eps) as saved statistics (npu as CUDA), where CPU returns empty tensors; and they save a
    16-bit input's statistics in float32."""
    if op.name in ("native_batch_norm", "_native_batch_norm_legit") and len(s.args) == 7 and not s.args[4]:
        running_mean, running_var, eps = s.args[2], s.args[3], s.args[6]
        if running_mean is not None and running_var is not None:
            acc = torch.float64 if s.input.dtype == torch.float64 else torch.float32  # the accumulation type
            return ref[0], running_mean.to(acc), (running_var.to(acc) + eps).rsqrt()
    if op.name in ("native_batch_norm", "_native_batch_norm_legit", "_batch_norm_with_update") and \
            s.input.dtype in (torch.float16, torch.bfloat16):
        # CUDA saves a 16-bit input's batch statistics in float32 (its accumulation type); CPU in the input's dtype
        return (ref[0], *[t.float() if t.dtype == s.input.dtype and t.dim() == 1 else t for t in ref[1:]])
    return ref


# Ops whose 16-bit kernels compute in float32 and round once, as CUDA's do (opmath), where CPU's compute in the
# 16-bit type: their 16-bit reference is CPU's float32 result rounded once.
OPMATH_16BIT = {"grid_sampler_2d", "grid_sampler_3d", "nn.functional.grid_sample", "nn.functional.conv_transpose2d",
                "nn.functional.conv_transpose3d"}


def widened(x):
    return x.float() if isinstance(x, torch.Tensor) and x.dtype in (torch.float16, torch.bfloat16) else x


def reference(op, s, gauge=True):
    run = call if gauge else (lambda f, *args, **kwargs: f(*args, **kwargs))
    if DTYPE in (torch.float16, torch.bfloat16) and op.name in OPMATH_16BIT:
        out = run(op, widened(s.input), *[widened(a) for a in s.args], **{k: widened(v) for k, v in s.kwargs.items()})
        return pytree.tree_map(lambda t: t.to(DTYPE) if isinstance(t, torch.Tensor) and t.dtype == torch.float32 else t,
                               out)
    return run(op, s.input, *s.args, **s.kwargs)


def aliasing(out, sample):
    """For each tensor output, whether it shares memory with a tensor input: an op that returns an alias where CPU
    returns a new tensor lets a later write to the input change the result."""
    def storage(t):
        return t.untyped_storage().data_ptr() if t.layout == torch.strided and t.untyped_storage().nbytes() else None
    inputs = {storage(t) for t in pytree.tree_leaves((sample.input, sample.args, sample.kwargs))
              if isinstance(t, torch.Tensor)} - {None}
    return [storage(t) in inputs for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def run_op(op, max_samples):
    samples, row = prepared_samples(op, max_samples, requires_grad=False, failed="skipped")
    if row:
        return row
    for s in samples:
        try:
            ref = cuda_reference(op, s, reference(op, s))
        except Exception:  # noqa: BLE001 - the CPU itself rejects this sample
            continue
        try:
            if op.name in HOST_ARGS_OPS:
                n, args, kwargs = s, list(s.args), dict(s.kwargs)
                n = type(s)(to_npu(s.input), args=s.args, kwargs=s.kwargs)
            else:
                n, args, kwargs = on_npu(s)
            got = call(op, n.input, *args, **kwargs)
            if isinstance(got, torch.Tensor) or isinstance(got, (list, tuple)):
                torch.npu.synchronize()
        except Exception as e:  # noqa: BLE001
            return error_row(e)
        try:
            compare(got, ref, shape_only=is_random_sample(op, s), on_npu=names_a_device(s))
            if any(g and not r for g, r in zip(aliasing(got, n), aliasing(ref, s))):
                raise AssertionError("an output aliases an input, where CPU's is a new tensor")
        except Exception as e:  # noqa: BLE001
            return "mismatch", str(e).splitlines()[0][:160]
    return passed_row()


def out_like(t, strided, device):
    """An out= tensor for the expected output t: of t's shape but strided (every other element of a buffer filled
    with a value no op produces, so an unwritten element shows), or empty (the op resizes it)."""
    if not strided or t.numel() < 2 or t.dtype in (torch.uint16, torch.uint32, torch.uint64,
                                                              torch.complex32):  # (no fill kernel)
        return torch.empty(0, dtype=t.dtype, device=device)
    fill = float("nan") if t.is_floating_point() or t.is_complex() else (True if t.dtype == torch.bool else 77)
    return torch.full((*t.shape, 2), fill, dtype=t.dtype, device=device)[..., 1]


def run_out(op, max_samples):
    """The samples' out= variants: into a strided out tensor of the right shape, and into an empty one, which the op
    resizes. The result must be written into the given tensor (returned as it) with the functional form's values
    (CPU's own strided out= writes are not the reference: its gelu leaves a strided out unwritten, its narrow_copy
    and avg_pool3d write it as if it were contiguous). A form CPU rejects is skipped."""
    if not op.supports_out:
        return "n/a", "no out= variant"
    samples, row = prepared_samples(op, max_samples, requires_grad=False, failed="skipped")
    if row:
        return row
    checked = 0
    packed = lambda outs: outs if isinstance(outs, torch.Tensor) else tuple(outs)  # noqa: E731
    for s in samples:
        try:
            shapes = reference(op, s, gauge=False)
        except Exception:  # noqa: BLE001 - the CPU itself rejects this sample
            continue
        if not all(isinstance(t, torch.Tensor) for t in pytree.tree_leaves(shapes)):
            continue
        n, args, kwargs = on_npu(s)
        ref = cuda_reference(op, s, packed(shapes))  # npu's out tensors take its dtypes (CUDA's saved statistics)
        for strided in (True, False):
            try:
                op(s.input, *s.args, **s.kwargs, out=packed(pytree.tree_map(lambda t: out_like(t, strided, "cpu"),
                                                                            shapes)))
            except Exception:  # noqa: BLE001 - CPU rejects this out= form of the sample
                continue
            outs = pytree.tree_map(lambda t: out_like(t, strided, "npu"), ref)
            try:
                got = op(n.input, *args, **kwargs, out=packed(outs))
                torch.npu.synchronize()
            except Exception as e:  # noqa: BLE001
                return error_row(e)
            try:
                given = pytree.tree_leaves(outs)
                returned = [t for t in pytree.tree_leaves(got) if isinstance(t, torch.Tensor)]
                if got is not None and (len(returned) != len(given) or
                                        any(a.data_ptr() != b.data_ptr() for a, b in zip(returned, given))):
                    raise AssertionError("the result is not the out= tensor")  # (ops returning None: as on CPU)
                compare(canonical(op, packed(outs), (n.input, *args), kwargs),
                        canonical(op, ref, (s.input, *s.args), s.kwargs), shape_only=is_random_sample(op, s))
            except Exception as e:  # noqa: BLE001
                return "mismatch", f"{'strided' if strided else 'resized'} out=: {str(e).splitlines()[0][:140]}"
            checked += 1
    if not checked:
        return "n/a", "no sample with tensor outputs"
    return passed_row()


def run_inplace(op, max_samples):
    """The samples' in-place variants (x.add_(y)), where CPU's takes the sample: the input must hold CPU's values
    afterwards and be returned."""
    if op.inplace_variant is None:
        return "n/a", "no in-place variant"
    samples, row = prepared_samples(op, max_samples, requires_grad=False, failed="skipped")
    if row:
        return row
    checked = 0
    for s in samples:
        if not isinstance(s.input, torch.Tensor):
            continue
        ref = s.input.clone()
        try:
            op.inplace_variant(ref, *s.args, **s.kwargs)
        except Exception:  # noqa: BLE001 - CPU rejects it (a result dtype the input cannot hold, a broadcast input)
            continue
        n, args, kwargs = on_npu(s)
        x = n.input.clone()
        try:
            got = op.inplace_variant(x, *args, **kwargs)
            torch.npu.synchronize()
        except Exception as e:  # noqa: BLE001
            return error_row(e)
        try:
            if got is not x:
                raise AssertionError("the in-place variant did not return its input")
            compare(x, ref, shape_only=is_random_sample(op, s))
        except Exception as e:  # noqa: BLE001
            return "mismatch", f"in place: {str(e).splitlines()[0][:140]}"
        checked += 1
    if not checked:
        return "n/a", "no sample CPU takes in place"
    return passed_row()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dtype", default="float32", choices=[str(d).split(".")[1] for d in TOLERANCE])
    parser.add_argument("--ops", default="", help="comma-separated OpInfo names (default: all)")
    parser.add_argument("--max-samples", type=int, default=4, help="samples per op (0: all of them)")
    parser.add_argument("--noncontiguous", action="store_true", help="run the samples with non-contiguous tensors")
    parser.add_argument("--out", action="store_true", help="run the out= variants (into strided and empty tensors)")
    parser.add_argument("--inplace", action="store_true", help="run the in-place variants (x.op_(...))")
    parser.add_argument("--summary", default="", help="write a Markdown summary to this file")
    parser.add_argument("--no-backward", action="store_true", help="forward only")
    parser.add_argument("--verbose", action="store_true", help="print each op name before running it")
    args = parser.parse_args(argv)
    global DTYPE, NONCONTIGUOUS
    DTYPE, NONCONTIGUOUS = getattr(torch, args.dtype), args.noncontiguous
    from torch.testing._internal.common_methods_invocations import op_db

    wanted = set(filter(None, args.ops.split(",")))
    results, backward = {}, {}
    t0 = time.time()
    warnings.simplefilter("ignore")
    for op in op_db:
        name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        if wanted and op.name not in wanted and name not in wanted:
            continue
        if DTYPE not in op.supported_dtypes("cpu"):
            continue
        if args.verbose:
            print(name, file=sys.stderr, flush=True)
        results[name] = (run_out if args.out else run_inplace if args.inplace else run_op)(op, args.max_samples)
        if not args.no_backward and not args.out and not args.inplace:
            backward[name] = run_backward(op, args.max_samples)
    counts = collections.Counter(status for status, _ in results.values())
    total = sum(v for k, v in counts.items() if k not in ("skipped", "n/a"))
    passed = counts["native"] + counts["fallback"]
    layout = (", non-contiguous" if args.noncontiguous else "") + (", out= variants" if args.out else "") + \
        (", in-place variants" if args.inplace else "")
    per_op = f"up to {args.max_samples}" if args.max_samples else "all"
    lines = [f"# OpInfo conformance ({args.dtype}{layout}, {per_op} samples per op)", "",
             f"torch {torch.__version__}; {len(results)} OpInfos with {args.dtype} samples; {time.time() - t0:.0f} s", "",
             "| status | ops |", "|---|---|"]
    for status in ("native", "fallback", "mismatch", "error", "skipped") + (("n/a",) if args.out or args.inplace else ()):
        lines.append(f"| {status} | {counts[status]} |")
    lines += ["", f"**pass rate (native + fallback) = {passed}/{total} = {100 * passed / max(total, 1):.1f}%**, "
              f"native = {counts['native']}/{total} = {100 * counts['native'] / max(total, 1):.1f}%", ""]
    if backward:
        bc = collections.Counter(status for status, _ in backward.values())
        btotal = sum(v for k, v in bc.items() if k != "n/a")
        bpassed = bc["native"] + bc["fallback"]
        lines += ["Backward (gradients of every differentiable input, same samples' requires_grad variants):", "",
                  "| status | ops |", "|---|---|"] + [f"| {k} | {bc[k]} |" for k in
                                                    ("native", "fallback", "mismatch", "error", "n/a")]
        lines += ["", f"**backward pass rate = {bpassed}/{btotal} = {100 * bpassed / max(btotal, 1):.1f}%**, "
                  f"native = {bc['native']}/{btotal} = {100 * bc['native'] / max(btotal, 1):.1f}%", ""]
    for title, table in (("", results), ("backward ", backward)):
        for status in ("mismatch", "error", "fallback"):
            lines += [f"## {title}{status}", "", "| op | detail | why |", "|---|---|---|"]
            for name, (s, detail) in sorted(table.items()):
                if s == status:
                    reason = {"fallback": fallback_reason, "error": error_reason}.get(
                        status, lambda _: MISMATCH_REASONS.get(name, ""))(detail)
                    lines.append(f"| {name} | {detail.replace('|', '/')} | {reason} |")
            lines.append("")
    text = "\n".join(lines)
    if args.summary:
        with open(args.summary, "w") as f:
            f.write(text + "\n")
    print("\n".join(lines[:lines.index("## mismatch")]))
    return results, backward


if __name__ == "__main__":
    main()
    sys.exit(0)
