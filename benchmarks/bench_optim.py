"""Optimizer steps on npu: fused (one launch over every parameter) against foreach (a launch per _foreach op) and
against CPU eager's fused step, for AdamW (HF Trainer's default optimizer) and SGD with momentum. Model-sized
parameter lists: a GPT-2-small-shaped list (12 blocks) and a 1M-element list of 200 small tensors.
Prints ms per step and the ratios. Run alone on the machine."""
import datetime
import platform

import torch

import torch_npu_sim  # noqa: F401
from _common import best_of_each, print_table, synced


def gpt_params(device, blocks=12, d=768):
    shapes = []
    for _ in range(blocks):
        shapes += [(3 * d, d), (3 * d,), (d, d), (d,), (4 * d, d), (4 * d,), (d, 4 * d), (d,), (d,), (d,), (d,), (d,)]
    return shapes


def small_params(device):
    return [(5000,)] * 200


def make(shapes, device):
    g = torch.Generator().manual_seed(0)
    params = [torch.randn(s, generator=g).to(device).requires_grad_() for s in shapes]
    for p in params:
        p.grad = torch.randn(p.shape, generator=g).to(device) * 1e-3
    return params


def main():
    print(f"# bench_optim {datetime.date.today()} on {platform.processor() or platform.machine()}, "
          f"torch {torch.__version__}")
    rows = []
    for list_name, shapes_of in (("GPT-2-small list (85M)", gpt_params), ("200 x 5000", small_params)):
        shapes = shapes_of(None)
        numel = sum(torch.Size(s).numel() for s in shapes)
        for opt_name, opt_cls, kw in (("AdamW", torch.optim.AdamW, dict(lr=1e-4, weight_decay=0.01)),
                                      ("SGD momentum", torch.optim.SGD, dict(lr=1e-3, momentum=0.9))):
            npu_f = opt_cls(make(shapes, "npu"), fused=True, **kw)
            npu_e = opt_cls(make(shapes, "npu"), foreach=True, **kw)
            cpu_f = opt_cls(make(shapes, "cpu"), fused=True, **kw)
            t_f, t_e, t_c = best_of_each([synced(npu_f.step), synced(npu_e.step), cpu_f.step],
                                         repeat=5 if numel > 10**7 else 20)
            rows.append([f"{opt_name}, {list_name}", f"{t_f * 1e3:.2f}", f"{t_e * 1e3:.2f}", f"{t_c * 1e3:.2f}",
                         f"{t_e / t_f:.2f}x", f"{t_f / t_c:.2f}"])
    print_table("Optimizer step (ms)", ["case", "npu fused", "npu foreach", "cpu fused", "fused speed-up vs foreach",
                                        "npu fused / cpu fused"], rows)


if __name__ == "__main__":
    main()
