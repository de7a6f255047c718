"""torch_npu's fused ops on npu against the unfused sequence of aten ops on npu that computes the same thing
(and CPU eager's unfused sequence, for reference): LinearAddGelu, RMSNorm, add-RMSNorm, SwiGLU, rotary, fast
GELU, the scaled masked softmax, forward and forward+backward where the op is differentiable; the MoE layer
through torch_npu's MoE ops against the same layer in plain torch ops on npu; fused attention against CPU
eager's scaled_dot_product_attention. Prints ms per call and the ratios. Run alone on the machine."""
import os
import sys
import datetime
import platform

import torch
import torch.nn.functional as F

import torch_npu_sim  # noqa: F401
from _common import best_of_each, print_table, synced

ops = torch.ops.npu


def rms_norm_ref(x, g, eps=1e-6):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * g


def rotate_half(x):
    a, b = x.chunk(2, -1)
    return torch.cat((-b, a), -1)


def cases(device, dtype):
    """(name, fused fn, unfused fn, tensors needing grad) per case, on `device`."""
    g = torch.Generator().manual_seed(0)

    def r(*s, scale=1.0):
        return (torch.randn(s, generator=g) * scale).to(device=device, dtype=dtype)

    out = []
    if dtype == torch.float32:
        # names of their own: the lambdas read their variables when called, after `x` below is rebound
        xl, wl, bl = r(1024, 1024), r(1024, 1024, scale=1 / 32), r(1024)
        out.append(("LinearAddGelu 1024^3", lambda: ops.npu_linear_add_gelu(xl, wl, bl),
                    lambda: F.gelu(torch.mm(xl, wl) + bl), None))
    x, gamma = r(8192, 1024), r(1024)
    out.append(("RMSNorm 8192x1024", lambda: ops.npu_rms_norm(x, gamma)[0], lambda: rms_norm_ref(x, gamma),
                [x, gamma]))
    out.append(("F.rms_norm 8192x1024 (aten::_fused_rms_norm)", lambda: F.rms_norm(x, (1024,), gamma, 1e-6),
                lambda: rms_norm_ref(x, gamma), [x, gamma]))
    x2 = r(8192, 1024)
    out.append(("add-RMSNorm 8192x1024", lambda: ops.npu_add_rms_norm(x, x2, gamma)[0],
                lambda: rms_norm_ref(x + x2, gamma), None))
    h = r(4096, 2 * 2752)
    out.append(("SwiGLU 4096x2x2752", lambda: ops.npu_swiglu(h), lambda: (lambda a, b: F.silu(a) * b)(*h.chunk(2, -1)),
                [h]))
    q, cos, sin = r(4, 1024, 16, 128), r(1, 1024, 1, 128), r(1, 1024, 1, 128)
    out.append(("rotary 4x1024x16x128", lambda: ops.npu_rotary_mul(q, cos, sin),
                lambda: q * cos + rotate_half(q) * sin, [q]))
    y = r(16, 1024, 1024)
    out.append(("fast GELU 16M", lambda: ops.npu_fast_gelu(y), lambda: y * torch.sigmoid(1.702 * y), [y]))
    s = r(4, 8, 512, 512)
    mask = (torch.rand(4, 1, 512, 512, generator=g) < 0.2).to(device)
    out.append(("scaled masked softmax 4x8x512x512", lambda: ops.npu_scaled_masked_softmax(s, mask, 0.125),
                lambda: torch.softmax((s.float() * 0.125).masked_fill(mask, -10000.0), -1).to(dtype), [s]))
    return out


def with_backward(fn, leaves):
    def run():
        for t in leaves:
            t.grad = None
        fn().float().sum().backward()
    return run


def moe_rows():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
    from test_moe import moe_layer_fused, moe_layer_ref

    rows = []
    for T, H, F_ in ((16, 512, 1024), (64, 256, 512), (256, 512, 1024), (1024, 1024, 2048)):
        g = torch.Generator().manual_seed(0)
        args = [(torch.randn(s, generator=g) * sc).npu() for s, sc in
                (((T, H), 1.0), ((H, 8), 0.5), ((8, H, 2 * F_), 0.05), ((8, F_, H), 0.05))]
        fns = [synced(lambda: moe_layer_fused(*args, 2)), synced(lambda: moe_layer_ref(*args, 2))]
        # cold: one layer after the machine idled (the default settle pause: the core threads' wake-up, ~0.7 ms
        # on this VM, is in both); steady: five layers back to back, as a model's stack of MoE layers runs
        t_f, t_u = best_of_each(fns, repeat=10)
        s_f, s_u = best_of_each(fns, repeat=10, number=5, settle=0)
        rows.append([f"T={T} H={H} F={F_}", f"{t_f * 1e3:.2f}", f"{t_u * 1e3:.2f}", f"{t_u / t_f:.2f}x",
                     f"{s_f * 1e3:.2f}", f"{s_u * 1e3:.2f}", f"{s_u / s_f:.2f}x"])
    print_table("MoE layer, 8 SwiGLU experts, top-2, float32 (ms per layer)",
                ["tokens / hidden / ffn", "cold: npu fused ops", "npu plain torch ops", "speed-up",
                 "steady: fused", "plain", "speed-up"], rows)


def attention_rows():
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        for S in (512, 1024, 2048):
            g = torch.Generator().manual_seed(0)
            q, k, v = (torch.randn(1, 8, S, 64, generator=g).to(dtype) for _ in range(3))
            qn, kn, vn = (t.npu() for t in (q, k, v))
            t_n, t_c = best_of_each([synced(lambda: F.scaled_dot_product_attention(qn, kn, vn, is_causal=True)),
                                     lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)], repeat=5)
            rows.append([f"{dtype} causal, B1 H8 S{S} D64 fwd", f"{t_n * 1e3:.2f}", f"{t_c * 1e3:.2f}",
                         f"{t_n / t_c:.2f}"])
    print_table("Fused attention (npu) against CPU eager SDPA (ms)", ["case", "npu", "cpu", "npu / cpu"], rows)


def main():
    print(f"# bench_fused {datetime.date.today()} on {platform.processor() or platform.machine()}, "
          f"torch {torch.__version__}")
    for dtype in (torch.float32, torch.bfloat16):
        rows = []
        for (name, fused, unfused, leaves), (_, _, cpu_unfused, _) in zip(cases("npu", dtype), cases("cpu", dtype)):
            t_f, t_u, t_c = best_of_each([synced(fused), synced(unfused), cpu_unfused], repeat=10)
            rows.append([f"{name} fwd", f"{t_f * 1e3:.2f}", f"{t_u * 1e3:.2f}", f"{t_c * 1e3:.2f}", f"{t_f / t_u:.2f}"])
            if leaves:
                for t in leaves:
                    t.requires_grad_()
                t_fb, t_ub = best_of_each([synced(with_backward(fused, leaves)), synced(with_backward(unfused, leaves))],
                                          repeat=5)
                rows.append([f"{name} fwd+bwd", f"{t_fb * 1e3:.2f}", f"{t_ub * 1e3:.2f}", "", f"{t_fb / t_ub:.2f}"])
                for t in leaves:
                    t.requires_grad_(False)
        print_table(f"Fused ops, {dtype} (ms)", ["case", "npu fused", "npu unfused", "cpu unfused",
                                                 "fused / unfused"], rows)
    moe_rows()
    attention_rows()


if __name__ == "__main__":
    main()
