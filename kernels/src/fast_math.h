// Branch-free float exp / tanh / erf / sigmoid the compiler can vectorise at baseline x86-64 (libm's expf and
// tanhf are scalar calls). exp: Cephes-style range reduction x = n*ln2 + r, |r| <= ln2/2, degree-6
// polynomial, 2^n built in the exponent bits; max error ~2 ulp over the normal range (subnormal results
// as libm's, 0 below -103.97), inf above ln(FLT_MAX), NaN passes through. sigmoid: one exp(-|x|). tanh: an
// odd polynomial below |x| = 0.625, 1 - 2 / (exp(2|x|) + 1) above (~2 ulp). erf: polynomials only (below).
// Double keeps libm.
// Files using these need -fno-trapping-math (kernels/CMakeLists.txt) so the selects if-convert.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

// The pointwise translation units instantiate these in hundreds of loops; past GCC's inline-unit-growth
// limit a call is left out of line, and a loop with a call stays scalar (tanh-gelu ran 10x slower in one
// instantiation than in the next). Forcing the inline keeps every call site vectorisable.
#define NPU_VEC_INLINE inline __attribute__((always_inline))

namespace npu_kernels::detail {

// exp(z) = 2^n * exp(r) with |r| <= ln2/2 (Cephes-style): returns exp(r) (~1 ulp) and n, read from the
// low bits of the rounding shifter's sum instead of a float->int conversion. z in [-104, 88.8].
struct ExpParts {
  float y;
  int32_t n;
};

NPU_VEC_INLINE ExpParts exp_parts(float z) {
  constexpr float kShifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer (branch-free, any ISA)
  const float t = z * 1.44269504088896341f + kShifter;
  const float fn = t - kShifter;
  float r = z - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  int32_t tb, sb;
  std::memcpy(&tb, &t, 4);
  std::memcpy(&sb, &kShifter, 4);
  return {p * r * r + r + 1.0f, static_cast<int32_t>(static_cast<uint32_t>(tb) - static_cast<uint32_t>(sb))};
}

NPU_VEC_INLINE float bits_to_float(int32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// 2^(e - 127) for a biased exponent e in [1, 254]; any e is defined behaviour (garbage lanes, e.g. NaN's).
NPU_VEC_INLINE float pow2_biased(int32_t e) {
  return bits_to_float(static_cast<int32_t>(static_cast<uint32_t>(e) << 23));
}

NPU_VEC_INLINE float fast_exp(float x) {
  // The clamp's bounds make the edges fall out of the arithmetic, with no select for them: exp(-104) < 2^-150
  // rounds to 0, and 2^n y overflows to inf just past ln(FLT_MAX) (88.72), so at 88.8 it is inf. A NaN compares
  // false and takes kLo (the two compares are maxps / minps), then is put back. (Three more selects for the
  // edges cost ~20% of the function.)
  constexpr float kLo = -104.0f, kHi = 88.8f;
  float xc = x > kLo ? x : kLo;
  xc = xc < kHi ? xc : kHi;
  const ExpParts e = exp_parts(xc);
  // 2^n (n in [-150, 128]) as two normal factors: the product rounds once, to a subnormal for n < -126 as libm
  // does, to inf for n = 128 with y > 1
  const int32_t n1 = e.n >> 1, n2 = e.n - n1;
  const float v = e.y * pow2_biased(n1 + 127) * pow2_biased(n2 + 127);
  return x != x ? x : v;
}

inline double fast_exp(double x) { return std::exp(x); }

NPU_VEC_INLINE float fast_tanh(float x) {
  const float ax = std::fabs(x), z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = x * (1.0f + p * z);  // keeps the sign of -0
  const float large = std::copysign(1.0f - 2.0f / (fast_exp(2.0f * ax) + 1.0f), x);
  return ax < 0.625f ? small : large;
}

inline double fast_tanh(double x) { return std::tanh(x); }

// erf: x * P(x^2) below |x| = 1; above, one polynomial Q(|x| - 2.46) of degree 12, clamped at |x| = 3.92
// (where erf rounds to 1 in float). No exp and no divide: gelu, which is erf-bound, stays near memory
// speed. P and Q come from tools/fit_fast_math.py (iteratively reweighted least squares on Chebyshev
// nodes); max error ~2.4 ulp against double erf over [-6, 6]. Q's error is absolute (< 1e-7), which is
// under 2 ulp because erf >= 0.84 there.
// erf(t) for t >= 0 (NaN passes through): the two polynomials without sign handling.
NPU_VEC_INLINE float erf_nonneg(float t) {
  constexpr float kP[] = {-5.631577806e-04f, 4.917594604e-03f, -2.671135403e-02f,
                          1.128018200e-01f,  -3.761232793e-01f, 1.128379107e+00f};
  constexpr float kQ[] = {-9.124727512e-06f, 2.542049333e-05f,  5.166672781e-05f,  -3.016753471e-04f,
                          3.911311796e-04f,  4.621666740e-04f,  -2.963509178e-03f, 6.797654089e-03f,
                          -9.904826060e-03f, 9.832994081e-03f,  -6.535761990e-03f, 2.656192984e-03f,
                          9.994966984e-01f};
  const float z = t * t;
  float p = kP[0];
  for (int i = 1; i < 6; ++i) p = p * z + kP[i];
  // Q(3.92 - 2.46) rounds to exactly 1 and Q stays <= 1 below it, so clamping t is the whole saturation;
  // a NaN t fails both comparisons and stays NaN.
  const float s = (t > 3.92f ? 3.92f : t) - 2.46f;
  float q = kQ[0];
  for (int i = 1; i < 13; ++i) q = q * s + kQ[i];
  return t < 1.0f ? t * p : q;
}

inline double erf_nonneg(double t) { return std::erf(t); }

NPU_VEC_INLINE float fast_erf(float x) { return std::copysign(erf_nonneg(std::fabs(x)), x); }

inline double fast_erf(double x) { return std::erf(x); }

// gelu(x) = x/2 (1 + erf(x/sqrt2)) = (x + |x| erf(|x|/sqrt2)) / 2: no sign to restore, one fused multiply-add.
template <typename C>
NPU_VEC_INLINE C gelu_erf(C x) {
  const C ax = std::fabs(x);
  return C(0.5) * (x + ax * erf_nonneg(ax * C(0.70710678118654752440)));
}

// log: x = 2^e * m with m in [sqrt(1/2), sqrt(2)), log(x) = e ln2 + log1p(f) with f = m - 1 in
// [-0.293, 0.415] and log1p(f) = f - f^2/2 + f^3 R(f), R of degree 7 from tools/fit_fast_math.py (relative,
// ~1 ulp on the mantissa part); ln2 split in two so e ln2 adds no rounding of its own. Subnormal inputs are
// scaled by 2^23 first. 0 -> -inf, x < 0 -> NaN, +inf -> +inf, NaN passes through.
NPU_VEC_INLINE float fast_log(float x) {
  constexpr float kR[] = {-7.974110544e-02f, 1.265565157e-01f,  -1.298929155e-01f, 1.420995146e-01f,
                          -1.664158106e-01f, 2.000120133e-01f,  -2.500030398e-01f, 3.333333135e-01f};
  const bool sub = x < 1.17549435e-38f;  // subnormal, zero or negative: the last two are replaced below
  const float xs = sub ? x * 8388608.0f : x;
  uint32_t bits;
  std::memcpy(&bits, &xs, 4);
  int32_t e = static_cast<int32_t>((bits >> 23) & 0xffu) - (sub ? 150 : 127);
  float m = bits_to_float(static_cast<int32_t>((bits & 0x007fffffu) | 0x3f800000u));  // [1, 2)
  const bool halve = m > 1.41421356f;
  m = halve ? m * 0.5f : m;
  e = halve ? e + 1 : e;
  const float f = m - 1.0f, z = f * f, fe = static_cast<float>(e);
  float r = kR[0];
  for (int i = 1; i < 8; ++i) r = r * f + kR[i];
  const float y = f + (f * z * r + fe * -2.12194440e-4f - 0.5f * z) + fe * 0.693359375f;
  const float special = x == 0.0f ? -HUGE_VALF : (x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : x);
  return (x > 0.0f && x < HUGE_VALF) ? y : special;  // NaN and +inf come back as themselves
}

inline double fast_log(double x) { return std::log(x); }

// sin and cos of 2*pi*u for u in [0, 1] (turns, Box-Muller's angle): 4u = j + f exactly, with j the nearest
// quadrant and f in [-1/2, 1/2], so the angle is j*pi/2 + r with r = f*pi/2 in [-pi/4, pi/4] and no rounding in
// the reduction; Cephes' sinf / cosf polynomials on r (~1 ulp), the quadrant's swap and signs by selects.
NPU_VEC_INLINE void fast_sincos_turns(float u, float& sin_out, float& cos_out) {
  const float x = 4.0f * u;
  const float j = std::nearbyint(x);
  const float r = (x - j) * 1.57079632679f, z = r * r;
  const float s = r + r * z * ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f);
  const float c = 1.0f - 0.5f * z + z * z * ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z +
                                             4.166664568298827e-2f);
  const int q = static_cast<int>(j) & 3;
  const float sv = (q & 1) ? c : s, cv = (q & 1) ? s : c;
  sin_out = (q & 2) ? -sv : sv;
  cos_out = ((q + 1) & 2) ? -cv : cv;
}

// log1p(u) = log(w) + (u - (w - 1)) / w with w = 1 + u rounded: the second term restores what the rounding
// of w lost (exactly u when w rounds to 1). -1 -> -inf, below -1 -> NaN, +inf -> +inf.
NPU_VEC_INLINE float fast_log1p(float u) {
  const float w = 1.0f + u;
  const float y = fast_log(w) + (u - (w - 1.0f)) / w;
  return (u > -1.0f && u < HUGE_VALF) ? y : fast_log(w);
}

inline double fast_log1p(double u) { return std::log1p(u); }

// softplus(z) = log(1 + e^z) = max(z, 0) + log1p(e^-|z|): the exp cannot overflow and the log1p argument is
// in (0, 1].
template <typename C>
NPU_VEC_INLINE C softplus_exact(C z) {
  return std::max(z, C(0)) + fast_log1p(fast_exp(-std::fabs(z)));
}

// sigmoid(x) = (x >= 0 ? 1 : e) / (1 + e) with e = exp(-|x|) in [0, 1]: one exp that cannot overflow, so
// no overflow lanes to fix up, and the subnormal results of x < -87.3 stay exact (1 + e rounds to 1).
NPU_VEC_INLINE float fast_sigmoid(float x) {
  constexpr float kLo = -104.0f;  // exp(kLo) < 2^-150: rounds to 0
  const float z = -std::fabs(x);
  const ExpParts p = exp_parts(z < kLo ? kLo : z);  // a NaN lane computes garbage, replaced below
  // 2^n for n in [-150, 0] as 2^(n + 24) * 2^-24: the first factor is normal, the product rounds once.
  const float e = p.y * pow2_biased(p.n + 127 + 24) * 5.9604644775390625e-8f;
  const float v = (x >= 0.0f ? 1.0f : e) / (1.0f + e);
  return x != x ? x : v;
}

inline double fast_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// tanh-approximated gelu: 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3). One exp and
// one divide; tanh's form costs a polynomial branch more and cancels in 1 + tanh(u) for negative u.
constexpr double kGeluTanhTwoBeta = 2 * 0.79788456080286535588, kGeluTanhKappa = 0.044715;
template <typename C>
NPU_VEC_INLINE C gelu_tanh(C x) {
  return x * fast_sigmoid(C(kGeluTanhTwoBeta) * (x + C(kGeluTanhKappa) * x * x * x));
}

// d gelu_tanh / dx = s + x s (1 - s) 2u', s = sigmoid(2u), 2u' = 2 sqrt(2/pi) (1 + 3 * 0.044715 x^2)
template <typename C>
NPU_VEC_INLINE C gelu_tanh_derivative(C x) {
  const C x_sq = x * x;
  const C s = fast_sigmoid(C(kGeluTanhTwoBeta) * (x + C(kGeluTanhKappa) * x_sq * x));
  return s + x * s * (C(1) - s) * C(kGeluTanhTwoBeta) * (C(1) + C(3 * kGeluTanhKappa) * x_sq);
}

}  // namespace npu_kernels::detail
