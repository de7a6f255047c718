"""End to end mixed precision on npu: the GPT-mini from test_models trained under bf16 autocast, and
under fp16 autocast + GradScaler, follows the float32 loss curve (tolerance 0.05 absolute per step on a
loss of ~4.2), with no CPU fallback."""
import copy

import torch
import torch.nn.functional as F

import torch_npu_sim
from test_models import GPTMini, data


def run(model, x, y, dtype=None, scaler=None, steps=8):
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("npu", dtype=dtype or torch.float32, enabled=dtype is not None):
            logits = model(x)
            loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        losses.append(loss.item())
    return losses


def test_gpt_mini_mixed_precision_follows_fp32():
    torch.manual_seed(0)
    base = GPTMini().npu()
    x, y = (t.npu() for t in data("gpt"))
    fp32 = run(copy.deepcopy(base), x, y)
    torch_npu_sim.reset_fallback_ops()
    bf16 = run(copy.deepcopy(base), x, y, torch.bfloat16)
    fp16 = run(copy.deepcopy(base), x, y, torch.float16, torch.amp.GradScaler("npu", init_scale=2.0**10))
    assert torch_npu_sim.fallback_ops() == {}, torch_npu_sim.fallback_ops()
    assert fp32[-1] < fp32[0] - 0.2  # it learns
    assert max(abs(a - b) for a, b in zip(fp32, bf16)) < 0.05, (fp32, bf16)
    assert max(abs(a - b) for a, b in zip(fp32, fp16)) < 0.05, (fp32, fp16)
