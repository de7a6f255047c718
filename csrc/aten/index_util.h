// Helpers shared by the indexing adapters (index_ops.cpp, advanced_index_ops.cpp, sort_ops.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include "aten/npu_tensor.h"
#include "core/npu_stream.h"
#include "npu_kernels/tensor_desc.h"

namespace torch_npu_sim {
namespace index_util {

inline npu_sim::Stream stream_of(const at::Tensor& t) { return current_native_stream(t.device().index()); }

// 0-dim tensors take part as 1-element 1-D tensors.
inline at::Tensor as_1d(const at::Tensor& t) { return t.dim() == 0 ? t.view({1}) : t; }

// `t`'s desc with the iteration sizes `sizes` and stride 0 along `dim` (the indexed operand).
inline npu_kernels::TensorDesc restrided(const at::Tensor& t, at::IntArrayRef sizes, int64_t dim, const char* op) {
  auto d = tensor_desc(t, op);
  for (int i = 0; i < d.ndim; ++i) d.sizes[i] = sizes[i];
  d.strides[dim] = 0;
  return d;
}

}  // namespace index_util
}  // namespace torch_npu_sim
