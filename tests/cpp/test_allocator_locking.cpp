// Tests of the allocator's lock rules: no wait on a stream or event under the device mutex, while stream
// workers free blocks (an op's captures are released on the worker before the op counts as complete).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "allocator/caching_allocator.h"
#include "npu_sim/runtime.h"
#include "test_allocator_util.h"

using namespace npu_alloc;
using namespace npu_alloc_test;

namespace {
// A deadlocked scenario is reported after this long (the hang tests take well under a second).
constexpr std::chrono::seconds kHangLimit{10};

// Runs `body` on its own thread and waits at most `limit` for it. A deadlock cannot be undone (the stuck
// threads hold the allocator and a stream), so on a timeout the test reports the failure and the process
// exits at once instead of hanging ctest until its own timeout.
void run_or_die(const char* what, std::chrono::seconds limit, std::function<void()> body) {
  auto result = std::make_shared<std::promise<void>>();
  std::future<void> finished = result->get_future();
  std::thread runner([body = std::move(body), result] {
    try {
      body();
      result->set_value();
    } catch (...) {
      result->set_exception(std::current_exception());
    }
  });
  if (finished.wait_for(limit) != std::future_status::ready) {
    ADD_FAILURE() << what << ": not finished after " << limit.count()
                  << " s: deadlock (the allocator waited on a stream while holding its mutex?)";
    std::fprintf(stderr, "%s: deadlock detected, exiting\n", what);
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(1);
  }
  runner.join();
  finished.get();  // rethrows the body's exception
}

// Frees its block through the allocator when destroyed: a tensor that an op captured.
struct BlockHolder {
  BlockHolder(CachingAllocator* a, void* p) : allocator(a), ptr(p) {}
  BlockHolder(const BlockHolder&) = delete;
  BlockHolder& operator=(const BlockHolder&) = delete;
  ~BlockHolder() { allocator->free(ptr); }
  CachingAllocator* allocator;
  void* ptr;
};

// Gives the only reference to `ptr` to a host function on `stream`, then runs `blocking_call` on this
// thread. The function returns only ~200 ms after this thread is about to enter `blocking_call`, so the
// call is inside its wait (for the stream, or for an event recorded after the function) when the worker
// drops the function and with it the block: the free needs the device mutex. Before the fix the call
// waited with the mutex held and the two threads waited on each other.
void worker_frees_during(CachingAllocator& a, npu_sim::Stream stream, void* ptr,
                         const std::function<void()>& blocking_call) {
  auto go = std::make_shared<std::atomic<bool>>(false);
  auto holder = std::make_shared<BlockHolder>(&a, ptr);
  ASSERT_EQ(npu_sim::launch_host_func(stream,
                                      [holder, go] {
                                        while (!go->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                                        std::this_thread::sleep_for(std::chrono::milliseconds(200));
                                      }),
            npu_sim::Status::kSuccess);
  holder.reset();  // the host function holds the last reference now
  go->store(true);
  blocking_call();
}

// Everything freed and returned once the streams are idle.
void expect_all_returned(CachingAllocator& a, int device = 0) {
  DeviceStats st = a.get_stats(device);
  EXPECT_EQ(st.allocation[kAggregate].current, 0);
  EXPECT_EQ(st.allocated_bytes[kAggregate].current, 0);
  EXPECT_EQ(st.requested_bytes[kAggregate].current, 0);
  a.empty_cache();
  st = a.get_stats(device);
  EXPECT_EQ(st.active[kAggregate].current, 0);
  EXPECT_EQ(st.reserved_bytes[kAggregate].current, 0);
  EXPECT_EQ(st.segment[kAggregate].current, 0);
  EXPECT_EQ(st.inactive_split[kAggregate].current, 0);
  EXPECT_EQ(st.num_device_alloc, st.num_device_free);
  EXPECT_TRUE(a.snapshot().empty());
}
}  // namespace

// empty_cache frees a cached segment (free_device waits for the device's streams to go idle) while a
// stream worker frees the block its op held.
TEST(CachingAllocatorLocking, EmptyCacheWhileWorkerFreesLastReference) {
  run_or_die("EmptyCacheWhileWorkerFreesLastReference", kHangLimit, [] {
    CachingAllocator a{AllocConfig{}};
    npu_sim::Stream side = new_stream(0);
    void* cached = a.allocate(0, 5 * kMiB, nullptr);  // its own large segment, cached once freed
    a.free(cached);
    void* held = a.allocate(0, 4096, side);
    worker_frees_during(a, side, held, [&] { a.empty_cache(); });
    DeviceStats st = a.get_stats(0);
    // Both segments: the large pool's release waited until the worker had freed `held`, and the small
    // pool, released after it, then held that block's segment whole and cached.
    EXPECT_EQ(st.num_device_free, 2);
    EXPECT_EQ(st.allocation[kAggregate].current, 0);
    ASSERT_EQ(npu_sim::stream_synchronize(side), npu_sim::Status::kSuccess);
    expect_all_returned(a);
    npu_sim::stream_destroy(side);
  });
}

// empty_cache first synchronizes record_stream events; the event comes after the op that frees.
TEST(CachingAllocatorLocking, EmptyCacheEventSyncWhileWorkerFreesLastReference) {
  run_or_die("EmptyCacheEventSyncWhileWorkerFreesLastReference", kHangLimit, [] {
    CachingAllocator a{AllocConfig{}};
    npu_sim::Stream side = new_stream(0);
    void* held = a.allocate(0, 4096, side);
    void* used_on_side = a.allocate(0, 8192, nullptr);
    worker_frees_during(a, side, held, [&] {
      a.record_stream(used_on_side, side);
      a.free(used_on_side);  // an event on `side` after the host function defers its reuse
      EXPECT_EQ(a.get_stats(0).active[kAggregate].current, 2);
      a.empty_cache();
    });
    DeviceStats st = a.get_stats(0);
    EXPECT_EQ(st.num_sync_all_streams, 1);
    EXPECT_EQ(st.active[kAggregate].current, 0);  // the event passed, and the worker freed `held`
    expect_all_returned(a);
    npu_sim::stream_destroy(side);
  });
}

namespace {
// Caches one segment of `cached_bytes` on another stream, then asks for 5 MiB on a third stream with the
// next device malloc failing, while a stream worker frees a block: the OOM retry runs its release steps
// (which wait with the mutex released) concurrently with the worker. Returns the stats after.
DeviceStats oom_retry_while_worker_frees(std::size_t cached_bytes) {
  DeviceStats st{};
  run_or_die("oom_retry_while_worker_frees", kHangLimit, [&] {
    CachingAllocator a{AllocConfig{}};
    npu_sim::Stream side = new_stream(0), other = new_stream(0), requester = new_stream(0);
    a.free(a.allocate(0, cached_bytes, other));
    void* held = a.allocate(0, 4096, side);
    void* got = nullptr;
    worker_frees_during(a, side, held, [&] {
      npu_sim::inject_malloc_failures(0, 1);
      got = a.allocate(0, 5 * kMiB, requester);
    });
    ASSERT_NE(got, nullptr);
    st = a.get_stats(0);
    a.free(got);
    ASSERT_EQ(npu_sim::stream_synchronize(side), npu_sim::Status::kSuccess);
    expect_all_returned(a);
    for (npu_sim::Stream s : {side, other, requester}) npu_sim::stream_destroy(s);
  });
  return st;
}
}  // namespace

// OOM retry, first step: the device malloc fails and one cached segment of the right size (the 20 MiB
// segment of a 5 MiB request) is released.
TEST(CachingAllocatorLocking, OomRetryReleasingOneSegmentWhileWorkerFrees) {
  const DeviceStats st = oom_retry_while_worker_frees(5 * kMiB);
  EXPECT_EQ(st.num_device_free, 1);
  EXPECT_EQ(st.num_alloc_retries, 0);  // no full flush was needed
  EXPECT_EQ(st.num_ooms, 0);
}

// OOM retry, second step: no single cached segment fits (a 2 MiB small-pool segment), so every cached
// block is released.
TEST(CachingAllocatorLocking, OomRetryReleasingAllWhileWorkerFrees) {
  const DeviceStats st = oom_retry_while_worker_frees(4096);
  EXPECT_EQ(st.num_alloc_retries, 1);
  EXPECT_EQ(st.num_sync_all_streams, 1);
  EXPECT_GE(st.num_device_free, 1);
  EXPECT_EQ(st.num_ooms, 0);
}

// garbage_collection_threshold releases the oldest cached segments before a device malloc.
TEST(CachingAllocatorLocking, GarbageCollectionWhileWorkerFrees) {
  run_or_die("GarbageCollectionWhileWorkerFrees", kHangLimit, [] {
    AllocConfig cfg;
    cfg.garbage_collection_threshold = 0.5;
    CachingAllocator a{cfg};
    const std::size_t cap = capacity(0);
    a.set_memory_fraction(0.25, 0);  // allowed = cap/4, collection above cap/8
    npu_sim::Stream side = new_stream(0), s1 = new_stream(0), s2 = new_stream(0), s3 = new_stream(0);
    void* held = a.allocate(0, 4096, side);  // first: its small segment must not start a collection
    void* x = a.allocate(0, cap / 9, s1);
    a.free(x);
    void* y = a.allocate(0, cap / 20, s2);  // reserved ~cap/9 < cap/8: no collection yet
    a.free(y);
    EXPECT_EQ(a.get_stats(0).num_device_free, 0);
    void* got = nullptr;
    worker_frees_during(a, side, held, [&] { got = a.allocate(0, cap / 100, s3); });
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(a.get_stats(0).num_device_free, 1);  // x, the oldest
    a.free(got);
    ASSERT_EQ(npu_sim::stream_synchronize(side), npu_sim::Status::kSuccess);
    expect_all_returned(a);
    for (npu_sim::Stream s : {side, s1, s2, s3}) npu_sim::stream_destroy(s);
  });
}

// Several threads allocate, free, record_stream and hand blocks to host functions (freed by the stream
// workers) across streams and two devices, while OOM retries are injected and another thread loops
// empty_cache. No block may be handed out twice, nothing may deadlock, and the stats must balance.
TEST(CachingAllocatorLocking, ConcurrentEmptyCacheWithWorkerFreesStress) {
  run_or_die("ConcurrentEmptyCacheWithWorkerFreesStress", std::chrono::seconds(60), [] {
    CachingAllocator a{AllocConfig{}};
    constexpr int kDevices = 2, kStreamsPerDevice = 3, kThreads = 4;
    std::vector<std::vector<npu_sim::Stream>> streams(kDevices);
    for (int d = 0; d < kDevices; ++d) {
      for (int i = 0; i < kStreamsPerDevice; ++i) streams[d].push_back(new_stream(d));
    }

    // Live allocations by address: an overlap means a block was handed out twice.
    std::mutex live_mu;
    std::map<uintptr_t, std::size_t> live;
    std::atomic<long> overlaps{0};
    auto claim = [&](void* p, std::size_t bytes) {
      const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
      std::lock_guard<std::mutex> lk(live_mu);
      auto next = live.lower_bound(lo);
      if (next != live.end() && next->first < lo + bytes) overlaps++;
      if (next != live.begin() && std::prev(next)->first + std::prev(next)->second > lo) overlaps++;
      live.emplace(lo, bytes);
    };
    auto unclaim = [&](void* p) {
      std::lock_guard<std::mutex> lk(live_mu);
      live.erase(reinterpret_cast<uintptr_t>(p));
    };
    struct ClaimedHolder {  // a BlockHolder that also drops the claim first
      ClaimedHolder(CachingAllocator* alloc, void* ptr, std::function<void(void*)> un)
          : a(alloc), p(ptr), unclaim(std::move(un)) {}
      ClaimedHolder(const ClaimedHolder&) = delete;
      ClaimedHolder& operator=(const ClaimedHolder&) = delete;
      ~ClaimedHolder() {
        unclaim(p);
        a->free(p);
      }
      CachingAllocator* a;
      void* p;
      std::function<void(void*)> unclaim;
    };

    std::atomic<bool> stop{false};
    std::atomic<long> ops{0}, worker_frees{0}, empties{0};
    auto worker = [&](unsigned seed) {
      std::mt19937_64 rng(seed);
      struct Live {
        void* p;
        int dev;
      };
      std::vector<Live> mine;
      while (!stop.load()) {
        const int dev = static_cast<int>(rng() % kDevices);
        npu_sim::Stream s = streams[dev][rng() % kStreamsPerDevice];
        if (mine.size() < 16 && (mine.empty() || rng() % 3 != 0)) {
          const std::size_t bytes = random_request_bytes(rng);
          if (rng() % 50 == 0) npu_sim::inject_malloc_failures(dev, 1);  // OOM retry path
          void* p = nullptr;
          try {
            p = a.allocate(dev, bytes, s);
          } catch (const OutOfMemoryError&) {
            continue;
          }
          ASSERT_NE(p, nullptr);
          claim(p, bytes);
          if (rng() % 4 == 0) {
            npu_sim::Stream other = streams[dev][rng() % kStreamsPerDevice];
            if (rng() % 2 == 0) {
              npu_sim::launch_host_func(other, [] { std::this_thread::sleep_for(std::chrono::microseconds(200)); });
            }
            a.record_stream(p, other);
          }
          if (rng() % 4 == 0) {  // an op takes the last reference; its stream worker frees the block
            auto h = std::make_shared<ClaimedHolder>(&a, p, unclaim);
            npu_sim::Stream op_stream = streams[dev][rng() % kStreamsPerDevice];
            const auto us = std::chrono::microseconds(rng() % 500);
            ASSERT_EQ(npu_sim::launch_host_func(op_stream,
                                                [h, us, &worker_frees] {
                                                  std::this_thread::sleep_for(us);
                                                  worker_frees++;
                                                }),
                      npu_sim::Status::kSuccess);
          } else {
            mine.push_back({p, dev});
          }
        } else {
          const std::size_t i = rng() % mine.size();
          unclaim(mine[i].p);
          a.free(mine[i].p);
          mine[i] = mine.back();
          mine.pop_back();
        }
        if (rng() % 100 == 0) {
          (void)a.get_stats(dev);
          (void)a.snapshot();
        }
        ops++;
      }
      for (const Live& l : mine) {
        unclaim(l.p);
        a.free(l.p);
      }
    };
    std::thread emptier([&] {
      while (!stop.load()) {
        a.empty_cache();
        empties++;
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    });
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, 4321u + t);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    stop.store(true);
    for (auto& t : threads) t.join();
    emptier.join();
    for (auto& per_dev : streams) {
      for (npu_sim::Stream s : per_dev) ASSERT_EQ(npu_sim::stream_synchronize(s), npu_sim::Status::kSuccess);
    }
    EXPECT_EQ(overlaps.load(), 0);
    EXPECT_GT(ops.load(), 100);
    EXPECT_GT(worker_frees.load(), 0);
    EXPECT_GT(empties.load(), 5);
    EXPECT_TRUE(live.empty());
    for (int d = 0; d < kDevices; ++d) npu_sim::inject_malloc_failures(d, 0);  // unused injections
    for (int d = 0; d < kDevices; ++d) {
      SCOPED_TRACE("device " + std::to_string(d));
      DeviceStats st = a.get_stats(d);
      EXPECT_EQ(st.allocation[kAggregate].allocated, st.allocation[kAggregate].freed);
      expect_all_returned(a, d);
    }
    for (auto& per_dev : streams) {
      for (npu_sim::Stream s : per_dev) npu_sim::stream_destroy(s);
    }
  });
}
