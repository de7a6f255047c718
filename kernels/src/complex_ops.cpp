// The pointwise catalogue on complex64 / complex128: the unary, binary and ternary ops ATen defines for
// complex, with ATen's complex formulas (log1p / expm1 without cancellation, the conjugated tanh and sigmoid
// gradients, lerp's two-sided form) over the elementwise engine.
#include <complex>
#include <limits>

#include "pointwise_common.h"

namespace npu_kernels::detail {
namespace {

template <typename C>
using R = typename C::value_type;

template <typename C>
C params_a(const PointwiseParams& p) {
  return C(static_cast<R<C>>(p.a), static_cast<R<C>>(p.ai));
}

template <typename C>
bool is_nan(C z) {
  return std::isnan(z.real()) || std::isnan(z.imag());
}

// log(1 + z): ATen's form, exact for small |z| (the naive log(1 + z) cancels).
template <typename C>
C log1p(C z) {
  using T = R<C>;
  const T x = z.real(), y = z.imag();
  const T theta = std::atan2(y, x + T(1));
  if (std::abs(z) < T(0.5)) {
    const T r = x * (T(2) + x) + y * y;
    if (r == T(0)) return {x, theta};  // underflow
    return {T(0.5) * std::log1p(r), theta};
  }
  return {std::log(std::hypot(x + T(1), y)), theta};
}

// exp(z) - 1: (expm1(x) cos y - 2 sin^2(y / 2)) + i e^x sin y, as ATen.
template <typename C>
C expm1(C z) {
  using T = R<C>;
  const T x = z.real(), y = z.imag();
  const T a = std::sin(y / T(2));
  return {std::expm1(x) * std::cos(y) - T(2) * a * a, std::exp(x) * std::sin(y)};
}

// ATen's complex log-add-exp: the operand with the smaller real part is shifted; NaN anywhere gives NaN.
template <typename C>
C logaddexp(C x, C y) {
  using T = R<C>;
  const bool x_min = std::real(x) < std::real(y) || is_nan(y);
  const C lo = x_min ? x : y, hi = x_min ? y : x;
  if (is_nan(lo) || is_nan(hi)) return {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::quiet_NaN()};
  if (!std::isfinite(lo.real()) && lo.real() == hi.real()) {
    return lo.real() < T(0) ? lo : std::log(std::exp(lo) + std::exp(hi));
  }
  return log1p(std::exp(lo - hi)) + hi;
}

template <typename C>
C sigmoid(C z) {
  return C(1) / (C(1) + std::exp(-z));
}

// ATen's pow with a scalar exponent: the exact special cases, std::pow otherwise.
template <typename In, typename Go>
npu_sim::Status pow_scalar(Go go, In e) {
  using C = In;
  if (e == C(2)) return go([](C x) { return x * x; });
  if (e == C(3)) return go([](C x) { return x * x * x; });
  if (e == C(0.5)) return go([](C x) { return std::sqrt(x); });
  if (e == C(-0.5)) return go([](C x) { return C(1) / std::sqrt(x); });
  if (e == C(-1)) return go([](C x) { return C(1) / x; });
  if (e == C(-2)) return go([](C x) { return C(1) / (x * x); });
  return go([e](C x) { return std::pow(x, e); });
}

template <typename C>
npu_sim::Status unary_typed(npu_sim::Stream s, UnaryOp op, const ElementwiseIter& it, const PointwiseParams& p) {
  using T = R<C>;
  auto go = [&](auto f) { return launch_elementwise<C, C, 1>(s, op_name(op), it, f); };
  auto pred = [&](auto f) { return launch_elementwise<bool, C, 1>(s, op_name(op), it, f); };
  // abs and angle write the real type (the adapter sizes the output)
  auto real_out = [&](auto f) {
    if (it.out_dtype == it.in_dtype) return go([f](C z) { return C(f(z)); });
    return launch_elementwise<T, C, 1>(s, op_name(op), it, f);
  };
  if (is_predicate(op) && it.out_dtype != DType::kBool) return npu_sim::Status::kInvalidValue;
  switch (op) {
    case UnaryOp::kNeg: return go([](C z) { return -z; });
    case UnaryOp::kAbs: return real_out([](C z) { return std::abs(z); });
    case UnaryOp::kSign:  // sgn (ATen's sign refuses complex before the kernel)
      return go([](C z) { return z == C(0) ? C(0) : z / std::abs(z); });
    case UnaryOp::kSquare: return go([](C z) { return z * z; });
    case UnaryOp::kReciprocal: return go([](C z) { return C(1) / z; });
    case UnaryOp::kLogicalNot: return pred([](C z) { return z == C(0); });
    case UnaryOp::kIsnan: return pred([](C z) { return is_nan(z); });
    case UnaryOp::kIsinf: return pred([](C z) { return std::isinf(z.real()) || std::isinf(z.imag()); });
    case UnaryOp::kIsfinite: return pred([](C z) { return std::isfinite(z.real()) && std::isfinite(z.imag()); });
    case UnaryOp::kSqrt: return go([](C z) { return std::sqrt(z); });
    case UnaryOp::kRsqrt: return go([](C z) { return C(1) / std::sqrt(z); });
    case UnaryOp::kExp: return go([](C z) { return std::exp(z); });
    case UnaryOp::kExp2: return go([](C z) { return std::exp(z * T(M_LN2)); });
    case UnaryOp::kExpm1: return go([](C z) { return expm1(z); });
    case UnaryOp::kLog: return go([](C z) { return std::log(z); });
    case UnaryOp::kLog2: return go([](C z) { return std::log(z) / T(M_LN2); });
    case UnaryOp::kLog10: return go([](C z) { return std::log10(z); });
    case UnaryOp::kLog1p: return go([](C z) { return log1p(z); });
    case UnaryOp::kSin: return go([](C z) { return std::sin(z); });
    case UnaryOp::kCos: return go([](C z) { return std::cos(z); });
    case UnaryOp::kTan: return go([](C z) { return std::tan(z); });
    case UnaryOp::kAsin: return go([](C z) { return std::asin(z); });
    case UnaryOp::kAcos: return go([](C z) { return std::acos(z); });
    case UnaryOp::kAtan: return go([](C z) { return std::atan(z); });
    case UnaryOp::kSinh: return go([](C z) { return std::sinh(z); });
    case UnaryOp::kCosh: return go([](C z) { return std::cosh(z); });
    case UnaryOp::kTanh: return go([](C z) { return std::tanh(z); });
    case UnaryOp::kAsinh: return go([](C z) { return std::asinh(z); });
    case UnaryOp::kAcosh: return go([](C z) { return std::acosh(z); });
    case UnaryOp::kAtanh: return go([](C z) { return std::atanh(z); });
    case UnaryOp::kSigmoid: return go([](C z) { return sigmoid(z); });
    case UnaryOp::kSilu: return go([](C z) { return z * sigmoid(z); });
    case UnaryOp::kSinc:
      return go([](C z) {
        if (z == C(0)) return C(1);
        const C pz = z * T(M_PI);
        return std::sin(pz) / pz;
      });
    case UnaryOp::kNanToNum: {  // each part replaced as a real number would be
      const T nan = static_cast<T>(p.a), pos = static_cast<T>(p.b), neg = static_cast<T>(p.c);
      return go([=](C z) {
        auto fix = [&](T x) {
          return x != x ? nan : (x == std::numeric_limits<T>::infinity() ? pos
                                 : (x == -std::numeric_limits<T>::infinity() ? neg : x));
        };
        return C(fix(z.real()), fix(z.imag()));
      });
    }
    case UnaryOp::kPowScalar: return pow_scalar(go, params_a<C>(p));
    default: return npu_sim::Status::kInvalidValue;
  }
}

template <typename C>
npu_sim::Status binary_typed(npu_sim::Stream s, BinaryOp op, const ElementwiseIter& it, const PointwiseParams& p) {
  auto go = [&](auto f) { return launch_elementwise<C, C, 2>(s, op_name(op), it, f); };
  auto pred = [&](auto f) { return launch_elementwise<bool, C, 2>(s, op_name(op), it, f); };
  if (is_predicate(op) != (it.out_dtype == DType::kBool)) return npu_sim::Status::kInvalidValue;
  const C a = params_a<C>(p);
  switch (op) {
    case BinaryOp::kAdd: return go([=](C x, C y) { return x + a * y; });
    case BinaryOp::kSub: return go([=](C x, C y) { return x - a * y; });
    case BinaryOp::kMul: return go([](C x, C y) { return x * y; });
    case BinaryOp::kDiv: return go([](C x, C y) { return x / y; });
    case BinaryOp::kPow: return go([](C x, C y) { return std::pow(x, y); });
    case BinaryOp::kEq: return pred([](C x, C y) { return x == y; });
    case BinaryOp::kNe: return pred([](C x, C y) { return x != y; });
    case BinaryOp::kLogicalAnd: return pred([](C x, C y) { return x != C(0) && y != C(0); });
    case BinaryOp::kLogicalOr: return pred([](C x, C y) { return x != C(0) || y != C(0); });
    case BinaryOp::kLogicalXor: return pred([](C x, C y) { return (x != C(0)) != (y != C(0)); });
    // the gradients ATen conjugates (holomorphic functions: grad * conj(f'(z)))
    case BinaryOp::kSigmoidBackward: return go([](C g, C y) { return g * std::conj((C(1) - y) * y); });
    case BinaryOp::kTanhBackward: return go([](C g, C y) { return g * std::conj(C(1) - y * y); });
    case BinaryOp::kSiluBackward:  // CPU's kernel: no conjugate
      return go([](C g, C x) {
        const C sg = sigmoid(x);
        return g * sg * (C(1) + x * (C(1) - sg));
      });
    case BinaryOp::kLogaddexp: return go([](C x, C y) { return logaddexp(x, y); });
    case BinaryOp::kLerpScalar:
      return go([=](C start, C end) {
        return std::abs(a) < R<C>(0.5) ? start + a * (end - start) : end - (end - start) * (C(1) - a);
      });
    default: return npu_sim::Status::kInvalidValue;
  }
}

template <typename C>
npu_sim::Status ternary_typed(npu_sim::Stream s, TernaryOp op, const ElementwiseIter& it, const PointwiseParams& p) {
  auto go = [&](auto f) { return launch_elementwise<C, C, 3>(s, op_name(op), it, f); };
  const C value = params_a<C>(p);
  switch (op) {
    case TernaryOp::kAddcmul: return go([=](C t, C x, C y) { return t + value * x * y; });
    case TernaryOp::kAddcdiv: return go([=](C t, C x, C y) { return t + value * x / y; });
    case TernaryOp::kLerp:
      return go([](C start, C end, C w) {
        return std::abs(w) < R<C>(0.5) ? start + w * (end - start) : end - (end - start) * (C(1) - w);
      });
    default: return npu_sim::Status::kInvalidValue;
  }
}

template <typename F>
npu_sim::Status dispatch_complex(DType t, F&& f) {
  if (t == DType::kComplex64) return f(std::complex<float>{});
  if (t == DType::kComplex128) return f(std::complex<double>{});
  return npu_sim::Status::kInvalidValue;
}

}  // namespace

bool is_complex(DType t) { return t == DType::kComplex64 || t == DType::kComplex128; }

npu_sim::Status complex_unary(npu_sim::Stream s, UnaryOp op, const ElementwiseIter& it, const PointwiseParams& p) {
  return dispatch_complex(it.in_dtype, [&](auto tag) { return unary_typed<decltype(tag)>(s, op, it, p); });
}
npu_sim::Status complex_binary(npu_sim::Stream s, BinaryOp op, const ElementwiseIter& it, const PointwiseParams& p) {
  return dispatch_complex(it.in_dtype, [&](auto tag) { return binary_typed<decltype(tag)>(s, op, it, p); });
}
npu_sim::Status complex_ternary(npu_sim::Stream s, TernaryOp op, const ElementwiseIter& it,
                                const PointwiseParams& p) {
  return dispatch_complex(it.in_dtype, [&](auto tag) { return ternary_typed<decltype(tag)>(s, op, it, p); });
}

}  // namespace npu_kernels::detail
