"""Cube-unit benchmark: npu GEMM and conv2d vs CPU eager PyTorch (MKL / oneDNN) measured in the same run.
Prints times, ratio npu/cpu (lower is better; goal <= 1.15 for fp32 GEMM), GFLOP/s and % of the machine's
fp32 peak; also the npu GEMM with its portable micro-kernel instead of OpenBLAS (NPU_SIM_GEMM_BLAS=0, run
in a subprocess) to show why the Cube unit calls a BLAS. Asserts nothing.
Run: python benchmarks/bench_matmul.py [--quick]"""
import os
import sys

import torch
import torch.nn.functional as F

import torch_npu_sim  # noqa: F401
from _common import best_of, best_of_each, print_table, synced, run_python

# REFERENCE.md section E: ~275 GFLOP/s fp32 FMA peak per core; the npu pool uses every core.
PEAK_PER_CORE = 275.0
CORES = os.cpu_count() or 1


def timed(fn, repeat):
    return best_of(synced(fn), repeat=repeat)


def timed_pair(cpu_fn, npu_fn, repeat):
    """(cpu, npu) best times, the tries interleaved."""
    return best_of_each([synced(cpu_fn), synced(npu_fn)], repeat=repeat)


def gemm_rows(sizes, dtypes, repeat):
    rows = []
    for dtype in dtypes:
        for n in sizes:
            a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
            an, bn = a.npu(), b.npu()
            reps = repeat if n <= 1024 else max(2, repeat // 2)
            t_cpu, t_npu = timed_pair(lambda: torch.mm(a, b), lambda: torch.mm(an, bn), reps)
            flops = 2.0 * n ** 3
            peak = PEAK_PER_CORE * CORES
            rows.append((str(dtype).replace("torch.", ""), n, f"{t_cpu * 1e3:.2f}", f"{t_npu * 1e3:.2f}",
                         f"{t_npu / t_cpu:.2f}", f"{flops / t_cpu / 1e9:.0f}", f"{flops / t_npu / 1e9:.0f}",
                         f"{100 * flops / t_npu / 1e9 / peak:.0f}%"))
    return rows


def amp_gemm_rows(sizes, repeat):
    """bf16/fp16 torch.mm on npu (fp32 accumulation) vs fp32 on npu and vs CPU eager fp32 and under
    torch.autocast("cpu", bfloat16) (fp32 operands cast inside, as a user's autocast region does)."""
    rows = []
    for n in sizes:
        a, b = torch.randn(n, n), torch.randn(n, n)
        an, bn = a.npu(), b.npu()
        reps = repeat if n <= 1024 else max(2, repeat // 2)

        def cpu_autocast():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                torch.mm(a, b)

        t_cpu32 = timed(lambda: torch.mm(a, b), reps)
        t_cpu_amp = timed(cpu_autocast, reps)
        t_npu32 = timed(lambda: torch.mm(an, bn), reps)
        for dtype in (torch.bfloat16, torch.float16):
            al, bl = an.to(dtype), bn.to(dtype)
            t = timed(lambda: torch.mm(al, bl), reps)
            rows.append((str(dtype).replace("torch.", ""), n, f"{t * 1e3:.2f}", f"{t_npu32 * 1e3:.2f}",
                         f"{t / t_npu32:.2f}", f"{t_cpu32 * 1e3:.2f}", f"{t_cpu_amp * 1e3:.2f}",
                         f"{t / t_cpu_amp:.2f}", f"{2.0 * n ** 3 / t / 1e9:.0f}"))
    return rows


def conv_rows(repeat):
    rows = []
    for (n, c, hw, o, k) in [(8, 64, 56, 64, 3), (8, 128, 28, 128, 3)]:
        x, w = torch.randn(n, c, hw, hw), torch.randn(o, c, k, k)
        xn, wn = x.npu(), w.npu()
        flops = 2.0 * n * o * hw * hw * c * k * k
        t_cpu, t_npu = timed_pair(lambda: F.conv2d(x, w, padding=1), lambda: F.conv2d(xn, wn, padding=1), repeat)
        # forward + backward (input and weight gradients) with a dense upstream gradient
        g = torch.randn(n, o, hw, hw)
        gn = g.npu()
        xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
        xnr, wnr = xn.clone().requires_grad_(), wn.clone().requires_grad_()
        tb_cpu, tb_npu = timed_pair(lambda: torch.autograd.grad(F.conv2d(xr, wr, padding=1), (xr, wr), g),
                                    lambda: torch.autograd.grad(F.conv2d(xnr, wnr, padding=1), (xnr, wnr), gn),
                                    max(2, repeat // 2))
        rows.append((f"N={n} C={c} {hw}x{hw} O={o} {k}x{k}", f"{t_cpu * 1e3:.1f}", f"{t_npu * 1e3:.1f}",
                     f"{t_npu / t_cpu:.2f}", f"{flops / t_npu / 1e9:.0f}", f"{tb_cpu * 1e3:.1f}", f"{tb_npu * 1e3:.1f}",
                     f"{tb_npu / tb_cpu:.2f}"))
    return rows


OWN_MICRO = """
import torch, torch_npu_sim, time
for n in (256, 512, 1024):
    a, b = torch.randn(n, n).npu(), torch.randn(n, n).npu()
    torch.mm(a, b); torch.npu.synchronize()
    best = 1e9
    for _ in range(3):
        t0 = time.perf_counter(); torch.mm(a, b); torch.npu.synchronize(); best = min(best, time.perf_counter() - t0)
    print(n, best)
"""


def main():
    quick = "--quick" in sys.argv
    repeat = 3 if quick else 7
    core_threads = os.environ.get("NPU_SIM_CORE_THREADS", str(CORES))
    print(f"torch {torch.__version__}; CPU eager: MKL/oneDNN with {torch.get_num_threads()} threads; npu: "
          f"{core_threads} AI-core threads (NPU_SIM_CORE_THREADS), each block's micro-kernel a serial BLAS call; "
          f"fp32 peak assumed {PEAK_PER_CORE:.0f} GFLOP/s/core x {CORES} cores (REFERENCE.md E)")
    header = ["dtype", "n", "cpu ms", "npu ms", "npu/cpu", "cpu GFLOP/s", "npu GFLOP/s", "npu % peak"]
    print_table("Square GEMM torch.mm, npu vs CPU eager", header,
                gemm_rows([256, 512, 1024] if quick else [256, 512, 1024, 2048], [torch.float32], repeat))
    print_table("Mixed-precision GEMM: npu bf16/fp16 vs npu fp32 and vs CPU eager (fp32, autocast cpu bf16)",
                ["dtype", "n", "npu ms", "npu fp32 ms", "vs npu fp32", "cpu fp32 ms", "cpu autocast bf16 ms",
                 "npu/cpu autocast", "npu GFLOP/s"], amp_gemm_rows([1024] if quick else [1024, 2048], repeat))
    print_table("conv2d (padding 1), npu vs CPU eager (oneDNN)",
                ["shape", "cpu fwd ms", "npu fwd ms", "npu/cpu", "npu fwd GFLOP/s", "cpu fwd+bwd ms",
                 "npu fwd+bwd ms", "npu/cpu"], conv_rows(repeat))
    blas = {}
    for n in (256, 512, 1024):
        a, b = torch.randn(n, n).npu(), torch.randn(n, n).npu()
        blas[n] = timed(lambda: torch.mm(a, b), 3)
    own = {int(n): float(t) for n, t in (line.split() for line in
                                          run_python(OWN_MICRO, env={"NPU_SIM_GEMM_BLAS": "0"}).split("\n") if line)}
    print_table("Cube micro-kernel: OpenBLAS vs our portable loop (fp32 torch.mm on npu)",
                ["n", "OpenBLAS ms", "portable ms", "portable/OpenBLAS"],
                [(n, f"{blas[n] * 1e3:.2f}", f"{own[n] * 1e3:.2f}", f"{own[n] / blas[n]:.1f}") for n in blas])


if __name__ == "__main__":
    main()
