"""torch.fft on npu (pocketfft, one launch per axis, lines over the AI cores) against CPU eager PyTorch (MKL's DFTI,
its own threads) in the same run, interleaved: fft.rfft at 2^10-2^20 points (one signal and a batch of 64), fft.fft2
at 64^2-1024^2, stft. Prints ms per call and npu/cpu (lower is better).
Usage: python benchmarks/bench_fft.py [--quick] [--dtype float32|float64]"""
import argparse
import datetime

import torch

import torch_npu_sim  # noqa: F401
from _common import best_of_each, synced
from bench_linalg import cpu_name


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="a few sizes only")
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    args = p.parse_args()
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    print(f"# bench_fft {datetime.date.today()} {cpu_name()}, {torch.get_num_threads()} CPU threads, {args.dtype}")
    print(f"{'op':8s} {'shape':>14s} {'cpu ms':>8s} {'npu ms':>8s} {'npu/cpu':>8s}")
    exps = [10, 14, 20] if args.quick else [10, 12, 14, 16, 18, 20]
    cases = [("rfft", (1 << e,), torch.fft.rfft) for e in exps]
    cases += [("rfft", (64, 1 << e), torch.fft.rfft) for e in exps if e <= 16]
    cases += [("fft2", (n, n), torch.fft.fft2) for n in ([64, 1024] if args.quick else [64, 256, 1024])]
    window = torch.hann_window(400, dtype=dtype)
    stft = lambda x, w: torch.stft(x, 512, hop_length=160, win_length=400, window=w, return_complex=True)  # noqa: E731
    cases.append(("stft", (8, 16000 * 10), stft))
    for name, shape, fn in cases:
        x = torch.randn(shape, dtype=dtype)
        if name == "fft2":
            x = x.to(dtype.to_complex())
        xn = x.to("npu")
        extra = (window,) if name == "stft" else ()
        extra_n = tuple(t.to("npu") for t in extra)
        cpu = lambda: fn(x, *extra)  # noqa: E731
        npu = synced(lambda: fn(xn, *extra_n))
        cpu(), npu()
        numel = x.numel()
        repeat = 20 if numel <= 1 << 16 else 5
        tc, tn = best_of_each([cpu, npu], repeat=repeat)
        shape_s = "x".join(str(s) for s in shape)
        print(f"{name:8s} {shape_s:>14s} {tc * 1e3:8.3f} {tn * 1e3:8.3f} {tn / tc:8.2f}", flush=True)


if __name__ == "__main__":
    main()
