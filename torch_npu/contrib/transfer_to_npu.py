"""``import torch_npu.contrib.transfer_to_npu``: CUDA-style scripts run unmodified on npu.

After the import, "cuda" means "npu": ``.cuda()``, ``device="cuda[:N]"``, ``torch.device("cuda")`` passed
to torch's functions, ``torch.cuda.*`` (device, stream, event, memory, RNG and amp APIs), ``torch.autocast
("cuda")``, ``torch.amp.GradScaler("cuda")``, ``torch.load(map_location="cuda")``, and the "nccl" backend of
torch.distributed (which becomes "hccl"). A ``torch.device("cuda")`` object itself still says "cuda": it
is translated when it reaches one of the patched functions (``with torch.device("cuda"):`` as a default
device context is not translated; use ``torch.set_default_device("cuda")``, which is).
"""
import functools
import re

import torch
import torch.distributed as dist

import torch_npu  # noqa: F401  (the npu device and torch.npu)

_CUDA = re.compile(r"^cuda(:\d+)?$")


def _npu(value):
    """value with every 'cuda' device spelling replaced by the npu one; anything else unchanged."""
    if isinstance(value, str):
        return "npu" + value[4:] if _CUDA.match(value) else value
    if isinstance(value, torch.device) and value.type == "cuda":
        return torch.device("npu", value.index) if value.index is not None else torch.device("npu")
    return value


def _npu_map_location(value):
    if isinstance(value, dict):  # keys name the checkpoint's devices; the values are where they go
        return {k: _npu(v) for k, v in value.items()}
    return _npu(value)


_DEVICE_KWARGS = ("device", "device_type", "map_location")


def _device_wrapper(fn):
    if getattr(fn, "_npu_transferred", False):
        return fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        args = tuple(_npu(a) for a in args)
        for k in _DEVICE_KWARGS:
            if k in kwargs:
                kwargs[k] = _npu_map_location(kwargs[k]) if k == "map_location" else _npu(kwargs[k])
        return fn(*args, **kwargs)

    wrapper._npu_transferred = True
    return wrapper


def _patch(owner, names):
    for name in names:
        fn = getattr(owner, name, None)
        if fn is not None:
            setattr(owner, name, _device_wrapper(fn))


_TORCH_FUNCTIONS = [
    "tensor", "as_tensor", "asarray", "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm",
    "arange", "range", "linspace", "logspace", "eye", "empty_strided", "zeros_like", "ones_like", "empty_like",
    "full_like", "rand_like", "randn_like", "randint_like", "tril_indices", "triu_indices", "normal",
    "scalar_tensor", "sparse_coo_tensor", "load", "set_default_device", "get_device_module",
    "bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window",
]
_TENSOR_METHODS = ["to", "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor", "pin_memory", "is_pinned"]


def _cuda_is_npu():
    # torch.cuda's public API answers for the npu device
    for name in torch.npu.__all__:
        if name == "amp":
            continue
        setattr(torch.cuda, name, getattr(torch.npu, name))
    torch.cuda.amp.autocast = torch.npu.amp.autocast
    torch.cuda.amp.GradScaler = torch.npu.amp.GradScaler
    torch.cuda.is_available = torch.npu.is_available
    torch.cuda.device_count = torch.npu.device_count


def _autocast_and_scaler():
    autocast_cls = torch.amp.autocast_mode.autocast
    autocast_cls.__init__ = _device_wrapper(autocast_cls.__init__)
    torch.amp.GradScaler.__init__ = _device_wrapper(torch.amp.GradScaler.__init__)
    _patch(torch, ["get_autocast_dtype", "set_autocast_dtype", "is_autocast_enabled", "set_autocast_enabled"])
    _patch(torch.amp.autocast_mode, ["is_autocast_available"])
    torch.amp.is_autocast_available = torch.amp.autocast_mode.is_autocast_available


def _distributed():
    if not dist.is_available():
        return

    def backend(b):
        if isinstance(b, str):
            b = re.sub(r"\bnccl\b", "hccl", b)
            b = re.sub(r"\bcuda:", "npu:", b)
        return b

    def wrap(fn):
        if getattr(fn, "_npu_transferred", False):
            return fn

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if args:
                args = (backend(args[0]),) + tuple(args[1:])
            if "backend" in kwargs:
                kwargs["backend"] = backend(kwargs["backend"])
            return fn(*args, **kwargs)

        wrapper._npu_transferred = True
        return wrapper

    dist.init_process_group = wrap(dist.init_process_group)
    torch.distributed.distributed_c10d.init_process_group = dist.init_process_group
    # new_group / new_subgroups take the backend as a keyword
    for name in ("new_group", "new_subgroups"):
        fn = getattr(dist, name, None)
        if fn is not None:
            setattr(dist, name, wrap(fn))
    dist.is_nccl_available = lambda: True


def _init():
    _patch(torch, _TORCH_FUNCTIONS)
    _patch(torch.Tensor, _TENSOR_METHODS)
    _patch(torch.nn.Module, ["to"])
    torch.Tensor.cuda = torch.Tensor.npu
    torch.Tensor.is_cuda = property(lambda self: self.device.type == "npu")
    torch.nn.Module.cuda = torch.nn.Module.npu
    torch.UntypedStorage.cuda = torch.UntypedStorage.npu
    _cuda_is_npu()
    _autocast_and_scaler()
    _distributed()


_init()
