// The special-function ops of the pointwise catalogue over the elementwise engine: float32 / float16 / bfloat16
// elements of the Bessel functions, the Chebyshev polynomials, entr and ndtri by the vectorised float kernels of
// special_float.h, the other orthogonal polynomials by a vectorised double recurrence; the rest, and float64, widened
// to double, evaluated by special_functions.cpp and rounded once into the output dtype.
#include <limits>
#include <optional>

#include "pointwise_common.h"
#include "special_float.h"
#include "special_functions.h"

namespace npu_kernels {

bool is_special(UnaryOp op) { return static_cast<int>(op) >= static_cast<int>(UnaryOp::kI0); }
bool is_special(BinaryOp op) { return static_cast<int>(op) >= static_cast<int>(BinaryOp::kXlog1py); }

namespace detail {
namespace {

bool takes_16_bit(UnaryOp op) { return static_cast<int>(op) < static_cast<int>(UnaryOp::kModifiedBesselI0); }
bool takes_16_bit(BinaryOp op) { return static_cast<int>(op) < static_cast<int>(BinaryOp::kZeta); }

// Calls f(In{}) for the floating dtypes the op has a kernel for; kInvalidValue (the adapter's "no npu kernel
// for dtype") for the others: integer inputs arrive promoted by ATen's meta functions.
template <typename F>
npu_sim::Status dispatch_floating(DType t, bool sixteen_bit, F&& f) {
  switch (t) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: return f(double{});
    case DType::kFloat16: return sixteen_bit ? f(Half{}) : npu_sim::Status::kInvalidValue;
    case DType::kBFloat16: return sixteen_bit ? f(BFloat16{}) : npu_sim::Status::kInvalidValue;
    default: return npu_sim::Status::kInvalidValue;
  }
}

double (*unary_function(UnaryOp op))(double) {
  switch (op) {
    case UnaryOp::kI0:
    case UnaryOp::kModifiedBesselI0: return modified_bessel_i0;
    case UnaryOp::kI1:
    case UnaryOp::kModifiedBesselI1: return modified_bessel_i1;
    case UnaryOp::kI0e: return modified_bessel_i0e;
    case UnaryOp::kI1e: return modified_bessel_i1e;
    case UnaryOp::kEntr: return entr;
    case UnaryOp::kModifiedBesselK0: return modified_bessel_k0;
    case UnaryOp::kModifiedBesselK1: return modified_bessel_k1;
    case UnaryOp::kScaledModifiedBesselK0: return scaled_modified_bessel_k0;
    case UnaryOp::kScaledModifiedBesselK1: return scaled_modified_bessel_k1;
    case UnaryOp::kBesselJ0: return bessel_j0;
    case UnaryOp::kBesselJ1: return bessel_j1;
    case UnaryOp::kBesselY0: return bessel_y0;
    case UnaryOp::kBesselY1: return bessel_y1;
    case UnaryOp::kSphericalBesselJ0: return spherical_bessel_j0;
    case UnaryOp::kAiryAi: return airy_ai;
    case UnaryOp::kErfcx: return erfcx;
    case UnaryOp::kLogNdtr: return log_ndtr;
    case UnaryOp::kNdtri: return ndtri;
    default: return nullptr;
  }
}

// J_nu / Y_nu and sin(x) / x in float: from |x| = 2^40 on, the elements go to the double path one at a time.
template <int Nu, bool SecondKind>
struct BesselJYFloat {
  float operator()(float x) const { return bessel_jy_float<Nu, SecondKind>(x); }
  bool exceptional(float x) const { return bessel_jy_exceptional(x); }
  float exact(float x) const { return static_cast<float>(bessel_jy_far(Nu, SecondKind, x)); }
};

struct SphericalBesselJ0Float {  // the same range as J / Y (special_float.h's cos_sin)
  float operator()(float x) const { return spherical_bessel_j0_float(x); }
  bool exceptional(float x) const { return bessel_jy_exceptional(x); }
  float exact(float x) const { return static_cast<float>(std::sin(static_cast<double>(x)) / x); }
};

// go(functor) for the ops with a float kernel in special_float.h, nullopt for the others.
template <typename Go>
std::optional<npu_sim::Status> float_kernel(UnaryOp op, Go&& go) {
  switch (op) {
    case UnaryOp::kI0:
    case UnaryOp::kModifiedBesselI0: return go([](float x) { return bessel_i_float<0, false>(x); });
    case UnaryOp::kI1:
    case UnaryOp::kModifiedBesselI1: return go([](float x) { return bessel_i_float<1, false>(x); });
    case UnaryOp::kI0e: return go([](float x) { return bessel_i_float<0, true>(x); });
    case UnaryOp::kI1e: return go([](float x) { return bessel_i_float<1, true>(x); });
    case UnaryOp::kModifiedBesselK0: return go([](float x) { return bessel_k_float<0, false>(x); });
    case UnaryOp::kModifiedBesselK1: return go([](float x) { return bessel_k_float<1, false>(x); });
    case UnaryOp::kScaledModifiedBesselK0: return go([](float x) { return bessel_k_float<0, true>(x); });
    case UnaryOp::kScaledModifiedBesselK1: return go([](float x) { return bessel_k_float<1, true>(x); });
    case UnaryOp::kBesselJ0: return go(BesselJYFloat<0, false>{});
    case UnaryOp::kBesselJ1: return go(BesselJYFloat<1, false>{});
    case UnaryOp::kBesselY0: return go(BesselJYFloat<0, true>{});
    case UnaryOp::kBesselY1: return go(BesselJYFloat<1, true>{});
    case UnaryOp::kSphericalBesselJ0: return go(SphericalBesselJ0Float{});
    case UnaryOp::kNdtri: return go([](float p) { return ndtri_float(p); });
    case UnaryOp::kEntr:  // -x log x; 0 at 0, -inf below, NaN stays NaN
      return go([](float x) { return x > 0.0f ? -x * fast_log(x) : (x == 0.0f ? 0.0f : (x < 0.0f ? -HUGE_VALF : x)); });
    default: return std::nullopt;
  }
}

// The Chebyshev families in float (shifted: of 2x - 1); the exceptional elements take the double recurrence.
template <ChebyshevKind K, bool Shifted>
struct ChebyshevFloat {
  static float arg(float x) { return Shifted ? x + x - 1.0f : x; }
  float operator()(float x, float n) const { return chebyshev_float<K>(arg(x), n); }
  bool exceptional(float x, float n) const { return chebyshev_exceptional<K>(arg(x), n); }
  float exact(float x, float n) const {
    constexpr Polynomial kKind[] = {Polynomial::kChebyshevT, Polynomial::kChebyshevU, Polynomial::kChebyshevV,
                                    Polynomial::kChebyshevW};
    return static_cast<float>(orthogonal_polynomial(kKind[static_cast<int>(K)], x, n, Shifted));
  }
};

// Hermite H / He, Laguerre and Legendre of float inputs: the same double recurrence as orthogonal_polynomial, run
// branch-free to a fixed kMax steps with each step masked by the degree, so a run of elements vectorises. Degrees
// above kMax (and the invalid ones' corner cases the recurrence does not produce) take the scalar double path.
template <Polynomial P>
struct RecurrenceFloat {
  static constexpr int kMax = 16;
  float operator()(float xf, float nf) const {
    const double x = xf, degree = std::trunc(static_cast<double>(nf));
    double p = 1.0;
    double q = P == Polynomial::kHermiteH ? 2.0 * x : (P == Polynomial::kLaguerreL ? 1.0 - x : x);
    for (int k = 1; k < kMax; ++k) {
      const double kd = k;
      double r;
      if constexpr (P == Polynomial::kHermiteH) r = 2 * x * q - 2.0 * kd * p;
      else if constexpr (P == Polynomial::kHermiteHe) r = x * q - kd * p;
      else if constexpr (P == Polynomial::kLaguerreL) r = ((2 * kd + 1 - x) * q - kd * p) / (kd + 1);
      else r = ((2 * kd + 1) * x * q - kd * p) / (kd + 1);
      const bool step = kd < degree;
      p = step ? q : p;
      q = step ? r : q;
    }
    return static_cast<float>(degree == 0.0 ? 1.0 : q);  // -1 < n < 0 is degree 0
  }
  // n <= -1 and NaN give 0; Laguerre at 0 and Legendre at +-1 are ATen's exact values (the recurrence's too, in
  // double, up to kMax; kept on the scalar path so the two cannot part)
  bool exceptional(float x, float n) const {
    return !(n > -1.0f && n <= static_cast<float>(kMax)) || (P == Polynomial::kLaguerreL && x == 0.0f) ||
           (P == Polynomial::kLegendreP && std::fabs(x) == 1.0f);
  }
  float exact(float x, float n) const { return static_cast<float>(orthogonal_polynomial(P, x, n, false)); }
};

template <typename Go>
std::optional<npu_sim::Status> float_kernel(BinaryOp op, Go&& go) {
  switch (op) {
    case BinaryOp::kChebyshevT: return go(ChebyshevFloat<ChebyshevKind::kT, false>{});
    case BinaryOp::kChebyshevU: return go(ChebyshevFloat<ChebyshevKind::kU, false>{});
    case BinaryOp::kChebyshevV: return go(ChebyshevFloat<ChebyshevKind::kV, false>{});
    case BinaryOp::kChebyshevW: return go(ChebyshevFloat<ChebyshevKind::kW, false>{});
    case BinaryOp::kShiftedChebyshevT: return go(ChebyshevFloat<ChebyshevKind::kT, true>{});
    case BinaryOp::kShiftedChebyshevU: return go(ChebyshevFloat<ChebyshevKind::kU, true>{});
    case BinaryOp::kShiftedChebyshevV: return go(ChebyshevFloat<ChebyshevKind::kV, true>{});
    case BinaryOp::kShiftedChebyshevW: return go(ChebyshevFloat<ChebyshevKind::kW, true>{});
    case BinaryOp::kHermiteH: return go(RecurrenceFloat<Polynomial::kHermiteH>{});
    case BinaryOp::kHermiteHe: return go(RecurrenceFloat<Polynomial::kHermiteHe>{});
    case BinaryOp::kLaguerreL: return go(RecurrenceFloat<Polynomial::kLaguerreL>{});
    case BinaryOp::kLegendreP: return go(RecurrenceFloat<Polynomial::kLegendreP>{});
    default: return std::nullopt;
  }
}

struct PolynomialOf {
  Polynomial kind;
  bool shifted;
};

PolynomialOf polynomial_of(BinaryOp op) {
  switch (op) {
    case BinaryOp::kChebyshevT: return {Polynomial::kChebyshevT, false};
    case BinaryOp::kChebyshevU: return {Polynomial::kChebyshevU, false};
    case BinaryOp::kChebyshevV: return {Polynomial::kChebyshevV, false};
    case BinaryOp::kChebyshevW: return {Polynomial::kChebyshevW, false};
    case BinaryOp::kShiftedChebyshevT: return {Polynomial::kChebyshevT, true};
    case BinaryOp::kShiftedChebyshevU: return {Polynomial::kChebyshevU, true};
    case BinaryOp::kShiftedChebyshevV: return {Polynomial::kChebyshevV, true};
    case BinaryOp::kShiftedChebyshevW: return {Polynomial::kChebyshevW, true};
    case BinaryOp::kHermiteH: return {Polynomial::kHermiteH, false};
    case BinaryOp::kHermiteHe: return {Polynomial::kHermiteHe, false};
    case BinaryOp::kLaguerreL: return {Polynomial::kLaguerreL, false};
    default: return {Polynomial::kLegendreP, false};
  }
}

}  // namespace

npu_sim::Status special_unary(npu_sim::Stream s, UnaryOp op, const ElementwiseIter& it, const PointwiseParams& p) {
  return dispatch_floating(it.in_dtype, takes_16_bit(op), [&](auto tag) {
    using In = decltype(tag);
    using C = compute_t<In>;
    auto go = [&](auto f) { return launch_elementwise<In, In, 1>(s, op_name(op), it, f); };
    if constexpr (std::is_same_v<C, float>) {
      if (const std::optional<npu_sim::Status> st = float_kernel(op, go)) return *st;
    }
    if (op == UnaryOp::kPolygamma) {
      if (p.i < 2) return npu_sim::Status::kInvalidValue;
      const int64_t n = p.i;
      return go([n](C x) { return static_cast<C>(polygamma(n, static_cast<double>(x))); });
    }
    double (*fn)(double) = unary_function(op);
    if (fn == nullptr) return npu_sim::Status::kInvalidValue;
    return go([fn](C x) { return static_cast<C>(fn(static_cast<double>(x))); });
  });
}

npu_sim::Status special_binary(npu_sim::Stream s, BinaryOp op, const ElementwiseIter& it, const PointwiseParams&) {
  return dispatch_floating(it.in_dtype, takes_16_bit(op), [&](auto tag) {
    using In = decltype(tag);
    using C = compute_t<In>;
    auto go = [&](auto f) { return launch_elementwise<In, In, 2>(s, op_name(op), it, f); };
    if constexpr (std::is_same_v<C, float>) {
      if (const std::optional<npu_sim::Status> st = float_kernel(op, go)) return *st;
    }
    auto of = [](double (*fn)(double, double)) {
      return [fn](C x, C y) { return static_cast<C>(fn(static_cast<double>(x), static_cast<double>(y))); };
    };
    switch (op) {
      case BinaryOp::kXlog1py: return go(of(xlog1py));
      case BinaryOp::kIgamma:
      case BinaryOp::kIgammac: {
        // float and 16-bit results stop at 1e-9 relative (float rounds at 6e-8): 40% fewer terms than at double eps
        const double eps = std::is_same_v<C, double> ? std::numeric_limits<double>::epsilon() : 1e-9;
        double (*fn)(double, double, double) = op == BinaryOp::kIgamma ? igamma : igammac;
        return go([fn, eps](C a, C x) {
          return static_cast<C>(fn(static_cast<double>(a), static_cast<double>(x), eps));
        });
      }
      case BinaryOp::kZeta: return go(of(hurwitz_zeta));
      default: {
        const PolynomialOf poly = polynomial_of(op);
        return go([poly](C x, C n) {
          return static_cast<C>(
              orthogonal_polynomial(poly.kind, static_cast<double>(x), static_cast<double>(n), poly.shifted));
        });
      }
    }
  });
}

}  // namespace detail
}  // namespace npu_kernels
