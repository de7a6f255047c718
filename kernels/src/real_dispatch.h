// Private to kernels/: the dtype dispatch over the real dtypes (complex goes to the adapter's CPU
// fallback), shared by the pointwise and the reduction kernels.
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels::detail {

// Calls f(T{}) for the real dtypes; kInvalidValue for any other (adapters validate dtypes first and name
// the op).
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
    default: return npu_sim::Status::kInvalidValue;
  }
}

}  // namespace npu_kernels::detail
