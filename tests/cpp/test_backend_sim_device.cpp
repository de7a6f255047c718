// backend_sim: device enumeration and properties (default environment), current device, errors.
#include <atomic>
#include <chrono>
#include <thread>
#include <unistd.h>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "npu_sim/smi_registry.h"
#include "test_backend_sim_util.h"

using namespace npu_sim;
using npu_sim_test::contains;

TEST(BackendSimDevice, DefaultCountAndProperties) {
  int n = -1;
  ASSERT_OK(get_device_count(&n));
  EXPECT_EQ(n, 8);
  for (int d = 0; d < n; ++d) {
    DeviceProperties p{};
    ASSERT_OK(get_device_properties(d, &p));
    EXPECT_STREQ(p.name, "Ascend910B-sim");
    EXPECT_EQ(p.physical_id, d);
    EXPECT_EQ(p.hbm_bytes, std::size_t{16} << 30);
    EXPECT_EQ(p.ai_core_count, 24);
    EXPECT_EQ(p.ub_bytes, std::size_t{192} << 10);
    EXPECT_GE(p.core_threads, 1);
  }
  EXPECT_FALSE(launch_blocking());
}

TEST(BackendSimDevice, BadArgumentsNameFunctionAndArgument) {
  DeviceProperties p{};
  EXPECT_EQ(get_device_properties(9, &p), Status::kInvalidDevice);
  EXPECT_EQ(last_error_message(), "get_device_properties: device 9 is out of range (8 visible devices)");
  EXPECT_EQ(get_device_properties(-1, &p), Status::kInvalidDevice);
  EXPECT_EQ(get_device_properties(0, nullptr), Status::kInvalidValue);
  EXPECT_TRUE(contains(last_error_message(), "props is null"));
  EXPECT_EQ(get_device_count(nullptr), Status::kInvalidValue);
  EXPECT_EQ(set_device(8), Status::kInvalidDevice);
  EXPECT_TRUE(contains(last_error_message(), "set_device: device 8"));
  EXPECT_EQ(get_device(nullptr), Status::kInvalidValue);
  EXPECT_EQ(device_synchronize(100), Status::kInvalidDevice);
  void* p0 = nullptr;
  EXPECT_EQ(malloc_device(9, &p0, 16), Status::kInvalidDevice);
  EXPECT_EQ(last_error_message(), "malloc_device: device 9 is out of range (8 visible devices)");
}

TEST(BackendSimDevice, StatusNames) {
  EXPECT_STREQ(status_name(Status::kSuccess), "kSuccess");
  EXPECT_STREQ(status_name(Status::kOutOfMemory), "kOutOfMemory");
  EXPECT_STREQ(status_name(Status::kKernelError), "kKernelError");
  EXPECT_STREQ(status_name(Status::kInvalidHandle), "kInvalidHandle");
}

TEST(BackendSimDevice, LastErrorIsPerThread) {
  EXPECT_EQ(set_device(42), Status::kInvalidDevice);
  std::string other = "unset";
  std::thread([&] { other = last_error_message(); }).join();
  EXPECT_EQ(other, "");
  EXPECT_TRUE(contains(last_error_message(), "42"));
}

TEST(BackendSimDevice, CurrentDeviceIsPerThread) {
  int d = -1;
  ASSERT_OK(get_device(&d));
  EXPECT_EQ(d, 0);
  std::thread([] {
    ASSERT_OK(set_device(3));
    int mine = -1;
    ASSERT_OK(get_device(&mine));
    EXPECT_EQ(mine, 3);
    // The null stream now means device 3's default stream.
    int sd = -1;
    ASSERT_OK(stream_get_device(nullptr, &sd));
    EXPECT_EQ(sd, 3);
    Stream def = nullptr;
    ASSERT_OK(get_default_stream(3, &def));
    ASSERT_NE(def, nullptr);
  }).join();
  ASSERT_OK(get_device(&d));
  EXPECT_EQ(d, 0);
}

TEST(BackendSimDevice, MemGetInfo) {
  std::size_t free0 = 0, total = 0;
  ASSERT_OK(mem_get_info(2, &free0, &total));
  EXPECT_EQ(total, std::size_t{16} << 30);
  void* p = nullptr;
  ASSERT_OK(malloc_device(2, &p, 1000));
  std::size_t free1 = 0;
  ASSERT_OK(mem_get_info(2, &free1, &total));
  EXPECT_EQ(free0 - free1, 1024u);  // accounted in 512-byte units
  ASSERT_OK(free_device(p));
  ASSERT_OK(mem_get_info(2, &free1, &total));
  EXPECT_EQ(free1, free0);
  EXPECT_EQ(mem_get_info(2, nullptr, &total), Status::kInvalidValue);
  EXPECT_EQ(mem_get_info(8, &free1, &total), Status::kInvalidDevice);
}

// device_busy_time: the union of the device's kernel intervals across streams; host time with no kernel
// running adds nothing, and a kernel still running counts up to now.
TEST(BackendSimDevice, BusyTimeIsTheUnionOfKernelIntervals) {
  using namespace std::chrono_literals;
  constexpr int kDev = 1;
  Stream a = nullptr, b = nullptr;
  ASSERT_OK(stream_create(kDev, &a));
  ASSERT_OK(stream_create(kDev, &b));
  std::uint64_t busy0 = 0, now0 = 0, busy1 = 0, now1 = 0;
  ASSERT_OK(device_busy_time(kDev, &busy0, &now0));
  std::this_thread::sleep_for(20ms);  // idle
  ASSERT_OK(device_busy_time(kDev, &busy1, &now1));
  EXPECT_EQ(busy1, busy0);
  EXPECT_GE(now1 - now0, 20'000'000u);

  // Two 60 ms kernels, one per stream, started together: both streams' workers sleep in parallel.
  std::atomic<int> started{0};
  auto body = [&started](const BlockContext&) {
    started.fetch_add(1);
    std::this_thread::sleep_for(60ms);
  };
  ASSERT_OK(launch_kernel(a, "sleep_a", 1, body));
  ASSERT_OK(launch_kernel(b, "sleep_b", 1, body));
  while (started.load() < 2) std::this_thread::yield();
  std::uint64_t busy_mid = 0, now_mid = 0;
  ASSERT_OK(device_busy_time(kDev, &busy_mid, &now_mid));
  EXPECT_GT(busy_mid, busy1);  // running kernels count up to now
  ASSERT_OK(stream_synchronize(a));
  ASSERT_OK(stream_synchronize(b));
  std::uint64_t busy2 = 0, now2 = 0;
  ASSERT_OK(device_busy_time(kDev, &busy2, &now2));
  const std::uint64_t kernel_ns = busy2 - busy1;
  EXPECT_GE(kernel_ns, 60'000'000u);
  EXPECT_LE(kernel_ns, now2 - now1);  // never more than the wall time: overlapping kernels count once
  // The other device saw none of it.
  std::uint64_t other0 = 0, other1 = 0, t = 0;
  ASSERT_OK(device_busy_time(0, &other0, &t));
  ASSERT_OK(device_busy_time(0, &other1, &t));
  EXPECT_EQ(other0, other1);
  ASSERT_OK(stream_destroy(a));
  ASSERT_OK(stream_destroy(b));
  std::uint64_t x = 0;
  EXPECT_EQ(device_busy_time(99, &x, &x), Status::kInvalidDevice);
  EXPECT_EQ(device_busy_time(0, nullptr, &x), Status::kInvalidValue);
}

// The npu-smi registry: this process's file holds its devices, the memory it holds and its kernel time.
TEST(BackendSimDevice, SmiRegistryDescribesThisProcess) {
  void* p = nullptr;
  ASSERT_OK(malloc_device(2, &p, 3 << 20));
  Stream s = nullptr;
  ASSERT_OK(stream_create(2, &s));
  ASSERT_OK(launch_kernel(s, "sleep", 1, [](const BlockContext&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }));
  ASSERT_OK(stream_synchronize(s));
  const char* dir = std::getenv("NPU_SIM_SMI_DIR");
  const std::string path = std::string(dir != nullptr && dir[0] != '\0' ? dir : "/dev/shm") + "/npusim-smi-" +
                           std::to_string(getpid());
  FILE* f = std::fopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr) << path;
  std::vector<char> buf(sizeof(SmiHeader) + kSmiMaxDevices * sizeof(SmiDevice));
  const std::size_t n = std::fread(buf.data(), 1, buf.size(), f);
  std::fclose(f);
  ASSERT_GE(n, sizeof(SmiHeader));
  SmiHeader h;
  std::memcpy(&h, buf.data(), sizeof(h));
  EXPECT_EQ(std::memcmp(h.magic, "NPUSMI\0\0", 8), 0);
  EXPECT_EQ(h.version, kSmiVersion);
  EXPECT_EQ(h.pid, getpid());
  EXPECT_GT(h.start_ticks, 0u);
  int count = 0;
  ASSERT_OK(get_device_count(&count));
  ASSERT_EQ(h.device_count, count);
  ASSERT_EQ(n, sizeof(SmiHeader) + count * sizeof(SmiDevice));
  auto field = [&](int d, std::size_t offset) {
    std::uint64_t v;
    std::memcpy(&v, buf.data() + sizeof(SmiHeader) + d * sizeof(SmiDevice) + offset, 8);
    return v;
  };
  EXPECT_GE(field(2, offsetof(SmiDevice, hbm_used)), 3u << 20);
  EXPECT_EQ(field(3, offsetof(SmiDevice, hbm_used)), 0u);
  EXPECT_GE(field(2, offsetof(SmiDevice, busy_ns)), 20'000'000u);
  EXPECT_EQ(field(2, offsetof(SmiDevice, running)), 0u);
  DeviceProperties props{};
  ASSERT_OK(get_device_properties(2, &props));
  EXPECT_EQ(field(2, offsetof(SmiDevice, hbm_capacity)), props.hbm_bytes);
  ASSERT_OK(free_device(p));
  ASSERT_OK(stream_destroy(s));
}
