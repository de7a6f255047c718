// Shared by the floating-point-only kernels (conv, pooling, norms, softmax, losses): the accumulation
// type and the dtype dispatch over float32, float64, float16 and bfloat16.
#pragma once

#include <type_traits>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// Accumulate in double for float64, in float for float32/float16/bfloat16.
template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Calls f(T{}) for the floating dtypes; kInvalidValue for any other (adapters name the op first).
template <typename F>
npu_sim::Status dispatch_fp(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: return f(double{});
    case DType::kFloat16: return f(Half{});
    case DType::kBFloat16: return f(BFloat16{});
    default: return npu_sim::Status::kInvalidValue;
  }
}

// dispatch_fp, and the integer dtypes too (kernels that only compare and move elements: max pooling).
template <typename F>
npu_sim::Status dispatch_fp_int(DType t, F&& f) {
  switch (t) {
    case DType::kInt64: return f(int64_t{});
    case DType::kInt32: return f(int32_t{});
    case DType::kInt16: return f(int16_t{});
    case DType::kInt8: return f(int8_t{});
    case DType::kUInt8: return f(uint8_t{});
    default: return dispatch_fp(t, std::forward<F>(f));
  }
}

}  // namespace npu_kernels
