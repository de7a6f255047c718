// Data-movement kernels: strided copy with dtype conversion (the device side of Tensor.copy_) and fill.
#pragma once

#include "npu_kernels/tensor_desc.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// dst[i] = convert(src[i]) for every logical index; shapes must match (the adapter broadcasts by
// passing stride 0). Both tensors live on the stream's device.
npu_sim::Status copy_cast(npu_sim::Stream stream, const TensorDesc& dst, const TensorDesc& src);

// A scalar to fill with, carried in the widest type of its kind.
struct ScalarValue {
  enum Kind { kBool, kInt, kDouble, kComplex } kind = kDouble;
  bool b = false;
  int64_t i = 0;
  double d = 0.0;
  double imag = 0.0;
};

// dst[...] = value converted to dst's dtype.
npu_sim::Status fill(npu_sim::Stream stream, const TensorDesc& dst, ScalarValue value);

}  // namespace npu_kernels
