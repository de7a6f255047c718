// Pointwise ops with a bool result (isnan/isinf/..., comparisons, logical ops). Built without tree
// vectorisation: GCC 12 hits an internal compiler error vectorising 16-bit-float -> bool loops.
#include <cmath>

#include "pointwise_common.h"

namespace npu_kernels {

bool is_predicate(UnaryOp op) {
  switch (op) {
    case UnaryOp::kLogicalNot: case UnaryOp::kIsnan: case UnaryOp::kIsinf: case UnaryOp::kIsfinite:
    case UnaryOp::kIsposinf: case UnaryOp::kIsneginf: case UnaryOp::kSignbit:
      return true;
    default:
      return false;
  }
}

bool is_predicate(BinaryOp op) {
  return op >= BinaryOp::kEq && op <= BinaryOp::kLogicalXor;
}

namespace {

template <typename In>
npu_sim::Status unary_predicate_typed(npu_sim::Stream s, UnaryOp op, const ElementwiseIter& it) {
  using C = compute_t<In>;
  auto go = [&](auto f) { return launch_elementwise<bool, In, 1>(s, op_name(op), it, f); };
  switch (op) {
    case UnaryOp::kLogicalNot: return go([](C x) { return x == C(0); });
    case UnaryOp::kIsnan: return go([](C x) { return x != x; });
    case UnaryOp::kIsinf:
      if constexpr (detail::is_fp_v<C>) return go([](C x) { return std::isinf(x); });
      return go([](C) { return false; });
    case UnaryOp::kIsfinite:
      if constexpr (detail::is_fp_v<C>) return go([](C x) { return std::isfinite(x); });
      return go([](C) { return true; });
    case UnaryOp::kIsposinf:
      if constexpr (detail::is_fp_v<C>) return go([](C x) { return std::isinf(x) && x > 0; });
      return go([](C) { return false; });
    case UnaryOp::kIsneginf:
      if constexpr (detail::is_fp_v<C>) return go([](C x) { return std::isinf(x) && x < 0; });
      return go([](C) { return false; });
    case UnaryOp::kSignbit:
      if constexpr (detail::is_fp_v<C>) return go([](C x) { return std::signbit(x); });
      if constexpr (std::is_signed_v<C>) return go([](C x) { return x < 0; });
      return go([](C) { return false; });
    default: return npu_sim::Status::kInvalidValue;
  }
}

template <typename In>
npu_sim::Status binary_predicate_typed(npu_sim::Stream s, BinaryOp op, const ElementwiseIter& it) {
  using C = compute_t<In>;
  auto go = [&](auto f) { return launch_elementwise<bool, In, 2>(s, op_name(op), it, f); };
  switch (op) {
    case BinaryOp::kEq: return go([](C x, C y) { return x == y; });
    case BinaryOp::kNe: return go([](C x, C y) { return x != y; });
    case BinaryOp::kLt: return go([](C x, C y) { return x < y; });
    case BinaryOp::kLe: return go([](C x, C y) { return x <= y; });
    case BinaryOp::kGt: return go([](C x, C y) { return x > y; });
    case BinaryOp::kGe: return go([](C x, C y) { return x >= y; });
    case BinaryOp::kLogicalAnd: return go([](C x, C y) { return x != C(0) && y != C(0); });
    case BinaryOp::kLogicalOr: return go([](C x, C y) { return x != C(0) || y != C(0); });
    case BinaryOp::kLogicalXor: return go([](C x, C y) { return (x != C(0)) != (y != C(0)); });
    default: return npu_sim::Status::kInvalidValue;
  }
}

}  // namespace

namespace detail {

npu_sim::Status unary_predicate(npu_sim::Stream s, UnaryOp op, const ElementwiseIter& it) {
  return dispatch_real(it.in_dtype, [&](auto tag) { return unary_predicate_typed<decltype(tag)>(s, op, it); });
}

npu_sim::Status binary_predicate(npu_sim::Stream s, BinaryOp op, const ElementwiseIter& it) {
  return dispatch_real(it.in_dtype, [&](auto tag) { return binary_predicate_typed<decltype(tag)>(s, op, it); });
}

}  // namespace detail
}  // namespace npu_kernels
