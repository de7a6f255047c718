// backend_sim: sticky device errors. The first asynchronous failure on any stream of a device is reported
// by every later synchronizing call of that device (synchronizes, queries, copies back) until
// device_restart; other devices are unaffected; AsyncError carries its own status (kCommError); failures
// launched and synchronized from many threads at once (run under TSan too).
#include <atomic>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_backend_sim_util.h"

using namespace npu_sim;
using npu_sim_test::contains;
using npu_sim_test::Gate;
using namespace std::chrono_literals;

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// The status of `st` and last_error_message() right after it, for one-line checks.
struct Reported {
  Status status;
  std::string message;
};
Reported reported(Status st) { return Reported{st, last_error_message()}; }

constexpr const char* kDivMsg = "kernel 'div_floor' failed: ZeroDivisionError: integer division by zero";
constexpr const char* kIndexMsg =
    "kernel 'index_select' failed: index_select(): index 7 is out of bounds for dimension 0 with size 5";

// Checks that `r` is the sticky error of `device` whose original message is `msg`.
void expect_sticky(const Reported& r, const std::string& msg, int device, const char* what) {
  EXPECT_EQ(r.status, Status::kKernelError) << what << ": " << status_name(r.status) << " " << r.message;
  EXPECT_TRUE(starts_with(r.message, msg)) << what << ": " << r.message;
  EXPECT_TRUE(contains(r.message, "(sticky: the device stays failed until torch.npu.restart_device(" +
                                      std::to_string(device) + "))"))
      << what << ": " << r.message;
}

}  // namespace

// Two failed kernels pending on a device (the second ordered after the first by an event): the first is
// reported by the first synchronize and by every synchronizing call after it, the second's output is never
// read back, another device keeps working, and device_restart makes the device usable again.
TEST(BackendSimErrors, FirstFailureIsStickyUntilRestart) {
  if (launch_blocking()) GTEST_SKIP();
  const int dev = 2, other = 3;
  Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(stream_create(dev, &s1));
  ASSERT_OK(stream_create(dev, &s2));
  int* out = nullptr;  // device memory: the index_select kernel would write it
  ASSERT_OK(malloc_device(dev, reinterpret_cast<void**>(&out), 4 * sizeof(int)));
  const int init[4] = {1, 2, 3, 4};
  ASSERT_OK(npu_sim::memcpy(out, init, sizeof(init), MemcpyKind::kHostToDevice));
  Event e = nullptr, later = nullptr;
  ASSERT_OK(event_create(&e));
  ASSERT_OK(event_create(&later));

  ASSERT_OK(launch_kernel(s1, "div_floor", 4, [](const BlockContext& c) {
    if (c.block_idx == 2) throw KernelError("ZeroDivisionError: integer division by zero");
  }));
  ASSERT_OK(event_record(e, s1));
  ASSERT_OK(stream_wait_event(s2, e));
  ASSERT_OK(launch_kernel(s2, "index_select", 1, [](const BlockContext&) {
    throw KernelError("index_select(): index 7 is out of bounds for dimension 0 with size 5");
  }));
  ASSERT_OK(event_record(later, s2));

  // The first failure is reported, and keeps being reported (the old runtime cleared it here).
  expect_sticky(reported(stream_synchronize(s2)), kDivMsg, dev, "stream_synchronize(s2)");
  expect_sticky(reported(stream_synchronize(s2)), kDivMsg, dev, "stream_synchronize(s2) again");
  expect_sticky(reported(stream_synchronize(s1)), kDivMsg, dev, "stream_synchronize(s1)");
  expect_sticky(reported(device_synchronize(dev)), kDivMsg, dev, "device_synchronize");
  expect_sticky(reported(device_get_error(dev)), kDivMsg, dev, "device_get_error");
  expect_sticky(reported(event_synchronize(e)), kDivMsg, dev, "event_synchronize(e)");
  expect_sticky(reported(event_synchronize(later)), kDivMsg, dev, "event_synchronize(later)");
  expect_sticky(reported(event_query(e)), kDivMsg, dev, "event_query(e)");
  expect_sticky(reported(event_query(later)), kDivMsg, dev, "event_query(later)");
  expect_sticky(reported(stream_query(s2)), kDivMsg, dev, "stream_query(s2)");

  // Nothing is read back from the failed device as if it were good: the host buffers stay untouched.
  int back[4] = {-1, -1, -1, -1};
  expect_sticky(reported(npu_sim::memcpy(back, out, sizeof(back), MemcpyKind::kDeviceToHost)), kDivMsg, dev, "memcpy D2H");
  EXPECT_EQ(back[0], -1);
  expect_sticky(reported(memcpy_async(back, out, sizeof(back), MemcpyKind::kDeviceToHost, s2)), kDivMsg, dev,
                "memcpy_async D2H to pageable");
  EXPECT_EQ(back[0], -1);
  expect_sticky(reported(npu_sim::memcpy(out, init, sizeof(init), MemcpyKind::kHostToDevice)), kDivMsg, dev, "memcpy H2D");
  expect_sticky(reported(npu_sim::memset(out, 0, sizeof(init))), kDivMsg, dev, "memset");
  int* peer = nullptr;
  ASSERT_OK(malloc_device(other, reinterpret_cast<void**>(&peer), sizeof(init)));
  expect_sticky(reported(npu_sim::memcpy(peer, out, sizeof(init), MemcpyKind::kDeviceToDevice)), kDivMsg, dev,
                "memcpy peer from the failed device");
  expect_sticky(reported(npu_sim::memcpy(out, peer, sizeof(init), MemcpyKind::kDeviceToDevice)), kDivMsg, dev,
                "memcpy peer to the failed device");
  // Launches and async enqueues keep working (their results cannot be read back).
  EXPECT_OK(launch_kernel(s1, "still_runs", 2, [](const BlockContext&) {}));
  EXPECT_OK(memset_async(out, 0, sizeof(init), s1));

  // Another device is unaffected.
  EXPECT_OK(device_get_error(other));
  std::atomic<int> ran{0};
  Stream so = nullptr;
  ASSERT_OK(stream_create(other, &so));
  ASSERT_OK(launch_kernel(so, "other_device", 3, [&](const BlockContext&) { ran.fetch_add(1); }));
  EXPECT_OK(stream_synchronize(so));
  EXPECT_OK(device_synchronize(other));
  EXPECT_EQ(ran.load(), 3);
  EXPECT_OK(npu_sim::memcpy(back, peer, sizeof(back), MemcpyKind::kDeviceToHost));

  // Acknowledged: everything of the device works again.
  ASSERT_OK(device_restart(dev));
  EXPECT_OK(device_get_error(dev));
  EXPECT_OK(stream_synchronize(s1));
  EXPECT_OK(stream_synchronize(s2));
  EXPECT_OK(event_query(e));
  EXPECT_OK(event_synchronize(later));
  EXPECT_OK(stream_query(s2));
  ASSERT_OK(launch_kernel(s2, "index_select_ok", 1, [out](const BlockContext&) {
    for (int i = 0; i < 4; ++i) out[i] = 10 * i;
  }));
  EXPECT_OK(memcpy_async(back, out, sizeof(back), MemcpyKind::kDeviceToHost, s2));
  EXPECT_EQ(back[3], 30);
  EXPECT_OK(device_synchronize(dev));

  ASSERT_OK(stream_destroy(so));
  ASSERT_OK(free_device(peer));
  ASSERT_OK(free_device(out));
  ASSERT_OK(event_destroy(e));
  ASSERT_OK(event_destroy(later));
  ASSERT_OK(stream_destroy(s1));
  ASSERT_OK(stream_destroy(s2));
}

// A host function (the collective library's) that throws AsyncError{kCommError} fails the stream with
// kCommError and its message unchanged; a kernel's AsyncError keeps the kernel prefix; a non-error status
// in an AsyncError still fails.
TEST(BackendSimErrors, AsyncErrorCarriesItsStatus) {
  if (launch_blocking()) GTEST_SKIP();
  EXPECT_STREQ(status_name(Status::kCommError), "kCommError");
  EXPECT_EQ(static_cast<int>(Status::kCommError), 9);
  const int dev = 5;
  Stream s = nullptr;
  ASSERT_OK(stream_create(dev, &s));
  const std::string msg = "HcclAllReduce: rank 1 did not answer within HCCL_EXEC_TIMEOUT=2 s";
  ASSERT_OK(launch_host_func(s, [msg] { throw AsyncError(Status::kCommError, msg); }));
  Reported r = reported(stream_synchronize(s));
  EXPECT_EQ(r.status, Status::kCommError) << status_name(r.status);
  EXPECT_TRUE(starts_with(r.message, msg + " (sticky:")) << r.message;
  r = reported(device_synchronize(dev));
  EXPECT_EQ(r.status, Status::kCommError);
  ASSERT_OK(device_restart(dev));
  EXPECT_OK(stream_synchronize(s));

  ASSERT_OK(launch_kernel(s, "comm_reduce", 3, [](const BlockContext& c) {
    if (c.block_idx == 1) throw AsyncError(Status::kCommError, "peer closed");
  }));
  r = reported(stream_synchronize(s));
  EXPECT_EQ(r.status, Status::kCommError);
  EXPECT_TRUE(starts_with(r.message, "kernel 'comm_reduce' failed: peer closed (sticky:")) << r.message;
  ASSERT_OK(device_restart(dev));

  ASSERT_OK(launch_host_func(s, [] { throw AsyncError(Status::kSuccess, "not really fine"); }));
  r = reported(stream_synchronize(s));
  EXPECT_EQ(r.status, Status::kKernelError);
  EXPECT_TRUE(starts_with(r.message, "not really fine")) << r.message;
  ASSERT_OK(device_restart(dev));
  ASSERT_OK(stream_destroy(s));
}

// Queries report pending work first (a caller such as the caching allocator must never take an error for
// "done"), then the sticky error; waits that report no error (free_device, stream_destroy) still work on a
// failed device; a restart from a function running on the device's own stream is refused.
TEST(BackendSimErrors, QueriesAndRestartOnAFailedDevice) {
  if (launch_blocking()) GTEST_SKIP();
  const int dev = 6;
  Stream s = nullptr, t = nullptr;
  ASSERT_OK(stream_create(dev, &s));
  ASSERT_OK(stream_create(dev, &t));
  ASSERT_OK(launch_host_func(s, [] { throw std::runtime_error("first"); }));
  ASSERT_EQ(stream_synchronize(s), Status::kKernelError);
  Gate gate;
  Event e = nullptr;
  ASSERT_OK(event_create(&e));
  ASSERT_OK(launch_host_func(t, [&gate] { gate.wait(); }));
  ASSERT_OK(event_record(e, t));
  EXPECT_EQ(stream_query(t), Status::kNotReady);
  EXPECT_EQ(event_query(e), Status::kNotReady);
  gate.open();
  Reported r = reported(event_synchronize(e));
  EXPECT_EQ(r.status, Status::kKernelError);
  EXPECT_TRUE(starts_with(r.message, "host function failed: first (sticky:")) << r.message;
  EXPECT_EQ(event_query(e), Status::kKernelError);
  EXPECT_EQ(stream_query(t), Status::kKernelError);

  void* d = nullptr;
  ASSERT_OK(malloc_device(dev, &d, 4096));
  EXPECT_OK(free_device(d));

  Status inner = Status::kSuccess;
  std::string inner_msg;
  ASSERT_OK(launch_host_func(t, [&] {
    inner = device_restart(dev);
    inner_msg = last_error_message();
  }));
  EXPECT_EQ(stream_synchronize(t), Status::kKernelError);
  EXPECT_EQ(inner, Status::kInvalidValue);
  EXPECT_TRUE(contains(inner_msg, "device_restart: called from a function running on a stream of device 6"))
      << inner_msg;
  EXPECT_EQ(device_restart(8), Status::kInvalidDevice);
  EXPECT_EQ(device_get_error(-1), Status::kInvalidDevice);

  ASSERT_OK(stream_destroy(s));  // the failed op's stream is gone; its error is still the device's
  EXPECT_EQ(device_get_error(dev), Status::kKernelError);
  ASSERT_OK(device_restart(dev));
  EXPECT_OK(device_get_error(dev));
  EXPECT_OK(event_query(e));
  ASSERT_OK(event_destroy(e));
  ASSERT_OK(stream_destroy(t));
}

// device_restart acknowledges the failures of the work queued before it. A failure of work queued while it
// waits (here: by this thread, while another thread's restart waits for a gated stream) stays the device's
// sticky error.
TEST(BackendSimErrors, RestartKeepsFailuresOfWorkQueuedWhileItWaits) {
  if (launch_blocking()) GTEST_SKIP();
  const int dev = 7;
  Stream s = nullptr;
  ASSERT_OK(stream_create(dev, &s));
  Gate gate;
  ASSERT_OK(launch_host_func(s, [&gate] { gate.wait(); }));
  ASSERT_OK(launch_kernel(s, "before_restart", 1, [](const BlockContext&) { throw KernelError("covered"); }));
  Status restarted = Status::kInternal;
  std::thread restarter([&] { restarted = device_restart(dev); });
  std::this_thread::sleep_for(200ms);  // the restart has taken its snapshot and waits for the gate
  ASSERT_OK(launch_kernel(s, "after_restart", 1, [](const BlockContext&) { throw KernelError("not covered"); }));
  gate.open();
  restarter.join();
  ASSERT_OK(restarted);
  const Reported r = reported(stream_synchronize(s));
  EXPECT_EQ(r.status, Status::kKernelError);
  EXPECT_TRUE(starts_with(r.message, "kernel 'after_restart' failed: not covered (sticky:")) << r.message;
  ASSERT_OK(device_restart(dev));
  EXPECT_OK(stream_synchronize(s));
  ASSERT_OK(stream_destroy(s));
}

// Several threads launch succeeding and failing kernels on streams of one device and copy each result
// back, while others synchronize and query. A copy back returns success only if no failure has been
// recorded on the device, and then with the right value; once a thread's own kernel failed, its copy
// back fails. Between rounds (all threads joined) the device is restarted. Then a last phase restarts
// concurrently with all of it, which must neither deadlock nor leave the device failed after a final
// restart. TSan checks every access.
TEST(BackendSimErrors, ConcurrentFailuresSynchronizesAndRestarts) {
  if (launch_blocking()) GTEST_SKIP();
  const int dev = 1;
  constexpr int kWorkers = 3, kRounds = 6, kIters = 120;
  std::vector<Stream> streams(kWorkers);
  for (auto& s : streams) ASSERT_OK(stream_create(dev, &s));
  int* slots = nullptr;
  ASSERT_OK(malloc_device(dev, reinterpret_cast<void**>(&slots), kWorkers * sizeof(int)));
  std::atomic<int> failures{0};
  std::string first_bad;  // guarded by bad_mu
  std::mutex bad_mu;
  auto bad = [&](const std::string& what) {
    failures.fetch_add(1);
    std::lock_guard<std::mutex> lk(bad_mu);
    if (first_bad.empty()) first_bad = what;
  };
  auto is_sticky_kernel_error = [](Status st, const std::string& m) {
    return st == Status::kKernelError && starts_with(m, "kernel 'fail_") && contains(m, "(sticky:");
  };
  for (int round = 0; round <= kRounds; ++round) {
    const bool concurrent_restarts = round == kRounds;
    std::atomic<bool> stop{false};
    std::atomic<int> launched_failures{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < kWorkers; ++w) {
      threads.emplace_back([&, w] {
        std::mt19937 rng(round * 131 + w);
        bool own_failed = false;
        for (int i = 0; i < kIters; ++i) {
          const bool fail = rng() % 16 == 0;
          int* slot = slots + w;
          Status st;
          if (fail) {
            launched_failures.fetch_add(1);
            st = launch_kernel(streams[w], w == 0 ? "fail_a" : "fail_b", 2, [](const BlockContext& c) {
              if (c.block_idx == 1) throw KernelError("planned");
            });
          } else {
            st = launch_kernel(streams[w], "ok", 1, [slot, i](const BlockContext&) { *slot = i; });
          }
          if (st != Status::kSuccess) bad("launch: " + last_error_message());
          own_failed = own_failed || fail;
          int back = -1;
          st = memcpy_async(&back, slot, sizeof(back), MemcpyKind::kDeviceToHost, streams[w]);
          const std::string m = last_error_message();
          if (st == Status::kSuccess) {
            // (with concurrent restarts a failure may have been acknowledged: then only good data is checked)
            if (!fail && back != i) bad("silent wrong data: read " + std::to_string(back) + " for " + std::to_string(i));
            if (!concurrent_restarts && own_failed) bad("own failure not reported");
          } else if (!is_sticky_kernel_error(st, m)) {
            bad("copy back: " + std::string(status_name(st)) + " " + m);
          }
          if (concurrent_restarts && i % 10 == 0 && device_restart(dev) != Status::kSuccess) {
            bad("restart: " + last_error_message());
          }
        }
      });
    }
    threads.emplace_back([&] {  // synchronizes and queries everything meanwhile
      Event ev = nullptr;
      if (event_create(&ev) != Status::kSuccess) bad("event_create");
      for (int i = 0; !stop.load(); ++i) {
        Stream s = streams[i % kWorkers];
        Status st = Status::kSuccess;
        switch (i % 4) {
          case 0: st = stream_synchronize(s); break;
          case 1: st = device_synchronize(dev); break;
          case 2:
            if (event_record(ev, s) != Status::kSuccess) bad("event_record");
            st = event_synchronize(ev);
            break;
          default:
            st = event_query(ev);
            if (st == Status::kNotReady) st = Status::kSuccess;
        }
        const std::string m = last_error_message();
        if (st != Status::kSuccess && !is_sticky_kernel_error(st, m)) {
          bad("sync: " + std::string(status_name(st)) + " " + m);
        }
        std::this_thread::sleep_for(50us);
      }
      if (event_destroy(ev) != Status::kSuccess) bad("event_destroy");
    });
    for (int w = 0; w < kWorkers; ++w) threads[w].join();
    stop.store(true);
    threads.back().join();
    const Status st = device_synchronize(dev);
    if (!concurrent_restarts && (st != Status::kSuccess) != (launched_failures.load() > 0)) {
      bad("round " + std::to_string(round) + ": device_synchronize " + status_name(st));
    }
    ASSERT_OK(device_restart(dev));
    ASSERT_OK(device_synchronize(dev));
  }
  EXPECT_EQ(failures.load(), 0) << first_bad;
  ASSERT_OK(free_device(slots));
  for (auto s : streams) ASSERT_OK(stream_destroy(s));
}
