"""The machinery of test_op_sweep.py: which OpInfos reach a native npu op, the input variants (0-dim,
empty, 1-element, transposed, step-sliced, expanded, channels-last), moving a sample to npu with its exact
layout, running one case on CPU and on npu, and comparing the two outcomes. The policy (skips, CUDA
semantics, known failures) lives in test_op_sweep.py."""
import math
import warnings

import torch
import torch.utils._pytree as pytree
from torch.testing._internal.opinfo.core import BinaryUfuncInfo, SampleInput, UnaryUfuncInfo

# ---- which native ops an OpInfo reaches ---------------------------------------------------------------

# Registrations every op touches (allocation, views, copies): reaching only these is not "a native op".
INFRASTRUCTURE = {"empty", "empty_strided", "as_strided", "_copy_from", "_copy_from_and_resize", "copy",
                  "resize", "set", "_local_scalar_dense", "record_stream", "_reshape_alias", "view",
                  "_has_compatible_shallow_copy_type", "_to_copy", "_fused_sdp_choice", "fill", "zero"}


def base_name(qualname):
    """'aten::add_.Tensor' -> 'add' (in-place and out= overloads share the op's name)."""
    name = qualname.split("::", 1)[-1].split(".", 1)[0]
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def native_registrations():
    """Every aten op with a PrivateUse1 kernel of our own (the boxed CPU fallback is not one)."""
    regs = torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1")
    return sorted(r for r in regs if r.startswith("aten::"))


def native_base_names():
    return {base_name(r) for r in native_registrations()} - INFRASTRUCTURE


def ops_reached(fn):
    """Base names of every aten op dispatched while fn() runs, nested ones included (the profiler sees
    the calls inside composite kernels too)."""
    with torch.autograd.profiler.profile(use_cpu=True, record_shapes=False) as prof:
        fn()
    return {base_name(e.name) for e in prof.function_events if e.name.startswith("aten::")}


# ---- input variants -------------------------------------------------------------------------------------

def is_elementwise(op):
    return isinstance(op, (UnaryUfuncInfo, BinaryUfuncInfo))


def _map_nested(leaf, x):
    """leaf(v) for every non-container v inside the lists, tuples and dicts of x, structure kept."""
    if isinstance(x, list):
        return [_map_nested(leaf, v) for v in x]
    if isinstance(x, tuple):
        return tuple(_map_nested(leaf, v) for v in x)
    if isinstance(x, dict):
        return {k: _map_nested(leaf, v) for k, v in x.items()}
    return leaf(x)


def _map_tensors(sample, fn, which):
    """A new SampleInput with fn applied to the tensors selected by which(t) (others unchanged); None if
    fn changed nothing or declined (returned None) for a selected tensor."""
    changed = [False]
    failed = [False]

    def leaf(x):
        if not isinstance(x, torch.Tensor) or not which(x):
            return x
        y = fn(x)
        if y is None:
            failed[0] = True
            return x
        changed[0] = True
        return y

    def m(x):
        return _map_nested(leaf, x)

    with torch.no_grad():
        new = SampleInput(m(sample.input), args=m(tuple(sample.args)), kwargs=m(dict(sample.kwargs)),
                          name=sample.name)
    return None if failed[0] or not changed[0] else new


def _input_tensors(sample):
    return [t for t in pytree.tree_leaves(sample.input) if isinstance(t, torch.Tensor)]


def _scope(op, sample, rule):
    """Which tensors a shape-changing variant applies to: all of them, the input(s) only, or the input and
    every tensor of the input's shape (elementwise ops: keeps operands broadcastable)."""
    ins = _input_tensors(sample)
    ids = {id(t) for t in ins}
    shapes = {tuple(t.shape) for t in ins}
    if rule == "all":
        return lambda t: True
    if rule == "input_or_same_shape":
        return lambda t: id(t) in ids or tuple(t.shape) in shapes
    return lambda t: id(t) in ids


def v_zero_dim(op, s):
    rule = "all" if is_elementwise(op) else "input"
    if all(t.dim() == 0 for t in _input_tensors(s)):
        return None
    return _map_tensors(s, lambda t: t.reshape(-1)[:1].reshape(()).clone() if t.numel() > 0 else None,
                        _scope(op, s, rule))


def v_empty(op, s):
    rule = "input_or_same_shape" if is_elementwise(op) else "input"
    return _map_tensors(s, lambda t: t.narrow(0, 0, 0).clone() if t.dim() > 0 else t.reshape(-1)[:0].clone(),
                        _scope(op, s, rule))


def v_one_elem(op, s):
    def f(t):
        if t.dim() == 0 or t.numel() == 0 or t.numel() == 1:
            return None if t.numel() == 0 else t
        return t[(slice(0, 1),) * t.dim()].clone()
    new = _map_tensors(s, f, _scope(op, s, "all"))
    if new is None or all(t.numel() == 1 and t.dim() > 0 for t in _input_tensors(s)):
        return None
    return new


def v_transposed(op, s):
    return _map_tensors(s, lambda t: t.transpose(-1, -2).contiguous().transpose(-1, -2),
                        lambda t: t.dim() >= 2 and t.size(-1) > 1 and t.size(-2) > 1)


def v_step_sliced(op, s):
    def f(t):
        buf = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype)
        buf[..., ::2] = t
        return buf[..., ::2]
    return _map_tensors(s, f, lambda t: t.dim() >= 1 and t.size(-1) > 1)


def v_expanded(op, s):
    return _map_tensors(s, lambda t: t[:1].expand(t.shape), lambda t: t.dim() >= 1 and t.size(0) > 1)


def v_channels_last(op, s):
    return _map_tensors(s, lambda t: t.contiguous(memory_format=torch.channels_last),
                        lambda t: t.dim() == 4 and not t.is_contiguous(memory_format=torch.channels_last))


VARIANTS = {"as_is": lambda op, s: s, "zero_dim": v_zero_dim, "empty": v_empty, "one_elem": v_one_elem,
            "transposed": v_transposed, "step_sliced": v_step_sliced, "expanded": v_expanded,
            "channels_last": v_channels_last}

# ---- moving a sample to npu ------------------------------------------------------------------------------


def to_npu_same_layout(t):
    """t on npu with the same sizes, strides and storage offset (stride-0 and sliced layouts included):
    Tensor.to would make expanded and overlapping tensors contiguous."""
    if t.is_conj():  # a lazy conjugate (or negative) view stays one
        return to_npu_same_layout(t.conj()).conj()
    if t.is_neg():
        return to_npu_same_layout(t._neg_view())._neg_view()
    if t.numel() == 0:
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="npu")
    storage = t.untyped_storage()
    flat = torch.empty(0, dtype=t.dtype).set_(storage, 0, (storage.nbytes() // t.element_size(),), (1,))
    out = flat.to("npu").as_strided(t.shape, t.stride(), t.storage_offset())
    return out


def sample_to_npu(sample, host_args=False):
    def leaf(x):
        if isinstance(x, torch.Tensor):
            return to_npu_same_layout(x)
        if isinstance(x, torch.device) and x.type == "cpu":
            return torch.device("npu")
        if isinstance(x, str) and x == "cpu":
            return "npu"
        return x

    def m(x):
        return _map_nested(leaf, x)
    if host_args:  # only the input moves (the op wants its other tensor arguments on the host, as on CUDA)
        return SampleInput(m(sample.input), args=sample.args, kwargs=sample.kwargs)
    return SampleInput(m(sample.input), args=m(tuple(sample.args)), kwargs=m(dict(sample.kwargs)))


# ---- running and comparing -----------------------------------------------------------------------------------

class Outcome:
    """What one side did: a result, or an exception; device_error marks an asynchronous kernel error."""

    def __init__(self, result=None, error=None, device_error=False):
        self.result, self.error, self.device_error = result, error, device_error

    def describe(self):
        if self.error is None:
            return "ok"
        msg = str(self.error).strip().splitlines()
        return f"{type(self.error).__name__}: {msg[0][:200] if msg else ''}"


def run_cpu(op, s):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return Outcome(op(s.input, *s.args, **s.kwargs))
    except Exception as e:  # noqa: BLE001 - the outcome is compared, not judged here
        return Outcome(error=e)


def run_npu(op, s):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = op(s.input, *s.args, **s.kwargs)
            torch.npu.synchronize()
            return Outcome(out)
    except Exception as e:  # noqa: BLE001
        dev_err = torch.npu._device_error() is not None
        if dev_err:
            torch.npu.restart_device()
        return Outcome(error=e, device_error=dev_err)


TOLERANCES = {torch.float64: (1e-7, 1e-7), torch.float32: (1e-4, 1e-4), torch.float16: (2e-3, 2e-3),
              torch.bfloat16: (1.6e-2, 1e-2), torch.complex64: (1e-4, 1e-4), torch.complex128: (1e-7, 1e-7),
              torch.complex32: (2e-3, 2e-3)}


REDUCED = (torch.float16, torch.bfloat16)


def _close_normwise(g, r, ulps=4):
    """float16/bfloat16: intermediates rounded in another order differ by a few units in the last place of the
    largest magnitude involved, which cancellation can leave in a small element. Accepted: every difference within
    `ulps` units of the output's largest finite magnitude, NaN and infinities in the same places."""
    eps = torch.finfo(r.dtype).eps
    g, r = g.double(), r.double()
    if not torch.equal(torch.isnan(g), torch.isnan(r)) or not torch.equal(torch.isinf(g), torch.isinf(r)):
        return False
    inf = torch.isinf(r)
    if not torch.equal(g[inf], r[inf]):
        return False
    fin = torch.isfinite(r)
    if not fin.any():
        return True
    scale = r[fin].abs().max().item()
    return bool(((g[fin] - r[fin]).abs() <= ulps * eps * max(scale, 1e-30)).all())


def compare_values(got, ref, check_strides, tol_scale=1.0, skip_index_outputs=False):
    """Raises AssertionError naming the first difference between npu result `got` and CPU result `ref`."""
    gl, rl = pytree.tree_leaves(got), pytree.tree_leaves(ref)
    if len(gl) != len(rl):
        raise AssertionError(f"output structure: {len(gl)} leaves on npu, {len(rl)} on CPU")
    for i, (g, r) in enumerate(zip(gl, rl)):
        where = f"output {i}: " if len(rl) > 1 else ""
        if isinstance(r, torch.Tensor):
            if not isinstance(g, torch.Tensor):
                raise AssertionError(f"{where}expected a tensor, got {type(g).__name__}")
            if r.layout != torch.strided or g.layout != torch.strided:
                if g.layout != r.layout:
                    raise AssertionError(f"{where}layout {g.layout} != CPU {r.layout}")
                g, r = g.to_dense(), r.to_dense()
            if r.device.type == "cpu" and g.device.type != "npu" and r.numel() > 0:
                raise AssertionError(f"{where}output on {g.device}, expected npu")
            if g.shape != r.shape:
                raise AssertionError(f"{where}shape {tuple(g.shape)} != CPU {tuple(r.shape)}")
            if g.dtype != r.dtype:
                raise AssertionError(f"{where}dtype {g.dtype} != CPU {r.dtype}")
            if check_strides and r.numel() > 1:
                same, _ = torch._prims_common.check_significant_strides(g, r, only_cuda=False)
                if not same:
                    raise AssertionError(f"{where}strides {g.stride()} != CPU {r.stride()} (shape {tuple(r.shape)})")
            if skip_index_outputs and r.dtype == torch.int64:
                continue
            gc = g.detach().cpu()
            if r.dtype in TOLERANCES:
                rtol, atol = TOLERANCES[r.dtype]
                try:
                    torch.testing.assert_close(gc, r.detach(), rtol=rtol * tol_scale, atol=atol * tol_scale,
                                               equal_nan=True, check_stride=False)
                except AssertionError:
                    if r.dtype not in REDUCED or not _close_normwise(gc, r.detach()):
                        raise
            elif not torch.equal(gc, r.detach()):
                bad = (gc != r.detach()).nonzero()[:3].tolist()
                raise AssertionError(f"{where}values differ at {bad}: npu {gc.flatten()[:8].tolist()} vs CPU "
                                     f"{r.detach().flatten()[:8].tolist()}")
        elif isinstance(r, float) and isinstance(g, (int, float)):
            if not (math.isclose(g, r, rel_tol=1e-5, abs_tol=1e-6) or (math.isnan(r) and math.isnan(g))):
                raise AssertionError(f"{where}{g} != CPU {r}")
        elif g != r:
            raise AssertionError(f"{where}{g!r} != CPU {r!r}")
