// DeviceGuardImpl for PrivateUse1: devices, streams and events mapped onto the runtime, so torch.Stream,
// torch.Event, torch.accelerator.* and every DeviceGuard in ATen work for "npu".
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "core/npu_allocator.h"
#include "npu_kernels/dtype.h"

namespace torch_npu_sim {
namespace {

npu_sim::Event as_event(void* event) { return static_cast<npu_sim::Event>(event); }

struct NPUGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;

  c10::DeviceType type() const override { return kType; }

  c10::Device exchangeDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kType, "expected an npu device, got ", d);
    const auto old = current_device();
    if (old != d.index()) set_device(d.index());
    return c10::Device(kType, old);
  }
  c10::Device getDevice() const override { return c10::Device(kType, current_device()); }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kType, "expected an npu device, got ", d);
    set_device(d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0 && d.index() < device_count()) (void)npu_sim::set_device(d.index());
  }
  c10::DeviceIndex deviceCount() const noexcept override { return device_count(); }

  // torch.accelerator.get_device_capability: the dtypes the device can hold and convert between, as the
  // kernel library's dtype table says (the same table every op checks).
  c10::DeviceCapability getDeviceCapability(c10::Device d) const override {
    check_device(d.index() < 0 ? current_device() : d.index(), "get_device_capability");
    c10::DeviceCapability cap;
#define NPU_SIM_CAPABILITY(_, name) \
  cap.capability_data.supported_scalar_types.has_##name = npu_kernels::dtype_supported(static_cast<int>(c10::ScalarType::name));
    AT_FORALL_SCALAR_TYPES_WITH_COMPLEX_AND_QINTS(NPU_SIM_CAPABILITY)
#undef NPU_SIM_CAPABILITY
    return cap;
  }

  c10::Stream getStream(c10::Device d) const override { return current_stream(d.index()); }
  c10::Stream getDefaultStream(c10::Device d) const override { return default_stream(d.index()); }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*high_priority*/) const override {
    return stream_from_pool(d.index());
  }
  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override { return stream_from_pool(d.index()); }
  c10::Stream exchangeStream(c10::Stream s) const override { return exchange_stream(s); }
  bool queryStream(const c10::Stream& s) const override {
    const auto st = npu_sim::stream_query(native_stream(s));
    if (st == npu_sim::Status::kNotReady) return false;
    NPU_CHECK(st);
    return true;
  }
  void synchronizeStream(const c10::Stream& s) const override { NPU_CHECK(npu_sim::stream_synchronize(native_stream(s))); }
  void synchronizeDevice(const c10::DeviceIndex device) const override {
    check_device(device, "synchronize");
    NPU_CHECK(npu_sim::device_synchronize(device));
  }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "Event device index ", int(device_index),
                " does not match recording stream's device index ", int(stream.device_index()), ".");
    if (*event == nullptr) {
      npu_sim::Event ev = nullptr;
      const unsigned flags = flag == c10::EventFlag::BACKEND_DEFAULT ? npu_sim::kEventEnableTiming : npu_sim::kEventDefault;
      NPU_CHECK(npu_sim::event_create(&ev, flags));
      *event = ev;
    }
    NPU_CHECK(npu_sim::event_record(as_event(*event), native_stream(stream)));
  }
  void block(void* event, const c10::Stream& stream) const override {
    if (event == nullptr) return;
    NPU_CHECK(npu_sim::stream_wait_event(native_stream(stream), as_event(event)));
  }
  bool queryEvent(void* event) const override {
    if (event == nullptr) return true;
    const auto st = npu_sim::event_query(as_event(event));
    if (st == npu_sim::Status::kNotReady) return false;
    NPU_CHECK(st);
    return true;
  }
  void synchronizeEvent(void* event) const override {
    if (event == nullptr) return;
    NPU_CHECK(npu_sim::event_synchronize(as_event(event)));
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*device_index*/) const override {
    TORCH_CHECK(start && end, "elapsed_time: both events must have been recorded before calculating elapsed time");
    float ms = 0;
    NPU_CHECK(npu_sim::event_elapsed_time(&ms, as_event(start), as_event(end)));
    return ms;
  }
  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    if (event != nullptr) (void)npu_sim::event_destroy(as_event(event));
  }
  void recordDataPtrOnStream(const c10::DataPtr& data_ptr, const c10::Stream& stream) const override {
    record_stream(data_ptr, stream);
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, NPUGuardImpl);

}  // namespace
}  // namespace torch_npu_sim
