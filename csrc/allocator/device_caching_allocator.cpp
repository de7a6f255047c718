// Owns the per-device allocation and free paths: rounding, pool lookup, split/merge, retry, uncached mode.
//
// The design is CUDA's caching allocator (c10/cuda/CUDACachingAllocator.cpp), as torch_npu mirrors it;
// csrc/core/npu_allocator.cpp adapts it to torch. One DeviceCachingAllocator per device:
//
// - Segments. Device memory is taken from npu_sim::malloc_device in segments and given back only by
//   empty_cache, the OOM retry, garbage collection and the destructor, and only as whole free segments.
//   A segment is cut into blocks (a doubly linked list in address order).
// - Stream ownership. A block belongs to the stream it was allocated for (a segment's blocks share its
//   stream). A freed block is reused only by later requests on that stream: stream order then makes the
//   old work finish before new work touches the memory, with no host synchronisation.
// - record_stream(block, s) says the block is also used on s. On free, an event is recorded on each such
//   s and the block stays out of its pool (Block::event_count > 0, still "active") until all its events
//   have passed: process_events() polls them at each malloc, synchronize_and_free_events() waits for them.
//   A stream that no longer exists has nothing pending, so it records no event.
// - Rounding. Requests round up to 512 B (kMinBlockSize); with roundup_power2_divisions:N, sizes above
//   512*N round up to one of N equal steps between the surrounding powers of two.
// - Pools and segment sizes. Requests of <= 1 MiB (kSmallSize) use the small pool, whose segments are
//   2 MiB (kSmallBuffer). Larger ones use the large pool: 20 MiB segments (kLargeBuffer) below 10 MiB
//   (kMinLargeAlloc), from there one segment per request rounded up to 2 MiB (kRoundLarge).
// - Split and merge. A request takes the best fit (smallest free block >= size on its stream; BlockLess
//   orders by stream, size, address) and splits off the rest when it is worth keeping: >= 512 B in the
//   small pool, > 1 MiB in the large pool. Blocks of max_split_size or more are never split and serve
//   only requests that waste less than max_non_split_rounding of them. A freed block merges with free
//   neighbours; when the whole segment is one free block, it can be released.
// - Out of memory: malloc tries, in this order,
//     1. free-able events: process_events() returns the blocks whose events have passed (polls, never
//        waits); then the best fit on the stream;
//        (with garbage_collection_threshold: release the least recently used whole cached segments while
//        reserved memory is above threshold * allowed, then the best fit again;)
//     2. a new segment (malloc_device; also refused past set_memory_fraction);
//     3. cached blocks of the right size: release the smallest whole cached segment of the request's pool
//        (any stream) that is at least the segment size (release_available_cached_blocks), then 2;
//     4. all cached blocks: wait for all pending events, release every whole cached segment, large pool
//        first (release_cached_blocks), count num_alloc_retries, then 2;
//     5. error: OutOfMemoryError with CUDA's text (throw_oom), counted in num_ooms.
//   Releasing one fitting segment before flushing keeps the rest of the cache; waiting for the events
//   before the flush lets deferred blocks merge back into whole, releasable segments, so the flush leaves
//   no stranded fragments. After each step that released mutex_, the best fit is looked up again: another
//   thread may have freed one meanwhile.
//
// Note [Lock rules]
// ~~~~~~~~~~~~~~~~~
// mutex_ (per device, not recursive) guards all mutable state of the device allocator: both pools and the
// Blocks in them, the active list, pending_events_, event_pool_, spare_blocks_, stats_, use_clock_, the
// memory fraction and the cached capacity. CachingAllocator's pointer-map mutex (caching_allocator.cpp)
// is separate and never held together with mutex_.
//
// Stream workers call free(). An op's captures (a collective's host function holding a contiguous
// temporary, a tensor kept alive for an async copy) are released on the stream's worker thread *before*
// the op counts as complete, and dropping the last reference to a block frees it here. So a thread
// holding mutex_ must never wait for a stream of the device to make progress: the worker may itself be
// waiting for mutex_, and neither would ever continue (e.g. dist.all_reduce on a non-contiguous tensor
// followed by torch.npu.empty_cache()). Hence:
//   - Calls that may wait, made only with mutex_ released: npu_sim::free_device (waits for every stream
//     of the device to go idle, like cudaFree), event_synchronize, and any stream/device synchronize or
//     stream_destroy (the allocator makes none of the last ones).
//   - Calls that never wait, fine under mutex_: malloc_device, event_create/record/query/destroy,
//     mem_get_info, get_default_stream.
//   - free() and record_stream() never wait (with caching disabled free() waits for the device's streams,
//     with mutex_ released), so they are safe on a stream worker. malloc() and empty_cache() may wait,
//     with mutex_ released. Called from a host function they wait for the device's other streams, never
//     for the worker's own (free_device and event_synchronize skip it; an event that cannot be waited for
//     stays pending); two host functions waiting for each other's streams is the caller's deadlock.
//   - Functions that wait take the caller's hold as `Lock& lock`, drop it around the wait and return with
//     it held; the header marks every function as "with mutex_ held" (never releases it), "with mutex_
//     held through `lock`" (may release it) or "without mutex_".
// Before it drops the lock, such a function puts what it will wait on out of every other thread's reach,
// so nothing is handed out twice and concurrent malloc/free/record_stream stay safe in the window:
//   - A segment to release is erased from its pool first (release_segment): it is in no list, has no
//     neighbours, and no other thread can find it. Its stats (segment, reserved_bytes, num_device_free,
//     oversize_segments) change only after free_device has returned: until then the device still holds
//     the memory (mem_get_info agrees). A snapshot taken meanwhile does not list it.
//   - Events to wait for are swapped out of pending_events_ (synchronize_and_free_events): their blocks
//     keep event_count > 0, so they are in no pool and no neighbour merges them (is_free() is false)
//     until the events are accounted under the lock again.
//   - A Block* remembered across a window may meanwhile have been split, merged into a neighbour and
//     recycled, or reused: the release loops re-check each one (is_cached_segment) under the lock. Block
//     objects are never deleted before the allocator, so the check itself is always safe.
// One release is in flight per releasing thread at a time; the other cached segments stay usable. A
// malloc that finds no memory while another thread is still giving a segment back does not wait for it
// (it might be a worker of a stream that the other thread is waiting for): it raises OutOfMemoryError.
#include "allocator/device_caching_allocator.h"

#include <algorithm>

namespace npu_alloc {

void update_stat(Stat& stat, int64_t amount) {
  stat.current += amount;
  stat.peak = std::max(stat.peak, stat.current);
  if (amount > 0) stat.allocated += amount;
  if (amount < 0) stat.freed += -amount;
}

void update_stat_array(StatArray& arr, int64_t amount, bool small) {
  update_stat(arr[kAggregate], amount);
  update_stat(arr[small ? kSmallPool : kLargePool], amount);
}

void throw_runtime_error(const std::string& what) {
  throw AllocatorError(what + ": " + npu_sim::last_error_message());
}

DeviceCachingAllocator::DeviceCachingAllocator(int device, const AllocConfig& config)
    : device_(device), config_(config) {
  stats_.max_split_size = static_cast<int64_t>(config_.max_split_size);
}

DeviceCachingAllocator::~DeviceCachingAllocator() {
  // Best effort: give cached segments and pooled events back; blocks still handed out are leaked
  // (their owners may free them through a dead allocator otherwise).
  try {
    Lock lock(mutex_);
    release_cached_blocks(lock);
    for (npu_sim::Event ev : event_pool_) npu_sim::event_destroy(ev);
    event_pool_.clear();
    for (Block* b : spare_blocks_) delete b;
    spare_blocks_.clear();
  } catch (...) {
  }
}

std::size_t DeviceCachingAllocator::round(std::size_t bytes) const {
  if (bytes <= kMinBlockSize) return kMinBlockSize;
  const std::size_t divisions = config_.roundup_power2_divisions;
  if (divisions > 1 && bytes > kMinBlockSize * divisions) {
    // Round up to the next of `divisions` equal steps between the surrounding powers of two.
    std::size_t floor_pow2 = std::size_t{1} << (63 - __builtin_clzll(bytes));
    if (floor_pow2 == bytes) return bytes;
    const std::size_t step = floor_pow2 / divisions;  // >= kMinBlockSize since bytes > 512 * divisions
    return (bytes + step - 1) / step * step;
  }
  return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

std::size_t DeviceCachingAllocator::allocation_size(std::size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

Block* DeviceCachingAllocator::malloc(std::size_t bytes, npu_sim::Stream stream) {
  // Requests this large cannot be rounded without overflow; no device has that much memory anyway.
  constexpr std::size_t kMaxRequest = std::size_t{1} << 62;
  Lock lock(mutex_);
  if (bytes > kMaxRequest) {
    stats_.num_ooms++;
    throw_oom(bytes);
  }
  if (!config_.caching_enabled) return malloc_uncached(bytes, stream);

  // The retry order is the design note's (top of this file). Steps that release mutex_ are followed by a
  // fresh best-fit lookup: a block may have been freed in the window.
  process_events();
  const std::size_t size = round(bytes);
  BlockPool& pool = pool_for(size);
  const std::size_t alloc_size = allocation_size(size);

  Block* block = get_free_block(pool, stream, size);
  if (block == nullptr && config_.garbage_collection_threshold > 0.0) {
    garbage_collect(lock);
    block = get_free_block(pool, stream, size);
  }
  if (block == nullptr) block = alloc_block(pool, stream, alloc_size);
  if (block == nullptr && release_available_cached_blocks(lock, pool, alloc_size)) {
    block = get_free_block(pool, stream, size);
    if (block == nullptr) block = alloc_block(pool, stream, alloc_size);
  }
  if (block == nullptr) {
    stats_.num_alloc_retries++;
    release_cached_blocks(lock);
    block = get_free_block(pool, stream, size);
    if (block == nullptr) block = alloc_block(pool, stream, alloc_size);
  }
  if (block == nullptr) {
    stats_.num_ooms++;
    throw_oom(alloc_size);
  }
  return finish_allocation(block, size, bytes);
}

Block* DeviceCachingAllocator::get_free_block(BlockPool& pool, npu_sim::Stream stream, std::size_t size) {
  Block key;
  key.stream = stream;
  key.size = size;
  key.ptr = nullptr;
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  const std::size_t max_split = config_.max_split_size;
  // Do not carve small requests out of unsplittable oversize blocks, nor serve an oversize request
  // from a much bigger block.
  if (size < max_split && b->size >= max_split) return nullptr;
  if (size >= max_split && b->size - size >= config_.max_non_split_rounding) return nullptr;
  pool.blocks.erase(it);
  return b;
}

Block* DeviceCachingAllocator::alloc_block(BlockPool& pool, npu_sim::Stream stream, std::size_t alloc_size) {
  if (set_fraction_ &&
      static_cast<std::size_t>(stats_.reserved_bytes[kAggregate].current) + alloc_size > allowed_max()) {
    return nullptr;
  }
  void* ptr = nullptr;
  npu_sim::Status st = npu_sim::malloc_device(device_, &ptr, alloc_size);
  if (st == npu_sim::Status::kOutOfMemory) return nullptr;
  if (st != npu_sim::Status::kSuccess) {
    throw_runtime_error("NPU caching allocator: malloc_device(device " + std::to_string(device_) + ", " +
                        format_size(alloc_size) + ") failed with " + npu_sim::status_name(st));
  }
  Block* b = new_block();
  b->device = device_;
  b->stream = stream;
  b->size = alloc_size;
  b->pool = &pool;
  b->ptr = static_cast<char*>(ptr);
  notify_segment(true, device_, reinterpret_cast<uintptr_t>(ptr), alloc_size, stream);
  stats_.num_device_alloc++;
  update_stat_array(stats_.segment, 1, pool.is_small);
  update_stat_array(stats_.reserved_bytes, static_cast<int64_t>(alloc_size), pool.is_small);
  if (alloc_size >= config_.max_split_size) update_stat(stats_.oversize_segments, 1);
  return b;
}

bool DeviceCachingAllocator::is_cached_segment(const Block* block) const {
  if (block->pool == nullptr || block->allocated || block->event_count != 0 || block->is_split()) return false;
  auto it = block->pool->blocks.find(const_cast<Block*>(block));
  return it != block->pool->blocks.end() && *it == block;
}

// Gives one whole cached segment back to the device; false (nothing done) if `block` is no longer one.
bool DeviceCachingAllocator::release_segment(Lock& lock, Block* block) {
  if (!is_cached_segment(block)) return false;
  // Out of the pool before the unlock: no other thread can hand it out or merge with it (a whole segment
  // has no neighbours). Only this thread knows it until it is recycled below.
  block->pool->blocks.erase(block);
  free_segment(lock, block);
  return true;
}

// Returns a segment that only this thread knows (in no pool or list) to the device. free_device waits for
// the device's streams to go idle (as cudaFree does) without consuming their errors, which stay for the
// user; the wait runs with mutex_ released (Note [Lock rules]: a stream worker may be freeing a block).
void DeviceCachingAllocator::free_segment(Lock& lock, Block* block) {
  void* const ptr = block->ptr;
  lock.unlock();
  const npu_sim::Status st = npu_sim::free_device(ptr);
  const std::string detail = st == npu_sim::Status::kSuccess ? std::string() : npu_sim::last_error_message();
  lock.lock();
  if (st != npu_sim::Status::kSuccess) {
    // The segment is lost to the cache (still counted as reserved): the runtime refused the pointer.
    throw AllocatorError("NPU caching allocator: free_device failed with " + std::string(npu_sim::status_name(st)) +
                         ": " + detail);
  }
  notify_segment(false, device_, reinterpret_cast<uintptr_t>(ptr), block->size, block->stream);
  const bool small = block->pool->is_small;
  stats_.num_device_free++;
  update_stat_array(stats_.segment, -1, small);
  update_stat_array(stats_.reserved_bytes, -static_cast<int64_t>(block->size), small);
  if (block->size >= config_.max_split_size) update_stat(stats_.oversize_segments, -1);
  recycle_block(block);
}

bool DeviceCachingAllocator::release_available_cached_blocks(Lock& lock, BlockPool& pool, std::size_t alloc_size) {
  // Smallest cached whole segment (any stream) that frees at least alloc_size.
  Block* best = nullptr;
  for (Block* b : pool.blocks) {
    if (!b->is_split() && b->size >= alloc_size && (best == nullptr || b->size < best->size)) best = b;
  }
  if (best == nullptr) return false;
  return release_segment(lock, best);
}

void DeviceCachingAllocator::release_cached_blocks(Lock& lock) {
  // Events first: their blocks then merge back into whole segments that the pools' release can take.
  synchronize_and_free_events(lock);
  release_pool(lock, large_pool_);
  release_pool(lock, small_pool_);
}

void DeviceCachingAllocator::release_pool(Lock& lock, BlockPool& pool) {
  // The segments cached now, released one by one (each may have changed during an earlier one's wait);
  // segments cached later are left to the next flush, so a busy allocator cannot keep this looping.
  std::vector<Block*> whole;
  for (Block* b : pool.blocks) {
    if (!b->is_split()) whole.push_back(b);
  }
  for (Block* b : whole) release_segment(lock, b);
}

void DeviceCachingAllocator::garbage_collect(Lock& lock) {
  const double threshold = config_.garbage_collection_threshold * static_cast<double>(allowed_max());
  auto reserved = [&] { return static_cast<double>(stats_.reserved_bytes[kAggregate].current); };
  if (reserved() <= threshold) return;
  std::vector<Block*> candidates;
  for (BlockPool* pool : {&large_pool_, &small_pool_}) {
    for (Block* b : pool->blocks) {
      if (!b->is_split()) candidates.push_back(b);
    }
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const Block* a, const Block* b) { return a->last_use < b->last_use; });
  for (Block* b : candidates) {
    if (reserved() <= threshold) break;
    release_segment(lock, b);
  }
}

Block* DeviceCachingAllocator::finish_allocation(Block* block, std::size_t size, std::size_t requested) {
  const bool small = block->pool->is_small;
  const bool was_split = block->is_split();  // if so, it was counted as an inactive split block
  const std::size_t remaining = block->size - size;
  const bool split = small ? remaining >= kMinBlockSize
                           : (block->size < config_.max_split_size && remaining > kSmallSize);
  if (was_split) {
    update_stat_array(stats_.inactive_split, -1, small);
    update_stat_array(stats_.inactive_split_bytes, -static_cast<int64_t>(block->size), small);
  }
  if (split) {
    Block* rest = new_block();
    rest->device = device_;
    rest->stream = block->stream;
    rest->pool = block->pool;
    rest->ptr = block->ptr + size;
    rest->size = remaining;
    rest->last_use = ++use_clock_;
    rest->prev = block;
    rest->next = block->next;
    if (rest->next != nullptr) rest->next->prev = rest;
    block->next = rest;
    block->size = size;
    rest->pool->blocks.insert(rest);
    update_stat_array(stats_.inactive_split, 1, small);
    update_stat_array(stats_.inactive_split_bytes, static_cast<int64_t>(remaining), small);
  }
  block->allocated = true;
  block->requested_size = requested;
  link_active(block);
  update_stat_array(stats_.allocation, 1, small);
  update_stat_array(stats_.allocated_bytes, static_cast<int64_t>(block->size), small);
  update_stat_array(stats_.requested_bytes, static_cast<int64_t>(requested), small);
  update_stat_array(stats_.active, 1, small);
  update_stat_array(stats_.active_bytes, static_cast<int64_t>(block->size), small);
  if (block->size >= config_.max_split_size) update_stat(stats_.oversize_allocations, 1);
  return block;
}

void DeviceCachingAllocator::free(Block* block) {
  if (!config_.caching_enabled) {
    free_uncached(block);
    return;
  }
  Guard lock(mutex_);
  end_allocation(block);
  block->requested_size = 0;
  if (!block->stream_uses.empty()) {
    insert_events(block);
  } else {
    free_block(block);
  }
}

void DeviceCachingAllocator::end_allocation(Block* block) {
  const bool small = block->pool->is_small;
  block->allocated = false;
  update_stat_array(stats_.allocation, -1, small);
  update_stat_array(stats_.allocated_bytes, -static_cast<int64_t>(block->size), small);
  update_stat_array(stats_.requested_bytes, -static_cast<int64_t>(block->requested_size), small);
  if (block->size >= config_.max_split_size) update_stat(stats_.oversize_allocations, -1);
}

void DeviceCachingAllocator::free_block(Block* block) {
  const bool small = block->pool->is_small;
  unlink_active(block);
  update_stat_array(stats_.active, -1, small);
  update_stat_array(stats_.active_bytes, -static_cast<int64_t>(block->size), small);
  if (block->prev != nullptr && block->prev->is_free()) merge_into(block, block->prev);
  if (block->next != nullptr && block->next->is_free()) merge_into(block, block->next);
  if (block->is_split()) {
    update_stat_array(stats_.inactive_split, 1, small);
    update_stat_array(stats_.inactive_split_bytes, static_cast<int64_t>(block->size), small);
  }
  block->last_use = ++use_clock_;
  block->pool->blocks.insert(block);
}

// Absorbs the free neighbour `src` (prev or next of dst, currently pooled) into dst.
void DeviceCachingAllocator::merge_into(Block* dst, Block* src) {
  const bool small = src->pool->is_small;
  src->pool->blocks.erase(src);
  update_stat_array(stats_.inactive_split, -1, small);
  update_stat_array(stats_.inactive_split_bytes, -static_cast<int64_t>(src->size), small);
  if (src == dst->prev) {
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev != nullptr) dst->prev->next = dst;
  } else {
    dst->next = src->next;
    if (dst->next != nullptr) dst->next->prev = dst;
  }
  dst->size += src->size;
  recycle_block(src);
}

void DeviceCachingAllocator::record_stream(Block* block, npu_sim::Stream stream) {
  if (!config_.caching_enabled) return;  // uncached frees synchronize the device anyway
  Guard lock(mutex_);
  if (stream == block->stream) return;
  block->stream_uses.insert(stream);
}

// ---------------------------------------------------------------------------------------------------
// PYTORCH_NO_NPU_MEMORY_CACHING=1: one device malloc per allocation, device sync + free per free.

Block* DeviceCachingAllocator::malloc_uncached(std::size_t bytes, npu_sim::Stream stream) {
  const std::size_t size = (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
  BlockPool& pool = pool_for(size);
  Block* block = alloc_block(pool, stream, size);
  if (block == nullptr) {
    stats_.num_ooms++;
    throw_oom(size);
  }
  return finish_allocation(block, size, bytes);  // never splits: block->size == size
}

void DeviceCachingAllocator::free_uncached(Block* block) {
  Lock lock(mutex_);
  end_allocation(block);
  const bool small = block->pool->is_small;
  update_stat_array(stats_.active, -1, small);
  update_stat_array(stats_.active_bytes, -static_cast<int64_t>(block->size), small);
  unlink_active(block);  // now in no list: only this thread knows the block until it is recycled
  free_segment(lock, block);  // work queued on any stream may still use it: free_segment waits for them
}

// ---------------------------------------------------------------------------------------------------
// Block bookkeeping without heap traffic on the hot path.

Block* DeviceCachingAllocator::new_block() {
  if (spare_blocks_.empty()) return new Block;
  Block* b = spare_blocks_.back();
  spare_blocks_.pop_back();
  return b;
}

void DeviceCachingAllocator::recycle_block(Block* block) {
  *block = Block();
  spare_blocks_.push_back(block);
}

void DeviceCachingAllocator::link_active(Block* block) {
  block->active_prev = nullptr;
  block->active_next = active_list_;
  if (active_list_ != nullptr) active_list_->active_prev = block;
  active_list_ = block;
}

void DeviceCachingAllocator::unlink_active(Block* block) {
  if (block->active_prev != nullptr) {
    block->active_prev->active_next = block->active_next;
  } else {
    active_list_ = block->active_next;
  }
  if (block->active_next != nullptr) block->active_next->active_prev = block->active_prev;
  block->active_prev = block->active_next = nullptr;
}

}  // namespace npu_alloc
