"""DDP over backend "hccl" + torch.autocast("npu", float16) + torch.amp.GradScaler("npu") in one script.

Each rank trains the demo model on its shard of the global batch; rank 0 also trains the same model in
one process on the whole batch with the same autocast + GradScaler and compares every step's loss.
At one step every rank multiplies its loss by inf: the gradients all-reduced by DDP carry the inf to
every rank, so every rank's GradScaler skips that step and halves its scale in the same way.

Run: torchrun --nproc-per-node=2 examples/ddp_amp.py [--steps N]
"""
import argparse
import copy
import os
import sys
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import torch_npu_sim  # noqa: F401  (registers "npu" and the "hccl" backend)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from demo import make_data, make_model  # noqa: E402

INIT_SCALE = 2.0**12


def amp_step(model, opt, scaler, x, y, poison):
    """One autocast + GradScaler step; returns (loss, scale after update)."""
    opt.zero_grad(set_to_none=True)
    with torch.autocast("npu", dtype=torch.float16):
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, y)
    assert logits.dtype == torch.float16, logits.dtype
    scaler.scale(loss * float("inf") if poison else loss).backward()
    scaler.step(opt)
    scaler.update()
    return loss.detach(), scaler.get_scale()


def make_training(model, device):
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler("npu", init_scale=INIT_SCALE, growth_interval=3)
    return model, opt, scaler


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--poison-step", type=int, default=4, help="step whose loss is multiplied by inf")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")

    local = int(os.environ.get("LOCAL_RANK", 0))
    dist.init_process_group("hccl", device_id=torch.device("npu", local))
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("npu", local)

    x, y = make_data()
    shard = slice(rank * len(x) // world, (rank + 1) * len(x) // world)
    base = make_model()
    ddp, opt, scaler = make_training(DDP(copy.deepcopy(base).to(device)), device)
    xs, ys = x[shard].to(device), y[shard].to(device)
    losses, scales = [], []
    for step in range(args.steps):
        loss, scale = amp_step(ddp, opt, scaler, xs, ys, step == args.poison_step)
        dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        losses.append(loss.item())
        scales.append(scale)

    # every rank ends with the same parameters and the same scale history
    flat = torch.cat([p.detach().reshape(-1) for p in ddp.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    same_params = all(torch.equal(g.cpu(), gathered[0].cpu()) for g in gathered)
    all_scales = [None] * world
    dist.all_gather_object(all_scales, scales)
    same_scales = all(s == all_scales[0] for s in all_scales)

    ok = True
    if rank == 0:
        model, ref_opt, ref_scaler = make_training(copy.deepcopy(base), device)
        ref_losses, ref_scales = [], []
        xg, yg = x.to(device), y.to(device)
        for step in range(args.steps):
            loss, scale = amp_step(model, ref_opt, ref_scaler, xg, yg, step == args.poison_step)
            ref_losses.append(loss.item())
            ref_scales.append(scale)
        # the poisoned step's loss itself is finite (the inf multiplies only the scaled loss)
        worst = max(abs(a - b) for a, b in zip(losses, ref_losses))
        skipped = scales[args.poison_step] == scales[args.poison_step - 1] / 2
        grew = scales[2] == 2 * INIT_SCALE  # growth_interval=3 finite steps double the scale
        print(f"DDP({world} ranks)+fp16 autocast+GradScaler: losses {[round(v, 4) for v in losses]}")
        print(f"one process, global batch:                 {[round(v, 4) for v in ref_losses]}")
        print(f"max |loss diff| {worst:.2e} (tolerance 5e-3); scales {scales} (one process: {ref_scales}); "
              f"grew after 3 steps: {grew}; inf step skipped and scale halved: {skipped}; params equal on all ranks: {same_params}; "
              f"scales equal on all ranks: {same_scales}")
        ok = (worst <= 5e-3 and skipped and grew and scales == ref_scales and same_params and same_scales
              and losses[-1] < losses[0])
        print("ddp_amp:", "OK" if ok else "FAILED", flush=True)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
