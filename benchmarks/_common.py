"""Helpers shared by the benchmark scripts: timing, subprocess runs, table printing. No assertions."""
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def best_of(fn, repeat=5, number=1):
    """Best wall time (seconds) of `number` calls of fn, over `repeat` tries."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, time.perf_counter() - t0)
    return best / number


def best_of_each(fns, repeat=5, number=1, settle=0.02):
    """Best wall time (seconds) of `number` calls of each fn over `repeat` tries, the tries interleaved
    (a, b, a, b, ...): a slow phase of a shared machine then hits every contender alike. Each try starts
    after a `settle` pause, so that the previous contender's idle workers have gone to sleep: CPU
    PyTorch's OpenMP threads spin for a while after a parallel region, and on 2 cores that spinning
    took ~13% off the npu try that followed (a GPT-mini step: 26.5 ms alone, 30 ms right after a CPU step)."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            time.sleep(settle)
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return [b / number for b in best]


def synced(fn):
    """fn followed by torch.npu.synchronize(), called once as a warm-up: for timing asynchronous launches."""
    import torch

    def once():
        fn()
        torch.npu.synchronize()

    once()
    return once


def run_python(code, env=None, timeout=600):
    full = dict(os.environ)
    full.update(env or {})
    full["PYTHONPATH"] = ROOT + os.pathsep + full.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return out.stdout


def cpp_bench(name):
    """Path of the torch-free benchmark `name` (benchmarks/cpp), brought up to date in build/cpp-release
    (configured there first if that build does not exist yet)."""
    build = os.path.join(ROOT, "build", "cpp-release")
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        subprocess.run(["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DNPU_SIM_BUILD_TORCH=OFF"], check=True,
                       capture_output=True)
    subprocess.run(["cmake", "--build", build, "--target", name], check=True, capture_output=True)
    return os.path.join(build, "benchmarks", "cpp", name)


def print_table(title, header, rows):
    print(f"\n## {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
