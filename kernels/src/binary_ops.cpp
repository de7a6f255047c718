// Binary pointwise kernels: arithmetic (with Python's division/modulo semantics), comparisons, logical,
// bitwise and shift ops, gcd / lcm, and the activation backward helpers (grad_output, saved tensor).
#include "vector_libm.h"  // first: the libm declarations its loops vectorise through

#include <cmath>
#include <cstdlib>

#include "pointwise_common.h"

namespace npu_kernels {

const char* op_name(BinaryOp op) {
  static const char* const names[] = {
      "add", "sub", "mul", "div", "div_trunc", "div_floor", "remainder", "fmod", "pow", "atan2", "maximum",
      "minimum", "fmax", "fmin", "hypot", "copysign", "xlogy", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
      "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "lshift", "rshift", "gcd", "lcm",
      "threshold_backward", "sigmoid_backward", "tanh_backward", "gelu_backward", "gelu_tanh_backward",
      "silu_backward", "leaky_relu_backward", "elu_backward", "hardswish_backward", "hardsigmoid_backward",
      "softplus_backward", "hardtanh_backward", "mish_backward", "log_sigmoid_backward", "threshold", "lerp", "heaviside",
      "logaddexp", "logaddexp2", "logit_backward", "hardshrink_backward", "softshrink_backward", "prelu",
      "prelu_backward_weight", "glu", "nextafter", "special_xlog1py", "igamma", "igammac", "special_zeta",
      "special_chebyshev_polynomial_t", "special_chebyshev_polynomial_u", "special_chebyshev_polynomial_v",
      "special_chebyshev_polynomial_w", "special_shifted_chebyshev_polynomial_t",
      "special_shifted_chebyshev_polynomial_u", "special_shifted_chebyshev_polynomial_v",
      "special_shifted_chebyshev_polynomial_w", "special_hermite_polynomial_h", "special_hermite_polynomial_he",
      "special_laguerre_polynomial_l", "special_legendre_polynomial_p"};
  return names[static_cast<int>(op)];
}

namespace {

template <typename C>
C int_pow(C base, C exp) {
  if constexpr (std::is_signed_v<C>) {
    if (exp < 0) return base == 1 ? C(1) : (base == -1 ? (exp % 2 ? C(-1) : C(1)) : C(0));
  }
  C result = 1;
  while (exp) {
    if (exp & 1) result = static_cast<C>(result * base);
    exp = static_cast<C>(exp >> 1);
    base = static_cast<C>(base * base);
  }
  return result;
}

// ATen's calc_gcd / lcm arithmetic: std::abs (promoting the narrow types to int), then Euclid.
template <typename C>
C int_abs(C x) {
  if constexpr (std::is_signed_v<C>) return static_cast<C>(std::abs(x));
  else return x;
}

template <typename C>
C int_gcd(C a, C b) {
  a = int_abs(a);
  b = int_abs(b);
  while (a != 0) {
    const C c = a;
    a = static_cast<C>(b % a);
    b = c;
  }
  return b;
}

// c10's nextafter for Half / BFloat16: NaN if either is NaN, `to` if equal, the smallest subnormal with to's
// sign from zero, else the bit pattern one step towards `to`.
template <typename T>
T next_after_16(T from, float f, float to) {
  if (f != f || to != to) return T(std::numeric_limits<float>::quiet_NaN());
  if (f == to) return T(to);
  T r{};
  if (f == 0.0f) {
    r.bits = std::signbit(to) ? uint16_t{0x8001} : uint16_t{1};
  } else {
    r.bits = static_cast<uint16_t>(from.bits + (((f < to) == (f > 0.0f)) ? 1 : -1));
  }
  return r;
}

template <typename In>
npu_sim::Status arithmetic(npu_sim::Stream s, BinaryOp op, const ElementwiseIter& it, const PointwiseParams& p) {
  using C = compute_t<In>;
  auto go = [&](auto f) { return launch_elementwise<In, In, 2>(s, op_name(op), it, f); };
  // add, sub, mul and true division: 16 lanes at a time in registers for 16-bit runs (elementwise.h)
  auto go_lanes = [&](auto f) { return go(detail::in_registers(f)); };
  constexpr bool kBool = std::is_same_v<C, bool>;
  constexpr bool kFp = detail::is_fp_v<C>;
  const C alpha = static_cast<C>(p.a);
  switch (op) {
    case BinaryOp::kAdd:
      if constexpr (kBool) {
        if (p.a == 0.0) return go([](C x, C) { return x; });  // alpha=False: x + False * y is x
        return go([](C x, C y) { return x || y; });
      } else if (p.a == 1.0) return go_lanes([](C x, C y) { return static_cast<C>(x + y); });
      else return go_lanes([=](C x, C y) { return static_cast<C>(x + alpha * y); });
    case BinaryOp::kSub:
      if constexpr (kBool) return npu_sim::Status::kInvalidValue;
      else if (p.a == 1.0) return go_lanes([](C x, C y) { return static_cast<C>(x - y); });
      else return go_lanes([=](C x, C y) { return static_cast<C>(x - alpha * y); });
    case BinaryOp::kMul:
      if constexpr (kBool) return go([](C x, C y) { return x && y; });
      else return go_lanes([](C x, C y) { return static_cast<C>(x * y); });
    case BinaryOp::kDiv:
    case BinaryOp::kDivTrunc:
    case BinaryOp::kDivFloor:
      if constexpr (kFp) {
        if (op == BinaryOp::kDiv) return go_lanes([](C x, C y) { return x / y; });
        // 16-bit: the quotient rounds to the dtype before it is truncated, as CUDA's kernel (trunc of a Half /
        // BFloat16 quotient) and CPU's vectorised one compute it: -3.890625 / -0.216796875 in bfloat16 is 18.0, so 18
        if (op == BinaryOp::kDivTrunc) return go([](C x, C y) { return std::trunc(static_cast<C>(In(x / y))); });
        return go([](C x, C y) {
          // Python's floor division, computed like ATen (fmod-based, exact for large quotients). 16-bit: every step
          // rounds to the dtype, as c10::Half / c10::BFloat16 arithmetic does in CUDA's kernel (CPU's vectorised one
          // agrees): bfloat16 18.875 // -0.2001953125 is -96 there, where float32 steps give -95.
          const auto r = [](C v) { return static_cast<C>(In(v)); };
          if (y == C(0)) return x / y;
          const C mod = r(std::fmod(x, y));
          C div = r(r(x - mod) / y);
          if (mod != C(0) && (y < C(0)) != (mod < C(0))) div = r(div - C(1));
          if (div == C(0)) return std::copysign(C(0), r(x / y));
          C floordiv = r(std::floor(div));
          if (r(div - floordiv) > C(0.5)) floordiv = r(floordiv + C(1));
          return floordiv;
        });
      } else if constexpr (!kBool) {
        if (op == BinaryOp::kDivTrunc) {
          return go([](C x, C y) {
            if (y == 0) throw npu_sim::KernelError("ZeroDivisionError: integer division by zero");
            return static_cast<C>(x / y);
          });
        }
        return go([](C x, C y) {
          if (y == 0) throw npu_sim::KernelError("ZeroDivisionError: integer division by zero");
          C q = static_cast<C>(x / y);
          if constexpr (std::is_signed_v<C>) {
            if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
          }
          return q;
        });
      } else {
        return npu_sim::Status::kInvalidValue;
      }
    case BinaryOp::kRemainder:
    case BinaryOp::kFmod:
      if constexpr (kFp) {
        if (op == BinaryOp::kFmod) return go([](C x, C y) { return std::fmod(x, y); });
        return go([](C x, C y) {
          C r = std::fmod(x, y);
          if (r != C(0) && ((r < C(0)) != (y < C(0)))) r += y;
          return r;
        });
      } else if constexpr (!kBool) {
        if (op == BinaryOp::kFmod) {
          return go([](C x, C y) {
            if (y == 0) throw npu_sim::KernelError("ZeroDivisionError: integer modulo by zero");
            return static_cast<C>(x % y);
          });
        }
        return go([](C x, C y) {
          if (y == 0) throw npu_sim::KernelError("ZeroDivisionError: integer modulo by zero");
          C r = static_cast<C>(x % y);
          if constexpr (std::is_signed_v<C>) {
            if (r != 0 && ((r < 0) != (y < 0))) r = static_cast<C>(r + y);
          }
          return r;
        });
      } else {
        return npu_sim::Status::kInvalidValue;
      }
    case BinaryOp::kPow:
      if constexpr (kFp) return go([](C x, C y) { return std::pow(x, y); });
      else if constexpr (!kBool) return go([](C x, C y) { return int_pow(x, y); });
      else return npu_sim::Status::kInvalidValue;
    case BinaryOp::kHeaviside:
      if constexpr (kBool) return go([](C x, C y) { return x ? true : y; });
      else return go([](C x, C y) { return x == C(0) ? y : static_cast<C>(x > C(0)); });
    case BinaryOp::kThreshold: {
      const C t = static_cast<C>(p.a), v = static_cast<C>(p.b);
      return go([=](C x, C y) { return x <= t ? v : y; });
    }
    case BinaryOp::kMaximum:
      if constexpr (kFp) return go([](C x, C y) { return (x != x) ? x : ((y != y) ? y : std::max(x, y)); });
      else return go([](C x, C y) { return std::max(x, y); });
    case BinaryOp::kMinimum:
      if constexpr (kFp) return go([](C x, C y) { return (x != x) ? x : ((y != y) ? y : std::min(x, y)); });
      else return go([](C x, C y) { return std::min(x, y); });
    case BinaryOp::kFmax:
      if constexpr (kFp) return go([](C x, C y) { return std::fmax(x, y); });
      else return go([](C x, C y) { return std::max(x, y); });
    case BinaryOp::kFmin:
      if constexpr (kFp) return go([](C x, C y) { return std::fmin(x, y); });
      else return go([](C x, C y) { return std::min(x, y); });
    case BinaryOp::kBitwiseAnd:
      if constexpr (std::is_integral_v<C>) return go([](C x, C y) { return static_cast<C>(x & y); });
      else return npu_sim::Status::kInvalidValue;
    case BinaryOp::kBitwiseOr:
      if constexpr (std::is_integral_v<C>) return go([](C x, C y) { return static_cast<C>(x | y); });
      else return npu_sim::Status::kInvalidValue;
    case BinaryOp::kBitwiseXor:
      if constexpr (std::is_integral_v<C>) return go([](C x, C y) { return static_cast<C>(x ^ y); });
      else return npu_sim::Status::kInvalidValue;
    case BinaryOp::kLshift:
      if constexpr (std::is_integral_v<C> && !kBool) {
        return go([](C x, C y) {
          using U = std::make_unsigned_t<C>;
          return (y < 0 || y >= static_cast<C>(sizeof(C) * 8)) ? C(0) : static_cast<C>(static_cast<U>(x) << y);
        });
      } else return npu_sim::Status::kInvalidValue;
    case BinaryOp::kRshift:
      if constexpr (std::is_integral_v<C> && !kBool) {
        return go([](C x, C y) {
          const C bits = static_cast<C>(sizeof(C) * 8);
          if (y < 0 || y >= bits) return static_cast<C>(std::is_signed_v<C> && x < 0 ? -1 : 0);
          return static_cast<C>(x >> y);
        });
      } else return npu_sim::Status::kInvalidValue;
    case BinaryOp::kGcd:
      if constexpr (std::is_integral_v<C> && !kBool) return go([](C x, C y) { return int_gcd(x, y); });
      else return npu_sim::Status::kInvalidValue;
    case BinaryOp::kLcm:
      if constexpr (std::is_integral_v<C> && !kBool) {
        return go([](C x, C y) {
          // ATen's abs(a / g * b) takes the absolute value in C++'s promoted type (int for the narrow types)
          // and narrows after: int8 lcm(15, 14) = 210 is -46, not 46
          const C g = int_gcd(x, y);
          if (g == 0) return C(0);
          const auto m = x / g * y;
          return static_cast<C>(m < 0 ? -m : m);
        });
      } else return npu_sim::Status::kInvalidValue;
    default: break;
  }
  if constexpr (!kFp) {
    return npu_sim::Status::kInvalidValue;
  } else {
    const C a = static_cast<C>(p.a), b = static_cast<C>(p.b), c = static_cast<C>(p.c);
    switch (op) {
      case BinaryOp::kAtan2: return go([](C x, C y) { return std::atan2(x, y); });
      case BinaryOp::kHypot: return go([](C x, C y) { return std::hypot(x, y); });
      case BinaryOp::kCopysign: return go([](C x, C y) { return std::copysign(x, y); });
      case BinaryOp::kXlogy:
        return go([](C x, C y) { return y != y ? y : (x == C(0) ? C(0) : x * std::log(y)); });
      // ATen's meta builds threshold_backward and leaky_relu_backward iterators as (self, grad).
      case BinaryOp::kThresholdBackward: return go([=](C x, C g) { return x <= a ? C(0) : g; });
      case BinaryOp::kSigmoidBackward: return go([](C g, C y) { return g * (C(1) - y) * y; });
      case BinaryOp::kTanhBackward: return go([](C g, C y) { return g * (C(1) - y * y); });
      case BinaryOp::kGeluBackward:
        return go([](C g, C x) {
          const C cdf = C(0.5) * (C(1) + detail::fast_erf(x * C(M_SQRT1_2)));
          const C pdf = detail::fast_exp(C(-0.5) * x * x) * C(M_2_SQRTPI * M_SQRT1_2 * 0.5);
          return g * (cdf + x * pdf);
        });
      case BinaryOp::kGeluTanhBackward: return go([](C g, C x) { return g * detail::gelu_tanh_derivative(x); });
      case BinaryOp::kSiluBackward:
        return go([](C g, C x) {
          const C sg = detail::sigmoid(x);
          return g * sg * (C(1) + x * (C(1) - sg));
        });
      case BinaryOp::kLeakyReluBackward: return go([=](C x, C g) { return x > C(0) ? g : g * a; });
      case BinaryOp::kEluBackward:  // a alpha, b scale, c input_scale, p.i: 1 if the saved tensor is the result
        if (p.i) return go([=](C g, C y) { return y <= C(0) ? g * c * (y + a * b) : g * b; });
        return go([=](C g, C x) { return x <= C(0) ? g * c * b * a * detail::fast_exp(x * c) : g * b; });
      case BinaryOp::kHardswishBackward:
        // open interval, as ATen: the gradient at exactly -3 is 0 and at 3 is grad
        return go([](C g, C x) { return x <= C(-3) ? C(0) : (x < C(3) ? g * (x / C(3) + C(0.5)) : g); });
      case BinaryOp::kHardsigmoidBackward:
        return go([](C g, C x) { return (x > C(-3) && x < C(3)) ? g / C(6) : C(0); });
      case BinaryOp::kSoftplusBackward:  // a beta, b threshold
        return go([=](C g, C x) {
          return (x * a) > b ? g : g * detail::sigmoid(x * a);
        });
      case BinaryOp::kHardtanhBackward: return go([=](C g, C x) { return (x <= a || x >= b) ? C(0) : g; });
      case BinaryOp::kMishBackward:
        return go([](C g, C x) {
          const C t = detail::fast_tanh(detail::softplus_exact(x)), sg = detail::sigmoid(x);
          return g * (t + x * sg * (C(1) - t * t));
        });
      case BinaryOp::kLogSigmoidBackward: return go([](C g, C x) { return g * detail::sigmoid(-x); });
      case BinaryOp::kLogaddexp:
      case BinaryOp::kLogaddexp2: {
        // equal infinities would give inf - inf = NaN in the shifted form
        if (op == BinaryOp::kLogaddexp) {
          return go([](C x, C y) {
            if (std::isinf(x) && x == y) return x;
            return std::max(x, y) + std::log1p(std::exp(-std::fabs(x - y)));
          });
        }
        return go([](C x, C y) {
          if (std::isinf(x) && x == y) return x;
          return std::max(x, y) + std::log1p(std::exp2(-std::fabs(x - y))) / C(M_LN2);
        });
      }
      case BinaryOp::kLogitBackward:
        if (p.has_a) {
          const C lo = a, hi = C(1) - a;
          return go([=](C g, C x) { return (x < lo || x > hi) ? C(0) : g / (x * (C(1) - x)); });
        }
        return go([](C g, C x) {
          return (x < C(0) || x > C(1)) ? std::numeric_limits<C>::quiet_NaN() : g / (x * (C(1) - x));
        });
      case BinaryOp::kHardshrinkBackward: return go([=](C g, C x) { return (x >= -a && x <= a) ? C(0) : g; });
      case BinaryOp::kSoftshrinkBackward: return go([=](C g, C x) { return (x >= -a && x <= a) ? C(0) : g; });
      case BinaryOp::kPrelu: return go([](C x, C w) { return x > C(0) ? x : w * x; });
      case BinaryOp::kPreluGradWeight: return go([](C x, C g) { return x > C(0) ? C(0) : x * g; });
      case BinaryOp::kGlu: return go([](C x, C y) { return x * detail::sigmoid(y); });
      case BinaryOp::kNextafter:
        if constexpr (std::is_same_v<C, In>) {
          return go([](C x, C y) { return std::nextafter(x, y); });
        } else {  // fp16 / bf16: one step of the 16-bit pattern (the float values convert back exactly)
          return go([](C x, C y) { return static_cast<float>(next_after_16<In>(In(x), x, y)); });
        }
      case BinaryOp::kLerpScalar:
        return go([=](C start, C end) {
          return std::abs(a) < C(0.5) ? start + a * (end - start) : end - (end - start) * (C(1) - a);
        });
      default: return npu_sim::Status::kInvalidValue;
    }
  }
}

}  // namespace

npu_sim::Status binary(npu_sim::Stream stream, BinaryOp op, const ElementwiseIter& it, const PointwiseParams& p) {
  if (detail::is_complex(it.in_dtype)) return detail::complex_binary(stream, op, it, p);
  if (is_special(op)) return detail::special_binary(stream, op, it, p);
  return detail::dispatch_real(it.in_dtype, [&](auto tag) {
    using In = decltype(tag);
    if (is_predicate(op)) return detail::binary_predicate(stream, op, it);
    return arithmetic<In>(stream, op, it, p);
  });
}

}  // namespace npu_kernels
