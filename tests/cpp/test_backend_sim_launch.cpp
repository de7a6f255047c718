// backend_sim: the allocation-free launch path — InlineFn (inline vs heap storage, moves, release of
// captures), recycled queue entries shared by kernels and host ops, the per-thread stream resolve cache
// against stream_destroy (same thread and other threads), and concurrent launches with destroys.
#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "test_backend_sim_util.h"

using namespace npu_sim;

namespace {
using Small = InlineFn<int(int), 64>;
}

TEST(BackendSimLaunch, InlineFnHoldsSmallAndLargeCallables) {
  auto token = std::make_shared<int>(7);
  Small small([token](int x) { return x + *token; });
  EXPECT_EQ(small(1), 8);
  EXPECT_EQ(token.use_count(), 2);
  std::array<int, 64> big{};  // larger than the inline storage: goes to the heap
  big[63] = 5;
  Small large([big, token](int x) { return x + big[63] + *token; });
  EXPECT_EQ(large(1), 13);
  EXPECT_EQ(token.use_count(), 3);

  Small moved(std::move(small));
  EXPECT_FALSE(static_cast<bool>(small));  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(moved(2), 9);
  Small moved_large;
  moved_large = std::move(large);
  EXPECT_EQ(moved_large(0), 12);
  EXPECT_EQ(token.use_count(), 3);
  moved.reset();
  moved_large = nullptr;
  EXPECT_EQ(token.use_count(), 1);  // captures released
}

TEST(BackendSimLaunch, EmptyStdFunctionStaysEmpty) {
  std::function<int(int)> empty;
  Small f(empty);
  EXPECT_FALSE(static_cast<bool>(f));
  EXPECT_EQ(launch_kernel(nullptr, "k", 1, std::function<void(const BlockContext&)>()), Status::kInvalidValue);
}

TEST(BackendSimLaunch, CapturesAreReleasedBeforeTheOpCompletes) {
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  auto token = std::make_shared<int>(1);
  std::array<char, 4096> pad{};  // a heap-stored body as well as inline ones
  ASSERT_OK(launch_kernel(s, "small", 2, [token](const BlockContext&) {}));
  ASSERT_OK(launch_kernel(s, "large", 3, [token, pad](const BlockContext&) { (void)pad; }));
  ASSERT_OK(stream_synchronize(s));
  EXPECT_EQ(token.use_count(), 1);
  ASSERT_OK(stream_destroy(s));
}

TEST(BackendSimLaunch, KernelsAndHostOpsShareRecycledEntriesInOrder) {
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  std::vector<int> order;  // written by the worker only, read after the sync
  for (int round = 0; round < 200; ++round) {
    ASSERT_OK(launch_kernel(s, "k", 1, [&order, round](const BlockContext&) { order.push_back(2 * round); }));
    ASSERT_OK(launch_host_func(s, [&order, round] { order.push_back(2 * round + 1); }));
    if (round % 50 == 0) ASSERT_OK(stream_synchronize(s));  // lets entries go back to the free list
  }
  ASSERT_OK(stream_synchronize(s));
  ASSERT_EQ(order.size(), 400u);
  for (int i = 0; i < 400; ++i) EXPECT_EQ(order[i], i);
  // A failing kernel on a recycled entry still names itself.
  ASSERT_OK(launch_kernel(s, "fails_here", 1, [](const BlockContext&) { throw KernelError("boom"); }));
  EXPECT_EQ(stream_synchronize(s), Status::kKernelError);
  EXPECT_TRUE(npu_sim_test::contains(last_error_message(), "kernel 'fails_here' failed: boom"));
  ASSERT_OK(device_restart(0));
  ASSERT_OK(stream_destroy(s));
}

TEST(BackendSimLaunch, ResolveCacheNeverResolvesADestroyedStream) {
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  ASSERT_OK(launch_kernel(s, "k", 1, [](const BlockContext&) {}));  // caches s on this thread
  ASSERT_OK(stream_destroy(s));
  EXPECT_EQ(launch_kernel(s, "k", 1, [](const BlockContext&) {}), Status::kInvalidHandle);

  // Cached on another thread, destroyed here, used there afterwards.
  ASSERT_OK(stream_create(0, &s));
  npu_sim_test::Gate cached, destroyed;
  Status after = Status::kSuccess;
  std::thread other([&] {
    EXPECT_OK(launch_kernel(s, "k", 1, [](const BlockContext&) {}));
    cached.open();
    destroyed.wait();
    after = launch_kernel(s, "k", 1, [](const BlockContext&) {});
  });
  ASSERT_TRUE(cached.wait());
  ASSERT_OK(stream_destroy(s));
  destroyed.open();
  other.join();
  EXPECT_EQ(after, Status::kInvalidHandle);
}

TEST(BackendSimLaunch, ConcurrentLaunchesWhileOtherStreamsAreDestroyed) {
  Stream shared = nullptr;
  ASSERT_OK(stream_create(0, &shared));
  std::atomic<long> blocks{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        EXPECT_OK(launch_kernel(shared, "shared", 1 + (i % 3), [&blocks](const BlockContext&) { blocks.fetch_add(1); }));
        if (i % 7 == t) EXPECT_OK(launch_kernel(nullptr, "default", 2, [&blocks](const BlockContext&) { blocks.fetch_add(1); }));
      }
    });
  }
  std::thread churn([&] {  // bumps the destroy epoch over and over
    while (!stop.load()) {
      Stream tmp = nullptr;
      EXPECT_OK(stream_create(0, &tmp));
      EXPECT_OK(launch_kernel(tmp, "tmp", 2, [](const BlockContext&) {}));
      EXPECT_OK(stream_destroy(tmp));
    }
  });
  for (auto& th : threads) th.join();
  stop.store(true);
  churn.join();
  ASSERT_OK(stream_synchronize(shared));
  ASSERT_OK(device_synchronize(0));
  long expected = 0;
  for (int t = 0; t < 3; ++t) {
    for (int i = 0; i < 300; ++i) {
      expected += 1 + (i % 3);
      if (i % 7 == t) expected += 2;
    }
  }
  EXPECT_EQ(blocks.load(), expected);
  ASSERT_OK(stream_destroy(shared));
}
