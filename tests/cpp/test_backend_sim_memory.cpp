// backend_sim: device/pinned allocation, capacity OOM, fault injection, pointer attributes, memcpy in
// every direction (sync and async, pageable and pinned), memset.
#include <atomic>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "test_backend_sim_util.h"

using namespace npu_sim;
using npu_sim_test::contains;
using npu_sim_test::Gate;

namespace {
std::vector<std::uint8_t> pattern(std::size_t n, unsigned seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>((i * 131 + seed * 7 + (i >> 9)) & 0xff);
  return v;
}
}  // namespace

TEST(BackendSimMemory, AllocateAlignedAndFree) {
  const Counters before = get_counters();
  for (std::size_t bytes : {std::size_t{1}, std::size_t{100}, std::size_t{4096}, std::size_t{3} << 20}) {
    void* p = nullptr;
    ASSERT_OK(malloc_device(0, &p, bytes));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 512, 0u) << bytes;
    ASSERT_OK(npu_sim::memset(p, 0x5a, bytes));
    ASSERT_OK(free_device(p));
  }
  const Counters after = get_counters();
  EXPECT_GE(after.device_mallocs - before.device_mallocs, 4u);
  EXPECT_GE(after.device_frees - before.device_frees, 4u);
  void* z = reinterpret_cast<void*>(1);
  ASSERT_OK(malloc_device(0, &z, 0));
  EXPECT_EQ(z, nullptr);
  EXPECT_OK(free_device(nullptr));
  EXPECT_OK(free_host(nullptr));
  EXPECT_EQ(malloc_device(0, nullptr, 16), Status::kInvalidValue);
  EXPECT_TRUE(contains(last_error_message(), "malloc_device: ptr is null"));
}

TEST(BackendSimMemory, BadFrees) {
  void* d = nullptr;
  void* h = nullptr;
  ASSERT_OK(malloc_device(0, &d, 4096));
  ASSERT_OK(malloc_host(&h, 4096));
  EXPECT_EQ(free_device(static_cast<char*>(d) + 8), Status::kInvalidValue);
  EXPECT_TRUE(contains(last_error_message(), "inside the allocation"));
  EXPECT_EQ(free_device(h), Status::kInvalidValue);
  EXPECT_TRUE(contains(last_error_message(), "free_host"));
  EXPECT_EQ(free_host(d), Status::kInvalidValue);
  int local = 0;
  EXPECT_EQ(free_device(&local), Status::kInvalidHandle);
  EXPECT_TRUE(contains(last_error_message(), "not allocated by malloc_device"));
  ASSERT_OK(free_device(d));
  EXPECT_EQ(free_device(d), Status::kInvalidHandle);  // double free
  ASSERT_OK(free_host(h));
}

TEST(BackendSimMemory, CapacityOutOfMemory) {
  DeviceProperties props{};
  ASSERT_OK(get_device_properties(1, &props));
  const std::size_t cap = props.hbm_bytes;
  // Lazily committed: these reserve address space only (never touched).
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_OK(malloc_device(1, &a, cap / 2));
  ASSERT_OK(malloc_device(1, &b, cap / 2 - 4096));
  void* c = nullptr;
  EXPECT_EQ(malloc_device(1, &c, 8192), Status::kOutOfMemory);
  EXPECT_EQ(c, nullptr);
  const std::string expected = "malloc_device: out of memory on device 1: tried to allocate 8192 bytes; capacity " +
                               std::to_string(cap) + " bytes, " + std::to_string(cap - 4096) + " bytes in use";
  EXPECT_EQ(last_error_message(), expected);
  std::size_t free_b = 0, total = 0;
  ASSERT_OK(mem_get_info(1, &free_b, &total));
  EXPECT_EQ(free_b, 4096u);
  ASSERT_OK(malloc_device(1, &c, 4096));  // exactly what is left
  void* d = reinterpret_cast<void*>(1);
  EXPECT_EQ(malloc_device(1, &d, cap * 2), Status::kOutOfMemory);
  EXPECT_EQ(d, nullptr);  // a failed allocation yields null
  // Other devices are not affected.
  void* other = nullptr;
  ASSERT_OK(malloc_device(2, &other, 1 << 20));
  ASSERT_OK(free_device(other));
  ASSERT_OK(free_device(a));
  ASSERT_OK(free_device(b));
  ASSERT_OK(free_device(c));
  ASSERT_OK(mem_get_info(1, &free_b, &total));
  EXPECT_EQ(free_b, cap);
}

TEST(BackendSimMemory, FaultInjection) {
  inject_malloc_failures(3, 2);
  void* p = nullptr;
  EXPECT_EQ(malloc_device(3, &p, 64), Status::kOutOfMemory);
  EXPECT_TRUE(contains(last_error_message(), "injected")) << last_error_message();
  void* q = nullptr;
  ASSERT_OK(malloc_device(4, &q, 64));  // a different device is not affected
  EXPECT_EQ(malloc_device(3, &p, 64), Status::kOutOfMemory);
  ASSERT_OK(malloc_device(3, &p, 64));
  ASSERT_OK(free_device(p));
  inject_malloc_failures(-1, 1);  // any device
  EXPECT_EQ(malloc_device(5, &p, 64), Status::kOutOfMemory);
  ASSERT_OK(malloc_device(5, &p, 64));
  ASSERT_OK(free_device(p));
  ASSERT_OK(free_device(q));
}

TEST(BackendSimMemory, PointerAttributes) {
  void* d = nullptr;
  void* h = nullptr;
  ASSERT_OK(malloc_device(2, &d, 10000));
  ASSERT_OK(malloc_host(&h, 3000));
  PointerAttributes a{};
  ASSERT_OK(pointer_get_attributes(static_cast<char*>(d) + 9999, &a));
  EXPECT_EQ(a.type, MemoryType::kDevice);
  EXPECT_EQ(a.device, 2);
  EXPECT_EQ(a.base, d);
  EXPECT_EQ(a.size, 10000u);
  ASSERT_OK(pointer_get_attributes(static_cast<char*>(d) + 10000, &a));  // one past the end
  EXPECT_NE(a.base, d);
  ASSERT_OK(pointer_get_attributes(static_cast<char*>(h) + 17, &a));
  EXPECT_EQ(a.type, MemoryType::kHost);
  EXPECT_EQ(a.device, -1);
  EXPECT_EQ(a.base, h);
  EXPECT_EQ(a.size, 3000u);
  int local = 0;
  ASSERT_OK(pointer_get_attributes(&local, &a));
  EXPECT_EQ(a.type, MemoryType::kUnregistered);
  EXPECT_EQ(a.device, -1);
  EXPECT_EQ(a.base, nullptr);
  EXPECT_EQ(a.size, 0u);
  ASSERT_OK(pointer_get_attributes(nullptr, &a));
  EXPECT_EQ(a.type, MemoryType::kUnregistered);
  EXPECT_EQ(pointer_get_attributes(d, nullptr), Status::kInvalidValue);
  ASSERT_OK(free_device(d));
  ASSERT_OK(pointer_get_attributes(d, &a));
  EXPECT_EQ(a.type, MemoryType::kUnregistered);
  ASSERT_OK(free_host(h));
}

TEST(BackendSimMemory, SyncMemcpyAllDirections) {
  for (std::size_t n : {std::size_t{4097}, std::size_t{9} << 20}) {  // small and pool-parallel sizes
    const auto src = pattern(n, 1);
    std::vector<std::uint8_t> back(n, 0), h2h(n, 0);
    void *d0 = nullptr, *d0b = nullptr, *d1 = nullptr, *pin = nullptr;
    ASSERT_OK(malloc_device(0, &d0, n));
    ASSERT_OK(malloc_device(0, &d0b, n));
    ASSERT_OK(malloc_device(1, &d1, n));
    ASSERT_OK(malloc_host(&pin, n));
    const Counters c0 = get_counters();
    ASSERT_OK(npu_sim::memcpy(d0, src.data(), n, MemcpyKind::kHostToDevice));
    ASSERT_OK(npu_sim::memcpy(d0b, d0, n, MemcpyKind::kDeviceToDevice));
    ASSERT_OK(npu_sim::memcpy(d1, d0b, n, MemcpyKind::kDefault));  // peer copy, inferred
    ASSERT_OK(npu_sim::memcpy(pin, d1, n, MemcpyKind::kDeviceToHost));
    ASSERT_OK(npu_sim::memcpy(h2h.data(), pin, n, MemcpyKind::kHostToHost));
    ASSERT_OK(npu_sim::memcpy(back.data(), d1, n, MemcpyKind::kDefault));
    EXPECT_TRUE(h2h == src);
    EXPECT_TRUE(back == src);
    const Counters c1 = get_counters();
    EXPECT_GE(c1.bytes_h2d - c0.bytes_h2d, n);
    EXPECT_GE(c1.bytes_d2d - c0.bytes_d2d, 2 * n);
    EXPECT_GE(c1.bytes_d2h - c0.bytes_d2h, 2 * n);
    EXPECT_GE(c1.bytes_h2h - c0.bytes_h2h, n);
    ASSERT_OK(free_device(d0));
    ASSERT_OK(free_device(d0b));
    ASSERT_OK(free_device(d1));
    ASSERT_OK(free_host(pin));
  }
}

TEST(BackendSimMemory, MemcpyValidation) {
  void* d = nullptr;
  ASSERT_OK(malloc_device(0, &d, 1024));
  std::vector<char> h(2048);
  EXPECT_EQ(npu_sim::memcpy(d, h.data(), 2048, MemcpyKind::kHostToDevice), Status::kInvalidValue);
  EXPECT_TRUE(contains(last_error_message(), "runs past the end")) << last_error_message();
  EXPECT_EQ(npu_sim::memcpy(h.data(), d, 16, MemcpyKind::kHostToDevice), Status::kInvalidValue);
  EXPECT_TRUE(contains(last_error_message(), "kHostToDevice")) << last_error_message();
  EXPECT_EQ(npu_sim::memcpy(nullptr, d, 16, MemcpyKind::kDefault), Status::kInvalidValue);
  EXPECT_TRUE(contains(last_error_message(), "memcpy: dst is null"));
  EXPECT_EQ(npu_sim::memcpy(d, h.data(), 16, static_cast<MemcpyKind>(9)), Status::kInvalidValue);
  EXPECT_EQ(npu_sim::memset(h.data(), 0, 16), Status::kInvalidValue);
  EXPECT_TRUE(contains(last_error_message(), "pageable"));
  EXPECT_EQ(npu_sim::memset(static_cast<char*>(d) + 1000, 0, 100), Status::kInvalidValue);
  EXPECT_OK(npu_sim::memcpy(d, h.data(), 0, MemcpyKind::kDefault));
  Stream bogus = reinterpret_cast<Stream>(&h);
  EXPECT_EQ(memcpy_async(d, h.data(), 16, MemcpyKind::kDefault, bogus), Status::kInvalidHandle);
  EXPECT_TRUE(contains(last_error_message(), "memcpy_async: stream"));
  ASSERT_OK(free_device(d));
}

TEST(BackendSimMemory, Memset) {
  const std::size_t n = (6 << 20) + 3;
  void* d = nullptr;
  ASSERT_OK(malloc_device(1, &d, n));
  ASSERT_OK(npu_sim::memset(d, 0x11, n));
  ASSERT_OK(npu_sim::memset(static_cast<char*>(d) + 10, 0x22, 5));
  Stream s = nullptr;
  ASSERT_OK(stream_create(1, &s));
  ASSERT_OK(memset_async(static_cast<char*>(d) + n - 3, 0x33, 3, s));
  std::vector<std::uint8_t> h(n);
  ASSERT_OK(memcpy_async(h.data(), d, n, MemcpyKind::kDeviceToHost, s));  // pageable dst: returns when done
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t want = i >= n - 3 ? 0x33 : (i >= 10 && i < 15 ? 0x22 : 0x11);
    if (h[i] != want) FAIL() << "byte " << i << " is " << int(h[i]) << ", expected " << int(want);
  }
  ASSERT_OK(stream_destroy(s));
  ASSERT_OK(free_device(d));
}

TEST(BackendSimMemory, AsyncFromPageableIsStagedAtCallTime) {
  const std::size_t n = 1 << 16;
  void* d = nullptr;
  ASSERT_OK(malloc_device(0, &d, n));
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  Gate gate;
  ASSERT_OK(launch_host_func(s, [&] { gate.wait(); }));  // holds the stream back
  auto src = pattern(n, 3);
  const auto original = src;
  ASSERT_OK(memcpy_async(d, src.data(), n, MemcpyKind::kHostToDevice, s));
  std::fill(src.begin(), src.end(), 0);  // the caller may reuse its buffer at once
  EXPECT_EQ(stream_query(s), Status::kNotReady);
  gate.open();
  ASSERT_OK(stream_synchronize(s));
  std::vector<std::uint8_t> back(n);
  ASSERT_OK(npu_sim::memcpy(back.data(), d, n, MemcpyKind::kDeviceToHost));
  EXPECT_TRUE(back == original);
  ASSERT_OK(stream_destroy(s));
  ASSERT_OK(free_device(d));
}

TEST(BackendSimMemory, AsyncPinnedIsFullyAsync) {
  const std::size_t n = (5 << 20) + 77;
  void *d = nullptr, *pin_in = nullptr, *pin_out = nullptr;
  ASSERT_OK(malloc_device(0, &d, n));
  ASSERT_OK(malloc_host(&pin_in, n));
  ASSERT_OK(malloc_host(&pin_out, n));
  const auto src = pattern(n, 5);
  std::memcpy(pin_in, src.data(), n);
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  Gate gate;
  ASSERT_OK(launch_host_func(s, [&] { gate.wait(); }));
  ASSERT_OK(memcpy_async(d, pin_in, n, MemcpyKind::kHostToDevice, s));
  ASSERT_OK(memcpy_async(pin_out, d, n, MemcpyKind::kDeviceToHost, s));  // returns without waiting
  EXPECT_EQ(stream_query(s), Status::kNotReady);
  gate.open();
  ASSERT_OK(stream_synchronize(s));
  EXPECT_EQ(std::memcmp(pin_out, src.data(), n), 0);
  EXPECT_OK(stream_query(s));
  ASSERT_OK(stream_destroy(s));
  ASSERT_OK(free_device(d));
  ASSERT_OK(free_host(pin_in));
  ASSERT_OK(free_host(pin_out));
}

TEST(BackendSimMemory, AsyncToPageableWaitsForEarlierWork) {
  const std::size_t n = 4096;
  void* d = nullptr;
  ASSERT_OK(malloc_device(0, &d, n));
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  ASSERT_OK(launch_host_func(s, [] { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }));
  ASSERT_OK(memset_async(d, 0x7f, n, s));
  std::vector<std::uint8_t> h(n, 0);
  ASSERT_OK(memcpy_async(h.data(), d, n, MemcpyKind::kDefault, s));
  EXPECT_EQ(h[0], 0x7f);
  EXPECT_EQ(h[n - 1], 0x7f);
  ASSERT_OK(stream_destroy(s));
  ASSERT_OK(free_device(d));
}

TEST(BackendSimMemory, PeerAsyncCopyBetweenDevices) {
  const std::size_t n = 1 << 20;
  void *d0 = nullptr, *d1 = nullptr;
  ASSERT_OK(malloc_device(0, &d0, n));
  ASSERT_OK(malloc_device(1, &d1, n));
  const auto src = pattern(n, 9);
  ASSERT_OK(npu_sim::memcpy(d0, src.data(), n, MemcpyKind::kHostToDevice));
  Stream s1 = nullptr;
  ASSERT_OK(stream_create(1, &s1));
  ASSERT_OK(memcpy_async(d1, d0, n, MemcpyKind::kDeviceToDevice, s1));
  ASSERT_OK(stream_synchronize(s1));
  std::vector<std::uint8_t> back(n);
  ASSERT_OK(npu_sim::memcpy(back.data(), d1, n, MemcpyKind::kDeviceToHost));
  EXPECT_TRUE(back == src);
  ASSERT_OK(stream_destroy(s1));
  ASSERT_OK(free_device(d0));
  ASSERT_OK(free_device(d1));
}
