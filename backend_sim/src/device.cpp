// Environment configuration, the device table (visible ordinal -> physical id), lazy per-device state
// (the default stream, the sticky error), device properties, the per-thread current device,
// device_synchronize and device_restart.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <pthread.h>

#include "internal.h"

namespace npu_sim {
namespace detail {
namespace {

constexpr int kDefaultDeviceCount = 8;
constexpr double kDefaultHbmGb = 16.0;
constexpr int kDefaultAiCores = 24;
constexpr int kMaxDevices = 1024;
constexpr int kMaxCoreThreads = 1024;

void warn(const char* var, const char* value, const char* expected, const char* fallback) {
  std::fprintf(stderr, "npu_sim: warning: %s='%s' is invalid (expected %s); using %s\n", var, value, expected,
               fallback);
}

// Parses a whole string as a base-10 integer in [lo, hi].
bool parse_int(const char* s, long lo, long hi, long* out) {
  if (s == nullptr || *s == '\0') return false;
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

int env_int(const char* var, int def, long lo, long hi) {
  const char* s = std::getenv(var);
  if (s == nullptr) return def;
  long v = 0;
  if (!parse_int(s, lo, hi, &v)) {
    const std::string range = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    warn(var, s, range.c_str(), ("the default " + std::to_string(def)).c_str());
    return def;
  }
  return static_cast<int>(v);
}

std::size_t env_hbm_bytes() {
  const std::size_t def = static_cast<std::size_t>(kDefaultHbmGb * 1024.0 * 1024.0 * 1024.0);
  const char* s = std::getenv("NPU_SIM_HBM_GB");
  if (s == nullptr) return def;
  char* end = nullptr;
  errno = 0;
  const double gb = std::strtod(s, &end);
  // Upper bound keeps the byte count far from size_t overflow (and from the 47-bit address space).
  if (*s == '\0' || errno != 0 || *end != '\0' || !std::isfinite(gb) || gb <= 0.0 || gb > 65536.0) {
    warn("NPU_SIM_HBM_GB", s, "a positive number of GiB, at most 65536", "the default 16");
    return def;
  }
  return static_cast<std::size_t>(gb * 1024.0 * 1024.0 * 1024.0);
}

// ASCEND_RT_VISIBLE_DEVICES: comma-separated physical ids. As in torch_npu/CUDA, an invalid entry hides
// itself and every entry after it; a duplicate is skipped. Set but empty = no visible device.
std::vector<int> visible_devices(int physical_count) {
  std::vector<int> ids;
  const char* s = std::getenv("ASCEND_RT_VISIBLE_DEVICES");
  if (s == nullptr) {
    for (int i = 0; i < physical_count; ++i) ids.push_back(i);
    return ids;
  }
  const std::string all(s);
  std::size_t pos = 0;
  while (pos <= all.size() && !all.empty()) {
    std::size_t comma = all.find(',', pos);
    if (comma == std::string::npos) comma = all.size();
    std::string item = all.substr(pos, comma - pos);
    const auto first = item.find_first_not_of(" \t");
    const auto last = item.find_last_not_of(" \t");
    item = first == std::string::npos ? std::string() : item.substr(first, last - first + 1);
    long id = -1;
    if (!parse_int(item.c_str(), 0, physical_count - 1, &id)) {
      std::fprintf(stderr,
                   "npu_sim: warning: ASCEND_RT_VISIBLE_DEVICES='%s': entry '%s' is not a device id in [0, %d); "
                   "it and the entries after it are ignored\n",
                   s, item.c_str(), physical_count);
      break;
    }
    bool dup = false;
    for (int x : ids) dup = dup || x == id;
    if (dup) {
      std::fprintf(stderr, "npu_sim: warning: ASCEND_RT_VISIBLE_DEVICES='%s': duplicate id %ld ignored\n", s, id);
    } else {
      ids.push_back(static_cast<int>(id));
    }
    pos = comma + 1;
  }
  return ids;
}

bool env_launch_blocking() {
  const char* s = std::getenv("ASCEND_LAUNCH_BLOCKING");
  if (s == nullptr || std::strcmp(s, "0") == 0 || *s == '\0') return false;
  if (std::strcmp(s, "1") == 0) return true;
  warn("ASCEND_LAUNCH_BLOCKING", s, "0 or 1", "0");
  return false;
}

void env_fault(Config* c) {
  const char* s = std::getenv("NPU_SIM_FAULT_MALLOC_FAIL");
  if (s == nullptr) return;
  const char* colon = std::strchr(s, ':');
  long dev = 0, count = 0;
  if (colon != nullptr && parse_int(std::string(s, colon).c_str(), -1, kMaxDevices, &dev) &&
      parse_int(colon + 1, 0, 1L << 30, &count)) {
    c->fault_device = static_cast<int>(dev);
    c->fault_count = static_cast<int>(count);
    return;
  }
  warn("NPU_SIM_FAULT_MALLOC_FAIL", s, "'<device>:<count>' (device -1 = any)", "no injected faults");
}

Config* load_config() {
  auto* c = new Config();
  const int physical = env_int("NPU_SIM_DEVICE_COUNT", kDefaultDeviceCount, 0, kMaxDevices);
  c->physical_ids = visible_devices(physical);
  c->hbm_bytes = env_hbm_bytes();
  c->ai_cores = env_int("NPU_SIM_AI_CORES", kDefaultAiCores, 1, 4096);
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  c->core_threads = env_int("NPU_SIM_CORE_THREADS", std::min(hw, kMaxCoreThreads), 1, kMaxCoreThreads);
  const int ub_kb = env_int("NPU_SIM_UB_KB", static_cast<int>(kDefaultUbBytes / 1024), 16, 16384);
  c->ub_bytes = static_cast<std::size_t>(ub_kb) * 1024;
  c->launch_blocking = env_launch_blocking();
  c->stream_spin_us = env_int("NPU_SIM_STREAM_SPIN_US", 50, 0, 10000);
  c->shared_hbm = env_int("NPU_SIM_SHARED_HBM", 1, 0, 1) == 1;
  env_fault(c);
  return c;
}

// One failed op, as its stream's worker recorded it.
struct Failure {
  Status status = Status::kKernelError;
  std::string message;     // the original message (callers match on its start)
  std::uint64_t seq = 0;   // the op's seq on its stream
  std::uint64_t order = 0; // DeviceErrors::recorded when it was recorded (device-wide order)
};
// The failures of one stream: its first, and its latest after that (kept so that a restart whose wait
// covers the first but not a later one leaves an error standing).
struct ErrorRecord {
  std::uint64_t stream_id = 0;        // StreamImpl::id of the stream
  std::weak_ptr<StreamImpl> stream;   // that stream (expired: destroyed and drained)
  Failure first;
  Failure latest;
  bool has_latest = false;
};

// Note [Sticky device errors]
// As on CUDA, the first asynchronous failure makes the whole device failed: a second failed kernel must
// not drop out of sight, and no result of the device may be read back as if nothing had happened, until
// the user acknowledges it (torch_npu.npu.restart_device). `errors` keeps the first failure of each
// stream, oldest first; errors.front() is the sticky error. device_restart waits for the work queued
// before it and removes only the records of that work: a failure of work another thread queues during the
// restart is not acknowledged by it and becomes the sticky error.
//
// `mu` guards `errors`. It is a leaf: held to push, copy or erase records, with no other lock taken and
// nothing waited for (stream workers take it to record a failure). `failed` mirrors !errors.empty()
// (written under mu), so a healthy device's sync calls read one atomic and take no lock.
struct DeviceErrors {
  std::mutex mu;
  std::vector<ErrorRecord> errors;   // guarded by mu: ordered by first.order
  std::uint64_t recorded = 0;        // guarded by mu: failures recorded so far
  std::atomic<bool> failed{false};   // written under mu
};

// Kernel time of one device: a leaf mutex (taken twice per kernel, never with another lock held).
struct DeviceBusy {
  std::mutex mu;
  int running = 0;             // guarded by mu: kernels of the device running now
  std::uint64_t since = 0;     // guarded by mu: when `running` last went from 0 to 1
  std::uint64_t busy = 0;      // guarded by mu: ns with running > 0 before `since`
};

std::uint64_t steady_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now().time_since_epoch()).count());
}

// Lazy per-device state. The array is sized once (device count is fixed) and never destroyed, so
// worker threads can outlive static destruction. Each slot is initialised under its own once_flag.
struct DeviceState {
  std::once_flag once;
  std::shared_ptr<StreamImpl> default_stream;  // written once under `once`, read-only afterwards
  DeviceErrors errors;                         // see Note [Sticky device errors]
  DeviceBusy busy;                             // kernel time, for device_busy_time
};

DeviceState* device_states() {
  static DeviceState* states = new DeviceState[std::max(1, device_count())];
  return states;
}

thread_local int t_current_device = 0;

}  // namespace

namespace {
std::atomic<bool> g_forked_child{false};
}  // namespace

bool in_forked_child() { return g_forked_child.load(std::memory_order_relaxed); }

const Config& config() {
  static const Config* c = [] {
    pthread_atfork(nullptr, nullptr, [] { g_forked_child.store(true, std::memory_order_relaxed); });
    return load_config();
  }();  // process-lifetime singleton, intentionally leaked
  return *c;
}

Status check_device(const char* fn, int device) {
  const int n = device_count();
  NPU_SIM_CHECK(device >= 0 && device < n, Status::kInvalidDevice,
                "%s: device %d is out of range (%d visible devices)", fn, device, n);
  return Status::kSuccess;
}

int current_device() { return t_current_device; }

std::shared_ptr<StreamImpl> default_stream(int device) {
  DeviceState& st = device_states()[device];
  std::call_once(st.once, [&] { st.default_stream = create_stream_impl(device, /*is_default=*/true); });
  return st.default_stream;
}

void record_async_error(StreamImpl& s, std::uint64_t seq, Status status, std::string message) {
  DeviceErrors& d = device_states()[s.device].errors;
  std::lock_guard<std::mutex> lk(d.mu);
  Failure f{async_status(status), std::move(message), seq, ++d.recorded};
  for (ErrorRecord& r : d.errors) {
    if (r.stream_id == s.id) {  // the stream's first failure is kept already
      r.latest = std::move(f);
      r.has_latest = true;
      return;
    }
  }
  ErrorRecord r;
  r.stream_id = s.id;
  r.stream = s.weak_from_this();
  r.first = std::move(f);
  d.errors.push_back(std::move(r));
  d.failed.store(true, std::memory_order_release);
}

namespace {
// The sticky error as last_error_message() shows it.
Status report(int device, const Failure& r) {
  return fail_msg(r.status, r.message + " (sticky: the device stays failed until torch.npu.restart_device(" +
                                std::to_string(device) + "))");
}
}  // namespace

Status device_error(int device) {
  DeviceErrors& d = device_states()[device].errors;
  if (!d.failed.load(std::memory_order_acquire)) return Status::kSuccess;
  Failure f;
  {
    std::lock_guard<std::mutex> lk(d.mu);
    if (d.errors.empty()) return Status::kSuccess;
    f = d.errors.front().first;
  }
  return report(device, f);
}

// Each change is mirrored into the npu-smi registry (other processes read it), under the same mutex.
void kernel_began(int device) {
  DeviceBusy& b = device_states()[device].busy;
  SmiDevice* smi = smi_device(device);
  std::lock_guard<std::mutex> lk(b.mu);
  if (b.running++ == 0) {
    b.since = steady_ns();
    if (smi != nullptr) smi->busy_since.store(b.since, std::memory_order_relaxed);
  }
  if (smi != nullptr) smi->running.store(b.running, std::memory_order_release);
}

void kernel_ended(int device) {
  DeviceBusy& b = device_states()[device].busy;
  SmiDevice* smi = smi_device(device);
  std::lock_guard<std::mutex> lk(b.mu);
  if (--b.running == 0) {
    b.busy += steady_ns() - b.since;
    if (smi != nullptr) smi->busy_ns.store(b.busy, std::memory_order_relaxed);
  }
  if (smi != nullptr) smi->running.store(b.running, std::memory_order_release);
}

}  // namespace detail

Status get_device_count(int* count) {
  NPU_SIM_CHECK(count != nullptr, Status::kInvalidValue, "get_device_count: count is null (expected a pointer)");
  *count = detail::device_count();
  return Status::kSuccess;
}

Status get_device_properties(int device, DeviceProperties* props) {
  NPU_SIM_CHECK(props != nullptr, Status::kInvalidValue,
                "get_device_properties: props is null (expected a pointer)");
  NPU_SIM_RETURN_IF_ERROR(detail::check_device("get_device_properties", device));
  const detail::Config& c = detail::config();
  DeviceProperties p{};
  std::snprintf(p.name, sizeof(p.name), "%s", "Ascend910B-sim");
  p.physical_id = c.physical_ids[device];
  p.hbm_bytes = c.hbm_bytes;
  p.ai_core_count = c.ai_cores;
  p.ub_bytes = c.ub_bytes;
  p.core_threads = c.core_threads;
  *props = p;
  return Status::kSuccess;
}

Status set_device(int device) {
  NPU_SIM_RETURN_IF_ERROR(detail::check_device("set_device", device));
  detail::t_current_device = device;
  return Status::kSuccess;
}

Status get_device(int* device) {
  NPU_SIM_CHECK(device != nullptr, Status::kInvalidValue, "get_device: device is null (expected a pointer)");
  *device = detail::t_current_device;
  return Status::kSuccess;
}

Status device_synchronize(int device) {
  NPU_SIM_RETURN_IF_ERROR(detail::check_device("device_synchronize", device));
  detail::default_stream(device);  // makes sure the device exists before listing its streams
  for (const auto& s : detail::live_streams(device)) {
    NPU_SIM_RETURN_IF_ERROR(detail::wait_stream_idle("device_synchronize", *s));
  }
  return detail::device_error(device);
}

Status device_busy_time(int device, std::uint64_t* busy_ns, std::uint64_t* now_ns) {
  NPU_SIM_RETURN_IF_ERROR(detail::check_device("device_busy_time", device));
  NPU_SIM_CHECK(busy_ns != nullptr && now_ns != nullptr, Status::kInvalidValue, "device_busy_time: null output");
  detail::DeviceBusy& b = detail::device_states()[device].busy;
  std::lock_guard<std::mutex> lk(b.mu);
  *now_ns = detail::steady_ns();
  *busy_ns = b.busy + (b.running > 0 ? *now_ns - b.since : 0);
  return Status::kSuccess;
}

Status device_get_error(int device) {
  NPU_SIM_RETURN_IF_ERROR(detail::check_device("device_get_error", device));
  return detail::device_error(device);
}

Status device_restart(int device) {
  constexpr const char* fn = "device_restart";
  NPU_SIM_RETURN_IF_ERROR(detail::check_device(fn, device));
  NPU_SIM_CHECK_NOT_FORKED(fn);
  detail::default_stream(device);
  detail::DeviceErrors& d = detail::device_states()[device].errors;
  // The streams whose queued work the restart covers: the live ones, and the sources of recorded errors
  // that are no longer live (being destroyed: they drain; gone: they ran everything). Sources are taken
  // first, so one missing from the later live list was destroyed, not created meanwhile.
  std::vector<std::pair<std::uint64_t, std::weak_ptr<StreamImpl>>> sources;
  {
    std::lock_guard<std::mutex> lk(d.mu);
    for (const detail::ErrorRecord& r : d.errors) sources.emplace_back(r.stream_id, r.stream);
  }
  std::vector<std::shared_ptr<StreamImpl>> streams = detail::live_streams(device);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> covered;  // stream id -> seq waited for
  for (const auto& src : sources) {
    bool live = false;
    for (const auto& s : streams) live = live || s->id == src.first;
    if (live) continue;
    if (auto s = src.second.lock()) streams.push_back(std::move(s));
    else covered.emplace_back(src.first, UINT64_MAX);
  }
  for (const auto& s : streams) {
    NPU_SIM_CHECK(!detail::on_worker_of(*s), Status::kInvalidValue,
                  "%s: called from a function running on a stream of device %d (it would wait for itself)", fn,
                  device);
  }
  // Waits with no lock held but each stream's own mu during its done_cv wait (workers need the others).
  for (const auto& s : streams) {
    std::uint64_t target = 0;
    {
      std::lock_guard<std::mutex> lk(s->mu);
      target = s->enqueued_seq;
    }
    NPU_SIM_RETURN_IF_ERROR(detail::wait_for_seq(fn, *s, target));
    covered.emplace_back(s->id, target);
  }
  std::lock_guard<std::mutex> lk(d.mu);
  // A record whose first failure the wait covered goes, unless the stream failed again after the covered
  // work: that failure then stands (and takes its place in the device-wide order).
  std::vector<detail::ErrorRecord> kept;
  for (detail::ErrorRecord& r : d.errors) {
    std::uint64_t cut = 0;
    for (const auto& c : covered) {
      if (c.first == r.stream_id) cut = c.second;
    }
    if (r.first.seq <= cut) {
      if (!r.has_latest || r.latest.seq <= cut) continue;
      r.first = std::move(r.latest);
      r.has_latest = false;
    }
    kept.push_back(std::move(r));
  }
  d.errors.swap(kept);
  std::stable_sort(d.errors.begin(), d.errors.end(),
                   [](const detail::ErrorRecord& a, const detail::ErrorRecord& b) { return a.first.order < b.first.order; });
  d.failed.store(!d.errors.empty(), std::memory_order_release);
  return Status::kSuccess;
}

}  // namespace npu_sim
