// Helpers shared by the indexing adapters (index_ops.cpp, advanced_index_ops.cpp, sort_ops.cpp, median_ops.cpp).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>

#include "aten/npu_tensor.h"
#include "core/npu_stream.h"
#include "npu_kernels/tensor_desc.h"

namespace torch_npu_sim {
namespace index_util {

// 0-dim tensors take part as 1-element 1-D tensors.
inline at::Tensor as_1d(const at::Tensor& t) { return t.dim() == 0 ? t.view({1}) : t; }

// `t`'s desc with the iteration sizes `sizes` and stride 0 along `dim` (the indexed operand).
inline npu_kernels::TensorDesc restrided(const at::Tensor& t, at::IntArrayRef sizes, int64_t dim, const char* op) {
  auto d = tensor_desc(t, op);
  for (int i = 0; i < d.ndim; ++i) d.sizes[i] = sizes[i];
  d.strides[dim] = 0;
  return d;
}

// The out= tensors of a selection or sort along a dim (sort, topk, kthvalue, median): values of self's dtype and
// int64 indices on self's device, as CPU and CUDA require (the kernels write self's element type).
inline void check_selection_out(const char* op, const at::Tensor& self, const at::Tensor& values,
                                const at::Tensor& indices) {
  TORCH_CHECK(values.scalar_type() == self.scalar_type(), op, ": Expected out tensor values to have dtype ",
              self.scalar_type(), ", but got ", values.scalar_type(), " instead");
  TORCH_CHECK(indices.scalar_type() == at::kLong, op, ": Expected out tensor indices to have dtype Long, but got ",
              indices.scalar_type(), " instead");
  TORCH_CHECK(values.device() == self.device() && indices.device() == self.device(), op,
              ": Expected values and indices on the device of self (", self.device(), ")");
}

// The values and indices a selection along `dim` found (that dim kept at size 1) written into the outputs:
// 0-dim for a 0-dim self, squeezed unless keepdim (median, kthvalue).
inline void write_selection(at::Tensor v, at::Tensor i, const at::Tensor& self, int64_t dim, bool keepdim,
                            const at::Tensor& values, const at::Tensor& indices) {
  if (self.dim() == 0) {
    // reshape, not view({}): that would pick Tensor::view(ScalarType) and reinterpret the bytes as uint8
    v = v.reshape(at::IntArrayRef{});
    i = i.reshape(at::IntArrayRef{});
  } else if (!keepdim) {
    v = v.squeeze(dim);
    i = i.squeeze(dim);
  }
  at::native::resize_output(values, v.sizes());
  at::native::resize_output(indices, i.sizes());
  values.copy_(v);
  indices.copy_(i);
}

}  // namespace index_util
}  // namespace torch_npu_sim
