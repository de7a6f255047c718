// The npu's Kineto activity profiler (REGISTER_PRIVATEUSE1_PROFILER): under torch.profiler with
// ProfilerActivity.PrivateUse1 every kernel launch and copy becomes a device activity on its device's stream track,
// linked to the op that launched it (so key_averages() shows its device time), carrying its GM bytes,
// FLOPs and modeled NPU time. The source is the runtime's launch records: a session turns recording on,
// tags each launch with the correlation id of the op running on the launching thread, and turns the
// records of its window into activities.
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <GenericTraceActivity.h>
#include <IActivityProfiler.h>
#include <libkineto.h>
#include <output_base.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include "core/npu_stream.h"
#include "npu_sim/runtime.h"

namespace torch_npu_sim {
namespace {

// The correlation ids of the ops running on this thread (nested ops push in turn); the top one tags the
// thread's launches.
thread_local std::vector<std::uint64_t> t_correlation;

// Copies and memsets are recorded under these names (backend_sim's memcpy.cpp); everything else is a kernel.
libkineto::ActivityType activity_type(const std::string& name) {
  if (name.rfind("memcpy_", 0) == 0) return libkineto::ActivityType::GPU_MEMCPY;
  if (name == "memset") return libkineto::ActivityType::GPU_MEMSET;
  return libkineto::ActivityType::CONCURRENT_KERNEL;
}

void set_tag_from_stack() { npu_sim::set_launch_tag(t_correlation.empty() ? 0 : t_correlation.back()); }

class NpuKinetoSession final : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    was_recording_ = npu_sim::launch_recording();
    if (!was_recording_) (void)npu_sim::set_launch_recording(true);
    start_launches_ = npu_sim::get_launch_totals().launches;
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    // Kernels still queued finish before their records are read (the profiler's own stop also syncs).
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) (void)npu_sim::device_synchronize(d);
    const npu_sim::LaunchTotals t = npu_sim::get_launch_totals();
    std::vector<npu_sim::LaunchRecord> all = npu_sim::get_launch_records();
    const std::uint64_t n = std::min<std::uint64_t>(t.launches - start_launches_, all.size());
    records_.assign(all.end() - static_cast<std::ptrdiff_t>(n), all.end());
    if (!was_recording_) (void)npu_sim::set_launch_recording(false);
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return {}; }

  void processTrace(libkineto::ActivityLogger& logger) override { processTrace(logger, nullptr, 0, 0); }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked, int64_t,
                    int64_t) override {
    for (const auto& r : records_) {
      buffer_->emplace_activity(buffer_->span, activity_type(r.kernel), r.kernel);
      libkineto::GenericTraceActivity& a = *buffer_->activities.back();
      a.startTime = r.start_ns;
      a.endTime = r.end_ns;
      a.device = r.device;
      a.resource = static_cast<int32_t>(r.stream_id);
      a.id = static_cast<int32_t>(r.tag);
      if (r.tag != 0) {
        a.flow.id = static_cast<uint32_t>(r.tag);
        a.flow.type = libkineto::kLinkAsyncCpuGpu;
        a.flow.start = 0;
        if (linked) a.linked = linked(static_cast<int32_t>(r.tag));
      }
      a.addMetadata("device", r.device);
      a.addMetadata("stream", r.stream_id);
      a.addMetadata("block_dim", r.block_dim);
      a.addMetadata("gm_read_bytes", r.gm_read);
      a.addMetadata("gm_write_bytes", r.gm_write);
      a.addMetadata("cube_flops", r.cube_flops);
      a.addMetadata("vector_flops", r.vector_flops);
      a.addMetadata("modeled_npu_us", npu_sim::modeled_time_ns(r) / 1e3);
      if (r.failed) a.addMetadataQuoted("failed", "true");
      streams_[{r.device, r.stream_id}] = true;
      logger.handleActivity(a);  // the buffer keeps it alive, at a stable address, until the trace is done
    }
    status_ = libkineto::TraceStatus::READY;
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{0, 0, "npu", "Ascend910B-sim"});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> out;
    for (const auto& [key, _] : streams_) {
      const auto [device, stream] = key;
      out.push_back(libkineto::ResourceInfo{static_cast<int64_t>(stream), static_cast<int64_t>(stream), device,
                                            "npu " + std::to_string(device) + " stream " + std::to_string(stream)});
    }
    return out;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return std::move(buffer_); }

  void pushCorrelationId(uint64_t id) override {
    t_correlation.push_back(id);
    set_tag_from_stack();
  }
  void popCorrelationId() override {
    if (!t_correlation.empty()) t_correlation.pop_back();
    set_tag_from_stack();
  }

 private:
  bool was_recording_ = false;
  std::uint64_t start_launches_ = 0;
  std::vector<npu_sim::LaunchRecord> records_;
  std::map<std::pair<int, std::uint64_t>, bool> streams_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
};

class NpuKinetoProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<libkineto::ActivityType>& availableActivities() const override { return types_; }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<libkineto::ActivityType>&,
                                                                 const libkineto::Config&) override {
    return std::make_unique<NpuKinetoSession>();
  }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t, int64_t,
                                                                 const std::set<libkineto::ActivityType>& types,
                                                                 const libkineto::Config& config) override {
    return configure(types, config);
  }

 private:
  std::string name_ = "npu_sim";
  std::set<libkineto::ActivityType> types_{libkineto::ActivityType::CONCURRENT_KERNEL,
                                           libkineto::ActivityType::GPU_MEMCPY, libkineto::ActivityType::GPU_MEMSET};
};

}  // namespace

REGISTER_PRIVATEUSE1_PROFILER(NpuKinetoProfiler);

}  // namespace torch_npu_sim
