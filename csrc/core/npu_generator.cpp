// Counter-based per-device generator (see npu_generator.h) and the per-device default instances.
#include "core/npu_generator.h"

#include <ATen/Utils.h>
#include <c10/core/TensorImpl.h>

#include <cstring>
#include <deque>
#include <mutex>

#include "core/npu_stream.h"

namespace torch_npu_sim {

NPUGeneratorImpl::NPUGeneratorImpl(c10::DeviceIndex device, uint64_t seed)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(seed) {}

void NPUGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}
void NPUGeneratorImpl::set_offset(uint64_t offset) { offset_ = offset; }
uint64_t NPUGeneratorImpl::get_offset() const { return offset_; }
uint64_t NPUGeneratorImpl::current_seed() const { return seed_; }
uint64_t NPUGeneratorImpl::seed() {
  set_current_seed(c10::detail::getNonDeterministicRandom(/*is_cuda=*/true));
  return seed_;
}

void NPUGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  TORCH_CHECK(new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>() &&
                  new_state.device().type() == c10::DeviceType::CPU,
              "set_rng_state: expected a CPU torch.uint8 state tensor, got ", new_state.dtype(), " on ",
              new_state.device());
  TORCH_CHECK(static_cast<size_t>(new_state.numel()) == 2 * sizeof(uint64_t),
              "set_rng_state: expected an NPU generator state of 16 bytes, got ", new_state.numel());
  const auto* bytes = static_cast<const uint8_t*>(new_state.data());
  std::memcpy(&seed_, bytes, sizeof(uint64_t));
  std::memcpy(&offset_, bytes + sizeof(uint64_t), sizeof(uint64_t));
}

c10::intrusive_ptr<c10::TensorImpl> NPUGeneratorImpl::get_state() const {
  auto state = at::detail::empty_cpu({static_cast<int64_t>(2 * sizeof(uint64_t))}, at::kByte, std::nullopt,
                                     std::nullopt, std::nullopt, std::nullopt);
  auto* bytes = state.data_ptr<uint8_t>();
  std::memcpy(bytes, &seed_, sizeof(uint64_t));
  std::memcpy(bytes + sizeof(uint64_t), &offset_, sizeof(uint64_t));
  return state.getIntrusivePtr();
}

std::pair<uint64_t, uint64_t> NPUGeneratorImpl::philox_engine_inputs(uint64_t increment) {
  increment = ((increment + 3) / 4) * 4;
  const uint64_t offset = offset_;
  offset_ += increment;
  return {seed_, offset};
}

std::pair<uint64_t, uint64_t> reserve_philox(const std::optional<at::Generator>& gen, c10::DeviceIndex device,
                                             uint64_t increment) {
  auto* g = at::get_generator_or_default<NPUGeneratorImpl>(gen, default_generator(device));
  std::lock_guard<std::mutex> lock(g->mutex_);
  return g->philox_engine_inputs(increment);
}

NPUGeneratorImpl* NPUGeneratorImpl::clone_impl() const {
  auto* gen = new NPUGeneratorImpl(device().index(), seed_);
  gen->set_offset(offset_);
  return gen;
}

const at::Generator& default_generator(c10::DeviceIndex device) {
  static std::once_flag once;
  static std::deque<at::Generator>* generators = nullptr;  // one per device, lives for the process
  std::call_once(once, [] {
    generators = new std::deque<at::Generator>();
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      generators->push_back(at::make_generator<NPUGeneratorImpl>(d));
    }
  });
  device = resolve_device(device, "default_generator");
  return (*generators)[device];
}

at::Generator new_generator(c10::DeviceIndex device) {
  device = resolve_device(device, "Generator");
  return at::make_generator<NPUGeneratorImpl>(device);
}

}  // namespace torch_npu_sim

