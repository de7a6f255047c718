"""Reduction and nn-kernel benchmark: npu vs CPU eager PyTorch measured in the same run. sum / mean / amax
over 16M fp32 elements (full reduction = two-phase path; per-row over (4096, 4096) and per-column over
dim 0 = tiled path; 1- and 2-norms of rows; cache-resident rows of 1024x1024, 4096x1024 and 16384x256, 20 calls
back to back per try), softmax, log_softmax and layer_norm on (4096, 1024) fp32, forward and backward;
fp16/bf16 sum, softmax (+ backward) and layer_norm (+ backward).
Prints time, ratio npu/cpu (lower is better) and GB/s of the input read; asserts nothing.
Run: python benchmarks/bench_reductions.py [--quick]"""
import sys

import torch
import torch.nn.functional as F

import torch_npu_sim  # noqa: F401
from _common import best_of_each, print_table, synced


def row(name, cpu_fn, npu_fn, nbytes, repeat, number=1):
    """number > 1: that many calls back to back per try (a cache-resident operand stays in cache)."""
    t_cpu, t_npu = best_of_each([synced(cpu_fn), synced(npu_fn)], repeat=repeat, number=number)
    return (name, f"{t_cpu * 1e3:.2f}", f"{t_npu * 1e3:.2f}", f"{t_npu / t_cpu:.2f}",
            f"{nbytes / t_cpu / 1e9:.1f}", f"{nbytes / t_npu / 1e9:.1f}")


def main():
    quick = "--quick" in sys.argv
    repeat = 3 if quick else 7
    print(f"torch threads (CPU side): {torch.get_num_threads()}")
    x = torch.randn(16 * 1024 * 1024)
    xn = x.npu()
    x2, x2n = x.view(4096, 4096), xn.view(4096, 4096)
    nb = x.numel() * 4
    rows = [
        row("sum full 16M", lambda: x.sum(), lambda: xn.sum(), nb, repeat),
        row("mean full 16M", lambda: x.mean(), lambda: xn.mean(), nb, repeat),
        row("amax full 16M", lambda: x.amax(), lambda: xn.amax(), nb, repeat),
        row("var full 16M", lambda: x.var(), lambda: xn.var(), nb, repeat),
        row("sum rows (4096,4096) dim=1", lambda: x2.sum(1), lambda: x2n.sum(1), nb, repeat),
        row("mean rows dim=1", lambda: x2.mean(1), lambda: x2n.mean(1), nb, repeat),
        row("amax rows dim=1", lambda: x2.amax(1), lambda: x2n.amax(1), nb, repeat),
        row("2-norm rows dim=1", lambda: torch.linalg.vector_norm(x2, 2, 1),
            lambda: torch.linalg.vector_norm(x2n, 2, 1), nb, repeat),
        row("1-norm rows dim=1", lambda: torch.linalg.vector_norm(x2, 1, 1),
            lambda: torch.linalg.vector_norm(x2n, 1, 1), nb, repeat),
        row("sum cols dim=0", lambda: x2.sum(0), lambda: x2n.sum(0), nb, repeat),
        row("argmax rows dim=1", lambda: x2.argmax(1), lambda: x2n.argmax(1), nb, repeat),
    ]
    for shape in [(1024, 1024), (4096, 1024), (16384, 256)]:  # cache-resident rows, 20 calls back to back per try
        c = torch.randn(shape)
        cn, cb = c.npu(), c.numel() * 4
        rows += [
            row(f"amax rows {shape[0]}x{shape[1]} x20", lambda: c.amax(1), lambda: cn.amax(1), cb, repeat, 20),
            row("2-norm rows x20", lambda: torch.linalg.vector_norm(c, 2, 1),
                lambda: torch.linalg.vector_norm(cn, 2, 1), cb, repeat, 20),
            row("1-norm rows x20", lambda: torch.linalg.vector_norm(c, 1, 1),
                lambda: torch.linalg.vector_norm(cn, 1, 1), cb, repeat, 20),
            row("sum rows x20", lambda: c.sum(1), lambda: cn.sum(1), cb, repeat, 20),
        ]
    a = torch.randn(4096, 1024)
    an = a.npu()
    g, gn = torch.randn_like(a), None
    gn = g.npu()
    w, b = torch.randn(1024), torch.randn(1024)
    wn, bn = w.npu(), b.npu()
    nb = a.numel() * 4
    y, yn = F.softmax(a, 1), F.softmax(an, 1)
    ly, lyn = F.log_softmax(a, 1), F.log_softmax(an, 1)
    rows += [
        row("softmax (4096,1024)", lambda: F.softmax(a, 1), lambda: F.softmax(an, 1), nb, repeat),
        row("log_softmax (4096,1024)", lambda: F.log_softmax(a, 1), lambda: F.log_softmax(an, 1), nb, repeat),
        row("softmax backward", lambda: torch._softmax_backward_data(g, y, 1, torch.float32),
            lambda: torch._softmax_backward_data(gn, yn, 1, torch.float32), 2 * nb, repeat),
        row("log_softmax backward", lambda: torch._log_softmax_backward_data(g, ly, 1, torch.float32),
            lambda: torch._log_softmax_backward_data(gn, lyn, 1, torch.float32), 2 * nb, repeat),
        row("layer_norm (4096,1024)", lambda: F.layer_norm(a, (1024,), w, b), lambda: F.layer_norm(an, (1024,), wn, bn),
            nb, repeat),
    ]
    _, mean, rstd = torch.native_layer_norm(a, (1024,), w, b, 1e-5)
    _, meann, rstdn = torch.native_layer_norm(an, (1024,), wn, bn, 1e-5)
    rows.append(row("layer_norm backward", lambda: torch.ops.aten.native_layer_norm_backward(
        g, a, (1024,), mean, rstd, w, b, [True, True, True]), lambda: torch.ops.aten.native_layer_norm_backward(
        gn, an, (1024,), meann, rstdn, wn, bn, [True, True, True]), 2 * nb, repeat))
    print_table("reductions and nn kernels, fp32 (best of %d)" % repeat,
                ("op", "cpu ms", "npu ms", "npu/cpu", "cpu GB/s", "npu GB/s"), rows)
    rows = []
    for dtype in (torch.float16, torch.bfloat16):
        h, hn = x.to(dtype), xn.to(dtype)
        s, sn = a.to(dtype), an.to(dtype)
        name = str(dtype).replace("torch.", "")
        rows += [row(f"sum full 16M {name}", lambda: h.sum(), lambda: hn.sum(), h.numel() * 2, repeat),
                 row(f"softmax (4096,1024) {name}", lambda: F.softmax(s, 1), lambda: F.softmax(sn, 1), s.numel() * 2,
                     repeat)]
        sy, syn, sg, sgn = F.softmax(s, 1), F.softmax(sn, 1), g.to(dtype), gn.to(dtype)
        rows.append(row(f"softmax backward {name}", lambda: torch._softmax_backward_data(sg, sy, 1, dtype),
                        lambda: torch._softmax_backward_data(sgn, syn, 1, dtype), 2 * s.numel() * 2, repeat))
        sw, swn, sb, sbn = w.to(dtype), wn.to(dtype), b.to(dtype), bn.to(dtype)
        rows.append(row(f"layer_norm (4096,1024) {name}", lambda: F.layer_norm(s, (1024,), sw, sb),
                        lambda: F.layer_norm(sn, (1024,), swn, sbn), s.numel() * 2, repeat))
        _, sm, sr = torch.native_layer_norm(s, (1024,), sw, sb, 1e-5)
        _, smn, srn = torch.native_layer_norm(sn, (1024,), swn, sbn, 1e-5)
        rows.append(row(f"layer_norm backward {name}", lambda: torch.ops.aten.native_layer_norm_backward(
            sg, s, (1024,), sm, sr, sw, sb, [True, True, True]), lambda: torch.ops.aten.native_layer_norm_backward(
            sgn, sn, (1024,), smn, srn, swn, sbn, [True, True, True]), 2 * s.numel() * 2, repeat))
    print_table("16-bit inputs (fp32 accumulation)", ("op", "cpu ms", "npu ms", "npu/cpu", "cpu GB/s", "npu GB/s"),
                rows)


if __name__ == "__main__":
    main()
