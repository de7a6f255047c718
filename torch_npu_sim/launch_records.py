"""Per-launch cost accounting of the simulated NPU (DESIGN.md §10): for each kernel launch, the global-memory
(HBM) bytes its blocks read and wrote and the FLOPs they did on the Cube and on the Vector unit, as recorded
by the kernels (those written with the tile layer, kernels/include/npu_kernels/tile.h, record their traffic).

    with torch_npu_sim.record_launches() as rec:
        y = model(x)
    rec.gm_read, rec.gm_write, rec.cube_flops, rec.vector_flops   # sums over the region
    rec.by_kernel()                                                  # the same per kernel name
    rec.records                                                      # one dict per launch, in order
"""
from __future__ import annotations

from collections import defaultdict

import torch

from . import _C

FIELDS = ("gm_read", "gm_write", "cube_flops", "vector_flops")


def set_launch_recording(on: bool, capacity: int = 65536) -> None:
    """Turns recording on or off; the process keeps the newest `capacity` records (older ones are dropped)."""
    _C._set_launch_recording(bool(on), int(capacity))


def launch_recording() -> bool:
    return _C._launch_recording()


def launch_records() -> list[dict]:
    """The buffered records, oldest first: kernel, device, stream_id, launch_seq, block_dim, gm_read, gm_write,
    cube_flops, vector_flops, failed. Synchronize first to see launches still queued."""
    return _C._launch_records()


def launch_totals() -> dict:
    """Sums over every record since the last clear (dropped ones included), with the count of launches."""
    return _C._launch_totals()


def clear_launch_records() -> None:
    _C._clear_launch_records()


class record_launches:
    """Records the launches of a region (all devices synchronized at both ends) and sums them. Nests: an inner
    region sees only its own launches, and recording is restored to what it was on exit."""

    def __enter__(self) -> "record_launches":
        self._was_on = launch_recording()
        _synchronize_all()
        if not self._was_on:
            set_launch_recording(True)
        self._start = launch_totals()
        self.records: list[dict] = []
        return self

    def __exit__(self, *exc) -> None:
        _synchronize_all()
        end = launch_totals()
        self.launches = end["launches"] - self._start["launches"]
        for f in FIELDS:
            setattr(self, f, end[f] - self._start[f])
        lost = (end["dropped"] - self._start["dropped"]) > 0
        self.records = [] if self.launches == 0 else launch_records()[-self.launches:]
        self.complete = not lost and len(self.records) == self.launches
        if not self._was_on:
            set_launch_recording(False)

    def by_kernel(self) -> dict[str, dict]:
        """{kernel name: {launches, gm_read, gm_write, cube_flops, vector_flops}} over the region's records."""
        out: dict[str, dict] = defaultdict(lambda: dict.fromkeys(("launches",) + FIELDS, 0))
        for r in self.records:
            k = out[r["kernel"]]
            k["launches"] += 1
            for f in FIELDS:
                k[f] += r[f]
        return dict(out)


def _synchronize_all() -> None:
    for d in range(torch.npu.device_count()):
        torch.npu.synchronize(d)
