// Registration of the pointwise ops for npu: each op runs ATen's structured meta function (shape,
// broadcasting, promotion, checks) through NpuStructured, then our elementwise kernel. No math here.
#include <c10/util/Exception.h>
#include <ATen/TensorIterator.h>
#include <ATen/ops/add_meta.h>
#include <ATen/ops/addcdiv_meta.h>
#include <ATen/ops/addcmul_meta.h>
#include <ATen/ops/atan2_meta.h>
#include <ATen/ops/bitwise_and_meta.h>
#include <ATen/ops/bitwise_not_meta.h>
#include <ATen/ops/bitwise_or_meta.h>
#include <ATen/ops/bitwise_xor_meta.h>
#include <ATen/ops/clamp_max_meta.h>
#include <ATen/ops/clamp_meta.h>
#include <ATen/ops/clamp_min_meta.h>
#include <ATen/ops/copysign_meta.h>
#include <ATen/ops/div_meta.h>
#include <ATen/ops/elu_backward_meta.h>
#include <ATen/ops/elu_meta.h>
#include <ATen/ops/eq_meta.h>
#include <ATen/ops/fmax_meta.h>
#include <ATen/ops/fmin_meta.h>
#include <ATen/ops/fmod_meta.h>
#include <ATen/ops/ge_meta.h>
#include <ATen/ops/gelu_backward_meta.h>
#include <ATen/ops/gelu_meta.h>
#include <ATen/ops/gt_meta.h>
#include <ATen/ops/hardsigmoid_backward_meta.h>
#include <ATen/ops/hardsigmoid_meta.h>
#include <ATen/ops/hypot_meta.h>
#include <ATen/ops/le_meta.h>
#include <ATen/ops/leaky_relu_backward_meta.h>
#include <ATen/ops/leaky_relu_meta.h>
#include <ATen/ops/lerp_meta.h>
#include <ATen/ops/lt_meta.h>
#include <ATen/ops/maximum_meta.h>
#include <ATen/ops/minimum_meta.h>
#include <ATen/ops/mish_meta.h>
#include <ATen/ops/mul_meta.h>
#include <ATen/ops/ne_meta.h>
#include <ATen/ops/pow_meta.h>
#include <ATen/ops/remainder_meta.h>
#include <ATen/ops/sigmoid_backward_meta.h>
#include <ATen/ops/silu_backward_meta.h>
#include <ATen/ops/silu_meta.h>
#include <ATen/ops/softplus_backward_meta.h>
#include <ATen/ops/softplus_meta.h>
#include <ATen/ops/sub_meta.h>
#include <ATen/ops/tanh_backward_meta.h>
#include <ATen/ops/threshold_backward_meta.h>
#include <ATen/ops/threshold_meta.h>
#include <ATen/ops/xlogy_meta.h>
#include <ATen/ops/neg_meta.h>
#include <ATen/ops/sign_meta.h>
#include <ATen/ops/sign.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/pow.h>
#include <ATen/ScalarOps.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sqrt_meta.h>
#include <ATen/ops/rsqrt_meta.h>
#include <ATen/ops/exp_meta.h>
#include <ATen/ops/exp2_meta.h>
#include <ATen/ops/expm1_meta.h>
#include <ATen/ops/log_meta.h>
#include <ATen/ops/log2_meta.h>
#include <ATen/ops/log10_meta.h>
#include <ATen/ops/log1p_meta.h>
#include <ATen/ops/sin_meta.h>
#include <ATen/ops/cos_meta.h>
#include <ATen/ops/tan_meta.h>
#include <ATen/ops/asin_meta.h>
#include <ATen/ops/acos_meta.h>
#include <ATen/ops/atan_meta.h>
#include <ATen/ops/sinh_meta.h>
#include <ATen/ops/cosh_meta.h>
#include <ATen/ops/tanh_meta.h>
#include <ATen/ops/asinh_meta.h>
#include <ATen/ops/acosh_meta.h>
#include <ATen/ops/atanh_meta.h>
#include <ATen/ops/sigmoid_meta.h>
#include <ATen/ops/erf_meta.h>
#include <ATen/ops/erfc_meta.h>
#include <ATen/ops/floor_meta.h>
#include <ATen/ops/ceil_meta.h>
#include <ATen/ops/round_meta.h>
#include <ATen/ops/trunc_meta.h>
#include <ATen/ops/frac_meta.h>
#include <ATen/ops/reciprocal_meta.h>
#include <ATen/ops/signbit_meta.h>
#include <ATen/ops/lgamma_meta.h>
#include <ATen/ops/digamma_meta.h>
#include <ATen/ops/erfinv_meta.h>
#include <ATen/ops/polygamma_meta.h>
#include <ATen/ops/polygamma.h>
#include <ATen/ops/sinc_meta.h>
#include <torch/library.h>

#include "aten/pointwise.h"
#include "aten/structured.h"
#include "fallback/cpu_fallback.h"
#include "fallback/dtype_fallback.h"

namespace torch_npu_sim {
namespace {

using npu_kernels::BinaryOp;
using npu_kernels::PointwiseParams;
using npu_kernels::TernaryOp;
using npu_kernels::UnaryOp;

using T = at::Tensor;
using S = c10::Scalar;

}  // namespace

// One macro per schema shape: functional, in-place and out= flavours over the same meta + kernel. Each
// goes through NPU_OR_CPU: a dtype the kernel library lacks (complex, mostly) runs on the CPU fallback.

#define NPU_UNARY(name, META, OP)                                                                         \
  m.impl(#name, [](const T& self) {                                                                      \
    if (auto flat = flat_unary(OP, self)) return *std::move(flat);                                       \
    return NPU_OR_CPU(T(const T&), #name, "",                                                            \
                      structured_functional<at::meta::structured_##META>(unary_kernel(OP), self), self);   \
  });                                                                                                     \
  m.impl(#name "_", [](T& self) -> T& {                                                                  \
    if (flat_unary_(OP, self)) return self;                                                              \
    return NPU_OR_CPU(T&(T&), #name "_", "",                                                             \
                      structured_inplace<at::meta::structured_##META>(unary_kernel(OP), self), self);      \
  });                                                                                                     \
  m.impl(#name ".out", [](const T& self, T& out) -> T& {                                                 \
    return NPU_OR_CPU(T&(const T&, T&), #name, "out",                                                    \
                      structured_out<at::meta::structured_##META>(unary_kernel(OP), out, self), self, out); \
  });

#define NPU_BINARY(name, overload, META, OP)                                                              \
  m.impl(#name "." #overload, [](const T& a, const T& b) {                                               \
    if (auto flat = flat_binary(OP, a, b)) return *std::move(flat);                                      \
    return NPU_OR_CPU(T(const T&, const T&), #name, #overload,                                           \
                      structured_functional<at::meta::structured_##META>(binary_kernel(OP), a, b), a, b);  \
  });                                                                                                     \
  m.impl(#name "_." #overload, [](T& a, const T& b) -> T& {                                              \
    if (flat_binary_(OP, a, b)) return a;                                                                \
    return NPU_OR_CPU(T&(T&, const T&), #name "_", #overload,                                            \
                      structured_inplace<at::meta::structured_##META>(binary_kernel(OP), a, b), a, b);     \
  });                                                                                                     \
  m.impl(#name ".out", [](const T& a, const T& b, T& out) -> T& {                                        \
    return NPU_OR_CPU(T&(const T&, const T&, T&), #name, "out",                                          \
                      structured_out<at::meta::structured_##META>(binary_kernel(OP), out, a, b), a, b, out); \
  });

// Same, for ops whose schema has no overload name (maximum, fmax, ...).
#define NPU_BINARY_PLAIN(name, META, OP)                                                                  \
  m.impl(#name, [](const T& a, const T& b) {                                                             \
    return NPU_OR_CPU(T(const T&, const T&), #name, "",                                                  \
                      structured_functional<at::meta::structured_##META>(binary_kernel(OP), a, b), a, b);  \
  });                                                                                                     \
  m.impl(#name ".out", [](const T& a, const T& b, T& out) -> T& {                                        \
    return NPU_OR_CPU(T&(const T&, const T&, T&), #name, "out",                                          \
                      structured_out<at::meta::structured_##META>(binary_kernel(OP), out, a, b), a, b, out); \
  });

#define NPU_COMPARE(name, OP)                                                                             \
  NPU_BINARY(name, Tensor, name##_Tensor, OP)                                                             \
  m.impl(#name ".Scalar", [](const T& a, const S& b) {                                                   \
    return NPU_OR_CPU(T(const T&, const S&), #name, "Scalar",                                            \
                      structured_functional<at::meta::structured_##name##_Scalar>(binary_kernel(OP), a, b), a, b); \
  });                                                                                                     \
  m.impl(#name "_.Scalar", [](T& a, const S& b) -> T& {                                                  \
    return NPU_OR_CPU(T&(T&, const S&), #name "_", "Scalar",                                             \
                      structured_inplace<at::meta::structured_##name##_Scalar>(binary_kernel(OP), a, b), a, b); \
  });                                                                                                     \
  m.impl(#name ".Scalar_out", [](const T& a, const S& b, T& out) -> T& {                                 \
    return NPU_OR_CPU(T&(const T&, const S&, T&), #name, "Scalar_out",                                   \
                      structured_out<at::meta::structured_##name##_Scalar>(binary_kernel(OP), out, a, b), a, b, out); \
  });

#define NPU_BACKWARD2(name, META, OP)                                                                     \
  m.impl(#name, [](const T& g, const T& x) {                                                             \
    return NPU_OR_CPU(T(const T&, const T&), #name, "",                                                  \
                      structured_functional<at::meta::structured_##META>(binary_kernel(OP), g, x), g, x);  \
  });                                                                                                     \
  m.impl(#name ".grad_input", [](const T& g, const T& x, T& out) -> T& {                                 \
    return NPU_OR_CPU(T&(const T&, const T&, T&), #name, "grad_input",                                   \
                      structured_out<at::meta::structured_##META>(binary_kernel(OP), out, g, x), g, x, out); \
  });

// Ops without a structured meta function: libtorch's TensorIterator builders do the same job.
namespace {

T relu(const T& self) {
  at::TensorBase out;
  auto iter = at::TensorIterator::unary_op(out, self);
  unary_kernel(UnaryOp::kRelu)(iter);
  return iter.output();
}

T& relu_(T& self) {
  auto iter = at::TensorIterator::unary_op(self, self);
  unary_kernel(UnaryOp::kRelu)(iter);
  return self;
}

T& abs_out(const T& self, T& out) {
  if (self.is_complex()) throw_no_kernel_for_dtype(c10::str("abs: no npu kernel for dtype ", self.scalar_type()));
  auto iter = at::TensorIterator::unary_op(out, self);
  unary_kernel(UnaryOp::kAbs)(iter);
  return out;
}

T& sgn_out(const T& self, T& out) {  // real dtypes: sgn == sign; complex has no kernel
  if (self.is_complex()) throw_no_kernel_for_dtype(c10::str("sgn: no npu kernel for dtype ", self.scalar_type()));
  return at::sign_out(out, self);
}

T& logical_out(BinaryOp op, const T& a, const T& b, T& out) {
  auto iter = at::TensorIterator::comparison_op(out, a, b);
  binary_kernel(op)(iter);
  return out;
}

T npu_floor_divide(const T& a, const T& b) {
  at::TensorBase out;
  auto iter = at::TensorIterator::binary_op(out, a, b);
  binary_kernel(BinaryOp::kDivFloor)(iter);
  return iter.output();
}

T& npu_floor_divide_out(const T& a, const T& b, T& out) {
  auto iter = at::TensorIterator::binary_op(out, a, b);
  binary_kernel(BinaryOp::kDivFloor)(iter);
  return out;
}

T npu_isnan(const T& self) {
  // the output is allocated by the iterator: it keeps the input's layout, as CPU's self != self does
  T out;
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .declare_static_dtype_and_device(at::kBool, self.device())
                  .add_output(out)
                  .add_const_input(self)
                  .build();
  run_pointwise(iter, "isnan", true,
                [](npu_sim::Stream s, const npu_kernels::ElementwiseIter& e) {
                  return npu_kernels::unary(s, UnaryOp::kIsnan, e, {});
                },
                self.scalar_type());
  return iter.output();
}

T& where_out(const T& cond, const T& self, const T& other, T& out) {
  const T r = where(cond, self, other);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

// isposinf / isneginf: a bool predicate over the input's own dtype (integers are never infinite).
T& inf_predicate_out(UnaryOp op, const T& self, T& out) {
  TORCH_CHECK(out.scalar_type() == at::kBool, npu_kernels::op_name(op), " does not support non-boolean outputs.");
  at::native::resize_output(out, self.sizes());
  auto iter = at::TensorIteratorConfig().check_all_same_dtype(false).add_output(out).add_const_input(self).build();
  run_pointwise(iter, npu_kernels::op_name(op), true,
                [op](npu_sim::Stream s, const npu_kernels::ElementwiseIter& e) { return npu_kernels::unary(s, op, e, {}); },
                self.scalar_type());
  return out;
}

T& hardtanh_out(const T& self, const S& lo, const S& hi, T& out) {
  auto iter = at::TensorIterator::unary_op(out, self);
  unary_kernel(UnaryOp::kHardtanh, with_ab(lo, hi))(iter);
  return out;
}

// clamp with tensor bounds and rsub are compositions of native ops (no math of their own).
T clamp_tensor(const T& self, const std::optional<T>& lo, const std::optional<T>& hi) {
  TORCH_CHECK(lo.has_value() || hi.has_value(), "torch.clamp: At least one of 'min' or 'max' must not be None");
  T r = self;
  if (lo) r = at::maximum(r, *lo);
  if (hi) r = at::minimum(r, *hi);
  return r;
}

T& logical_not_out(const T& self, T& out) {
  auto iter = at::TensorIteratorConfig().check_all_same_dtype(false).add_output(out).add_const_input(self).build();
  run_pointwise(iter, "logical_not", true,
                [](npu_sim::Stream s, const npu_kernels::ElementwiseIter& e) {
                  return npu_kernels::unary(s, UnaryOp::kLogicalNot, e, {});
                },
                self.scalar_type());
  return out;
}

T where(const T& cond, const T& self, const T& other) {
  TORCH_CHECK(cond.scalar_type() == at::kBool || cond.scalar_type() == at::kByte,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ", cond.scalar_type());
  const auto type = at::result_type(self, other);
  at::Tensor out;
  const at::Tensor c = cond.to(type), a = self.to(type), b = other.to(type);
  auto iter = at::TensorIteratorConfig().add_output(out).add_const_input(c).add_const_input(a).add_const_input(b).build();
  ternary_kernel(TernaryOp::kWhere)(iter);
  return iter.output();
}

T& nan_to_num_out(const T& self, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf, T& out) {
  auto iter = at::TensorIterator::unary_op(out, self);
  if (!at::isFloatingType(self.scalar_type())) {
    out.copy_(self);  // integers have no NaN or infinity
    return out;
  }
  double hi = 0;
  switch (self.scalar_type()) {
    case at::kHalf: hi = 65504.0; break;
    case at::kBFloat16: hi = 3.3895313892515355e38; break;
    case at::kFloat: hi = std::numeric_limits<float>::max(); break;
    default: hi = std::numeric_limits<double>::max(); break;
  }
  PointwiseParams p;
  p.a = nan.value_or(0.0);
  p.b = posinf.value_or(hi);
  p.c = neginf.value_or(-hi);
  unary_kernel(UnaryOp::kNanToNum, p)(iter);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("relu", relu);
  m.impl("relu_", relu_);
  m.impl("abs.out", [](const T& self, T& out) -> T& {
    return NPU_OR_CPU(T&(const T&, T&), "abs", "out", abs_out(self, out), self, out);
  });
  m.impl("sgn.out", [](const T& self, T& out) -> T& {
    return NPU_OR_CPU(T&(const T&, T&), "sgn", "out", sgn_out(self, out), self, out);
  });
  // complex operands have no kernel: the CPU fallback (or_cpu), as CUDA accepts them
  m.impl("logical_and.out", or_cpu("aten::logical_and", "out", +[](const T& a, const T& b, T& out) -> T& {
    return logical_out(BinaryOp::kLogicalAnd, a, b, out);
  }));
  m.impl("logical_or.out", or_cpu("aten::logical_or", "out", +[](const T& a, const T& b, T& out) -> T& {
    return logical_out(BinaryOp::kLogicalOr, a, b, out);
  }));
  m.impl("logical_xor.out", or_cpu("aten::logical_xor", "out", +[](const T& a, const T& b, T& out) -> T& {
    return logical_out(BinaryOp::kLogicalXor, a, b, out);
  }));
  m.impl("logical_not.out", or_cpu("aten::logical_not", "out", logical_not_out));
  m.impl("where.self", or_cpu("aten::where", "self", where));
  m.impl("where.self_out", or_cpu("aten::where", "self_out", where_out));
  m.impl("isposinf.out", [](const T& self, T& out) -> T& { return inf_predicate_out(UnaryOp::kIsposinf, self, out); });
  m.impl("isneginf.out", [](const T& self, T& out) -> T& { return inf_predicate_out(UnaryOp::kIsneginf, self, out); });
  // complex has no kernel: the CPU fallback (CUDA accepts complex: NaN in either part)
  m.impl("isnan", [](const T& s) { return NPU_OR_CPU(T(const T&), "isnan", "", npu_isnan(s), s); });
  m.impl("clamp.Tensor", clamp_tensor);
  m.impl("clamp.Tensor_out", [](const T& self, const std::optional<T>& lo, const std::optional<T>& hi, T& out) -> T& {
    const T r = clamp_tensor(self, lo, hi);
    at::native::resize_output(out, r.sizes());
    return out.copy_(r);
  });
  m.impl("clamp_.Tensor", [](T& self, const std::optional<T>& lo, const std::optional<T>& hi) -> T& {
    return self.copy_(clamp_tensor(self, lo, hi));
  });
  m.impl("rsub.Tensor", [](const T& self, const T& other, const S& alpha) { return at::sub(other, self, alpha); });
  m.impl("round.decimals", [](const T& self, int64_t decimals) {
    PointwiseParams p;
    p.i = decimals;
    return structured_functional<at::meta::structured_round_decimals>(unary_kernel(UnaryOp::kRoundDecimals, p), self, decimals);
  });
  m.impl("round.decimals_out", [](const T& self, int64_t decimals, T& out) -> T& {
    PointwiseParams p;
    p.i = decimals;
    return structured_out<at::meta::structured_round_decimals>(unary_kernel(UnaryOp::kRoundDecimals, p), out, self, decimals);
  });
  m.impl("hardtanh.out", hardtanh_out);
  m.impl("hardtanh", [](const T& self, const S& lo, const S& hi) {
    at::Tensor out = at::empty_like(self);
    return hardtanh_out(self, lo, hi, out);
  });
  m.impl("hardtanh_", [](T& self, const S& lo, const S& hi) -> T& { return hardtanh_out(self, lo, hi, self); });
  m.impl("hardtanh_backward", [](const T& g, const T& x, const S& lo, const S& hi) {
    at::TensorBase out;
    auto iter = at::TensorIterator::binary_op(out, g, x);
    binary_kernel(BinaryOp::kHardtanhBackward, with_ab(lo, hi))(iter);
    return iter.output();
  });
  m.impl("floor_divide", npu_floor_divide);
  m.impl("floor_divide.out", npu_floor_divide_out);
  m.impl("floor_divide_.Tensor", [](T& a, const T& b) -> T& { return npu_floor_divide_out(a, b, a); });
  m.impl("nan_to_num.out", nan_to_num_out);

  // arithmetic with alpha
  m.impl("add.Tensor", [](const T& a, const T& b, const S& alpha) {
    if (!alpha.isComplex()) {  // a complex alpha is an error for real tensors: the structured path raises it
      if (auto flat = flat_binary(BinaryOp::kAdd, a, b, with_a(alpha))) return *std::move(flat);
    }
    return structured_functional<at::meta::structured_add_Tensor>(binary_kernel(BinaryOp::kAdd, with_a(alpha)), a, b, alpha);
  });
  m.impl("add_.Tensor", [](T& a, const T& b, const S& alpha) -> T& {
    if (!alpha.isComplex() && flat_binary_(BinaryOp::kAdd, a, b, with_a(alpha))) return a;
    return structured_inplace<at::meta::structured_add_Tensor>(binary_kernel(BinaryOp::kAdd, with_a(alpha)), a, b, alpha);
  });
  m.impl("add.out", [](const T& a, const T& b, const S& alpha, T& out) -> T& {
    return structured_out<at::meta::structured_add_Tensor>(binary_kernel(BinaryOp::kAdd, with_a(alpha)), out, a, b, alpha);
  });
  m.impl("sub.Tensor", [](const T& a, const T& b, const S& alpha) {
    if (!alpha.isComplex()) {  // a complex alpha is an error for real tensors: the structured path raises it
      if (auto flat = flat_binary(BinaryOp::kSub, a, b, with_a(alpha))) return *std::move(flat);
    }
    return structured_functional<at::meta::structured_sub_Tensor>(binary_kernel(BinaryOp::kSub, with_a(alpha)), a, b, alpha);
  });
  m.impl("sub_.Tensor", [](T& a, const T& b, const S& alpha) -> T& {
    if (!alpha.isComplex() && flat_binary_(BinaryOp::kSub, a, b, with_a(alpha))) return a;
    return structured_inplace<at::meta::structured_sub_Tensor>(binary_kernel(BinaryOp::kSub, with_a(alpha)), a, b, alpha);
  });
  m.impl("sub.out", [](const T& a, const T& b, const S& alpha, T& out) -> T& {
    return structured_out<at::meta::structured_sub_Tensor>(binary_kernel(BinaryOp::kSub, with_a(alpha)), out, a, b, alpha);
  });
  NPU_BINARY(mul, Tensor, mul_Tensor, BinaryOp::kMul)
  NPU_BINARY(div, Tensor, div_Tensor, BinaryOp::kDiv)
  NPU_BINARY(remainder, Tensor, remainder_Tensor, BinaryOp::kRemainder)
  NPU_BINARY(fmod, Tensor, fmod_Tensor, BinaryOp::kFmod)
  NPU_BINARY(copysign, Tensor, copysign_Tensor, BinaryOp::kCopysign)
  NPU_BINARY(xlogy, Tensor, xlogy_Tensor, BinaryOp::kXlogy)
  NPU_BINARY(bitwise_and, Tensor, bitwise_and_Tensor, BinaryOp::kBitwiseAnd)
  NPU_BINARY(bitwise_or, Tensor, bitwise_or_Tensor, BinaryOp::kBitwiseOr)
  NPU_BINARY(bitwise_xor, Tensor, bitwise_xor_Tensor, BinaryOp::kBitwiseXor)
  m.impl("div.Tensor_mode", [](const T& a, const T& b, std::optional<c10::string_view> mode) {
    const BinaryOp op = !mode ? BinaryOp::kDiv : (*mode == "trunc" ? BinaryOp::kDivTrunc : BinaryOp::kDivFloor);
    return structured_functional<at::meta::structured_div_Tensor_mode>(binary_kernel(op), a, b, mode);
  });
  m.impl("div_.Tensor_mode", [](T& a, const T& b, std::optional<c10::string_view> mode) -> T& {
    const BinaryOp op = !mode ? BinaryOp::kDiv : (*mode == "trunc" ? BinaryOp::kDivTrunc : BinaryOp::kDivFloor);
    return structured_inplace<at::meta::structured_div_Tensor_mode>(binary_kernel(op), a, b, mode);
  });
  m.impl("div.out_mode", [](const T& a, const T& b, std::optional<c10::string_view> mode, T& out) -> T& {
    const BinaryOp op = !mode ? BinaryOp::kDiv : (*mode == "trunc" ? BinaryOp::kDivTrunc : BinaryOp::kDivFloor);
    return structured_out<at::meta::structured_div_Tensor_mode>(binary_kernel(op), out, a, b, mode);
  });
  NPU_BINARY_PLAIN(maximum, maximum, BinaryOp::kMaximum)
  NPU_BINARY_PLAIN(minimum, minimum, BinaryOp::kMinimum)
  NPU_BINARY_PLAIN(fmax, fmax, BinaryOp::kFmax)
  NPU_BINARY_PLAIN(fmin, fmin, BinaryOp::kFmin)
  NPU_BINARY_PLAIN(atan2, atan2, BinaryOp::kAtan2)
  m.impl("atan2_", [](T& a, const T& b) -> T& {
    return structured_inplace<at::meta::structured_atan2>(binary_kernel(BinaryOp::kAtan2), a, b);
  });
  NPU_BINARY_PLAIN(hypot, hypot, BinaryOp::kHypot)
  m.impl("pow.Tensor_Tensor", [](const T& a, const T& b) {
    return NPU_OR_CPU(T(const T&, const T&), "pow", "Tensor_Tensor",
                      structured_functional<at::meta::structured_pow_Tensor_Tensor>(binary_kernel(BinaryOp::kPow), a, b),
                      a, b);
  });
  m.impl("pow_.Tensor", [](T& a, const T& b) -> T& {
    return NPU_OR_CPU(T&(T&, const T&), "pow_", "Tensor",
                      structured_inplace<at::meta::structured_pow_Tensor_Tensor>(binary_kernel(BinaryOp::kPow), a, b),
                      a, b);
  });
  m.impl("pow.Tensor_Tensor_out", [](const T& a, const T& b, T& out) -> T& {
    return NPU_OR_CPU(
        T&(const T&, const T&, T&), "pow", "Tensor_Tensor_out",
        structured_out<at::meta::structured_pow_Tensor_Tensor>(binary_kernel(BinaryOp::kPow), out, a, b), a, b, out);
  });
  m.impl("pow.Tensor_Scalar", [](const T& a, const S& e) {
    return NPU_OR_CPU(T(const T&, const S&), "pow", "Tensor_Scalar",
                      structured_functional<at::meta::structured_pow_Tensor_Scalar>(
                          unary_kernel(UnaryOp::kPowScalar, with_a(e)), a, e),
                      a, e);
  });
  m.impl("pow_.Scalar", [](T& a, const S& e) -> T& {
    return NPU_OR_CPU(T&(T&, const S&), "pow_", "Scalar",
                      structured_inplace<at::meta::structured_pow_Tensor_Scalar>(
                          unary_kernel(UnaryOp::kPowScalar, with_a(e)), a, e),
                      a, e);
  });
  // Scalar base: ATen's meta sizes the output; the base travels as a CPU scalar operand of pow.Tensor_Tensor.
  m.impl("pow.Scalar_out", [](const S& base, const T& e, T& out) -> T& {
    return structured_out<at::meta::structured_pow_Scalar>([&](auto& meta) {
      T result = meta.maybe_get_output(0);
      if (base.equal(1.0)) result.fill_(1);
      else at::pow_out(result, at::native::wrapped_scalar_tensor(base), e);
    }, out, base, e);
  });
  m.impl("pow.Scalar", [](const S& base, const T& e) {
    return structured_functional<at::meta::structured_pow_Scalar>([&](auto& meta) {
      T result = meta.maybe_get_output(0);
      if (base.equal(1.0)) result.fill_(1);
      else at::pow_out(result, at::native::wrapped_scalar_tensor(base), e);
    }, base, e);
  });
  m.impl("pow.Tensor_Scalar_out", [](const T& a, const S& e, T& out) -> T& {
    return NPU_OR_CPU(T&(const T&, const S&, T&), "pow", "Tensor_Scalar_out",
                      structured_out<at::meta::structured_pow_Tensor_Scalar>(
                          unary_kernel(UnaryOp::kPowScalar, with_a(e)), out, a, e),
                      a, e, out);
  });

  NPU_COMPARE(eq, BinaryOp::kEq)
  NPU_COMPARE(ne, BinaryOp::kNe)
  NPU_COMPARE(lt, BinaryOp::kLt)
  NPU_COMPARE(le, BinaryOp::kLe)
  NPU_COMPARE(gt, BinaryOp::kGt)
  NPU_COMPARE(ge, BinaryOp::kGe)

  NPU_UNARY(neg, neg, UnaryOp::kNeg)
  NPU_UNARY(sign, sign, UnaryOp::kSign)
  NPU_UNARY(sqrt, sqrt, UnaryOp::kSqrt)
  NPU_UNARY(rsqrt, rsqrt, UnaryOp::kRsqrt)
  NPU_UNARY(exp, exp, UnaryOp::kExp)
  NPU_UNARY(exp2, exp2, UnaryOp::kExp2)
  NPU_UNARY(expm1, expm1, UnaryOp::kExpm1)
  NPU_UNARY(log, log, UnaryOp::kLog)
  NPU_UNARY(log2, log2, UnaryOp::kLog2)
  NPU_UNARY(log10, log10, UnaryOp::kLog10)
  NPU_UNARY(log1p, log1p, UnaryOp::kLog1p)
  NPU_UNARY(sin, sin, UnaryOp::kSin)
  NPU_UNARY(cos, cos, UnaryOp::kCos)
  NPU_UNARY(tan, tan, UnaryOp::kTan)
  NPU_UNARY(asin, asin, UnaryOp::kAsin)
  NPU_UNARY(acos, acos, UnaryOp::kAcos)
  NPU_UNARY(atan, atan, UnaryOp::kAtan)
  NPU_UNARY(sinh, sinh, UnaryOp::kSinh)
  NPU_UNARY(cosh, cosh, UnaryOp::kCosh)
  NPU_UNARY(tanh, tanh, UnaryOp::kTanh)
  NPU_UNARY(asinh, asinh, UnaryOp::kAsinh)
  NPU_UNARY(acosh, acosh, UnaryOp::kAcosh)
  NPU_UNARY(atanh, atanh, UnaryOp::kAtanh)
  NPU_UNARY(sigmoid, sigmoid, UnaryOp::kSigmoid)
  NPU_UNARY(erf, erf, UnaryOp::kErf)
  NPU_UNARY(erfc, erfc, UnaryOp::kErfc)
  NPU_UNARY(floor, floor, UnaryOp::kFloor)
  NPU_UNARY(ceil, ceil, UnaryOp::kCeil)
  NPU_UNARY(round, round, UnaryOp::kRound)
  NPU_UNARY(trunc, trunc, UnaryOp::kTrunc)
  NPU_UNARY(frac, frac, UnaryOp::kFrac)
  NPU_UNARY(reciprocal, reciprocal, UnaryOp::kReciprocal)
  NPU_UNARY(bitwise_not, bitwise_not, UnaryOp::kBitwiseNot)
  NPU_UNARY(silu, silu, UnaryOp::kSilu)
  NPU_UNARY(mish, mish, UnaryOp::kMish)
  NPU_UNARY(hardsigmoid, hardsigmoid, UnaryOp::kHardsigmoid)
  NPU_UNARY(lgamma, lgamma, UnaryOp::kLgamma)
  NPU_UNARY(sinc, sinc, UnaryOp::kSinc)
  NPU_UNARY(digamma, digamma, UnaryOp::kDigamma)
  NPU_UNARY(erfinv, erfinv, UnaryOp::kErfinv)
  // polygamma: n = 0 (digamma) and n = 1 (trigamma, digamma's gradient) are native; higher orders run on
  // the CPU, recorded and warned about like any fallback.
  m.impl("polygamma.out", [](int64_t n, const T& self, T& out) -> T& {
    if (n == 0 || n == 1) {
      const UnaryOp op = n == 0 ? UnaryOp::kDigamma : UnaryOp::kTrigamma;
      return structured_out<at::meta::structured_polygamma>(unary_kernel(op), out, n, self);
    }
    return structured_out<at::meta::structured_polygamma>([&](at::TensorIteratorBase& it) {
      note_cpu_fallback("aten::polygamma.out");
      at::Tensor(it.output()).copy_(at::polygamma(n, self.cpu()));
    }, out, n, self);
  });
  m.impl("signbit", [](const T& self) {
    return structured_functional<at::meta::structured_signbit>(unary_kernel(UnaryOp::kSignbit), self);
  });
  m.impl("signbit.out", [](const T& self, T& out) -> T& {
    return structured_out<at::meta::structured_signbit>(unary_kernel(UnaryOp::kSignbit), out, self);
  });

  // activations with parameters
  m.impl("gelu", [](const T& self, c10::string_view approximate) {
    const UnaryOp op = approximate == "tanh" ? UnaryOp::kGeluTanh : UnaryOp::kGelu;
    return structured_functional<at::meta::structured_gelu>(unary_kernel(op), self, approximate);
  });
  m.impl("gelu_", [](T& self, c10::string_view approximate) -> T& {
    const UnaryOp op = approximate == "tanh" ? UnaryOp::kGeluTanh : UnaryOp::kGelu;
    return structured_inplace<at::meta::structured_gelu>(unary_kernel(op), self, approximate);
  });
  m.impl("gelu.out", [](const T& self, c10::string_view approximate, T& out) -> T& {
    const UnaryOp op = approximate == "tanh" ? UnaryOp::kGeluTanh : UnaryOp::kGelu;
    return structured_out<at::meta::structured_gelu>(unary_kernel(op), out, self, approximate);
  });
  m.impl("gelu_backward", [](const T& g, const T& x, c10::string_view approximate) {
    const BinaryOp op = approximate == "tanh" ? BinaryOp::kGeluTanhBackward : BinaryOp::kGeluBackward;
    return structured_functional<at::meta::structured_gelu_backward>(binary_kernel(op), g, x, approximate);
  });
  m.impl("gelu_backward.grad_input", [](const T& g, const T& x, c10::string_view approximate, T& out) -> T& {
    const BinaryOp op = approximate == "tanh" ? BinaryOp::kGeluTanhBackward : BinaryOp::kGeluBackward;
    return structured_out<at::meta::structured_gelu_backward>(binary_kernel(op), out, g, x, approximate);
  });
  m.impl("leaky_relu", [](const T& self, const S& slope) {
    return structured_functional<at::meta::structured_leaky_relu>(unary_kernel(UnaryOp::kLeakyRelu, with_a(slope)), self, slope);
  });
  m.impl("leaky_relu_", [](T& self, const S& slope) -> T& {
    return structured_inplace<at::meta::structured_leaky_relu>(unary_kernel(UnaryOp::kLeakyRelu, with_a(slope)), self, slope);
  });
  m.impl("leaky_relu.out", [](const T& self, const S& slope, T& out) -> T& {
    return structured_out<at::meta::structured_leaky_relu>(unary_kernel(UnaryOp::kLeakyRelu, with_a(slope)), out, self, slope);
  });
  m.impl("leaky_relu_backward", [](const T& g, const T& x, const S& slope, bool self_is_result) {
    return structured_functional<at::meta::structured_leaky_relu_backward>(
        binary_kernel(BinaryOp::kLeakyReluBackward, with_a(slope)), g, x, slope, self_is_result);
  });
  m.impl("softplus", [](const T& self, const S& beta, const S& threshold) {
    return structured_functional<at::meta::structured_softplus>(unary_kernel(UnaryOp::kSoftplus, with_ab(beta, threshold)),
                                                                self, beta, threshold);
  });
  m.impl("softplus_backward", [](const T& g, const T& x, const S& beta, const S& threshold) {
    return structured_functional<at::meta::structured_softplus_backward>(
        binary_kernel(BinaryOp::kSoftplusBackward, with_ab(beta, threshold)), g, x, beta, threshold);
  });
  m.impl("elu", [](const T& self, const S& alpha, const S& scale, const S& input_scale) {
    PointwiseParams p = with_ab(alpha, scale);
    p.c = input_scale.toDouble();
    return structured_functional<at::meta::structured_elu>(unary_kernel(UnaryOp::kElu, p), self, alpha, scale, input_scale);
  });
  m.impl("elu_", [](T& self, const S& alpha, const S& scale, const S& input_scale) -> T& {
    PointwiseParams p = with_ab(alpha, scale);
    p.c = input_scale.toDouble();
    return structured_inplace<at::meta::structured_elu>(unary_kernel(UnaryOp::kElu, p), self, alpha, scale, input_scale);
  });
  m.impl("elu_backward", [](const T& g, const S& alpha, const S& scale, const S& input_scale, bool is_result,
                            const T& self_or_result) {
    PointwiseParams p = with_ab(alpha, scale);
    p.c = input_scale.toDouble();
    p.i = is_result ? 1 : 0;
    return structured_functional<at::meta::structured_elu_backward>(binary_kernel(BinaryOp::kEluBackward, p), g, alpha,
                                                                    scale, input_scale, is_result, self_or_result);
  });
  m.impl("threshold", [](const T& self, const S& threshold, const S& value) {
    // threshold(x, t, v) = x > t ? x : v; relu is threshold(x, 0, 0) composite in ATen.
    return structured_functional<at::meta::structured_threshold>(
        binary_kernel(BinaryOp::kThreshold, with_ab(threshold, value)), self, threshold, value);
  });
  NPU_BACKWARD2(sigmoid_backward, sigmoid_backward, BinaryOp::kSigmoidBackward)
  NPU_BACKWARD2(tanh_backward, tanh_backward, BinaryOp::kTanhBackward)
  NPU_BACKWARD2(silu_backward, silu_backward, BinaryOp::kSiluBackward)
  m.impl("hardsigmoid_backward", [](const T& g, const T& x) {
    return structured_functional<at::meta::structured_hardsigmoid_backward>(binary_kernel(BinaryOp::kHardsigmoidBackward), g, x);
  });
  m.impl("threshold_backward", [](const T& g, const T& x, const S& threshold) {
    return structured_functional<at::meta::structured_threshold_backward>(
        binary_kernel(BinaryOp::kThresholdBackward, with_a(threshold)), g, x, threshold);
  });
  m.impl("threshold_backward.grad_input", [](const T& g, const T& x, const S& threshold, T& out) -> T& {
    return structured_out<at::meta::structured_threshold_backward>(
        binary_kernel(BinaryOp::kThresholdBackward, with_a(threshold)), out, g, x, threshold);
  });

  // clamp family
  m.impl("clamp", [](const T& self, const std::optional<S>& lo, const std::optional<S>& hi) {
    PointwiseParams p;
    if (lo) { p.a = lo->toDouble(); p.has_a = true; }
    if (hi) { p.b = hi->toDouble(); p.has_b = true; }
    return structured_functional<at::meta::structured_clamp>(
        unary_kernel(UnaryOp::kClamp, p), self, lo ? at::OptionalScalarRef(&*lo) : at::OptionalScalarRef(),
        hi ? at::OptionalScalarRef(&*hi) : at::OptionalScalarRef());
  });
  m.impl("clamp_", [](T& self, const std::optional<S>& lo, const std::optional<S>& hi) -> T& {
    PointwiseParams p;
    if (lo) { p.a = lo->toDouble(); p.has_a = true; }
    if (hi) { p.b = hi->toDouble(); p.has_b = true; }
    return structured_inplace<at::meta::structured_clamp>(
        unary_kernel(UnaryOp::kClamp, p), self, lo ? at::OptionalScalarRef(&*lo) : at::OptionalScalarRef(),
        hi ? at::OptionalScalarRef(&*hi) : at::OptionalScalarRef());
  });
  m.impl("clamp_min", [](const T& self, const S& lo) {
    PointwiseParams p = with_a(lo);
    return structured_functional<at::meta::structured_clamp_min>(unary_kernel(UnaryOp::kClamp, p), self, lo);
  });
  m.impl("clamp_min_", [](T& self, const S& lo) -> T& {
    PointwiseParams p = with_a(lo);
    return structured_inplace<at::meta::structured_clamp_min>(unary_kernel(UnaryOp::kClamp, p), self, lo);
  });
  m.impl("clamp_max", [](const T& self, const S& hi) {
    PointwiseParams p;
    p.b = hi.toDouble();
    p.has_b = true;
    return structured_functional<at::meta::structured_clamp_max>(unary_kernel(UnaryOp::kClamp, p), self, hi);
  });
  m.impl("clamp_max_", [](T& self, const S& hi) -> T& {
    PointwiseParams p;
    p.b = hi.toDouble();
    p.has_b = true;
    return structured_inplace<at::meta::structured_clamp_max>(unary_kernel(UnaryOp::kClamp, p), self, hi);
  });

  // ternary
  m.impl("addcmul", or_cpu("aten::addcmul", "", +[](const T& self, const T& a, const T& b, const S& value) {
    return structured_functional<at::meta::structured_addcmul>(ternary_kernel(TernaryOp::kAddcmul, with_a(value)), self, a, b, value);
  }));
  m.impl("addcmul_", or_cpu("aten::addcmul_", "", +[](T& self, const T& a, const T& b, const S& value) -> T& {
    return structured_inplace<at::meta::structured_addcmul>(ternary_kernel(TernaryOp::kAddcmul, with_a(value)), self, a, b, value);
  }));
  m.impl("addcmul.out", or_cpu("aten::addcmul", "out", +[](const T& self, const T& a, const T& b, const S& value, T& out) -> T& {
    return structured_out<at::meta::structured_addcmul>(ternary_kernel(TernaryOp::kAddcmul, with_a(value)), out, self, a, b, value);
  }));
  m.impl("addcdiv", or_cpu("aten::addcdiv", "", +[](const T& self, const T& a, const T& b, const S& value) {
    return structured_functional<at::meta::structured_addcdiv>(ternary_kernel(TernaryOp::kAddcdiv, with_a(value)), self, a, b, value);
  }));
  m.impl("addcdiv_", or_cpu("aten::addcdiv_", "", +[](T& self, const T& a, const T& b, const S& value) -> T& {
    return structured_inplace<at::meta::structured_addcdiv>(ternary_kernel(TernaryOp::kAddcdiv, with_a(value)), self, a, b, value);
  }));
  m.impl("addcdiv.out", or_cpu("aten::addcdiv", "out", +[](const T& self, const T& a, const T& b, const S& value, T& out) -> T& {
    return structured_out<at::meta::structured_addcdiv>(ternary_kernel(TernaryOp::kAddcdiv, with_a(value)), out, self, a, b, value);
  }));
  m.impl("lerp.Tensor_out", or_cpu("aten::lerp", "Tensor_out", +[](const T& self, const T& end, const T& w, T& out) -> T& {
    return structured_out<at::meta::structured_lerp_Tensor>(ternary_kernel(TernaryOp::kLerp), out, self, end, w);
  }));
  // lerp with a Python-number weight: the iterator has two inputs, the weight travels as a parameter
  m.impl("lerp.Scalar", or_cpu("aten::lerp", "Scalar", +[](const T& self, const T& end, const S& w) {
    return structured_functional<at::meta::structured_lerp_Scalar>(binary_kernel(BinaryOp::kLerpScalar, with_a(w)), self, end, w);
  }));
  m.impl("lerp_.Scalar", or_cpu("aten::lerp_", "Scalar", +[](T& self, const T& end, const S& w) -> T& {
    return structured_inplace<at::meta::structured_lerp_Scalar>(binary_kernel(BinaryOp::kLerpScalar, with_a(w)), self, end, w);
  }));
  m.impl("lerp.Scalar_out", or_cpu("aten::lerp", "Scalar_out", +[](const T& self, const T& end, const S& w, T& out) -> T& {
    return structured_out<at::meta::structured_lerp_Scalar>(binary_kernel(BinaryOp::kLerpScalar, with_a(w)), out, self, end, w);
  }));
  m.impl("lerp.Tensor", or_cpu("aten::lerp", "Tensor", +[](const T& self, const T& end, const T& w) {
    return structured_functional<at::meta::structured_lerp_Tensor>(ternary_kernel(TernaryOp::kLerp), self, end, w);
  }));
  m.impl("lerp_.Tensor", or_cpu("aten::lerp_", "Tensor", +[](T& self, const T& end, const T& w) -> T& {
    return structured_inplace<at::meta::structured_lerp_Tensor>(ternary_kernel(TernaryOp::kLerp), self, end, w);
  }));
}

}  // namespace torch_npu_sim
