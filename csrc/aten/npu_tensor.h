// Adapter helpers: turn an at::Tensor on npu into the kernels' TensorDesc and check what kernels need.
#pragma once

#include <ATen/core/Tensor.h>

#include "npu_kernels/copy.h"
#include "npu_kernels/dtype.h"
#include "npu_kernels/tensor_desc.h"

namespace torch_npu_sim {

// Kernel dtype for a torch dtype; a clear error naming `op` if the device has no kernel for it.
npu_kernels::DType kernel_dtype(at::ScalarType type, const char* op);
// Raw pointer (storage offset applied), dtype, sizes, strides. `op` names the caller in errors.
npu_kernels::TensorDesc tensor_desc(const at::Tensor& t, const char* op);
bool is_npu(const at::Tensor& t);
// A scalar argument in the kernels' widest-type-of-its-kind form (fill values, index fills, ...).
npu_kernels::ScalarValue to_scalar_value(const c10::Scalar& s);

}  // namespace torch_npu_sim
