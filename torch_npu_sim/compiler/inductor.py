"""Inductor's backend for npu: Inductor's C++ CPU scheduling generates the kernels, a Python wrapper launches
them on the current npu stream (kernels.py) and calls the native npu ops for everything else."""
from torch._inductor.codegen.common import DeviceOpOverrides, register_device_op_overrides
from torch._inductor.codegen.cpp import CppScheduling
from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
from torch._inductor.codegen.wrapper import PythonWrapperCodegen, SubgraphPythonWrapperCodegen
from torch._inductor.codegen.wrapper_fxir import WrapperFxCodegen
from torch._inductor.utils import sympy_product
from torch._inductor.virtualized import V

from . import inductor_patches, native_ops
from .kernels import MARKER

_PYBINDING = "async_compile.cpp_pybinding("


class NpuDeviceOpOverrides(DeviceOpOverrides):
    def import_get_raw_stream_as(self, name):
        return f"from torch_npu_sim.compiler.device_interface import get_raw_stream as {name}"

    def set_device(self, device_idx):
        return f"torch.npu.set_device({device_idx})"

    def synchronize(self):
        return "torch.npu.synchronize()"

    def device_guard(self, device_idx):
        return f"torch.npu.device({device_idx})"

    def cpp_kernel_type(self):
        return "void*"


# Loop-body ops that move or address data rather than compute on the Vector unit
_NOT_FLOPS = frozenset({"load", "store", "store_reduction", "output", "constant", "index_expr", "get_index",
                        "indirect_indexing", "masked", "to_dtype", "to_dtype_bitcast", "check_bounds", "load_seed"})


def vector_flops(nodes) -> int:
    """Element operations of the fused nodes (each op of a node's loop body once per iteration), or 0 when the
    iteration space is symbolic (dynamic shapes): the launch record then carries the kernel's bytes only."""
    total = 0
    for node in nodes:
        body = getattr(node, "_body", None)
        if body is None:
            continue
        numel = sympy_product([*node._sizes[0], *node._sizes[1]])
        if not numel.is_number:
            return 0
        total += int(numel) * sum(c for op, c in body.op_counts.items() if op not in _NOT_FLOPS)
    return total


class NpuCppScheduling(CppScheduling):
    """Inductor's C++ scheduling; its kernels carry a marker line (with their FLOPs) so that the wrapper
    defines them as npu kernels."""

    def define_kernel(self, src_code, nodes, kernel_args=None):
        return super().define_kernel(f"{MARKER} vector_flops={vector_flops(nodes)}\n{src_code}", nodes, kernel_args)


class NpuWrapperCodegen(PythonWrapperCodegen):
    @staticmethod
    def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
        if is_subgraph:
            return SubgraphPythonWrapperCodegen(subgraph_name, parent_wrapper, partition_signatures)
        return NpuWrapperCodegen()

    def write_header(self):
        super().write_header()
        self.header.splice("from torch_npu_sim.compiler.kernels import npu_cpp_kernel")

    def define_kernel(self, kernel_name, kernel_body, metadata=None, gpu=True, cpp_definition=None):
        if kernel_body.startswith(_PYBINDING) and MARKER in kernel_body:
            kernel_body = f"npu_cpp_kernel({kernel_name!r}, {kernel_body[len(_PYBINDING):]}"
        super().define_kernel(kernel_name, kernel_body, metadata, gpu, cpp_definition)

    def make_allocation(self, name, device, dtype, shape, stride, allocation_shape=None, is_pinned=False):
        line = super().make_allocation(name, device, dtype, shape, stride, allocation_shape, is_pinned)
        if device.type == "npu" and device.index is not None:  # the device itself, not the current one
            line = line.replace("device='npu'", f"device='{device}'")
        return line

    def _generate_kernel_call_helper(self, kernel_name, call_args, *, device=None, **kwargs):
        device = device or V.graph.get_current_device_or_throw()
        if device.type == "npu" and not kwargs.get("triton", True):
            # a plain call: the kernel object launches itself on the current npu stream
            self.writeline(self.wrap_kernel_call(kernel_name, call_args))
            return
        super()._generate_kernel_call_helper(kernel_name, call_args, device=device, **kwargs)


class NpuCppWrapperCodegen(CppWrapperCpu):
    """Inductor's C++ wrapper (``cpp_wrapper=True``, AOTInductor) is not implemented for npu."""

    @staticmethod
    def create(*args, **kwargs):
        raise NotImplementedError("torch.compile on npu: cpp_wrapper (and AOTInductor) is not supported; "
                                  "the npu backend generates a Python wrapper (set cpp_wrapper=False)")


# The classes compiler/__init__.py's stand-ins stand for (Inductor's names for their roles)
INDUCTOR_HOOKS = {"Scheduling": NpuCppScheduling, "PythonWrapperCodegen": NpuWrapperCodegen,
                  "CppWrapperCodegen": NpuCppWrapperCodegen, "WrapperFxCodegen": WrapperFxCodegen}
register_device_op_overrides("npu", NpuDeviceOpOverrides())
inductor_patches.apply()
native_ops.register_fallback_lowerings()
