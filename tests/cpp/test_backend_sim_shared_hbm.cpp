// backend_sim: the shareable HBM arena: device pointers lie in the exported region, a second mapping of
// its file (as a peer process makes) aliases them, freed ranges coalesce and give their pages back, and
// concurrent allocators never overlap.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_backend_sim_util.h"

using namespace npu_sim;
using npu_sim_test::contains;

namespace {
// The process's resident shared memory (kB), where arena pages are counted.
long rss_shmem_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("RssShmem:", 0) == 0) return std::stol(line.substr(9));
  return -1;
}
}  // namespace

TEST(BackendSimSharedHbm, DevicePointersLieInTheRegionAndAliasAPeerMapping) {
  void* p = nullptr;
  ASSERT_OK(malloc_device(0, &p, 1 << 20));
  SharedRegion r{};
  ASSERT_OK(device_memory_region(0, &r));
  char* base = static_cast<char*>(r.base);
  ASSERT_GE(static_cast<char*>(p), base);
  ASSERT_LT(static_cast<char*>(p), base + r.size);
  // Map the region again through procfs, as another process of the host does.
  const std::string path = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(r.fd);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path;
  void* view = mmap(nullptr, r.size, PROT_READ, MAP_SHARED | MAP_NORESERVE, fd, 0);
  close(fd);
  ASSERT_NE(view, MAP_FAILED);
  ASSERT_OK(npu_sim::memset(p, 0x3c, 1 << 20));
  const unsigned char* seen = static_cast<const unsigned char*>(view) + (static_cast<char*>(p) - base);
  EXPECT_EQ(seen[0], 0x3c);
  EXPECT_EQ(seen[(1 << 20) - 1], 0x3c);
  ASSERT_OK(free_device(p));
  EXPECT_EQ(seen[0], 0);  // the freed range's pages were punched out of the file
  munmap(view, r.size);
  SharedRegion bad{};
  EXPECT_EQ(device_memory_region(99, &bad), Status::kInvalidDevice);
  EXPECT_EQ(device_memory_region(0, nullptr), Status::kInvalidValue);
}

TEST(BackendSimSharedHbm, FreedRangesCoalesceAndReturnTheirPages) {
  DeviceProperties props{};
  ASSERT_OK(get_device_properties(4, &props));
  const std::size_t half = props.hbm_bytes / 2;
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_OK(malloc_device(4, &a, half));
  ASSERT_OK(malloc_device(4, &b, half));
  ASSERT_EQ(static_cast<char*>(b), static_cast<char*>(a) + half);
  ASSERT_OK(free_device(a));
  ASSERT_OK(free_device(b));
  // Best fit over (length, offset): only the merged range [a, a + 2 * half) ties with the untouched rest
  // of the arena, and wins on its lower offset.
  void* c = nullptr;
  ASSERT_OK(malloc_device(4, &c, 2 * half - 8192));
  EXPECT_EQ(c, a);
  ASSERT_OK(free_device(c));

  const long before = rss_shmem_kb();
  ASSERT_GE(before, 0);
  void* t = nullptr;
  ASSERT_OK(malloc_device(4, &t, 64 << 20));
  ASSERT_OK(npu_sim::memset(t, 1, 64 << 20));
  EXPECT_GE(rss_shmem_kb() - before, 60 << 10);
  ASSERT_OK(free_device(t));
  EXPECT_LE(rss_shmem_kb() - before, 4 << 10);
}

TEST(BackendSimSharedHbm, ConcurrentAllocationsNeverOverlap) {
  constexpr int kThreads = 4, kRounds = 300;
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &bad] {
      std::mt19937 rng(1234 + t);
      std::vector<std::pair<unsigned char*, std::size_t>> live;
      for (int i = 0; i < kRounds; ++i) {
        if (!live.empty() && rng() % 3 == 0) {
          const std::size_t k = rng() % live.size();
          auto [p, n] = live[k];
          for (std::size_t j = 0; j < n; j += 997) bad += p[j] != static_cast<unsigned char>(t + 1);
          if (free_device(p) != Status::kSuccess) ++bad;
          live.erase(live.begin() + static_cast<long>(k));
          continue;
        }
        const std::size_t n = 1 + rng() % (3 << 20);
        void* p = nullptr;
        if (malloc_device(5, &p, n) != Status::kSuccess) {
          ++bad;
          continue;
        }
        std::memset(p, t + 1, n);
        live.emplace_back(static_cast<unsigned char*>(p), n);
      }
      for (auto [p, n] : live) {
        for (std::size_t j = 0; j < n; j += 997) bad += p[j] != static_cast<unsigned char>(t + 1);
        if (free_device(p) != Status::kSuccess) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  std::size_t free_b = 0, total = 0;
  ASSERT_OK(mem_get_info(5, &free_b, &total));
  EXPECT_EQ(free_b, total);
}

// IPC: a process's device memory opened again through its region file (here this process's own, as another
// process would open /proc/<pid>/fd/<fd>) is the same memory at a second address, registered as device
// memory, closed with ipc_close_memory only.
TEST(BackendSimSharedHbm, IpcOpenMapsTheSameDeviceMemory) {
  constexpr std::size_t kBytes = (1 << 20) + 512;
  void* p = nullptr;
  ASSERT_OK(malloc_device(0, &p, kBytes));
  SharedRegion region{};
  ASSERT_OK(device_memory_region(0, &region));
  const auto offset = static_cast<std::size_t>(static_cast<char*>(p) - static_cast<char*>(region.base));
  const std::string path = "/proc/self/fd/" + std::to_string(region.fd);
  void* q = nullptr;
  ASSERT_OK(ipc_open_memory(1, path.c_str(), offset + 512, kBytes - 512, &q));
  ASSERT_NE(q, nullptr);
  EXPECT_NE(q, static_cast<char*>(p) + 512);
  std::vector<int> host(kBytes / sizeof(int));
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<int>(i * 7);
  ASSERT_OK(memcpy(p, host.data(), kBytes, MemcpyKind::kHostToDevice));
  std::vector<int> back((kBytes - 512) / sizeof(int));
  ASSERT_OK(memcpy(back.data(), q, kBytes - 512, MemcpyKind::kDeviceToHost));  // read through the second mapping
  for (std::size_t i = 0; i < back.size(); ++i) ASSERT_EQ(back[i], host[i + 128]) << i;
  PointerAttributes attrs{};
  ASSERT_OK(pointer_get_attributes(static_cast<char*>(q) + 100, &attrs));
  EXPECT_EQ(attrs.type, MemoryType::kDevice);
  EXPECT_EQ(attrs.device, 1);
  EXPECT_EQ(attrs.base, q);
  EXPECT_EQ(free_device(q), Status::kInvalidValue);
  EXPECT_TRUE(contains(last_error_message(), "use ipc_close_memory"));
  ASSERT_OK(ipc_close_memory(q));
  EXPECT_EQ(ipc_close_memory(q), Status::kInvalidHandle);
  ASSERT_OK(free_device(p));
  void* r = nullptr;
  EXPECT_EQ(ipc_open_memory(0, "/proc/999999999/fd/3", 0, 4096, &r), Status::kInvalidHandle);
  EXPECT_TRUE(contains(last_error_message(), "has the process that shared it exited?"));
  EXPECT_EQ(r, nullptr);
}
