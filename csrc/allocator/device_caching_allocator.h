// Internal: the per-device caching allocator (blocks, pools, pending events, stats) behind CachingAllocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "allocator/caching_allocator.h"

namespace npu_alloc {

constexpr std::size_t kMinBlockSize = 512;             // every block is a multiple of this
constexpr std::size_t kSmallSize = 1u << 20;           // requests <= 1 MiB use the small pool
constexpr std::size_t kSmallBuffer = 2u << 20;         // small-pool segment size
constexpr std::size_t kLargeBuffer = 20u << 20;        // segment size for 1-10 MiB requests
constexpr std::size_t kMinLargeAlloc = 10u << 20;      // at and above this, segments are sized to fit
constexpr std::size_t kRoundLarge = 2u << 20;          // ... rounded up to this

struct BlockPool;

// A contiguous piece of one segment. Segments are doubly linked lists of blocks in address order.
// Every field is read and written under the device allocator's mutex_, except by the thread that owns
// the block outside all lists (an allocated block's caller reads device/ptr; a segment being released
// is read by its releaser). Block objects are recycled, never deleted before the allocator.
struct Block {
  int device = 0;
  npu_sim::Stream stream = nullptr;  // owning stream: only reused for work on this stream
  std::size_t size = 0;              // rounded size
  std::size_t requested_size = 0;    // what the caller asked for (valid while allocated)
  BlockPool* pool = nullptr;
  char* ptr = nullptr;
  bool allocated = false;
  int event_count = 0;               // outstanding record_stream events (freed but not reusable)
  uint64_t last_use = 0;             // use clock when last returned to the pool (GC age)
  Block* prev = nullptr;
  Block* next = nullptr;
  std::unordered_set<npu_sim::Stream> stream_uses;
  Block* active_prev = nullptr;      // intrusive list of active blocks (snapshot walks it)
  Block* active_next = nullptr;

  bool is_split() const { return prev != nullptr || next != nullptr; }
  bool is_free() const { return !allocated && event_count == 0; }  // i.e. sits in its pool
};

// Ordering (stream, size, address): lower_bound(stream, size, 0) is the best fit on a stream.
struct BlockLess {
  bool operator()(const Block* a, const Block* b) const {
    auto sa = reinterpret_cast<uintptr_t>(a->stream), sb = reinterpret_cast<uintptr_t>(b->stream);
    if (sa != sb) return sa < sb;
    if (a->size != b->size) return a->size < b->size;
    return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
  }
};

// Recycled tree nodes for a pool's std::set: the hot path (free -> insert, malloc -> erase) then never
// touches the heap. Used only under the owning device allocator's mutex_.
struct NodeFreeList {
  std::vector<void*> free;
  std::size_t node_size = 0;
  NodeFreeList() = default;
  NodeFreeList(const NodeFreeList&) = delete;
  NodeFreeList& operator=(const NodeFreeList&) = delete;
  ~NodeFreeList() {
    for (void* p : free) ::operator delete(p);
  }
};

template <class T>
struct NodeAllocator {
  using value_type = T;
  NodeFreeList* list;
  explicit NodeAllocator(NodeFreeList* l) : list(l) {}
  template <class U>
  NodeAllocator(const NodeAllocator<U>& other) : list(other.list) {}  // NOLINT: rebind
  T* allocate(std::size_t n) {
    if (n == 1) {
      if (list->node_size == 0) list->node_size = sizeof(T);
      if (list->node_size == sizeof(T) && !list->free.empty()) {
        void* p = list->free.back();
        list->free.pop_back();
        return static_cast<T*>(p);
      }
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) {
    if (n == 1 && list->node_size == sizeof(T)) {
      list->free.push_back(p);
    } else {
      ::operator delete(p);
    }
  }
  template <class U>
  bool operator==(const NodeAllocator<U>& o) const { return list == o.list; }
  template <class U>
  bool operator!=(const NodeAllocator<U>& o) const { return list != o.list; }
};

struct BlockPool {
  explicit BlockPool(bool small) : blocks(BlockLess(), NodeAllocator<Block*>(&nodes)), is_small(small) {}
  NodeFreeList nodes;  // declared before `blocks`: destroyed after it
  std::set<Block*, BlockLess, NodeAllocator<Block*>> blocks;
  const bool is_small;
};

// The design and Note [Lock rules] are at the top of device_caching_allocator.cpp. In short: mutex_
// guards all mutable state; stream workers call free(), so nothing may wait on a stream or an event
// while holding mutex_. Each declaration says how it stands to mutex_.
class DeviceCachingAllocator {
 public:
  DeviceCachingAllocator(int device, const AllocConfig& config);
  ~DeviceCachingAllocator();  // releases the cache like empty_cache(): call without mutex_
  DeviceCachingAllocator(const DeviceCachingAllocator&) = delete;
  DeviceCachingAllocator& operator=(const DeviceCachingAllocator&) = delete;

  // --- Public calls: all must be called without mutex_ (they take it). ---

  // `stream` must be resolved (non-null). Never returns nullptr (bytes > 0). May block: the OOM retry
  // and garbage collection wait for events and for the device's streams, with mutex_ released.
  Block* malloc(std::size_t bytes, npu_sim::Stream stream);
  // Never blocks on a stream or an event (stream workers call it). With caching disabled it waits for
  // the device's streams, outside mutex_.
  void free(Block* block);
  // Never blocks.
  void record_stream(Block* block, npu_sim::Stream stream);

  // Blocks: waits for pending events, then for the device's streams per released segment, with mutex_
  // released for each wait.
  void empty_cache();
  // The rest never block.
  DeviceStats get_stats();
  void reset_accumulated_stats();
  void reset_peak_stats();
  void snapshot(std::vector<SegmentInfo>* out);
  void set_memory_fraction(double fraction);
  double get_memory_fraction();

  // Size after the configured rounding (512 B, or power-of-two divisions). Needs no lock (config only).
  std::size_t round(std::size_t bytes) const;

 private:
  // Lock is the caller's hold on mutex_; functions taking `Lock& lock` may release and re-take it.
  using Lock = std::unique_lock<std::mutex>;
  using Guard = std::lock_guard<std::mutex>;

  // --- Must be called with mutex_ held; they never release it and never wait. ---
  BlockPool& pool_for(std::size_t size) { return size <= kSmallSize ? small_pool_ : large_pool_; }
  static std::size_t allocation_size(std::size_t size);  // (pure: no lock needed)
  Block* get_free_block(BlockPool& pool, npu_sim::Stream stream, std::size_t size);
  Block* alloc_block(BlockPool& pool, npu_sim::Stream stream, std::size_t alloc_size);  // malloc_device
  bool is_cached_segment(const Block* block) const;
  Block* finish_allocation(Block* block, std::size_t size, std::size_t requested);
  void end_allocation(Block* block);  // the user's free: not allocated, its allocation stats taken back
  void free_block(Block* block);
  void merge_into(Block* dst, Block* src);
  void insert_events(Block* block);  // event_record only
  void process_events();             // event_query only
  // Of `events` (taken out of pending_events_), the reached ones go back to the event pool and free their
  // block after its last one; the others wait in pending_events_ again. event_query only.
  void retire_reached(std::vector<std::pair<npu_sim::Event, Block*>>& events);
  npu_sim::Event get_event();
  void put_event(npu_sim::Event ev);
  std::size_t total_capacity();
  std::size_t allowed_max();
  [[noreturn]] void throw_oom(std::size_t alloc_size);
  Block* new_block();
  void recycle_block(Block* block);
  void link_active(Block* block);
  void unlink_active(Block* block);
  Block* malloc_uncached(std::size_t bytes, npu_sim::Stream stream);

  // --- Must be called with mutex_ held through `lock`; they release it while they wait (free_device,
  // event_synchronize) and return with it held again. State read before the call may be stale after. ---
  bool release_segment(Lock& lock, Block* block);
  void free_segment(Lock& lock, Block* block);
  bool release_available_cached_blocks(Lock& lock, BlockPool& pool, std::size_t alloc_size);
  void release_cached_blocks(Lock& lock);
  void release_pool(Lock& lock, BlockPool& pool);
  void garbage_collect(Lock& lock);
  void synchronize_and_free_events(Lock& lock);

  // --- Must be called without mutex_ (it waits for the device's streams between two holds). ---
  void free_uncached(Block* block);

  const int device_;
  const AllocConfig config_;
  // Guards every member below and every Block reachable from them (see Note [Lock rules]). Not
  // recursive: a function that releases it must own the only hold.
  std::mutex mutex_;
  BlockPool small_pool_{true};
  BlockPool large_pool_{false};
  Block* active_list_ = nullptr;       // allocated, or freed and waiting for events (intrusive list)
  std::vector<Block*> spare_blocks_;   // recycled Block objects (splits/merges allocate none)
  std::vector<std::pair<npu_sim::Event, Block*>> pending_events_;
  std::vector<npu_sim::Event> event_pool_;
  DeviceStats stats_;
  uint64_t use_clock_ = 0;
  std::size_t total_capacity_ = 0;  // 0 until first queried
  bool set_fraction_ = false;
  double fraction_ = 1.0;
};

// Stat helpers shared by the allocator translation units.
void update_stat(Stat& stat, int64_t amount);
void update_stat_array(StatArray& arr, int64_t amount, bool small);
[[noreturn]] void throw_runtime_error(const std::string& what);

}  // namespace npu_alloc
