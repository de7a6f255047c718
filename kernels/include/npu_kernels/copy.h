// Data-movement kernels: strided copy with dtype conversion (the device side of Tensor.copy_) and fill.
#pragma once

#include "npu_kernels/tensor_desc.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// dst[i] = convert(src[i]) for every logical index; shapes must match (the adapter broadcasts by
// passing stride 0). Both tensors live on the stream's device.
npu_sim::Status copy_cast(npu_sim::Stream stream, const TensorDesc& dst, const TensorDesc& src);

// dst[...] = value (a ScalarValue, see npu_kernels/dtype.h) converted to dst's dtype.
npu_sim::Status fill(npu_sim::Stream stream, const TensorDesc& dst, ScalarValue value);

}  // namespace npu_kernels
