// Streams as torch sees them: a per-device default stream plus a pool of 32 streams created lazily,
// packed into c10::Stream ids, and the thread-local current stream of each device.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include "npu_sim/runtime.h"

namespace torch_npu_sim {

constexpr int kStreamsPerPool = 32;

c10::DeviceIndex device_count() noexcept;
c10::DeviceIndex current_device();
void set_device(c10::DeviceIndex device);
// Throws a clear error for an ordinal outside [0, device_count()).
void check_device(c10::DeviceIndex device, const char* where);
// The device an API taking `device=-1` means: the current one for a negative index; checked as above.
c10::DeviceIndex resolve_device(c10::DeviceIndex device, const char* where);

// Resolve a c10::Stream (of type PrivateUse1) to the runtime's stream handle.
npu_sim::Stream native_stream(const c10::Stream& stream);
c10::Stream default_stream(c10::DeviceIndex device);
c10::Stream stream_from_pool(c10::DeviceIndex device);
c10::Stream current_stream(c10::DeviceIndex device = -1);
// Sets the calling thread's current stream for the stream's device; returns the previous one.
c10::Stream exchange_stream(const c10::Stream& stream);
// Shorthand for the runtime handle of the current stream of `device` (-1: current device).
npu_sim::Stream current_native_stream(c10::DeviceIndex device = -1);

}  // namespace torch_npu_sim
