// Storage growth for npu tensors (see npu_resize.h): allocation from the caching allocator and a
// stream-ordered device copy of the old bytes.
#include "aten/npu_resize.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/DeviceGuard.h>

#include "core/npu_allocator.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"

namespace torch_npu_sim {

void resize_storage_bytes(const c10::Storage& storage, size_t new_bytes) {
  TORCH_CHECK(storage.resizable(), "resize_: trying to resize a storage that is not resizable");
  c10::DeviceGuard guard(storage.device());
  const auto stream = current_stream(storage.device().index());
  c10::DataPtr fresh = device_allocator()->allocate(new_bytes);
  const size_t keep = std::min(storage.nbytes(), new_bytes);
  if (keep > 0) {
    NPU_CHECK(npu_sim::memcpy_async(fresh.get(), storage.data(), keep, npu_sim::MemcpyKind::kDeviceToDevice,
                                    native_stream(stream)));
  }
  c10::DataPtr old = storage.set_data_ptr(std::move(fresh));
  storage.set_nbytes(new_bytes);
  record_stream(old, stream);  // the copy above still reads it
}

void ensure_storage_fits(const at::Tensor& self) {
  if (self.numel() == 0) return;
  const size_t needed = at::detail::computeStorageNbytes(self.sizes(), self.strides(), self.dtype().itemsize(),
                                                         self.storage_offset());
  const c10::Storage& storage = self.unsafeGetTensorImpl()->unsafe_storage();
  if (needed > storage.nbytes()) resize_storage_bytes(storage, needed);
}

}  // namespace torch_npu_sim
