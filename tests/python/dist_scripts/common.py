"""Shared helpers of the rank scripts: init from torchrun-style env vars, one npu device per rank."""
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))
import torch_npu_sim  # noqa: E402,F401


def init(backend="hccl", timeout_s=60, **kw):
    import datetime

    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s), **kw)
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("npu", rank % torch.npu.device_count())
    torch.npu.set_device(dev)
    return rank, world, dev


class Checker:
    def __init__(self, rank):
        self.rank = rank
        self.failures = []
        self.count = 0

    def eq(self, name, got, want):
        self.count += 1
        got = got.cpu() if isinstance(got, torch.Tensor) else got
        if isinstance(want, torch.Tensor):
            ok = got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)
        else:
            ok = got == want
        if not ok:
            self.failures.append(f"rank {self.rank}: {name}: got {got!r} want {want!r}")

    def finish(self):
        for f in self.failures[:20]:
            print(f, flush=True)
        print(f"rank {self.rank}: {self.count} checks, {len(self.failures)} failures", flush=True)
        return 1 if self.failures else 0
