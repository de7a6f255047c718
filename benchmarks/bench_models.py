"""Model-level benchmark: one training step (forward, backward, AdamW) of the GPT-mini from
tests/python/test_models.py, npu vs CPU eager in the same run — float32, and bf16/fp16 autocast on npu vs
torch.autocast("cpu", bfloat16); then the same for the tiny HF-style Llama of benchmarks/tiny_llama.py
(float32 and bf16 autocast). Prints ratios (npu/cpu; lower is better); asserts nothing.
Run: python benchmarks/bench_models.py"""
import copy
import os
import sys

import torch
import torch.nn.functional as F

import torch_npu_sim
from _common import best_of_each, print_table

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from test_models import GPTMini  # noqa: E402
from tiny_llama import TinyLlama  # noqa: E402


def step_fn(device, amp_dtype=None, fused=None):
    torch.manual_seed(0)
    model = GPTMini(vocab=256, d=128, heads=4, layers=4, ctx=64).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=fused)
    g = torch.Generator().manual_seed(0)
    seq = torch.randint(0, 256, (8, 65), generator=g)
    x, y = seq[:, :-1].to(device), seq[:, 1:].to(device)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            logits = model(x)
            loss = F.cross_entropy(logits.float().reshape(-1, 256), y.reshape(-1))
        loss.backward()
        opt.step()
        if device == "npu":
            torch.npu.synchronize()
        return loss
    return step


def llama_step_fn(device, amp_dtype=None):
    torch.manual_seed(0)
    model = TinyLlama(vocab=256, hidden=128, layers=4, heads=4, kv_heads=2, intermediate=344).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 256, (8, 64), generator=g).to(device)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            _, loss = model(ids, labels=ids)
        loss.backward()
        opt.step()
        if device == "npu":
            torch.npu.synchronize()
        return loss
    return step


def llama_table():
    rows = []
    for name, amp in [("float32", None), ("bf16 autocast", torch.bfloat16)]:
        cpu_step, npu_step = llama_step_fn("cpu", amp), llama_step_fn("npu", amp)
        cpu_step(), npu_step()  # warm-up
        torch_npu_sim.reset_fallback_ops()
        c, n = best_of_each([cpu_step, npu_step], repeat=8)
        fell_back = len(torch_npu_sim.fallback_ops())
        rows.append((name, f"{c * 1e3:.1f}", f"{n * 1e3:.1f}", f"{n / c:.2f}", fell_back))
    print_table("tiny HF-style Llama training step (hidden 128, 4 layers, 4 heads / 2 kv heads, batch 8 x 64 "
                "tokens): ms; goal npu/cpu <= 0.8 for both rows",
                ["case", "CPU eager", "npu", "npu/cpu", "ops on CPU fallback"], rows)


def main():
    rows = []
    cases = [("float32", None, None, None), ("bf16 autocast", torch.bfloat16, torch.bfloat16, None),
             ("fp16 autocast (cpu: bf16)", torch.float16, torch.bfloat16, None),
             ("float32, fused AdamW (both)", None, None, True)]
    base32 = None
    for name, npu_amp, cpu_amp, fused in cases:
        cpu_step, npu_step = step_fn("cpu", cpu_amp, fused), step_fn("npu", npu_amp, fused)
        cpu_step(), npu_step()  # warm-up
        torch_npu_sim.reset_fallback_ops()
        c, n = best_of_each([cpu_step, npu_step], repeat=8)
        fell_back = len(torch_npu_sim.fallback_ops())
        base32 = base32 or n
        rows.append((name, f"{c * 1e3:.1f}", f"{n * 1e3:.1f}", f"{n / c:.2f}", f"{n / base32:.2f}", fell_back))
    print_table("GPT-mini training step (d=128, 4 layers, batch 8 x 64 tokens): ms",
                ["case", "CPU eager", "npu", "npu/cpu", "npu vs npu fp32", "ops on CPU fallback"], rows)
    llama_table()


if __name__ == "__main__":
    main()
