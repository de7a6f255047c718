// Private helpers of the pointwise kernels: the real-dtype dispatch (real_dispatch.h), the math shared by
// their ops (sigmoid, softplus) and the predicate entry points.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "fast_math.h"
#include "npu_kernels/pointwise.h"
#include "real_dispatch.h"  // dispatch_real, which picks the engine instantiation

namespace npu_kernels::detail {

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

// The complex64 / complex128 catalogue (complex_ops.cpp): kInvalidValue for an op without a complex form.
bool is_complex(DType t);
npu_sim::Status complex_unary(npu_sim::Stream s, UnaryOp op, const ElementwiseIter& it, const PointwiseParams& p);
npu_sim::Status complex_binary(npu_sim::Stream s, BinaryOp op, const ElementwiseIter& it, const PointwiseParams& p);
npu_sim::Status complex_ternary(npu_sim::Stream s, TernaryOp op, const ElementwiseIter& it, const PointwiseParams& p);

// The special functions (special_ops.cpp).
npu_sim::Status special_unary(npu_sim::Stream s, UnaryOp op, const ElementwiseIter& it, const PointwiseParams& p);
npu_sim::Status special_binary(npu_sim::Stream s, BinaryOp op, const ElementwiseIter& it, const PointwiseParams& p);

}  // namespace npu_kernels::detail
