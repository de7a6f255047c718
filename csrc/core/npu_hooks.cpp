// PrivateUse1 hooks: availability, device count/current device, pointers, pinned memory, generators,
// storage resize. Registered from a static initialiser when the extension loads.
#include <ATen/detail/PrivateUse1HooksInterface.h>

#include "aten/npu_resize.h"
#include "core/npu_allocator.h"
#include "core/npu_error.h"
#include "core/npu_generator.h"
#include "core/npu_stream.h"

namespace torch_npu_sim {
namespace {

struct NPUHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex device) const override {
    return device >= 0 && device < device_count();
  }
  void init() const override {
    int n = 0;
    NPU_CHECK(npu_sim::get_device_count(&n));
  }
  c10::DeviceIndex deviceCount() const override { return device_count(); }
  void setCurrentDevice(c10::DeviceIndex device) const override { set_device(device); }
  c10::DeviceIndex getCurrentDevice() const override { return current_device(); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const auto old = current_device();
    if (device >= 0 && device != old) set_device(device);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override { return exchangeDevice(device); }
  bool isPinnedPtr(const void* data) const override { return is_pinned_ptr(data); }
  at::Allocator* getPinnedMemoryAllocator() const override { return host_allocator(); }
  at::Device getDeviceFromPtr(void* data) const override {
    npu_sim::PointerAttributes attrs{};
    NPU_CHECK(npu_sim::pointer_get_attributes(data, &attrs));
    TORCH_CHECK(attrs.type == npu_sim::MemoryType::kDevice, "getDeviceFromPtr: pointer ", data,
                " is not NPU device memory");
    return at::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(attrs.device));
  }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device) const override {
    return default_generator(device);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device) const override { return new_generator(device); }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override {
    resize_storage_bytes(storage, new_bytes);
  }
};

const bool registered = [] {
  at::RegisterPrivateUse1HooksInterface(new NPUHooks());  // owned by the registry for the process
  return true;
}();

}  // namespace
}  // namespace torch_npu_sim
