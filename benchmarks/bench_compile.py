"""torch.compile on npu: a chain of 10 pointwise ops on 16M elements and a GPT-mini training step, compiled by
Inductor's npu backend, against eager npu and against torch.compile on CPU, interleaved in one run. Prints
times, ratios (lower is better) and the launches of one compiled step against eager's; asserts nothing.
Run: python benchmarks/bench_compile.py"""
import os
import sys

import torch
import torch.nn.functional as F

import torch_npu_sim
from _common import best_of_each, print_table, synced

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from test_models import GPTMini  # noqa: E402


def chain(x):
    for i in range(10):
        x = x * 1.01 + 0.1 if i % 2 == 0 else (torch.sin(x) if i % 3 == 0 else x.relu() - 0.5)
    return x


def gpt_step_fn(device, compiled):
    torch.manual_seed(0)
    model = GPTMini(vocab=256, d=128, heads=4, layers=4, ctx=64).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    seq = torch.randint(0, 256, (8, 65), generator=torch.Generator().manual_seed(0))
    x, y = seq[:, :-1].to(device), seq[:, 1:].to(device)

    def loss_of(x, y):
        return F.cross_entropy(model(x).float().reshape(-1, 256), y.reshape(-1))

    loss_fn = torch.compile(loss_of) if compiled else loss_of

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(x, y).backward()
        opt.step()
        if device == "npu":
            torch.npu.synchronize()
    return step


def launches(step):
    with torch_npu_sim.record_launches() as rec:
        step()
    return len(rec.records), sum(r["kernel"].startswith("cpp_") for r in rec.records)


def main():
    x = torch.randn(16 * 2**20, device="npu")
    compiled_chain = torch.compile(chain)
    eager, comp = synced(lambda: chain(x)), synced(lambda: compiled_chain(x))
    e, c = best_of_each([eager, comp], repeat=5)
    print_table("10 pointwise ops on 16M float32 elements: ms; goal compiled/eager <= 0.3",
                ["eager npu", "compiled npu", "compiled/eager", "launches eager / compiled"],
                [(f"{e * 1e3:.1f}", f"{c * 1e3:.1f}", f"{c / e:.2f}",
                  f"{launches(eager)[0]} / {launches(comp)[0]}")])

    steps = [gpt_step_fn("npu", False), gpt_step_fn("npu", True), gpt_step_fn("cpu", True)]
    for s in steps:
        s(), s()  # compile and warm up
    e, c, cc = best_of_each(steps, repeat=8)
    (n_eager, _), (n_comp, n_gen) = launches(steps[0]), launches(steps[1])
    print_table("GPT-mini training step (d 128, 4 layers, batch 8 x 64, AdamW), float32: ms; goals compiled npu / "
                "eager npu <= 0.7, compiled npu / compiled CPU <= 1.1",
                ["eager npu", "compiled npu", "compiled CPU", "compiled/eager npu", "compiled npu/CPU",
                 "launches eager / compiled (generated)"],
                [(f"{e * 1e3:.1f}", f"{c * 1e3:.1f}", f"{cc * 1e3:.1f}", f"{c / e:.2f}", f"{c / cc:.2f}",
                  f"{n_eager} / {n_comp} ({n_gen})")])


if __name__ == "__main__":
    main()
