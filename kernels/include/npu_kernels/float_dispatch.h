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

}  // namespace npu_kernels
