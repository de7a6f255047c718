"""torch_npu_sim demo, in three parts:
  1. train a small MLP on the simulated NPU and check every step's loss against the same run on CPU;
  2. DDP over 2 ranks with backend "hccl" (torch.multiprocessing.spawn), checked against one process
     training on the global batch;
  3. the same training under torch.autocast("npu", dtype=torch.bfloat16), following the float32 curve.

Run: python examples/demo.py [--steps N] [--part 1|2|3|all]
"""
import argparse
import copy
import os
import socket
import sys
import time
import warnings

import torch
import torch.nn as nn

import torch_npu_sim


def make_data(n=512, features=32, classes=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=g)
    w = torch.randn(features, classes, generator=g)
    y = (x @ w + 0.1 * torch.randn(n, classes, generator=g)).argmax(dim=1)
    return x, y


def make_model(features=32, hidden=64, classes=4, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.Tanh(),
                         nn.Linear(hidden, classes))


def train(model, x, y, device, steps=30, lr=0.05):
    """Full-batch training; returns the loss of every step as Python floats."""
    model = model.to(device)
    x, y = x.to(device), y.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ddp_rank(rank, world, port, steps, queue):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    import torch_npu_sim  # noqa: F401  (a spawned process starts fresh)
    warnings.simplefilter("ignore")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NPU_SIM_CORE_THREADS="1")
    dist.init_process_group("hccl", rank=rank, world_size=world, device_id=torch.device("npu", rank))
    x, y = make_data()
    shard = slice(rank * len(x) // world, (rank + 1) * len(x) // world)
    model = DDP(make_model().to(f"npu:{rank}"))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    xs, ys = x[shard].to(f"npu:{rank}"), y[shard].to(f"npu:{rank}")
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(xs), ys)
        loss.backward()
        opt.step()
        global_loss = loss.detach().clone()
        dist.all_reduce(global_loss, op=dist.ReduceOp.AVG)
        losses.append(global_loss.item())
    if rank == 0:
        queue.put(losses)
    dist.destroy_process_group()


def part_ddp(steps):
    import torch.multiprocessing as mp

    print("\n== 2. DDP over 2 ranks, backend hccl ==")
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    t0 = time.perf_counter()
    mp.spawn(_ddp_rank, args=(2, _free_port(), steps, queue), nprocs=2, join=True)
    ddp = queue.get()
    single = train(make_model(), *make_data(), "npu", steps)
    worst = max(abs(a - b) for a, b in zip(ddp, single))
    print(f"DDP (2 ranks) final loss {ddp[-1]:.6f}, one process on the global batch {single[-1]:.6f}; "
          f"max |diff| {worst:.2e} over {steps} steps ({time.perf_counter() - t0:.1f} s)")
    return worst <= 1e-5


def part_autocast(steps):
    print("\n== 3. torch.autocast('npu', dtype=torch.bfloat16) ==")
    x, y = make_data()
    fp32 = train(make_model(), x, y, "npu", steps)
    model = make_model().to("npu")
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    xs, ys = x.to("npu"), y.to("npu")
    bf16 = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("npu", dtype=torch.bfloat16):
            out = model(xs)
            loss = nn.functional.cross_entropy(out, ys)
        loss.backward()
        opt.step()
        bf16.append(loss.item())
    worst = max(abs(a - b) for a, b in zip(bf16, fp32))
    print(f"logits dtype under autocast: {out.dtype}; loss fp32 {fp32[0]:.4f} -> {fp32[-1]:.4f}, "
          f"bf16 autocast {bf16[0]:.4f} -> {bf16[-1]:.4f}; max |diff| {worst:.3f} (tolerance 0.05)")
    return worst <= 0.05


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--part", default="all", choices=["1", "2", "3", "all"])
    args = parser.parse_args(argv)
    ok = True
    if args.part in ("1", "all"):
        ok &= part_single(args.steps)
    if args.part in ("2", "all"):
        ok &= part_ddp(min(args.steps, 10))
    if args.part in ("3", "all"):
        ok &= part_autocast(args.steps)
    print("\ndemo:", "OK" if ok else "FAILED")
    return 0 if ok else 1


def part_single(steps):
    print("== 1. an MLP on npu vs the same run on CPU ==")

    props = torch.npu.get_device_properties(0)
    print(f"torch {torch.__version__}, {torch.npu.device_count()} x {props.name} "
          f"({props.total_memory / 2**30:.0f} GiB HBM, {props.ai_core_count} AI cores)")
    x, y = make_data()
    model = make_model()
    t0 = time.perf_counter()
    cpu_losses = train(copy.deepcopy(model), x, y, "cpu", steps)
    t1 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        npu_losses = train(copy.deepcopy(model), x, y, "npu", steps)
    t2 = time.perf_counter()
    for w in caught:
        print(f"warning: {w.message}")
    print(f"{'step':>4} {'cpu loss':>12} {'npu loss':>12} {'|diff|':>10}")
    worst = 0.0
    for i, (a, b) in enumerate(zip(cpu_losses, npu_losses)):
        worst = max(worst, abs(a - b))
        if i % 5 == 0 or i == len(cpu_losses) - 1:
            print(f"{i:>4} {a:>12.6f} {b:>12.6f} {abs(a - b):>10.2e}")
    fell_back = torch_npu_sim.fallback_ops()
    print(f"cpu {t1 - t0:.2f} s, npu {t2 - t1:.2f} s; ops on the CPU fallback: {len(fell_back)}")
    print(f"npu memory: allocated {torch.npu.memory_allocated() / 2**10:.0f} KiB, "
          f"reserved {torch.npu.memory_reserved() / 2**20:.0f} MiB")
    ok = worst <= 1e-5
    print(f"max |loss difference| = {worst:.2e} -> {'OK' if ok else 'MISMATCH'} (tolerance 1e-5)")
    return ok


if __name__ == "__main__":
    sys.exit(main())
