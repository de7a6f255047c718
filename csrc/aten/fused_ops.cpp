// torch_npu's fused ops (namespace npu, ops.yaml family `fused`): argument checks, output allocation and the
// kernel descriptors; the math is in kernels/src/fused.cpp (tile layer) and kernels/src/fused_nn.cpp.
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/fused.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
using T = at::Tensor;

namespace {

// `t` must be `dims`-D (any dims when -1) of one of the fused kernels' dtypes; names op and argument.
void check_arg(const char* op, const char* arg, const T& t, int64_t dims, std::initializer_list<at::ScalarType> dtypes) {
  TORCH_CHECK(dims < 0 || t.dim() == dims, op, ": expected argument '", arg, "' to be ", dims, "-D, got shape ",
              t.sizes());
  bool ok = false;
  for (at::ScalarType d : dtypes) ok |= t.scalar_type() == d;
  TORCH_CHECK(ok, op, ": argument '", arg, "' has dtype ", t.scalar_type(), ", which the npu kernel does not take");
}

}  // namespace

T NF::npu_linear_add_gelu(const T& x, const T& weight, const T& bias) {
  constexpr const char* op = "npu_linear_add_gelu";
  check_devices(op, {{"x", &x}, {"weight", &weight}, {"bias", &bias}});
  check_arg(op, "x", x, 2, {at::kFloat});
  check_arg(op, "weight", weight, 2, {at::kFloat});
  check_arg(op, "bias", bias, 1, {at::kFloat});
  TORCH_CHECK(weight.size(0) == x.size(1), op, ": x is [M, K] = ", x.sizes(), " and weight must be [K, N], got ",
              weight.sizes());
  TORCH_CHECK(bias.size(0) == weight.size(1), op, ": bias must be [N] = [", weight.size(1), "], got ", bias.sizes());
  c10::DeviceGuard guard(x.device());
  const T xc = x.contiguous(), wc = weight.contiguous(), bc = bias.contiguous();
  T out = empty_npu({x.size(0), weight.size(1)}, {}, x.options());
  npu_kernels::LinearAddGeluArgs a;
  a.x = xc.const_data_ptr<float>();
  a.w = wc.const_data_ptr<float>();
  a.bias = bc.const_data_ptr<float>();
  a.out = out.data_ptr<float>();
  a.m = x.size(0);
  a.k = x.size(1);
  a.n = weight.size(1);
  if (a.m > 0 && a.n > 0) NPU_CHECK(npu_kernels::linear_add_gelu(current_native_stream(x.device().index()), a));
  return out;
}

}  // namespace torch_npu_sim
