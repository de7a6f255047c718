// Device (HBM) and pinned host allocations: capacity accounting per device (device memory comes from the
// shareable arena of hbm_arena.cpp, else from private mappings), the pointer registry
// (address-range map behind a shared_mutex), mem_get_info, pointer attributes and malloc fault injection.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <map>
#include <shared_mutex>

#include "internal.h"

namespace npu_sim {
namespace detail {
namespace {

constexpr std::size_t kAlign = 512;               // allocation granularity and alignment
constexpr std::size_t kMmapThreshold = 1u << 20;  // from 1 MiB up: lazily committed anonymous mappings

struct Allocation {
  std::size_t size = 0;        // bytes requested
  std::size_t accounted = 0;   // bytes charged against capacity (size rounded to kAlign)
  std::size_t mapped = 0;      // length of the mmap or arena range, 0 if from aligned_alloc
  bool arena = false;          // from the device's shareable arena (hbm_arena.cpp)
  MemoryType type = MemoryType::kUnregistered;
  int device = -1;
  bool imported = false;       // another process's HBM mapped by ipc_open_memory (not charged here)
  std::size_t map_delta = 0;   // imported: the mapping starts this many bytes before the base
};

// Process-lifetime memory state (never destroyed).
//  - `mu` protects `allocs` (shared for lookups, exclusive for insert/erase). A leaf held for one map
//    operation: host allocation, unmapping and free_device's wait for the streams all run outside it
//    (stream workers look pointers up under it, e.g. through memcpy_async's checks).
//  - `used[d]` is atomic: reserved with a CAS loop before the host allocation, so the capacity check
//    needs no lock.
//  - `fault_mu` protects the injected-failure counts (a leaf; nothing else happens under it).
struct MemoryState {
  std::shared_mutex mu;
  std::map<std::uintptr_t, Allocation> allocs;  // keyed by base address
  std::unique_ptr<std::atomic<std::size_t>[]> used;
  std::mutex fault_mu;
  int fault_any = 0;
  std::vector<int> fault_per_device;

  MemoryState() {
    const int n = device_count();
    used.reset(new std::atomic<std::size_t>[std::max(1, n)]);
    for (int i = 0; i < std::max(1, n); ++i) used[i].store(0);
    fault_per_device.assign(std::max(1, n), 0);
    const Config& c = config();
    if (c.fault_count > 0) {
      if (c.fault_device < 0) fault_any = c.fault_count;
      else if (c.fault_device < n) fault_per_device[c.fault_device] = c.fault_count;
    }
  }
};
MemoryState& mem() {
  static MemoryState* m = new MemoryState();
  return *m;
}

bool take_injected_fault(int device) {
  MemoryState& m = mem();
  std::lock_guard<std::mutex> lk(m.fault_mu);
  if (m.fault_per_device[device] > 0) {
    --m.fault_per_device[device];
    return true;
  }
  if (m.fault_any > 0) {
    --m.fault_any;
    return true;
  }
  return false;
}

// Gets `bytes` (a multiple of kAlign) of host memory; *mapped receives the mmap length (0 = heap).
// Device memory is always page-mapped, as HBM is handed out by a device page table: every device
// malloc/free costs a mapping change (which is what the caching allocator exists to avoid).
void* host_alloc(std::size_t bytes, std::size_t* mapped, bool device) {
  if (device || bytes >= kMmapThreshold) {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t len = (bytes + page - 1) / page * page;
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    *mapped = len;
    return p;
  }
  *mapped = 0;
  return std::aligned_alloc(kAlign, bytes);
}

void host_release(void* p, std::size_t mapped) {
  if (mapped != 0) munmap(p, mapped);
  else std::free(p);
}

void register_alloc(void* p, const Allocation& a) {
  MemoryState& m = mem();
  std::unique_lock<std::shared_mutex> lk(m.mu);
  m.allocs[reinterpret_cast<std::uintptr_t>(p)] = a;
}

// Removes the allocation based exactly at p, if it has type `type`. Returns false otherwise.
bool unregister_alloc(void* p, MemoryType type, Allocation* out) {
  MemoryState& m = mem();
  std::unique_lock<std::shared_mutex> lk(m.mu);
  auto it = m.allocs.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == m.allocs.end() || it->second.type != type) return false;
  *out = it->second;
  m.allocs.erase(it);
  return true;
}

// Explains why `p` cannot be freed by `fn` as memory of type `want`.
Status bad_free(const char* fn, const void* p, MemoryType want) {
  AllocInfo info;
  if (find_allocation(p, &info)) {
    if (info.base != p) {
      return fail(Status::kInvalidValue, "%s: pointer %p is inside the allocation at %p (expected its base pointer)",
                  fn, p, static_cast<void*>(info.base));
    }
    if (info.type != want) {
      return fail(Status::kInvalidValue, "%s: pointer %p is %s memory (expected %s; use %s)", fn, p,
                  info.type == MemoryType::kHost ? "pinned host" : "device",
                  want == MemoryType::kHost ? "pinned host memory" : "device memory",
                  info.type == MemoryType::kHost ? "free_host" : "free_device");
    }
  }
  return fail(Status::kInvalidHandle, "%s: pointer %p was not allocated by %s (or was already freed)", fn, p,
              want == MemoryType::kHost ? "malloc_host" : "malloc_device");
}

Status oom(int device, std::size_t bytes, const char* why) {
  const std::size_t cap = config().hbm_bytes;
  const std::size_t used = mem().used[device].load();
  return fail(Status::kOutOfMemory,
              "malloc_device: out of memory on device %d%s: tried to allocate %zu bytes; capacity %zu bytes, %zu "
              "bytes in use",
              device, why, bytes, cap, used);
}

}  // namespace

bool find_allocation(const void* p, AllocInfo* info) {
  if (p == nullptr) return false;
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  MemoryState& m = mem();
  std::shared_lock<std::shared_mutex> lk(m.mu);
  auto it = m.allocs.upper_bound(addr);
  if (it == m.allocs.begin()) return false;
  --it;
  if (addr >= it->first + it->second.size) return false;
  info->type = it->second.type;
  info->device = it->second.device;
  info->base = reinterpret_cast<char*>(it->first);
  info->size = it->second.size;
  info->imported = it->second.imported;
  return true;
}

}  // namespace detail

using detail::fail;

Status malloc_device(int device, void** ptr, std::size_t bytes) {
  NPU_SIM_CHECK(ptr != nullptr, Status::kInvalidValue, "malloc_device: ptr is null (expected a pointer)");
  NPU_SIM_RETURN_IF_ERROR(detail::check_device("malloc_device", device));
  *ptr = nullptr;
  if (bytes == 0) return Status::kSuccess;  // as cudaMalloc(0): success, null pointer
  if (detail::take_injected_fault(device)) return detail::oom(device, bytes, " (injected fault)");
  const std::size_t cap = detail::config().hbm_bytes;
  if (bytes > cap) return detail::oom(device, bytes, "");
  const std::size_t rounded = (bytes + detail::kAlign - 1) / detail::kAlign * detail::kAlign;
  std::atomic<std::size_t>& used = detail::mem().used[device];
  std::size_t cur = used.load();
  do {
    if (rounded > cap - cur) return detail::oom(device, bytes, "");
  } while (!used.compare_exchange_weak(cur, cur + rounded));
  std::size_t mapped = 0;
  void* p = detail::arena_alloc(device, rounded, &mapped);
  const bool arena = p != nullptr;
  if (!arena) p = detail::host_alloc(rounded, &mapped, /*device=*/true);
  if (p == nullptr) {
    used.fetch_sub(rounded);
    return detail::oom(device, bytes, " (the host could not reserve the memory)");
  }
  detail::register_alloc(p, detail::Allocation{bytes, rounded, mapped, arena, MemoryType::kDevice, device});
  if (SmiDevice* smi = detail::smi_device(device)) smi->hbm_used.fetch_add(rounded, std::memory_order_relaxed);
  detail::counters().device_mallocs.fetch_add(1, std::memory_order_relaxed);
  *ptr = p;
  return Status::kSuccess;
}

Status free_device(void* ptr) {
  if (ptr == nullptr) return Status::kSuccess;
  detail::AllocInfo info;
  if (!detail::find_allocation(ptr, &info) || info.base != ptr || info.type != MemoryType::kDevice) {
    return detail::bad_free("free_device", ptr, MemoryType::kDevice);
  }
  NPU_SIM_CHECK(!info.imported, Status::kInvalidValue,
                "free_device: pointer %p is another process's device memory (opened with ipc_open_memory; use "
                "ipc_close_memory)",
                ptr);
  // As cudaFree: queued work of the device may still use the memory, so let it finish first.
  detail::wait_streams_idle(info.device);
  detail::Allocation a;
  if (!detail::unregister_alloc(ptr, MemoryType::kDevice, &a)) {
    return detail::bad_free("free_device", ptr, MemoryType::kDevice);
  }
  if (a.arena) detail::arena_free(a.device, ptr, a.mapped);
  else detail::host_release(ptr, a.mapped);
  detail::mem().used[a.device].fetch_sub(a.accounted);
  if (SmiDevice* smi = detail::smi_device(a.device)) smi->hbm_used.fetch_sub(a.accounted, std::memory_order_relaxed);
  detail::counters().device_frees.fetch_add(1, std::memory_order_relaxed);
  return Status::kSuccess;
}

Status ipc_open_memory(int device, const char* path, std::size_t offset, std::size_t bytes, void** ptr) {
  constexpr const char* fn = "ipc_open_memory";
  NPU_SIM_CHECK(ptr != nullptr && path != nullptr, Status::kInvalidValue, "%s: ptr and path must not be null", fn);
  NPU_SIM_RETURN_IF_ERROR(detail::check_device(fn, device));
  NPU_SIM_CHECK(bytes > 0, Status::kInvalidValue, "%s: bytes must be > 0", fn);
  *ptr = nullptr;
  const int fd = ::open(path, O_RDWR | O_CLOEXEC);
  NPU_SIM_CHECK(fd >= 0, Status::kInvalidHandle,
                "%s: cannot open the shared device memory %s: %s (has the process that shared it exited?)", fn, path,
                std::strerror(errno));
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t delta = offset % page;
  const std::size_t len = (delta + bytes + page - 1) / page * page;
  void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset - delta));
  const int err = errno;
  ::close(fd);  // the mapping keeps the memory alive, even after the sharing process exits
  NPU_SIM_CHECK(m != MAP_FAILED, Status::kInvalidValue, "%s: cannot map %zu bytes at offset %zu of %s: %s", fn, bytes,
                offset, path, std::strerror(err));
  char* base = static_cast<char*>(m) + delta;
  detail::Allocation a;
  a.size = bytes;
  a.mapped = len;
  a.type = MemoryType::kDevice;
  a.device = device;
  a.imported = true;
  a.map_delta = delta;
  detail::register_alloc(base, a);
  *ptr = base;
  return Status::kSuccess;
}

Status ipc_close_memory(void* ptr) {
  constexpr const char* fn = "ipc_close_memory";
  detail::AllocInfo info;
  NPU_SIM_CHECK(detail::find_allocation(ptr, &info) && info.base == ptr && info.imported, Status::kInvalidHandle,
                "%s: pointer %p was not opened by ipc_open_memory (or was already closed)", fn, ptr);
  detail::wait_streams_idle(info.device);  // queued work may still read or write it
  detail::Allocation a;
  NPU_SIM_CHECK(detail::unregister_alloc(ptr, MemoryType::kDevice, &a), Status::kInvalidHandle,
                "%s: pointer %p was closed concurrently", fn, ptr);
  munmap(static_cast<char*>(ptr) - a.map_delta, a.mapped);
  return Status::kSuccess;
}

Status malloc_host(void** ptr, std::size_t bytes) {
  NPU_SIM_CHECK(ptr != nullptr, Status::kInvalidValue, "malloc_host: ptr is null (expected a pointer)");
  *ptr = nullptr;
  if (bytes == 0) return Status::kSuccess;
  NPU_SIM_CHECK(bytes <= (std::size_t{1} << 46), Status::kOutOfMemory,
                "malloc_host: out of host memory: tried to allocate %zu bytes", bytes);
  const std::size_t rounded = (bytes + detail::kAlign - 1) / detail::kAlign * detail::kAlign;
  std::size_t mapped = 0;
  void* p = detail::host_alloc(rounded, &mapped, /*device=*/false);
  NPU_SIM_CHECK(p != nullptr, Status::kOutOfMemory, "malloc_host: out of host memory: tried to allocate %zu bytes",
                bytes);
  detail::register_alloc(p, detail::Allocation{bytes, rounded, mapped, false, MemoryType::kHost, -1});
  *ptr = p;
  return Status::kSuccess;
}

Status free_host(void* ptr) {
  if (ptr == nullptr) return Status::kSuccess;
  detail::AllocInfo info;
  if (!detail::find_allocation(ptr, &info) || info.base != ptr || info.type != MemoryType::kHost) {
    return detail::bad_free("free_host", ptr, MemoryType::kHost);
  }
  detail::wait_streams_idle(-1);  // as cudaFreeHost: async copies may still read or write it
  detail::Allocation a;
  if (!detail::unregister_alloc(ptr, MemoryType::kHost, &a)) {
    return detail::bad_free("free_host", ptr, MemoryType::kHost);
  }
  detail::host_release(ptr, a.mapped);
  return Status::kSuccess;
}

Status mem_get_info(int device, std::size_t* free_bytes, std::size_t* total_bytes) {
  NPU_SIM_CHECK(free_bytes != nullptr, Status::kInvalidValue, "mem_get_info: free_bytes is null (expected a pointer)");
  NPU_SIM_CHECK(total_bytes != nullptr, Status::kInvalidValue,
                "mem_get_info: total_bytes is null (expected a pointer)");
  NPU_SIM_RETURN_IF_ERROR(detail::check_device("mem_get_info", device));
  const std::size_t cap = detail::config().hbm_bytes;
  const std::size_t used = detail::mem().used[device].load();
  *total_bytes = cap;
  *free_bytes = used >= cap ? 0 : cap - used;
  return Status::kSuccess;
}

Status pointer_get_attributes(const void* ptr, PointerAttributes* attrs) {
  NPU_SIM_CHECK(attrs != nullptr, Status::kInvalidValue,
                "pointer_get_attributes: attrs is null (expected a pointer)");
  detail::AllocInfo info;
  if (!detail::find_allocation(ptr, &info)) {
    *attrs = PointerAttributes{MemoryType::kUnregistered, -1, nullptr, 0};
    return Status::kSuccess;
  }
  *attrs = PointerAttributes{info.type, info.device, info.base, info.size};
  return Status::kSuccess;
}

void inject_malloc_failures(int device, int count) {
  detail::MemoryState& m = detail::mem();
  std::lock_guard<std::mutex> lk(m.fault_mu);
  if (count < 0) count = 0;
  if (device < 0) m.fault_any = count;
  else if (device < static_cast<int>(m.fault_per_device.size())) m.fault_per_device[device] = count;
}

}  // namespace npu_sim
