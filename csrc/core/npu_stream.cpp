// Stream pool and current-stream bookkeeping (see npu_stream.h). Pools are created once per process;
// each runtime stream inside is created on first use. The current stream is thread-local per device.
#include "core/npu_stream.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "core/npu_error.h"

namespace torch_npu_sim {

namespace {

struct DevicePool {
  std::once_flag once[kStreamsPerPool + 1];  // [0] is the default stream
  npu_sim::Stream streams[kStreamsPerPool + 1] = {};
  std::atomic<uint32_t> next{0};
};

// Written once (under call_once), read-only afterwards.
DevicePool* pools() {
  static DevicePool* p = new DevicePool[std::max<int>(1, device_count())];  // lives for the process
  return p;
}

// Stream index per device for this thread; 0 (the default stream) when never set.
thread_local std::vector<int> tls_current_index;

npu_sim::Stream pool_stream(c10::DeviceIndex device, int index) {
  DevicePool& pool = pools()[device];
  std::call_once(pool.once[index], [&] {
    if (index == 0) {
      NPU_CHECK(npu_sim::get_default_stream(device, &pool.streams[0]));
    } else {
      NPU_CHECK(npu_sim::stream_create(device, &pool.streams[index]));
    }
  });
  return pool.streams[index];
}

c10::Stream make_stream(c10::DeviceIndex device, int index) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), index);
}

}  // namespace

c10::DeviceIndex device_count() noexcept {
  static const c10::DeviceIndex count = [] {
    int n = 0;
    if (npu_sim::get_device_count(&n) != npu_sim::Status::kSuccess) return 0;
    return static_cast<int>(n);
  }();
  return count;
}

void check_device(c10::DeviceIndex device, const char* where) {
  TORCH_CHECK(device >= 0 && device < device_count(), where, ": invalid device ordinal npu:", int(device),
              " (", int(device_count()), " NPU devices are visible; see ASCEND_RT_VISIBLE_DEVICES)");
}

c10::DeviceIndex resolve_device(c10::DeviceIndex device, const char* where) {
  if (device < 0) device = current_device();
  check_device(device, where);
  return device;
}

c10::DeviceIndex current_device() {
  int d = 0;
  NPU_CHECK(npu_sim::get_device(&d));
  return static_cast<c10::DeviceIndex>(d);
}

void set_device(c10::DeviceIndex device) {
  check_device(device, "set_device");
  NPU_CHECK(npu_sim::set_device(device));
}

npu_sim::Stream native_stream(const c10::Stream& stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1, "expected an npu stream, got ", stream);
  const auto device = stream.device_index();
  check_device(device, "stream");
  const auto id = stream.id();
  TORCH_CHECK(id >= 0 && id <= kStreamsPerPool, "stream: unknown npu stream id ", id);
  return pool_stream(device, static_cast<int>(id));
}

c10::Stream default_stream(c10::DeviceIndex device) {
  device = resolve_device(device, "default_stream");
  return make_stream(device, 0);
}

c10::Stream stream_from_pool(c10::DeviceIndex device) {
  device = resolve_device(device, "stream_from_pool");
  const uint32_t k = pools()[device].next.fetch_add(1, std::memory_order_relaxed);
  return make_stream(device, 1 + static_cast<int>(k % kStreamsPerPool));
}

c10::Stream current_stream(c10::DeviceIndex device) {
  device = resolve_device(device, "current_stream");
  const int index = device < static_cast<c10::DeviceIndex>(tls_current_index.size()) ? tls_current_index[device] : 0;
  return make_stream(device, index);
}

c10::Stream exchange_stream(const c10::Stream& stream) {
  native_stream(stream);  // validates
  const auto device = stream.device_index();
  const c10::Stream previous = current_stream(device);
  if (tls_current_index.size() <= static_cast<size_t>(device)) tls_current_index.resize(device_count(), 0);
  tls_current_index[device] = static_cast<int>(stream.id());
  return previous;
}

npu_sim::Stream current_native_stream(c10::DeviceIndex device) {
  return native_stream(current_stream(device));
}

}  // namespace torch_npu_sim
