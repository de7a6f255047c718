// Owns the per-device bookkeeping: record_stream events, empty_cache, stats, snapshot, fraction, OOM text.
// Which functions may hold, release or must not hold mutex_: Note [Lock rules] in device_caching_allocator.cpp.
#include <algorithm>
#include <map>

#include "allocator/device_caching_allocator.h"

namespace npu_alloc {

npu_sim::Event DeviceCachingAllocator::get_event() {
  if (!event_pool_.empty()) {
    npu_sim::Event ev = event_pool_.back();
    event_pool_.pop_back();
    return ev;
  }
  npu_sim::Event ev = nullptr;
  npu_sim::Status st = npu_sim::event_create(&ev, npu_sim::kEventDefault);
  if (st != npu_sim::Status::kSuccess) {
    throw_runtime_error("NPU caching allocator: event_create failed with " + std::string(npu_sim::status_name(st)));
  }
  return ev;
}

void DeviceCachingAllocator::put_event(npu_sim::Event ev) { event_pool_.push_back(ev); }

void DeviceCachingAllocator::insert_events(Block* block) {
  std::unordered_set<npu_sim::Stream> streams;
  std::swap(streams, block->stream_uses);
  for (npu_sim::Stream s : streams) {
    npu_sim::Event ev = get_event();
    if (npu_sim::event_record(ev, s) != npu_sim::Status::kSuccess) {
      // A destroyed stream has no pending work left (stream_destroy drains it): nothing to wait for.
      put_event(ev);
      continue;
    }
    block->event_count++;
    pending_events_.emplace_back(ev, block);
  }
  if (block->event_count == 0) free_block(block);
}

void DeviceCachingAllocator::process_events() {
  if (pending_events_.empty()) return;
  std::vector<std::pair<npu_sim::Event, Block*>> pending;
  pending.swap(pending_events_);
  retire_reached(pending);
}

void DeviceCachingAllocator::retire_reached(std::vector<std::pair<npu_sim::Event, Block*>>& events) {
  for (auto& [ev, block] : events) {
    // kKernelError etc. still mean the recorded work is over; only kNotReady keeps the block waiting.
    if (npu_sim::event_query(ev) == npu_sim::Status::kNotReady) {
      pending_events_.emplace_back(ev, block);
      continue;
    }
    put_event(ev);
    // Return it at once: a block with no events left counts as free and may be merged (deleted) by a
    // neighbour's free_block, so it must not wait in a list.
    if (--block->event_count == 0) free_block(block);
  }
}

void DeviceCachingAllocator::synchronize_and_free_events(Lock& lock) {
  stats_.num_sync_all_streams++;
  if (pending_events_.empty()) return;
  // Taken out of pending_events_ before the unlock: only this thread waits on and accounts them. Their
  // blocks keep event_count > 0, so meanwhile they are in no pool and no neighbour merges them.
  std::vector<std::pair<npu_sim::Event, Block*>> pending;
  pending.swap(pending_events_);
  lock.unlock();
  // Each wait is for a stream whose worker may need mutex_ to free what its op held (Note [Lock rules]).
  // event_synchronize does not consume a kernel error: that stays for the stream's user.
  for (const auto& entry : pending) npu_sim::event_synchronize(entry.first);
  lock.lock();
  // One still not reached could not be waited for (an event on the calling worker's own stream, behind the
  // op running now): its block stays deferred, as process_events would keep it.
  retire_reached(pending);
}

void DeviceCachingAllocator::empty_cache() {
  Lock lock(mutex_);
  release_cached_blocks(lock);
}

DeviceStats DeviceCachingAllocator::get_stats() {
  Guard lock(mutex_);
  return stats_;
}

void DeviceCachingAllocator::reset_accumulated_stats() {
  Guard lock(mutex_);
  for (StatArray* arr : {&stats_.allocation, &stats_.segment, &stats_.active, &stats_.inactive_split,
                         &stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_bytes,
                         &stats_.inactive_split_bytes, &stats_.requested_bytes}) {
    for (Stat& s : *arr) s.allocated = s.freed = 0;
  }
  for (Stat* s : {&stats_.oversize_allocations, &stats_.oversize_segments}) s->allocated = s->freed = 0;
  stats_.num_alloc_retries = 0;
  stats_.num_ooms = 0;
  stats_.num_sync_all_streams = 0;
  stats_.num_device_alloc = 0;
  stats_.num_device_free = 0;
}

void DeviceCachingAllocator::reset_peak_stats() {
  Guard lock(mutex_);
  for (StatArray* arr : {&stats_.allocation, &stats_.segment, &stats_.active, &stats_.inactive_split,
                         &stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_bytes,
                         &stats_.inactive_split_bytes, &stats_.requested_bytes}) {
    for (Stat& s : *arr) s.peak = s.current;
  }
  for (Stat* s : {&stats_.oversize_allocations, &stats_.oversize_segments}) s->peak = s->current;
}

void DeviceCachingAllocator::snapshot(std::vector<SegmentInfo>* out) {
  Guard lock(mutex_);
  std::map<uintptr_t, Block*> heads;  // by address
  auto add_head = [&](Block* b) {
    while (b->prev != nullptr) b = b->prev;
    heads.emplace(reinterpret_cast<uintptr_t>(b->ptr), b);
  };
  for (Block* b : large_pool_.blocks) add_head(b);
  for (Block* b : small_pool_.blocks) add_head(b);
  for (Block* b = active_list_; b != nullptr; b = b->active_next) add_head(b);
  for (auto& [addr, head] : heads) {
    SegmentInfo seg;
    seg.device = device_;
    seg.address = addr;
    seg.stream = reinterpret_cast<uintptr_t>(head->stream);
    seg.is_large = !head->pool->is_small;
    for (Block* b = head; b != nullptr; b = b->next) {
      BlockInfo info;
      info.address = reinterpret_cast<uintptr_t>(b->ptr);
      info.size = b->size;
      info.requested_size = b->allocated ? b->requested_size : 0;
      info.allocated = b->allocated;
      info.active = !b->is_free();
      seg.total_size += b->size;
      if (info.allocated) seg.allocated_size += b->size;
      if (info.active) seg.active_size += b->size;
      seg.requested_size += info.requested_size;
      seg.blocks.push_back(info);
    }
    out->push_back(std::move(seg));
  }
}

std::size_t DeviceCachingAllocator::total_capacity() {
  if (total_capacity_ == 0) {
    std::size_t free_bytes = 0, total = 0;
    npu_sim::Status st = npu_sim::mem_get_info(device_, &free_bytes, &total);
    if (st != npu_sim::Status::kSuccess) {
      throw_runtime_error("NPU caching allocator: mem_get_info(device " + std::to_string(device_) +
                          ") failed with " + npu_sim::status_name(st));
    }
    total_capacity_ = total;
  }
  return total_capacity_;
}

std::size_t DeviceCachingAllocator::allowed_max() {
  const std::size_t total = total_capacity();
  if (!set_fraction_) return total;
  return static_cast<std::size_t>(fraction_ * static_cast<double>(total));
}

void DeviceCachingAllocator::set_memory_fraction(double fraction) {
  if (!(fraction > 0.0 && fraction <= 1.0)) {
    throw AllocatorError("set_memory_fraction: fraction must be in (0, 1], got " + std::to_string(fraction) +
                         " for NPU " + std::to_string(device_));
  }
  Guard lock(mutex_);
  total_capacity();  // validate the device now rather than at the next allocation
  fraction_ = fraction;
  set_fraction_ = true;
}

double DeviceCachingAllocator::get_memory_fraction() {
  Guard lock(mutex_);
  return fraction_;
}

void DeviceCachingAllocator::throw_oom(std::size_t alloc_size) {
  std::size_t free_bytes = 0, total = 0;
  if (npu_sim::mem_get_info(device_, &free_bytes, &total) != npu_sim::Status::kSuccess) {
    free_bytes = 0;
    total = total_capacity_;
  }
  const int64_t allocated = stats_.allocated_bytes[kAggregate].current;
  const int64_t reserved = stats_.reserved_bytes[kAggregate].current;
  std::string allowed;
  if (set_fraction_) {
    allowed = "This process is allowed " + format_size(allowed_max()) + " (memory fraction " +
              std::to_string(fraction_).substr(0, 6) + "). ";
  }
  OutOfMemoryError err(
      "NPU out of memory. Tried to allocate " + format_size(alloc_size) + ". NPU " + std::to_string(device_) +
      " has a total capacity of " + format_size(total) + " of which " + format_size(free_bytes) + " is free. " +
      allowed + "Of the allocated memory " + format_size(static_cast<uint64_t>(allocated)) +
      " is allocated by PyTorch, and " + format_size(static_cast<uint64_t>(std::max<int64_t>(0, reserved - allocated))) +
      " is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
      "PYTORCH_NPU_ALLOC_CONF=expandable_segments:True to avoid fragmentation.");
  err.device = device_;
  throw err;
}

}  // namespace npu_alloc
