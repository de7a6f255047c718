// Torch-free core of the NPU caching allocator (CUDA's design, as torch_npu mirrors it): per-device
// small/large pools over backend_sim device memory, stream-owned blocks, split/merge, record_stream,
// OOM retry, CUDA-shaped statistics. The torch adapter (csrc/core/npu_allocator.cpp) wraps it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "allocator/alloc_config.h"
#include "npu_sim/runtime.h"

namespace npu_alloc {

// Same layout and meaning as c10::CachingDeviceAllocator::Stat / DeviceStats.
struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;
  int64_t freed = 0;
};
enum StatType : std::size_t { kAggregate = 0, kSmallPool = 1, kLargePool = 2, kNumStatTypes = 3 };
using StatArray = std::array<Stat, kNumStatTypes>;

struct DeviceStats {
  StatArray allocation;            // blocks handed out
  StatArray segment;               // device mallocs held
  StatArray active;                // blocks allocated or waiting on stream events
  StatArray inactive_split;        // free blocks that are part of a split segment
  StatArray allocated_bytes;
  StatArray reserved_bytes;        // bytes held from the device (segments)
  StatArray active_bytes;
  StatArray inactive_split_bytes;
  StatArray requested_bytes;       // bytes the caller asked for (before rounding)
  int64_t num_alloc_retries = 0;   // device malloc failed, cache flushed, retried
  int64_t num_ooms = 0;
  int64_t num_sync_all_streams = 0;
  int64_t num_device_alloc = 0;    // calls to npu_sim::malloc_device
  int64_t num_device_free = 0;
  Stat oversize_allocations;       // allocations larger than max_split_size
  Stat oversize_segments;
  int64_t max_split_size = 0;
};

// One segment (a device malloc) and its blocks, for memory_snapshot()/memory_summary().
struct BlockInfo {
  uintptr_t address = 0;
  std::size_t size = 0;
  std::size_t requested_size = 0;
  bool allocated = false;
  bool active = false;  // allocated, or freed but still waiting on record_stream events
};
struct SegmentInfo {
  int device = 0;
  uintptr_t address = 0;
  std::size_t total_size = 0;
  std::size_t allocated_size = 0;
  std::size_t active_size = 0;
  std::size_t requested_size = 0;
  uintptr_t stream = 0;
  bool is_large = false;
  std::vector<BlockInfo> blocks;
};

// Observer of segment events (a device malloc or free by the cache), for the memory history: called
// after the runtime call succeeded, possibly with a device allocator's mutex held, so it must not call
// back into the allocator (taking its own leaf lock is fine). Process-wide; null (the default) = none.
using SegmentObserver = void (*)(bool alloc, int device, uintptr_t address, std::size_t size, npu_sim::Stream stream);
void set_segment_observer(SegmentObserver observer);
void notify_segment(bool alloc, int device, uintptr_t address, std::size_t size, npu_sim::Stream stream);

// Thrown when a request cannot be satisfied even after freeing the cache. what() is the full
// CUDA-style text: "NPU out of memory. Tried to allocate 2.00 GiB. NPU 0 has a total capacity of
// 16.00 GiB of which 1.50 GiB is free. Of the allocated memory 12.00 GiB is allocated by PyTorch, and
// 512.00 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try
// setting PYTORCH_NPU_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
struct OutOfMemoryError : std::runtime_error {
  using std::runtime_error::runtime_error;
  int device = 0;
};

// Thrown for errors from the runtime other than OOM (invalid pointer to free, runtime failure).
struct AllocatorError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class DeviceCachingAllocator;

// Process-wide allocator over all visible devices. Never calls into Python. Thread-safe, and safe to call
// from stream workers (an op's captures are freed there): one mutex per device guards its pools and stats
// and is never held while waiting on a stream or an event; one mutex guards the pointer -> block map and
// is never held while calling into a device allocator or the runtime (Note [Lock rules] in
// device_caching_allocator.cpp). Which calls may block is said at each one below.
class CachingAllocator {
 public:
  explicit CachingAllocator(AllocConfig config);
  ~CachingAllocator();

  // Memory for `bytes` on `device`, owned by `stream` (reused only by later work on that stream unless
  // record_stream is used). bytes == 0 returns nullptr. Throws OutOfMemoryError / AllocatorError.
  // May block when memory runs short (the OOM retry waits for events and streams, no lock held).
  void* allocate(int device, std::size_t bytes, npu_sim::Stream stream);
  // Returns the block to its pool (or defers until recorded streams pass an event). Never waits on a
  // stream (with caching disabled it waits for the device's streams, no lock held).
  void free(void* ptr);
  // The block containing ptr will not be reused until all work now queued on `stream` completes. Never
  // waits. Must not race with the free of the same pointer (as on CUDA).
  void record_stream(void* ptr, npu_sim::Stream stream);

  // The same three without the pointer -> block map (the fast path the torch adapter uses): allocate
  // also returns an opaque handle of the block in *ctx, which free_ctx / record_stream_ctx take. A block
  // allocated this way must be freed with free_ctx (the map does not know it).
  void* allocate(int device, std::size_t bytes, npu_sim::Stream stream, void** ctx);
  void free_ctx(void* ctx);
  // The block behind such a handle, read by its owner while it is allocated (memory history).
  struct Extent {
    int device;
    uintptr_t address;
    std::size_t size;  // rounded, as the snapshot's blocks are
    npu_sim::Stream stream;
  };
  static Extent extent_of(const void* ctx);
  void record_stream_ctx(void* ctx, npu_sim::Stream stream);

  // Releases every cached, unused segment back to the device (after waiting for pending events). Blocks:
  // each release waits for the device's streams, with no allocator lock held.
  void empty_cache();
  DeviceStats get_stats(int device);
  void reset_accumulated_stats(int device);
  void reset_peak_stats(int device);
  std::vector<SegmentInfo> snapshot();
  // Caps this process's reserved memory on `device` to fraction * capacity (0 < fraction <= 1).
  void set_memory_fraction(double fraction, int device);
  double get_memory_fraction(int device);

  const AllocConfig& config() const { return config_; }

 private:
  DeviceCachingAllocator& device_allocator(int device);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  AllocConfig config_;
};

// Rounds a request to the allocator's granularity (512 B), exposed for tests and the adapter.
std::size_t round_size(std::size_t bytes);
// "2.00 GiB"-style formatting used in messages and memory_summary.
std::string format_size(uint64_t bytes);

}  // namespace npu_alloc
