"""The npu device interface of torch._dynamo and Inductor: devices, streams, events, memory, properties."""
from typing import Any

import torch
from torch._dynamo.device_interface import DeviceInterface, register_interface_for_device

from .. import _C


def _npu():
    return torch.npu  # the device module (torch_npu_sim.npu), registered before this interface


class NpuInterface(DeviceInterface):
    # torch.npu.device, torch.npu.Event and torch.npu.Stream (torch.Event / torch.Stream subclasses, which
    # dynamo captures in a graph), set by register()
    device = Event = Stream = None

    class Worker:
        """Properties that Inductor's compile workers query; the simulated device answers from any process."""

        @staticmethod
        def set_device(device: int) -> None:
            _npu().set_device(device)

        @staticmethod
        def current_device() -> int:
            return _npu().current_device()

        @staticmethod
        def get_device_properties(device: torch.types.Device = None) -> Any:
            return _npu().get_device_properties(device)

    @staticmethod
    def current_device() -> int:
        return _npu().current_device()

    @staticmethod
    def set_device(device: torch.types.Device) -> None:
        _npu().set_device(device)

    @staticmethod
    def maybe_exchange_device(device: int) -> int:
        return _C._exchange_device(device) if device >= 0 else -1

    @staticmethod
    def exchange_device(device: int) -> int:
        return _C._exchange_device(device)

    @staticmethod
    def device_count() -> int:
        return _npu().device_count()

    @staticmethod
    def is_available() -> bool:
        return _npu().is_available()

    @staticmethod
    def stream(stream: torch.Stream) -> Any:
        return _npu().stream(stream)

    @staticmethod
    def current_stream() -> torch.Stream:
        return _npu().current_stream()

    @staticmethod
    def set_stream(stream: torch.Stream) -> None:
        _npu().set_stream(stream)

    @staticmethod
    def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
        _npu().set_stream(torch.Stream(stream_id=stream_id, device_index=device_index, device_type=device_type))

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        return _npu().current_stream(device_idx).stream_id

    @staticmethod
    def synchronize(device: torch.types.Device = None) -> None:
        _npu().synchronize(device)

    @staticmethod
    def get_compute_capability(device: torch.types.Device = None) -> Any:
        return _npu().get_device_capability(device)

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True

    @staticmethod
    def memory_allocated(device: torch.types.Device = None) -> int:
        return _npu().memory_allocated(device)

    @staticmethod
    def is_triton_capable(device: torch.types.Device = None) -> bool:
        return False  # kernels are generated as C++ (the host is the device's compute here)


def register() -> None:
    npu = _npu()
    NpuInterface.device = npu.device
    NpuInterface.Event = npu.Event
    NpuInterface.Stream = npu.Stream
    register_interface_for_device("npu", NpuInterface)
    for i in range(npu.device_count()):
        register_interface_for_device(f"npu:{i}", NpuInterface)


def get_raw_stream(device_idx: int) -> int:
    """The current stream's id on ``device_idx`` (what Inductor's wrapper calls a raw stream)."""
    return NpuInterface.get_raw_stream(device_idx)
