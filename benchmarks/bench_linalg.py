"""Batched linear algebra on npu (OpenBLAS's LAPACK per matrix over the AI cores) against CPU eager PyTorch (MKL's
LAPACK, its own threads) in the same run, interleaved: linalg.solve, cholesky, svd, eigh, qr, inv, det at n = 64-512.
Prints ms per call and npu/cpu (lower is better). Usage: python benchmarks/bench_linalg.py [--quick]"""
import argparse
import datetime
import platform

import torch

import torch_npu_sim  # noqa: F401
from _common import best_of_each, synced


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def spd(batch, n, dtype):
    a = torch.randn(batch, n, n, dtype=dtype)
    return a @ a.mT + n * torch.eye(n, dtype=dtype)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="n = 64 and 256 only")
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    args = p.parse_args()
    dtype = getattr(torch, args.dtype)
    sizes = [(64, 64), (16, 256)] if args.quick else [(64, 64), (32, 128), (16, 256), (4, 512)]
    torch.manual_seed(0)
    print(f"# bench_linalg {datetime.date.today()} {cpu_name()}, {torch.get_num_threads()} CPU threads, {args.dtype}")
    print(f"{'op':12s} {'batch x n':>10s} {'cpu ms':>8s} {'npu ms':>8s} {'npu/cpu':>8s}")
    cases = {
        "solve": lambda a, b: torch.linalg.solve(a, b),
        "cholesky": lambda a, b: torch.linalg.cholesky(a),
        "inv": lambda a, b: torch.linalg.inv(a),
        "det": lambda a, b: torch.linalg.det(a),
        "qr": lambda a, b: torch.linalg.qr(a),
        "eigh": lambda a, b: torch.linalg.eigh(a),
        "svd": lambda a, b: torch.linalg.svd(a, full_matrices=False),
        "svdvals": lambda a, b: torch.linalg.svdvals(a),
    }
    for name, fn in cases.items():
        for batch, n in sizes:
            a = spd(batch, n, dtype)
            b = torch.randn(batch, n, 4, dtype=dtype)
            an, bn = a.to("npu"), b.to("npu")
            cpu = lambda: fn(a, b)  # noqa: E731
            npu = synced(lambda: fn(an, bn))
            cpu()
            repeat = 5 if n <= 256 else 3
            tc, tn = best_of_each([cpu, npu], repeat=repeat)
            print(f"{name:12s} {f'{batch}x{n}':>10s} {tc * 1e3:8.2f} {tn * 1e3:8.2f} {tn / tc:8.2f}", flush=True)


if __name__ == "__main__":
    main()
