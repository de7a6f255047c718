"""Allocator benchmark: cached allocate+free pairs vs PYTORCH_NO_NPU_MEMORY_CACHING=1, in C++ (the allocator
core alone) and from Python (torch.empty on npu, dispatcher included). Prints ratios; asserts nothing.
Run: python benchmarks/bench_allocator.py"""
import subprocess

from _common import cpp_bench, print_table, run_python

PY_CODE = """
import time, torch, torch_npu_sim
sizes = [512, 64 << 10, 1 << 20, 16 << 20, 256 << 20]
torch.empty(1, device="npu")
for n in sizes:
    iters = 300 if n >= (16 << 20) else 3000
    torch.empty(n, dtype=torch.uint8, device="npu")
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(iters):
            t = torch.empty(n, dtype=torch.uint8, device="npu")
            del t
        best = min(best, (time.perf_counter() - t0) / iters)
    print(n, best * 1e9)
"""


def python_level():
    base = dict(line.split() for line in run_python(PY_CODE, {"PYTORCH_NO_NPU_MEMORY_CACHING": "1"}).splitlines())
    ours = dict(line.split() for line in run_python(PY_CODE).splitlines())
    rows = []
    for n in base:
        b, o = float(base[n]), float(ours[n])
        rows.append((f"{int(n) / 1024:.1f} KiB", f"{b:.0f}", f"{o:.0f}", f"{b / o:.1f}x"))
    print_table("torch.empty + del on npu (ns per pair, Python + dispatcher included)",
                ["size", "uncached (PYTORCH_NO_NPU_MEMORY_CACHING=1)", "cached", "speed-up"], rows)


def cpp_level():
    exe = cpp_bench("bench_allocator")
    print("\n## Allocator core alone (C++, ns per allocate+free pair)\n")
    print(subprocess.run([exe], check=True, capture_output=True, text=True).stdout)


if __name__ == "__main__":
    cpp_level()
    python_level()
