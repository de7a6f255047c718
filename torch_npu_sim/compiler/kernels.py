"""Kernels the npu Inductor backend generates: compiled and loaded once, launched on the current npu stream.

A generated kernel is Inductor's C++ CPU kernel (the simulated device's memory is host-addressable). Its
source gets a trampoline, ``npu_entry(const int64_t* slots)``, that unpacks the arguments from 8-byte
slots, so the runtime can call any kernel signature from an AI-core thread without the GIL. Calling the
returned object queues the kernel on the current stream, asynchronous and in order with eager ops; its
launch record carries the bytes of the tensors it reads and writes and the element operations Inductor's
loop bodies do (inductor.vector_flops).
"""
import ctypes
import re

from torch._inductor.codecache import CppCodeCache

from .. import _C

MARKER = "// torch_npu_sim: npu kernel"


class NpuKernelCodeCache(CppCodeCache):
    """Inductor's C++ code cache (same on-disk cache and compiler flags as its CPU kernels), keyed apart."""
    cache: dict = {}
    cpp_compile_command_flags = {"include_pytorch": False, "shared": True}


_FLOPS = re.compile(re.escape(MARKER) + r" vector_flops=(\d+)")
_SIGNATURE = re.compile(r'extern "C"[^(]*\bkernel\s*\(([^)]*)\)')


def _arg_kinds(argtypes, source):
    """One letter per kernel argument (see _C._launch_compiled_kernel) from its C type and its name."""
    m = _SIGNATURE.search(source)
    if m is None:
        raise RuntimeError("npu compiled kernel: no 'extern \"C\" ... kernel(...)' definition in the source")
    names = [p.strip().split()[-1].lstrip("*&") for p in m.group(1).split(",") if p.strip()]
    if len(names) != len(argtypes):
        raise RuntimeError(f"npu compiled kernel: {len(argtypes)} argument types for {len(names)} parameters")
    kinds = []
    for t, name in zip(argtypes, names):
        t = t.strip()
        if t.endswith("*"):
            kinds.append("r" if t.startswith("const ") else ("b" if name.startswith("in_out_ptr") else "w"))
        elif t.replace("const ", "") in ("float", "double"):
            kinds.append("f")
        elif t.replace("const ", "") == "uintptr_t":
            kinds.append("p")
        else:
            kinds.append("i")
    return "".join(kinds)


def _trampoline(argtypes, kinds):
    unpacked = []
    for i, (t, k) in enumerate(zip(argtypes, kinds)):
        t = t.replace("const ", "") if not t.strip().endswith("*") else t
        if k in "rwb":
            unpacked.append(f"reinterpret_cast<{t}>(s[{i}])")
        elif k == "f":
            unpacked.append(f"static_cast<{t}>(npu_slot_double(s[{i}]))")
        else:
            unpacked.append(f"static_cast<{t}>(s[{i}])")
    return f"""
#include <cstring>
static inline double npu_slot_double(int64_t v) {{ double d; std::memcpy(&d, &v, sizeof d); return d; }}
extern "C" __attribute__((visibility("default"))) void npu_entry(const int64_t* s) {{
    kernel({", ".join(unpacked)});
}}
"""


class NpuCppKernel:
    """A compiled kernel; ``kernel(*args)`` launches it on the current npu stream."""

    def __init__(self, name, argtypes, source):
        self.name = name
        self.kinds = _arg_kinds(argtypes, source)
        flops = _FLOPS.search(source)
        self.vector_flops = int(flops.group(1)) if flops else 0
        lib = NpuKernelCodeCache.load(source + _trampoline(argtypes, self.kinds))
        self.entry = ctypes.cast(lib.npu_entry, ctypes.c_void_p).value
        # ctypes never unloads a library (and the code cache keeps it too): a launch still queued on a stream
        # when this object is collected calls code that stays mapped
        self._lib = lib

    def __call__(self, *args):
        _C._launch_compiled_kernel(self.entry, self.name, self.kinds, args, self.vector_flops)

    def __repr__(self):
        return f"<npu compiled kernel {self.name}>"


def npu_cpp_kernel(name, argtypes, source):
    """What a generated wrapper calls in place of ``async_compile.cpp_pybinding`` for npu kernels."""
    return NpuCppKernel(name, argtypes, source)
