// Tests of record_stream deferral (events on other streams) and of concurrent use from many threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "allocator/caching_allocator.h"
#include "npu_sim/runtime.h"
#include "test_allocator_util.h"

using namespace npu_alloc;
using namespace npu_alloc_test;

namespace {
// Makes `stream` busy until release() is called.
struct Latch {
  std::atomic<bool> open{false};
  void block(npu_sim::Stream stream) {
    ASSERT_EQ(npu_sim::launch_host_func(stream,
                                        [this] {
                                          while (!open.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                                        }),
              npu_sim::Status::kSuccess);
  }
  void release() { open.store(true); }
};
}  // namespace

TEST(CachingAllocatorStreams, RecordStreamDefersReuse) {
  CachingAllocator a{AllocConfig{}};
  npu_sim::Stream sa = new_stream(0), sb = new_stream(0);
  Latch latch;
  latch.block(sb);

  void* p = a.allocate(0, 1000, sa);
  a.record_stream(p, sb);
  a.record_stream(p, sa);  // own stream: no-op
  a.free(p);
  DeviceStats st = a.get_stats(0);
  EXPECT_EQ(st.allocation[kAggregate].current, 0);
  EXPECT_EQ(st.allocated_bytes[kAggregate].current, 0);
  EXPECT_EQ(st.active[kAggregate].current, 1);  // waiting for sb's event
  EXPECT_EQ(st.active_bytes[kAggregate].current, 1024);

  void* q = a.allocate(0, 1000, sa);
  EXPECT_NE(q, p);
  a.free(q);
  std::vector<SegmentInfo> snap = a.snapshot();
  ASSERT_EQ(snap.size(), 1u);
  ASSERT_GE(snap[0].blocks.size(), 2u);
  EXPECT_TRUE(snap[0].blocks[0].active);
  EXPECT_FALSE(snap[0].blocks[0].allocated);

  latch.release();
  ASSERT_EQ(npu_sim::stream_synchronize(sb), npu_sim::Status::kSuccess);
  void* r = a.allocate(0, 1000, sa);  // pending events polled first: p's block is free again
  EXPECT_EQ(r, p);
  st = a.get_stats(0);
  EXPECT_EQ(st.active[kAggregate].current, 1);
  EXPECT_EQ(st.segment[kAggregate].current, 1);
  a.free(r);
  a.empty_cache();
  EXPECT_EQ(a.get_stats(0).reserved_bytes[kAggregate].current, 0);
  npu_sim::stream_destroy(sa);
  npu_sim::stream_destroy(sb);
}

TEST(CachingAllocatorStreams, EmptyCacheWaitsForPendingEvents) {
  CachingAllocator a{AllocConfig{}};
  npu_sim::Stream sa = new_stream(0), sb = new_stream(0);
  std::atomic<bool> done{false};
  ASSERT_EQ(npu_sim::launch_host_func(sb,
                                      [&] {
                                        std::this_thread::sleep_for(std::chrono::milliseconds(50));
                                        done.store(true);
                                      }),
            npu_sim::Status::kSuccess);
  void* p = a.allocate(0, 5 * kMiB, sa);
  a.record_stream(p, sb);
  a.free(p);
  a.empty_cache();  // synchronizes the event, then releases the segment
  EXPECT_TRUE(done.load());
  DeviceStats st = a.get_stats(0);
  EXPECT_EQ(st.reserved_bytes[kAggregate].current, 0);
  EXPECT_EQ(st.active[kAggregate].current, 0);
  npu_sim::stream_destroy(sa);
  npu_sim::stream_destroy(sb);
}

TEST(CachingAllocatorStreams, RecordStreamOnDestroyedStream) {
  CachingAllocator a{AllocConfig{}};
  npu_sim::Stream sa = new_stream(0), sb = new_stream(0);
  void* p = a.allocate(0, 4096, sa);
  a.record_stream(p, sb);
  npu_sim::stream_destroy(sb);
  a.free(p);  // nothing left to wait for: the block is immediately reusable
  EXPECT_EQ(a.get_stats(0).active[kAggregate].current, 0);
  EXPECT_EQ(a.allocate(0, 4096, sa), p);
  a.free(p);
  int x = 0;
  EXPECT_THROW(a.record_stream(&x, sa), AllocatorError);
  EXPECT_NO_THROW(a.record_stream(nullptr, sa));
  a.empty_cache();
  npu_sim::stream_destroy(sa);
}

TEST(CachingAllocatorStreams, ConcurrentThreadsStreamsDevices) {
  CachingAllocator a{AllocConfig{}};
  constexpr int kDevices = 2, kStreamsPerDevice = 3, kThreads = 6;
  std::vector<std::vector<npu_sim::Stream>> streams(kDevices);
  for (int d = 0; d < kDevices; ++d) {
    for (int i = 0; i < kStreamsPerDevice; ++i) streams[d].push_back(new_stream(d));
  }
  std::atomic<bool> stop{false};
  std::atomic<long> ops{0};
  auto worker = [&](unsigned seed) {
    std::mt19937_64 rng(seed);
    struct Live { void* p; int dev; };
    std::vector<Live> live;
    while (!stop.load()) {
      const int dev = static_cast<int>(rng() % kDevices);
      npu_sim::Stream s = streams[dev][rng() % kStreamsPerDevice];
      if (live.size() < 24 && (live.empty() || rng() % 3 != 0)) {
        const std::size_t bytes = random_request_bytes(rng);
        void* p = nullptr;
        try {
          p = a.allocate(dev, bytes, s);
        } catch (const OutOfMemoryError&) {
          continue;  // only on a small simulated device (NPU_SIM_HBM_GB); the cache was flushed
        }
        ASSERT_NE(p, nullptr);
        if (rng() % 4 == 0) {
          npu_sim::Stream other = streams[dev][rng() % kStreamsPerDevice];
          if (rng() % 2 == 0) {
            npu_sim::launch_host_func(other, [] { std::this_thread::sleep_for(std::chrono::microseconds(200)); });
          }
          a.record_stream(p, other);
        }
        live.push_back({p, dev});
      } else {
        const std::size_t i = rng() % live.size();
        a.free(live[i].p);
        live[i] = live.back();
        live.pop_back();
      }
      if (rng() % 500 == 0) a.empty_cache();
      if (rng() % 200 == 0) {
        (void)a.get_stats(dev);
        (void)a.snapshot();
      }
      ops.fetch_add(1);
    }
    for (const Live& l : live) a.free(l.p);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, 1234u + t);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  stop.store(true);
  for (auto& t : threads) t.join();
  EXPECT_GT(ops.load(), 100);

  for (int d = 0; d < kDevices; ++d) {
    DeviceStats st = a.get_stats(d);
    EXPECT_EQ(st.allocation[kAggregate].current, 0) << d;
    EXPECT_EQ(st.allocated_bytes[kAggregate].current, 0) << d;
    EXPECT_EQ(st.requested_bytes[kAggregate].current, 0) << d;
    EXPECT_EQ(st.allocation[kAggregate].allocated, st.allocation[kAggregate].freed) << d;
  }
  a.empty_cache();  // drains pending record_stream events too
  for (int d = 0; d < kDevices; ++d) {
    DeviceStats st = a.get_stats(d);
    EXPECT_EQ(st.active[kAggregate].current, 0) << d;
    EXPECT_EQ(st.reserved_bytes[kAggregate].current, 0) << d;
    EXPECT_EQ(st.segment[kAggregate].current, 0) << d;
    EXPECT_EQ(st.inactive_split[kAggregate].current, 0) << d;
    EXPECT_EQ(st.num_device_alloc, st.num_device_free) << d;
  }
  EXPECT_TRUE(a.snapshot().empty());
  for (auto& per_dev : streams) {
    for (npu_sim::Stream s : per_dev) npu_sim::stream_destroy(s);
  }
}
