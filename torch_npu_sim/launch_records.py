"""Per-launch cost accounting of the simulated NPU (DESIGN.md §10): for each kernel launch, the global-memory
(HBM) bytes its blocks read and wrote and the FLOPs they did on the Cube and on the Vector unit, as recorded
by the kernels (those written with the tile layer, kernels/include/npu_kernels/tile.h, record their traffic).

    with torch_npu_sim.record_launches() as rec:
        y = model(x)
    rec.gm_read, rec.gm_write, rec.cube_flops, rec.vector_flops   # sums over the region
    rec.by_kernel()                                                  # the same per kernel name
    rec.records                                                      # one dict per launch, in order
    print(rec.summary())                                             # per kernel, by modeled NPU time

Each record also carries `start_ns` / `end_ns` (when the simulator ran it, wall clock) and `modeled_us`: the
launch's time on a 910B-class part by a roofline of its GM bytes and FLOPs (README, "Modeled NPU time";
`npu_sim::modeled_time_ns`). Under torch.profiler with ProfilerActivity.PrivateUse1 the same records become
the device kernels of the trace, linked to their ops.
"""
from __future__ import annotations

from collections import defaultdict

import torch

from . import _C

FIELDS = ("gm_read", "gm_write", "cube_flops", "vector_flops")
_TIMES = ("modeled_us", "sim_us")


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
        """{kernel name: {launches, gm_read, gm_write, cube_flops, vector_flops, modeled_us, sim_us}} over the
        region's records (sim_us: the simulator's own time running them)."""
        out: dict[str, dict] = defaultdict(lambda: dict.fromkeys(("launches",) + FIELDS + _TIMES, 0))
        for r in self.records:
            k = out[r["kernel"]]
            k["launches"] += 1
            for f in FIELDS:
                k[f] += r[f]
            k["modeled_us"] += r["modeled_us"]
            k["sim_us"] += (r["end_ns"] - r["start_ns"]) / 1e3
        return dict(out)

    def summary(self, sort_by: str = "modeled_us", top: int | None = None) -> str:
        """A table per kernel, sorted by `sort_by` (a by_kernel() field) descending."""
        rows = sorted(self.by_kernel().items(), key=lambda kv: kv[1][sort_by], reverse=True)[:top]
        total = sum(k["modeled_us"] for _, k in rows) or 1.0
        head = (f"{'kernel':<32}{'launches':>9}{'GM read MiB':>13}{'GM write MiB':>13}{'Cube GFLOP':>12}"
                f"{'Vector GFLOP':>13}{'modeled us':>12}{'modeled %':>10}{'sim us':>11}")
        lines = [head, "-" * len(head)]
        for name, k in rows:
            lines.append(f"{name[:31]:<32}{k['launches']:>9}{k['gm_read'] / 2**20:>13.2f}{k['gm_write'] / 2**20:>13.2f}"
                         f"{k['cube_flops'] / 1e9:>12.3f}{k['vector_flops'] / 1e9:>13.3f}{k['modeled_us']:>12.2f}"
                         f"{100 * k['modeled_us'] / total:>10.1f}{k['sim_us']:>11.1f}")
        return "\n".join(lines)


def _synchronize_all() -> None:
    for d in range(torch.npu.device_count()):
        torch.npu.synchronize(d)
