"""A fast subset of the OpInfo conformance harness (tools/opinfo_conformance.py) for CI: these OpInfos
must pass on npu (same values and gradients as CPU) — natively, with no CPU fallback, forward and backward."""
import os
import sys

import pytest

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
