// lgamma without libm's global sign and digamma, in double, for the pointwise catalogue and the samplers (trigamma
// and erfinv are in special_functions.h, on Boost.Math).
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

}  // namespace npu_kernels::detail
