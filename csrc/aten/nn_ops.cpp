// Registration of the nn kernels for npu: softmax / log_softmax (+ backward), native_layer_norm (+ backward),
// _fused_rms_norm (+ backward; F.rms_norm), _weight_norm_interface (+ backward), group norm, batch norm, the
// losses. Shapes and checks come from ATen's meta functions (or _check_layer_norm_inputs /
// _check_rms_norm_inputs); the math is in kernels/src/nn.cpp and (RMSNorm) kernels/src/fused_nn.cpp.
#include <ATen/ExpandUtils.h>
#include <ATen/OpMathType.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Reduction.h>
#include <ATen/native/layer_norm.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/var_mean.h>
#include <ATen/ops/_fused_rms_norm_compositeimplicitautograd_dispatch.h>
#include <ATen/ops/_log_softmax_backward_data_meta.h>
#include <ATen/ops/_log_softmax_meta.h>
#include <ATen/ops/_softmax_backward_data_meta.h>
#include <ATen/ops/_softmax_meta.h>
#include <ATen/ops/nll_loss_backward_meta.h>
#include <ATen/ops/nll_loss_forward_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <limits>
#include <tuple>

#include "aten/npu_tensor.h"
#include "aten/reduce_adapter.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/fused_nn.h"
#include "npu_kernels/nn.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
using namespace at::meta;
namespace {

using T = at::Tensor;

void check_npu(const T& t, const char* op) {
  TORCH_CHECK(is_npu(t), op, ": expected a tensor on an npu device, got one on ", t.device());
}

void shape3(const T& t, int64_t dim, int64_t* outer, int64_t* n, int64_t* inner) {
  *outer = *n = *inner = 1;
  if (t.dim() == 0) return;
  dim = at::maybe_wrap_dim(dim, t.dim());
  for (int64_t i = 0; i < dim; ++i) *outer *= t.size(i);
  *n = t.size(dim);
  for (int64_t i = dim + 1; i < t.dim(); ++i) *inner *= t.size(i);
}


// ---- softmax ----
void softmax_into(const T& self, int64_t dim, const T& out, bool log) {
  const char* op = log ? "_log_softmax" : "_softmax";
  check_npu(self, op);
  if (out.numel() == 0) return;
  c10::DeviceGuard guard(self.device());
  const T x = self.contiguous();
  into_contiguous(out, [&](const T& o) {
    npu_kernels::SoftmaxDesc d;
    d.in = x.const_data_ptr();
    d.out = o.data_ptr();
    d.in_dtype = kernel_dtype(x.scalar_type(), op);
    d.out_dtype = kernel_dtype(o.scalar_type(), op);
    d.log = log;
    shape3(x, dim, &d.outer, &d.n, &d.inner);
    NPU_CHECK(npu_kernels::softmax(current_native_stream(self.device().index()), d));
  });
}
template <class Meta>
T softmax_fn(const T& self, int64_t dim, bool half_to_float, bool log) {
  auto m = meta_functional<Meta>(self, dim, half_to_float);
  softmax_into(self, dim, m.outs[0], log);
  return m.outs[0];
}
template <class Meta>
T& softmax_out(const T& self, int64_t dim, bool half_to_float, bool log, T& out) {
  auto m = meta_out<Meta>({out}, self, dim, half_to_float);
  softmax_into(self, dim, out, log);
  return out;
}

void softmax_backward_into(const T& grad, const T& output, int64_t dim, const T& gin, bool log) {
  const char* op = log ? "_log_softmax_backward_data" : "_softmax_backward_data";
  check_npu(grad, op);
  check_npu(output, op);
  if (gin.numel() == 0) return;
  c10::DeviceGuard guard(grad.device());
  const T g = grad.contiguous();
  const T y = output.scalar_type() == g.scalar_type() ? output.contiguous() : output.to(g.scalar_type()).contiguous();
  into_contiguous(gin, [&](const T& o) {
    npu_kernels::SoftmaxBackwardDesc d;
    d.grad = g.const_data_ptr();
    d.output = y.const_data_ptr();
    d.grad_in = o.data_ptr();
    d.dtype = kernel_dtype(g.scalar_type(), op);
    d.out_dtype = kernel_dtype(o.scalar_type(), op);
    d.log = log;
    shape3(g, dim, &d.outer, &d.n, &d.inner);
    NPU_CHECK(npu_kernels::softmax_backward(current_native_stream(grad.device().index()), d));
  });
}
template <class Meta>
T softmax_bwd_fn(const T& grad, const T& output, int64_t dim, at::ScalarType input_dtype, bool log) {
  auto m = meta_functional<Meta>(grad, output, dim, input_dtype);
  softmax_backward_into(grad, output, dim, m.outs[0], log);
  return m.outs[0];
}
template <class Meta>
T& softmax_bwd_out(const T& grad, const T& output, int64_t dim, at::ScalarType input_dtype, bool log, T& out) {
  auto m = meta_out<Meta>({out}, grad, output, dim, input_dtype);
  softmax_backward_into(grad, output, dim, out, log);
  return out;
}

// ---- layer norm ----
T param_as(const std::optional<T>& p, const T& x) {
  if (!p.has_value() || !p->defined()) return T();
  check_device_arg("native_layer_norm", "weight/bias", *p, x.device());
  return p->scalar_type() == x.scalar_type() ? p->contiguous() : p->to(x.scalar_type()).contiguous();
}

std::vector<int64_t> stat_shape(const T& input, int64_t axis) {
  std::vector<int64_t> s(input.sizes().begin(), input.sizes().end());
  for (size_t i = static_cast<size_t>(axis); i < s.size(); ++i) s[i] = 1;
  return s;
}

// ---- nll_loss ----
void fill_nll(npu_kernels::NllLossDesc& d, const T& self, const T& target, const T& weight, int64_t reduction,
              int64_t ignore_index) {
  d.dtype = kernel_dtype(self.scalar_type(), "nll_loss");
  d.N = self.dim() == 1 ? 1 : self.size(0);
  d.C = self.size(-1);
  d.reduction = reduction;
  d.ignore_index = ignore_index;
  d.input = self.const_data_ptr();
  d.target = target.const_data_ptr<int64_t>();
  d.weight = weight.defined() ? weight.const_data_ptr() : nullptr;
}

// nll_loss2d: (N, C, H, W) scores as (N*H*W, C) rows for the nll_loss kernels.
T to_rows(const T& self) {
  TORCH_CHECK(self.dim() == 4, "nll_loss2d: expected a 4-D input, got ", self.dim(), " dims");
  return self.permute({0, 2, 3, 1}).reshape({-1, self.size(1)}).contiguous();
}

// ---- elementwise losses: the kernel writes elementwise values, the reduction engine reduces them ----
using npu_kernels::LossKind;

T expanded(const T& t, at::IntArrayRef shape, at::ScalarType type) { return t.to(type).expand(shape).contiguous(); }

// The dtype a loss computes and returns in: mse and smooth_l1 promote self with target (TensorIterator's binary
// ops on CPU and CUDA: a float32 input against a float64 target gives a float64 loss); huber and bce keep self's.
at::ScalarType loss_type(LossKind kind, const T& self, const T& target) {
  return kind == LossKind::kMse || kind == LossKind::kSmoothL1 ? at::result_type(self, target) : self.scalar_type();
}

T& loss_forward(LossKind kind, const char* name, const T& self, const T& target, const T& weight, int64_t reduction,
                double beta, T& out) {
  check_npu(self, name);
  check_device_arg(name, "target", target, self.device());
  check_device_arg(name, "weight", weight, self.device());
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), name, ": expected a floating point input, got ",
                              self.scalar_type());
  c10::DeviceGuard guard(self.device());
  const auto shape = at::infer_size(self.sizes(), target.sizes());
  const auto type = loss_type(kind, self, target);
  const T x = expanded(self, shape, type), t = expanded(target, shape, type);
  const T w = weight.defined() ? expanded(weight, shape, type) : T();
  T elem;
  if (reduction == at::Reduction::None) {
    at::native::resize_output(out, shape);
    elem = out.is_contiguous() ? out : at::empty(shape, x.options());
  } else {
    elem = at::empty(shape, x.options());
  }
  npu_kernels::PointLossDesc d;
  d.dtype = kernel_dtype(type, name);
  d.n = x.numel();
  d.input = x.const_data_ptr();
  d.target = t.const_data_ptr();
  d.weight = w.defined() ? w.const_data_ptr() : nullptr;
  d.beta = beta;
  d.out = elem.data_ptr();
  NPU_CHECK(npu_kernels::pointwise_loss(current_native_stream(self.device().index()), kind, d));
  if (reduction == at::Reduction::None) {
    if (!elem.is_same(out)) out.copy_(elem);
    return out;
  }
  at::native::resize_output(out, {});
  run_reduce(reduction == at::Reduction::Mean ? npu_kernels::ReduceOp::kMean : npu_kernels::ReduceOp::kSum, elem,
             at::native::make_dim_mask({}, elem.dim()), {out}, false, {}, out.scalar_type());
  return out;
}

T& loss_backward(LossKind kind, const char* name, const T& grad_output, const T& self, const T& target, const T& weight,
                 int64_t reduction, double beta, T& grad_input) {
  check_npu(self, name);
  c10::DeviceGuard guard(self.device());
  const auto shape = at::infer_size(self.sizes(), target.sizes());
  const auto type = self.scalar_type();
  const T x = expanded(self, shape, type), t = expanded(target, shape, type);
  const T w = weight.defined() ? expanded(weight, shape, type) : T();
  const bool none = reduction == at::Reduction::None;
  const T g = none ? expanded(grad_output, shape, type) : grad_output.to(type).contiguous();
  at::native::resize_output(grad_input, shape);
  int64_t n = 1;
  for (auto s : shape) n *= s;
  into_contiguous(grad_input, [&](const T& o) {
    npu_kernels::PointLossDesc d;
    d.dtype = kernel_dtype(type, name);
    d.n = n;
    d.input = x.const_data_ptr();
    d.target = t.const_data_ptr();
    d.weight = w.defined() ? w.const_data_ptr() : nullptr;
    d.beta = beta;
    d.grad = g.const_data_ptr();
    d.grad_stride = none ? 1 : 0;
    d.scale = reduction == at::Reduction::Mean && n > 0 ? 1.0 / static_cast<double>(n) : 1.0;
    d.grad_in = o.data_ptr();
    NPU_CHECK(npu_kernels::pointwise_loss_backward(current_native_stream(self.device().index()), kind, d));
  });
  return grad_input;
}

T opt(const std::optional<T>& t) { return t.has_value() ? *t : T(); }
T fresh(const T& self) { return at::empty({0}, self.options()); }

// ---- batch norm ----
at::ScalarType bn_acc(const T& input) { return input.scalar_type() == at::kDouble ? at::kDouble : at::kFloat; }

// A contiguous accumulation-typed version of a per-channel tensor (or undefined).
T bn_param(const std::optional<T>& p, at::ScalarType acc) {
  if (!p.has_value() || !p->defined()) return T();
  return p->to(acc).contiguous();
}

}  // namespace

T NF::_softmax(const T& s, int64_t d, bool h) { return softmax_fn<structured__softmax>(s, d, h, false); }

T NF::_log_softmax(const T& s, int64_t d, bool h) { return softmax_fn<structured__log_softmax>(s, d, h, true); }

T& NF::_softmax_out(const T& s, int64_t d, bool h, T& o) { return softmax_out<structured__softmax>(s, d, h, false, o); }

T& NF::_log_softmax_out(const T& s, int64_t d, bool h, T& o) {
  return softmax_out<structured__log_softmax>(s, d, h, true, o);
}

T NF::_softmax_backward_data(const T& g, const T& y, int64_t d, at::ScalarType t) {
  return softmax_bwd_fn<structured__softmax_backward_data>(g, y, d, t, false);
}

T NF::_log_softmax_backward_data(const T& g, const T& y, int64_t d, at::ScalarType t) {
  return softmax_bwd_fn<structured__log_softmax_backward_data>(g, y, d, t, true);
}

T& NF::_softmax_backward_data_out(const T& g, const T& y, int64_t d, at::ScalarType t, T& o) {
  return softmax_bwd_out<structured__softmax_backward_data>(g, y, d, t, false, o);
}

T& NF::_log_softmax_backward_data_out(const T& g, const T& y, int64_t d, at::ScalarType t, T& o) {
  return softmax_bwd_out<structured__log_softmax_backward_data>(g, y, d, t, true, o);
}

std::tuple<T, T, T> NF::native_layer_norm(const T& input, c10::IntArrayRef normalized_shape,
                                          const std::optional<T>& weight, const std::optional<T>& bias, double eps) {
  check_npu(input, "native_layer_norm");
  const T w0 = weight.has_value() ? *weight : T(), b0 = bias.has_value() ? *bias : T();
  auto [M, N] = at::native::_check_layer_norm_inputs(input, normalized_shape, w0, b0);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(input.scalar_type()), "native_layer_norm: expected a floating point input, got ",
              input.scalar_type());
  c10::DeviceGuard guard(input.device());
  const T x = input.contiguous();
  const T w = param_as(weight, x), b = param_as(bias, x);
  T y = at::empty(x.sizes(), x.options());
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized_shape.size());
  T mean = at::empty(stat_shape(input, axis), x.options());
  T rstd = at::empty(stat_shape(input, axis), x.options());
  npu_kernels::LayerNormDesc d;
  d.dtype = kernel_dtype(x.scalar_type(), "native_layer_norm");
  d.M = M;
  d.N = N;
  d.eps = eps;
  d.x = x.const_data_ptr();
  d.weight = w.defined() ? w.const_data_ptr() : nullptr;
  d.bias = b.defined() ? b.const_data_ptr() : nullptr;
  d.y = y.data_ptr();
  d.mean = mean.data_ptr();
  d.rstd = rstd.data_ptr();
  if (x.numel() > 0 || M > 0) NPU_CHECK(npu_kernels::layer_norm(current_native_stream(input.device().index()), d));
  return {y, mean, rstd};
}

std::tuple<T, T, T> NF::native_layer_norm_backward(const T& grad_out, const T& input, c10::IntArrayRef normalized_shape,
                                                   const T& mean, const T& rstd, const std::optional<T>& weight,
                                                   const std::optional<T>& bias, std::array<bool, 3> mask) {
  check_npu(input, "native_layer_norm_backward");
  const T w0 = weight.has_value() ? *weight : T(), b0 = bias.has_value() ? *bias : T();
  auto [M, N] = at::native::_check_layer_norm_inputs(input, normalized_shape, w0, b0);
  c10::DeviceGuard guard(input.device());
  const T x = input.contiguous();
  const T dy =
      grad_out.scalar_type() == x.scalar_type() ? grad_out.contiguous() : grad_out.to(x.scalar_type()).contiguous();
  const T mu = mean.to(x.scalar_type()).contiguous(), rs = rstd.to(x.scalar_type()).contiguous();
  const T w = param_as(weight, x);
  T dx, dw, db;
  if (mask[0]) dx = at::empty(x.sizes(), x.options());
  if (mask[1] && w0.defined()) dw = at::empty(w0.sizes(), x.options());
  if (mask[2] && b0.defined()) db = at::empty(b0.sizes(), x.options());
  if (M == 0 || N == 0) {
    if (dw.defined()) dw.zero_();
    if (db.defined()) db.zero_();
  } else {
    npu_kernels::LayerNormDesc d;
    d.dtype = kernel_dtype(x.scalar_type(), "native_layer_norm_backward");
    d.M = M;
    d.N = N;
    d.x = x.const_data_ptr();
    d.dy = dy.const_data_ptr();
    d.mean = const_cast<void*>(mu.const_data_ptr());
    d.rstd = const_cast<void*>(rs.const_data_ptr());
    d.weight = w.defined() ? w.const_data_ptr() : nullptr;
    d.dx = dx.defined() ? dx.data_ptr() : nullptr;
    d.dweight = dw.defined() ? dw.data_ptr() : nullptr;
    d.dbias = db.defined() ? db.data_ptr() : nullptr;
    NPU_CHECK(npu_kernels::layer_norm_backward(current_native_stream(input.device().index()), d));
  }
  if (dw.defined() && dw.scalar_type() != w0.scalar_type()) dw = dw.to(w0.scalar_type());
  if (db.defined() && db.scalar_type() != b0.scalar_type()) db = db.to(b0.scalar_type());
  return {dx, dw, db};
}

// F.rms_norm / nn.RMSNorm: aten::rms_norm calls _fused_rms_norm, whose composite is six launches (pow, mean, add,
// rsqrt, mul, mul); here it is the fused RMSNorm kernel of npu_rms_norm. The kernel serves float32 / float16 /
// bfloat16 with the weight in the input's dtype; other cases (float64; a weight of another dtype, which aten
// multiplies in float32) run aten's composite, whose ops are npu kernels too. rstd is float32 (float64 for
// double), kept-dim shaped, as aten returns it; the backward (derivatives.yaml) reads it back.
namespace {
bool rms_norm_native(const T& x, const std::optional<T>& weight) {
  const auto st = x.scalar_type();
  return (st == at::kFloat || st == at::kHalf || st == at::kBFloat16) &&
         (!weight.has_value() || !weight->defined() || weight->scalar_type() == st);
}

// The weight as the kernel's gamma: the weight itself, or ones for none (normalized_shape's numel).
T rms_gamma(const std::optional<T>& weight, const T& x, c10::IntArrayRef normalized_shape) {
  if (weight.has_value() && weight->defined()) return weight->contiguous();
  return at::ones(normalized_shape, x.options());
}
}  // namespace

std::tuple<T, T> NF::_fused_rms_norm(const T& input, c10::IntArrayRef normalized_shape, const std::optional<T>& weight,
                                     std::optional<double> eps) {
  constexpr const char* op = "_fused_rms_norm";
  check_npu(input, op);
  if (weight.has_value() && weight->defined()) check_device_arg(op, "weight", *weight, input.device());
  at::native::_check_rms_norm_inputs_symint(input, c10::fromIntArrayRefSlow(normalized_shape),
                                            weight.has_value() ? *weight : T());
  if (!rms_norm_native(input, weight)) {
    return at::compositeimplicitautograd::_fused_rms_norm(input, normalized_shape, weight, eps);
  }
  c10::DeviceGuard guard(input.device());
  const T x = input.contiguous(), g = rms_gamma(weight, x, normalized_shape);
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized_shape.size());
  T y = at::empty_like(x), rstd = at::empty(stat_shape(x, axis), x.options().dtype(at::kFloat));
  npu_kernels::RmsNormArgs a;
  a.dtype = kernel_dtype(x.scalar_type(), op);
  a.n = g.numel();
  a.rows = a.n == 0 ? 0 : x.numel() / a.n;
  a.eps = eps.has_value() ? *eps : std::numeric_limits<float>::epsilon();  // aten's default for float compute
  a.x = x.const_data_ptr();
  a.gamma = g.const_data_ptr();
  a.y = y.data_ptr();
  a.rstd = rstd.data_ptr<float>();
  NPU_CHECK(npu_kernels::rms_norm(current_native_stream(input.device().index()), a));
  return {y, rstd};
}

std::tuple<T, T> NF::_fused_rms_norm_backward(const T& grad_out, const T& input, c10::IntArrayRef normalized_shape,
                                              const T& rstd, const std::optional<T>& weight,
                                              std::array<bool, 2> output_mask) {
  constexpr const char* op = "_fused_rms_norm_backward";
  check_npu(input, op);
  check_device_arg(op, "grad_out", grad_out, input.device());
  check_device_arg(op, "rstd", rstd, input.device());
  const bool has_weight = weight.has_value() && weight->defined();
  if (has_weight) check_device_arg(op, "weight", *weight, input.device());
  at::native::_check_rms_norm_inputs_symint(input, c10::fromIntArrayRefSlow(normalized_shape),
                                            has_weight ? *weight : T());
  TORCH_CHECK(grad_out.sizes() == input.sizes(), op, ": argument 'grad_out' of shape ", grad_out.sizes(),
              " must match input ", input.sizes());
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(rstd.numel() == c10::multiply_integers(input.sizes().slice(0, axis)), op,
              ": argument 'rstd' must have one value per normalized row, got ", rstd.numel());
  c10::DeviceGuard guard(input.device());
  const bool want_dx = output_mask[0], want_dw = output_mask[1] && has_weight;
  if (!rms_norm_native(input, weight)) {
    // aten's decomposition of the backward, in the compute dtype (float64, or float32 for a mixed weight)
    const auto ct = at::toOpMathType(input.scalar_type());
    std::vector<int64_t> inner, outer;
    for (int64_t d = 0; d < input.dim(); ++d) (d < axis ? outer : inner).push_back(d);
    const T x = input.to(ct), dy = grad_out.to(ct), r = rstd.to(ct).view(stat_shape(input, axis));
    const T x_hat = x * r, g = has_weight ? dy * weight->to(ct) : dy;
    T dx, dw;
    if (want_dx) {
      const int64_t n = c10::multiply_integers(normalized_shape);
      dx = ((g - x_hat / static_cast<double>(n) * (x_hat * g).sum(inner, true)) * r).to(input.scalar_type());
    }
    if (want_dw) dw = (outer.empty() ? dy * x_hat : (dy * x_hat).sum(outer)).to(input.scalar_type());
    return {dx, dw};
  }
  const T x = input.contiguous(), g = rms_gamma(weight, x, normalized_shape);
  const T dy = grad_out.to(x.scalar_type()).contiguous();
  const T r = rstd.to(at::kFloat).contiguous();
  T dx = want_dx ? at::empty_like(x) : T(), dw = want_dw ? at::empty_like(g) : T();
  npu_kernels::RmsNormGradArgs a;
  a.dtype = kernel_dtype(x.scalar_type(), op);
  a.n = g.numel();
  a.rows = a.n == 0 ? 0 : x.numel() / a.n;
  a.dy = dy.const_data_ptr();
  a.x = x.const_data_ptr();
  a.rstd = r.const_data_ptr<float>();
  a.gamma = g.const_data_ptr();
  a.dx = want_dx ? dx.data_ptr() : nullptr;
  a.dgamma = want_dw ? dw.data_ptr() : nullptr;
  if (want_dw && a.rows == 0) dw.zero_();
  NPU_CHECK(npu_kernels::rms_norm_backward(current_native_stream(input.device().index()), a));
  return {dx, dw};
}

std::tuple<T, T> NF::nll_loss_forward(const T& self, const T& target, const std::optional<T>& weight, int64_t reduction,
                                      int64_t ignore_index) {
  T output = at::empty({0}, self.options());
  T total_weight = at::empty({0}, self.options());
  NF::nll_loss_forward_out(self, target, weight, reduction, ignore_index, output, total_weight);
  return {output, total_weight};
}

std::tuple<T&, T&> NF::nll_loss_forward_out(const T& self, const T& target, const std::optional<T>& weight_opt,
                                            int64_t reduction, int64_t ignore_index, T& output, T& total_weight) {
  check_npu(self, "nll_loss_forward");
  check_device_arg("nll_loss_forward", "target", target, self.device());
  const T w0 = weight_opt.has_value() ? *weight_opt : T();
  check_device_arg("nll_loss_forward", "weight", w0, self.device());
  auto m = meta_out<at::meta::structured_nll_loss_forward, 2>({output, total_weight}, self, target,
                                                              at::OptionalTensorRef(w0), reduction, ignore_index);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "nll_loss: expected a floating point input, got ",
                              self.scalar_type());
  c10::DeviceGuard guard(self.device());
  const T x = self.contiguous();
  const T t = target.to(at::kLong).contiguous();
  const T w = w0.defined() ? w0.to(self.scalar_type()).contiguous() : T();
  npu_kernels::NllLossDesc d;
  fill_nll(d, x, t, w, reduction, ignore_index);
  into_contiguous(output, [&](const T& o) {
    d.out = o.data_ptr();
    d.total_weight = total_weight.data_ptr();
    NPU_CHECK(npu_kernels::nll_loss_forward(current_native_stream(self.device().index()), d));
  });
  if (reduction == 0) total_weight.zero_();
  return {output, total_weight};
}

T NF::nll_loss_backward(const T& grad_output, const T& self, const T& target, const std::optional<T>& weight,
                        int64_t reduction, int64_t ignore_index, const T& total_weight) {
  T grad_input = at::empty({0}, self.options());
  return NF::nll_loss_backward_out(grad_output, self, target, weight, reduction, ignore_index, total_weight,
                                   grad_input);
}

T& NF::nll_loss_backward_out(const T& grad_output, const T& self, const T& target, const std::optional<T>& weight_opt,
                             int64_t reduction, int64_t ignore_index, const T& total_weight, T& grad_input) {
  check_npu(self, "nll_loss_backward");
  check_device_arg("nll_loss_backward", "target", target, self.device());
  check_device_arg("nll_loss_backward", "grad_output", grad_output, self.device());
  const T w0 = weight_opt.has_value() ? *weight_opt : T();
  check_device_arg("nll_loss_backward", "weight", w0, self.device());
  auto m = meta_out<at::meta::structured_nll_loss_backward>({grad_input}, grad_output, self, target,
                                                            at::OptionalTensorRef(w0), reduction, ignore_index,
                                                            total_weight);
  c10::DeviceGuard guard(self.device());
  const T t = target.to(at::kLong).contiguous();
  const T w = w0.defined() ? w0.to(self.scalar_type()).contiguous() : T();
  const T g = grad_output.to(self.scalar_type()).contiguous();
  const T tw = total_weight.to(self.scalar_type()).contiguous();
  npu_kernels::NllLossDesc d;
  fill_nll(d, self, t, w, reduction, ignore_index);
  d.input = nullptr;
  d.grad_out = g.const_data_ptr();
  d.total_weight_in = tw.const_data_ptr();
  into_contiguous(grad_input, [&](const T& o) {
    d.grad_in = o.data_ptr();
    NPU_CHECK(npu_kernels::nll_loss_backward(current_native_stream(self.device().index()), d));
  });
  return grad_input;
}

std::tuple<T, T> NF::nll_loss2d_forward(const T& self, const T& target, const std::optional<T>& weight,
                                        int64_t reduction, int64_t ignore_index) {
  T output = at::empty({0}, self.options()), total_weight = at::empty({0}, self.options());
  NF::nll_loss2d_forward_out(self, target, weight, reduction, ignore_index, output, total_weight);
  return {output, total_weight};
}

std::tuple<T&, T&> NF::nll_loss2d_forward_out(const T& self, const T& target, const std::optional<T>& weight,
                                              int64_t reduction, int64_t ignore_index, T& output, T& total_weight) {
  check_npu(self, "nll_loss2d_forward");
  TORCH_CHECK(target.dim() == 3 && target.size(0) == self.size(0) && target.size(1) == self.size(2) &&
                  target.size(2) == self.size(3),
              "nll_loss2d: expected target of size (", self.size(0), ", ", self.size(2), ", ", self.size(3), "), got ",
              target.sizes());
  T out_rows = at::empty({0}, self.options());
  NF::nll_loss_forward_out(to_rows(self), target.reshape({-1}), weight, reduction, ignore_index, out_rows,
                           total_weight);
  if (reduction == at::Reduction::None) {
    at::native::resize_output(output, target.sizes());
    output.copy_(out_rows.view(target.sizes()));
  } else {
    at::native::resize_output(output, {});
    output.copy_(out_rows);
  }
  return {output, total_weight};
}

T NF::nll_loss2d_backward(const T& grad_output, const T& self, const T& target, const std::optional<T>& weight,
                          int64_t reduction, int64_t ignore_index, const T& total_weight) {
  T gi = at::empty({0}, self.options());
  return NF::nll_loss2d_backward_out(grad_output, self, target, weight, reduction, ignore_index, total_weight, gi);
}

T& NF::nll_loss2d_backward_out(const T& grad_output, const T& self, const T& target, const std::optional<T>& weight,
                               int64_t reduction, int64_t ignore_index, const T& total_weight, T& grad_input) {
  check_npu(self, "nll_loss2d_backward");
  const T rows = to_rows(self);
  const T g = reduction == at::Reduction::None ? grad_output.reshape({-1}) : grad_output;
  T gi_rows = at::empty({0}, self.options());
  NF::nll_loss_backward_out(g, rows, target.reshape({-1}), weight, reduction, ignore_index, total_weight, gi_rows);
  at::native::resize_output(grad_input, self.sizes());
  grad_input.copy_(gi_rows.view({self.size(0), self.size(2), self.size(3), self.size(1)}).permute({0, 3, 1, 2}));
  return grad_input;
}

std::tuple<T, T, T> NF::native_batch_norm(const T& input, const std::optional<T>& weight, const std::optional<T>& bias,
                                          const std::optional<T>& running_mean, const std::optional<T>& running_var,
                                          bool training, double momentum, double eps) {
  check_npu(input, "native_batch_norm");
  for (const auto* p : {&weight, &bias, &running_mean, &running_var}) {
    if (p->has_value()) check_device_arg("native_batch_norm", "weight/bias/running stats", **p, input.device());
  }
  TORCH_CHECK(input.dim() >= 2, "native_batch_norm: expected an input with at least 2 dims, got ", input.dim());
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(input.scalar_type()),
                              "native_batch_norm: expected a floating point input, got ", input.scalar_type());
  const bool has_rm = running_mean.has_value() && running_mean->defined();
  const bool has_rv = running_var.has_value() && running_var->defined();
  TORCH_CHECK(training || (has_rm && has_rv), "running_mean and running_var must be defined in evaluation mode");
  // the batch statistics of an empty batch are undefined: refused, as ATen's update of the statistics does
  TORCH_CHECK(!training || input.numel() != 0, "input tensor must have at least one element, but got input_sizes = ",
              input.sizes());
  c10::DeviceGuard guard(input.device());
  const auto acc = bn_acc(input);
  const T x = input.contiguous();
  const int64_t C = x.size(1);
  const T w = bn_param(weight, acc), b = bn_param(bias, acc);
  T rm = bn_param(running_mean, acc), rv = bn_param(running_var, acc);
  for (const T* p : std::initializer_list<const T*>{&w, &b, &rm, &rv}) {
    TORCH_CHECK(!p->defined() || p->numel() == C, "native_batch_norm: expected per-channel tensors of size ", C,
                ", got ", p->numel());
  }
  T y = at::empty(x.sizes(), x.options());
  T save_mean = at::empty({training ? C : 0}, x.options().dtype(acc));
  T save_invstd = at::empty({training ? C : 0}, x.options().dtype(acc));
  npu_kernels::BatchNormDesc d;
  d.dtype = kernel_dtype(x.scalar_type(), "native_batch_norm");
  d.N = x.size(0);
  d.C = C;
  d.HW = C > 0 && d.N > 0 ? x.numel() / (d.N * C) : 0;
  d.training = training;
  d.momentum = momentum;
  d.eps = eps;
  d.x = x.const_data_ptr();
  d.y = y.data_ptr();
  d.weight = w.defined() ? w.const_data_ptr() : nullptr;
  d.bias = b.defined() ? b.const_data_ptr() : nullptr;
  d.running_mean = rm.defined() ? rm.data_ptr() : nullptr;
  d.running_var = rv.defined() ? rv.data_ptr() : nullptr;
  d.save_mean = training ? save_mean.data_ptr() : nullptr;
  d.save_invstd = training ? save_invstd.data_ptr() : nullptr;
  NPU_CHECK(npu_kernels::batch_norm(current_native_stream(input.device().index()), d));
  if (training) {  // the running stats were updated in place unless they needed a converted copy
    if (has_rm && !rm.is_same(*running_mean)) const_cast<T&>(*running_mean).copy_(rm);
    if (has_rv && !rv.is_same(*running_var)) const_cast<T&>(*running_var).copy_(rv);
  } else {
    // Evaluation: CUDA returns the statistics it normalised with, [C] (CPU returns empty tensors). So do ATen's
    // decomposition for non-CPU devices and the meta function, which torch.compile's graphs follow.
    save_mean = rm.clone();
    save_invstd = rv.add(eps).rsqrt_();
  }
  return {y, save_mean, save_invstd};
}

::std::tuple<at::Tensor, at::Tensor, at::Tensor> NF::_native_batch_norm_legit(const T& x, const std::optional<T>& w,
                                                                              const std::optional<T>& b, T& rm, T& rv,
                                                                              bool training, double momentum,
                                                                              double eps) {
  return NF::native_batch_norm(x, w, b, rm, rv, training, momentum, eps);
}

::std::tuple<at::Tensor, at::Tensor, at::Tensor> NF::_native_batch_norm_legit(const T& x, const std::optional<T>& w,
                                                                              const std::optional<T>& b, bool training,
                                                                              double momentum, double eps) {
  return NF::native_batch_norm(x, w, b, std::nullopt, std::nullopt, training, momentum, eps);
}

std::tuple<T, T, T> NF::native_batch_norm_backward(const T& grad_out, const T& input, const std::optional<T>& weight,
                                                   const std::optional<T>& running_mean,
                                                   const std::optional<T>& running_var,
                                                   const std::optional<T>& save_mean,
                                                   const std::optional<T>& save_invstd, bool train, double eps,
                                                   std::array<bool, 3> mask) {
  check_npu(input, "native_batch_norm_backward");
  c10::DeviceGuard guard(input.device());
  const auto acc = bn_acc(input);
  const T x = input.contiguous();
  const T dy = grad_out.to(x.scalar_type()).contiguous();
  const int64_t C = x.size(1);
  const T w = bn_param(weight, acc);
  const T rm = bn_param(running_mean, acc), rv = bn_param(running_var, acc);
  const T sm = bn_param(save_mean, acc), si = bn_param(save_invstd, acc);
  TORCH_CHECK(train ? (sm.defined() && si.defined()) : (rm.defined() && rv.defined()),
              "native_batch_norm_backward: missing saved statistics");
  T dx = mask[0] ? at::empty(x.sizes(), x.options()) : T();
  T dw = mask[1] ? at::empty({C}, x.options().dtype(acc)) : T();
  T db = mask[2] ? at::empty({C}, x.options().dtype(acc)) : T();
  npu_kernels::BatchNormDesc d;
  d.dtype = kernel_dtype(x.scalar_type(), "native_batch_norm_backward");
  d.N = x.size(0);
  d.C = C;
  d.HW = C > 0 && d.N > 0 ? x.numel() / (d.N * C) : 0;
  d.training = train;
  d.eps = eps;
  d.x = x.const_data_ptr();
  d.dy = dy.const_data_ptr();
  d.weight = w.defined() ? w.const_data_ptr() : nullptr;
  d.running_mean = rm.defined() ? const_cast<void*>(rm.const_data_ptr()) : nullptr;
  d.running_var = rv.defined() ? const_cast<void*>(rv.const_data_ptr()) : nullptr;
  d.save_mean = sm.defined() ? const_cast<void*>(sm.const_data_ptr()) : nullptr;
  d.save_invstd = si.defined() ? const_cast<void*>(si.const_data_ptr()) : nullptr;
  d.dx = dx.defined() ? dx.data_ptr() : nullptr;
  d.dweight = dw.defined() ? dw.data_ptr() : nullptr;
  d.dbias = db.defined() ? db.data_ptr() : nullptr;
  NPU_CHECK(npu_kernels::batch_norm_backward(current_native_stream(input.device().index()), d));
  const bool has_w = weight.has_value() && weight->defined();
  const auto wtype = has_w ? weight->scalar_type() : x.scalar_type();
  if (dw.defined() && dw.scalar_type() != wtype) dw = dw.to(wtype);
  if (db.defined() && db.scalar_type() != wtype) db = db.to(wtype);
  return {dx, dw, db};
}

// The training-mode entry of newer ATen graphs: the same kernel, no reserve space (an empty one, as CPU).
::std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> NF::_batch_norm_with_update(
    const T& x, const std::optional<T>& w, const std::optional<T>& b, T& rm, T& rv, double momentum, double eps) {
  auto [y, mean, invstd] = NF::native_batch_norm(x, w, b, rm, rv, true, momentum, eps);
  return std::make_tuple(y, mean, invstd, at::empty({0}, x.options().dtype(at::kByte)));
}

::std::tuple<at::Tensor, at::Tensor, at::Tensor> NF::batch_norm_backward(
    const T& g, const T& x, const T& w, const std::optional<T>& rm, const std::optional<T>& rv,
    const std::optional<T>& save_mean, const std::optional<T>& save_var, bool update, double eps,
    std::array<bool, 3> mask, const T& /*reserve*/) {
  return NF::native_batch_norm_backward(g, x, w, rm, rv, save_mean, save_var, update, eps, mask);
}

// nn.utils.weight_norm: w = v * g / ||v||, the norm over every dim but `dim` (the first or the last: ATen's fused
// kernels take only those, and torch._weight_norm composes the others itself). The norms are returned in the
// accumulation type (float32 for 16-bit v), as CPU and CUDA return them. Composed of npu kernels: the op ran on
// the CPU fallback before (a device-to-host round trip per call, and an error under strict mode).
namespace {
// v's shape with 1 in every dim but `dim` (the shape of g and of the norms), after checking `dim`.
std::vector<int64_t> weight_norm_shape(const char* op, const T& v, int64_t dim, std::vector<int64_t>* reduced) {
  TORCH_CHECK(v.dim() > 0 && (dim == 0 || dim == v.dim() - 1), op,
              ": fused kernels can only be applied for first or last dim, got dim ", dim, " of a ", v.dim(),
              "-d tensor");
  std::vector<int64_t> keep(v.dim(), 1);
  keep[dim] = v.size(dim);
  for (int64_t d = 0; d < v.dim(); ++d) {
    if (d != dim) reduced->push_back(d);
  }
  return keep;
}
}  // namespace

std::tuple<T, T> NF::_weight_norm_interface(const T& v, const T& g, int64_t dim) {
  constexpr const char* op = "_weight_norm_interface";
  check_npu(v, op);
  check_device_arg(op, "g", g, v.device());
  std::vector<int64_t> reduced;
  const std::vector<int64_t> keep = weight_norm_shape(op, v, dim, &reduced);
  TORCH_CHECK(g.numel() == v.size(dim), op, ": argument 'g' must have ", v.size(dim), " elements (v's size in dim ",
              dim, "), got shape ", g.sizes());
  c10::DeviceGuard guard(v.device());
  const auto acc = at::toOpMathType(v.scalar_type());
  // a 1-d v: no dim is reduced, each element is its own norm (an empty dim list would reduce them all)
  const T norms = reduced.empty() ? v.to(acc).abs() : at::linalg_vector_norm(v, 2, reduced, /*keepdim=*/true, acc);
  const T w = v.to(acc).mul(g.to(acc).reshape(keep).div(norms)).to(v.scalar_type());
  return {w, norms.reshape(g.sizes())};
}

std::tuple<T, T> NF::_weight_norm_interface_backward(const T& grad_w, const T& saved_v, const T& saved_g,
                                                     const T& saved_norms, int64_t dim) {
  constexpr const char* op = "_weight_norm_interface_backward";
  check_npu(saved_v, op);
  check_device_arg(op, "grad_w", grad_w, saved_v.device());
  check_device_arg(op, "saved_g", saved_g, saved_v.device());
  check_device_arg(op, "saved_norms", saved_norms, saved_v.device());
  std::vector<int64_t> reduced;
  const std::vector<int64_t> keep = weight_norm_shape(op, saved_v, dim, &reduced);
  TORCH_CHECK(grad_w.sizes() == saved_v.sizes(), op, ": argument 'grad_w' of shape ", grad_w.sizes(),
              " must match saved_v ", saved_v.sizes());
  TORCH_CHECK(saved_g.numel() == keep[dim] && saved_norms.numel() == keep[dim], op,
              ": arguments 'saved_g' and 'saved_norms' must have ", keep[dim], " elements, got shapes ",
              saved_g.sizes(), " and ", saved_norms.sizes());
  c10::DeviceGuard guard(saved_v.device());
  const auto acc = at::toOpMathType(saved_v.scalar_type());
  const T gw = grad_w.to(acc), v = saved_v.to(acc);
  const T g = saved_g.to(acc).reshape(keep), n = saved_norms.to(acc).reshape(keep);
  T grad_g = gw.mul(v);  // d/dg: sum(grad_w * v) / ||v||
  if (!reduced.empty()) grad_g = grad_g.sum(reduced, /*keepdim=*/true);
  grad_g.div_(n);
  // d/dv: (g / ||v||) (grad_w - v grad_g / ||v||)
  const T grad_v = gw.sub(v.mul(grad_g.div(n))).mul_(g.div(n));
  return {grad_v.to(saved_v.scalar_type()), grad_g.reshape(saved_g.sizes()).to(saved_g.scalar_type())};
}

// native_group_norm with CUDA's checks (X contiguous, X.numel() == N * C * HxW, C divisible by group, per-channel
// weight and bias) and CUDA's arithmetic: statistics and the affine step in the accumulation type, one rounding to X's
// dtype at the end. Without it ATen's math_group_norm ran, which rounds the normalized value to float16/bfloat16
// before the affine step and accepts non-contiguous inputs CUDA refuses.
std::tuple<T, T, T> NF::native_group_norm(const T& X, const std::optional<T>& gamma_opt,
                                          const std::optional<T>& beta_opt, int64_t N, int64_t C, int64_t HxW,
                                          int64_t group, double eps) {
  check_npu(X, "native_group_norm");
  const T gamma = gamma_opt.value_or(T()), beta = beta_opt.value_or(T());
  TORCH_CHECK(group > 0, "Expected num groups to be greater than 0, got ", group);
  TORCH_CHECK(C % group == 0,
              "Expected number of channels in input to be divisible by num_groups, but got input of "
              "shape ",
              X.sizes(), " and num_groups=", group);
  TORCH_CHECK(!gamma.defined() || (gamma.dim() == 1 && gamma.numel() == C),
              "Expected weight to be a vector of size "
              "equal to the number of channels in input, but got weight of shape ",
              gamma.sizes(), " and input of shape ", X.sizes());
  TORCH_CHECK(!beta.defined() || (beta.dim() == 1 && beta.numel() == C),
              "Expected bias to be a vector of size equal "
              "to the number of channels in input, but got bias of shape ",
              beta.sizes(), " and input of shape ", X.sizes());
  for (const T* p : {&gamma, &beta}) {
    if (p->defined()) check_device_arg("native_group_norm", "weight/bias", *p, X.device());
  }
  TORCH_CHECK(X.is_contiguous(), "Expected X.is_contiguous(memory_format) to be true, but got false.");
  TORCH_CHECK(X.numel() == N * C * HxW, "Expected X.numel() == N * C * HxW to be true, but got false.");
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(X.scalar_type()), "native_group_norm: expected a floating point "
                              "input, got ", X.scalar_type());
  const at::ScalarType ptype = gamma.defined() ? gamma.scalar_type() : beta.defined() ? beta.scalar_type()
                                                                                      : X.scalar_type();
  const bool mixed = ptype != X.scalar_type();
  TORCH_CHECK(!mixed || (at::isReducedFloatingType(X.scalar_type()) && ptype == at::kFloat),
              "mixed dtype: expect parameter to have scalar type of Float and the input a reduced floating type");
  c10::DeviceGuard guard(X.device());
  const auto acc = bn_acc(X);
  const T xf = X.to(acc).view({N, group, N * group == 0 ? 0 : -1});
  auto [var, mean] = at::var_mean(xf, {2}, /*correction=*/0, /*keepdim=*/true);
  const T rstd = var.add(eps).rsqrt();
  T y = xf.sub(mean).mul_(rstd).view({N, C, HxW});
  if (gamma.defined()) y.mul_(gamma.to(acc).view({1, C, 1}));
  if (beta.defined()) y.add_(beta.to(acc).view({1, C, 1}));
  const auto stats_type = mixed ? at::kFloat : X.scalar_type();
  return {y.to(X.scalar_type()).view(X.sizes()), mean.view({N, group}).to(stats_type),
          rstd.view({N, group}).to(stats_type)};
}

std::tuple<T, T, T> NF::native_group_norm_backward(const T& grad_out, const T& input, const T& mean, const T& rstd,
                                                   const std::optional<T>& weight, int64_t N, int64_t C, int64_t HxW,
                                                   int64_t group, std::array<bool, 3> mask) {
  check_npu(input, "native_group_norm_backward");
  TORCH_CHECK(group > 0 && C % group == 0, "native_group_norm_backward: C (", C, ") must be divisible by group (",
              group, ")");
  c10::DeviceGuard guard(input.device());
  const auto acc = bn_acc(input);
  const T x = input.contiguous();
  const T dy = grad_out.to(x.scalar_type()).contiguous();
  const T mu = mean.to(acc).contiguous(), rs = rstd.to(acc).contiguous();
  const T w = bn_param(weight, acc);
  T dx = mask[0] ? at::empty(x.sizes(), x.options()) : T();
  T dw = mask[1] ? at::empty({C}, x.options().dtype(acc)) : T();
  T db = mask[2] ? at::empty({C}, x.options().dtype(acc)) : T();
  npu_kernels::GroupNormBackwardDesc d;
  d.dtype = kernel_dtype(x.scalar_type(), "native_group_norm_backward");
  d.N = N;
  d.C = C;
  d.HW = HxW;
  d.G = group;
  d.dy = dy.const_data_ptr();
  d.x = x.const_data_ptr();
  d.mean = mu.const_data_ptr();
  d.rstd = rs.const_data_ptr();
  d.weight = w.defined() ? w.const_data_ptr() : nullptr;
  d.dx = dx.defined() ? dx.data_ptr() : nullptr;
  d.dweight = dw.defined() ? dw.data_ptr() : nullptr;
  d.dbias = db.defined() ? db.data_ptr() : nullptr;
  NPU_CHECK(npu_kernels::group_norm_backward(current_native_stream(input.device().index()), d));
  const auto wtype = weight.has_value() && weight->defined() ? weight->scalar_type() : x.scalar_type();
  if (dw.defined() && dw.scalar_type() != wtype) dw = dw.to(wtype);
  if (db.defined() && db.scalar_type() != wtype) db = db.to(wtype);
  return {dx, dw, db};
}

T NF::mse_loss(const T& s, const T& t, int64_t r) {
  T o = at::empty({0}, s.options().dtype(loss_type(LossKind::kMse, s, t)));
  return loss_forward(LossKind::kMse, "mse_loss", s, t, T(), r, 0, o);
}

T& NF::mse_loss_out(const T& s, const T& t, int64_t r, T& o) {
  return loss_forward(LossKind::kMse, "mse_loss", s, t, T(), r, 0, o);
}

T NF::mse_loss_backward(const T& g, const T& s, const T& t, int64_t r) {
  T o = fresh(s);
  return loss_backward(LossKind::kMse, "mse_loss_backward", g, s, t, T(), r, 0, o);
}

T& NF::mse_loss_backward_out(const T& g, const T& s, const T& t, int64_t r, T& o) {
  return loss_backward(LossKind::kMse, "mse_loss_backward", g, s, t, T(), r, 0, o);
}

T NF::smooth_l1_loss(const T& s, const T& t, int64_t r, double beta) {
  T o = at::empty({0}, s.options().dtype(loss_type(LossKind::kSmoothL1, s, t)));
  return loss_forward(LossKind::kSmoothL1, "smooth_l1_loss", s, t, T(), r, beta, o);
}

T& NF::smooth_l1_loss_out(const T& s, const T& t, int64_t r, double beta, T& o) {
  return loss_forward(LossKind::kSmoothL1, "smooth_l1_loss", s, t, T(), r, beta, o);
}

T NF::smooth_l1_loss_backward(const T& g, const T& s, const T& t, int64_t r, double beta) {
  T o = fresh(s);
  return loss_backward(LossKind::kSmoothL1, "smooth_l1_loss_backward", g, s, t, T(), r, beta, o);
}

T& NF::smooth_l1_loss_backward_out(const T& g, const T& s, const T& t, int64_t r, double beta, T& o) {
  return loss_backward(LossKind::kSmoothL1, "smooth_l1_loss_backward", g, s, t, T(), r, beta, o);
}

T NF::huber_loss(const T& s, const T& t, int64_t r, double delta) {
  TORCH_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  T o = fresh(s);
  return loss_forward(LossKind::kHuber, "huber_loss", s, t, T(), r, delta, o);
}

T& NF::huber_loss_out(const T& s, const T& t, int64_t r, double delta, T& o) {
  TORCH_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  return loss_forward(LossKind::kHuber, "huber_loss", s, t, T(), r, delta, o);
}

T& NF::huber_loss_backward_out(const T& g, const T& s, const T& t, int64_t r, double delta, T& o) {
  return loss_backward(LossKind::kHuber, "huber_loss_backward", g, s, t, T(), r, delta, o);
}

T NF::binary_cross_entropy(const T& s, const T& t, const std::optional<T>& w, int64_t r) {
  T o = fresh(s);
  return loss_forward(LossKind::kBce, "binary_cross_entropy", s, t, opt(w), r, 0, o);
}

T& NF::binary_cross_entropy_out(const T& s, const T& t, const std::optional<T>& w, int64_t r, T& o) {
  return loss_forward(LossKind::kBce, "binary_cross_entropy", s, t, opt(w), r, 0, o);
}

T NF::binary_cross_entropy_backward(const T& g, const T& s, const T& t, const std::optional<T>& w, int64_t r) {
  T o = fresh(s);
  return loss_backward(LossKind::kBce, "binary_cross_entropy_backward", g, s, t, opt(w), r, 0, o);
}

T& NF::binary_cross_entropy_backward_out(const T& g, const T& s, const T& t, const std::optional<T>& w, int64_t r,
                                         T& o) {
  return loss_backward(LossKind::kBce, "binary_cross_entropy_backward", g, s, t, opt(w), r, 0, o);
}

}  // namespace torch_npu_sim
