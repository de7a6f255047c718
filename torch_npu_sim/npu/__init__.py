"""The ``torch.npu`` device module: devices, streams, events, memory, random (torch_npu's names)."""
import contextlib
import threading
import time
from typing import Any, Optional, Union

import torch

from .. import _C
from . import amp
from .memory import *  # noqa: F401,F403
from .memory import __all__ as _memory_all
from .random import *  # noqa: F401,F403
from .random import __all__ as _random_all
from .streams import Event, Stream

_initialized = False
_init_lock = threading.Lock()

__all__ = [
    "is_available", "is_initialized", "init", "device_count", "current_device", "set_device", "device",
    "device_of", "get_device_name", "get_device_properties", "get_device_capability", "synchronize",
    "can_device_access_peer", "Stream", "Event", "stream", "set_stream", "current_stream", "default_stream",
    "get_amp_supported_dtype", "is_bf16_supported", "amp", "restart_device", "set_compile_mode",
    "is_jit_compile_false", "utilization",
] + _memory_all + _random_all


def is_available() -> bool:
    return _C._get_device_count() > 0


def is_initialized() -> bool:
    return _initialized and not _is_in_bad_fork()


def _is_in_bad_fork() -> bool:
    return _C._is_in_bad_fork()


def _lazy_init():
    """Initialise the runtime once per process (called by torch before the first npu object)."""
    global _initialized
    # A forked child inherits _initialized from its parent, so the fork check comes first.
    if _is_in_bad_fork():
        raise RuntimeError(
            "Cannot re-initialize NPU in forked subprocess. To use NPU with multiprocessing, "
            "you must use the 'spawn' start method")
    if _initialized:
        return
    with _init_lock:
        if _initialized:
            return
        _C._init()
        _initialized = True


def init():
    _lazy_init()


def device_count() -> int:
    return _C._get_device_count()


def current_device() -> int:
    _lazy_init()
    return _C._get_device()


def _device_index(device: Any, optional: bool = False) -> int:
    if isinstance(device, torch.device):
        if device.type != "npu":
            raise ValueError(f"Expected an npu device, but got: {device}")
        return device.index if device.index is not None else (current_device() if optional else 0)
    if isinstance(device, str):
        return _device_index(torch.device(device), optional)
    if isinstance(device, int):
        return device
    if device is None and optional:
        return current_device()
    raise ValueError(f"Expected an npu device (torch.device, str or int), but got: {device!r}")


def set_device(device: Union[torch.device, str, int]) -> None:
    index = _device_index(device)
    if index >= 0:
        _lazy_init()
        _C._set_device(index)


class device:
    """Context manager that changes the current npu device."""

    def __init__(self, device: Any):
        self.idx = _device_index(device, optional=True) if device is not None else -1
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = _C._exchange_device(self.idx)

    def __exit__(self, *args):
        if self.prev_idx >= 0:
            _C._exchange_device(self.prev_idx)
        return False


class device_of(device):
    """Context manager that makes the device of ``obj`` (a tensor) current."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_npu else -1)


def synchronize(device: Any = None) -> None:
    """Wait for all work on every stream of ``device`` (default: the current device); raises the device's
    error if a kernel, copy or collective failed asynchronously. Device errors are sticky: every later
    synchronize and copy to the host raises too, until ``restart_device`` acknowledges it."""
    _lazy_init()
    _C._synchronize(_device_index(device, optional=True))


def restart_device(device_id: Any = None, rebuild_all_resource: bool = False) -> None:
    """torch_npu.npu.restart_device: after an asynchronous error (a failed kernel, copy or collective) the
    device stays failed, and every synchronize and copy to the host raises that error, so nothing computed
    from the failed work is read back by mistake. This acknowledges it: waits for the device's streams,
    then clears the error. Tensors written by the failed work hold undefined values; recompute them.
    ``rebuild_all_resource`` is accepted for torch_npu compatibility and has no effect."""
    del rebuild_all_resource
    _lazy_init()
    _C._restart_device(_device_index(device_id, optional=True))


def _device_error(device: Any = None) -> Optional[str]:
    """The device's sticky error message, or None (does not wait and does not clear it)."""
    _lazy_init()
    return _C._device_error(_device_index(device, optional=True))


class _DeviceProperties:
    def __init__(self, props: dict):
        self.name = props["name"]
        self.total_memory = props["total_memory"]
        self.ai_core_count = props["ai_core_count"]
        self.multi_processor_count = props["ai_core_count"]
        self.ub_size = props["ub_size"]
        self.physical_id = props["physical_id"]
        self.core_threads = props["core_threads"]

    def __repr__(self):
        return (f"_NPUDeviceProperties(name='{self.name}', total_memory={self.total_memory // (1 << 20)}MB, "
                f"ai_core_count={self.ai_core_count}, ub_size={self.ub_size // 1024}KB)")


def get_device_properties(device: Any = None) -> _DeviceProperties:
    _lazy_init()
    return _DeviceProperties(_C._get_device_properties(_device_index(device, optional=True)))


def get_device_name(device: Any = None) -> str:
    return get_device_properties(device).name


def get_device_capability(device: Any = None):
    # An Ascend 910B-class chip has no CUDA compute capability; torch_npu reports None.
    return None


def can_device_access_peer(device: Any, peer_device: Any) -> bool:
    a, b = _device_index(device), _device_index(peer_device)
    n = device_count()
    if not (0 <= a < n and 0 <= b < n):
        raise ValueError(f"can_device_access_peer: invalid device ordinals {a}, {b} ({n} visible)")
    return a != b


def current_stream(device: Any = None) -> Stream:
    _lazy_init()
    s = torch.accelerator.current_stream(torch.device("npu", _device_index(device, optional=True)))
    return Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


def default_stream(device: Any = None) -> Stream:
    _lazy_init()
    s = torch.accelerator.current_stream(torch.device("npu", _device_index(device, optional=True)))
    return Stream(stream_id=0, device_index=s.device_index, device_type=s.device_type)


def set_stream(stream: Optional[torch.Stream]) -> None:
    if stream is None:
        return
    _lazy_init()
    torch.accelerator.set_stream(stream)


@contextlib.contextmanager
def stream(stream: Optional[torch.Stream]):
    """Context manager making ``stream`` the current stream of its device (None: no-op)."""
    if stream is None:
        yield
        return
    prev = torch.accelerator.current_stream(stream.device)
    torch.accelerator.set_stream(stream)
    try:
        yield
    finally:
        torch.accelerator.set_stream(prev)


def get_amp_supported_dtype():
    return [torch.float16, torch.bfloat16]


def is_bf16_supported() -> bool:
    return True


_jit_compile = False  # torch_npu's default since its 2.1 releases: precompiled (binary) operators


def set_compile_mode(jit_compile: bool = True) -> None:
    """torch_npu's operator compile mode (``torch.npu.set_compile_mode(jit_compile=False)``). On Ascend it
    chooses between compiling operators online and running CANN's precompiled binaries; the results are
    the same. The simulated device's kernels are always precompiled, so the mode is recorded and reported
    (``is_jit_compile_false``) and changes nothing else."""
    global _jit_compile
    if not isinstance(jit_compile, bool):
        raise TypeError(f"set_compile_mode: expected argument 'jit_compile' to be a bool, "
                        f"got {type(jit_compile).__name__}")
    _jit_compile = jit_compile


def is_jit_compile_false() -> bool:
    return not _jit_compile


# CLOCK_MONOTONIC, the clock of the runtime's readings (std::steady_clock)
_import_ns = time.monotonic_ns()
_busy_samples: dict = {}  # device -> (busy ns, now ns) of the previous utilization() call
_busy_lock = threading.Lock()


def utilization(device: Any = None) -> int:
    """Percent of time, over the sample period, during which one or more kernels ran on the device
    (``torch.cuda.utilization``'s meaning). The period is the time since the previous call for the same
    device (since ``import torch_npu_sim`` for the first call)."""
    _lazy_init()
    d = _device_index(device, optional=True)
    busy, now = _C._device_busy_time(d)
    with _busy_lock:
        prev_busy, prev_now = _busy_samples.get(d, (0, None))
        _busy_samples[d] = (busy, now)
    if prev_now is None:
        prev_now = _import_ns
    window = now - prev_now
    if window <= 0:
        return 0
    return max(0, min(100, round(100 * (busy - prev_busy) / window)))
