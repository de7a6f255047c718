// Owns the per-device allocation and free paths: rounding, pool lookup, split/merge, retry, uncached mode.
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
    release_cached_blocks();
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

  process_events();
  const std::size_t size = round(bytes);
  BlockPool& pool = pool_for(size);
  const std::size_t alloc_size = allocation_size(size);

  Block* block = get_free_block(pool, stream, size);
  if (block == nullptr) {
    if (config_.garbage_collection_threshold > 0.0) garbage_collect();
    block = alloc_block(pool, stream, alloc_size, false);
    if (block == nullptr && release_available_cached_blocks(pool, alloc_size)) {
      block = alloc_block(pool, stream, alloc_size, false);
    }
    if (block == nullptr) {
      release_cached_blocks();
      block = alloc_block(pool, stream, alloc_size, true);
    }
    if (block == nullptr) {
      stats_.num_ooms++;
      throw_oom(alloc_size);
    }
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

Block* DeviceCachingAllocator::alloc_block(BlockPool& pool, npu_sim::Stream stream, std::size_t alloc_size,
                                           bool is_retry) {
  if (is_retry) stats_.num_alloc_retries++;
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
  stats_.num_device_alloc++;
  update_stat_array(stats_.segment, 1, pool.is_small);
  update_stat_array(stats_.reserved_bytes, static_cast<int64_t>(alloc_size), pool.is_small);
  if (alloc_size >= config_.max_split_size) update_stat(stats_.oversize_segments, 1);
  return b;
}

bool DeviceCachingAllocator::release_available_cached_blocks(BlockPool& pool, std::size_t alloc_size) {
  // Smallest cached whole segment (any stream) that frees at least alloc_size.
  Block* best = nullptr;
  for (Block* b : pool.blocks) {
    if (!b->is_split() && b->size >= alloc_size && (best == nullptr || b->size < best->size)) best = b;
  }
  if (best == nullptr) return false;
  release_block(best);
  return true;
}

void DeviceCachingAllocator::release_cached_blocks() {
  synchronize_and_free_events();
  release_pool(large_pool_);
  release_pool(small_pool_);
}

void DeviceCachingAllocator::release_pool(BlockPool& pool) {
  std::vector<Block*> whole;
  for (Block* b : pool.blocks) {
    if (!b->is_split()) whole.push_back(b);
  }
  for (Block* b : whole) release_block(b);
}

void DeviceCachingAllocator::release_block(Block* block) {
  block->pool->blocks.erase(block);
  npu_sim::Status st = npu_sim::free_device(block->ptr);
  if (st != npu_sim::Status::kSuccess) {
    throw_runtime_error("NPU caching allocator: free_device failed with " + std::string(npu_sim::status_name(st)));
  }
  const bool small = block->pool->is_small;
  stats_.num_device_free++;
  update_stat_array(stats_.segment, -1, small);
  update_stat_array(stats_.reserved_bytes, -static_cast<int64_t>(block->size), small);
  if (block->size >= config_.max_split_size) update_stat(stats_.oversize_segments, -1);
  recycle_block(block);
}

void DeviceCachingAllocator::garbage_collect() {
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
    release_block(b);
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
  Lock lock(mutex_);
  const bool small = block->pool->is_small;
  block->allocated = false;
  update_stat_array(stats_.allocation, -1, small);
  update_stat_array(stats_.allocated_bytes, -static_cast<int64_t>(block->size), small);
  update_stat_array(stats_.requested_bytes, -static_cast<int64_t>(block->requested_size), small);
  if (block->size >= config_.max_split_size) update_stat(stats_.oversize_allocations, -1);
  block->requested_size = 0;
  if (!block->stream_uses.empty()) {
    insert_events(block);
  } else {
    free_block(block);
  }
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
  Lock lock(mutex_);
  if (stream == block->stream) return;
  block->stream_uses.insert(stream);
}

// ---------------------------------------------------------------------------------------------------
// PYTORCH_NO_NPU_MEMORY_CACHING=1: one device malloc per allocation, device sync + free per free.

Block* DeviceCachingAllocator::malloc_uncached(std::size_t bytes, npu_sim::Stream stream) {
  const std::size_t size = (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
  BlockPool& pool = pool_for(size);
  Block* block = alloc_block(pool, stream, size, false);
  if (block == nullptr) {
    stats_.num_ooms++;
    throw_oom(size);
  }
  return finish_allocation(block, size, bytes);  // never splits: block->size == size
}

void DeviceCachingAllocator::free_uncached(Block* block) {
  {
    Lock lock(mutex_);
    const bool small = block->pool->is_small;
    block->allocated = false;
    update_stat_array(stats_.allocation, -1, small);
    update_stat_array(stats_.allocated_bytes, -static_cast<int64_t>(block->size), small);
    update_stat_array(stats_.requested_bytes, -static_cast<int64_t>(block->requested_size), small);
    update_stat_array(stats_.active, -1, small);
    update_stat_array(stats_.active_bytes, -static_cast<int64_t>(block->size), small);
    if (block->size >= config_.max_split_size) update_stat(stats_.oversize_allocations, -1);
    unlink_active(block);
  }
  // Work queued on any stream may still use the memory: npu_sim::free_device waits for the device's
  // streams to go idle (as cudaFree does) without consuming their errors, which stay for the user. The
  // wait happens outside our mutex (a stream host function may allocate on this device).
  npu_sim::Status st = npu_sim::free_device(block->ptr);
  Lock lock(mutex_);
  const bool small = block->pool->is_small;
  if (st != npu_sim::Status::kSuccess) {
    throw_runtime_error("NPU caching allocator: free_device failed with " + std::string(npu_sim::status_name(st)));
  }
  stats_.num_device_free++;
  update_stat_array(stats_.segment, -1, small);
  update_stat_array(stats_.reserved_bytes, -static_cast<int64_t>(block->size), small);
  if (block->size >= config_.max_split_size) update_stat(stats_.oversize_segments, -1);
  recycle_block(block);
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
