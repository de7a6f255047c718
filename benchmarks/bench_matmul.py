"""Cube-unit benchmark: npu GEMM and conv2d vs CPU eager PyTorch (MKL / oneDNN) measured in the same run.
Prints times, ratio npu/cpu (lower is better; goals: <= 1.15 for fp32 GEMM, <= 1.0 for bf16 GEMM and for
conv2d fp32 / bf16), GFLOP/s and % of the machine's per-core peak as benchmarks/cpp/bench_peak measures it
(fp32 FMA, bf16 dot product); fp16 GEMM against npu fp32 and CPU autocast bf16 (CPU eager fp16 matmul has no
fast kernel without AVX512-FP16: 1 GFLOP/s here); fp32 GEMM on oneDNN against OpenBLAS (NPU_SIM_GEMM_DNNL=0)
and our portable micro-kernel (NPU_SIM_GEMM_BLAS=0 too), in subprocesses, to show why the Cube calls a library.
Asserts nothing.
Run: python benchmarks/bench_matmul.py [--quick]"""
import os
import sys

import torch
import torch.nn.functional as F

import torch_npu_sim
import subprocess

from _common import best_of, best_of_each, cpp_bench, print_table, synced, run_python

CORES = os.cpu_count() or 1


def measured_peaks():
    """{"float32": GFLOP/s per core, "bfloat16": ...} from benchmarks/cpp/bench_peak (0 without the ISA); bf16 is
    the faster of AVX512-BF16 dot products and AMX-BF16 tile products."""
    out = subprocess.run([cpp_bench("bench_peak")], capture_output=True, text=True, check=True).stdout
    peaks = dict(line.split() for line in out.splitlines())
    return {"float32": float(peaks["fp32"]),
            "bfloat16": max(float(peaks["bf16"]), float(peaks.get("amx_bf16", 0)))}


def timed(fn, repeat):
    return best_of(synced(fn), repeat=repeat)


def timed_pair(cpu_fn, npu_fn, repeat):
    """(cpu, npu) best times, the tries interleaved."""
    return best_of_each([synced(cpu_fn), synced(npu_fn)], repeat=repeat)


def gemm_rows(sizes, dtypes, repeat, peaks):
    rows = []
    for dtype in dtypes:
        for n in sizes:
            a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
            an, bn = a.npu(), b.npu()
            reps = repeat if n <= 1024 else max(2, repeat // 2 if n <= 2048 else 2)
            t_cpu, t_npu = timed_pair(lambda: torch.mm(a, b), lambda: torch.mm(an, bn), reps)
            flops = 2.0 * n ** 3
            peak = peaks[str(dtype).replace("torch.", "")] * CORES
            rows.append((str(dtype).replace("torch.", ""), n, f"{t_cpu * 1e3:.2f}", f"{t_npu * 1e3:.2f}",
                         f"{t_npu / t_cpu:.2f}", f"{flops / t_cpu / 1e9:.0f}", f"{flops / t_npu / 1e9:.0f}",
                         f"{100 * flops / t_npu / 1e9 / peak:.0f}%" if peak else "-"))
    return rows


def fp16_gemm_rows(sizes, repeat):
    """fp16 torch.mm on npu (fp32 accumulation) vs npu fp32, vs CPU eager fp16 (oneDNN's AVX512-FP16 kernel where
    the CPU has it, a reference loop without) and vs CPU under torch.autocast("cpu", bfloat16)."""
    rows = []
    for n in sizes:
        a, b = torch.randn(n, n), torch.randn(n, n)
        an, bn = a.npu(), b.npu()
        ah, bh = an.half(), bn.half()
        reps = repeat if n <= 1024 else max(2, repeat // 2)

        def cpu_autocast():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                torch.mm(a, b)

        ch, chb = a.half(), b.half()
        t_cpu_amp, t_cpu16, t_npu32, t = best_of_each(
            [synced(cpu_autocast), synced(lambda: torch.mm(ch, chb)), synced(lambda: torch.mm(an, bn)),
             synced(lambda: torch.mm(ah, bh))], repeat=reps)
        rows.append(("float16", n, f"{t * 1e3:.2f}", f"{t_npu32 * 1e3:.2f}", f"{t / t_npu32:.2f}",
                     f"{t_cpu16 * 1e3:.2f}", f"{t / t_cpu16:.2f}", f"{t_cpu_amp * 1e3:.2f}", f"{t / t_cpu_amp:.2f}",
                     f"{2.0 * n ** 3 / t / 1e9:.0f}"))
    return rows


def conv_rows(repeat):
    rows = []
    shapes = [((8, 64, 56, 56), 64), ((8, 128, 28, 28), 128), ((2, 32, 16, 32, 32), 32)]  # the last one 3-D
    for dtype in (torch.float32, torch.bfloat16):
        for (xshape, o) in shapes:
            n, c, *spatial = xshape
            conv = F.conv3d if len(spatial) == 3 else F.conv2d
            x, w = torch.randn(*xshape).to(dtype), torch.randn(o, c, *([3] * len(spatial))).to(dtype)
            xn, wn = x.npu(), w.npu()
            pixels = 1
            for v in spatial:
                pixels *= v
            flops = 2.0 * n * o * pixels * c * 3 ** len(spatial)
            t_cpu, t_npu = timed_pair(lambda: conv(x, w, padding=1), lambda: conv(xn, wn, padding=1), repeat)
            # forward + backward (input and weight gradients) with a dense upstream gradient
            g = torch.randn(n, o, *spatial).to(dtype)
            gn = g.npu()
            xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
            xnr, wnr = xn.clone().requires_grad_(), wn.clone().requires_grad_()
            tb_cpu, tb_npu = timed_pair(lambda: torch.autograd.grad(conv(xr, wr, padding=1), (xr, wr), g),
                                        lambda: torch.autograd.grad(conv(xnr, wnr, padding=1), (xnr, wnr), gn),
                                        max(2, repeat // 2))
            size = "x".join(str(v) for v in spatial)
            rows.append((str(dtype).replace("torch.", ""), f"N={n} C={c} {size} O={o} 3x3{'x3' if len(spatial) == 3 else ''}",
                         f"{t_cpu * 1e3:.1f}", f"{t_npu * 1e3:.1f}", f"{t_npu / t_cpu:.2f}",
                         f"{flops / t_npu / 1e9:.0f}", f"{tb_cpu * 1e3:.1f}", f"{tb_npu * 1e3:.1f}",
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
    peaks = measured_peaks()
    kernels = torch_npu_sim._C._cube_kernels()
    print(f"torch {torch.__version__}; CPU eager: MKL/oneDNN with {torch.get_num_threads()} threads; npu: "
          f"{core_threads} AI-core threads (NPU_SIM_CORE_THREADS), one library call per slice; GEMM fp32: "
          f"{kernels['float32']}, bf16: {kernels['bfloat16']}, fp16: {kernels['float16']}; conv: {kernels['conv']}; "
          f"UB panels: {kernels['panels']}; measured peak per core: fp32 "
          f"{peaks['float32']:.0f}, bf16 {peaks['bfloat16']:.0f} GFLOP/s (benchmarks/cpp/bench_peak)")
    header = ["dtype", "n", "cpu ms", "npu ms", "npu/cpu", "cpu GFLOP/s", "npu GFLOP/s", "npu % peak"]
    print_table("Square GEMM torch.mm, npu vs CPU eager in the same dtype", header,
                gemm_rows([256, 512, 1024] if quick else [256, 512, 1024, 2048], [torch.float32], repeat, peaks) +
                gemm_rows([1024] if quick else [1024, 2048, 4096], [torch.bfloat16], repeat, peaks))
    print_table("fp16 GEMM: npu fp16 vs npu fp32, vs CPU eager fp16 and vs CPU autocast bf16",
                ["dtype", "n", "npu ms", "npu fp32 ms", "vs npu fp32", "cpu fp16 ms", "npu/cpu fp16",
                 "cpu autocast bf16 ms", "npu/cpu autocast", "npu GFLOP/s"], fp16_gemm_rows([1024] if quick else [1024, 2048], repeat))
    print_table("conv2d / conv3d (padding 1), npu vs CPU eager (oneDNN) in the same dtype",
                ["dtype", "shape", "cpu fwd ms", "npu fwd ms", "npu/cpu", "npu fwd GFLOP/s", "cpu fwd+bwd ms",
                 "npu fwd+bwd ms", "npu/cpu"], conv_rows(repeat))
    onednn = {}
    for n in (256, 512, 1024):
        a, b = torch.randn(n, n).npu(), torch.randn(n, n).npu()
        onednn[n] = timed(lambda: torch.mm(a, b), 3)

    def times(env):
        return {int(n): float(t) for n, t in (line.split() for line in run_python(OWN_MICRO, env=env).split("\n") if line)}

    blas = times({"NPU_SIM_GEMM_DNNL": "0"})
    own = times({"NPU_SIM_GEMM_DNNL": "0", "NPU_SIM_GEMM_BLAS": "0"})
    print_table("fp32 torch.mm on npu: oneDNN (default) vs OpenBLAS (NPU_SIM_GEMM_DNNL=0) vs our portable loop "
                "(and NPU_SIM_GEMM_BLAS=0)",
                ["n", "oneDNN ms", "OpenBLAS ms", "portable ms", "OpenBLAS/oneDNN", "portable/oneDNN"],
                [(n, f"{onednn[n] * 1e3:.2f}", f"{blas[n] * 1e3:.2f}", f"{own[n] * 1e3:.2f}",
                  f"{blas[n] / onednn[n]:.2f}", f"{own[n] / onednn[n]:.1f}") for n in onednn])


if __name__ == "__main__":
    main()
