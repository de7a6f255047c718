"""npu tensors through torch.multiprocessing: shared, not copied.

A producer's npu tensor is pickled as where its storage lies in the device's shareable HBM file (see
``npu_sim::device_memory_region``) plus a reference-count file; the consumer maps that memory (no copy) and
gets a tensor on the same device index, whose writes the producer sees. The producer keeps the storage
alive until every consumer has released it (the count reaches 0), and a consumer's mapping keeps the
memory alive if the producer exits first. A failure never leaves the consumer waiting: what cannot be
shared arrives as an error that the consumer raises (the producer warns as well), and a consumer that
receives a tensor after its producer has exited raises.
"""
import atexit
import itertools
import os
import threading
import warnings
from multiprocessing.reduction import ForkingPickler

import torch
import torch.multiprocessing.reductions as _torch_reductions

from . import _C

_REFCOUNT_DIR = "/dev/shm"
_counter = itertools.count()
_held = {}  # refcount file -> storage kept alive for consumers
_lock = threading.Lock()
_collector = None


def _refcount_path():
    return os.path.join(_REFCOUNT_DIR, f"npusim-ipc-{os.getpid()}-{next(_counter)}")


def _collect():
    """Drops the storages whose consumers have all released them."""
    with _lock:
        for path in list(_held):
            try:
                done = _C._ipc_refcount(path) <= 0
            except RuntimeError:
                done = True
            if done:
                del _held[path]
                try:
                    os.unlink(path)
                except OSError:
                    pass
        return bool(_held)


def _collect_periodically():
    global _collector
    if _collect():
        _collector = threading.Timer(0.2, _collect_periodically)
        _collector.daemon = True
        _collector.start()
    else:
        _collector = None


def _ensure_collector():
    if _collector is None:
        _collect_periodically()


@atexit.register
def _forget():
    with _lock:
        for path in _held:
            try:
                os.unlink(path)
            except OSError:
                pass
        _held.clear()


def shared_storages():
    """How many storages this process keeps alive for consumers (for tests and leak checks)."""
    _collect()
    return len(_held)


def _raise_shared_error(message):
    raise RuntimeError(message)


def _rebuild_npu_tensor(cls, size, stride, storage_offset, dtype, device, pid, fd, offset, nbytes, refcount_path,
                        requires_grad):
    raw = _C._ipc_open(device, f"/proc/{pid}/fd/{fd}", offset, nbytes, refcount_path)
    t = torch.empty(0, dtype=dtype, device=raw.device)
    t.set_(raw.untyped_storage(), storage_offset, size, stride)
    if cls is torch.nn.parameter.Parameter:
        return torch.nn.parameter.Parameter(t, requires_grad=requires_grad)
    t.requires_grad_(requires_grad)
    return t


def _reduce_tensor(tensor):
    if tensor.device.type != "npu" or tensor.layout != torch.strided:
        return _torch_reductions.reduce_tensor(tensor)
    if tensor.requires_grad and not tensor.is_leaf:
        return _torch_reductions.reduce_tensor(tensor)  # torch's own error for non-leaf tensors
    storage = tensor.untyped_storage()
    device = tensor.device.index
    try:
        torch.npu.synchronize(device)  # the consumer reads what the producer's queued work writes
        path = _refcount_path()
        pid, fd, offset = _C._ipc_share(device, storage.data_ptr(), path)
    except Exception as e:  # noqa: BLE001 - any failure goes to the consumer as an error
        message = f"npu IPC: the producer (pid {os.getpid()}) could not share an npu:{device} tensor: {e}"
        warnings.warn(message, RuntimeWarning)
        return (_raise_shared_error, (message,))
    with _lock:
        _held[path] = storage
    _ensure_collector()
    return (_rebuild_npu_tensor, (type(tensor), tensor.size(), tensor.stride(), tensor.storage_offset(),
                                  tensor.dtype, device, pid, fd, offset, storage.nbytes(), path,
                                  tensor.requires_grad))


def _register():
    for t in list(torch._tensor_classes) + [torch.Tensor, torch.nn.parameter.Parameter]:
        ForkingPickler.register(t, _reduce_tensor)


_register()
