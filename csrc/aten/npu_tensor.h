// Adapter helpers: turn an at::Tensor on npu into the kernels' TensorDesc and check what kernels need.
#pragma once

#include <ATen/core/Tensor.h>

#include <initializer_list>
#include <utility>

#include "core/npu_stream.h"
#include "npu_kernels/copy.h"
#include "npu_kernels/dtype.h"
#include "npu_kernels/tensor_desc.h"

namespace torch_npu_sim {

// Kernel dtype for a torch dtype; a clear error naming `op` if the device has no kernel for it.
npu_kernels::DType kernel_dtype(at::ScalarType type, const char* op);
// Raw pointer (storage offset applied), dtype, sizes, strides. `op` names the caller in errors.
npu_kernels::TensorDesc tensor_desc(const at::Tensor& t, const char* op);
bool is_npu(const at::Tensor& t);
// The current stream of t's device, where an op on t enqueues its kernels.
inline npu_sim::Stream stream_of(const at::Tensor& t) { return current_native_stream(t.device().index()); }
// Every defined tensor of `args` on one device, the first npu tensor's (the dispatcher also sends calls
// mixing cpu and npu tensors here), else CUDA's "Expected all tensors to be on the same device" error.
using NamedTensor = std::pair<const char*, const at::Tensor*>;
void check_devices(const char* op, std::initializer_list<NamedTensor> args);
// CUDA's rule for an op's tensor arguments: `t` must be on `device` (another npu or the CPU is refused;
// with cpu_allowed, a CPU tensor is accepted and the caller moves it). Names op and argument.
void check_device_arg(const char* op, const char* arg, const at::Tensor& t, const at::Device& device,
                      bool cpu_allowed = false);
// A new npu tensor on options.device() (contiguous when `strides` is empty), made directly, not through
// the dispatcher: what structured ops allocate their outputs with (at::empty's dispatch cost was a
// visible part of a small op's host time).
at::Tensor empty_npu(at::IntArrayRef sizes, at::IntArrayRef strides, const at::TensorOptions& options);
// Runs `write(dst)` with dst = `out` (already resized) when it is contiguous, else a contiguous temporary that is
// copied into `out` afterwards: for kernels that write a dense output.
template <class Write>
void into_contiguous(const at::Tensor& out, Write&& write) {
  const at::Tensor dst = out.is_contiguous() ? out : empty_npu(out.sizes(), {}, out.options());
  write(dst);
  if (!dst.is_same(out)) out.copy_(dst);
}
// The integer codes of a quantized tensor (uint8 / int8 / int32) as a plain tensor over the same storage, offset,
// sizes and strides, on q's device: how codes are copied, moved and read by kernels.
at::Tensor quantized_codes(const at::Tensor& q);
// A scalar argument in the kernels' widest-type-of-its-kind form (fill values, index fills, ...), after CPU's
// overflow check for the destination dtype `target` (RuntimeError naming the type).
npu_kernels::ScalarValue to_scalar_value(const c10::Scalar& s, at::ScalarType target);

}  // namespace torch_npu_sim
