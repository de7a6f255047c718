// Scalar special functions of torch.special. The Bessel functions of order 0 and 1, Airy Ai and the inverse error
// functions come from Boost.Math (minimax rational approximations, computed in double: no promotion to long
// double, errors return their IEEE value instead of throwing); this file keeps ATen's values at the poles and
// outside the domain, Hankel's series where scaled forms would overflow, and the textbook methods named at the rest.
#include "special_functions.h"

#include <boost/math/special_functions/airy.hpp>
#include <boost/math/special_functions/bessel.hpp>
#include <boost/math/special_functions/erf.hpp>
#include <boost/math/special_functions/trigamma.hpp>
#include <cmath>
#include <limits>

#include "special_math.h"

namespace npu_kernels::detail {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = 3.14159265358979323846;
constexpr double kSqrtPi = 1.77245385090551602730;
constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kEps = std::numeric_limits<double>::epsilon();

// Hankel's large-x series of exp(-x) I_nu(x) (sign -1) and exp(x) K_nu(x) (sign +1), nu = 0 or 1, without
// the prefactor: sum_k sign^k a_k(nu) / x^k, a_k = prod_{j<=k} (4 nu^2 - (2j - 1)^2) / (k! 8^k). Used for
// x >= 500, where the terms fall by ~(2k)^2 / (8 k x) and 8 terms reach double precision.
double hankel_series(double nu, double x, double sign) {
  const double mu = 4 * nu * nu;
  double term = 1, sum = 1;
  for (int k = 1; k < 30; ++k) {
    term *= sign * (mu - (2.0 * k - 1) * (2.0 * k - 1)) / (k * 8.0 * x);
    sum += term;
    if (std::fabs(term) < kEps * std::fabs(sum)) break;
  }
  return sum;
}

constexpr double kHankelFrom = 500;
// Beyond these, I0 and I1 are infinite as in ATen (whose exp(x) factor overflows from log(DBL_MAX) on, a
// little before the functions do) and K0 and K1 underflow.
constexpr double kIOverflow = 709.782712893384, kKUnderflow = 746;

// Ai(-x) for x >= 200 by its asymptotic expansion pi^-1/2 x^-1/4 (sin(z + pi/4) P(z) - cos(z + pi/4) Q(z)),
// z = 2/3 x^3/2, with the coefficients u_k of the Airy expansions, instead of the Bessel form; the neglected
// terms are below 1e-16 there.
double airy_ai_negative_asymptotic(double x) {
  static constexpr double u[] = {1.0, 5.0 / 72, 385.0 / 10368, 85085.0 / 2239488, 37182145.0 / 644972544,
                                 5391411025.0 / 61917364224};
  const double z = 2.0 / 3 * x * std::sqrt(x), r = 1 / z, r2 = r * r;
  const double p = u[0] - u[2] * r2 + u[4] * r2 * r2;
  const double q = r * (u[1] - u[3] * r2 + u[5] * r2 * r2);
  const double phase = z + 0.78539816339744830962;
  return (std::sin(phase) * p - std::cos(phase) * q) / (std::sqrt(kPi) * std::sqrt(std::sqrt(x)));
}

// Boost.Math's policy for kernel code: double arithmetic throughout, and every error its IEEE value (NaN, +-inf,
// 0) rather than an exception through an AI-core thread. The wrappers below handle the edges before calling.
namespace bm = boost::math;
namespace bp = boost::math::policies;
using KernelPolicy =
    bp::policy<bp::promote_double<false>, bp::promote_float<false>, bp::domain_error<bp::ignore_error>,
               bp::pole_error<bp::ignore_error>, bp::overflow_error<bp::ignore_error>,
               bp::underflow_error<bp::ignore_error>, bp::evaluation_error<bp::ignore_error>,
               bp::rounding_error<bp::ignore_error>>;
constexpr KernelPolicy kPolicy;

double j(int nu, double x) { return bm::cyl_bessel_j(nu, x, kPolicy); }
double y(int nu, double x) { return bm::cyl_neumann(nu, x, kPolicy); }
double i(int nu, double x) { return bm::cyl_bessel_i(nu, x, kPolicy); }
double k(int nu, double x) { return bm::cyl_bessel_k(nu, x, kPolicy); }

// exp(x^2) with x^2 split exactly (hi + lo, lo from an fma): exp's argument keeps its low bits, which matter
// once x^2 is in the hundreds.
double exp_square(double x) {
  const double hi = x * x, lo = std::fma(x, x, -hi);
  return std::exp(hi) * (1 + lo);
}

}  // namespace

// From 2^27 on, J and Y are Hankel's expansion (bessel_jy_far), whose first omitted term is below 1e-17 there:
// ATen's asymptotic form rounds its phase x - pi/4 to double, an error of ulp(x) / 2 that
// reaches ~1e-8 of the amplitude at 2^27, ~1e-5 at 2^40 and all of it from ~1e15.
constexpr double kBesselFar = 134217728.0;

// ATen returns NaN at +-inf for the Bessel functions of the first and second kind; J is evaluated at |x| and
// the symmetry J_n(-x) = (-1)^n J_n(x) applied here.
double bessel_j0(double x) {
  if (std::isnan(x) || std::isinf(x)) return kNaN;
  if (std::fabs(x) >= kBesselFar) return bessel_jy_far(0, false, x);
  return j(0, std::fabs(x));
}

double bessel_j1(double x) {
  if (std::isnan(x) || std::isinf(x)) return kNaN;
  if (std::fabs(x) >= kBesselFar) return bessel_jy_far(1, false, x);
  const double v = j(1, std::fabs(x));
  return x < 0 ? -v : v;
}

double bessel_y0(double x) {
  if (std::isnan(x) || std::isinf(x) || x < 0) return kNaN;
  if (x == 0) return -kInf;
  if (x >= kBesselFar) return bessel_jy_far(0, true, x);
  return y(0, x);
}

double bessel_y1(double x) {
  if (std::isnan(x) || std::isinf(x) || x < 0) return kNaN;
  if (x == 0) return -kInf;
  if (x >= kBesselFar) return bessel_jy_far(1, true, x);
  return y(1, x);
}

// Hankel's expansion to its 1/a term: J = A (cos chi - Q sin chi), Y = A (sin chi + Q cos chi), A = sqrt(2 / (pi
// a)), chi = a - (2 nu + 1) pi/4, Q = (4 nu^2 - 1) / (8 a); the next terms are O(1/a^2). cos and sin of
// chi come from libm's exactly reduced cos and sin of a: a - pi/4 in double would round away the phase.
double bessel_jy_far(int nu, bool second_kind, double x) {
  if (std::isnan(x) || std::isinf(x) || (second_kind && x < 0)) return kNaN;
  const double a = std::fabs(x), c = std::cos(a), s = std::sin(a);
  const double cos_chi = (nu == 0 ? c + s : s - c) / kSqrt2, sin_chi = (nu == 0 ? s - c : -(c + s)) / kSqrt2;
  const double q = (4.0 * nu * nu - 1) / (8 * a), amplitude = std::sqrt(2 / (kPi * a));
  const double v = amplitude * (second_kind ? sin_chi + q * cos_chi : cos_chi - q * sin_chi);
  return nu == 1 && !second_kind && x < 0 ? -v : v;
}

double modified_bessel_i0(double x) {
  if (std::isnan(x) || std::isinf(x)) return kNaN;
  if (std::fabs(x) > kIOverflow) return kInf;
  return i(0, std::fabs(x));
}

double modified_bessel_i1(double x) {
  if (std::isnan(x) || std::isinf(x)) return kNaN;
  if (std::fabs(x) > kIOverflow) return x < 0 ? -kInf : kInf;
  const double v = i(1, std::fabs(x));
  return x < 0 ? -v : v;
}

double modified_bessel_i0e(double x) {
  if (std::isnan(x)) return x;
  const double ax = std::fabs(x);
  if (std::isinf(ax)) return 0;
  if (ax >= kHankelFrom) return hankel_series(0, ax, -1) / std::sqrt(2 * kPi * ax);
  return std::exp(-ax) * i(0, ax);
}

double modified_bessel_i1e(double x) {
  if (std::isnan(x)) return x;
  const double ax = std::fabs(x);
  double v;
  if (std::isinf(ax)) v = 0;
  else if (ax >= kHankelFrom) v = hankel_series(1, ax, -1) / std::sqrt(2 * kPi * ax);
  else v = std::exp(-ax) * i(1, ax);
  return std::signbit(x) ? -v : v;
}

double modified_bessel_k0(double x) {
  if (std::isnan(x) || x < 0) return kNaN;
  if (x == 0) return kInf;
  if (x > kKUnderflow) return 0;
  return k(0, x);
}

double modified_bessel_k1(double x) {
  if (std::isnan(x) || x < 0) return kNaN;
  if (x == 0) return kInf;
  if (x > kKUnderflow) return 0;
  return k(1, x);
}

double scaled_modified_bessel_k0(double x) {
  if (std::isnan(x) || x < 0) return kNaN;
  if (x == 0) return kInf;
  if (std::isinf(x)) return 0;
  if (x >= kHankelFrom) return hankel_series(0, x, 1) * std::sqrt(kPi / (2 * x));
  return std::exp(x) * k(0, x);
}

double scaled_modified_bessel_k1(double x) {
  if (std::isnan(x) || x < 0) return kNaN;
  if (x == 0) return kInf;
  if (std::isinf(x)) return 0;
  if (x >= kHankelFrom) return hankel_series(1, x, 1) * std::sqrt(kPi / (2 * x));
  return std::exp(x) * k(1, x);
}

// sin(x) / x, by its Taylor series near 0 where the quotient loses digits.
double spherical_bessel_j0(double x) {
  if (std::isinf(x)) return 0;
  if (std::fabs(x) < 0.5) {
    const double x2 = x * x;
    return 1 - x2 / 6 * (1 - x2 / 20 * (1 - x2 / 42 * (1 - x2 / 72 * (1 - x2 / 110 * (1 - x2 / 156)))));
  }
  return std::sin(x) / x;
}

double airy_ai(double x) {
  if (std::isnan(x) || std::isinf(x)) return kNaN;
  if (x > 110) return 0;  // underflows
  if (x < -200) return airy_ai_negative_asymptotic(-x);
  if (std::fabs(x) < 1e-3) {  // Maclaurin series (the Bessel form's argument 2/3 |x|^3/2 underflows)
    constexpr double kAi0 = 0.355028053887817239, kAiPrime0 = 0.258819403792806798;  // Ai(0), -Ai'(0)
    const double x3 = x * x * x;
    return kAi0 * (1 + x3 / 6) - kAiPrime0 * x * (1 + x3 / 12);
  }
  return bm::airy_ai(x, kPolicy);
}

// exp(x^2) erfc(x): the product directly while erfc(x) is a normal number (x < 26), the asymptotic series
// 1 / (x sqrt(pi)) sum_k (-1)^k (2k - 1)!! / (2 x^2)^k beyond; x < 0 by erfcx(x) = 2 exp(x^2) - erfcx(-x).
double erfcx(double x) {
  if (std::isnan(x)) return x;
  if (x < 0) {
    if (x < -26.7) return kInf;
    return 2 * exp_square(x) - erfcx(-x);
  }
  if (x < 26) return exp_square(x) * std::erfc(x);
  if (std::isinf(x)) return 0;
  const double r = 1 / (2 * x * x);
  double term = 1, sum = 1;
  for (int k = 1; k < 12; ++k) {
    term *= -(2.0 * k - 1) * r;
    sum += term;
  }
  return sum / (x * kSqrtPi);
}

// log Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2: through erfcx in the left tail (the log of a number that would
// underflow), through log1p in the right one.
double log_ndtr(double x) {
  if (std::isnan(x)) return x;
  const double t = x / kSqrt2;
  if (x < -1) return std::log(erfcx(-t) / 2) - t * t;
  return std::log1p(-std::erfc(t) / 2);
}

// Phi^-1(p). p >= 1/4: sqrt(2) erfinv(2p - 1), whose argument is exact there. p < 1/4: -sqrt(2) erfc^-1(2p)
// (2p exact, down to the smallest subnormal).
double ndtri(double p) {
  if (std::isnan(p) || p < 0 || p > 1) return kNaN;
  if (p == 0) return -kInf;
  if (p == 1) return kInf;
  if (p >= 0.25) return kSqrt2 * erfinv(2 * p - 1);
  return -kSqrt2 * bm::erfc_inv(2 * p, kPolicy);
}

double erfinv(double x) {
  if (!(x >= -1 && x <= 1)) return kNaN;
  if (x == 1 || x == -1) return std::copysign(kInf, x);
  if (x == 0) return x;  // -0 stays -0 (Boost returns +0)
  return bm::erf_inv(x, kPolicy);
}

// psi'(x): for x < 1/2 the reflection psi'(x) = pi^2 / sin^2(pi x) - psi'(1 - x) as ATen evaluates it (sin(pi x)
// is not 0 at the negative integers in double, so they give huge finite values; +inf at 0).
double trigamma(double x) {
  if (std::isnan(x)) return x;
  if (x == kInf) return 0;
  if (x < 0.5) {
    const double s = std::sin(kPi * x);
    if (s == 0) return kInf;
    return kPi * kPi / (s * s) - bm::trigamma(1 - x, kPolicy);
  }
  return bm::trigamma(x, kPolicy);
}

double entr(double x) {
  if (std::isnan(x)) return x;
  if (x > 0) return -x * std::log(x);
  if (x == 0) return 0;
  return -kInf;
}

double xlog1py(double x, double y) {
  if (std::isnan(y)) return y;
  if (x == 0) return 0;
  return x * std::log1p(y);
}

// zeta(s, q) = sum_{k>=0} (q + k)^-s by the Euler-Maclaurin formula: the first N terms directly (at least 9,
// and until q + N > 9), then the integral of the tail, half its first term and the Bernoulli corrections
// B_2j / (2j)! s (s + 1) ... (s + 2j - 2) (q + N)^(-s - 2j + 1). Domain as ATen (Cephes): s = 1 is a pole,
// s < 1 is NaN; q <= 0 is a pole at the integers and NaN for non-integral s.
double hurwitz_zeta(double s, double q) {
  if (std::isnan(s) || std::isnan(q)) return kNaN;
  if (s == 1) return kInf;
  if (s < 1) return kNaN;
  if (q <= 0) {
    if (q == std::floor(q)) return kInf;  // -inf included, as ATen
    if (s != std::floor(s)) return kNaN;
  }
  if (std::isinf(s) || std::isinf(q)) return kNaN;  // ATen's sum gives NaN there
  double sum = std::pow(q, -s), a = q, term = 0;
  for (int k = 0; k < 9 || a <= 9; ++k) {
    a += 1;
    term = std::pow(a, -s);
    sum += term;
    if (std::fabs(term / sum) < kEps) return sum;
  }
  // B_2j / (2j)! for j = 1..12
  static constexpr double kBernoulliOverFactorial[] = {
      1.0 / 12, -1.0 / 720, 1.0 / 30240, -1.0 / 1209600, 1.0 / 47900160, -691.0 / 1307674368000.0,
      1.0 / 74724249600.0, -3617.0 / 10670622842880000.0, 43867.0 / 5109094217170944000.0,
      -174611.0 / 802857662698291200000.0, 77683.0 / 14101100039391805440000.0,
      -236364091.0 / 1693824136731743669452800000.0};
  const double w = a;
  sum += term * w / (s - 1) - term / 2;
  double rising = 1, power = term;  // s (s + 1) ... (s + 2j - 2) and (q + N)^(-s - 2j + 1)
  for (int j = 0; j < 12; ++j) {
    rising *= s + 2 * j;
    power /= w;
    const double t = kBernoulliOverFactorial[j] * rising * power;
    sum += t;
    if (std::fabs(t / sum) < kEps) break;
    rising *= s + 2 * j + 1;
    power /= w;
  }
  return sum;
}

// psi^(n)(x) = (-1)^(n + 1) n! zeta(n + 1, x) for n >= 2, as ATen.
double polygamma(int64_t n, double x) {
  if (n == 0) return digamma(x);
  if (n == 1) return trigamma(x);
  const double sign = n % 2 ? 1.0 : -1.0;
  return sign * std::exp(lgamma_nosign(n + 1.0)) * hurwitz_zeta(n + 1.0, x);
}

namespace {

// x^a e^-x / Gamma(a), in logs.
double gamma_prefactor(double a, double x) { return std::exp(a * std::log(x) - x - lgamma_nosign(a)); }

// P(a, x) by its power series x^a e^-x / Gamma(a + 1) sum_n x^n / ((a + 1) ... (a + n)); for x < a + 1.
double igamma_series(double a, double x, double eps) {
  double term = 1, sum = 1;
  for (int n = 1; n < 100000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (term < eps * sum) break;
  }
  return sum * gamma_prefactor(a, x) / a;
}

// Q(a, x) by Legendre's continued fraction, evaluated with the modified Lentz method; for x >= a + 1.
double igammac_fraction(double a, double x, double eps) {
  constexpr double kTiny = 1e-300;
  double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, h = d;
  for (int n = 1; n < 100000; ++n) {
    const double an = -n * (n - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < eps) break;
  }
  return h * gamma_prefactor(a, x);
}

}  // namespace

double igamma(double a, double x, double eps) {
  if (x < 0 || a < 0) return kNaN;
  if (a == 0) return x > 0 ? 1.0 : kNaN;
  if (x == 0) return 0;
  if (std::isinf(a)) return std::isinf(x) ? kNaN : 0.0;
  if (std::isinf(x)) return 1;
  if (std::isnan(a) || std::isnan(x)) return kNaN;
  return x < a + 1 ? igamma_series(a, x, eps) : 1 - igammac_fraction(a, x, eps);
}

double igammac(double a, double x, double eps) {
  if (x < 0 || a < 0) return kNaN;
  if (a == 0) return x > 0 ? 0.0 : kNaN;
  if (x == 0) return 1;
  if (std::isinf(a)) return std::isinf(x) ? kNaN : 1.0;
  if (std::isinf(x)) return 0;
  if (std::isnan(a) || std::isnan(x)) return kNaN;
  // 1 - P cancels where P nears 1 (small a): that series keeps double's epsilon whatever the caller's eps
  return x < a + 1 ? 1 - igamma_series(a, x, kEps) : igammac_fraction(a, x, eps);
}

// Three-term recurrences from P_0 and P_1; ATen's values at the ends x = +-1 of the Chebyshev and Legendre
// families (exact integers there), and for |x| < 1 and large n the Chebyshev families' trigonometric forms.
double orthogonal_polynomial(Polynomial kind, double x, double n_value, bool shifted) {
  // ATen truncates the degree to int64 (-1 < n < 0 is degree 0); NaN and values past int64 convert to INT64_MIN
  // on x86, a negative degree: 0.
  if (std::isnan(n_value) || n_value <= -1 || n_value >= 9.2e18) return 0;
  const int64_t n = static_cast<int64_t>(n_value);
  if (shifted) x = x + x - 1;
  if (n == 0) return 1;
  if (std::isnan(x)) return x;
  const bool odd = n % 2 == 1;
  const double n1 = static_cast<double>(n);
  switch (kind) {
    case Polynomial::kChebyshevT: {
      if (std::fabs(x) == 1) return x > 0 || !odd ? 1 : -1;
      if (n > 6 && std::fabs(x) < 1) return std::cos(n1 * std::acos(x));
      double p = 1, q = x;
      for (int64_t k = 2; k <= n; ++k) { const double r = 2 * x * q - p; p = q; q = r; }
      return q;
    }
    case Polynomial::kChebyshevU: {
      if (std::fabs(x) == 1) return x > 0 || !odd ? n1 + 1 : -(n1 + 1);
      if (n > 8 && std::fabs(x) < 1) {
        const double t = std::acos(x), s = std::sin(t);
        return s != 0 ? std::sin((n1 + 1) * t) / s : (n1 + 1) * std::cos((n1 + 1) * t) * x;
      }
      double p = 1, q = 2 * x;
      for (int64_t k = 2; k <= n; ++k) { const double r = 2 * x * q - p; p = q; q = r; }
      return q;
    }
    case Polynomial::kChebyshevV: {
      if (std::fabs(x) == 1) return x > 0 ? 1 : (odd ? -(2 * n1 + 1) : 2 * n1 + 1);
      if (n > 8 && std::fabs(x) < 1) {
        const double t = std::acos(x);
        return std::cos((n1 + 0.5) * t) / std::cos(t / 2);
      }
      double p = 1, q = 2 * x - 1;
      for (int64_t k = 2; k <= n; ++k) { const double r = 2 * x * q - p; p = q; q = r; }
      return q;
    }
    case Polynomial::kChebyshevW: {
      if (std::fabs(x) == 1) return x > 0 ? 2 * n1 + 1 : (odd ? -1 : 1);
      if (n > 8 && std::fabs(x) < 1) {
        const double t = std::acos(x);
        return std::sin((n1 + 0.5) * t) / std::sin(t / 2);
      }
      double p = 1, q = 2 * x + 1;
      for (int64_t k = 2; k <= n; ++k) { const double r = 2 * x * q - p; p = q; q = r; }
      return q;
    }
    case Polynomial::kHermiteH: {  // H_{k+1} = 2x H_k - 2k H_{k-1}
      double p = 1, q = 2 * x;
      for (int64_t k = 1; k < n; ++k) { const double r = 2 * x * q - 2.0 * k * p; p = q; q = r; }
      return q;
    }
    case Polynomial::kHermiteHe: {  // He_{k+1} = x He_k - k He_{k-1}
      double p = 1, q = x;
      for (int64_t k = 1; k < n; ++k) { const double r = x * q - static_cast<double>(k) * p; p = q; q = r; }
      return q;
    }
    case Polynomial::kLaguerreL: {  // (k + 1) L_{k+1} = (2k + 1 - x) L_k - k L_{k-1}
      if (x == 0) return 1;
      double p = 1, q = 1 - x;
      for (int64_t k = 1; k < n; ++k) {
        const double kd = static_cast<double>(k);
        const double r = ((2 * kd + 1 - x) * q - kd * p) / (kd + 1);
        p = q; q = r;
      }
      return q;
    }
    case Polynomial::kLegendreP: {  // (k + 1) P_{k+1} = (2k + 1) x P_k - k P_{k-1}
      if (std::fabs(x) == 1) return x > 0 || !odd ? 1 : -1;
      double p = 1, q = x;
      for (int64_t k = 1; k < n; ++k) {
        const double kd = static_cast<double>(k);
        const double r = ((2 * kd + 1) * x * q - kd * p) / (kd + 1);
        p = q; q = r;
      }
      return q;
    }
  }
  return kNaN;
}

}  // namespace npu_kernels::detail
