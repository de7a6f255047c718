// backend_sim: device enumeration and properties (default environment), current device, errors.
#include <thread>

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
