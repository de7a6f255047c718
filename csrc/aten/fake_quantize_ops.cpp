// Registration of quantization-aware training's fake quantization (per tensor with scalar or tensor qparams, per
// channel with an integer or floating zero point), returning (output, mask) as CPU does; their backward is
// ATen's composite (grad * mask). CPU's checks and messages; kernels/src/fake_quantize.cpp. And QAT's default
// observer, _fused_moving_avg_obs_fq_helper: running min / max on npu ops, qparams by ATen's own
// ChooseQuantizationParams on the host (CPU syncs there too), then the fake quantization.
#ifndef AT_PER_OPERATOR_HEADERS
#define AT_PER_OPERATOR_HEADERS  // QuantUtils.h then includes the few op headers it needs, not all of ATen's
#endif
#include <ATen/core/Tensor.h>
#include <ATen/native/quantized/cpu/QuantUtils.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/where.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/max.h>
#include <ATen/ops/min.h>
#include <c10/core/DeviceGuard.h>

#include <limits>
#include <numeric>
#include <tuple>
#include <vector>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "npu_kernels/fake_quantize.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using at::Tensor;

void check_range(int64_t quant_min, int64_t quant_max) {
  TORCH_CHECK(quant_min <= quant_max, "`quant_min` should be less than or         equal to `quant_max`.");
}

// (output, mask) shaped and strided like self (CPU's MemoryFormat::Preserve), the kernel run on a contiguous self.
// `op`: the name CPU's dtype dispatch gives in its message.
std::tuple<Tensor, Tensor> run(const Tensor& self, npu_kernels::FakeQuantArgs& a, const char* op) {
  TORCH_CHECK(is_npu(self), op, ": expected an npu tensor, got one on ", self.device());
  const at::ScalarType st = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(st), "\"", op, "\" not implemented for '", c10::toString(st), "'");
  c10::DeviceGuard guard(self.device());
  Tensor y = at::empty_like(self, at::MemoryFormat::Preserve);
  Tensor mask = at::empty_like(self, self.options().dtype(at::kBool), at::MemoryFormat::Preserve);
  if (self.numel() == 0) return {y, mask};
  const Tensor x = self.contiguous();
  a.dtype = kernel_dtype(st, op);
  a.n = x.numel();
  into_contiguous(y, [&](const Tensor& yc) {
    into_contiguous(mask, [&](const Tensor& mc) {
      NPU_CHECK(npu_kernels::fake_quantize(stream_of(self), a, x.const_data_ptr(), yc.data_ptr(),
                                           mc.data_ptr<bool>()));
    });
  });
  return {y, mask};
}

// A one-element qparam tensor, as CPU reads it with .item() (its message for any other size).
Tensor one_value(const Tensor& t, at::ScalarType type, const Tensor& self, const char* name) {
  TORCH_CHECK(t.numel() == 1, "a Tensor with ", t.numel(), " elements cannot be converted to Scalar");
  check_device_arg("_fake_quantize_per_tensor_affine_cachemask_tensor_qparams", name, t, self.device(),
                   /*cpu_allowed=*/true);
  return t.reshape({1}).to(self.device(), type);
}

}  // namespace

std::tuple<Tensor, Tensor> NF::fake_quantize_per_tensor_affine_cachemask(const Tensor& self, double scale,
                                                                         int64_t zero_point, int64_t quant_min,
                                                                         int64_t quant_max) {
  check_range(quant_min, quant_max);
  TORCH_CHECK(zero_point >= quant_min && zero_point <= quant_max,
              "`zero_point` must be between `quant_min` and `quant_max`.");
  npu_kernels::FakeQuantArgs a;
  a.quant_min = quant_min;
  a.quant_max = quant_max;
  a.scale = static_cast<float>(scale);
  a.zero_point = zero_point;
  return run(self, a, "fake_quantize_tensor_cachemask_kernel_type_handling");
}

// FakeQuantize modules' path: qparams and the enable flag stay on the device (read by the kernel: no sync).
std::tuple<Tensor, Tensor> NF::_fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
    const Tensor& self, const Tensor& scale, const Tensor& zero_point, const Tensor& fake_quant_enabled,
    int64_t quant_min, int64_t quant_max) {
  check_range(quant_min, quant_max);
  const Tensor s = one_value(scale, at::kFloat, self, "scale");
  const Tensor z = one_value(zero_point, at::kLong, self, "zero_point");
  const Tensor on = one_value(fake_quant_enabled, at::kLong, self, "fake_quant_enabled");
  npu_kernels::FakeQuantArgs a;
  a.quant_min = quant_min;
  a.quant_max = quant_max;
  a.scale_ptr = s.const_data_ptr<float>();
  a.zero_point_ptr = z.const_data_ptr<int64_t>();
  a.enabled_ptr = on.const_data_ptr<int64_t>();
  return run(self, a, "fake_quantize_tensor_cachemask_kernel_type_handling");
}

std::tuple<Tensor, Tensor> NF::fake_quantize_per_channel_affine_cachemask(const Tensor& self, const Tensor& scale,
                                                                          const Tensor& zero_point, int64_t axis,
                                                                          int64_t quant_min, int64_t quant_max) {
  const at::ScalarType zt = zero_point.scalar_type();
  TORCH_CHECK(scale.scalar_type() == at::kFloat || scale.scalar_type() == at::kBFloat16,
              "Scale must be Float or BFloat16, found ", scale.scalar_type());
  TORCH_CHECK(zt == at::kInt || zt == at::kFloat || zt == at::kHalf, "Zero-point must be Int32, Float or Half, found ",
              zt);
  TORCH_CHECK(scale.dim() == 1, "scale should be a 1-D tensor");
  TORCH_CHECK(zero_point.dim() == 1, "zero point should be a 1-D tensor");
  TORCH_CHECK(scale.numel() == zero_point.numel(), "scale and zero-point need to have the same dimensions");
  TORCH_CHECK(scale.numel() == self.size(axis),
              "dimensions of scale and zero-point are not consistent with input tensor");
  check_range(quant_min, quant_max);
  check_devices("fake_quantize_per_channel_affine_cachemask",
                {{"self", &self}, {"scale", &scale}, {"zero_point", &zero_point}});
  if (!at::isFloatingType(zt)) {  // a sync, as on CPU
    TORCH_CHECK(at::min(zero_point).item().toLong() >= quant_min && at::max(zero_point).item().toLong() <= quant_max,
                "`zero_point` must be between `quant_min` and `quant_max`.");
  }
  TORCH_CHECK(axis >= 0 && axis <= self.dim(), "`axis` must be between 0 and number of dimensions of input");
  // a bfloat16 scale is read as float, as CUDA's kernel does (CPU's asserts internally on one)
  const Tensor s = scale.to(at::kFloat).contiguous(), z = zero_point.contiguous();
  npu_kernels::FakeQuantArgs a;
  a.quant_min = quant_min;
  a.quant_max = quant_max;
  a.scales = s.const_data_ptr<float>();
  a.zero_points = z.const_data_ptr();
  a.zp_dtype = kernel_dtype(zt, "fake_quantize_per_channel_affine_cachemask");
  a.channels = self.size(axis);
  a.inner = 1;
  for (int64_t d = axis + 1; d < self.dim(); ++d) a.inner *= self.size(d);
  return run(self, a, "fake_quantize_channel_cachemask_cpu_type_handling");
}

// torch.fused_moving_avg_obs_fake_quant (FusedMovingAvgObsFakeQuantize, QAT's default): CPU's steps and syncs.
std::tuple<Tensor, Tensor> NF::_fused_moving_avg_obs_fq_helper(
    const Tensor& self, const Tensor& observer_on, const Tensor& fake_quant_on, Tensor& running_min,
    Tensor& running_max, Tensor& scale, Tensor& zero_point, double averaging_const, int64_t quant_min,
    int64_t quant_max, int64_t ch_axis, bool per_row_fake_quant, bool symmetric_quant) {
  check_devices("_fused_moving_avg_obs_fq_helper", {{"self", &self}, {"running_min", &running_min},
                                                    {"running_max", &running_max}, {"scale", &scale},
                                                    {"zero_point", &zero_point}});
  TORCH_CHECK(ch_axis < self.dim(), "Error in fused_moving_avg_obs_fake_quant_cpu: ch_axis must be < self.dim()");
  // per tensor the axis is unused (FakeQuantize passes -1); per channel it picks the channels (CPU indexes with a
  // negative one out of bounds)
  TORCH_CHECK(!per_row_fake_quant || ch_axis >= 0,
              "_fused_moving_avg_obs_fq_helper: per-channel fake quantization expects a non-negative ch_axis, got ",
              ch_axis);
  c10::DeviceGuard guard(self.device());
  const bool observe = observer_on.item().toInt() != 0;
  Tensor x = self;
  if (per_row_fake_quant) {
    if (self.dim() != 2) {  // the channel axis first, the rest flattened
      std::vector<int64_t> order(static_cast<size_t>(self.dim()));
      std::iota(order.begin(), order.end(), 0);
      std::swap(order[0], order[ch_axis]);
      x = self.permute(order).flatten(1);
    }
    if (running_min.numel() == 0) {
      const int64_t size = self.size(ch_axis);
      const float inf = std::numeric_limits<float>::infinity();
      running_min.resize_({size}).fill_(inf);
      running_max.resize_({size}).fill_(-inf);
      scale.resize_({size});
      zero_point.resize_({size});
    }
  }
  if (observe) {
    // the moving-average min / max observer, in float as CPU (its averaging constant taken as float)
    Tensor mn, mx;
    if (per_row_fake_quant) {
      TORCH_CHECK(ch_axis == 0,
                  "Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only supported on axis == 0");
      std::tie(mn, mx) = at::aminmax(x, 1);
    } else {
      std::tie(mn, mx) = at::aminmax(x);
    }
    const double c = static_cast<float>(averaging_const);
    running_min.copy_(at::where(running_min.isinf(), mn, running_min + (mn - running_min) * c));
    running_max.copy_(at::where(running_max.isinf(), mx, running_max + (mx - running_max) * c));
  }
  if (fake_quant_on.item().toInt() == 0) {
    return {self.clone(), at::ones_like(self, self.options().dtype(at::kBool), at::MemoryFormat::Preserve)};
  }
  const Tensor lo = running_min.reshape({-1}).to(at::kCPU, at::kFloat);
  const Tensor hi = running_max.reshape({-1}).to(at::kCPU, at::kFloat);
  const int64_t n = per_row_fake_quant ? lo.numel() : 1;
  TORCH_CHECK(per_row_fake_quant || lo.numel() == 1, "a Tensor with ", lo.numel(),
              " elements cannot be converted to Scalar");
  std::vector<double> scales(static_cast<size_t>(n));
  std::vector<int32_t> zps(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const auto qp = quant_utils::ChooseQuantizationParams(lo.const_data_ptr<float>()[i], hi.const_data_ptr<float>()[i],
                                                          static_cast<int32_t>(quant_min),
                                                          static_cast<int32_t>(quant_max), symmetric_quant, false);
    scales[i] = qp.scale;
    zps[i] = qp.zero_point;
  }
  // CPU's scale[i] = ..., zero_point[i] = ... (element 0 only per tensor), in place, in the tensors' dtypes
  const auto write = [n](Tensor& dst, const Tensor& values) {
    Tensor head = dst.dim() == 0 ? dst : dst.narrow(0, 0, n);
    head.copy_(values.reshape(head.sizes()));
  };
  write(scale, at::tensor(scales));
  write(zero_point, at::tensor(zps));
  if (per_row_fake_quant) {
    return NF::fake_quantize_per_channel_affine_cachemask(self, scale, zero_point, ch_axis, quant_min, quant_max);
  }
  return NF::_fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
      self, scale, zero_point, at::ones({1}, self.options().dtype(at::kLong)), quant_min, quant_max);
}

}  // namespace torch_npu_sim
