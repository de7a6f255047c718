// Shareable HBM: each device's memory is carved out of one memfd-backed MAP_SHARED arena, so that
// another process of the host can map it (through /proc/<pid>/fd/<fd>) and read device buffers in place,
// as NPUs of one server read each other's HBM. A best-fit sub-allocator over page-aligned ranges hands out
// pieces of the arena; a freed range has its pages punched out of the file, which returns them to the host.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "internal.h"

namespace npu_sim {
namespace detail {
namespace {

// The arena reserves twice the HBM capacity of address space (and of sparse file), so fragmentation of the
// ranges cannot make an allocation fail while capacity is left; capacity itself is enforced by the caller.
constexpr std::size_t kArenaSlack = 2;

// One device's arena. `base`, `size` and `fd` are fixed once created; `mu_` guards the free lists. It is a
// leaf held for the list updates only (hole punching runs before it is taken); nothing waits under it.
class Arena {
 public:
  bool create(int device, std::size_t capacity) {
    page_ = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    std::size_t want = (capacity * kArenaSlack + page_ - 1) / page_ * page_;
    const std::string name = "npu_sim-hbm" + std::to_string(device);
    const int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
    if (fd < 0) return false;
    if (ftruncate(fd, static_cast<off_t>(want)) != 0) {
      close(fd);
      return false;
    }
    void* p = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (p == MAP_FAILED) {
      close(fd);
      return false;
    }
    base_ = static_cast<char*>(p);
    size_ = want;
    fd_ = fd;
    insert_free(0, want);
    return true;
  }

  // A page-aligned range of `bytes` (a multiple of the page size), or nullptr when no free range fits.
  void* take(std::size_t bytes) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = by_size_.lower_bound({bytes, 0});
    if (it == by_size_.end()) return nullptr;
    const std::size_t len = it->first, off = it->second;
    by_size_.erase(it);
    by_off_.erase(off);
    if (len > bytes) insert_free(off + bytes, len - bytes);
    return base_ + off;
  }

  // Returns [p, p + bytes) to the arena; its pages go back to the host first (a later owner reads zeros).
  void give(void* p, std::size_t bytes) {
    std::size_t off = static_cast<std::size_t>(static_cast<char*>(p) - base_);
    fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(off), static_cast<off_t>(bytes));
    std::lock_guard<std::mutex> lk(mu_);
    std::size_t len = bytes;
    auto next = by_off_.lower_bound(off);
    if (next != by_off_.end() && next->first == off + len) {  // merge with the following free range
      len += next->second;
      by_size_.erase({next->second, next->first});
      next = by_off_.erase(next);
    }
    if (next != by_off_.begin()) {  // merge with the preceding free range
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        off = prev->first;
        len += prev->second;
        by_size_.erase({prev->second, prev->first});
        by_off_.erase(prev);
      }
    }
    insert_free(off, len);
  }

  bool contains(const void* p) const {
    const char* c = static_cast<const char*>(p);
    return base_ != nullptr && c >= base_ && c < base_ + size_;
  }
  SharedRegion region() const { return SharedRegion{fd_, base_, size_}; }
  std::size_t page() const { return page_; }

 private:
  void insert_free(std::size_t off, std::size_t len) {
    by_off_[off] = len;
    by_size_.insert({len, off});
  }

  char* base_ = nullptr;
  std::size_t size_ = 0;
  std::size_t page_ = 4096;
  int fd_ = -1;
  std::mutex mu_;
  std::map<std::size_t, std::size_t> by_off_;              // free ranges: offset -> length
  std::set<std::pair<std::size_t, std::size_t>> by_size_;  // the same ranges as (length, offset)
};

// Arenas are created on a device's first allocation and live as long as the process (never destroyed:
// stream workers may outlive static destructors). `ready[d]` is set once arena d is usable.
struct Arenas {
  explicit Arenas(int n) : once(new std::once_flag[n]), arena(new Arena[n]), ready(new std::atomic<bool>[n]) {
    for (int i = 0; i < n; ++i) ready[i].store(false);
  }
  std::unique_ptr<std::once_flag[]> once;
  std::unique_ptr<Arena[]> arena;
  std::unique_ptr<std::atomic<bool>[]> ready;
};
Arenas& arenas() {
  static Arenas* a = new Arenas(std::max(1, device_count()));
  return *a;
}

Arena* arena_for(int device) {
  if (device < 0 || device >= device_count() || !config().shared_hbm) return nullptr;
  Arenas& a = arenas();
  std::call_once(a.once[device], [&] {
    if (a.arena[device].create(device, config().hbm_bytes)) a.ready[device].store(true);
  });
  return a.ready[device].load() ? &a.arena[device] : nullptr;
}

}  // namespace

void* arena_alloc(int device, std::size_t bytes, std::size_t* len) {
  Arena* a = arena_for(device);
  if (a == nullptr) return nullptr;
  *len = (bytes + a->page() - 1) / a->page() * a->page();
  return a->take(*len);
}

bool arena_free(int device, void* p, std::size_t len) {
  if (device < 0 || device >= device_count() || !arenas().ready[device].load()) return false;
  Arena& a = arenas().arena[device];
  if (!a.contains(p)) return false;
  a.give(p, len);
  return true;
}

}  // namespace detail

Status device_memory_region(int device, SharedRegion* region) {
  NPU_SIM_CHECK(region != nullptr, Status::kInvalidValue, "device_memory_region: region is null (expected a pointer)");
  NPU_SIM_RETURN_IF_ERROR(detail::check_device("device_memory_region", device));
  detail::Arena* a = detail::arena_for(device);
  NPU_SIM_CHECK(a != nullptr, Status::kNotSupported,
                "device_memory_region: device %d's memory is not shareable (NPU_SIM_SHARED_HBM=0, or the host "
                "refused a memfd arena)",
                device);
  *region = a->region();
  return Status::kSuccess;
}

}  // namespace npu_sim
