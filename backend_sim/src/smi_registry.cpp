// This process's npu-smi registry file (layout and lifetime: npu_sim/smi_registry.h). Created once, on the
// first device use, mapped for the life of the process; writers update its atomics in place.
#include <dirent.h>
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

constexpr const char* kFilePrefix = "npusim-smi-";

std::string smi_dir() {
  const char* dir = std::getenv("NPU_SIM_SMI_DIR");
  return dir != nullptr && dir[0] != '\0' ? dir : "/dev/shm";
}

// /proc/<pid>/stat's start time ("self" for this process); 0 when the process does not exist.
std::uint64_t process_start_ticks(const std::string& pid = "self") {
  FILE* f = std::fopen(("/proc/" + pid + "/stat").c_str(), "r");
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

// Removes the files of processes that died without a clean exit (SIGKILL, _exit, a crash), as npu-smi
// does when it reads them: a file goes only if it is complete (magic set) and its pid is gone or now
// belongs to a process started at another time. Without this, every killed process left 640 bytes in
// /dev/shm until the next `npu-smi info`.
void remove_stale_files(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  const std::string self = std::to_string(getpid());
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(kFilePrefix, 0) != 0) continue;
    const std::string pid = name.substr(std::strlen(kFilePrefix));
    if (pid.empty() || pid == self || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string path = dir + "/" + name;
    SmiHeader h{};
    FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) continue;
    const bool whole = std::fread(&h, sizeof(h), 1, f) == 1;
    std::fclose(f);
    if (!whole || std::memcmp(h.magic, "NPUSMI\0\0", 8) != 0 || std::to_string(h.pid) != pid) continue;
    if (process_start_ticks(pid) != h.start_ticks) ::unlink(path.c_str());
  }
  ::closedir(d);
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
  const std::string dir = smi_dir();
  remove_stale_files(dir);
  r->path = dir + "/" + kFilePrefix + std::to_string(getpid());
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
