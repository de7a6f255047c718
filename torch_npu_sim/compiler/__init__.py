"""torch.compile on npu: dynamo's device interface, the dynamo backend "npu", and Inductor's npu backend.

``torch.compile(model)`` (Inductor) generates C++ kernels for npu graphs and launches them on the current
npu stream (inductor.py, kernels.py). ``torch.compile(model, backend="npu")`` does the same, and runs a
graph that Inductor cannot compile eagerly instead, with a warning naming the failure.
"""
import logging

log = logging.getLogger(__name__)


def npu_backend(gm, example_inputs, **kwargs):
    """The dynamo backend "npu": Inductor, falling back to eager execution of the graph if compilation fails."""
    from torch._inductor.compile_fx import compile_fx

    from . import inductor

    inductor.register()
    try:
        return compile_fx(gm, example_inputs, **kwargs)
    except Exception as e:  # noqa: BLE001  (any compiler failure: the graph still runs, eagerly)
        log.warning("torch.compile(backend='npu'): Inductor could not compile a graph of %d nodes, running it "
                    "eagerly: %s: %s", len(gm.graph.nodes), type(e).__name__, str(e).splitlines()[0][:500])
        return gm.forward


def register() -> None:
    """Registers the device interface and the "npu" backend name (Inductor registers itself lazily)."""
    from torch._dynamo.backends.registry import _BACKENDS, register_backend

    from . import device_interface

    device_interface.register()
    if "npu" not in _BACKENDS or _BACKENDS["npu"] is None:
        register_backend(compiler_fn=npu_backend, name="npu")
