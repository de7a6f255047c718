// Unary pointwise kernels: math, rounding, predicates and activations over the elementwise engine.
#include "vector_libm.h"  // first: the libm declarations its loops vectorise through

#include <cmath>

#include "pointwise_common.h"
#include "special_float.h"
#include "special_functions.h"
#include "special_math.h"

namespace npu_kernels {

bool is_float_only(UnaryOp op) {
  return op != UnaryOp::kPowScalar && static_cast<int>(op) >= static_cast<int>(UnaryOp::kSqrt);
}

const char* op_name(UnaryOp op) {
  static const char* const names[] = {
      "neg", "abs", "sign", "square", "relu", "bitwise_not", "logical_not", "isnan", "isinf", "isfinite",
      "isposinf", "isneginf", "signbit", "clamp", "floor", "ceil", "round", "trunc", "frac", "reciprocal",
      "hardtanh", "sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
      "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "log_sigmoid", "erf",
      "erfc", "gelu", "gelu_tanh", "silu", "mish", "softplus", "leaky_relu", "elu", "hardswish", "hardsigmoid",
      "nan_to_num", "pow_scalar", "round_decimals", "lgamma", "digamma", "sinc", "logit", "relu6", "celu_selu", "hardshrink", "softshrink", "erfinv",
      "trigamma", "frexp_mantissa", "frexp_exponent", "i0", "special_i0e", "special_i1", "special_i1e", "special_entr", "polygamma",
      "special_modified_bessel_i0", "special_modified_bessel_i1", "special_modified_bessel_k0",
      "special_modified_bessel_k1", "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1",
      "special_bessel_j0", "special_bessel_j1", "special_bessel_y0", "special_bessel_y1",
      "special_spherical_bessel_j0", "special_airy_ai", "special_erfcx", "special_log_ndtr", "special_ndtri"};
  return names[static_cast<int>(op)];
}

namespace {

// Ops valid for every real dtype.
template <typename In>
npu_sim::Status general(npu_sim::Stream s, UnaryOp op, const ElementwiseIter& it, const PointwiseParams& p) {
  using C = compute_t<In>;
  auto go = [&](auto f) { return launch_elementwise<In, In, 1>(s, op_name(op), it, f); };
  constexpr bool kBool = std::is_same_v<C, bool>;
  switch (op) {
    case UnaryOp::kNeg:
      if constexpr (kBool) return npu_sim::Status::kInvalidValue;
      else return go([](C x) { return static_cast<C>(-x); });
    case UnaryOp::kAbs:
      if constexpr (kBool) return npu_sim::Status::kInvalidValue;  // as ATen's CPU and CUDA kernels
      else if constexpr (std::is_unsigned_v<C>) return go([](C x) { return x; });
      else if constexpr (detail::is_fp_v<C>) return go([](C x) { return std::fabs(x); });
      else return go([](C x) { return static_cast<C>(x < 0 ? -x : x); });
    case UnaryOp::kSign:
      if constexpr (kBool) return go([](C x) { return x; });
      else return go([](C x) { return static_cast<C>((C(0) < x) - (x < C(0))); });
    case UnaryOp::kSquare: return go([](C x) { return static_cast<C>(x * x); });
    case UnaryOp::kRelu:
      if constexpr (kBool) return go([](C x) { return x; });
      else return go([](C x) { return x < C(0) ? C(0) : x; });
    case UnaryOp::kBitwiseNot:
      if constexpr (kBool) return go([](C x) { return !x; });
      else if constexpr (std::is_integral_v<C>) return go([](C x) { return static_cast<C>(~x); });
      else return npu_sim::Status::kInvalidValue;
    case UnaryOp::kClamp:
    case UnaryOp::kHardtanh: {
      const C lo = static_cast<C>(p.a), hi = static_cast<C>(p.b);
      const bool has_lo = op == UnaryOp::kHardtanh || p.has_a, has_hi = op == UnaryOp::kHardtanh || p.has_b;
      // Branch-free (two selects a lane): an absent bound is the type's extreme. A NaN input fails both
      // comparisons and passes through; a NaN bound gives NaN, as torch.clamp's min(max(x, lo), hi).
      using L = std::numeric_limits<C>;
      constexpr C kMin = [] { if constexpr (L::has_infinity) return -L::infinity(); else return L::lowest(); }();
      constexpr C kMax = [] { if constexpr (L::has_infinity) return L::infinity(); else return L::max(); }();
      const C lo_v = has_lo ? lo : kMin, hi_v = has_hi ? hi : kMax;
      const bool lo_nan = lo_v != lo_v, hi_nan = hi_v != hi_v;
      return go([=](C x) {
        const C y = (x < lo_v) | lo_nan ? lo_v : x;
        return (y > hi_v) | hi_nan ? hi_v : y;
      });
    }
    // Rounding: integers are copied, bool has no kernel (as ATen's CPU and CUDA kernels); frac is floating only.
    case UnaryOp::kFloor:
      if constexpr (detail::is_fp_v<C>) return go([](C x) { return std::floor(x); });
      else if constexpr (kBool) return npu_sim::Status::kInvalidValue;
      else return go([](C x) { return x; });
    case UnaryOp::kCeil:
      if constexpr (detail::is_fp_v<C>) return go([](C x) { return std::ceil(x); });
      else if constexpr (kBool) return npu_sim::Status::kInvalidValue;
      else return go([](C x) { return x; });
    case UnaryOp::kRound:
      if constexpr (detail::is_fp_v<C>) return go([](C x) { return std::nearbyint(x); });  // half to even
      else if constexpr (kBool) return npu_sim::Status::kInvalidValue;
      else return go([](C x) { return x; });
    case UnaryOp::kTrunc:
      if constexpr (detail::is_fp_v<C>) return go([](C x) { return std::trunc(x); });
      else if constexpr (kBool) return npu_sim::Status::kInvalidValue;
      else return go([](C x) { return x; });
    case UnaryOp::kFrac:
      if constexpr (detail::is_fp_v<C>) return go([](C x) { return x - std::trunc(x); });
      else return npu_sim::Status::kInvalidValue;
    case UnaryOp::kReciprocal:
      if constexpr (detail::is_fp_v<C>) return go([](C x) { return C(1) / x; });
      else return npu_sim::Status::kInvalidValue;
    case UnaryOp::kPowScalar:
      if constexpr (detail::is_fp_v<C> || kBool) {
        return npu_sim::Status::kInvalidValue;  // floating types take the floating() path
      } else {
        // integer base, non-negative integral exponent (ATen rejects negative ones for integers)
        const int64_t e = static_cast<int64_t>(p.a);
        return go([e](C x) {
          C result = 1, base = x;
          for (int64_t k = e; k > 0; k >>= 1) {
            if (k & 1) result = static_cast<C>(result * base);
            base = static_cast<C>(base * base);
          }
          return result;
        });
      }
    default: return npu_sim::Status::kInvalidValue;
  }
}

template <typename In>
npu_sim::Status floating(npu_sim::Stream s, UnaryOp op, const ElementwiseIter& it, const PointwiseParams& p) {
  using C = compute_t<In>;
  if constexpr (!detail::is_fp_v<C>) {
    return npu_sim::Status::kInvalidValue;  // the adapter promotes integer inputs of float ops
  } else {
    auto go = [&](auto f) { return launch_elementwise<In, In, 1>(s, op_name(op), it, f); };
    // the branch-free fast_math.h functors vectorise over 16 lanes: 16-bit runs take them in registers
    auto go_lanes = [&](auto f) { return go(detail::in_registers(f)); };
    const C a = static_cast<C>(p.a), b = static_cast<C>(p.b), c = static_cast<C>(p.c);
    switch (op) {
      case UnaryOp::kSqrt: return go([](C x) { return std::sqrt(x); });
      case UnaryOp::kRsqrt: return go([](C x) { return C(1) / std::sqrt(x); });
      case UnaryOp::kExp: return go_lanes([](C x) { return detail::fast_exp(x); });
      case UnaryOp::kExp2: return go([](C x) { return std::exp2(x); });
      case UnaryOp::kExpm1: return go([](C x) { return std::expm1(x); });
      case UnaryOp::kLog: return go([](C x) { return detail::fast_log(x); });
      case UnaryOp::kLog2: return go([](C x) { return std::log2(x); });
      case UnaryOp::kLog10: return go([](C x) { return std::log10(x); });
      case UnaryOp::kLog1p: return go([](C x) { return detail::fast_log1p(x); });
      case UnaryOp::kSin: return go([](C x) { return std::sin(x); });
      case UnaryOp::kCos: return go([](C x) { return std::cos(x); });
      case UnaryOp::kTan: return go([](C x) { return std::tan(x); });
      case UnaryOp::kAsin: return go([](C x) { return std::asin(x); });
      case UnaryOp::kAcos: return go([](C x) { return std::acos(x); });
      case UnaryOp::kAtan: return go([](C x) { return std::atan(x); });
      case UnaryOp::kSinh: return go([](C x) { return std::sinh(x); });
      case UnaryOp::kCosh: return go([](C x) { return std::cosh(x); });
      case UnaryOp::kTanh: return go_lanes([](C x) { return detail::fast_tanh(x); });
      case UnaryOp::kAsinh: return go([](C x) { return std::asinh(x); });
      case UnaryOp::kAcosh: return go([](C x) { return std::acosh(x); });
      case UnaryOp::kAtanh: return go([](C x) { return std::atanh(x); });
      case UnaryOp::kSigmoid: return go_lanes([](C x) { return detail::sigmoid(x); });
      case UnaryOp::kLogSigmoid:
        return go([](C x) { return -detail::softplus_exact(-x); });  // log(sigmoid(x)) = -softplus(-x)
      case UnaryOp::kErf: return go_lanes([](C x) { return detail::fast_erf(x); });
      case UnaryOp::kErfc: return go([](C x) { return std::erfc(x); });
      case UnaryOp::kGelu: return go_lanes([](C x) { return detail::gelu_erf(x); });
      case UnaryOp::kGeluTanh: return go_lanes([](C x) { return detail::gelu_tanh(x); });
      case UnaryOp::kSilu: return go_lanes([](C x) { return x * detail::sigmoid(x); });
      case UnaryOp::kMish: return go([](C x) { return x * detail::fast_tanh(detail::softplus_exact(x)); });
      case UnaryOp::kSoftplus: return go([=](C x) { return detail::softplus(x, a, b); });
      case UnaryOp::kLeakyRelu: return go([=](C x) { return x > C(0) ? x : x * a; });
      case UnaryOp::kElu:  // alpha, scale, input_scale
        return go([=](C x) { return x > C(0) ? b * x : b * a * (detail::fast_exp(x * c) - C(1)); });
      case UnaryOp::kHardswish:
        return go([](C x) { return x * std::min(std::max(x + C(3), C(0)), C(6)) / C(6); });
      case UnaryOp::kHardsigmoid: return go([](C x) { return std::min(std::max(x + C(3), C(0)), C(6)) / C(6); });
      case UnaryOp::kNanToNum:  // nan, posinf, neginf replacements
        return go([=](C x) { return x != x ? a : (x == std::numeric_limits<C>::infinity() ? b
                                                  : (x == -std::numeric_limits<C>::infinity() ? c : x)); });
      case UnaryOp::kPowScalar:
        if (p.a == 2.0) return go([](C x) { return x * x; });
        if (p.a == 0.5) return go([](C x) { return std::sqrt(x); });
        if (p.a == 1.0) return go([](C x) { return x; });
        if (p.a == -1.0) return go([](C x) { return C(1) / x; });
        return go([=](C x) { return std::pow(x, a); });
      case UnaryOp::kRoundDecimals: {
        const C ten_pow = static_cast<C>(std::pow(10.0, static_cast<double>(p.i)));
        if (p.i >= 0) return go([=](C x) { return std::nearbyint(x * ten_pow) / ten_pow; });
        const C inv = static_cast<C>(std::pow(10.0, static_cast<double>(-p.i)));
        return go([=](C x) { return std::nearbyint(x / inv) * inv; });
      }
      case UnaryOp::kLgamma:
        if constexpr (std::is_same_v<C, float>) return go([](float x) { return detail::lgamma_float(x); });
        return go([](C x) { return detail::lgamma_nosign(x); });
      case UnaryOp::kSinc:
        return go([](C x) {
          if (x == C(0)) return C(1);
          const C px = C(M_PI) * x;
          return std::sin(px) / px;
        });
      case UnaryOp::kLogit:
        return go([=](C x) {
          if (p.has_a) x = std::min(std::max(x, a), C(1) - a);
          return std::log(x / (C(1) - x));
        });
      case UnaryOp::kDigamma: return go([](C x) { return static_cast<C>(detail::digamma(static_cast<double>(x))); });
      case UnaryOp::kTrigamma: return go([](C x) { return static_cast<C>(detail::trigamma(static_cast<double>(x))); });
      case UnaryOp::kErfinv:
        if constexpr (std::is_same_v<C, float>) return go([](float x) { return detail::erfinv_float(x); });
        return go([](C x) { return static_cast<C>(detail::erfinv(static_cast<double>(x))); });
      case UnaryOp::kFrexpMantissa:
        return go([](C x) {
          int e = 0;
          return std::isfinite(x) ? std::frexp(x, &e) : x;  // a 16-bit value's mantissa is exact in float
        });
      case UnaryOp::kHardshrink: return go([=](C x) { return (x >= -a && x <= a) ? C(0) : x; });
      case UnaryOp::kSoftshrink: return go([=](C x) { return x > a ? x - a : (x < -a ? x + a : C(0)); });
      default: return npu_sim::Status::kInvalidValue;
    }
  }
}

// frexp's exponent, int32, from a floating input (C's frexp leaves it unspecified for inf and NaN: 0, as CPU).
npu_sim::Status frexp_exponent(npu_sim::Stream s, const ElementwiseIter& it) {
  if (it.out_dtype != DType::kInt32) return npu_sim::Status::kInvalidValue;
  return detail::dispatch_real(it.in_dtype, [&](auto tag) {
    using In = decltype(tag);
    using C = compute_t<In>;
    if constexpr (!detail::is_fp_v<C>) {
      return npu_sim::Status::kInvalidValue;
    } else {
      return launch_elementwise<int32_t, In, 1>(s, "frexp_exponent", it, [](C x) {
        int e = 0;
        if (std::isfinite(x)) std::frexp(x, &e);
        return static_cast<int32_t>(e);
      });
    }
  });
}

}  // namespace

npu_sim::Status unary(npu_sim::Stream stream, UnaryOp op, const ElementwiseIter& it, const PointwiseParams& p) {
  if (detail::is_complex(it.in_dtype)) return detail::complex_unary(stream, op, it, p);
  if (is_special(op)) return detail::special_unary(stream, op, it, p);
  if (op == UnaryOp::kFrexpExponent) return frexp_exponent(stream, it);
  return detail::dispatch_real(it.in_dtype, [&](auto tag) {
    using In = decltype(tag);
    if (is_predicate(op)) return detail::unary_predicate(stream, op, it);
    if (is_float_only(op) || (op == UnaryOp::kPowScalar && detail::is_fp_v<compute_t<In>>)) {
      return floating<In>(stream, op, it, p);
    }
    return general<In>(stream, op, it, p);
  });
}

}  // namespace npu_kernels
