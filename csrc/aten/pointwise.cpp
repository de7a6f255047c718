// TensorIteratorBase -> ElementwiseIter conversion and launch (see pointwise.h).
#include "aten/pointwise.h"

#include <ATen/Dispatch.h>
#include <ATen/Dispatch_v2.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/strides.h>

#include <cstring>
#include <vector>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "fallback/dtype_fallback.h"

namespace torch_npu_sim {

namespace {

// A device copy of `t` with dtype `type` and the same element strides (so iterator strides still hold).
// Broadcast (stride-0) dims are converted once and expanded again.
at::Tensor converted_like(const at::TensorBase& tb, at::ScalarType type) {
  const at::Tensor t(tb);
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.stride(d) == 0) sizes[d] = 1;
  }
  const at::Tensor compact = t.as_strided(sizes, t.strides(), t.storage_offset());
  at::Tensor out = at::empty_strided(sizes, t.strides(), t.options().dtype(type));
  out.copy_(compact);
  return out.expand(t.sizes());
}

// The value of a CPU scalar operand converted to `type`, written as the kernel's scalar bytes. Reads the
// host value directly: a dispatched .to() here cost about a microsecond per small op.
void scalar_bytes(const at::TensorBase& t, at::ScalarType type, unsigned char* bytes) {
  c10::Scalar v;
  AT_DISPATCH_V2(t.scalar_type(), "scalar_bytes", AT_WRAP([&] { v = c10::Scalar(*t.const_data_ptr<scalar_t>()); }),
                 AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), at::kHalf, at::kBFloat16, at::kBool);
  write_scalar(v, type, bytes);
}

}  // namespace

void write_scalar(const c10::Scalar& v, at::ScalarType type, unsigned char* bytes) {
  AT_DISPATCH_V2(type, "write_scalar", AT_WRAP([&] {
                   const scalar_t x = v.to<scalar_t>();
                   std::memcpy(bytes, &x, sizeof(x));
                 }),
                 AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), at::kHalf, at::kBFloat16, at::kBool);
}

namespace {

// The operands flat_pointwise can take: contiguous npu tensors of `a`'s floating dtype, shape and device.
bool flat_operands(std::initializer_list<std::reference_wrapper<const at::Tensor>> ins) {
  const at::Tensor& a = ins.begin()->get();
  if (!a.defined() || !is_npu(a) || !at::isFloatingType(a.scalar_type()) || a.numel() == 0) return false;
  for (const at::Tensor& t : ins) {
    if (!t.defined() || t.device() != a.device() || t.scalar_type() != a.scalar_type() || t.sizes() != a.sizes() ||
        !t.is_contiguous()) {
      return false;
    }
  }
  return true;
}

// Launches the kernel over `out` and `ins` as one flat dimension; false when the kernel library has no
// kernel for the dtype (nothing was enqueued).
bool flat_launch(const char* op, const at::Tensor& out, std::initializer_list<std::reference_wrapper<const at::Tensor>> ins,
                 const PointwiseLaunch& launch) {
  const at::Tensor& a = ins.begin()->get();
  npu_kernels::ElementwiseIter e;
  e.ndim = 1;
  e.shape[0] = a.numel();
  e.noutputs = 1;
  e.ninputs = static_cast<int>(ins.size());
  e.in_dtype = kernel_dtype(a.scalar_type(), op);
  e.out_dtype = kernel_dtype(out.scalar_type(), op);
  e.data[0] = out.data_ptr();
  e.strides[0][0] = static_cast<int64_t>(out.element_size());
  int k = 1;
  for (const at::Tensor& t : ins) {
    e.data[k] = const_cast<void*>(t.const_data_ptr());
    e.strides[k++][0] = static_cast<int64_t>(a.element_size());
  }
  const npu_sim::Status status = launch(current_native_stream(a.device().index()), e);
  if (status == npu_sim::Status::kInvalidValue) return false;
  NPU_CHECK(status);
  return true;
}

}  // namespace

std::optional<at::Tensor> flat_pointwise(const char* op, bool predicate,
                                         std::initializer_list<std::reference_wrapper<const at::Tensor>> ins,
                                         const PointwiseLaunch& launch) {
  if (!flat_operands(ins)) return std::nullopt;
  const at::Tensor& a = ins.begin()->get();
  at::Tensor out = empty_npu(a.sizes(), c10::contiguous_strides(a.sizes()), a.options().dtype(predicate ? at::kBool : a.scalar_type()));
  if (!flat_launch(op, out, ins, launch)) return std::nullopt;
  return out;
}

bool flat_pointwise_inplace(const char* op, bool predicate,
                            std::initializer_list<std::reference_wrapper<const at::Tensor>> ins,
                            const PointwiseLaunch& launch) {
  if (predicate || !flat_operands(ins)) return false;  // a predicate in place writes self's dtype, not bool
  const at::Tensor& self = ins.begin()->get();
  for (const at::Tensor& t : ins) {
    // An input sharing some but not all of self's memory is an error the structured path raises.
    const auto overlap = at::get_overlap_status(self, t);
    if (overlap == at::MemOverlapStatus::Partial || overlap == at::MemOverlapStatus::TooHard) return false;
  }
  return flat_launch(op, self, ins, launch);
}

void run_pointwise(at::TensorIteratorBase& iter, const char* op, bool predicate, const PointwiseLaunch& launch,
                   std::optional<at::ScalarType> compute_dtype, std::optional<at::ScalarType> out_dtype,
                   bool raw_first_input) {
  if (iter.numel() == 0) return;
  TORCH_CHECK(iter.noutputs() == 1, op, ": npu pointwise kernels produce one output, got ", iter.noutputs());
  TORCH_CHECK(iter.ntensors() <= npu_kernels::kMaxOperands, op, ": too many operands (", iter.ntensors(), ")");
  TORCH_CHECK(iter.ndim() <= npu_kernels::kMaxDims, op, ": tensors with more than ", npu_kernels::kMaxDims,
              " (non-mergeable) dimensions are not supported on npu");
  const at::ScalarType in_type = compute_dtype.value_or(iter.common_dtype());
  const at::ScalarType out_type = out_dtype.value_or(predicate ? at::kBool : in_type);
  const at::Device device = iter.device(0);
  TORCH_CHECK(is_npu(iter.tensor(0)), op, ": expected the output on npu, got ", device);
  c10::DeviceGuard guard(device);

  npu_kernels::ElementwiseIter e;
  e.ndim = static_cast<int>(iter.ndim());
  for (int d = 0; d < e.ndim; ++d) e.shape[d] = iter.shape()[d];
  e.noutputs = 1;
  e.ninputs = static_cast<int>(iter.ninputs());
  e.in_dtype = kernel_dtype(in_type, op);
  e.out_dtype = kernel_dtype(out_type, op);

  std::vector<at::Tensor> keep;  // converted operands, alive until the launch is enqueued (stream-ordered)
  auto set_strides = [&](int k, int arg, int64_t scale_num, int64_t scale_den) {
    const auto strides = iter.strides(arg);
    for (int d = 0; d < e.ndim; ++d) e.strides[k][d] = strides[d] / scale_den * scale_num;
  };

  // Output: written directly when it has the kernel's dtype, else through a temporary copied back.
  const at::Tensor& out = iter.tensor(0);
  at::Tensor out_tmp;
  if (out.scalar_type() == out_type) {
    e.data[0] = iter.data_ptr(0);
    set_strides(0, 0, 1, 1);
  } else {
    out_tmp = at::empty_strided(out.sizes(), out.strides(), out.options().dtype(out_type));
    e.data[0] = out_tmp.data_ptr();
    set_strides(0, 0, c10::elementSize(out_type), out.element_size());
  }

  for (int arg = 1; arg < iter.ntensors(); ++arg) {
    const int k = arg;
    const at::TensorBase& t = iter.tensor_base(arg);
    const at::ScalarType type = raw_first_input && arg == 1 ? t.scalar_type() : in_type;
    if (iter.is_cpu_scalar(arg)) {
      e.is_scalar[k] = true;
      scalar_bytes(t, type, e.scalar_bytes[k]);
      continue;  // strides stay 0
    }
    TORCH_CHECK(t.device() == device, op, ": expected all tensors to be on the same device, but found at least two "
                "devices, ", device, " and ", t.device(), "!");
    if (t.scalar_type() == type) {
      e.data[k] = iter.data_ptr(arg);
      set_strides(k, arg, 1, 1);
    } else {
      keep.push_back(converted_like(t, in_type));
      e.data[k] = keep.back().data_ptr();
      set_strides(k, arg, c10::elementSize(in_type), t.element_size());
    }
  }

  const npu_sim::Status status = launch(current_native_stream(device.index()), e);
  // The kernel library answers kInvalidValue (without a runtime message) for a dtype it has no kernel for.
  if (status == npu_sim::Status::kInvalidValue) {
    throw_no_kernel_for_dtype(
        c10::str(op, ": no npu kernel for dtype ", in_type, " (inputs) -> ", out_type, " (output)"));
  }
  NPU_CHECK(status);
  if (out_tmp.defined()) at::Tensor(out).copy_(out_tmp);
}

}  // namespace torch_npu_sim
