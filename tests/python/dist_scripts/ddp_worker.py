"""Rank script: DDP training of examples/demo.py's model on npu over hccl; rank 0 also trains the same model
single-process on the global batch and compares per-step losses. argv: modes (plain|no_sync|unused|fp16); torch's
bf16_compress_hook refuses non-CUDA/XPU devices, so it cannot be exercised here."""
import copy
import os
import sys
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from common import init

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples"))
from demo import make_data, make_model  # noqa: E402

STEPS = 8


class WithUnused(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.unused = nn.Linear(4, 4)

    def forward(self, x):
        return self.inner(x)


def reference(x, y, dev, accumulate):
    model = make_model().to(dev)
    x, y = x.to(dev), y.to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad(set_to_none=True)
        if accumulate:  # two micro-batches of the global batch, gradients averaged
            halves = [(x[:len(x) // 2], y[:len(y) // 2]), (x[len(x) // 2:], y[len(y) // 2:])]
            loss = sum(nn.functional.cross_entropy(model(a), b) for a, b in halves) / 2
        else:
            loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    rank, world, dev = init("hccl")
    rc = 0
    for mode in (sys.argv[1:] or ["plain"]):
        rc |= run_mode(mode, rank, world, dev)
    dist.destroy_process_group()
    return rc


def run_mode(mode, rank, world, dev):
    x, y = make_data()
    per = len(x) // world
    xs, ys = x[rank * per:(rank + 1) * per].to(dev), y[rank * per:(rank + 1) * per].to(dev)
    inner = make_model()
    module = WithUnused(inner) if mode == "unused" else inner
    ddp = DDP(module.to(dev), find_unused_parameters=(mode == "unused"), bucket_cap_mb=0.01)
    if mode == "fp16":
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import fp16_compress_hook
        ddp.register_comm_hook(None, fp16_compress_hook)
    elif mode == "bf16":
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import bf16_compress_hook
        ddp.register_comm_hook(None, bf16_compress_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad(set_to_none=True)
        if mode == "no_sync":  # accumulate over two local micro-batches, sync on the second only
            h = per // 2
            with ddp.no_sync():
                l1 = nn.functional.cross_entropy(ddp(xs[:h]), ys[:h]) / 2
                l1.backward()
            l2 = nn.functional.cross_entropy(ddp(xs[h:]), ys[h:]) / 2
            l2.backward()
            loss = (l1 + l2).detach()
        else:
            loss = nn.functional.cross_entropy(ddp(xs), ys)
            loss.backward()
            loss = loss.detach()
        opt.step()
        dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        losses.append(loss.item())
    # parameters stay identical on every rank
    flat = torch.cat([p.detach().reshape(-1) for p in ddp.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    same = all(torch.equal(g.cpu(), gathered[0].cpu()) for g in gathered)
    rc = 0
    if rank == 0:
        if mode == "no_sync":
            # per-rank micro-batches: rank r's halves; reference = full batch in 2*world chunks averaged
            ref_x = torch.cat([x[r * per:(r + 1) * per] for r in range(world)])
            ref = reference(ref_x, torch.cat([y[r * per:(r + 1) * per] for r in range(world)]), dev, False)
        else:
            ref = reference(x, y, dev, False)
        tol = 1e-5 if mode in ("plain", "no_sync", "unused") else 5e-3
        worst = max(abs(a - b) for a, b in zip(losses, ref))
        print(f"mode={mode} ddp={losses} ref={ref} worst={worst:.3e} params_equal={same}", flush=True)
        rc = 0 if worst <= tol and same else 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
