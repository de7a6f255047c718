// torch_npu's fused ops (namespace npu, ops.yaml family `fused`): argument checks, output allocation and the
// kernel descriptors; the math is in kernels/src/fused.cpp (tile layer) and kernels/src/fused_nn.cpp.
#include <ATen/core/Tensor.h>
#include <ATen/ExpandUtils.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/stack.h>
#include <c10/core/WrapDimMinimal.h>
#include <c10/util/accumulate.h>
#include <c10/core/DeviceGuard.h>

#include <string_view>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/fused.h"
#include "npu_kernels/fused_nn.h"
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

constexpr std::initializer_list<at::ScalarType> kVectorDtypes = {at::kFloat, at::kHalf, at::kBFloat16};

npu_kernels::DType kdtype(const T& t) { return static_cast<npu_kernels::DType>(t.scalar_type()); }

// `t` with `like`'s dtype and dense layout, as the kernels read their operands.
T operand(const char* op, const char* arg, const T& t, const T& like) {
  check_arg(op, arg, t, -1, kVectorDtypes);
  return t.to(like.scalar_type()).contiguous();
}

// The [d0, d1, d2] element strides of `t` broadcast to `shape` (4-D, last dim d), with unit stride along d: a
// table read in place (0 strides where it is broadcast), or a dense copy when its last dim is not unit-strided.
struct Broadcast4 {
  T data;
  int64_t strides[3];
};
Broadcast4 broadcast4(const char* op, const char* arg, const T& t, at::IntArrayRef shape) {
  TORCH_CHECK(t.dim() <= 4 && at::is_expandable_to(t.sizes(), shape), op, ": argument '", arg, "' of shape ",
              t.sizes(), " does not broadcast to ", shape);
  T e = t.expand(shape);
  if (e.stride(3) != 1 && shape[3] > 1) e = e.contiguous();
  return {e, {e.stride(0), e.stride(1), e.stride(2)}};
}

// `t` as 4-D [.., d] with leading 1s (torch_npu's rotary and softmax ops take up to 4-D).
T as4d(const char* op, const char* arg, const T& t) {
  TORCH_CHECK(t.dim() >= 1 && t.dim() <= 4, op, ": expected argument '", arg, "' to be 1-D to 4-D, got shape ",
              t.sizes());
  std::vector<int64_t> s(4 - t.dim(), 1);
  s.insert(s.end(), t.sizes().begin(), t.sizes().end());
  return t.view(s);
}

// RMSNorm's row count: gamma covers x's trailing gamma.dim() dims.
int64_t rms_rows(const char* op, const T& x, const T& gamma) {
  TORCH_CHECK(gamma.dim() >= 1 && gamma.dim() <= x.dim() &&
                  x.sizes().slice(x.dim() - gamma.dim()) == gamma.sizes(),
              op, ": argument 'gamma' of shape ", gamma.sizes(), " must match the trailing dims of x ", x.sizes());
  return gamma.numel() == 0 ? 0 : x.numel() / gamma.numel();
}

T rstd_like(const T& x, const T& gamma) {
  std::vector<int64_t> s(x.sizes().begin(), x.sizes().end() - gamma.dim());
  s.resize(x.dim(), 1);
  return at::empty(s, x.options().dtype(at::kFloat));
}

std::tuple<T, T, T> rms_norm_fwd(const char* op, const T& x1, const T* x2, const T& gamma, double eps) {
  check_devices(op, {{"x", &x1}, {"x2", x2 ? x2 : &x1}, {"gamma", &gamma}});
  check_arg(op, "x", x1, -1, kVectorDtypes);
  c10::DeviceGuard guard(x1.device());
  const T x = x1.contiguous(), g = operand(op, "gamma", gamma, x);
  T xb;
  if (x2 != nullptr) {
    TORCH_CHECK(x2->sizes() == x1.sizes(), op, ": argument 'x2' of shape ", x2->sizes(), " must match x1 ",
                x1.sizes());
    xb = operand(op, "x2", *x2, x);
  }
  npu_kernels::RmsNormArgs a;
  a.dtype = kdtype(x);
  a.rows = rms_rows(op, x, gamma);
  a.n = gamma.numel();
  a.eps = eps;
  T y = at::empty_like(x), rstd = rstd_like(x, gamma), sum = x2 ? at::empty_like(x) : T();
  a.x = x.const_data_ptr();
  a.x2 = x2 ? xb.const_data_ptr() : nullptr;
  a.gamma = g.const_data_ptr();
  a.y = y.data_ptr();
  a.rstd = rstd.data_ptr<float>();
  a.x_sum = x2 ? sum.data_ptr() : nullptr;
  NPU_CHECK(npu_kernels::rms_norm(stream_of(x), a));
  return {y, rstd, sum};
}

npu_kernels::RotaryMode rotary_mode(const char* op, c10::string_view mode) {
  if (mode == "half") return npu_kernels::RotaryMode::kHalf;
  if (mode == "interleave") return npu_kernels::RotaryMode::kInterleave;
  TORCH_CHECK(false, op, ": argument 'rotary_mode' must be 'half' or 'interleave', got '", mode, "'");
}

// The rotary kernels' arguments; `x` is the 4-D operand read (x, or dy for the backward).
struct Rotary {
  npu_kernels::RotaryArgs args;
  T x, r1, r2;
};
Rotary rotary_args(const char* op, const T& x_in, const T& r1_in, const T& r2_in, c10::string_view mode) {
  check_devices(op, {{"self", &x_in}, {"r1", &r1_in}, {"r2", &r2_in}});
  check_arg(op, "self", x_in, -1, kVectorDtypes);
  Rotary r;
  r.x = as4d(op, "self", x_in).contiguous();
  TORCH_CHECK(r.x.size(3) % 2 == 0, op, ": the last dim of 'self' must be even, got ", r.x.size(3));
  Broadcast4 b1 = broadcast4(op, "r1", operand(op, "r1", r1_in, r.x), r.x.sizes());
  Broadcast4 b2 = broadcast4(op, "r2", operand(op, "r2", r2_in, r.x), r.x.sizes());
  r.r1 = b1.data;
  r.r2 = b2.data;
  auto& a = r.args;
  a.dtype = kdtype(r.x);
  a.mode = rotary_mode(op, mode);
  a.d0 = r.x.size(0), a.d1 = r.x.size(1), a.d2 = r.x.size(2), a.d = r.x.size(3);
  a.x = r.x.const_data_ptr();
  a.r1 = r.r1.const_data_ptr();
  a.r2 = r.r2.const_data_ptr();
  for (int i = 0; i < 3; ++i) a.r1_strides[i] = b1.strides[i], a.r2_strides[i] = b2.strides[i];
  return r;
}

// rotate(x) of the rotary op, by aten ops (for the gradient of r2).
T rotate(const T& x, npu_kernels::RotaryMode mode) {
  const int64_t d = x.size(-1);
  if (mode == npu_kernels::RotaryMode::kHalf) return at::cat({x.narrow(-1, d / 2, d / 2).neg(), x.narrow(-1, 0, d / 2)}, -1);
  T pairs = x.unflatten(-1, {d / 2, 2});
  return at::stack({pairs.select(-1, 1).neg(), pairs.select(-1, 0)}, -1).flatten(-2);
}

// SwiGLU's (outer, 2, inner) view of x split along `dim`.
npu_kernels::SwiGluArgs swiglu_args(const char* op, const T& x, int64_t dim) {
  check_arg(op, "self", x, -1, kVectorDtypes);
  TORCH_CHECK(x.dim() >= 1, op, ": expected argument 'self' with at least one dim");
  dim = c10::maybe_wrap_dim(dim, x.dim());
  TORCH_CHECK(x.size(dim) % 2 == 0, op, ": the size of 'self' along dim ", dim, " must be even, got ", x.size(dim));
  npu_kernels::SwiGluArgs a;
  a.dtype = kdtype(x);
  a.outer = c10::multiply_integers(x.sizes().slice(0, dim));
  a.inner = x.numel() == 0 ? 0 : x.numel() / a.outer / 2;
  return a;
}

std::vector<int64_t> halved(const T& x, int64_t dim) {
  std::vector<int64_t> s(x.sizes().begin(), x.sizes().end());
  s[c10::maybe_wrap_dim(dim, x.dim())] /= 2;
  return s;
}

// The scaled masked softmax's arguments over 4-D x; the mask is broadcast to x.
struct MaskedSoftmax {
  npu_kernels::ScaledMaskedSoftmaxArgs args;
  T mask;
};
MaskedSoftmax masked_softmax_args(const char* op, const T& x, const T& mask, double scale, bool fixed_triu_mask) {
  check_devices(op, {{"x", &x}, {"mask", &mask}});
  check_arg(op, "x", x, 4, kVectorDtypes);
  MaskedSoftmax m;
  auto& a = m.args;
  a.dtype = kdtype(x);
  a.b = x.size(0), a.h = x.size(1), a.s = x.size(2), a.n = x.size(3);
  a.scale = scale;
  a.fixed_triu_mask = fixed_triu_mask;
  if (!fixed_triu_mask) {
    TORCH_CHECK(mask.scalar_type() == at::kBool, op, ": argument 'mask' must be bool (true = masked out), got ",
                mask.scalar_type());
    Broadcast4 b = broadcast4(op, "mask", mask, x.sizes());
    m.mask = b.data;
    a.mask = m.mask.const_data_ptr<bool>();
    for (int i = 0; i < 3; ++i) a.mask_strides[i] = b.strides[i];
  }
  return m;
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

std::tuple<T, T> NF::npu_rms_norm(const T& self, const T& gamma, double epsilon) {
  auto [y, rstd, unused] = rms_norm_fwd("npu_rms_norm", self, nullptr, gamma, epsilon);
  return {y, rstd};
}

std::tuple<T, T, T> NF::npu_add_rms_norm(const T& x1, const T& x2, const T& gamma, double epsilon) {
  return rms_norm_fwd("npu_add_rms_norm", x1, &x2, gamma, epsilon);
}

std::tuple<T, T> NF::npu_rms_norm_backward(const T& dy, const T& self, const T& gamma, const T& rstd) {
  constexpr const char* op = "npu_rms_norm_backward";
  check_devices(op, {{"dy", &dy}, {"self", &self}, {"gamma", &gamma}, {"rstd", &rstd}});
  check_arg(op, "self", self, -1, kVectorDtypes);
  TORCH_CHECK(dy.sizes() == self.sizes(), op, ": argument 'dy' of shape ", dy.sizes(), " must match self ",
              self.sizes());
  c10::DeviceGuard guard(self.device());
  const T x = self.contiguous(), g = operand(op, "dy", dy, x), gm = operand(op, "gamma", gamma, x);
  const int64_t rows = rms_rows(op, x, gamma);
  TORCH_CHECK(rstd.numel() == rows, op, ": argument 'rstd' must have one value per row (", rows, "), got ",
              rstd.numel());
  const T r = rstd.to(at::kFloat).contiguous();
  T dx = at::empty_like(x), dgamma = at::empty_like(gm);
  npu_kernels::RmsNormGradArgs a;
  a.dtype = kdtype(x);
  a.rows = rows;
  a.n = gamma.numel();
  a.dy = g.const_data_ptr();
  a.x = x.const_data_ptr();
  a.rstd = r.const_data_ptr<float>();
  a.gamma = gm.const_data_ptr();
  a.dx = dx.data_ptr();
  a.dgamma = dgamma.data_ptr();
  NPU_CHECK(npu_kernels::rms_norm_backward(stream_of(x), a));
  return {dx, dgamma.to(gamma.scalar_type())};
}

T NF::npu_rotary_mul(const T& self, const T& r1, const T& r2, c10::string_view rotary_mode) {
  c10::DeviceGuard guard(self.device());
  Rotary r = rotary_args("npu_rotary_mul", self, r1, r2, rotary_mode);
  T out = at::empty_like(r.x);
  r.args.out = out.data_ptr();
  NPU_CHECK(npu_kernels::rotary_mul(stream_of(r.x), r.args));
  return out.view(self.sizes());
}

std::tuple<T, T, T> NF::npu_rotary_mul_backward(const T& grad, const T& self, const T& r1, const T& r2,
                                                c10::string_view rotary_mode, std::array<bool, 2> output_mask) {
  constexpr const char* op = "npu_rotary_mul_backward";
  TORCH_CHECK(grad.sizes() == self.sizes(), op, ": argument 'grad' of shape ", grad.sizes(), " must match self ",
              self.sizes());
  c10::DeviceGuard guard(self.device());
  Rotary r = rotary_args(op, grad, r1, r2, rotary_mode);  // reads dy where the forward read x
  T dx = at::empty_like(r.x);
  r.args.out = dx.data_ptr();
  NPU_CHECK(npu_kernels::rotary_mul_backward(stream_of(r.x), r.args));
  // d r1 = dy * x and d r2 = dy * rotate(x), summed over the dims r1 / r2 were broadcast along: four more passes
  // over x-sized tensors each, so only where asked (autograd asks when r1 / r2 need a gradient; cos / sin
  // tables usually do not)
  const T x = output_mask[0] || output_mask[1] ? self.to(grad.scalar_type()) : T();
  T dr1 = output_mask[0] ? grad.mul(x).sum_to_size(r1.sizes()).to(r1.scalar_type()) : T();
  T dr2 = output_mask[1] ? grad.mul(rotate(x, r.args.mode)).sum_to_size(r2.sizes()).to(r2.scalar_type()) : T();
  return {dx.view(self.sizes()), dr1, dr2};
}

T NF::npu_swiglu(const T& self, int64_t dim) {
  constexpr const char* op = "npu_swiglu";
  check_devices(op, {{"self", &self}});
  c10::DeviceGuard guard(self.device());
  npu_kernels::SwiGluArgs a = swiglu_args(op, self, dim);
  const T x = self.contiguous();
  T out = at::empty(halved(self, dim), x.options());
  a.x = x.const_data_ptr();
  a.out = out.data_ptr();
  NPU_CHECK(npu_kernels::swiglu(stream_of(x), a));
  return out;
}

T NF::npu_swiglu_backward(const T& grad_output, const T& self, int64_t dim) {
  constexpr const char* op = "npu_swiglu_backward";
  check_devices(op, {{"grad_output", &grad_output}, {"self", &self}});
  c10::DeviceGuard guard(self.device());
  npu_kernels::SwiGluArgs a = swiglu_args(op, self, dim);
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(halved(self, dim)), op, ": argument 'grad_output' of shape ",
              grad_output.sizes(), " must be self's shape halved along dim ", dim);
  const T x = self.contiguous(), dy = operand(op, "grad_output", grad_output, x);
  T dx = at::empty_like(x);
  a.x = x.const_data_ptr();
  a.dy = dy.const_data_ptr();
  a.dx = dx.data_ptr();
  NPU_CHECK(npu_kernels::swiglu_backward(stream_of(x), a));
  return dx;
}

T NF::npu_fast_gelu(const T& self) {
  constexpr const char* op = "npu_fast_gelu";
  check_devices(op, {{"self", &self}});
  check_arg(op, "self", self, -1, kVectorDtypes);
  c10::DeviceGuard guard(self.device());
  const T x = self.contiguous();
  T y = at::empty_like(x);
  npu_kernels::FastGeluArgs a;
  a.dtype = kdtype(x);
  a.n = x.numel();
  a.x = x.const_data_ptr();
  a.y = y.data_ptr();
  NPU_CHECK(npu_kernels::fast_gelu(stream_of(x), a));
  return y;
}

T NF::npu_fast_gelu_backward(const T& grad, const T& self) {
  constexpr const char* op = "npu_fast_gelu_backward";
  check_devices(op, {{"grad", &grad}, {"self", &self}});
  check_arg(op, "self", self, -1, kVectorDtypes);
  TORCH_CHECK(grad.sizes() == self.sizes(), op, ": argument 'grad' of shape ", grad.sizes(), " must match self ",
              self.sizes());
  c10::DeviceGuard guard(self.device());
  const T x = self.contiguous(), dy = operand(op, "grad", grad, x);
  T dx = at::empty_like(x);
  npu_kernels::FastGeluArgs a;
  a.dtype = kdtype(x);
  a.n = x.numel();
  a.x = x.const_data_ptr();
  a.dy = dy.const_data_ptr();
  a.dx = dx.data_ptr();
  NPU_CHECK(npu_kernels::fast_gelu_backward(stream_of(x), a));
  return dx;
}

T NF::npu_scaled_masked_softmax(const T& x, const T& mask, double scale, bool fixed_triu_mask) {
  c10::DeviceGuard guard(x.device());
  MaskedSoftmax m = masked_softmax_args("npu_scaled_masked_softmax", x, mask, scale, fixed_triu_mask);
  const T xc = x.contiguous();
  T y = at::empty_like(xc);
  m.args.x = xc.const_data_ptr();
  m.args.y = y.data_ptr();
  NPU_CHECK(npu_kernels::scaled_masked_softmax(stream_of(xc), m.args));
  return y;
}

T NF::npu_scaled_masked_softmax_backward(const T& y_grad, const T& y, const T& mask, double scale,
                                         bool fixed_triu_mask) {
  constexpr const char* op = "npu_scaled_masked_softmax_backward";
  TORCH_CHECK(y_grad.sizes() == y.sizes(), op, ": argument 'y_grad' of shape ", y_grad.sizes(), " must match y ",
              y.sizes());
  c10::DeviceGuard guard(y.device());
  MaskedSoftmax m = masked_softmax_args(op, y, mask, scale, fixed_triu_mask);
  const T yc = y.contiguous(), dy = operand(op, "y_grad", y_grad, yc);
  T dx = at::empty_like(yc);
  m.args.y = const_cast<void*>(yc.const_data_ptr());
  m.args.dy = dy.const_data_ptr();
  m.args.dx = dx.data_ptr();
  NPU_CHECK(npu_kernels::scaled_masked_softmax_backward(stream_of(yc), m.args));
  return dx;
}

}  // namespace torch_npu_sim
