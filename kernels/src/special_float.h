// Branch-free float32 special functions that the compiler vectorises: Bessel J0 J1 Y0 Y1, I0 I1 K0 K1 and the
// exponentially scaled I and K, the spherical j0, the Chebyshev polynomials T U V W, erfinv, lgamma and ndtri.
// Every piece is evaluated and the lane's piece selected. The polynomials are tools/fit_special_float.py's
// near-minimax fits against mpmath (special_float_coef.h; ~2-4 ulp each). The forms (the others at their function):
//   I_nu(x), |x| <= 8: the series in t = x^2/4, 1 + t P(t) (I1: times x/2); beyond, exp(x) P(8/x) / sqrt(x).
//   K_nu(x), x <= 2: the log term of the series, -+log(x/2) I_nu(x) (+ 1/x for K1), and a polynomial rest in t;
//     2 < x <= 8: exp(-x) P(x) / sqrt(x); beyond, exp(-x) P(8/x) / sqrt(x).
//   J_nu(x), |x| <= 5: a polynomial in z = x^2 times the factors (z - j^2) of its zeros below 5 (z split
//     exactly by an fma); Y_nu = 2/pi log(x) J_nu (- 2/(pi x) for Y1) + a polynomial rest. Beyond 5, the
//     modulus and phase: M(x) cos or sin(x - (2 nu + 1) pi/4 + phase(x)), x reduced by pi/2 in double, exact
//     for |x| < 2^40; larger |x| are exceptional and go to bessel_jy_far (double, libm) one at a time.
//   ndtri(p), |p - 1/2| <= 0.425: q P(q^2), q = p - 1/2; tails: -+T(s), s = sqrt(-log(min(p, 1 - p))), two pieces.
// Values at the edges (0, infinities, NaN, outside the domain) are ATen's.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "fast_math.h"
#include "special_float_coef.h"

namespace npu_kernels::detail {

namespace special_float {

// P(w) by Horner with w = v * scale[0] + scale[1], as the fit evaluated it.
template <std::size_t N>
NPU_VEC_INLINE float poly(const float (&c)[N], const float (&scale)[2], float v) {
  const float w = v * scale[0] + scale[1];
  float p = c[0];
  for (std::size_t i = 1; i < N; ++i) p = p * w + c[i];
  return p;
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kTwoOverPi = 0.636619772367581343f;

// (z - r) for z = hi + lo (a^2 split by an fma) and r = r[0] + r[1]
NPU_VEC_INLINE float minus_root(float hi, float lo, const float (&r)[2]) { return (hi - r[0]) + (lo - r[1]); }

// cos and sin of a + offset - quarter_turns pi/2, |a| < 2^40, |offset| <= pi/2: a - n pi/2 in double by two fmas
// (pi/2 split in two doubles), the offset added, reduced once more, then float polynomials on [-pi/4, pi/4] and
// the quadrant's swap and signs.
struct CosSin {
  float c, s;
};
NPU_VEC_INLINE CosSin cos_sin(double a, double offset, int32_t quarter_turns) {
  constexpr double kShift = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
  constexpr double kTwoOverPiD = 0.63661977236758134308, kPio2Hi = 1.5707963267948966,
                   kPio2Lo = 6.123233995736766e-17;
  const double t1 = a * kTwoOverPiD + kShift;
  const double n1 = t1 - kShift;
  double r = std::fma(-n1, kPio2Hi, a);
  r = std::fma(-n1, kPio2Lo, r) + offset;
  const double t2 = r * kTwoOverPiD + kShift;
  const double n2 = t2 - kShift;
  r = std::fma(-n2, kPio2Hi, r);
  int64_t b1, b2;
  std::memcpy(&b1, &t1, 8);
  std::memcpy(&b2, &t2, 8);
  const int32_t q = static_cast<int32_t>(b1) + static_cast<int32_t>(b2) - quarter_turns;  // low bits: n1 + n2
  const float x = static_cast<float>(r), z = x * x;
  const float sr = x + x * z * poly(kSin, kSinScale, z);
  const float cr = 1.0f - 0.5f * z + z * z * poly(kCos, kCosScale, z);
  const bool swap = (q & 1) != 0;
  const float c0 = swap ? sr : cr, s0 = swap ? cr : sr;
  return {((q + 1) & 2) != 0 ? -c0 : c0, (q & 2) != 0 ? -s0 : s0};
}

// I0(x) and I1(x) / (x/2) for t = x^2/4 <= 16: 1 + t P(t), exactly 1 at 0 (a tiny x rounds as it should)
NPU_VEC_INLINE float i0_series(float t) { return 1.0f + t * poly(kI0Small, kI0SmallScale, t); }
NPU_VEC_INLINE float i1_series(float t) { return 1.0f + t * poly(kI1Small, kI1SmallScale, t); }

}  // namespace special_float

// I_nu(x) (Scaled: exp(-|x|) I_nu(x)), nu = 0 or 1.
template <int Nu, bool Scaled>
NPU_VEC_INLINE float bessel_i_float(float x) {
  using namespace special_float;
  const float a = std::fabs(x), t = 0.25f * a * a;
  const float series = Nu == 0 ? i0_series(t) : 0.5f * a * i1_series(t);
  const float u = 8.0f / a;
  const float tail = (Nu == 0 ? poly(kI0Large, kI0LargeScale, u) : poly(kI1Large, kI1LargeScale, u)) / std::sqrt(a);
  float v;
  if constexpr (Scaled) {
    v = a <= 8.0f ? series * fast_exp(-a) : tail;
  } else {
    v = a <= 8.0f ? series : tail * fast_exp(a);  // inf once exp(a) overflows, as ATen's float kernel
    v = a == kInf ? kNaN : v;
  }
  return Nu == 1 && x < 0.0f ? -v : v;
}

// K_nu(x) (Scaled: exp(x) K_nu(x)), nu = 0 or 1: inf at 0, NaN below.
template <int Nu, bool Scaled>
NPU_VEC_INLINE float bessel_k_float(float x) {
  using namespace special_float;
  const float t = 0.25f * x * x, l = fast_log(0.5f * x);
  const float series = Nu == 0 ? poly(kK0Small, kK0SmallScale, t) - l * i0_series(t)
                               : 1.0f / x + x * poly(kK1Small, kK1SmallScale, t) + l * (0.5f * x) * i1_series(t);
  const float mid = Nu == 0 ? poly(kK0Mid, kK0MidScale, x) : poly(kK1Mid, kK1MidScale, x);
  const float u = 8.0f / x;
  const float far = Nu == 0 ? poly(kK0Large, kK0LargeScale, u) : poly(kK1Large, kK1LargeScale, u);
  const float tail = (x <= 8.0f ? mid : far) / std::sqrt(x);
  float v = Scaled ? (x <= 2.0f ? series * fast_exp(x) : tail) : (x <= 2.0f ? series : tail * fast_exp(-x));
  v = x == 0.0f ? kInf : v;
  return x < 0.0f ? kNaN : v;
}

// J_nu(x) or (SecondKind) Y_nu(x), nu = 0 or 1, for |x| < 2^40 (bessel_jy_exceptional).
template <int Nu, bool SecondKind>
NPU_VEC_INLINE float bessel_jy_float(float x) {
  using namespace special_float;
  const float a = std::fabs(x), z = a * a, zlo = std::fma(a, a, -z);
  const float j = Nu == 0 ? minus_root(z, zlo, kJ0Zero1Sq) * minus_root(z, zlo, kJ0Zero2Sq) *
                                poly(kJ0Small, kJ0SmallScale, z)
                          : a * minus_root(z, zlo, kJ1Zero1Sq) * poly(kJ1Small, kJ1SmallScale, z);
  float near = j;
  if constexpr (SecondKind) {
    const float l = fast_log(a);
    near = Nu == 0 ? kTwoOverPi * l * j + poly(kY0Small, kY0SmallScale, z)
                   : kTwoOverPi * (l * j - 1.0f / a) + a * poly(kY1Small, kY1SmallScale, z);
  }
  const float u = 25.0f / z;
  const float m = (Nu == 0 ? poly(kMod0, kMod0Scale, u) : poly(kMod1, kMod1Scale, u)) * std::sqrt(kTwoOverPi / a);
  const float phase = (Nu == 0 ? poly(kPhase0, kPhase0Scale, u) : poly(kPhase1, kPhase1Scale, u)) / a;
  // theta = a - (2 nu + 1) pi/4 + phase: J1 / Y1's extra -pi/2 is one quarter turn
  const CosSin cs = cos_sin(a, static_cast<double>(phase) - 0.78539816339744830962, Nu);
  float v = a <= 5.0f ? near : m * (SecondKind ? cs.s : cs.c);
  v = a == kInf ? kNaN : v;  // NaN stays NaN through the arithmetic
  if constexpr (SecondKind) {
    v = x == 0.0f ? -kInf : v;
    return x < 0.0f ? kNaN : v;
  } else {
    return Nu == 1 && x < 0.0f ? -v : v;
  }
}

// Where bessel_jy_float's reduction is no longer exact.
inline bool bessel_jy_exceptional(float x) {
  const float a = std::fabs(x);
  return a >= 1099511627776.0f && a < special_float::kInf;  // 2^40
}

// sin(x) / x: 1 + x^2 S(x^2) (sin's own polynomial) below |x| = 1/2, 0 at infinity, for |x| < 2^40
// (bessel_jy_exceptional's range).
NPU_VEC_INLINE float spherical_bessel_j0_float(float x) {
  using namespace special_float;
  const float z = x * x;
  const float v = std::fabs(x) < 0.5f ? 1.0f + z * poly(kSin, kSinScale, z) : cos_sin(x, 0.0, 0).s / x;
  return std::fabs(x) == kInf ? 0.0f : v;
}

// acos(x) for |x| <= 1, in double from float pieces: pi/2 - asin(x) below |x| = 1/2, 2 asin(sqrt((1 - |x|) / 2))
// above (pi minus it for x < 0; 1 - |x| is exact there), asin(s) = s + s^3 P(s^2).
NPU_VEC_INLINE double acos_float(float x) {
  using namespace special_float;
  constexpr double kPi = 3.14159265358979323846;
  const float ax = std::fabs(x);
  const float s = ax < 0.5f ? x : std::sqrt(0.5f * (1.0f - ax));
  const float s2 = s * s;
  const double asin_s = static_cast<double>(s + s * s2 * poly(kAsin, kAsinScale, s2));
  const double large = x < 0.0f ? kPi - 2 * asin_s : 2 * asin_s;
  return ax < 0.5f ? kPi / 2 - asin_s : large;
}

// The Chebyshev polynomials T, U, V, W of degree n (a float, truncated as ATen does) at x, as ATen evaluates them
// in float: the recurrence up to degree kMax (6 for T, 8 for the others), the trigonometric forms above it for
// |x| < 1 (cos(n t), sin((n + 1) t) / sin t, cos((n + 1/2) t) / cos(t/2), sin((n + 1/2) t) / sin(t/2), t = acos x,
// the angle reduced in double). The recurrence runs kMax steps in every lane, each kept while below the lane's
// degree. chebyshev_exceptional names the rest (|x| >= 1 or NaN above kMax, degrees from 2^24): they take the
// double path.
enum class ChebyshevKind { kT, kU, kV, kW };
template <ChebyshevKind K>
constexpr int kChebyshevRecurrenceMax = K == ChebyshevKind::kT ? 6 : 8;

template <ChebyshevKind K>
NPU_VEC_INLINE float chebyshev_float(float x, float n) {
  constexpr int kMax = kChebyshevRecurrenceMax<K>;
  const float degree = std::trunc(n);  // NaN and n <= -1 give 0 below; -1 < n < 0 is degree 0
  float p = 1.0f;  // degrees 0 and 1: 1, then x, 2x, 2x - 1, 2x + 1
  float q = K == ChebyshevKind::kT   ? x
            : K == ChebyshevKind::kU ? 2.0f * x
            : K == ChebyshevKind::kV ? 2.0f * x - 1.0f
                                     : 2.0f * x + 1.0f;
  for (int k = 2; k <= kMax; ++k) {
    const float r = 2.0f * x * q - p;
    const bool step = static_cast<float>(k) <= degree;
    p = step ? q : p;
    q = step ? r : q;
  }
  const double t = acos_float(x), nd = static_cast<double>(degree);
  float trig;
  if constexpr (K == ChebyshevKind::kT) {
    trig = special_float::cos_sin(nd * t, 0.0, 0).c;
  } else if constexpr (K == ChebyshevKind::kU) {
    trig = special_float::cos_sin((nd + 1) * t, 0.0, 0).s / std::sqrt((1.0f - x) * (1.0f + x));
  } else if constexpr (K == ChebyshevKind::kV) {
    trig = special_float::cos_sin((nd + 0.5) * t, 0.0, 0).c / std::sqrt(0.5f * (1.0f + x));
  } else {
    trig = special_float::cos_sin((nd + 0.5) * t, 0.0, 0).s / std::sqrt(0.5f * (1.0f - x));
  }
  float v = degree > static_cast<float>(kMax) ? trig : q;
  v = degree == 0.0f ? 1.0f : v;
  return n <= -1.0f || n != n ? 0.0f : v;
}

template <ChebyshevKind K>
NPU_VEC_INLINE bool chebyshev_exceptional(float x, float n) {
  return (n >= static_cast<float>(kChebyshevRecurrenceMax<K> + 1) && !(std::fabs(x) < 1.0f)) || n >= 16777216.0f;
}

// erf^-1(x) = x P(w), w = -log((1 - x)(1 + x)): a polynomial in w below 5, in sqrt(w) above; +-1 -> +-inf,
// outside [-1, 1] -> NaN, the sign of 0 kept.
NPU_VEC_INLINE float erfinv_float(float x) {
  using namespace special_float;
  const float w = -fast_log((1.0f - x) * (1.0f + x));
  const float p = w < 5.0f ? poly(kErfinvCentral, kErfinvCentralScale, w)
                           : poly(kErfinvTail, kErfinvTailScale, std::sqrt(w));
  const float v = std::fabs(x) == 1.0f ? std::copysign(kInf, x) : x * p;
  return std::fabs(x) <= 1.0f ? v : kNaN;  // NaN too
}

// lgamma(x): for z >= 1/2, (z - 1)(z - 2) P(z) up to 3 (its zeros factored out), P(z) up to 8, Stirling's
// (z - 1/2) log z - z + log(2 pi)/2 + P(64/z^2)/z beyond; below 1/2 the reflection log(pi / |sin(pi x)|) -
// lgamma(1 - x), sin(pi x) reduced in double (near lgamma's negative zeros the difference keeps an absolute error
// of ~1e-7). inf at the poles (0 and the negative integers, every float from -2^23 down) and at +-inf, as ATen.
NPU_VEC_INLINE float lgamma_float(float x) {
  using namespace special_float;
  const float z = x < 0.5f ? 1.0f - x : x;
  const float near = (z - 1.0f) * (z - 2.0f) * poly(kLgammaNear, kLgammaNearScale, z);
  const float mid = poly(kLgammaMid, kLgammaMidScale, z);
  const float far = (z - 0.5f) * fast_log(z) - z + 0.918938533204672742f +
                    poly(kLgammaStirling, kLgammaStirlingScale, 64.0f / (z * z)) / z;
  const float lz = z <= 3.0f ? near : (z <= 8.0f ? mid : far);
  const float sin_pi_x = std::fabs(cos_sin(static_cast<double>(x) * 3.14159265358979323846, 0.0, 0).s);
  const float reflected = 1.14472988584940017f - fast_log(sin_pi_x) - lz;  // log(pi) - log|sin(pi x)| - lgamma(1 - x)
  const float v = x < 0.5f ? reflected : lz;
  return std::fabs(x) == kInf || (x <= 0.0f && x == std::trunc(x)) ? kInf : v;
}

// ndtri(p), the inverse of the standard normal CDF: -inf at 0, inf at 1, NaN outside [0, 1].
NPU_VEC_INLINE float ndtri_float(float p) {
  using namespace special_float;
  const float q = p - 0.5f;
  const float central = q * poly(kNdtriCentral, kNdtriCentralScale, q * q);
  const float tail_p = p < 0.5f ? p : 1.0f - p;  // 1 - p is exact for p >= 1/2
  const float s = std::sqrt(-fast_log(tail_p));
  const float t =
      s <= kNdtriTailSplit ? poly(kNdtriTail1, kNdtriTail1Scale, s) : poly(kNdtriTail2, kNdtriTail2Scale, s);
  float v = std::fabs(q) <= 0.425f ? central : (p < 0.5f ? -t : t);
  v = p == 0.0f ? -kInf : v;
  v = p == 1.0f ? kInf : v;
  return p >= 0.0f && p <= 1.0f ? v : kNaN;
}

}  // namespace npu_kernels::detail
