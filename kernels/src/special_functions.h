// Scalar special functions of torch.special (Bessel, Airy, error-function relatives, Hurwitz zeta, polygamma,
// incomplete gamma, orthogonal polynomials), in double with ATen's values at poles and outside the domain.
#pragma once

#include <cstdint>
#include <limits>

namespace npu_kernels::detail {

double bessel_j0(double x);
double bessel_j1(double x);
double bessel_y0(double x);
double bessel_y1(double x);
double modified_bessel_i0(double x);
double modified_bessel_i1(double x);
double modified_bessel_i0e(double x);  // exp(-|x|) I0(x)
double modified_bessel_i1e(double x);  // exp(-|x|) I1(x)
double modified_bessel_k0(double x);
double modified_bessel_k1(double x);
double scaled_modified_bessel_k0(double x);  // exp(x) K0(x)
double scaled_modified_bessel_k1(double x);  // exp(x) K1(x)
// J_nu or (second_kind) Y_nu, nu = 0 or 1, for large |x| (from 2^27 on in double, 2^40 in float): Hankel's
// expansion to its 1/x term.
double bessel_jy_far(int nu, bool second_kind, double x);
double spherical_bessel_j0(double x);
double airy_ai(double x);
double erfcx(double x);     // exp(x^2) erfc(x)
double log_ndtr(double x);  // log of the standard normal CDF
double ndtri(double p);     // inverse of the standard normal CDF
double entr(double x);      // -x log x
double xlog1py(double x, double y);
double hurwitz_zeta(double s, double q);
double trigamma(double x);  // psi'(x); +inf at 0, the reflection's huge finite values at the negative integers
double erfinv(double x);    // +-inf at +-1, NaN outside [-1, 1]
double polygamma(int64_t n, double x);
// The regularized incomplete gamma functions P(a, x) and Q(a, x); the series or continued fraction stops when a term
// is below eps relative (double's epsilon; float callers pass a looser bound, still far below float's rounding).
double igamma(double a, double x, double eps = std::numeric_limits<double>::epsilon());
double igammac(double a, double x, double eps = std::numeric_limits<double>::epsilon());

enum class Polynomial {
  kChebyshevT, kChebyshevU, kChebyshevV, kChebyshevW, kHermiteH, kHermiteHe, kLaguerreL, kLegendreP,
};
// The degree n is a floating value as in ATen (truncated toward 0; negative or NaN gives 0). shifted: the polynomial
// of 2x - 1 (ATen's shifted Chebyshev polynomials).
double orthogonal_polynomial(Polynomial kind, double x, double n, bool shifted);

}  // namespace npu_kernels::detail
