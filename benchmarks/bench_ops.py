"""Ops of the rest of the op table on npu against CPU eager PyTorch in the same run, interleaved: grid_sample (2-D
bilinear and bicubic, 3-D trilinear; forward and forward + backward), torch.special (Bessel J0 / I0e / K1, erfcx,
ndtri, igamma, zeta, Chebyshev T, Hermite H, Laguerre and Legendre polynomials), logcumsumexp, renorm, max_unpool2d and embedding_bag (sum, weighted,
max; mean forward + backward), float32; npu_quant_matmul (int8) against CPU's torch._int_mm and scale; cdist, histc, ctc_loss,
bicubic / trilinear interpolation; antialiased image resizing (uint8 and float32, torchvision's Resize); complex64
mm (a conj operand), exp, sum and var. Prints ms per call and
npu/cpu (lower is better). Usage: python benchmarks/bench_ops.py [--quick]"""
import argparse
import datetime

import torch
import torch.nn.functional as F

import torch_npu_sim  # noqa: F401
from _common import best_of_each, synced
from bench_linalg import cpu_name


def grid_cases(quick):
    n = 4 if quick else 8
    x2, g2 = torch.randn(n, 32, 64, 64), torch.rand(n, 64, 64, 2) * 2 - 1
    x3, g3 = torch.randn(2, 16, 16, 32, 32), torch.rand(2, 16, 32, 32, 3) * 2 - 1

    def fwd(mode):
        return lambda x, g: F.grid_sample(x, g, mode=mode, align_corners=False)

    def fwd_bwd(mode):
        def run(x, g):
            x, g = x.detach().requires_grad_(), g.detach().requires_grad_()
            F.grid_sample(x, g, mode=mode, align_corners=False).sum().backward()
        return run

    return [("grid_sample 2d bilinear", f"{n}x32x64x64", fwd("bilinear"), (x2, g2)),
            ("grid_sample 2d bicubic", f"{n}x32x64x64", fwd("bicubic"), (x2, g2)),
            ("grid_sample 2d bilinear fwd+bwd", f"{n}x32x64x64", fwd_bwd("bilinear"), (x2, g2)),
            ("grid_sample 3d trilinear", "2x16x16x32x32", fwd("bilinear"), (x3, g3)),
            ("grid_sample 3d trilinear fwd+bwd", "2x16x16x32x32", fwd_bwd("bilinear"), (x3, g3))]


def special_cases(quick):
    m = 1 << (18 if quick else 20)
    x = torch.rand(m) * 20 + 0.1
    p = torch.rand(m).clamp_(1e-6, 1 - 1e-6)
    a = torch.rand(m) * 10 + 0.1
    s = torch.rand(m) * 4 + 1.5
    xs = torch.rand(m) * 2 - 1
    deg = torch.full((m,), 12.0)
    S = torch.special
    return [("special.bessel_j0", f"{m}", lambda t: S.bessel_j0(t), (x,)),
            ("special.i0e", f"{m}", lambda t: S.i0e(t), (x,)),
            ("special.modified_bessel_k1", f"{m}", lambda t: S.modified_bessel_k1(t), (x,)),
            ("special.erfcx", f"{m}", lambda t: S.erfcx(t), (x,)),
            ("special.ndtri", f"{m}", lambda t: S.ndtri(t), (p,)),
            ("igamma", f"{m}", lambda u, v: torch.igamma(u, v), (a, x)),
            ("special.zeta", f"{m}", lambda u, v: S.zeta(u, v), (s, x)),
            ("special.chebyshev_polynomial_t n=12", f"{m}", lambda u, v: S.chebyshev_polynomial_t(u, v), (xs, deg)),
            ("special.hermite_polynomial_h n=12", f"{m}", lambda u, v: S.hermite_polynomial_h(u, v), (xs, deg)),
            ("special.laguerre_polynomial_l n=12", f"{m}", lambda u, v: S.laguerre_polynomial_l(u, v), (xs, deg)),
            ("special.legendre_polynomial_p n=12", f"{m}", lambda u, v: S.legendre_polynomial_p(u, v), (xs, deg))]


def other_cases(quick):
    n = 8 if quick else 32
    y, idx = F.max_pool2d(torch.randn(n, 64, 64, 64), 2, return_indices=True)
    return [("logcumsumexp dim=1", "256x4096", lambda t: torch.logcumsumexp(t, 1), (torch.randn(256, 4096),)),
            ("renorm p=2 dim=0", "1024x1024", lambda t: torch.renorm(t, 2, 0, 5.0), (torch.randn(1024, 1024),)),
            ("max_unpool2d", f"{n}x64x32x32", lambda t, i: F.max_unpool2d(t, i, 2), (y, idx))]


def embedding_bag_cases(quick):
    rows, bags, per_bag = (100_000, 1024, 20) if quick else (1_000_000, 4096, 40)
    w = torch.randn(rows, 64)
    idx = torch.randint(0, rows, (bags * per_bag,))
    off = torch.arange(0, bags * per_bag, per_bag)
    psw = torch.rand(bags * per_bag)

    def fwd_bwd(w, i, o):
        w = w.detach().requires_grad_()
        F.embedding_bag(i, w, o, mode="mean").sum().backward()

    shape = f"{rows}x64 {bags}x{per_bag}"
    return [("embedding_bag sum", shape, lambda w, i, o: F.embedding_bag(i, w, o, mode="sum"), (w, idx, off)),
            ("embedding_bag sum per_sample_weights", shape,
             lambda w, i, o, p: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p), (w, idx, off, psw)),
            ("embedding_bag max", shape, lambda w, i, o: F.embedding_bag(i, w, o, mode="max"), (w, idx, off)),
            ("embedding_bag mean fwd+bwd", shape, fwd_bwd, (w, idx, off))]


def quant_cases(quick):
    """npu_quant_matmul (int8 GEMM, int32 accumulation, dequantized to float16) against CPU eager's same sequence:
    torch._int_mm, then the scale in float32 and the cast."""
    m, k, n = (256, 1024, 1024) if quick else (1024, 4096, 4096)
    x1 = torch.randint(-128, 128, (m, k), dtype=torch.int8)
    x2 = torch.randint(-128, 128, (k, n), dtype=torch.int8)
    scale = torch.rand(n) * 1e-3
    npu = lambda a, b, s: torch_npu_sim.npu_quant_matmul(a, b, s, output_dtype=torch.float16)  # noqa: E731
    cpu = lambda a, b, s: (torch._int_mm(a, b).float() * s).half()  # noqa: E731
    return [("npu_quant_matmul int8 -> fp16", f"{m}x{k}x{n}", npu, (x1, x2, scale), cpu)]


def new_op_cases(quick):
    """This session's native ops: cdist (p = 2 on the mm path, p = 1 direct) fwd+bwd, histc, ctc_loss fwd+bwd,
    bicubic and trilinear interpolation fwd+bwd."""
    n = 512 if quick else 2048
    a, b = torch.randn(n, 64), torch.randn(n // 2, 64)
    h = torch.randn(1 << (20 if quick else 22))
    T, N, C, S = 100, 16, 30, 20
    lp = torch.randn(T, N, C).log_softmax(2)
    tgt = torch.randint(1, C, (N, S))
    x2, x3 = torch.randn(8, 16, 64, 64), torch.randn(2, 8, 16, 32, 32)

    def fwd_bwd(fn):
        def run(*args):
            args = [t.detach().requires_grad_() if t.is_floating_point() else t for t in args]
            fn(*args).sum().backward()
        return run

    ctc = lambda x, t: F.ctc_loss(x, t, [T] * N, [S] * N)  # noqa: E731
    return [("cdist p=2 fwd+bwd", f"{n}x{n // 2}x64", fwd_bwd(lambda x, y: torch.cdist(x, y)), (a, b)),
            ("cdist p=1 fwd+bwd", f"{n}x{n // 2}x64", fwd_bwd(lambda x, y: torch.cdist(x, y, p=1)), (a, b)),
            ("histc 100 bins", f"{h.numel()}", lambda t: torch.histc(t, 100, -3, 3), (h,)),
            ("ctc_loss fwd+bwd", f"T{T} N{N} C{C} S{S}", fwd_bwd(ctc), (lp, tgt)),
            ("interpolate bicubic x2 fwd+bwd", "8x16x64x64",
             fwd_bwd(lambda t: F.interpolate(t, scale_factor=2, mode="bicubic")), (x2,)),
            ("interpolate trilinear x2 fwd+bwd", "2x8x16x32x32",
             fwd_bwd(lambda t: F.interpolate(t, scale_factor=2, mode="trilinear")), (x3,))]


def resize_cases(quick):
    """torchvision's Resize: a batch of 480x640 images to 224x224 with antialiasing (uint8 in PIL's integers, and
    float32), uint8 bilinear without it, and the float32 antialiased resize fwd+bwd."""
    n = 2 if quick else 8
    img = torch.randint(0, 256, (n, 3, 480, 640), dtype=torch.uint8)
    imgf = img.float() / 255
    feat = torch.randn(n, 16, 128, 128)

    def resize(mode, antialias=True, size=(224, 224)):
        return lambda t: F.interpolate(t, size=size, mode=mode, antialias=antialias)

    def fwd_bwd(t):
        t = t.detach().requires_grad_()
        F.interpolate(t, size=(48, 48), mode="bilinear", antialias=True).sum().backward()

    return [("resize aa bilinear uint8", f"{n}x3x480x640", resize("bilinear"), (img,)),
            ("resize aa bicubic uint8", f"{n}x3x480x640", resize("bicubic"), (img,)),
            ("resize bilinear uint8 (no aa)", f"{n}x3x480x640", resize("bilinear", False, (240, 320)), (img,)),
            ("resize aa bilinear float32", f"{n}x3x480x640", resize("bilinear"), (imgf,)),
            ("resize aa bicubic float32", f"{n}x3x480x640", resize("bicubic"), (imgf,)),
            ("resize aa bilinear fwd+bwd", f"{n}x16x128x128", fwd_bwd, (feat,))]


def complex_cases(quick):
    """complex64: the GEMM (OpenBLAS cgemm, a conj operand as autograd passes it), a transcendental, a reduction."""
    n = 256 if quick else 1024
    a, b = torch.randn(n, n, dtype=torch.complex64), torch.randn(n, n, dtype=torch.complex64)
    z = torch.randn(1 << (18 if quick else 22), dtype=torch.complex64)
    return [("mm complex64 (B conj)", f"{n}x{n}x{n}", lambda x, y: x @ y.conj(), (a, b)),
            ("exp complex64", f"{z.numel()}", lambda t: torch.exp(t), (z,)),
            ("sum complex64", f"{z.numel()}", lambda t: t.sum(), (z,)),
            ("var complex64", f"{z.numel()}", lambda t: t.var(), (z,))]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="smaller sizes")
    p.add_argument("--only", default="", help="comma-separated words: run only the cases whose name contains one")
    args = p.parse_args()
    torch.manual_seed(0)
    print(f"# bench_ops {datetime.date.today()} {cpu_name()}, {torch.get_num_threads()} CPU threads, float32")
    print(f"{'op':36s} {'shape':>14s} {'cpu ms':>8s} {'npu ms':>8s} {'npu/cpu':>8s}")
    cases = (grid_cases(args.quick) + special_cases(args.quick) + other_cases(args.quick) +
             embedding_bag_cases(args.quick) + quant_cases(args.quick) + new_op_cases(args.quick) +
             resize_cases(args.quick) + complex_cases(args.quick))
    for name, shape, fn, args_cpu, *cpu_fn in cases:
        if args.only and not any(w in name for w in args.only.split(",")):
            continue
        args_npu = tuple(t.to("npu") for t in args_cpu)
        cpu = lambda: (cpu_fn[0] if cpu_fn else fn)(*args_cpu)  # noqa: E731
        npu = synced(lambda: fn(*args_npu))
        cpu()
        tc, tn = best_of_each([cpu, npu], repeat=5)
        print(f"{name:36s} {shape:>14s} {tc * 1e3:8.2f} {tn * 1e3:8.2f} {tn / tc:8.2f}", flush=True)


if __name__ == "__main__":
    main()
