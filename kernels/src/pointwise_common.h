// Private helpers of the pointwise kernels: dtype dispatch that picks the engine instantiation.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "fast_math.h"
#include "npu_kernels/pointwise.h"

namespace npu_kernels::detail {

// Calls f(T{}) for the real dtypes the pointwise kernels support (complex goes to the CPU fallback).
template <typename F>
inline npu_sim::Status dispatch_real(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: return f(double{});
    case DType::kFloat16: return f(Half{});
    case DType::kBFloat16: return f(BFloat16{});
    case DType::kInt64: return f(int64_t{});
    case DType::kInt32: return f(int32_t{});
    case DType::kInt16: return f(int16_t{});
    case DType::kInt8: return f(int8_t{});
    case DType::kUInt8: return f(uint8_t{});
    case DType::kBool: return f(bool{});
    default: break;
  }
  return npu_sim::Status::kInvalidValue;  // adapters validate dtypes first and name the op
}

template <typename C>
constexpr bool is_fp_v = std::is_floating_point_v<C>;

template <typename C>
NPU_VEC_INLINE C sigmoid(C x) {
  return fast_sigmoid(x);
}

template <typename C>
NPU_VEC_INLINE C softplus(C x, C beta, C threshold) {
  return x * beta > threshold ? x : softplus_exact(x * beta) / beta;
}

// Bool-result kernels (predicate_ops.cpp).
npu_sim::Status unary_predicate(npu_sim::Stream s, UnaryOp op, const ElementwiseIter& it);
npu_sim::Status binary_predicate(npu_sim::Stream s, BinaryOp op, const ElementwiseIter& it);

}  // namespace npu_kernels::detail
