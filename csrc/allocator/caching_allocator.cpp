// Owns the process-wide CachingAllocator: device dispatch, the pointer->block map, round_size, format_size.
#include "allocator/caching_allocator.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <unordered_map>

#include "allocator/device_caching_allocator.h"

namespace npu_alloc {

struct CachingAllocator::Impl {
  std::vector<std::unique_ptr<DeviceCachingAllocator>> devices;  // fixed after construction: read unlocked
  // Lock rules for map_mutex: it guards `blocks` only. It is held just for one lookup, insert or erase:
  // never while calling a device allocator (whose malloc/empty_cache may wait, and whose mutex is never
  // taken inside this one or the reverse) nor the runtime, so it can never wait on a stream, and stream
  // workers (which free through this map) only ever wait on it for a map operation.
  std::mutex map_mutex;
  std::unordered_map<void*, Block*> blocks;  // allocated pointer -> its block (guarded by map_mutex)
};

namespace {

std::string hex_ptr(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)));
  return buf;
}

npu_sim::Stream resolve_stream(int device, npu_sim::Stream stream) {
  if (stream != nullptr) return stream;
  npu_sim::Stream s = nullptr;
  npu_sim::Status st = npu_sim::get_default_stream(device, &s);
  if (st != npu_sim::Status::kSuccess) {
    throw_runtime_error("NPU caching allocator: get_default_stream(" + std::to_string(device) + ") failed with " +
                        npu_sim::status_name(st));
  }
  return s;
}

}  // namespace

CachingAllocator::CachingAllocator(AllocConfig config) : impl_(std::make_unique<Impl>()), config_(config) {
  int count = 0;
  npu_sim::Status st = npu_sim::get_device_count(&count);
  if (st != npu_sim::Status::kSuccess) {
    throw_runtime_error(std::string("NPU caching allocator: get_device_count failed with ") + npu_sim::status_name(st));
  }
  impl_->devices.reserve(static_cast<std::size_t>(count));
  for (int d = 0; d < count; ++d) impl_->devices.push_back(std::make_unique<DeviceCachingAllocator>(d, config_));
}

CachingAllocator::~CachingAllocator() = default;

DeviceCachingAllocator& CachingAllocator::device_allocator(int device) {
  if (device < 0 || static_cast<std::size_t>(device) >= impl_->devices.size()) {
    throw AllocatorError("NPU caching allocator: invalid device " + std::to_string(device) + " (" +
                         std::to_string(impl_->devices.size()) + " NPU devices visible)");
  }
  return *impl_->devices[static_cast<std::size_t>(device)];
}

void* CachingAllocator::allocate(int device, std::size_t bytes, npu_sim::Stream stream) {
  DeviceCachingAllocator& dev = device_allocator(device);
  if (bytes == 0) return nullptr;
  Block* block = dev.malloc(bytes, resolve_stream(device, stream));
  {
    std::lock_guard<std::mutex> lock(impl_->map_mutex);
    impl_->blocks.emplace(block->ptr, block);
  }
  return block->ptr;
}

void* CachingAllocator::allocate(int device, std::size_t bytes, npu_sim::Stream stream, void** ctx) {
  DeviceCachingAllocator& dev = device_allocator(device);
  *ctx = nullptr;
  if (bytes == 0) return nullptr;
  Block* block = dev.malloc(bytes, resolve_stream(device, stream));
  *ctx = block;
  return block->ptr;
}

namespace {
std::atomic<SegmentObserver> g_segment_observer{nullptr};
}  // namespace

void set_segment_observer(SegmentObserver observer) { g_segment_observer.store(observer, std::memory_order_release); }

void notify_segment(bool alloc, int device, uintptr_t address, std::size_t size, npu_sim::Stream stream) {
  if (SegmentObserver f = g_segment_observer.load(std::memory_order_acquire)) f(alloc, device, address, size, stream);
}

CachingAllocator::Extent CachingAllocator::extent_of(const void* ctx) {
  const Block* b = static_cast<const Block*>(ctx);
  return {b->device, reinterpret_cast<uintptr_t>(b->ptr), b->size, b->stream};
}

void CachingAllocator::free_ctx(void* ctx) {
  if (ctx == nullptr) return;
  Block* block = static_cast<Block*>(ctx);
  device_allocator(block->device).free(block);
}

void CachingAllocator::record_stream_ctx(void* ctx, npu_sim::Stream stream) {
  if (ctx == nullptr) return;
  Block* block = static_cast<Block*>(ctx);
  device_allocator(block->device).record_stream(block, resolve_stream(block->device, stream));
}

void CachingAllocator::free(void* ptr) {
  if (ptr == nullptr) return;
  Block* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(impl_->map_mutex);
    auto it = impl_->blocks.find(ptr);
    if (it != impl_->blocks.end()) {
      block = it->second;
      impl_->blocks.erase(it);
    }
  }
  if (block == nullptr) {
    throw AllocatorError("free: pointer " + hex_ptr(ptr) + " was not allocated by the NPU caching allocator");
  }
  device_allocator(block->device).free(block);
}

void CachingAllocator::record_stream(void* ptr, npu_sim::Stream stream) {
  if (ptr == nullptr) return;
  Block* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(impl_->map_mutex);
    auto it = impl_->blocks.find(ptr);
    if (it != impl_->blocks.end()) block = it->second;
  }
  if (block == nullptr) {
    throw AllocatorError("record_stream: pointer " + hex_ptr(ptr) +
                         " was not allocated by the NPU caching allocator");
  }
  // Used after map_mutex is dropped: the block stays allocated (and its device fixed) until its owner
  // frees it, and a record_stream racing the free of the same pointer is the caller's bug, as on CUDA.
  const int device = block->device;
  device_allocator(device).record_stream(block, resolve_stream(device, stream));
}

void CachingAllocator::empty_cache() {
  for (auto& dev : impl_->devices) dev->empty_cache();
}

DeviceStats CachingAllocator::get_stats(int device) { return device_allocator(device).get_stats(); }

void CachingAllocator::reset_accumulated_stats(int device) { device_allocator(device).reset_accumulated_stats(); }

void CachingAllocator::reset_peak_stats(int device) { device_allocator(device).reset_peak_stats(); }

std::vector<SegmentInfo> CachingAllocator::snapshot() {
  std::vector<SegmentInfo> out;
  for (auto& dev : impl_->devices) dev->snapshot(&out);
  return out;
}

void CachingAllocator::set_memory_fraction(double fraction, int device) {
  device_allocator(device).set_memory_fraction(fraction);
}

double CachingAllocator::get_memory_fraction(int device) { return device_allocator(device).get_memory_fraction(); }

std::size_t round_size(std::size_t bytes) {
  if (bytes <= kMinBlockSize) return kMinBlockSize;
  return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

std::string format_size(uint64_t bytes) {
  char buf[64];
  if (bytes < 1024) {
    std::snprintf(buf, sizeof buf, "%.2f B", static_cast<double>(bytes));
  } else if (bytes < (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", static_cast<double>(bytes) / 1024.0);
  } else if (bytes < (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  }
  return buf;
}

}  // namespace npu_alloc
