"""Fits the coefficients of the polynomials in kernels/src/fast_math.h and reports their error: fast_erf's
kP and kQ, and fast_log's kR.

erf(t) ~ t * P(t^2) on [0, SPLIT] (relative fit, degree 5) and erf(t) ~ Q(t - CENTER) on [SPLIT, 3.92]
(absolute fit, degree 12; erf >= 0.84 there, so absolute error is ulp error). Both by iteratively
reweighted least squares (Lawson) on Chebyshev nodes, which approaches the minimax fit; the coefficients
are rounded to float and evaluated by float Horner with FMA (emulated in double, rounded each step)
against double erf.

log1p(f) ~ f - f^2/2 + f^3 R(f) on [sqrt(1/2) - 1, sqrt(2) - 1] (relative fit of R, degree 7), evaluated the
way fast_log does. Usage: python tools/fit_fast_math.py
"""
import math

import numpy as np

SPLIT, TOP, P_DEGREE, Q_DEGREE = 1.0, 3.92, 5, 12
CENTER = float(np.float32((SPLIT + TOP) / 2))  # the kernel subtracts this float


def chebyshev_nodes(lo, hi, n=6000):
    k = np.arange(n)
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / n)


def lawson(x, y, degree, scale, rounds=60):
    vander = np.vander(x, degree + 1)
    w = np.ones(len(x))
    for _ in range(rounds):
        sw = np.sqrt(w) * scale
        coef, *_ = np.linalg.lstsq(vander * sw[:, None], y * sw, rcond=None)
        w = w * np.abs(vander @ coef - y) * scale
        w /= w.sum()
    return coef.astype(np.float32)


def float_horner(coef, s):
    q = np.full_like(s, coef[0])
    for c in coef[1:]:
        q = (q.astype(np.float64) * s + float(c)).astype(np.float32)  # one rounding per FMA
    return q


def max_ulps(got, ref):
    """Largest error of float results `got` against double `ref`, in float ulps of ref (ref != 0)."""
    return float(np.max(np.abs(got - ref) / np.spacing(np.abs(ref).astype(np.float32))))


def erf_ref(t):
    return np.array([math.erf(float(v)) for v in t])


def fit_log(degree=7):
    lo, hi = math.sqrt(0.5) - 1, math.sqrt(2) - 1
    f = chebyshev_nodes(lo, hi)
    f = f[np.abs(f) > 1e-3]  # R's own value near 0 is well determined by the neighbours
    y = np.array([(math.log1p(v) - v + v * v / 2) / v**3 for v in f])
    kr = lawson(f, y, degree, 1 / np.abs(y))
    ff = np.linspace(lo, hi, 400_001).astype(np.float32)
    z = (ff * ff).astype(np.float32)
    tail = ((ff.astype(np.float64) * z * float_horner(kr, ff)).astype(np.float32) - np.float32(0.5) * z)
    got = (ff + tail.astype(np.float32)).astype(np.float32)
    ref = np.array([math.log1p(float(v)) for v in ff])
    ok = ref != 0
    err = max_ulps(got[ok], ref[ok])
    print(f"log1p(f) on the mantissa range: R degree {degree}, {err:.2f} ulp")
    print("kR = {" + ", ".join(f"{c:.9e}f" for c in kr) + "}")


def main():
    t = chebyshev_nodes(0, SPLIT)
    y = np.array([math.erf(v) for v in t]) / t
    kp = lawson(t * t, y, P_DEGREE, 1 / y)
    t = chebyshev_nodes(SPLIT, TOP)
    kq = lawson(t - CENTER, np.array([math.erf(v) for v in t]), Q_DEGREE, np.ones(len(t)))

    tp = np.linspace(1e-3, SPLIT, 500_001).astype(np.float32)
    p = (tp * float_horner(kp, (tp * tp).astype(np.float32))).astype(np.float32)
    tq = np.linspace(SPLIT, TOP, 1_000_001).astype(np.float32)
    q = float_horner(kq, (tq - np.float32(CENTER)).astype(np.float32))
    print(f"P (t < {SPLIT}): degree {P_DEGREE}, {max_ulps(p, erf_ref(tp)):.2f} ulp; "
          f"Q (t - {CENTER}): degree {Q_DEGREE}, {max_ulps(q, erf_ref(tq)):.2f} ulp, Q({TOP}) = {q[-1]!r}, max Q {q.max()!r}")
    for name, coef in (("kP", kp), ("kQ", kq)):
        print(name + " = {" + ", ".join(f"{c:.9e}f" for c in coef) + "}")
    fit_log()


if __name__ == "__main__":
    main()
