// Tests of the caching allocator core: pools, split/merge, stream ownership, OOM, fraction, stats, modes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "allocator/caching_allocator.h"
#include "npu_sim/runtime.h"
#include "test_allocator_util.h"

using namespace npu_alloc;
using namespace npu_alloc_test;

namespace {

bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

int64_t reserved(CachingAllocator& a, StatType t = kAggregate, int dev = 0) {
  return a.get_stats(dev).reserved_bytes[t].current;
}
}  // namespace

TEST(CachingAllocator, ZeroBytesAndNullFree) {
  CachingAllocator a{AllocConfig{}};
  EXPECT_EQ(a.allocate(0, 0, nullptr), nullptr);
  EXPECT_NO_THROW(a.free(nullptr));
  EXPECT_EQ(a.get_stats(0).num_device_alloc, 0);
}

TEST(CachingAllocator, ErrorsNameDeviceAndPointer) {
  CachingAllocator a{AllocConfig{}};
  try {
    a.allocate(99, 16, nullptr);
    FAIL() << "expected AllocatorError";
  } catch (const AllocatorError& e) {
    EXPECT_TRUE(contains(e.what(), "99")) << e.what();
  }
  EXPECT_THROW(a.allocate(-1, 16, nullptr), AllocatorError);
  int x = 0;
  try {
    a.free(&x);
    FAIL() << "expected AllocatorError";
  } catch (const AllocatorError& e) {
    EXPECT_TRUE(contains(e.what(), "free: pointer 0x")) << e.what();
    EXPECT_TRUE(contains(e.what(), "was not allocated by the NPU caching allocator")) << e.what();
  }
  EXPECT_THROW(a.get_stats(1000), AllocatorError);
}

TEST(CachingAllocator, PoolSegmentSizes) {
  CachingAllocator a{AllocConfig{}};
  npu_sim::Stream s = new_stream(0);
  // `block`: what the caller gets (the whole segment when the remainder is too small to split).
  struct Case { std::size_t bytes, segment, block; bool small; };
  const std::vector<Case> cases = {
      {1, 2 * kMiB, 512, true},
      {kMiB, 2 * kMiB, kMiB, true},
      {kMiB + 1, 20 * kMiB, kMiB + 512, false},
      {10 * kMiB - 512, 20 * kMiB, 10 * kMiB - 512, false},
      {10 * kMiB, 10 * kMiB, 10 * kMiB, false},
      {11 * kMiB + 1, 12 * kMiB, 12 * kMiB, false},  // 0.5 MiB remainder: not split
      {13 * kMiB, 14 * kMiB, 14 * kMiB, false},      // 1 MiB remainder: not split (needs > 1 MiB)
  };
  for (const Case& c : cases) {
    void* p = a.allocate(0, c.bytes, s);
    ASSERT_NE(p, nullptr);
    DeviceStats st = a.get_stats(0);
    EXPECT_EQ(st.reserved_bytes[kAggregate].current, static_cast<int64_t>(c.segment)) << c.bytes;
    EXPECT_EQ(st.reserved_bytes[c.small ? kSmallPool : kLargePool].current, static_cast<int64_t>(c.segment));
    EXPECT_EQ(st.allocated_bytes[kAggregate].current, static_cast<int64_t>(c.block)) << c.bytes;
    EXPECT_EQ(st.requested_bytes[kAggregate].current, static_cast<int64_t>(c.bytes));
    EXPECT_EQ(st.segment[kAggregate].current, 1);
    a.free(p);
    a.empty_cache();
    EXPECT_EQ(reserved(a), 0);
  }
  npu_sim::stream_destroy(s);
}

TEST(CachingAllocator, RoundupPowerOfTwoDivisions) {
  AllocConfig cfg;
  cfg.roundup_power2_divisions = 4;
  CachingAllocator a{cfg};
  void* p = a.allocate(0, 5000, nullptr);  // between 4096 and 8192 in steps of 1024 -> 5120
  EXPECT_EQ(a.get_stats(0).allocated_bytes[kAggregate].current, 5120);
  void* q = a.allocate(0, 1200, nullptr);  // below 512 * divisions: plain 512 B rounding
  EXPECT_EQ(a.get_stats(0).allocated_bytes[kAggregate].current, 5120 + 1536);
  void* r = a.allocate(0, 3 * kMiB + 1, nullptr);  // [2 MiB, 4 MiB) in 512 KiB steps -> 3.5 MiB
  EXPECT_EQ(a.get_stats(0).allocated_bytes[kLargePool].current, static_cast<int64_t>(3 * kMiB + kMiB / 2));
  a.free(p);
  a.free(q);
  a.free(r);
}

TEST(CachingAllocator, ReuseReturnsSamePointer) {
  CachingAllocator a{AllocConfig{}};
  npu_sim::Stream s = new_stream(0);
  for (std::size_t bytes : {std::size_t{4096}, 5 * kMiB, 64 * kMiB}) {
    void* p = a.allocate(0, bytes, s);
    a.free(p);
    void* q = a.allocate(0, bytes, s);
    EXPECT_EQ(p, q) << bytes;
    a.free(q);
  }
  DeviceStats st = a.get_stats(0);
  EXPECT_EQ(st.num_device_alloc, 3);
  EXPECT_EQ(st.allocation[kAggregate].allocated, 6);
  EXPECT_EQ(st.allocation[kAggregate].current, 0);
  a.empty_cache();
  npu_sim::stream_destroy(s);
}

TEST(CachingAllocator, SplitAndMerge) {
  CachingAllocator a{AllocConfig{}};
  npu_sim::Stream s = new_stream(0);
  char* p1 = static_cast<char*>(a.allocate(0, 1000, s));
  char* p2 = static_cast<char*>(a.allocate(0, 1000, s));
  char* p3 = static_cast<char*>(a.allocate(0, 1000, s));
  EXPECT_EQ(p2, p1 + 1024);
  EXPECT_EQ(p3, p2 + 1024);
  const int64_t rest = static_cast<int64_t>(2 * kMiB - 3 * 1024);
  DeviceStats st = a.get_stats(0);
  EXPECT_EQ(st.segment[kSmallPool].current, 1);
  EXPECT_EQ(st.inactive_split[kSmallPool].current, 1);
  EXPECT_EQ(st.inactive_split_bytes[kSmallPool].current, rest);

  a.free(p2);  // hole in the middle: two inactive split blocks
  st = a.get_stats(0);
  EXPECT_EQ(st.inactive_split[kAggregate].current, 2);
  EXPECT_EQ(st.inactive_split_bytes[kAggregate].current, rest + 1024);
  EXPECT_EQ(st.active[kAggregate].current, 2);

  a.free(p1);  // merges with p2's block
  st = a.get_stats(0);
  EXPECT_EQ(st.inactive_split[kAggregate].current, 2);
  EXPECT_EQ(st.inactive_split_bytes[kAggregate].current, rest + 2048);

  a.free(p3);  // everything merges back into one unsplit segment
  st = a.get_stats(0);
  EXPECT_EQ(st.inactive_split[kAggregate].current, 0);
  EXPECT_EQ(st.inactive_split_bytes[kAggregate].current, 0);
  EXPECT_EQ(st.active[kAggregate].current, 0);
  EXPECT_EQ(st.segment[kAggregate].current, 1);

  // The merged block serves a request spanning all three old blocks.
  void* big = a.allocate(0, kMiB, s);
  EXPECT_EQ(big, p1);
  EXPECT_EQ(a.get_stats(0).num_device_alloc, 1);

  std::vector<SegmentInfo> snap = a.snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].address, reinterpret_cast<uintptr_t>(p1));
  EXPECT_EQ(snap[0].total_size, 2 * kMiB);
  EXPECT_EQ(snap[0].allocated_size, kMiB);
  EXPECT_EQ(snap[0].requested_size, kMiB);
  EXPECT_EQ(snap[0].stream, reinterpret_cast<uintptr_t>(s));
  EXPECT_FALSE(snap[0].is_large);
  ASSERT_EQ(snap[0].blocks.size(), 2u);
  EXPECT_TRUE(snap[0].blocks[0].allocated);
  EXPECT_FALSE(snap[0].blocks[1].allocated);
  a.free(big);
  a.empty_cache();
  EXPECT_TRUE(a.snapshot().empty());
  npu_sim::stream_destroy(s);
}

TEST(CachingAllocator, LargePoolSplitRules) {
  CachingAllocator a{AllocConfig{}};
  npu_sim::Stream s = new_stream(0);
  // 19.5 MiB out of a 20 MiB segment: remainder 0.5 MiB <= 1 MiB, not split.
  void* p = a.allocate(0, 20 * kMiB - kMiB / 2, s);
  EXPECT_EQ(a.get_stats(0).inactive_split[kLargePool].current, 0);
  a.free(p);
  // 2 MiB out of the cached 20 MiB segment: split, 18 MiB remain.
  void* q = a.allocate(0, 2 * kMiB, s);
  EXPECT_EQ(q, p);
  EXPECT_EQ(a.get_stats(0).inactive_split_bytes[kLargePool].current, static_cast<int64_t>(18 * kMiB));
  a.free(q);
  a.empty_cache();

  // With max_split_size, big blocks are never split and small requests don't use them.
  AllocConfig cfg;
  cfg.max_split_size = 32 * kMiB;
  CachingAllocator b{cfg};
  void* big = b.allocate(0, 64 * kMiB, s);
  DeviceStats st = b.get_stats(0);
  EXPECT_EQ(st.oversize_allocations.current, 1);
  EXPECT_EQ(st.oversize_segments.current, 1);
  EXPECT_EQ(st.max_split_size, static_cast<int64_t>(32 * kMiB));
  b.free(big);
  void* small = b.allocate(0, 4 * kMiB, s);  // not carved out of the 64 MiB block
  EXPECT_NE(small, big);
  void* over = b.allocate(0, 50 * kMiB, s);  // 64 - 50 < 20 MiB (max_non_split_rounding): reuse
  EXPECT_EQ(over, big);
  st = b.get_stats(0);
  EXPECT_EQ(st.inactive_split[kAggregate].current, 1);  // only the 4 MiB request's 20 MiB segment split
  EXPECT_EQ(st.allocated_bytes[kLargePool].current, static_cast<int64_t>(64 * kMiB + 4 * kMiB));
  b.free(over);
  void* over2 = b.allocate(0, 40 * kMiB, s);  // 64 - 40 >= 20 MiB: new segment
  EXPECT_NE(over2, big);
  b.free(over2);
  b.free(small);
  EXPECT_EQ(b.get_stats(0).oversize_allocations.current, 0);
  b.empty_cache();
  EXPECT_EQ(b.get_stats(0).oversize_segments.current, 0);
  npu_sim::stream_destroy(s);
}

TEST(CachingAllocator, StreamOwnership) {
  CachingAllocator a{AllocConfig{}};
  npu_sim::Stream s1 = new_stream(0), s2 = new_stream(0);
  void* p = a.allocate(0, 4096, s1);
  a.free(p);
  void* q = a.allocate(0, 4096, s2);
  EXPECT_NE(p, q);
  EXPECT_EQ(a.get_stats(0).segment[kAggregate].current, 2);
  void* r = a.allocate(0, 4096, s1);
  EXPECT_EQ(p, r);
  a.free(q);
  a.free(r);
  // A null stream means the default stream of the device, consistently.
  void* d = a.allocate(0, 4096, nullptr);
  a.free(d);
  npu_sim::Stream def = nullptr;
  ASSERT_EQ(npu_sim::get_default_stream(0, &def), npu_sim::Status::kSuccess);
  EXPECT_EQ(a.allocate(0, 4096, def), d);
  a.free(d);
  a.empty_cache();
  npu_sim::stream_destroy(s1);
  npu_sim::stream_destroy(s2);
}

TEST(CachingAllocator, OutOfMemoryMessageAndRecovery) {
  CachingAllocator a{AllocConfig{}};
  const std::size_t cap = capacity(0);
  void* big = a.allocate(0, cap - cap / 8, nullptr);
  ASSERT_NE(big, nullptr);
  const std::size_t want = cap / 4;
  try {
    a.allocate(0, want, nullptr);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.device, 0);
    EXPECT_TRUE(contains(m, "NPU out of memory. Tried to allocate " + format_size(want))) << m;
    EXPECT_TRUE(contains(m, "NPU 0 has a total capacity of " + format_size(cap))) << m;
    EXPECT_TRUE(contains(m, "is free")) << m;
    EXPECT_TRUE(contains(m, format_size(cap - cap / 8) + " is allocated by PyTorch")) << m;
    EXPECT_TRUE(contains(m, "reserved by PyTorch but unallocated")) << m;
    EXPECT_TRUE(contains(m, "expandable_segments:True")) << m;
  }
  DeviceStats st = a.get_stats(0);
  EXPECT_EQ(st.num_ooms, 1);
  EXPECT_EQ(st.num_alloc_retries, 1);
  a.free(big);
  // After freeing, the same request succeeds: the cached big block serves it (same stream, split).
  void* p = a.allocate(0, want, nullptr);
  EXPECT_EQ(p, big);
  a.free(p);
  a.empty_cache();
  EXPECT_EQ(reserved(a), 0);
}

TEST(CachingAllocator, OomRetryFreesCachedSegments) {
  CachingAllocator a{AllocConfig{}};
  const std::size_t cap = capacity(0);
  npu_sim::Stream s1 = new_stream(0), s2 = new_stream(0);
  // A cached segment of another stream big enough for the request is released, no full flush.
  void* x = a.allocate(0, cap / 10 * 7, s1);
  a.free(x);
  void* y = a.allocate(0, cap / 2, s2);
  DeviceStats st = a.get_stats(0);
  EXPECT_EQ(st.num_alloc_retries, 0);
  EXPECT_EQ(st.num_device_free, 1);
  EXPECT_EQ(st.num_ooms, 0);
  a.free(y);
  // Not big enough anywhere alone: flush everything and retry.
  void* small = a.allocate(0, kMiB, s1);
  a.free(small);
  void* z = a.allocate(0, cap / 10 * 6, s1);
  st = a.get_stats(0);
  EXPECT_EQ(st.num_alloc_retries, 1);
  EXPECT_EQ(st.num_ooms, 0);
  EXPECT_EQ(st.segment[kAggregate].current, 1);
  a.free(z);
  // Injected runtime failure: retried after flushing.
  a.empty_cache();
  a.reset_accumulated_stats(0);
  npu_sim::inject_malloc_failures(0, 1);
  void* w = a.allocate(0, 3 * kMiB, s1);
  st = a.get_stats(0);
  EXPECT_EQ(st.num_alloc_retries, 1);
  EXPECT_EQ(st.num_device_alloc, 1);
  a.free(w);
  a.empty_cache();
  npu_sim::stream_destroy(s1);
  npu_sim::stream_destroy(s2);
}

TEST(CachingAllocator, MemoryFraction) {
  CachingAllocator a{AllocConfig{}};
  const std::size_t cap = capacity(0);
  EXPECT_DOUBLE_EQ(a.get_memory_fraction(0), 1.0);
  EXPECT_THROW(a.set_memory_fraction(0.0, 0), AllocatorError);
  EXPECT_THROW(a.set_memory_fraction(1.5, 0), AllocatorError);
  a.set_memory_fraction(0.1, 0);
  EXPECT_DOUBLE_EQ(a.get_memory_fraction(0), 0.1);
  EXPECT_THROW(a.allocate(0, cap / 5, nullptr), OutOfMemoryError);
  void* p = a.allocate(0, cap / 16, nullptr);
  try {
    a.allocate(0, cap / 16, nullptr);  // reserved would exceed 0.1 * capacity
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_TRUE(contains(e.what(), "Tried to allocate")) << e.what();
    EXPECT_TRUE(contains(e.what(), "allowed")) << e.what();
  }
  EXPECT_EQ(a.get_stats(0).num_ooms, 2);
  a.free(p);
  void* q = a.allocate(0, cap / 20, nullptr);  // served from the cached block
  a.free(q);
  // Device 1 is unaffected.
  void* r = a.allocate(1, cap / 5, nullptr);
  a.free(r);
  a.empty_cache();
}

TEST(CachingAllocator, EmptyCacheReleasesEverythingFree) {
  CachingAllocator a{AllocConfig{}};
  npu_sim::Stream s = new_stream(0);
  std::vector<void*> ptrs;
  for (std::size_t b : {std::size_t{100}, std::size_t{3000}, 2 * kMiB, 30 * kMiB}) {
    ptrs.push_back(a.allocate(0, b, s));
    ptrs.push_back(a.allocate(1, b, nullptr));
  }
  void* keep = a.allocate(0, 200, s);  // shares a small segment: that segment stays
  for (void* p : ptrs) a.free(p);
  a.empty_cache();
  EXPECT_EQ(reserved(a, kAggregate, 1), 0);
  EXPECT_EQ(reserved(a, kAggregate, 0), static_cast<int64_t>(2 * kMiB));
  a.free(keep);
  a.empty_cache();
  DeviceStats st = a.get_stats(0);
  EXPECT_EQ(st.reserved_bytes[kAggregate].current, 0);
  EXPECT_EQ(st.segment[kAggregate].current, 0);
  EXPECT_EQ(st.num_device_alloc, st.num_device_free);
  EXPECT_GE(st.num_sync_all_streams, 1);
  npu_sim::stream_destroy(s);
}

TEST(CachingAllocator, PeakAndResetStats) {
  CachingAllocator a{AllocConfig{}};
  void* p = a.allocate(0, 4 * kMiB, nullptr);
  void* q = a.allocate(0, 4 * kMiB, nullptr);
  a.free(q);
  DeviceStats st = a.get_stats(0);
  EXPECT_EQ(st.allocated_bytes[kAggregate].current, static_cast<int64_t>(4 * kMiB));
  EXPECT_EQ(st.allocated_bytes[kAggregate].peak, static_cast<int64_t>(8 * kMiB));
  EXPECT_EQ(st.allocated_bytes[kAggregate].allocated, static_cast<int64_t>(8 * kMiB));
  EXPECT_EQ(st.allocated_bytes[kAggregate].freed, static_cast<int64_t>(4 * kMiB));
  EXPECT_EQ(st.allocation[kLargePool].peak, 2);
  EXPECT_EQ(st.allocation[kSmallPool].peak, 0);
  a.reset_peak_stats(0);
  st = a.get_stats(0);
  EXPECT_EQ(st.allocated_bytes[kAggregate].peak, static_cast<int64_t>(4 * kMiB));
  EXPECT_EQ(st.allocation[kAggregate].peak, 1);
  EXPECT_EQ(st.reserved_bytes[kAggregate].peak, static_cast<int64_t>(20 * kMiB));
  a.reset_accumulated_stats(0);
  st = a.get_stats(0);
  EXPECT_EQ(st.allocated_bytes[kAggregate].allocated, 0);
  EXPECT_EQ(st.allocated_bytes[kAggregate].freed, 0);
  EXPECT_EQ(st.allocated_bytes[kAggregate].current, static_cast<int64_t>(4 * kMiB));
  EXPECT_EQ(st.num_device_alloc, 0);
  a.free(p);
  st = a.get_stats(0);
  EXPECT_EQ(st.allocated_bytes[kAggregate].freed, static_cast<int64_t>(4 * kMiB));
  EXPECT_EQ(st.max_split_size, -1);  // unlimited, as torch reports it
  a.empty_cache();
}

TEST(CachingAllocator, CachingDisabled) {
  AllocConfig cfg;
  cfg.caching_enabled = false;
  CachingAllocator a{cfg};
  npu_sim::Stream s = new_stream(0);
  void* p = a.allocate(0, 1000, s);
  void* q = a.allocate(0, 5 * kMiB, s);
  DeviceStats st = a.get_stats(0);
  EXPECT_EQ(st.num_device_alloc, 2);
  EXPECT_EQ(st.reserved_bytes[kAggregate].current, static_cast<int64_t>(1024 + 5 * kMiB));
  EXPECT_EQ(st.allocated_bytes[kAggregate].current, static_cast<int64_t>(1024 + 5 * kMiB));
  EXPECT_EQ(st.segment[kSmallPool].current, 1);
  EXPECT_EQ(st.segment[kLargePool].current, 1);
  npu_sim::Stream other = new_stream(0);
  a.record_stream(p, other);  // harmless: frees synchronize the device
  a.free(p);
  a.free(q);
  st = a.get_stats(0);
  EXPECT_EQ(st.num_device_free, 2);
  EXPECT_EQ(st.reserved_bytes[kAggregate].current, 0);
  EXPECT_EQ(st.allocation[kAggregate].current, 0);
  EXPECT_EQ(st.allocation[kAggregate].allocated, 2);
  EXPECT_THROW(a.allocate(0, capacity(0) + kMiB, s), OutOfMemoryError);
  EXPECT_EQ(a.get_stats(0).num_ooms, 1);
  npu_sim::stream_destroy(other);
  npu_sim::stream_destroy(s);
}

TEST(CachingAllocator, GarbageCollectionThreshold) {
  AllocConfig cfg;
  cfg.garbage_collection_threshold = 0.5;
  CachingAllocator a{cfg};
  const std::size_t cap = capacity(0);
  a.set_memory_fraction(0.25, 0);  // allowed = cap/4, gc above cap/8
  npu_sim::Stream s1 = new_stream(0), s2 = new_stream(0), s3 = new_stream(0);
  void* x = a.allocate(0, cap / 9, s1);
  a.free(x);
  void* y = a.allocate(0, cap / 20, s2);  // reserved cap/9 < cap/8: no collection
  a.free(y);
  EXPECT_EQ(a.get_stats(0).num_device_free, 0);
  void* z = a.allocate(0, cap / 100, s3);  // reserved > cap/8: oldest (x) goes first, then enough
  DeviceStats st = a.get_stats(0);
  EXPECT_EQ(st.num_device_free, 1);
  EXPECT_EQ(st.segment[kAggregate].current, 2);
  a.free(z);
  a.empty_cache();
  npu_sim::stream_destroy(s1);
  npu_sim::stream_destroy(s2);
  npu_sim::stream_destroy(s3);
}
