"""Host<->device copy bandwidth: npu H2D/D2H (pageable and pinned) vs a plain memcpy of the same bytes
between the same host buffers, measured in the same run. Prints GB/s and ratios; asserts nothing.
Run: python benchmarks/bench_copy.py"""
import ctypes

import torch

import torch_npu_sim  # noqa: F401
from _common import best_of, print_table


def gbps(nbytes, seconds):
    return nbytes / seconds / 1e9


def main():
    rows = []
    for mib in (1, 16, 256):
        n = mib << 20
        src = torch.randint(0, 255, (n,), dtype=torch.uint8)
        host = torch.empty_like(src)
        pinned_src, pinned_dst = src.pin_memory(), torch.empty_like(src).pin_memory()
        dev = torch.empty(n, dtype=torch.uint8, device="npu")
        reps = max(3, 2048 // mib)

        def plain_memcpy():
            ctypes.memmove(host.data_ptr(), src.data_ptr(), n)

        def h2d_pageable():
            dev.copy_(src)

        def h2d_pinned():
            dev.copy_(pinned_src, non_blocking=True)
            torch.npu.synchronize()

        def d2h_pageable():
            host.copy_(dev)

        def d2h_pinned():
            pinned_dst.copy_(dev, non_blocking=True)
            torch.npu.synchronize()

        base = best_of(plain_memcpy, repeat=reps)
        for name, fn in [("H2D pageable", h2d_pageable), ("H2D pinned", h2d_pinned),
                         ("D2H pageable", d2h_pageable), ("D2H pinned", d2h_pinned)]:
            fn()
            t = best_of(fn, repeat=reps)
            rows.append((f"{mib} MiB", name, f"{gbps(n, base):.1f}", f"{gbps(n, t):.1f}", f"{base / t:.2f}"))
        assert torch.equal(dev.cpu(), src)  # sanity: the bytes really moved
    print_table("Copy bandwidth, npu vs plain memcpy of the same bytes (GB/s; ratio = memcpy time / npu time)",
                ["size", "direction", "memcpy GB/s", "npu GB/s", "ratio (>1 = faster than memcpy)"], rows)


if __name__ == "__main__":
    main()
