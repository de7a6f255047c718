// Registration of the activation-style pointwise ops pointwise_ops.cpp does not hold: hardswish,
// log_sigmoid, prelu, logit, hard/soft shrink, glu, heaviside, logaddexp(2), clamp_min/max with tensor
// bounds, with their backward ops. ATen's meta functions or TensorIterator builders do shapes and
// checks; the math is in kernels/src/{unary,binary,ternary}_ops.cpp.
#include <ATen/TensorIterator.h>
#include <ATen/ops/clamp_max_meta.h>
#include <ATen/ops/clamp_min_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/glu_meta.h>
#include <ATen/ops/hardshrink_backward_meta.h>
#include <ATen/ops/hardshrink_meta.h>
#include <ATen/ops/heaviside_meta.h>
#include <ATen/ops/logaddexp2_meta.h>
#include <ATen/ops/logaddexp_meta.h>
#include <ATen/ops/logit_backward_meta.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/rsub.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/softshrink_backward_meta.h>
#include <ATen/ops/softshrink_meta.h>
#include <ATen/ops/cat.h>
#include <torch/library.h>

#include "aten/pointwise.h"
#include "fallback/dtype_fallback.h"
#include "aten/structured.h"

namespace torch_npu_sim {
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

T& npu_hardswish_out(const T& self, T& out) {
  auto iter = at::TensorIterator::unary_op(out, self);
  unary_kernel(UnaryOp::kHardswish)(iter);
  return out;
}

T npu_hardswish_backward(const T& grad, const T& self) {
  at::TensorBase out;
  auto iter = at::TensorIterator::binary_op(out, grad, self);
  binary_kernel(BinaryOp::kHardswishBackward)(iter);
  return iter.output();
}

// The buffer CPU saves for its backward is not needed here (CUDA returns an empty one too).
std::tuple<T&, T&> npu_log_sigmoid_forward_out(const T& self, T& output, T& buffer) {
  auto iter = at::TensorIterator::unary_op(output, self);
  unary_kernel(UnaryOp::kLogSigmoid)(iter);
  buffer.resize_({0});
  return {output, buffer};
}

// grad_input undefined: allocated by the iterator.
T log_sigmoid_backward_into(const T& grad, const T& self, at::TensorBase grad_input) {
  auto iter = at::TensorIterator::binary_op(grad_input, grad, self);
  binary_kernel(BinaryOp::kLogSigmoidBackward)(iter);
  return iter.output();
}

T& npu_logit_out(const T& self, std::optional<double> eps, T& out) {
  auto iter = at::TensorIterator::unary_float_op(out, self);
  unary_kernel(UnaryOp::kLogit, eps_params(eps))(iter);
  return out;
}

T npu_prelu_kernel(const T& self, const T& weight) {
  T result = at::empty_like(self);
  auto iter = at::TensorIteratorConfig().add_output(result).add_const_input(self).add_const_input(weight).build();
  binary_kernel(BinaryOp::kPrelu)(iter);
  return result;
}

// Both gradients have the broadcast shape (as on CPU); autograd sums the weight's down to its shape.
std::tuple<T, T> npu_prelu_kernel_backward(const T& grad, const T& self, const T& weight) {
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
T npu_glu_backward(const T& grad, const T& self, int64_t dim) {
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

}  // namespace

#define NPU_STRUCTURED_UNARY_SCALAR(name, META, OP)                                                     \
  m.impl(#name, [](const T& self, const S& v) {                                                         \
    return structured_functional<at::meta::structured_##META>(unary_kernel(OP, with_a(v)), self, v);    \
  });                                                                                                   \
  m.impl(#name ".out", [](const T& self, const S& v, T& out) -> T& {                                    \
    return structured_out<at::meta::structured_##META>(unary_kernel(OP, with_a(v)), out, self, v);      \
  });

#define NPU_STRUCTURED_BACKWARD_SCALAR(name, META, OP)                                                  \
  m.impl(#name, [](const T& g, const T& self, const S& v) {                                             \
    return structured_functional<at::meta::structured_##META>(binary_kernel(OP, with_a(v)), g, self, v); \
  });                                                                                                   \
  m.impl(#name ".grad_input", [](const T& g, const T& self, const S& v, T& out) -> T& {                 \
    return structured_out<at::meta::structured_##META>(binary_kernel(OP, with_a(v)), out, g, self, v);  \
  });

// (complex operands, which have no kernel, run on the CPU fallback: NPU_OR_CPU)
#define NPU_STRUCTURED_BINARY(name, META, OP)                                                           \
  m.impl(#name, [](const T& a, const T& b) {                                                            \
    return NPU_OR_CPU(T(const T&, const T&), #name, "",                                                 \
                      structured_functional<at::meta::structured_##META>(binary_kernel(OP), a, b), a, b); \
  });                                                                                                   \
  m.impl(#name ".out", [](const T& a, const T& b, T& out) -> T& {                                       \
    return NPU_OR_CPU(T&(const T&, const T&, T&), #name, "out",                                         \
                      structured_out<at::meta::structured_##META>(binary_kernel(OP), out, a, b), a, b, out); \
  });

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("hardswish", [](const T& self) {
    at::TensorBase out;
    auto iter = at::TensorIterator::unary_op(out, self);
    unary_kernel(UnaryOp::kHardswish)(iter);
    return iter.output();
  });
  m.impl("hardswish_", [](T& self) -> T& { return npu_hardswish_out(self, self); });
  m.impl("hardswish.out", npu_hardswish_out);
  m.impl("hardswish_backward", npu_hardswish_backward);

  m.impl("log_sigmoid_forward", [](const T& self) {
    T output = at::empty_like(self), buffer = at::empty({0}, self.options());
    npu_log_sigmoid_forward_out(self, output, buffer);
    return std::make_tuple(output, buffer);
  });
  m.impl("log_sigmoid_forward.output", npu_log_sigmoid_forward_out);
  m.impl("log_sigmoid_backward", [](const T& grad, const T& self, const T& /*buffer*/) {
    return log_sigmoid_backward_into(grad, self, at::TensorBase());
  });
  m.impl("log_sigmoid_backward.grad_input", [](const T& grad, const T& self, const T& /*buffer*/, T& out) -> T& {
    log_sigmoid_backward_into(grad, self, out);
    return out;
  });

  m.impl("logit", [](const T& self, std::optional<double> eps) {
    at::TensorBase out;
    auto iter = at::TensorIterator::unary_float_op(out, self);
    unary_kernel(UnaryOp::kLogit, eps_params(eps))(iter);
    return iter.output();
  });
  m.impl("logit_", [](T& self, std::optional<double> eps) -> T& { return npu_logit_out(self, eps, self); });
  m.impl("logit.out", npu_logit_out);
  m.impl("logit_backward", [](const T& g, const T& self, std::optional<double> eps) {
    return structured_functional<at::meta::structured_logit_backward>(
        binary_kernel(BinaryOp::kLogitBackward, eps_params(eps)), g, self, eps);
  });
  m.impl("logit_backward.grad_input", [](const T& g, const T& self, std::optional<double> eps, T& out) -> T& {
    return structured_out<at::meta::structured_logit_backward>(
        binary_kernel(BinaryOp::kLogitBackward, eps_params(eps)), out, g, self, eps);
  });

  NPU_STRUCTURED_UNARY_SCALAR(hardshrink, hardshrink, UnaryOp::kHardshrink)
  NPU_STRUCTURED_UNARY_SCALAR(softshrink, softshrink, UnaryOp::kSoftshrink)
  NPU_STRUCTURED_BACKWARD_SCALAR(hardshrink_backward, hardshrink_backward, BinaryOp::kHardshrinkBackward)
  NPU_STRUCTURED_BACKWARD_SCALAR(softshrink_backward, softshrink_backward, BinaryOp::kSoftshrinkBackward)

  NPU_STRUCTURED_BINARY(logaddexp, logaddexp, BinaryOp::kLogaddexp)
  NPU_STRUCTURED_BINARY(logaddexp2, logaddexp2, BinaryOp::kLogaddexp2)
  NPU_STRUCTURED_BINARY(heaviside, heaviside, BinaryOp::kHeaviside)
  m.impl("heaviside_", [](T& self, const T& values) -> T& {
    return structured_inplace<at::meta::structured_heaviside>(binary_kernel(BinaryOp::kHeaviside), self, values);
  });

  // clamp_min/clamp_max with a tensor bound are maximum/minimum (NaN from either side propagates, as on CPU).
  m.impl("clamp_min.Tensor", [](const T& self, const T& lo) {
    return structured_functional<at::meta::structured_clamp_min_Tensor>(binary_kernel(BinaryOp::kMaximum), self, lo);
  });
  m.impl("clamp_min_.Tensor", [](T& self, const T& lo) -> T& {
    return structured_inplace<at::meta::structured_clamp_min_Tensor>(binary_kernel(BinaryOp::kMaximum), self, lo);
  });
  m.impl("clamp_min.Tensor_out", [](const T& self, const T& lo, T& out) -> T& {
    return structured_out<at::meta::structured_clamp_min_Tensor>(binary_kernel(BinaryOp::kMaximum), out, self, lo);
  });
  m.impl("clamp_max.Tensor", [](const T& self, const T& hi) {
    return structured_functional<at::meta::structured_clamp_max_Tensor>(binary_kernel(BinaryOp::kMinimum), self, hi);
  });
  m.impl("clamp_max_.Tensor", [](T& self, const T& hi) -> T& {
    return structured_inplace<at::meta::structured_clamp_max_Tensor>(binary_kernel(BinaryOp::kMinimum), self, hi);
  });
  m.impl("clamp_max.Tensor_out", [](const T& self, const T& hi, T& out) -> T& {
    return structured_out<at::meta::structured_clamp_max_Tensor>(binary_kernel(BinaryOp::kMinimum), out, self, hi);
  });

  m.impl("_prelu_kernel", npu_prelu_kernel);
  m.impl("_prelu_kernel_backward", npu_prelu_kernel_backward);

  m.impl("glu", [](const T& self, int64_t dim) {
    return structured_functional<at::meta::structured_glu>(binary_kernel(BinaryOp::kGlu), self, dim);
  });
  m.impl("glu.out", [](const T& self, int64_t dim, T& out) -> T& {
    return structured_out<at::meta::structured_glu>(binary_kernel(BinaryOp::kGlu), out, self, dim);
  });
  m.impl("glu_backward", npu_glu_backward);
}

}  // namespace torch_npu_sim
