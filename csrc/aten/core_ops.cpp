// The native core of the npu op table: factories (empty, empty_strided), views and metadata ops
// (as_strided, view, _reshape_alias, unfold, view_as_real/complex), resize_, set_ variants, fill_,
// zero_ and _local_scalar_dense. Registration only; device work goes to kernels/.
#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <typeinfo>

#include "aten/npu_resize.h"
#include "aten/npu_tensor.h"
#include "core/npu_allocator.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/copy.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

constexpr c10::DispatchKeySet kNPUKeys(c10::DispatchKey::PrivateUse1);

c10::Device resolve_device(std::optional<c10::Device> device, const char* op) {
  c10::Device d = device.value_or(c10::Device(c10::DeviceType::PrivateUse1));
  TORCH_CHECK(d.type() == c10::DeviceType::PrivateUse1, op, ": expected an npu device, got ", d);
  if (!d.has_index()) d = c10::Device(c10::DeviceType::PrivateUse1, current_device());
  check_device(d.index(), op);
  return d;
}

void check_factory_args(std::optional<c10::Layout> layout, std::optional<bool> pin_memory, const char* op) {
  TORCH_CHECK(layout.value_or(c10::kStrided) == c10::kStrided, op, ": only the strided layout is supported on npu, got ",
              *layout);
  TORCH_CHECK(!pin_memory.value_or(false), op, ": only dense CPU tensors can be pinned");
}

}  // namespace

at::Tensor empty_npu(at::IntArrayRef sizes, at::IntArrayRef strides, const at::TensorOptions& options) {
  if (options.device().type() != c10::DeviceType::PrivateUse1 || !options.device().has_index()) {
    return strides.empty() ? at::empty(sizes, options) : at::empty_strided(sizes, strides, options);
  }
  c10::DeviceGuard guard(options.device());
  const auto type = options.dtype().toScalarType();
  if (strides.empty()) {
    return at::detail::empty_generic(sizes, device_allocator(), kNPUKeys, type, options.memory_format_opt());
  }
  return at::detail::empty_strided_generic(sizes, strides, device_allocator(), kNPUKeys, type);
}

// CPU and npu tensors are plain dense TensorImpls, shallow-copy compatible as CPU and CUDA are (the
// TensorImpl's own check knows only the built-in backends). This is what lets Module._apply move a
// Parameter in place (module.to("npu") keeps Parameter identity, so tied weights stay tied) and lets
// `p.data = npu_tensor` work.
bool NF::_has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  auto dense_cpu_or_npu = [](const at::Tensor& t) {
    // exactly c10::TensorImpl: no wrapper, quantized, nested or sparse subclass
    return typeid(*t.unsafeGetTensorImpl()) == typeid(c10::TensorImpl) && t.layout() == c10::kStrided &&
           (t.device().type() == c10::DeviceType::CPU || t.device().type() == c10::DeviceType::PrivateUse1);
  };
  if (dense_cpu_or_npu(self) && dense_cpu_or_npu(from)) return true;
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set());
}

at::Tensor NF::empty(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                     std::optional<c10::Device> device, std::optional<bool> pin_memory,
                     std::optional<c10::MemoryFormat> memory_format) {
  const auto dev = resolve_device(device, "empty");
  check_factory_args(layout, pin_memory, "empty");
  const auto type = dtype.value_or(c10::get_default_dtype_as_scalartype());
  c10::DeviceGuard guard(dev);
  return at::detail::empty_generic(size, device_allocator(), kNPUKeys, type, memory_format);
}

at::Tensor NF::empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                             std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                             std::optional<bool> pin_memory) {
  const auto dev = resolve_device(device, "empty_strided");
  check_factory_args(layout, pin_memory, "empty_strided");
  const auto type = dtype.value_or(c10::get_default_dtype_as_scalartype());
  c10::DeviceGuard guard(dev);
  return at::detail::empty_strided_generic(size, stride, device_allocator(), kNPUKeys, type);
}

const at::Tensor& NF::resize_(const at::Tensor& self, c10::IntArrayRef size,
                              std::optional<c10::MemoryFormat> memory_format) {
  for (const auto s : size) TORCH_CHECK(s >= 0, "resize_: negative dimension ", s, " in requested size ", size);
  auto* impl = self.unsafeGetTensorImpl();
  // same sizes: untouched, strides included, as ATen's resize_impl_ (the CPU fallback writes an in-place result
  // back through _copy_from_and_resize, which resizes: restriding there scrambled every view of a strided input)
  if (self.sizes() != size) impl->set_sizes_contiguous(size);
  if (memory_format.has_value()) {
    TORCH_CHECK(*memory_format != c10::MemoryFormat::Preserve, "resize_: unsupported memory format ", *memory_format);
    impl->empty_tensor_restride(*memory_format);
  }
  ensure_storage_fits(self);
  return self;
}

at::Tensor& NF::set_(at::Tensor& self, c10::Storage source) {
  const int64_t numel = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return NF::set_(self, std::move(source), 0, {numel}, {});
}

at::Tensor& NF::set_(at::Tensor& self, c10::Storage source, int64_t storage_offset, c10::IntArrayRef size,
                     c10::IntArrayRef stride) {
  TORCH_CHECK(source.device() == self.device() || source.nbytes() == 0 || self.storage().nbytes() == 0 ||
                  source.device().type() == self.device().type(),
              "set_: expected storage on ", self.device(), ", got ", source.device());
  at::native::checkSetStorage(self, source, storage_offset, size, stride);
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_storage_offset(storage_offset);
  if (stride.data() != nullptr) {
    impl->set_sizes_and_strides(size, stride);
  } else {
    impl->set_sizes_contiguous(size);
  }
  ensure_storage_fits(self);
  return self;
}

at::Tensor& NF::set_(at::Tensor& self, const at::Tensor& source) {
  if (self.is_same(source)) return self;
  return NF::set_(self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
}

at::Tensor& NF::set_(at::Tensor& self) {
  c10::DeviceGuard guard(self.device());
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, device_allocator(), /*resizable=*/true);
  return NF::set_(self, std::move(storage), 0, {0}, {});
}

at::Tensor& NF::fill_(at::Tensor& self, const c10::Scalar& value) {
  if (self.numel() == 0) return self;
  c10::DeviceGuard guard(self.device());
  NPU_CHECK(npu_kernels::fill(current_native_stream(self.device().index()), tensor_desc(self, "fill_"),
                              to_scalar_value(value, self.scalar_type())));
  return self;
}

at::Tensor& NF::fill_(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
              " dimensions.");
  return NF::fill_(self, value.item());
}

at::Tensor& NF::zero_(at::Tensor& self) { return NF::fill_(self, 0); }

c10::Scalar NF::_local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  return self.to(c10::kCPU).item();
}

void NF::record_stream(at::Tensor& self, c10::Stream stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1, "record_stream: expected an npu stream, got ",
              stream);
  torch_npu_sim::record_stream(self.storage().data_ptr(), stream);
}

}  // namespace torch_npu_sim
