"""torch.npu.Stream and torch.npu.Event: the generic torch.Stream/torch.Event bound to "npu"."""
import torch

from .. import _C


def _npu_device(device):
    if device is None:
        return torch.device("npu", torch.npu.current_device())
    if isinstance(device, int):
        return torch.device("npu", device)
    device = torch.device(device)
    if device.type != "npu":
        raise ValueError(f"Expected an npu device, but got: {device}")
    return device if device.index is not None else torch.device("npu", torch.npu.current_device())


class Stream(torch.Stream):
    """An in-order queue of work on one npu device (a new stream from the device's pool)."""

    def __new__(cls, device=None, priority=0, **kwargs):
        torch.npu._lazy_init()
        if kwargs.get("stream_id") is not None:
            return super().__new__(cls, **kwargs)
        return super().__new__(cls, device=_npu_device(device), priority=priority)

    def __repr__(self):
        return f"<torch.npu.Stream device={self.device} stream_id={self.stream_id}>"


class Event(torch.Event):
    """A marker in a stream: record, query, synchronize, elapsed_time."""

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False, device=None):
        torch.npu._lazy_init()
        return super().__new__(cls, device=_npu_device(device), enable_timing=enable_timing, blocking=blocking,
                               interprocess=interprocess)

    def record(self, stream=None):
        super().record(stream if stream is not None else torch.npu.current_stream())

    def elapsed_time(self, end_event):
        """Milliseconds between this event and ``end_event`` (both recorded and completed)."""
        return _C._event_elapsed_time(self.event_id, end_event.event_id)

    def wait(self, stream=None):
        super().wait(stream if stream is not None else torch.npu.current_stream())
