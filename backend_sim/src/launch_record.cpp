// Launch records: the process-wide bounded buffer of per-launch GM traffic and FLOP counts, its running
// totals, and the switch that turns recording on and off.
//
// Note [Launch record locking]
// `Records::mu` guards the buffer, the capacity and the totals. It is a leaf: held only to push/pop a
// record, copy the buffer out or zero it; nothing under it blocks or takes another runtime lock. Stream
// workers take it once per recorded launch (after the launch's blocks are done, before the launch
// counts as complete), so an API caller must never hold it while waiting for a stream (none does).
// The on/off switch is an atomic read without the lock (one relaxed load per kernel op); the per-launch
// accumulators are relaxed atomics owned by the worker's run_op and never touched under `mu`.
#include <algorithm>
#include <cstdlib>
#include <deque>

#include "internal.h"

namespace npu_sim {
namespace detail {
namespace {

struct Records {
  std::atomic<bool> on{false};
  std::mutex mu;
  std::deque<LaunchRecord> buffer;                      // guarded by mu: oldest first
  std::size_t capacity = kDefaultLaunchRecordCapacity;  // guarded by mu
  LaunchTotals totals{};                                // guarded by mu
};
Records& records() {
  static Records* r = new Records();  // process lifetime: workers may record during exit
  return *r;
}

// Under mu: drops the oldest records beyond the capacity.
void trim_locked(Records& r) {
  while (r.buffer.size() > r.capacity) {
    r.buffer.pop_front();
    ++r.totals.dropped;
  }
}

}  // namespace

bool recording_on() { return records().on.load(std::memory_order_relaxed); }

void append_launch_record(const char* kernel, int device, Stream stream, std::uint64_t stream_id,
                          std::uint64_t launch_seq, std::uint32_t block_dim, const LaunchAccumulators& acc,
                          bool failed, std::int64_t start_ns, std::int64_t end_ns, std::uint64_t tag) {
  constexpr auto rx = std::memory_order_relaxed;  // the blocks are done: run_blocks synchronised with them
  LaunchRecord rec{kernel,
                   device,
                   stream,
                   stream_id,
                   launch_seq,
                   block_dim,
                   acc.gm_read.load(rx),
                   acc.gm_write.load(rx),
                   acc.cube_flops.load(rx),
                   acc.vector_flops.load(rx),
                   failed,
                   start_ns,
                   end_ns,
                   tag};
  Records& r = records();
  std::lock_guard<std::mutex> lk(r.mu);
  LaunchTotals& t = r.totals;
  ++t.launches;
  t.failed += failed ? 1 : 0;
  t.gm_read += rec.gm_read;
  t.gm_write += rec.gm_write;
  t.cube_flops += rec.cube_flops;
  t.vector_flops += rec.vector_flops;
  r.buffer.push_back(std::move(rec));
  trim_locked(r);
}

}  // namespace detail

Status set_launch_recording(bool on, std::size_t capacity) {
  NPU_SIM_CHECK(capacity >= 1, Status::kInvalidValue,
                "set_launch_recording: capacity is 0 (expected at least one record)");
  detail::Records& r = detail::records();
  {
    std::lock_guard<std::mutex> lk(r.mu);
    r.capacity = capacity;
    detail::trim_locked(r);
  }
  r.on.store(on, std::memory_order_relaxed);
  return Status::kSuccess;
}

bool launch_recording() { return detail::recording_on(); }

std::vector<LaunchRecord> get_launch_records() {
  detail::Records& r = detail::records();
  std::lock_guard<std::mutex> lk(r.mu);
  return std::vector<LaunchRecord>(r.buffer.begin(), r.buffer.end());
}

LaunchTotals get_launch_totals() {
  detail::Records& r = detail::records();
  std::lock_guard<std::mutex> lk(r.mu);
  return r.totals;
}

void clear_launch_records() {
  detail::Records& r = detail::records();
  std::lock_guard<std::mutex> lk(r.mu);
  r.buffer.clear();
  r.totals = LaunchTotals{};
}

}  // namespace npu_sim

namespace npu_sim {

namespace {
thread_local std::uint64_t t_launch_tag = 0;

double env_double(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || v[0] == '\0') return fallback;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  return end != v && *end == '\0' && d > 0 ? d : fallback;
}
}  // namespace

void set_launch_tag(std::uint64_t tag) { t_launch_tag = tag; }
std::uint64_t launch_tag() { return t_launch_tag; }

Roofline roofline() {
  static const Roofline r{env_double("NPU_SIM_HBM_GBPS", 1600.0) * 1e9, env_double("NPU_SIM_CUBE_TFLOPS", 313.0) * 1e12,
                          env_double("NPU_SIM_VECTOR_TFLOPS", 9.8) * 1e12, std::max(1, detail::config().ai_cores)};
  return r;
}

double modeled_time_ns(const LaunchRecord& rec) {
  // Every AI core: a launch's block_dim is how the simulator slices the work over the host's threads, not
  // how an NPU kernel would tile it over its cores.
  const Roofline r = roofline();
  const double mem = static_cast<double>(rec.gm_read + rec.gm_write) / r.hbm_bytes_per_s;
  const double cube = static_cast<double>(rec.cube_flops) / r.cube_flops_per_s;
  const double vec = static_cast<double>(rec.vector_flops) / r.vector_flops_per_s;
  return std::max({mem, cube, vec}) * 1e9;
}

}  // namespace npu_sim
