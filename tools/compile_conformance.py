"""torch.compile conformance on npu: PyTorch's OpInfo database (op_db, shipped in the wheel; the data behind its
own device-generic Inductor test, test_torchinductor_opinfo.py) compiled by Inductor for npu. For each OpInfo with
float32 samples, the first samples are wrapped in a function of their tensors, compiled with torch.compile
(default backend, fullgraph=False) on npu, and compared with CPU eager; a sample that differs is compared again
with the same function compiled for CPU (Inductor's own reordering of float arithmetic is not held against npu).
Each op is recorded as:
  pass      - every sample matched (CPU eager, or CPU compiled)
  mismatch  - a sample matched neither
  error     - compiling or running on npu raised, and the CPU compile did not
  cpu-error - the CPU compile raises too (an Inductor limitation, not npu's)
  eager-error - eager npu raises too (the op's npu support, e.g. sparse layouts, not the compiler's)
  eager-differs - a mismatch that eager npu shows too (the op's npu result, e.g. CUDA's semantics where CPU
              differs; the eager conformance, tools/opinfo_conformance.py, judges those)
  no-graph  - dynamo captured no graph (nothing was compiled)
Random ops are compared by shape and dtype. Usage:
  python tools/compile_conformance.py [--ops name,name] [--max-samples N] [--summary FILE] [--update FILE]
(--update FILE reruns only the ops FILE lists as not passing and rewrites it.)
The full run's summary is committed as docs/compile_summary.md; CI runs a subset (tests/python/test_compile_opinfo.py)."""
import argparse
import collections
import os
import re
import sys
import time
import warnings

import torch
import torch._dynamo
import torch.utils._pytree as pytree
from torch._dynamo.utils import counters

import torch_npu_sim  # noqa: F401

sys.path.insert(0, os.path.dirname(__file__))
from opinfo_conformance import GAUGE_OPS, is_random_sample  # noqa: E402

TOL = 1e-4  # float32 rtol and atol, as the op sweep


def as_function(op, sample):
    """(fn, tensors): fn(*tensors) calls op on the sample, with every tensor of it as a graph input."""
    leaves, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    where = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]

    def fn(*tensors):
        filled = list(leaves)
        for i, t in zip(where, tensors):
            filled[i] = t
        inp, args, kwargs = pytree.tree_unflatten(filled, spec)
        return op(inp, *args, **kwargs)

    return fn, [leaves[i] for i in where]


def run_compiled(fn, tensors, device):
    """(result, graphs captured); raises what compiling or running raised."""
    torch._dynamo.reset()
    counters.clear()
    moved = [t.detach().to(device).requires_grad_(False) for t in tensors]
    out = torch.compile(fn)(*moved)
    if device == "npu":
        torch.npu.synchronize()
    return out, counters["stats"]["unique_graphs"]


def same(got, ref, shape_only):
    gl, rl = pytree.tree_leaves(got), pytree.tree_leaves(ref)
    if len(gl) != len(rl):
        return f"{len(gl)} outputs, expected {len(rl)}"
    for i, (g, r) in enumerate(zip(gl, rl)):
        if isinstance(r, torch.Tensor):
            if not isinstance(g, torch.Tensor) or g.shape != r.shape or g.dtype != r.dtype:
                return f"output {i}: {type(g).__name__} {getattr(g, 'shape', '')} {getattr(g, 'dtype', '')}, " \
                       f"expected {tuple(r.shape)} {r.dtype}"
            if shape_only:
                continue
            g, r = g.detach().cpu(), r.detach().cpu()
            if g.is_floating_point() or g.is_complex():
                if not torch.allclose(g, r, rtol=TOL, atol=TOL, equal_nan=True):
                    diff = (g - r).abs().nan_to_num(0).max().item() if g.numel() else 0
                    return f"output {i}: max abs difference {diff:.3g}"
            elif not torch.equal(g, r):
                return f"output {i}: values differ"
        elif isinstance(r, float):
            if not (abs(g - r) <= TOL * (1 + abs(r)) or (r != r and g != g)):
                return f"output {i}: {g} != {r}"
        elif g != r:
            return f"output {i}: {g!r} != {r!r}"
    return None


def describe(e):
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0][:160] if lines else ''}"


def check_op(op, max_samples):
    """(status, detail) for one OpInfo."""
    try:
        samples = list(op.sample_inputs("cpu", torch.float32, requires_grad=False))[:max_samples]
    except Exception as e:  # noqa: BLE001
        return "no-samples", describe(e)
    graphs = 0
    checked = 0
    for s in samples:
        canon = GAUGE_OPS.get(op.name, lambda x: x)
        fn, tensors = as_function(op, s)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                ref = canon(fn(*tensors))
            except Exception:  # noqa: BLE001 - a sample CPU refuses is not a case
                continue
            checked += 1
            try:
                got, g = run_compiled(fn, tensors, "npu")
                graphs += g
                got = canon(got)
            except Exception as e:  # noqa: BLE001
                if torch.npu._device_error() is not None:
                    torch.npu.restart_device()
                try:
                    run_compiled(fn, tensors, "cpu")
                except Exception:  # noqa: BLE001
                    return "cpu-error", describe(e)
                try:
                    fn(*[t.to("npu") for t in tensors])
                    torch.npu.synchronize()
                except Exception:  # noqa: BLE001
                    if torch.npu._device_error() is not None:
                        torch.npu.restart_device()
                    return "eager-error", describe(e)
                return "error", describe(e)
            why = same(got, ref, is_random_sample(op, s))
            if why is not None:
                try:
                    cpu_compiled = canon(run_compiled(fn, tensors, "cpu")[0])
                except Exception:  # noqa: BLE001
                    cpu_compiled = None
                if cpu_compiled is None or same(got, cpu_compiled, is_random_sample(op, s)) is not None:
                    try:  # eager npu gives the same answer: the op's npu result, not the compiler's
                        eager = canon(fn(*[t.to("npu") for t in tensors]))
                        if same(got, eager, is_random_sample(op, s)) is None:
                            return "eager-differs", why
                    except Exception:  # noqa: BLE001
                        pass
                    return "mismatch", why
    if checked == 0:
        return "no-samples", "CPU refuses every sample"
    if graphs == 0:
        return "no-graph", ""
    return "pass", ""


def full_name(op):
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def all_ops(names=None):
    from torch.testing._internal.common_methods_invocations import op_db
    ops = [op for op in op_db if torch.float32 in op.supported_dtypes("cpu")]
    if names:
        ops = [op for op in ops if full_name(op) in names or op.name in names]
    return ops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", default="")
    ap.add_argument("--max-samples", type=int, default=1)
    ap.add_argument("--summary", default="")
    ap.add_argument("--update", default="")
    a = ap.parse_args()
    names = set(filter(None, a.ops.split(",")))
    results = {}
    if a.update:  # the previous summary's results; only its non-passing ops run again
        with open(a.update) as f:
            text = f.read()
        total_before = int(re.search(r"^(\d+) OpInfos:", text, re.M).group(1))
        for name, status, detail in re.findall(r"^\| `([^`]+)` \| ([\w-]+) \| (.*) \|$", text, re.M):
            results[name] = (status, detail)
        names = set(results)
        results.update({f"(passed {i})": ("pass", "") for i in range(total_before - len(results))})
        a.summary = a.update
    t0 = time.time()
    for op in all_ops(names):
        status, detail = check_op(op, a.max_samples)
        results[full_name(op)] = (status, detail)
        print(f"{full_name(op):50s} {status:10s} {detail}", flush=True)
    counts = collections.Counter(s for s, _ in results.values())
    total = sum(counts.values())
    line = ", ".join(f"{k} {v}" for k, v in counts.most_common())
    print(f"\n{total} OpInfos in {time.time() - t0:.0f} s: {line}")
    if a.summary:
        with open(a.summary, "w") as f:
            f.write("# torch.compile on npu: PyTorch's OpInfo database compiled by Inductor\n\n")
            f.write(f"Generated by `python tools/compile_conformance.py --max-samples {a.max_samples} --summary "
                    f"{a.summary}` ({time.strftime('%Y-%m-%d')}): float32, the first {a.max_samples} sample(s) of "
                    "each OpInfo compiled with `torch.compile` on npu against CPU eager (and, where they differ, "
                    "against the same function compiled for CPU).\n\n")
            f.write(f"{total} OpInfos: {line}.\n\n")
            f.write("Reading the rows below: `cpu-error` rows whose detail names `no_dispatch()` are OpInfo's "
                    "`wrapper_set_seed` (it freezes the RNG state under `no_dispatch`, which dynamo cannot "
                    "trace); the random ops themselves compile on npu (`tests/python/test_compile.py`). "
                    "`eager-error` rows fail without compiling too: sparse layouts, and samples whose index "
                    "arguments must stay on the host (this tool moves every tensor). `no-graph`: the op breaks "
                    "the graph (data-dependent output shapes, Python scalars) and runs eagerly.\n\n")
            f.write("| op | status | detail |\n|---|---|---|\n")
            for name, (status, detail) in sorted(results.items()):
                if status != "pass":
                    f.write(f"| `{name}` | {status} | {detail.replace('|', '/')} |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
