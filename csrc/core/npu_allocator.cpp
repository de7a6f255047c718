// Adapters from torch's allocator interfaces to our runtime (see npu_allocator.h). Nothing here takes
// the GIL: allocators and deleters run with it held.
#include "core/npu_allocator.h"

#include <c10/core/Allocator.h>

#include "core/npu_error.h"
#include "core/npu_event.h"
#include "core/npu_memory_history.h"
#include "core/npu_stream.h"

namespace torch_npu_sim {

namespace {

void raw_delete(void* ptr);

c10::CachingDeviceAllocator::StatArray to_c10(const npu_alloc::StatArray& in) {
  c10::CachingDeviceAllocator::StatArray out;
  for (size_t i = 0; i < in.size(); ++i) {
    out[i].current = in[i].current;
    out[i].peak = in[i].peak;
    out[i].allocated = in[i].allocated;
    out[i].freed = in[i].freed;
  }
  return out;
}

c10::CachingDeviceAllocator::Stat to_c10(const npu_alloc::Stat& in) {
  c10::CachingDeviceAllocator::Stat out;
  out.current = in.current;
  out.peak = in.peak;
  out.allocated = in.allocated;
  out.freed = in.freed;
  return out;
}

class NPUDeviceAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    const auto device = current_device();
    void* ptr = nullptr;
    void* block = nullptr;  // the DataPtr's context: the deleter frees by block, no pointer lookup
    if (nbytes > 0) {
      try {
        ptr = caching_allocator().allocate(device, nbytes, current_native_stream(device), &block);
      } catch (const npu_alloc::OutOfMemoryError& e) {
        TORCH_CHECK_WITH(OutOfMemoryError, false, e.what());
      } catch (const npu_alloc::AllocatorError& e) {
        TORCH_CHECK(false, e.what());
      }
      if (memory_history::enabled()) {
        const auto x = npu_alloc::CachingAllocator::extent_of(block);
        memory_history::record_alloc(x.device, x.address, x.size, x.stream);
      }
    }
    return {ptr, block, &raw_delete, c10::Device(c10::DeviceType::PrivateUse1, device)};
  }
  // raw_allocate/raw_deallocate need data == context; our DataPtrs carry the block as context instead.
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    NPU_CHECK(npu_sim::memcpy(dest, src, count, npu_sim::MemcpyKind::kDeviceToDevice));
  }
  bool initialized() override { return true; }
  void emptyCache(c10::MempoolId_t /*mempool_id*/) override { caching_allocator().empty_cache(); }
  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override { record_stream(ptr, stream); }
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    check_device(device, "memory_stats");
    const npu_alloc::DeviceStats s = caching_allocator().get_stats(device);
    c10::CachingDeviceAllocator::DeviceStats out;
    out.allocation = to_c10(s.allocation);
    out.segment = to_c10(s.segment);
    out.active = to_c10(s.active);
    out.inactive_split = to_c10(s.inactive_split);
    out.allocated_bytes = to_c10(s.allocated_bytes);
    out.reserved_bytes = to_c10(s.reserved_bytes);
    out.active_bytes = to_c10(s.active_bytes);
    out.inactive_split_bytes = to_c10(s.inactive_split_bytes);
    out.requested_bytes = to_c10(s.requested_bytes);
    out.num_alloc_retries = s.num_alloc_retries;
    out.num_ooms = s.num_ooms;
    out.oversize_allocations = to_c10(s.oversize_allocations);
    out.oversize_segments = to_c10(s.oversize_segments);
    out.num_sync_all_streams = s.num_sync_all_streams;
    out.num_device_alloc = s.num_device_alloc;
    out.num_device_free = s.num_device_free;
    out.max_split_size = s.max_split_size;
    return out;
  }
  void resetAccumulatedStats(c10::DeviceIndex device) override {
    check_device(device, "reset_accumulated_memory_stats");
    caching_allocator().reset_accumulated_stats(device);
  }
  void resetPeakStats(c10::DeviceIndex device) override {
    check_device(device, "reset_peak_memory_stats");
    caching_allocator().reset_peak_stats(device);
  }
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    check_device(device, "mem_get_info");
    size_t free_bytes = 0, total = 0;
    NPU_CHECK(npu_sim::mem_get_info(device, &free_bytes, &total));
    return {free_bytes, total};
  }
};

NPUDeviceAllocator g_device_allocator;

void raw_delete(void* block) {
  try {
    if (memory_history::enabled() && block != nullptr) {
      const auto x = npu_alloc::CachingAllocator::extent_of(block);
      memory_history::record_free(x.device, x.address, x.size, x.stream);
    }
    caching_allocator().free_ctx(block);
  } catch (const std::exception& e) {
    // A deleter must not throw; a bad free is a bug worth a loud message.
    TORCH_WARN("NPU caching allocator: ", e.what());
  }
}

// ---- pinned host memory ----------------------------------------------------------------------------

struct NPUHostAllocatorImpl final : public at::CachingHostAllocatorImpl<c10::Stream, NpuEvent> {
 private:
  void allocate_host_memory(size_t size, void** ptr) override { NPU_CHECK(npu_sim::malloc_host(ptr, size)); }
  void free_block(at::HostBlock<c10::Stream>* block) override { (void)npu_sim::free_host(block->ptr_); }
  void record_stream(std::optional<std::vector<NpuEvent>>& events, c10::Stream stream) override {
    events->push_back(NpuEvent::recorded_on(native_stream(stream)));
  }
  // An error (the device's sticky one) still means the recorded work is over: the block may be reused.
  bool query_event(NpuEvent& event) override { return npu_sim::event_query(event.get()) != npu_sim::Status::kNotReady; }
  c10::Stream get_current_stream() const override { return current_stream(); }
  bool stream_is_capturing(c10::Stream /*s*/) const override { return false; }
};

void host_raw_delete(void* ctx);
struct NPUHostAllocator final : public at::CachingHostAllocatorInterface<NPUHostAllocatorImpl, host_raw_delete> {};
NPUHostAllocator g_host_allocator;
void host_raw_delete(void* ctx) { g_host_allocator.free(ctx); }

}  // namespace

npu_alloc::CachingAllocator& caching_allocator() {
  // Created on first use (reads PYTORCH_NPU_ALLOC_CONF then); lives for the process so that tensors
  // freed during interpreter shutdown still find it.
  static npu_alloc::CachingAllocator* instance = [] {
    try {
      return new npu_alloc::CachingAllocator(npu_alloc::alloc_config_from_env());
    } catch (const npu_alloc::ConfigError& e) {
      TORCH_CHECK_VALUE(false, e.what());
    }
  }();
  return *instance;
}

c10::DeviceAllocator* device_allocator() { return &g_device_allocator; }

void record_stream(const c10::DataPtr& data_ptr, const c10::Stream& stream) {
  if (data_ptr.get() == nullptr || data_ptr.get_deleter() != &raw_delete) return;
  caching_allocator().record_stream_ctx(data_ptr.get_context(), native_stream(stream));
}

at::HostAllocator* host_allocator() { return &g_host_allocator; }

bool is_pinned_ptr(const void* ptr) {
  npu_sim::PointerAttributes attrs{};
  return npu_sim::pointer_get_attributes(ptr, &attrs) == npu_sim::Status::kSuccess &&
         attrs.type == npu_sim::MemoryType::kHost;
}

void record_host_use(const c10::Storage& storage, const c10::Stream& stream) {
  const auto& dp = storage.data_ptr();
  g_host_allocator.record_event(dp.get(), dp.get_context(), stream);
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_device_allocator);
REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &g_host_allocator);

}  // namespace torch_npu_sim
