// backend_sim: environment parsing and ASCEND_LAUNCH_BLOCKING. The runtime reads the environment once
// per process, so the parent test re-runs this binary with a custom environment and a child-only filter.
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "test_backend_sim_util.h"

using namespace npu_sim;
using npu_sim_test::contains;

namespace {
bool is_child() { return std::getenv("NPU_SIM_TEST_ENV_CHILD") != nullptr; }
}  // namespace

TEST(BackendSimEnv, ChildProcessWithCustomEnvironment) {
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(len, 0);
  exe[len] = '\0';
  const std::string cmd =
      "env NPU_SIM_TEST_ENV_CHILD=1 NPU_SIM_DEVICE_COUNT=6 ASCEND_RT_VISIBLE_DEVICES=5,2,2,9,1 NPU_SIM_HBM_GB=0.5 "
      "NPU_SIM_AI_CORES=bogus NPU_SIM_CORE_THREADS=3 ASCEND_LAUNCH_BLOCKING=1 NPU_SIM_FAULT_MALLOC_FAIL=1:1 NPU_SIM_SHARED_HBM=0 "
      "NPU_SIM_UB_KB=64 '" +
      std::string(exe) + "' --gtest_filter='BackendSimEnvChild.*' > /dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "child run failed: " << cmd;
}

// The child-only checks are registered only inside the child, so a normal run neither runs nor skips them.
void parsed_environment() {
  int n = 0;
  ASSERT_OK(get_device_count(&n));
  ASSERT_EQ(n, 2);  // "5,2,2,9,1": duplicate 2 skipped, 9 invalid hides itself and "1"
  DeviceProperties p{};
  ASSERT_OK(get_device_properties(0, &p));
  EXPECT_EQ(p.physical_id, 5);
  EXPECT_EQ(p.hbm_bytes, std::size_t{512} << 20);
  EXPECT_EQ(p.ai_core_count, 24);  // bad value -> default
  EXPECT_EQ(p.core_threads, 3);
  EXPECT_EQ(p.ub_bytes, std::size_t{64} << 10);  // NPU_SIM_UB_KB=64: the budget every block gets
  ASSERT_OK(get_device_properties(1, &p));
  EXPECT_EQ(p.physical_id, 2);
  void* d = nullptr;
  EXPECT_EQ(malloc_device(1, &d, 64), Status::kOutOfMemory);  // NPU_SIM_FAULT_MALLOC_FAIL=1:1
  ASSERT_OK(malloc_device(1, &d, 64));
  ASSERT_OK(free_device(d));
  EXPECT_EQ(malloc_device(0, &d, std::size_t{600} << 20), Status::kOutOfMemory);
  // NPU_SIM_SHARED_HBM=0: device memory is private, and says so.
  SharedRegion r{};
  EXPECT_EQ(device_memory_region(0, &r), Status::kNotSupported);
  EXPECT_TRUE(contains(last_error_message(), "NPU_SIM_SHARED_HBM=0")) << last_error_message();
  ASSERT_OK(malloc_device(0, &d, 4096));
  ASSERT_OK(free_device(d));
}

void launch_blocking_returns_errors_from_the_launch() {
  ASSERT_TRUE(launch_blocking());
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  std::atomic<int> ran{0};
  std::atomic<std::size_t> ub_seen{0};
  ASSERT_OK(launch_kernel(s, "ok", 4, [&](const BlockContext& c) {
    ran.fetch_add(1);
    ub_seen.store(c.ub_bytes);
  }));
  EXPECT_EQ(ran.load(), 4);  // complete on return
  EXPECT_EQ(ub_seen.load(), std::size_t{64} << 10);  // NPU_SIM_UB_KB
  EXPECT_EQ(launch_kernel(s, "blocking_bad", 4, [](const BlockContext& c) {
              if (c.block_idx == 1) throw KernelError("boom");
            }),
            Status::kKernelError);
  EXPECT_EQ(last_error_message().rfind("kernel 'blocking_bad' failed: boom (sticky:", 0), 0u) << last_error_message();
  EXPECT_EQ(stream_synchronize(s), Status::kKernelError);  // sticky until acknowledged
  ASSERT_OK(device_restart(0));
  EXPECT_OK(stream_synchronize(s));
  EXPECT_EQ(launch_host_func(s, [] { throw std::runtime_error("hf"); }), Status::kKernelError);
  EXPECT_EQ(last_error_message().rfind("host function failed: hf", 0), 0u) << last_error_message();
  ASSERT_OK(device_restart(0));
  ASSERT_OK(stream_destroy(s));
}

namespace {
struct FnTest : testing::Test {
  explicit FnTest(void (*fn)()) : fn_(fn) {}
  void TestBody() override { fn_(); }
  void (*fn_)();
};

const bool child_tests_registered = [] {
  if (!is_child()) return false;
  for (auto [name, fn] : {std::pair<const char*, void (*)()>{"ParsedEnvironment", &parsed_environment},
                          {"LaunchBlockingReturnsErrorsFromTheLaunch", &launch_blocking_returns_errors_from_the_launch}}) {
    testing::RegisterTest("BackendSimEnvChild", name, nullptr, nullptr, __FILE__, __LINE__,
                          [fn = fn]() -> testing::Test* { return new FnTest(fn); });
  }
  return true;
}();
}  // namespace
