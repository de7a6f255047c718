// The profiler's device stubs for npu (torch::profiler::impl::registerPrivateUse1Methods): timing events on the
// current stream, so torch.autograd.profiler.profile(use_device="npu") and torch.profiler give npu ops real
// host times and a device time (without them every event's time is garbage, about -7e16 us).
#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/stubs/base.h>

#include "core/npu_error.h"
#include "core/npu_stream.h"

namespace torch_npu_sim {
namespace {

namespace prof = torch::profiler::impl;

struct NpuProfilerStubs final : prof::ProfilerStubs {
  void record(c10::DeviceIndex* device, prof::ProfilerVoidEventStub* event, int64_t* cpu_ns) const override {
    const c10::DeviceIndex d = current_device();
    if (device != nullptr) *device = d;
    npu_sim::Event e = nullptr;
    NPU_CHECK(npu_sim::event_create(&e, npu_sim::kEventEnableTiming));
    // The stub owns the event; destroying it never throws (a failure there only leaks a handle).
    *event = std::shared_ptr<void>(static_cast<void*>(e), [](void* p) {
      (void)npu_sim::event_destroy(static_cast<npu_sim::Event>(p));
    });
    if (cpu_ns != nullptr) *cpu_ns = c10::getTime();
    NPU_CHECK(npu_sim::event_record(e, current_native_stream(d)));
  }

  // Microseconds of device time between two recorded events (waits for both, as CUDA's stub does).
  float elapsed(const prof::ProfilerVoidEventStub* start, const prof::ProfilerVoidEventStub* end) const override {
    auto s = static_cast<npu_sim::Event>(start->get());
    auto e = static_cast<npu_sim::Event>(end->get());
    NPU_CHECK(npu_sim::event_synchronize(s));
    NPU_CHECK(npu_sim::event_synchronize(e));
    float ms = 0.0f;
    NPU_CHECK(npu_sim::event_elapsed_time(&ms, s, e));
    return ms * 1000.0f;
  }

  // The simulator has no tracing annotation API (NVTX's role); marks and ranges are the host's own events.
  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    const c10::DeviceIndex previous = current_device();
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      set_device(d);
      op(d);
    }
    set_device(previous);
  }

  void synchronize() const override {
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) NPU_CHECK(npu_sim::device_synchronize(d));
  }
};

struct RegisterStubs {
  RegisterStubs() {
    static NpuProfilerStubs stubs;
    prof::registerPrivateUse1Methods(&stubs);
  }
} register_stubs;

}  // namespace
}  // namespace torch_npu_sim
