"""The OpInfo conformance harness (tools/opinfo_conformance.py) in CI: a named subset that must pass natively
(same values and gradients as CPU, no CPU fallback) at float32, 16-bit and complex64; and every float32 OpInfo
with all its samples, in three forms (forward and backward; out= into strided and empty tensors; in place), where
any row that does not pass must carry its stated reason (CPU's or CUDA's behaviour)."""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
import opinfo_conformance  # noqa: E402

NATIVE = ["add", "sub", "mul", "div", "true_divide", "rsub", "pow", "remainder", "fmod", "atan2", "maximum",
          "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not", "abs", "neg",
          "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "erf", "floor", "ceil", "round", "trunc",
          "sign", "clamp", "where", "lerp", "addcmul", "addcdiv", "nn.functional.relu", "nn.functional.gelu",
          "nn.functional.silu", "nn.functional.leaky_relu", "nn.functional.elu", "nn.functional.softplus",
          "nn.functional.hardsigmoid", "nn.functional.mish", "mm", "bmm", "addmm", "mv", "dot", "matmul",
          "nn.functional.linear", "nn.functional.conv2d", "nn.functional.conv_transpose2d", "nn.functional.conv1d",
          "nn.functional.interpolate"]


# comparisons and rounding have no gradient to check (OpInfo: no autograd, or zero gradients only)
NO_GRAD = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not", "floor", "ceil",
           "round", "trunc", "sign"}


@pytest.fixture(scope="module")
def results():
    return opinfo_conformance.main(["--ops", ",".join(NATIVE), "--max-samples", "3"])


@pytest.mark.parametrize("name", NATIVE)
def test_opinfo_native(results, name):
    forward, backward = results
    matched = {k: v for k, v in forward.items() if k == name or k.startswith(name + ".")}
    assert matched, f"{name} not found in op_db"
    bad = {k: v for k, v in matched.items() if v[0] != "native"}
    assert not bad, bad
    grads = {k: backward[k] for k in matched}
    bad = {k: v for k, v in grads.items() if v[0] not in ("native", "n/a")}
    assert not bad, bad
    if name not in NO_GRAD:  # gradients were compared for at least one variant
        assert any(v[0] == "native" for v in grads.values()), grads


# The 16-bit and complex runs (--dtype): a few OpInfos per family, which must pass natively at that dtype.
OTHER_DTYPES = {
    "float16": ["add", "mul", "exp", "sigmoid", "nn.functional.gelu", "mm", "nn.functional.conv2d", "softmax",
                "nn.functional.layer_norm", "sum", "nn.functional.embedding_bag", "nn.functional.grid_sample"],
    "bfloat16": ["add", "div", "tanh", "nn.functional.silu", "bmm", "nn.functional.linear", "log_softmax",
                 "mean", "nn.functional.embedding_bag", "nn.functional.interpolate.bilinear"],
    "complex64": ["fft.fft", "fft.ifft", "fft.fft2", "view_as_real", "conj_physical", "mm", "bmm", "addmm", "vdot",
                  "matmul", "exp", "log1p", "tanh", "sigmoid", "abs", "sgn", "pow", "sum", "mean", "prod", "cumsum",
                  "var", "linalg.vector_norm", "linalg.solve", "addcmul", "lerp", "where", "logaddexp"],
}


@pytest.mark.parametrize("dtype", sorted(OTHER_DTYPES))
def test_opinfo_native_other_dtypes(dtype):
    names = OTHER_DTYPES[dtype]
    try:
        forward, backward = opinfo_conformance.main(["--dtype", dtype, "--ops", ",".join(names), "--max-samples", "2"])
    finally:
        opinfo_conformance.DTYPE = opinfo_conformance.torch.float32
    for name in names:
        matched = {k: v for k, v in forward.items() if k == name or k.startswith(name + ".")}
        assert matched, f"{name} not found in op_db at {dtype}"
        bad = {k: v for k, v in matched.items() if v[0] != "native"}
        assert not bad, (dtype, bad)
        bad = {k: backward[k] for k in matched if backward[k][0] not in ("native", "n/a")}
        assert not bad, (dtype, bad)


def unexplained(table):
    """Rows that did not pass and have no stated reason: a mismatch without a MISMATCH_REASONS entry, an error without
    an ERROR_REASONS match, any CPU fallback."""
    c = opinfo_conformance
    return {name: row for name, row in table.items()
            if row[0] == "fallback" or (row[0] == "mismatch" and name not in c.MISMATCH_REASONS)
            or (row[0] == "error" and not c.error_reason(row[1]))}


# (the non-contiguous form, `--noncontiguous --max-samples 0`, is a documented full run outside CI: ~20 s more)
@pytest.mark.parametrize("form, native_at_least", [(["--max-samples", "0"], 660),
                                                   (["--out", "--max-samples", "0"], 330),
                                                   (["--inplace", "--max-samples", "0"], 150)],
                         ids=["forward-backward", "out", "inplace"])
def test_every_float32_opinfo_and_sample(form, native_at_least):
    # Found this way (all samples, where the runs above take the first few): group_norm's backward leaving an empty
    # batch's parameter gradients unwritten, integer logspace's wrapped step, bool add ignoring alpha, hash_tensor
    # aliasing its input; clamp/elu/pooling/index/take/... out= taking the CPU fallback, svd's complex out= hitting
    # an INTERNAL ASSERT.
    forward, backward = opinfo_conformance.main(form)
    assert len(forward) > 600
    assert not unexplained(forward), unexplained(forward)
    assert not unexplained(backward), unexplained(backward)
    native = sum(row[0] == "native" for row in forward.values())
    assert native >= native_at_least, native  # (the rest: ops without that form, or with a stated reason)


def test_tie_canonical_form_tells_a_reorder_from_a_wrong_index():
    # sort / topk / kthvalue results are compared with their indices replaced by the values they point at: equal
    # values in another order must pass, a repeated or wrong index must not (the reason the 16-bit and integer
    # sort rows used to be listed as mismatches with a stated reason rather than checked).
    c = opinfo_conformance
    x = torch.tensor([[3, 1, 3, 2, 1]])
    ref = c.ties_resolved("sort", torch.sort(x), (x,), {})
    reordered = (torch.tensor([[1, 1, 2, 3, 3]]), torch.tensor([[4, 1, 3, 2, 0]]))
    c.compare(c.ties_resolved("sort", reordered, (x,), {}), ref, shape_only=False, on_npu=False)
    for wrong in ([[4, 1, 0, 3, 2]], [[4, 1, 3, 0, 0]]):  # a 3 before the 2; index 0 twice (the 3 at 2 lost)
        got = c.ties_resolved("sort", (reordered[0], torch.tensor(wrong)), (x,), {})
        with pytest.raises(AssertionError):
            c.compare(got, ref, shape_only=False, on_npu=False)
    top = c.ties_resolved("topk", torch.topk(x, 2), (x, 2), {})
    c.compare(c.ties_resolved("topk", (torch.tensor([[3, 3]]), torch.tensor([[2, 0]])), (x, 2), {}), top,
              shape_only=False, on_npu=False)
    with pytest.raises(AssertionError):  # the same 3 twice
        c.compare(c.ties_resolved("topk", (torch.tensor([[3, 3]]), torch.tensor([[0, 0]])), (x, 2), {}), top,
                  shape_only=False, on_npu=False)
    stable = c.ties_resolved("sort", torch.sort(x, stable=True), (x,), {"stable": True})
    with pytest.raises(AssertionError):  # stable=True fixes the order of equal values: indices compare as they are
        c.compare(c.ties_resolved("sort", reordered, (x,), {"stable": True}), stable, shape_only=False, on_npu=False)
