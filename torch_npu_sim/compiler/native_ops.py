"""The ops npu graphs keep as calls of the device's own kernels where Inductor would decompose them.

Inductor decomposes gelu, softmax, log_softmax, layer_norm and rms_norm (and their backward ops) and embedding's
backward into loops it generates. Its C++ code for them runs 1.5-3.5x slower on this device than the native
kernels, which use the vectorised functions of kernels/src/fast_math.h where Inductor calls Sleef's, and split
rows over the AI cores (docs/benchmarks.md, session 13). For these ops an npu graph calls the op itself, which
dispatches to the npu kernel, with Inductor's own mechanism for devices whose kernels beat the decomposition
(xpu's embedding_dense_backward, mtia's native_layer_norm): the decomposition answers NotImplemented for npu
tensors, and a fallback lowering emits the call. Graphs on other devices are unchanged.
"""
import re

import torch

aten = torch.ops.aten

# op -> the npu kernel that serves it
NATIVE_OPS = {
    aten.gelu.default: "gelu / gelu_tanh",
    aten.gelu_backward.default: "gelu_backward / gelu_tanh_backward",
    aten._softmax.default: "softmax",
    aten._softmax_backward_data.default: "softmax_backward",
    aten._log_softmax.default: "log_softmax",
    aten._log_softmax_backward_data.default: "log_softmax_backward",
    aten.native_layer_norm.default: "layer_norm",
    aten.native_layer_norm_backward.default: "layer_norm_backward",
    aten._fused_rms_norm.default: "rms_norm (F.rms_norm, nn.RMSNorm)",
    aten._fused_rms_norm_backward.default: "rms_norm_backward",
    aten.embedding_dense_backward.default: "embedding_dense_backward (the decomposition is a serial index_put)",
}


def _on_npu(args) -> bool:
    """Whether the op's first tensor argument is an npu tensor (a fake one while AOTAutograd traces)."""
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device.type == "npu"
    return False


def _int_list_positions(op) -> list:
    """Positions of the op's `int[]` arguments (not `SymInt[]`): a call cannot carry a symbolic size there."""
    return [i for i, a in enumerate(op._schema.arguments)
            if re.search(rf"\bint\[\d*\] {a.name}\b", str(op._schema))]


def _unless_npu(op, decomposition):
    int_lists = _int_list_positions(op)

    def decompose(*args, **kwargs):
        # With dynamic shapes a size in an int[] argument is symbolic, and aten's rms_norm hands _fused_rms_norm
        # its normalized_shape through asIntArrayRefUnchecked: a symbolic size arrives as a garbage (negative)
        # int. Such a call cannot be emitted; the decomposition reads only the list's length, so it is used.
        symbolic = any(not isinstance(v, int) or v < 0 for i in int_lists if i < len(args) for v in args[i])
        if _on_npu(args) and not symbolic:
            return NotImplemented  # the tracer keeps the op
        return decomposition(*args, **kwargs)
    decompose.npu_native = True
    return decompose


def keep_native_in_decompositions() -> None:
    """Makes Inductor's decomposition tables leave NATIVE_OPS whole on npu. Runs at registration: AOTAutograd
    decomposes before any npu code generator is loaded."""
    from torch._inductor import decomposition

    # select_decomp_table() answers one of these two (fast_random_decomps is a cached copy of the first)
    for table in (decomposition.decompositions, decomposition.fast_random_decomps()):
        for op in NATIVE_OPS:
            fn = table.get(op)
            if fn is not None and not getattr(fn, "npu_native", False):
                table[op] = _unless_npu(op, fn)


def register_fallback_lowerings() -> None:
    """Lowers the NATIVE_OPS that reach Inductor's lowering (npu graphs only: elsewhere they were decomposed) to
    a call of the op."""
    from torch._inductor import lowering

    for op in NATIVE_OPS:
        if op not in lowering.lowerings:
            lowering.make_fallback(op, warn=False, override_decomp=True)
