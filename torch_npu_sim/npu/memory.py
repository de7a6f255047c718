"""torch.npu memory API (torch.cuda's names and semantics) over the C++ caching allocator."""
import collections
import pickle
import sys
from typing import Any, Dict, Optional

import torch

from .. import _C

__all__ = ["memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "memory_stats", "memory_stats_as_nested_dict", "reset_peak_memory_stats",
           "reset_accumulated_memory_stats", "reset_max_memory_allocated", "memory_snapshot", "memory_summary",
           "empty_cache", "mem_get_info", "set_per_process_memory_fraction", "get_per_process_memory_fraction",
           "caching_allocator_alloc", "caching_allocator_delete"]


def _index(device) -> int:
    torch.npu._lazy_init()
    if device is None:
        return torch.npu.current_device()
    return torch.npu._device_index(device, optional=True)


def memory_stats_as_nested_dict(device: Any = None) -> Dict[str, Any]:
    return _C._memory_stats(_index(device))


def memory_stats(device: Any = None) -> Dict[str, Any]:
    """Flat, sorted dict of allocator statistics with CUDA's key names, e.g.
    ``allocated_bytes.all.current``, ``reserved_bytes.large_pool.peak``, ``num_ooms``."""
    result = []

    def flatten(prefix, obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                flatten(f"{prefix}.{k}" if prefix else k, v)
        else:
            result.append((prefix, obj))

    flatten("", memory_stats_as_nested_dict(device))
    result.sort()
    return collections.OrderedDict(result)


def memory_allocated(device: Any = None) -> int:
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device: Any = None) -> int:
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device: Any = None) -> int:
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device: Any = None) -> int:
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device: Any = None) -> None:
    _C._reset_peak_stats(_index(device))


def reset_accumulated_memory_stats(device: Any = None) -> None:
    _C._reset_accumulated_stats(_index(device))


def reset_max_memory_allocated(device: Any = None) -> None:
    reset_peak_memory_stats(device)


def empty_cache() -> None:
    """Release every cached, unused block back to the device (tensors still alive are untouched)."""
    torch.npu._lazy_init()
    _C._empty_cache()


def memory_snapshot():
    """The allocator's segments and blocks (torch.cuda.memory_snapshot): ``_snapshot()["segments"]``."""
    return _snapshot()["segments"]


def _record_memory_history(enabled: Optional[str] = "all", context: Optional[str] = "all",
                           stacks: str = "all", max_entries: int = sys.maxsize, device: Any = None) -> None:
    """Start (or, with ``enabled=None``, stop and forget) recording the allocator's history, as
    ``torch.cuda.memory._record_memory_history``: ``enabled`` "state" keeps the stack of each live block,
    "all" also a trace of every alloc and free (the newest ``max_entries`` per device); ``context`` picks
    which entries carry stacks (None, "state", "alloc", "all"); ``stacks`` "python" or "all" (with C++
    frames). ``device`` is accepted for torch.cuda's signature: the history covers every npu device."""
    if isinstance(enabled, bool):  # the older spelling: _record_memory_history(True, ...)
        enabled = "all" if enabled else None
    torch.npu._lazy_init()
    _C._record_memory_history("none" if enabled is None else str(enabled),
                              "none" if context is None else str(context), str(stacks), int(max_entries))


def _snapshot(device: Any = None) -> Dict[str, Any]:
    """``{"segments": [...], "device_traces": [[...] per device], "allocator_settings": {}}``, the format
    ``torch.cuda._memory_viz`` and https://pytorch.org/memory_viz read."""
    torch.npu._lazy_init()
    return _C._memory_history_snapshot()


def _dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    """Pickles ``_snapshot()`` to ``filename`` (open it with torch.cuda._memory_viz or memory_viz)."""
    snapshot = _snapshot()
    with open(filename, "wb") as f:
        pickle.dump(snapshot, f)


def mem_get_info(device: Any = None):
    """(free, total) bytes of the device's HBM."""
    return tuple(_C._mem_get_info(_index(device)))


def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
    _C._set_memory_fraction(float(fraction), _index(device))


def get_per_process_memory_fraction(device: Any = None) -> float:
    return _C._get_memory_fraction(_index(device))


def caching_allocator_alloc(size: int, device: Any = None, stream: Optional[torch.Stream] = None) -> int:
    """Raw allocation from the caching allocator, returned as an address (free with caching_allocator_delete)."""
    with torch.npu.device(_index(device)), torch.npu.stream(stream):
        t = torch.empty(int(size), dtype=torch.uint8, device="npu")
    _raw_blocks[t.data_ptr()] = t
    return t.data_ptr()


def caching_allocator_delete(mem_ptr: int) -> None:
    if _raw_blocks.pop(mem_ptr, None) is None:
        raise ValueError(f"caching_allocator_delete: address {mem_ptr:#x} was not returned by caching_allocator_alloc")


_raw_blocks: Dict[int, torch.Tensor] = {}


def _format(nbytes: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(nbytes) < 1024 or unit == "GiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.2f} {unit}"
        nbytes /= 1024.0
    return ""


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A human-readable table of the allocator's statistics for ``device``."""
    stats = memory_stats(device)
    rows = [("Allocated memory", "allocated_bytes", True), ("Active memory", "active_bytes", True),
            ("Requested memory", "requested_bytes", True), ("Reserved memory", "reserved_bytes", True),
            ("Non-releasable memory", "inactive_split_bytes", True), ("Allocations", "allocation", False),
            ("Active allocs", "active", False), ("Segments", "segment", False),
            ("Non-releasable allocs", "inactive_split", False)]
    pools = ["all"] if abbreviated else ["all", "large_pool", "small_pool"]
    line = "=" * 87
    out = [line, f" NPU memory summary, device ID {_index(device):<3d} |" + " " * 44, line,
           f" {'Metric':<30}| {'Cur Usage':>12} | {'Peak Usage':>12} | {'Tot Alloc':>12} | {'Tot Freed':>10}", line]
    for title, key, is_bytes in rows:
        for pool in pools:
            name = title if pool == "all" else f"   from {pool.replace('_pool', '')} pool"
            vals = [stats.get(f"{key}.{pool}.{k}", 0) for k in ("current", "peak", "allocated", "freed")]
            fmt = _format if is_bytes else str
            out.append(f" {name:<30}| {fmt(vals[0]):>12} | {fmt(vals[1]):>12} | {fmt(vals[2]):>12} | {fmt(vals[3]):>10}")
        out.append("-" * 87)
    out.append(f" NPU OOMs: {stats.get('num_ooms', 0):<10d} | cudaMalloc-style retries: {stats.get('num_alloc_retries', 0)}")
    out.append(line)
    return "\n".join(out) + "\n"
