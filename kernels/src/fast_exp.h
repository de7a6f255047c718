// Branch-free float exp the compiler can vectorise at baseline x86-64 (libm's expf is a scalar call):
// Cephes-style range reduction x = n*ln2 + r, |r| <= ln2/2, degree-6 polynomial, 2^n built in the
// exponent bits. Max error ~2 ulp over the normal range; underflows to 0 below -87.3, inf above 88.7,
// NaN passes through. Double keeps std::exp.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace npu_kernels::detail {

inline float fast_exp(float x) {
  const float xc = x < -87.3f ? -87.3f : (x > 88.7f ? 88.7f : x);
  const float t = xc * 1.44269504088896341f;
  const int32_t n = static_cast<int32_t>(t + (t >= 0.0f ? 0.5f : -0.5f));
  const float fn = static_cast<float>(n);
  float r = xc - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  const int32_t bits = (n + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  float v = y * scale;
  v = x < -87.3f ? 0.0f : v;
  v = x > 88.7f ? HUGE_VALF : v;
  return x != x ? x : v;
}

inline double fast_exp(double x) { return std::exp(x); }

}  // namespace npu_kernels::detail
