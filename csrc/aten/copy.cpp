// Tensor.copy_ for npu: _copy_from / _copy_from_and_resize for cpu->npu, npu->cpu, npu->npu (one device
// or across devices), with broadcasting, dtype conversion, non-contiguous operands and pinned
// non_blocking transfers. Bytes move with runtime memcpys; conversion and striding run in copy_cast.
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/npu_tensor.h"
#include "core/npu_allocator.h"
#include "core/npu_error.h"
#include "core/npu_event.h"
#include "core/npu_stream.h"
#include "npu_kernels/copy.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

// A contiguous tensor with dst's dtype on `device`, holding src's values (src is on that device).
at::Tensor as_contiguous_on_device(const at::Tensor& src, at::ScalarType dtype) {
  if (src.is_contiguous() && src.scalar_type() == dtype) return src;
  auto out = at::empty(src.sizes(), src.options().dtype(dtype));
  NPU_CHECK(npu_kernels::copy_cast(current_native_stream(src.device().index()), tensor_desc(out, "copy_"),
                                   tensor_desc(src, "copy_")));
  return out;
}

// Waits for `stream` unless the caller asked for an asynchronous copy and the host side is pinned.
void finish_copy(npu_sim::Stream stream, bool async) {
  if (!async) NPU_CHECK(npu_sim::stream_synchronize(stream));
}

void copy_npu_to_npu(const at::Tensor& dst, const at::Tensor& src) {
  const auto dst_dev = dst.device().index();
  const auto src_dev = src.device().index();
  if (dst_dev == src_dev) {
    c10::DeviceGuard guard(dst.device());
    const auto stream = current_native_stream(dst_dev);
    if (dst.is_contiguous() && src.is_contiguous() && dst.scalar_type() == src.scalar_type()) {
      NPU_CHECK(npu_sim::memcpy_async(dst.data_ptr(), src.const_data_ptr(), dst.nbytes(),
                                      npu_sim::MemcpyKind::kDeviceToDevice, stream));
    } else {
      NPU_CHECK(npu_kernels::copy_cast(stream, tensor_desc(dst, "copy_"), tensor_desc(src, "copy_")));
    }
    return;
  }
  // Across devices: make a contiguous copy with dst's dtype on the source device, order dst's stream
  // after the source's stream with an event, then a peer memcpy on dst's stream.
  at::Tensor staged;
  {
    c10::DeviceGuard guard(src.device());
    staged = as_contiguous_on_device(src, dst.scalar_type());
  }
  const auto src_stream = current_stream(src_dev);
  const auto dst_stream = current_stream(dst_dev);
  const NpuEvent ready = NpuEvent::recorded_on(native_stream(src_stream));
  NPU_CHECK(npu_sim::stream_wait_event(native_stream(dst_stream), ready.get()));
  c10::DeviceGuard guard(dst.device());
  at::Tensor landing = dst.is_contiguous() ? dst : at::empty(dst.sizes(), dst.options());
  NPU_CHECK(npu_sim::memcpy_async(landing.data_ptr(), staged.const_data_ptr(), landing.nbytes(),
                                  npu_sim::MemcpyKind::kDeviceToDevice, native_stream(dst_stream)));
  // The staged buffer is read by dst's stream: keep its block from being reused before that.
  record_stream(staged.storage().data_ptr(), dst_stream);
  if (!landing.is_same(dst)) {
    NPU_CHECK(npu_kernels::copy_cast(native_stream(dst_stream), tensor_desc(dst, "copy_"),
                                     tensor_desc(landing, "copy_")));
  }
}

void copy_cpu_to_npu(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  c10::DeviceGuard guard(dst.device());
  const auto stream = current_stream(dst.device().index());
  const auto native = native_stream(stream);
  const at::Tensor host = src.contiguous();
  const bool pinned = is_pinned_ptr(host.const_data_ptr());
  const bool direct = dst.is_contiguous() && dst.scalar_type() == host.scalar_type();
  at::Tensor landing = direct ? dst : at::empty(dst.sizes(), dst.options().dtype(host.scalar_type()));
  NPU_CHECK(npu_sim::memcpy_async(landing.data_ptr(), host.const_data_ptr(), landing.nbytes(),
                                  npu_sim::MemcpyKind::kHostToDevice, native));
  if (pinned && non_blocking) record_host_use(host.storage(), stream);
  if (!direct) {
    NPU_CHECK(npu_kernels::copy_cast(native, tensor_desc(dst, "copy_"), tensor_desc(landing, "copy_")));
  }
  // Pageable sources were staged by the runtime at call time, so non_blocking never needs the host to wait.
  finish_copy(native, non_blocking);
}

void copy_npu_to_cpu(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  c10::DeviceGuard guard(src.device());
  const auto stream = current_stream(src.device().index());
  const auto native = native_stream(stream);
  const at::Tensor device_side = as_contiguous_on_device(src, dst.scalar_type());
  const bool direct = dst.is_contiguous();
  at::Tensor host = direct ? dst : at::empty(dst.sizes(), dst.options().memory_format(at::MemoryFormat::Contiguous));
  const bool pinned = is_pinned_ptr(host.const_data_ptr());
  NPU_CHECK(npu_sim::memcpy_async(host.data_ptr(), device_side.const_data_ptr(), host.nbytes(),
                                  npu_sim::MemcpyKind::kDeviceToHost, native));
  if (!direct) {
    NPU_CHECK(npu_sim::stream_synchronize(native));
    dst.copy_(host);
    return;
  }
  if (pinned && non_blocking) {
    record_host_use(host.storage(), stream);
    return;
  }
  finish_copy(native, false);
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);

// A source with a pending conjugate/negative bit (a lazy view): on npu its stored values are copied and the
// bit resolved by the device's kernels; a host source resolves on the CPU first.
at::Tensor copy_from_lazy_view(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  at::Tensor raw = self.is_conj() ? self.conj() : self;  // conj() of a conj view clears the bit
  if (raw.is_neg()) raw = raw._neg_view();
  at::Tensor resolved = raw.clone();  // on raw's device
  if (self.is_conj()) at::view_as_real(resolved).select(-1, 1).neg_();  // (conj_physical_ has no npu stub)
  if (self.is_neg()) resolved.neg_();
  return copy_from(resolved, dst, non_blocking);
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  TORCH_CHECK(self.defined() && dst.defined(), "copy_: both tensors must be defined");
  // A destination with a pending bit stores conj(x) / -x: the source takes the bit instead.
  if (dst.is_conj()) {
    copy_from(self.conj(), dst.conj(), non_blocking);
    return dst;
  }
  if (dst.is_neg()) {
    copy_from(self._neg_view(), dst._neg_view(), non_blocking);
    return dst;
  }
  if (self.is_conj() || self.is_neg()) return copy_from_lazy_view(self, dst, non_blocking);
  if (self.is_quantized() || dst.is_quantized()) {
    // copy_ has checked both are quantized alike and given dst self's quantizer: the codes move as integers
    TORCH_CHECK(self.is_quantized() && dst.is_quantized() && self.scalar_type() == dst.scalar_type(),
                "copy_: quantized tensors copy only to quantized tensors of the same dtype, got ", self.scalar_type(),
                " -> ", dst.scalar_type());
    copy_from(quantized_codes(self), quantized_codes(dst), non_blocking);
    return dst;
  }
  TORCH_CHECK(self.layout() == at::kStrided && dst.layout() == at::kStrided,
              "copy_: only strided (dense) tensors are supported on npu, got ", self.layout(), " -> ", dst.layout());
  const auto shape = at::infer_size(dst.sizes(), self.sizes());
  TORCH_CHECK(shape == dst.sizes(), "copy_: output with shape ", dst.sizes(),
              " doesn't match the broadcast shape ", shape);
  if (dst.numel() == 0) return dst;
  if (self.scalar_type() == at::kComplexHalf || dst.scalar_type() == at::kComplexHalf) {
    // complex32 has no kernel dtype: it moves as pairs of float16 (view_as_real), to or from any complex
    // dtype; what CUDA's view_as_complex of a float16 tensor, read back, needs. A real source fills the
    // real parts (imaginary parts zero, as x.chalf()); a real destination takes the real parts.
    const at::Tensor src = self.expand(dst.sizes());
    if (self.is_complex() && dst.is_complex()) {
      copy_from(at::view_as_real(src), at::view_as_real(dst), non_blocking);
    } else if (dst.is_complex()) {
      const at::Tensor parts = at::view_as_real(dst);
      copy_from(src, parts.select(-1, 0), non_blocking);
      parts.select(-1, 1).zero_();
    } else {
      TORCH_WARN_ONCE("Casting complex values to real discards the imaginary part");
      copy_from(at::view_as_real(src).select(-1, 0), dst, non_blocking);
    }
    return dst;
  }
  at::assert_no_internal_overlap(dst);
  at::Tensor src = self.expand(dst.sizes());
  // Only a source sharing dst's storage can overlap it (get_overlap_status also answers TooHard for any
  // expanded source, which is harmless when the storages differ). A partial overlap raises ATen's error, as
  // copy_ does on CPU and CUDA; a source over the same elements in another order (x.copy_(x.t())) is read
  // from a copy first.
  if (src.device() == dst.device() && dst.storage().is_alias_of(src.storage())) {
    const at::MemOverlapStatus status = at::get_overlap_status(dst, src);
    if (status != at::MemOverlapStatus::No) {
      if (dst.is_same(src) || (dst.is_alias_of(src) && dst.strides() == src.strides() &&
                               dst.storage_offset() == src.storage_offset() && dst.dtype() == src.dtype())) {
        return dst;  // copying a tensor onto itself
      }
      at::assert_no_partial_overlap(dst, src);
      src = src.clone();
    }
  }
  const bool dst_npu = is_npu(dst);
  const bool src_npu = is_npu(src);
  if (dst_npu && src_npu) {
    copy_npu_to_npu(dst, src);
  } else if (dst_npu && src.device().is_cpu()) {
    copy_cpu_to_npu(dst, src, non_blocking);
  } else if (src_npu && dst.device().is_cpu()) {
    copy_npu_to_cpu(dst, src, non_blocking);
  } else {
    TORCH_CHECK(false, "copy_: copies between ", src.device(), " and ", dst.device(), " are not supported by the npu backend");
  }
  return dst;
}

// The conjugate/negative-bit fallbacks would materialise the source with clone -> copy_ -> _copy_from
// again (infinite recursion); copy_from resolves the bits itself, so those keys fall through.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

}  // namespace

at::Tensor NF::_copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  return torch_npu_sim::copy_from(self, dst, non_blocking);
}

// The CPU fallback's write-back of an out= argument: when the kernel resized it, dst takes the layout the CPU kernel
// gave it (a TensorIterator restrides an empty output like its inputs), as the out= tensor would have on CPU or CUDA.
at::Tensor NF::_copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  const bool resized = dst.sizes() != self.sizes();
  dst.resize_(self.sizes());
  if (resized && self.numel() > 1 && self.is_non_overlapping_and_dense() && dst.strides() != self.strides()) {
    dst.as_strided_(self.sizes(), self.strides());
  }
  return copy_from(self, dst, false);
}

}  // namespace torch_npu_sim
