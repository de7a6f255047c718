// Growing npu storages: the device-side part of resize_ / set_ / Storage.resize_.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Storage.h>

namespace torch_npu_sim {

// Reallocates `storage` to `new_bytes` from the caching allocator, copying the old contents on the
// current stream (stream-ordered, no host access to device memory).
void resize_storage_bytes(const c10::Storage& storage, size_t new_bytes);
// Makes sure `self`'s storage can hold its current sizes/strides/offset, growing it if needed.
void ensure_storage_fits(const at::Tensor& self);

}  // namespace torch_npu_sim
