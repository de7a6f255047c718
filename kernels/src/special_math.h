// Special functions of the pointwise catalogue (digamma, trigamma, erfinv), evaluated in double: series
// after a recurrence for the gamma family, a closed-form start refined by Newton steps for erfinv.
#pragma once

#include <math.h>  // lgamma_r, lgammaf_r

#include <cmath>
#include <limits>

namespace npu_kernels::detail {

// log|Gamma(x)| without libm's global signgam, which std::lgamma writes: a data race between AI-core threads
// (ThreadSanitizer found it in two concurrent Poisson launches).
inline double lgamma_nosign(double x) {
  int sign;
  return ::lgamma_r(x, &sign);
}
inline float lgamma_nosign(float x) {
  int sign;
  return ::lgammaf_r(x, &sign);
}

// psi(x): poles at 0 and the negative integers (psi(+-0) = -+inf, as in ATen), reflection for x < 0,
// the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic (Bernoulli) series.
inline double digamma(double x) {
  constexpr double kPi = 3.14159265358979323846;
  if (x == 0) return std::copysign(std::numeric_limits<double>::infinity(), -x);
  double result = 0;
  if (x < 0) {
    if (x == std::trunc(x)) return std::numeric_limits<double>::quiet_NaN();
    result = -kPi / std::tan(kPi * x);
    x = 1 - x;
  }
  for (; x < 10; x += 1) result -= 1 / x;
  const double y = 1 / (x * x);
  const double tail = y * (1.0 / 12 - y * (1.0 / 120 - y * (1.0 / 252 - y * (1.0 / 240 - y * (1.0 / 132)))));
  return result + std::log(x) - 0.5 / x - tail;
}

// psi'(x): reflection psi'(x) + psi'(1 - x) = pi^2 / sin^2(pi x) for x < 1/2, recurrence, asymptotic series.
inline double trigamma(double x) {
  constexpr double kPi = 3.14159265358979323846;
  double sign = 1, result = 0;
  if (x < 0.5) {
    const double s = std::sin(kPi * x);
    if (s == 0) return std::numeric_limits<double>::infinity();
    sign = -1;
    result = kPi * kPi / (s * s);
    x = 1 - x;
  }
  double acc = 0;
  for (; x < 10; x += 1) acc += 1 / (x * x);
  const double r = 1 / x, r2 = r * r;
  acc += r + r2 / 2 + r * r2 * (1.0 / 6 - r2 * (1.0 / 30 - r2 * (1.0 / 42 - r2 * (1.0 / 30))));
  return result + sign * acc;
}

// erf^-1(x): Winitzki's closed form (relative error ~2e-3) refined by Newton on erf, or on erfc for
// |x| >= 1/2 so that 1 - |x| is never rounded away; +-1 -> +-inf, outside [-1, 1] -> NaN.
inline double erfinv(double x) {
  if (!(x >= -1 && x <= 1)) return std::numeric_limits<double>::quiet_NaN();
  if (x == 1 || x == -1) return std::copysign(std::numeric_limits<double>::infinity(), x);
  if (x == 0) return x;
  constexpr double kA = 0.147, kPi = 3.14159265358979323846, kTwoOverSqrtPi = 1.12837916709551257390;
  const double ax = std::fabs(x), rest = 1 - ax;  // exact for ax >= 1/2
  const double l = std::log(rest * (1 + ax)), t = 2 / (kPi * kA) + l / 2;
  double y = std::sqrt(std::sqrt(t * t - l / kA) - t);
  for (int i = 0; i < 4; ++i) {
    const double f = ax < 0.5 ? std::erf(y) - ax : rest - std::erfc(y);
    y -= f / (kTwoOverSqrtPi * std::exp(-y * y));
  }
  return std::copysign(y, x);
}

}  // namespace npu_kernels::detail
