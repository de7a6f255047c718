// The per-device random generator: counter-based (Philox-style seed + offset), as on CUDA and NPU, so a
// kernel asks for a (seed, offset) pair and advances the offset by what it consumes.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

#include <optional>
#include <utility>

namespace torch_npu_sim {

struct NPUGeneratorImpl : public c10::GeneratorImpl {
  explicit NPUGeneratorImpl(c10::DeviceIndex device, uint64_t seed = c10::default_rng_seed_val);

  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  // State: 16 bytes of a CPU uint8 tensor, (seed, offset) little-endian, like CUDA's Philox state.
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  // Reserves `increment` counters (rounded up to 4) and returns the (seed, offset) to use.
  std::pair<uint64_t, uint64_t> philox_engine_inputs(uint64_t increment);
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

 private:
  NPUGeneratorImpl* clone_impl() const override;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

const at::Generator& default_generator(c10::DeviceIndex device);
// Reserves `increment` counters from `gen` (or `device`'s default generator) under its lock, for one launch.
std::pair<uint64_t, uint64_t> reserve_philox(const std::optional<at::Generator>& gen, c10::DeviceIndex device,
                                             uint64_t increment);
at::Generator new_generator(c10::DeviceIndex device);

}  // namespace torch_npu_sim
