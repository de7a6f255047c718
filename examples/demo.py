"""torch_npu_sim demo: train a small MLP on the simulated NPU and check it against the same run on CPU.

Run: python examples/demo.py [--steps N]
"""
import argparse
import copy
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args(argv)

    props = torch.npu.get_device_properties(0)
    print(f"torch {torch.__version__}, {torch.npu.device_count()} x {props.name} "
          f"({props.total_memory / 2**30:.0f} GiB HBM, {props.ai_core_count} AI cores)")
    x, y = make_data()
    model = make_model()
    t0 = time.perf_counter()
    cpu_losses = train(copy.deepcopy(model), x, y, "cpu", args.steps)
    t1 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        npu_losses = train(copy.deepcopy(model), x, y, "npu", args.steps)
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
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
