// Registration of the activation-style pointwise ops pointwise_ops.cpp does not hold: rrelu, hardswish,
// log_sigmoid, prelu, logit, hard/soft shrink, glu, heaviside, logaddexp(2), clamp_min/max with tensor
// bounds, with their backward ops. ATen's meta functions or TensorIterator builders do shapes and
// checks; the math is in kernels/src/{unary,binary,ternary}_ops.cpp.
#include <ATen/TensorIterator.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/logit_backward_meta.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/rsub.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/leaky_relu.h>
#include <ATen/ops/where.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/pointwise.h"
#include "fallback/dtype_fallback.h"
#include "aten/structured.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using npu_kernels::BinaryOp;
using npu_kernels::PointwiseParams;
using npu_kernels::TernaryOp;
using npu_kernels::UnaryOp;
using T = at::Tensor;
using S = c10::Scalar;

PointwiseParams eps_params(std::optional<double> eps) {
  PointwiseParams p;
  if (eps) {
    p.a = *eps;
    p.has_a = true;
  }
  return p;
}

// grad_input undefined: allocated by the iterator.
T log_sigmoid_backward_into(const T& grad, const T& self, at::TensorBase grad_input) {
  return binary_into(grad_input, grad, self, BinaryOp::kLogSigmoidBackward);
}

// rrelu: CPU's checks; in training every input <= 0 is scaled by a fresh U(lower, upper) draw that noise records
// (1 elsewhere); in evaluation leaky_relu with the slope (lower + upper) / 2 taken in double, as CPU.
void rrelu_check(const T& self, const T& noise) {
  TORCH_CHECK(self.sym_sizes() == noise.sym_sizes(), "noise tensor shape must match self tensor shape. Got self.shape = ",
              self.sym_sizes(), " noise.shape = ", noise.sym_sizes());
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"rrelu_with_noise_out_npu\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
}
double rrelu_eval_slope(const S& lower, const S& upper) { return (lower.toDouble() + upper.toDouble()) / 2; }
T rrelu_train(const T& self, const T& noise, const S& lower, const S& upper, const std::optional<at::Generator>& gen) {
  const T r = at::empty_like(self, at::MemoryFormat::Contiguous).uniform_(lower.toDouble(), upper.toDouble(), gen);
  const T neg = self.le(0);
  noise.copy_(at::where(neg, r, 1));
  return at::where(neg, at::mul(self, r), self);
}

}  // namespace

T NF::rrelu_with_noise(const T& self, T& noise, const S& lower, const S& upper, bool training,
                       std::optional<at::Generator> gen) {
  rrelu_check(self, noise);
  return training ? rrelu_train(self, noise, lower, upper, gen) : at::leaky_relu(self, rrelu_eval_slope(lower, upper));
}

T& NF::rrelu_with_noise_(T& self, T& noise, const S& lower, const S& upper, bool training,
                         std::optional<at::Generator> gen) {
  rrelu_check(self, noise);
  if (!training) return at::leaky_relu_(self, rrelu_eval_slope(lower, upper));
  return self.copy_(rrelu_train(self, noise, lower, upper, gen));
}

T& NF::rrelu_with_noise_out(const T& self, T& noise, const S& lower, const S& upper, bool training,
                            std::optional<at::Generator> gen, T& out) {
  rrelu_check(self, noise);
  if (!training) return at::leaky_relu_out(out, self, rrelu_eval_slope(lower, upper));
  const T r = rrelu_train(self, noise, lower, upper, gen);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

T NF::hardswish(const T& self) {
  at::TensorBase out;
  return unary_into(out, self, UnaryOp::kHardswish);
}

T& NF::hardswish_(T& self) { return NF::hardswish_out(self, self); }

T& NF::hardswish_out(const T& self, T& out) {
  unary_into(out, self, UnaryOp::kHardswish);
  return out;
}

T NF::hardswish_backward(const T& grad, const T& self) {
  at::TensorBase out;
  return binary_into(out, grad, self, BinaryOp::kHardswishBackward);
}

::std::tuple<at::Tensor, at::Tensor> NF::log_sigmoid_forward(const T& self) {
  T output = at::empty_like(self), buffer = at::empty({0}, self.options());
  NF::log_sigmoid_forward_out(self, output, buffer);
  return std::make_tuple(output, buffer);
}

// The buffer CPU saves for its backward is not needed here (CUDA returns an empty one too).
std::tuple<T&, T&> NF::log_sigmoid_forward_out(const T& self, T& output, T& buffer) {
  auto iter = at::TensorIterator::unary_op(output, self);
  unary_kernel(UnaryOp::kLogSigmoid)(iter);
  buffer.resize_({0});
  return {output, buffer};
}

T NF::log_sigmoid_backward(const T& grad, const T& self, const T& /*buffer*/) {
  return log_sigmoid_backward_into(grad, self, at::TensorBase());
}

T& NF::log_sigmoid_backward_out(const T& grad, const T& self, const T& /*buffer*/, T& out) {
  log_sigmoid_backward_into(grad, self, out);
  return out;
}

T NF::logit(const T& self, std::optional<double> eps) {
  at::TensorBase out;
  auto iter = at::TensorIterator::unary_float_op(out, self);
  unary_kernel(UnaryOp::kLogit, eps_params(eps))(iter);
  return iter.output();
}

T& NF::logit_(T& self, std::optional<double> eps) { return NF::logit_out(self, eps, self); }

T& NF::logit_out(const T& self, std::optional<double> eps, T& out) {
  auto iter = at::TensorIterator::unary_float_op(out, self);
  unary_kernel(UnaryOp::kLogit, eps_params(eps))(iter);
  return out;
}

T NF::logit_backward(const T& g, const T& self, std::optional<double> eps) {
  return structured_functional<at::meta::structured_logit_backward>(
      binary_kernel(BinaryOp::kLogitBackward, eps_params(eps)), g, self, eps);
}

T& NF::logit_backward_out(const T& g, const T& self, std::optional<double> eps, T& out) {
  return structured_out<at::meta::structured_logit_backward>(binary_kernel(BinaryOp::kLogitBackward, eps_params(eps)),
                                                             out, g, self, eps);
}

T NF::_prelu_kernel(const T& self, const T& weight) {
  T result = at::empty_like(self);
  auto iter = at::TensorIteratorConfig().add_output(result).add_const_input(self).add_const_input(weight).build();
  binary_kernel(BinaryOp::kPrelu)(iter);
  return result;
}

// Both gradients have the broadcast shape (as on CPU); autograd sums the weight's down to its shape.
std::tuple<T, T> NF::_prelu_kernel_backward(const T& grad, const T& self, const T& weight) {
  T grad_self, grad_weight;
  auto it_self = at::TensorIteratorConfig()
                     .add_output(grad_self)
                     .add_const_input(self)
                     .add_const_input(weight)
                     .add_const_input(grad)
                     .build();
  ternary_kernel(TernaryOp::kPreluGradInput)(it_self);
  auto it_weight =
      at::TensorIteratorConfig().add_output(grad_weight).add_const_input(self).add_const_input(grad).build();
  binary_kernel(BinaryOp::kPreluGradWeight)(it_weight);
  return {it_self.output(), it_weight.output()};
}

// glu's backward is a composition of native ops: d/da = sigmoid(b) * g, d/db = a * sigmoid(b) * (1 - sigmoid(b)) * g.
T NF::glu_backward(const T& grad, const T& self, int64_t dim) {
  TORCH_CHECK(self.dim() > 0, "glu does not support 0-dimensional tensors");
  const int64_t wrap = c10::maybe_wrap_dim(dim, self.dim());
  const int64_t n = self.size(wrap);
  TORCH_CHECK(n % 2 == 0, "Halving dimension must be even, but dimension ", wrap, " is size ", n);
  const T a = self.narrow(wrap, 0, n / 2), b = self.narrow(wrap, n / 2, n / 2);
  const T sig = at::sigmoid(b);
  const T grad_a = at::mul(sig, grad);
  const T grad_b = at::mul(at::mul(grad_a, at::rsub(sig, 1)), a);
  return at::cat({grad_a, grad_b}, wrap);
}

}  // namespace torch_npu_sim
