// GradScaler's two ops for npu, native (no fallback, no host sync): argument checks here, math in
// kernels/src/amp_ops.cpp.
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/amp.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

void check_scalar_tensor(const at::Tensor& t, at::ScalarType type, const char* op, const char* name) {
  TORCH_CHECK(is_npu(t), op, ": ", name, " must be an npu tensor, got one on ", t.device());
  TORCH_CHECK(t.numel() == 1, op, ": ", name, " must be a 1-element tensor, got ", t.numel(), " elements");
  TORCH_CHECK(t.scalar_type() == type, op, ": ", name, " must be a ", type, " tensor, got ", t.scalar_type());
}

}  // namespace

void NF::_amp_foreach_non_finite_check_and_unscale_(at::TensorList grads, at::Tensor& found_inf,
                                                    const at::Tensor& inv_scale) {
  constexpr const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  check_scalar_tensor(found_inf, at::kFloat, op, "found_inf");
  check_scalar_tensor(inv_scale, at::kFloat, op, "inv_scale");
  c10::DeviceGuard guard(found_inf.device());
  const auto stream = current_native_stream(found_inf.device().index());
  for (const at::Tensor& g : grads) {
    TORCH_CHECK(g.device() == found_inf.device(), op, ": all gradients must be on ", found_inf.device(),
                ", got one on ", g.device());
    TORCH_CHECK(at::isFloatingType(g.scalar_type()), op, ": gradients must be floating point, got ", g.scalar_type());
    if (g.numel() == 0) continue;
    NPU_CHECK(npu_kernels::amp_unscale(stream, tensor_desc(g, op), found_inf.data_ptr<float>(),
                                       inv_scale.const_data_ptr<float>()));
  }
}

at::Tensor& NF::_amp_update_scale_(at::Tensor& scale, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                                   double growth_factor, double backoff_factor, int64_t growth_interval) {
  constexpr const char* op = "_amp_update_scale_";
  check_scalar_tensor(scale, at::kFloat, op, "scale");
  check_scalar_tensor(growth_tracker, at::kInt, op, "growth_tracker");
  check_scalar_tensor(found_inf, at::kFloat, op, "found_inf");
  c10::DeviceGuard guard(scale.device());
  NPU_CHECK(npu_kernels::amp_update_scale(current_native_stream(scale.device().index()), scale.data_ptr<float>(),
                                          growth_tracker.data_ptr<int32_t>(), found_inf.const_data_ptr<float>(),
                                          growth_factor, backoff_factor, growth_interval));
  return scale;
}

}  // namespace torch_npu_sim
