// Torch-facing allocators: the c10::DeviceAllocator over the caching allocator core (REGISTER_ALLOCATOR
// for PrivateUse1) and the pinned host allocator (libtorch's CachingHostAllocatorImpl over the runtime).
#pragma once

#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Storage.h>

#include "allocator/caching_allocator.h"

namespace torch_npu_sim {

c10::DeviceAllocator* device_allocator();
// The core, for memory_snapshot/memory_fraction bindings. Created on first use from the environment.
npu_alloc::CachingAllocator& caching_allocator();
void record_stream(const c10::DataPtr& data_ptr, const c10::Stream& stream);

at::HostAllocator* host_allocator();
bool is_pinned_ptr(const void* ptr);
// Keeps a pinned block from being reused until the work now queued on `stream` is done.
void record_host_use(const c10::Storage& storage, const c10::Stream& stream);

}  // namespace torch_npu_sim
