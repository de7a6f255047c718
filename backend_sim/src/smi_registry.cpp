// This process's npu-smi registry file (layout and lifetime: npu_sim/smi_registry.h). Created once, on the
// first device use, mapped for the life of the process; writers update its atomics in place.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "internal.h"
#include "npu_sim/smi_registry.h"

namespace npu_sim::detail {
namespace {

std::string smi_path() {
  const char* dir = std::getenv("NPU_SIM_SMI_DIR");
  std::string d = dir != nullptr && dir[0] != '\0' ? dir : "/dev/shm";
  return d + "/npusim-smi-" + std::to_string(getpid());
}

std::uint64_t process_start_ticks() {
  FILE* f = std::fopen("/proc/self/stat", "r");
  if (f == nullptr) return 0;
  char buf[1024];
  const std::size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');  // the command name may hold spaces and parentheses
  if (p == nullptr) return 0;
  // fields after ")": 3 state, 4 ppid, ..., 22 starttime
  unsigned long long v = 0;
  int field = 2;
  for (const char* q = p + 1; *q != '\0'; ++q) {
    if (*q == ' ') {
      ++field;
      if (field == 22) {
        v = std::strtoull(q + 1, nullptr, 10);
        break;
      }
    }
  }
  return v;
}

struct Registry {
  SmiHeader* header = nullptr;
  SmiDevice* devices = nullptr;
  std::string path;
};

Registry* create_registry() {
  auto* r = new Registry();  // process lifetime (stream workers may write during static destruction)
  const int n = std::min(device_count(), kSmiMaxDevices);
  const std::size_t bytes = sizeof(SmiHeader) + sizeof(SmiDevice) * static_cast<std::size_t>(std::max(n, 1));
  r->path = smi_path();
  const int fd = ::open(r->path.c_str(), O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return r;  // npu-smi will not see this process; nothing else depends on the file
  void* p = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
    p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  ::close(fd);
  if (p == MAP_FAILED) {
    ::unlink(r->path.c_str());
    return r;
  }
  auto* h = static_cast<SmiHeader*>(p);
  auto* devs = reinterpret_cast<SmiDevice*>(static_cast<char*>(p) + sizeof(SmiHeader));
  h->version = kSmiVersion;
  h->pid = static_cast<std::int32_t>(getpid());
  h->start_ticks = process_start_ticks();
  h->device_count = n;
  if (FILE* f = std::fopen("/proc/self/comm", "r")) {
    if (std::fgets(h->process_name, sizeof(h->process_name), f) != nullptr) {
      h->process_name[std::strcspn(h->process_name, "\n")] = '\0';
    }
    std::fclose(f);
  }
  for (int d = 0; d < n; ++d) {
    devs[d].physical_id = config().physical_ids[d];
    devs[d].hbm_capacity = config().hbm_bytes;
  }
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(h->magic, "NPUSMI\0\0", 8);  // last: a reader ignores a file without it
  r->header = h;
  r->devices = devs;
  static std::string* unlink_path = new std::string(r->path);
  std::atexit([] {
    if (!in_forked_child()) ::unlink(unlink_path->c_str());
  });
  return r;
}

}  // namespace

SmiDevice* smi_device(int device) {
  static Registry* r = create_registry();
  if (r->devices == nullptr || device < 0 || device >= r->header->device_count) return nullptr;
  return &r->devices[device];
}

}  // namespace npu_sim::detail
