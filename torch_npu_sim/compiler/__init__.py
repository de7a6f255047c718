"""torch.compile on npu: dynamo's device interface, the dynamo backend "npu", and Inductor's npu backend.

``torch.compile(model)`` (Inductor) generates C++ kernels for npu graphs and launches them on the current
npu stream (inductor.py, kernels.py). ``torch.compile(model, backend="npu")`` does the same, and runs a
graph that Inductor cannot compile eagerly instead, with a warning naming the failure.
"""
import hashlib
import logging
import os

log = logging.getLogger(__name__)


def npu_backend(gm, example_inputs, **kwargs):
    """The dynamo backend "npu": Inductor, falling back to eager execution of the graph if compilation fails."""
    from torch._inductor.compile_fx import compile_fx

    try:
        return compile_fx(gm, example_inputs, **kwargs)
    except Exception as e:  # noqa: BLE001  (any compiler failure: the graph still runs, eagerly)
        log.warning("torch.compile(backend='npu'): Inductor could not compile a graph of %d nodes, running it "
                    "eagerly: %s: %s", len(gm.graph.nodes), type(e).__name__, str(e).splitlines()[0][:500])
        return gm.forward


def _source_hash() -> str:
    h = hashlib.sha256()
    here = os.path.dirname(__file__)
    for name in sorted(os.listdir(here)):
        if name.endswith(".py"):
            with open(os.path.join(here, name), "rb") as f:
                h.update(name.encode() + f.read())
    return h.hexdigest()


def _inductor_backend():
    """Inductor's npu backend, registered without importing Inductor's code generators (~0.8 s): the classes
    are stand-ins that load compiler/inductor.py on first use."""
    from torch._inductor.codegen.common import register_backend_for_device
    from torch._inductor.custom_graph_pass import CustomGraphModulePass

    class Deferred(type):
        def __getattr__(cls, name):  # attributes the stand-in lacks: those of the class it stands for
            from . import inductor
            return getattr(inductor.INDUCTOR_HOOKS[cls.role], name)

    class NpuScheduling(metaclass=Deferred):
        role = "Scheduling"

        def __new__(cls, scheduler):
            from . import inductor
            return inductor.NpuCppScheduling(scheduler)

    def stand_in(role):
        return Deferred(f"Npu{role}", (), {"role": role})

    class CodegenPass(CustomGraphModulePass):
        """Runs before lowering on every npu graph Inductor compiles: loads compiler/inductor.py (its device op
        overrides and patches); changes nothing in the graph. Its uuid, a hash of this package's sources, keys
        Inductor's caches, so an upgraded npu code generator never reuses code the previous one cached."""
        uuid_value = _source_hash()

        def __call__(self, gm):
            from . import inductor  # noqa: F401

        def uuid(self):
            return self.uuid_value

    register_backend_for_device("npu", NpuScheduling, stand_in("PythonWrapperCodegen"),
                                stand_in("CppWrapperCodegen"), stand_in("WrapperFxCodegen"),
                                device_custom_pass=CodegenPass())


def _register_dynamo() -> None:
    """Dynamo's device interface for npu and the backend name "npu"."""
    from torch._dynamo.backends.registry import _BACKENDS, register_backend

    from . import device_interface

    device_interface.register()
    if "npu" not in _BACKENDS or _BACKENDS["npu"] is None:
        register_backend(compiler_fn=npu_backend, name="npu")


def _register_inductor() -> None:
    """Inductor's npu backend, and its decomposition tables leaving the native ops whole on npu. Inductor's
    compile_fx is the entry of every compilation (torch.compile, AOTInductor, standalone_compile): it is imported
    before AOTAutograd decomposes a graph or any code generator is chosen."""
    from . import native_ops

    native_ops.keep_native_in_decompositions()
    _inductor_backend()


def register() -> None:
    """Registers the device interface and the "npu" backend name once torch._dynamo is imported, and Inductor's
    npu backend once Inductor's compile_fx is (at once for either already imported): importing them costs more
    than torch itself, which a process that never compiles need not pay (_after_import.py)."""
    from .._after_import import after_import

    after_import("torch._dynamo", _register_dynamo)
    after_import("torch._inductor.compile_fx", _register_inductor)
