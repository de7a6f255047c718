// backend_sim: streams (order, overlap, lifetime), events (query/sync/wait/elapsed), kernel launch over
// a grid, async error propagation, device_synchronize, and concurrent multi-stream stress tests (events
// complete once what they stand for is done). Sticky device errors in detail: test_backend_sim_errors.cpp.
#include <algorithm>
#include <cstring>
#include <atomic>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "test_backend_sim_util.h"

using namespace npu_sim;
using npu_sim_test::contains;
using npu_sim_test::Gate;
using namespace std::chrono_literals;

TEST(BackendSimStreams, InOrder) {
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  std::vector<int> order;  // touched only by the stream worker until synchronize
  for (int i = 0; i < 200; ++i) {
    if (i % 2) {
      ASSERT_OK(launch_host_func(s, [&order, i] { order.push_back(i); }));
    } else {
      ASSERT_OK(launch_kernel(s, "push", 1, [&order, i](const BlockContext&) { order.push_back(i); }));
    }
  }
  ASSERT_OK(stream_synchronize(s));
  ASSERT_EQ(order.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(order[i], i);
  int dev = -1;
  ASSERT_OK(stream_get_device(s, &dev));
  EXPECT_EQ(dev, 0);
  ASSERT_OK(stream_destroy(s));
}

TEST(BackendSimStreams, HandlesAreValidated) {
  Stream s = nullptr;
  ASSERT_OK(stream_create(1, &s));
  ASSERT_OK(stream_destroy(s));
  EXPECT_EQ(stream_synchronize(s), Status::kInvalidHandle);
  EXPECT_TRUE(contains(last_error_message(), "stream_synchronize: stream")) << last_error_message();
  EXPECT_EQ(launch_kernel(s, "k", 1, [](const BlockContext&) {}), Status::kInvalidHandle);
  EXPECT_EQ(stream_destroy(s), Status::kInvalidHandle);
  Stream def = nullptr;
  ASSERT_OK(get_default_stream(1, &def));
  EXPECT_EQ(stream_destroy(def), Status::kInvalidValue);
  EXPECT_TRUE(contains(last_error_message(), "default stream"));
  EXPECT_EQ(stream_destroy(nullptr), Status::kInvalidValue);
  EXPECT_EQ(stream_create(8, &s), Status::kInvalidDevice);
  EXPECT_EQ(stream_create(0, nullptr), Status::kInvalidValue);
  EXPECT_EQ(launch_kernel(nullptr, nullptr, 1, [](const BlockContext&) {}), Status::kInvalidValue);
  EXPECT_EQ(launch_kernel(nullptr, "k", 0, [](const BlockContext&) {}), Status::kInvalidValue);
  EXPECT_TRUE(contains(last_error_message(), "block_dim is 0"));
  EXPECT_EQ(launch_kernel(nullptr, "k", 1, KernelFn()), Status::kInvalidValue);
  EXPECT_EQ(launch_host_func(nullptr, std::function<void()>()), Status::kInvalidValue);
  Event e = nullptr;
  ASSERT_OK(event_create(&e));
  ASSERT_OK(event_destroy(e));
  EXPECT_EQ(event_query(e), Status::kInvalidHandle);
  EXPECT_EQ(event_record(e, nullptr), Status::kInvalidHandle);
  EXPECT_EQ(event_create(&e, 0x80), Status::kInvalidValue);
  EXPECT_EQ(event_create(nullptr), Status::kInvalidValue);
}

TEST(BackendSimStreams, DestroyWaitsForPendingWork) {
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  std::atomic<int> done{0};
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK(launch_host_func(s, [&] {
      std::this_thread::sleep_for(5ms);
      done.fetch_add(1);
    }));
  }
  ASSERT_OK(stream_destroy(s));
  EXPECT_EQ(done.load(), 5);
}

TEST(BackendSimStreams, TwoStreamsOverlap) {
  if (launch_blocking()) GTEST_SKIP() << "streams are serialised under ASCEND_LAUNCH_BLOCKING";
  Stream a = nullptr, b = nullptr;
  ASSERT_OK(stream_create(0, &a));
  ASSERT_OK(stream_create(0, &b));
  Gate gate;
  // A's kernel can only finish if B's kernel runs while A's is still running.
  ASSERT_OK(launch_kernel(a, "waiter", 1, [&](const BlockContext&) {
    if (!gate.wait()) throw KernelError("latch was never released");
  }));
  ASSERT_OK(launch_kernel(b, "releaser", 1, [&](const BlockContext&) { gate.open(); }));
  ASSERT_OK(stream_synchronize(a));
  ASSERT_OK(stream_synchronize(b));
  ASSERT_OK(stream_destroy(a));
  ASSERT_OK(stream_destroy(b));
}

TEST(BackendSimStreams, MultiBlockLaunchesOverlapWithoutDeadlock) {
  if (launch_blocking()) GTEST_SKIP();
  // Every block of A's kernel waits for B's kernel; the pool may be fully occupied by A's blocks, but B's
  // worker still runs B's blocks itself.
  Stream a = nullptr, b = nullptr;
  ASSERT_OK(stream_create(0, &a));
  ASSERT_OK(stream_create(0, &b));
  Gate gate;
  ASSERT_OK(launch_kernel(a, "waiters", 64, [&](const BlockContext&) {
    if (!gate.wait()) throw KernelError("latch was never released");
  }));
  std::this_thread::sleep_for(10ms);
  std::atomic<int> ran{0};
  ASSERT_OK(launch_kernel(b, "releaser", 16, [&](const BlockContext&) {
    if (ran.fetch_add(1) == 15) gate.open();
  }));
  ASSERT_OK(stream_synchronize(b));
  ASSERT_OK(stream_synchronize(a));
  ASSERT_OK(stream_destroy(a));
  ASSERT_OK(stream_destroy(b));
}

TEST(BackendSimStreams, StreamWaitEventOrdersAcrossStreams) {
  Stream a = nullptr, b = nullptr;
  ASSERT_OK(stream_create(2, &a));
  ASSERT_OK(stream_create(2, &b));
  Event e = nullptr;
  ASSERT_OK(event_create(&e));
  std::atomic<int> value{0};
  std::atomic<int> seen{-1};
  ASSERT_OK(launch_host_func(a, [&] {
    std::this_thread::sleep_for(30ms);
    value.store(1);
  }));
  ASSERT_OK(event_record(e, a));
  ASSERT_OK(stream_wait_event(b, e));
  ASSERT_OK(launch_kernel(b, "reader", 1, [&](const BlockContext&) { seen.store(value.load()); }));
  ASSERT_OK(stream_synchronize(b));
  EXPECT_EQ(seen.load(), 1);
  // Work recorded after the event does not hold the waiter back.
  Gate gate;
  ASSERT_OK(event_record(e, a));
  ASSERT_OK(launch_host_func(a, [&] { gate.wait(); }));
  ASSERT_OK(stream_wait_event(b, e));
  ASSERT_OK(launch_host_func(b, [] {}));
  ASSERT_OK(stream_synchronize(b));
  gate.open();
  ASSERT_OK(stream_synchronize(a));
  // A never-recorded event is complete; waiting on it is a no-op.
  Event fresh = nullptr;
  ASSERT_OK(event_create(&fresh));
  EXPECT_OK(event_query(fresh));
  EXPECT_OK(event_synchronize(fresh));
  EXPECT_OK(stream_wait_event(b, fresh));
  ASSERT_OK(event_destroy(fresh));
  ASSERT_OK(event_destroy(e));
  ASSERT_OK(stream_destroy(a));
  ASSERT_OK(stream_destroy(b));
}

TEST(BackendSimStreams, EventQuerySyncElapsed) {
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  Event start = nullptr, end = nullptr, plain = nullptr;
  ASSERT_OK(event_create(&start, kEventEnableTiming));
  ASSERT_OK(event_create(&end, kEventEnableTiming));
  ASSERT_OK(event_create(&plain));
  float ms = -1;
  EXPECT_EQ(event_elapsed_time(&ms, start, end), Status::kInvalidValue);  // never recorded
  EXPECT_TRUE(contains(last_error_message(), "never recorded"));
  Gate gate;
  ASSERT_OK(launch_host_func(s, [&] { gate.wait(); }));
  ASSERT_OK(event_record(start, s));
  ASSERT_OK(launch_host_func(s, [] { std::this_thread::sleep_for(20ms); }));
  ASSERT_OK(event_record(end, s));
  ASSERT_OK(event_record(plain, s));
  EXPECT_EQ(event_query(end), Status::kNotReady);
  EXPECT_EQ(event_elapsed_time(&ms, start, end), Status::kNotReady);
  EXPECT_TRUE(contains(last_error_message(), "not completed"));
  gate.open();
  ASSERT_OK(event_synchronize(end));
  EXPECT_OK(event_query(end));
  EXPECT_OK(event_query(start));
  ASSERT_OK(event_elapsed_time(&ms, start, end));
  EXPECT_GE(ms, 19.0f);
  EXPECT_LT(ms, 5000.0f);
  ASSERT_OK(event_synchronize(plain));
  EXPECT_EQ(event_elapsed_time(&ms, start, plain), Status::kInvalidValue);
  EXPECT_TRUE(contains(last_error_message(), "kEventEnableTiming"));
  EXPECT_EQ(event_elapsed_time(nullptr, start, end), Status::kInvalidValue);
  // Re-recording moves the event to the new tail.
  Gate gate2;
  ASSERT_OK(launch_host_func(s, [&] { gate2.wait(); }));
  ASSERT_OK(event_record(end, s));
  EXPECT_EQ(event_query(end), Status::kNotReady);
  gate2.open();
  ASSERT_OK(event_synchronize(end));
  ASSERT_OK(event_destroy(start));
  ASSERT_OK(event_destroy(end));
  ASSERT_OK(event_destroy(plain));
  ASSERT_OK(stream_destroy(s));
}

TEST(BackendSimStreams, EventOutlivesItsStream) {
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  Event e = nullptr;
  ASSERT_OK(event_create(&e, kEventEnableTiming));
  ASSERT_OK(launch_host_func(s, [] { std::this_thread::sleep_for(5ms); }));
  ASSERT_OK(event_record(e, s));
  ASSERT_OK(stream_destroy(s));
  EXPECT_OK(event_query(e));
  EXPECT_OK(event_synchronize(e));
  ASSERT_OK(event_destroy(e));
}

TEST(BackendSimKernels, GridRunsEveryBlockOnceWithPerCoreUb) {
  DeviceProperties props{};
  ASSERT_OK(get_device_properties(0, &props));
  const std::uint32_t n = 5000;
  std::vector<std::atomic<int>> hits(n);
  std::mutex mu;
  std::map<int, void*> ub_of_core;  // guarded by mu
  bool ok = true;                   // guarded by mu
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  ASSERT_OK(launch_kernel(s, "grid", n, [&](const BlockContext& ctx) {
    hits[ctx.block_idx].fetch_add(1);
    // The UB is this core's scratch for the block's duration: write and check it all.
    auto* ub = static_cast<unsigned char*>(ctx.ub);
    std::memset(ub, static_cast<int>(ctx.block_idx & 0xff), ctx.ub_bytes);
    std::this_thread::yield();
    const bool intact = ub[0] == (ctx.block_idx & 0xff) && ub[ctx.ub_bytes - 1] == (ctx.block_idx & 0xff);
    std::lock_guard<std::mutex> lk(mu);
    ok = ok && intact && ctx.block_dim == n && ctx.ub_bytes == props.ub_bytes;
    auto it = ub_of_core.emplace(ctx.core_id, ctx.ub).first;
    ok = ok && it->second == ctx.ub;
  }));
  ASSERT_OK(stream_synchronize(s));
  for (std::uint32_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "block " << i;
  EXPECT_TRUE(ok);
  std::set<void*> distinct;
  for (const auto& kv : ub_of_core) distinct.insert(kv.second);
  EXPECT_EQ(distinct.size(), ub_of_core.size());  // one UB per core
  EXPECT_GE(ub_of_core.size(), 1u);
  ASSERT_OK(stream_destroy(s));
}

TEST(BackendSimKernels, ErrorSurfacesAtNextSyncThenStreamIsUsable) {
  if (launch_blocking()) GTEST_SKIP();
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  const Counters c0 = get_counters();
  std::atomic<int> after{0};
  ASSERT_OK(launch_kernel(s, "bad_kernel", 32, [](const BlockContext& ctx) {
    if (ctx.block_idx == 7) throw KernelError("index 99 out of bounds");
  }));
  ASSERT_OK(launch_kernel(s, "second_bad", 1, [](const BlockContext&) { throw std::runtime_error("later"); }));
  ASSERT_OK(launch_host_func(s, [&] { after.store(1); }));  // the stream keeps running after an error
  EXPECT_EQ(stream_synchronize(s), Status::kKernelError);
  const std::string first = "kernel 'bad_kernel' failed: index 99 out of bounds (sticky:";  // first error wins
  EXPECT_EQ(last_error_message().rfind(first, 0), 0u) << last_error_message();
  EXPECT_EQ(after.load(), 1);
  const Counters c1 = get_counters();
  EXPECT_GE(c1.kernels_failed - c0.kernels_failed, 2u);
  EXPECT_GE(c1.kernels_launched - c0.kernels_launched, 2u);
  EXPECT_EQ(stream_synchronize(s), Status::kKernelError);  // sticky: reported again
  EXPECT_EQ(last_error_message().rfind(first, 0), 0u) << last_error_message();
  ASSERT_OK(device_restart(0));  // acknowledged: the stream and device are usable again
  EXPECT_OK(stream_synchronize(s));
  std::atomic<int> ran{0};
  ASSERT_OK(launch_kernel(s, "good", 8, [&](const BlockContext&) { ran.fetch_add(1); }));
  ASSERT_OK(stream_synchronize(s));
  EXPECT_EQ(ran.load(), 8);

  // event_synchronize reports the stream's error too.
  Event e = nullptr;
  ASSERT_OK(event_create(&e));
  ASSERT_OK(launch_kernel(s, "ev_kernel", 1, [](const BlockContext&) { throw KernelError("nan"); }));
  ASSERT_OK(event_record(e, s));
  EXPECT_EQ(event_synchronize(e), Status::kKernelError);
  EXPECT_TRUE(contains(last_error_message(), "kernel 'ev_kernel' failed: nan"));
  // ... without consuming it: the stream's owner still sees it at the next stream synchronize.
  EXPECT_EQ(stream_synchronize(s), Status::kKernelError);
  EXPECT_TRUE(contains(last_error_message(), "kernel 'ev_kernel' failed: nan"));
  ASSERT_OK(device_restart(0));
  EXPECT_OK(stream_synchronize(s));
  ASSERT_OK(event_destroy(e));

  // A host function's exception is recorded the same way.
  ASSERT_OK(launch_host_func(s, [] { throw std::runtime_error("host oops"); }));
  EXPECT_EQ(stream_synchronize(s), Status::kKernelError);
  EXPECT_TRUE(contains(last_error_message(), "host function failed: host oops"));
  ASSERT_OK(device_restart(0));
  ASSERT_OK(stream_destroy(s));
}

TEST(BackendSimKernels, DeviceSynchronizeWaitsForAllStreamsAndReportsErrors) {
  if (launch_blocking()) GTEST_SKIP();
  std::vector<Stream> streams(3);
  std::atomic<int> done{0};
  for (auto& s : streams) {
    ASSERT_OK(stream_create(4, &s));
    ASSERT_OK(launch_host_func(s, [&] {
      std::this_thread::sleep_for(20ms);
      done.fetch_add(1);
    }));
  }
  ASSERT_OK(launch_kernel(nullptr, "on_default", 4, [&](const BlockContext&) {}));  // device 0: other device
  Stream def4 = nullptr;
  ASSERT_OK(get_default_stream(4, &def4));
  ASSERT_OK(launch_host_func(def4, [&] { done.fetch_add(1); }));
  ASSERT_OK(device_synchronize(4));
  EXPECT_EQ(done.load(), 4);
  ASSERT_OK(launch_kernel(streams[1], "dev_sync_bad", 2, [](const BlockContext&) { throw KernelError("x"); }));
  EXPECT_EQ(device_synchronize(4), Status::kKernelError);
  EXPECT_TRUE(contains(last_error_message(), "kernel 'dev_sync_bad' failed: x"));
  EXPECT_EQ(device_synchronize(4), Status::kKernelError);  // sticky until acknowledged
  EXPECT_OK(device_synchronize(0));                        // only device 4 failed
  ASSERT_OK(device_restart(4));
  EXPECT_OK(device_synchronize(4));
  for (auto s : streams) ASSERT_OK(stream_destroy(s));
  ASSERT_OK(device_synchronize(0));
}

TEST(BackendSimKernels, SelfWaitFromStreamFunctionIsRefused) {
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  Status inner = Status::kSuccess;
  std::string msg;
  ASSERT_OK(launch_host_func(s, [&] {
    inner = stream_synchronize(s);
    msg = last_error_message();
  }));
  ASSERT_OK(stream_synchronize(s));
  EXPECT_EQ(inner, Status::kInvalidValue);
  EXPECT_TRUE(contains(msg, "same stream")) << msg;
  ASSERT_OK(stream_destroy(s));
}

TEST(BackendSimStress, ManyThreadsManyStreams) {
  const int kThreads = 8;
  const int kIters = 400;
  std::vector<Stream> shared(4);
  for (int i = 0; i < 4; ++i) ASSERT_OK(stream_create(i % 2, &shared[i]));
  std::atomic<long> blocks{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto check = [&](Status s) {
        if (s != Status::kSuccess) failures.fetch_add(1);
      };
      check(set_device(t % 2));
      Stream own = nullptr;
      check(stream_create(t % 2, &own));
      Event ev = nullptr;
      check(event_create(&ev));
      void* d = nullptr;
      check(malloc_device(t % 2, &d, 1 << 16));
      std::vector<std::uint8_t> h(1 << 16, static_cast<std::uint8_t>(t));
      for (int i = 0; i < kIters && std::chrono::steady_clock::now() < deadline; ++i) {
        Stream other = shared[(t + i) % shared.size()];
        const std::uint32_t grid = 1 + (i * 7 + t) % 40;
        check(launch_kernel(other, "stress", grid, [&blocks](const BlockContext&) { blocks.fetch_add(1); }));
        check(event_record(ev, other));
        check(stream_wait_event(own, ev));
        check(memcpy_async(d, h.data(), h.size(), MemcpyKind::kHostToDevice, own));
        check(launch_kernel(own, "stress_own", grid, [&blocks](const BlockContext&) { blocks.fetch_add(1); }));
        if (i % 10 == 0) check(stream_synchronize(own));
        if (i % 15 == 0) check(launch_kernel(nullptr, "stress_default", 3, [&blocks](const BlockContext&) {
                                 blocks.fetch_add(1);
                               }));
      }
      std::vector<std::uint8_t> back(h.size());
      check(memcpy_async(back.data(), d, back.size(), MemcpyKind::kDeviceToHost, own));
      if (back != h) failures.fetch_add(1);
      check(stream_destroy(own));
      check(event_destroy(ev));
      check(free_device(d));
    });
  }
  for (auto& th : threads) th.join();
  for (auto s : shared) ASSERT_OK(stream_synchronize(s));
  ASSERT_OK(device_synchronize(0));
  ASSERT_OK(device_synchronize(1));
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(blocks.load(), 0);
  for (auto s : shared) ASSERT_OK(stream_destroy(s));
}

// The stream's op list (producers append under a lock the worker never takes; finished entries are reused
// or freed): several threads issue onto one stream, first in a burst held behind a gate (thousands of
// entries queued, then reused and trimmed), then interleaved with synchronizes and event queries. Each
// thread's ops must run in its order, exactly once, and release what they captured before they count
// as complete.
TEST(BackendSimStress, ConcurrentProducersOnOneStream) {
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  const int kThreads = 4;
  const int kBurst = 3000;
  const int kIters = 2000;
  Gate gate;
  ASSERT_OK(launch_host_func(s, [&gate] { gate.wait(); }));
  std::vector<std::vector<int>> seen(kThreads);  // written by the stream worker only
  auto token = std::make_shared<int>(0);
  std::atomic<int> failures{0};
  auto issue = [&](int t, int i) {
    Status st = (i % 3 == 0) ? launch_host_func(s, [&seen, t, i, token] { seen[t].push_back(i); })
                             : launch_kernel(s, "seq", 1, [&seen, t, i, token](const BlockContext&) {
                                 seen[t].push_back(i);
                               });
    if (st != Status::kSuccess) failures.fetch_add(1);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kBurst; ++i) issue(t, i);
    });
  }
  for (auto& th : threads) th.join();
  threads.clear();
  EXPECT_EQ(stream_query(s), Status::kNotReady);
  gate.open();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Event ev = nullptr;
      if (event_create(&ev) != Status::kSuccess) failures.fetch_add(1);
      for (int i = kBurst; i < kBurst + kIters; ++i) {
        issue(t, i);
        if (i % 97 == 0 && stream_synchronize(s) != Status::kSuccess) failures.fetch_add(1);
        if (i % 31 == 0) {
          if (event_record(ev, s) != Status::kSuccess) failures.fetch_add(1);
          if (i % 62 == 0 && event_synchronize(ev) != Status::kSuccess) failures.fetch_add(1);
        }
      }
      if (event_destroy(ev) != Status::kSuccess) failures.fetch_add(1);
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_OK(stream_synchronize(s));
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(token.use_count(), 1);  // every op released its capture before completing
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(seen[t].size(), static_cast<std::size_t>(kBurst + kIters)) << "thread " << t;
    for (int i = 0; i < kBurst + kIters; ++i) ASSERT_EQ(seen[t][i], i) << "thread " << t;
  }
  ASSERT_OK(stream_query(s));
  ASSERT_OK(stream_destroy(s));
}

// The AI-core pool (threads poll for a launch, then sleep; a launch wakes them only when one sleeps; the
// launching worker polls for the last block, then sleeps): streams on several threads launch multi-block
// kernels, some back to back (pool threads polling) and some after pauses longer than the poll (pool
// threads asleep). Every block of every launch runs exactly once, and a failing block fails its launch.
// Each thread has a device of its own, as a failure makes the whole device fail until it is restarted.
TEST(BackendSimStress, PoolRunsEveryBlockOnceWhetherPollingOrAsleep) {
  const int kThreads = 3;
  const int kLaunches = 300;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Stream s = nullptr;
      const int dev = t;
      if (stream_create(dev, &s) != Status::kSuccess) {
        failures.fetch_add(1);
        return;
      }
      for (int i = 0; i < kLaunches; ++i) {
        const std::uint32_t grid = 2 + (i * 5 + t) % 23;
        auto hits = std::make_shared<std::vector<std::atomic<int>>>(grid);
        const bool fails = i % 50 == 49;
        if (launch_kernel(s, "pool", grid, [hits, fails](const BlockContext& ctx) {
              (*hits)[ctx.block_idx].fetch_add(1);
              if (fails && ctx.block_idx == 1) throw KernelError("block 1 fails");
            }) != Status::kSuccess) {
          failures.fetch_add(1);
        }
        if (i % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));  // pool threads sleep
        const Status st = stream_synchronize(s);
        if (fails != (st != Status::kSuccess)) failures.fetch_add(1);
        if (fails && !contains(last_error_message(), "block 1 fails")) failures.fetch_add(1);
        if (fails && device_restart(dev) != Status::kSuccess) failures.fetch_add(1);
        for (std::uint32_t b = 0; b < grid; ++b) {
          // after a failure the remaining blocks are skipped, never run twice
          const int n = (*hits)[b].load();
          if (n > 1 || (!fails && n != 1)) failures.fetch_add(1);
        }
      }
      if (stream_destroy(s) != Status::kSuccess) failures.fetch_add(1);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// A caller stream and two "communication" streams hand a value back and forth with events, as the hccl
// backend does (caller -> comm before a collective, comm -> caller at Work.wait()), with the caller
// sometimes doing work of its own in between. Waits the runtime skips (the caller has only waits for the
// comm stream pending) must not reorder anything: the value is folded with non-commuting steps and
// compared with the program-order result, and TSan sees every access ordered.
TEST(BackendSimStress, EventPingPongBetweenStreamsKeepsProgramOrder) {
  Stream caller = nullptr, comm = nullptr, comm2 = nullptr;
  ASSERT_OK(stream_create(0, &caller));
  ASSERT_OK(stream_create(0, &comm));
  ASSERT_OK(stream_create(0, &comm2));
  Event ec = nullptr, em = nullptr, em2 = nullptr;
  ASSERT_OK(event_create(&ec));
  ASSERT_OK(event_create(&em));
  ASSERT_OK(event_create(&em2));
  std::uint64_t x = 1, want = 1;  // x is touched only by stream ops, ordered by the events alone
  unsigned rng = 12345;
  auto next = [&rng] { return (rng = rng * 1103515245u + 12345u) >> 16; };
  auto step = [](std::uint64_t v, int k) { return v * 3 + k; };  // steps with different k do not commute
  auto on = [&](Stream s, Stream dep_from, Event dep, Event done, int k, bool slow) {
    ASSERT_OK(event_record(dep, dep_from));
    ASSERT_OK(stream_wait_event(s, dep));
    ASSERT_OK(launch_host_func(s, [&x, k, slow, step] {
      if (slow) std::this_thread::sleep_for(50us);
      x = step(x, k);
    }));
    ASSERT_OK(event_record(done, s));
    ASSERT_OK(stream_wait_event(caller, done));
  };
  auto caller_work = [&](int k) {
    ASSERT_OK(launch_host_func(caller, [&x, k, step] { x = step(x, k); }));
    want = step(want, k);
  };
  auto collective = [&](Stream s, Event done, int k, bool slow) {
    on(s, caller, ec, done, k, slow);
    want = step(want, k);
  };
  for (int i = 0; i < 1500; ++i) {
    const int k = static_cast<int>(next() % 5) + 1;
    switch (next() % 5) {
      case 0: caller_work(k); break;
      case 1: collective(comm, em, k, next() % 16 == 0); break;
      case 2: collective(comm2, em2, k + 5, next() % 4 == 0); break;
      case 3:
        // Once the caller has caught up, back-to-back collectives on comm skip the second wait.
        ASSERT_OK(stream_synchronize(caller));
        collective(comm, em, k, true);
        collective(comm, em, k + 1, false);
        break;
      default:
        // The caller's trail holds only a wait for comm2 here: comm must still wait for it.
        caller_work(k);
        ASSERT_OK(stream_synchronize(caller));
        collective(comm2, em2, k + 5, true);
        collective(comm, em, k + 2, false);
    }
    if (i % 500 == 499) ASSERT_OK(stream_synchronize(caller));
  }
  ASSERT_OK(stream_synchronize(caller));
  EXPECT_EQ(x, want);
  for (Event e : {ec, em, em2}) ASSERT_OK(event_destroy(e));
  for (Stream s : {caller, comm, comm2}) ASSERT_OK(stream_destroy(s));
}

// An event counts as complete once everything it stands for is done, even while its stream's worker has
// not passed the marker (nothing but records and satisfied waits left before it): after a stream that
// waited for an event is synchronized, that event and every event recorded before it on its stream report
// complete. Rounds of work, records and cross waits over four streams. Each round also builds the shape
// that used to lag on purpose: A waits for an event of B (behind slow work), records e, B waits for e
// (skipped: A has only a wait for B left), B is synchronized, and e is queried while A's worker may still
// be on its way out of the wait.
TEST(BackendSimStress, EventsWaitedForBySynchronizedStreamsAreComplete) {
  constexpr int kStreams = 4, kPerStream = 16, kRounds = 3000;
  std::vector<Stream> streams(kStreams);
  std::vector<std::vector<Event>> events(kStreams, std::vector<Event>(kPerStream));
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_OK(stream_create(0, &streams[i]));
    for (auto& e : events[i]) ASSERT_OK(event_create(&e));
  }
  std::mt19937 rng(2024);
  std::vector<std::atomic<long>> done(kStreams);  // each written by its stream's ops only
  int incomplete = 0;
  std::string first_incomplete;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::vector<Event>> rec(kStreams);     // events recorded this round, in record order
    std::vector<std::vector<Event>> waited(kStreams);  // events each stream waited for this round
    auto record = [&](int i) -> Event {
      if (rec[i].size() == kPerStream) return rec[i].back();
      Event e = events[i][rec[i].size()];
      EXPECT_OK(event_record(e, streams[i]));
      rec[i].push_back(e);
      return e;
    };
    auto work = [&](int i, int spin_us) {
      std::atomic<long>* d = &done[i];
      EXPECT_OK(launch_host_func(streams[i], [d, spin_us] {
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
        while (std::chrono::steady_clock::now() < until) {
        }
        d->fetch_add(1, std::memory_order_relaxed);
      }));
    };
    auto wait_for = [&](int i, Event e) {
      EXPECT_OK(stream_wait_event(streams[i], e));
      waited[i].push_back(e);
    };
    const int a = static_cast<int>(rng() % kStreams);
    const int b = (a + 1 + static_cast<int>(rng() % (kStreams - 1))) % kStreams;
    work(b, static_cast<int>(rng() % 30));
    if (rng() % 2) work(a, 0);
    wait_for(a, record(b));
    const Event e = record(a);
    wait_for(b, e);
    for (int n = static_cast<int>(rng() % 8); n > 0; --n) {
      const int i = static_cast<int>(rng() % kStreams);
      const int j = (i + 1 + static_cast<int>(rng() % (kStreams - 1))) % kStreams;
      switch (rng() % 3) {
        case 0: work(i, static_cast<int>(rng() % 5)); break;
        case 1: record(i); break;
        default: wait_for(i, rec[j].empty() ? record(j) : rec[j][rng() % rec[j].size()]);
      }
    }
    std::vector<int> synced = {b};
    const int y = static_cast<int>(rng() % kStreams);
    if (y != b && !waited[y].empty()) synced.push_back(y);
    for (int x : synced) {
      ASSERT_OK(stream_synchronize(streams[x]));
      for (Event w : waited[x]) {
        for (int j = 0; j < kStreams; ++j) {
          auto it = std::find(rec[j].begin(), rec[j].end(), w);
          if (it == rec[j].end()) continue;
          for (auto p = rec[j].begin(); p <= it; ++p) {  // the waited event and every one before it
            const Status st = event_query(*p);
            if (st != Status::kSuccess && incomplete++ == 0) {
              first_incomplete = "round " + std::to_string(round) + ": stream " + std::to_string(x) +
                                 " synchronized, event #" + std::to_string(p - rec[j].begin()) + " of stream " +
                                 std::to_string(j) + " -> " + status_name(st);
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(incomplete, 0) << first_incomplete;
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_OK(stream_synchronize(streams[i]));
    for (Event e : events[i]) EXPECT_OK(event_query(e));
    for (Event e : events[i]) ASSERT_OK(event_destroy(e));
    ASSERT_OK(stream_destroy(streams[i]));
  }
}
