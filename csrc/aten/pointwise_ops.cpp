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
#include "npu_native_functions.h"
#include "aten/structured.h"
#include "fallback/cpu_fallback.h"
#include "fallback/dtype_fallback.h"

namespace torch_npu_sim {
namespace {

using npu_kernels::BinaryOp;
using npu_kernels::PointwiseParams;
using npu_kernels::TernaryOp;
using npu_kernels::UnaryOp;

using NF = NPUNativeFunctions;
using T = at::Tensor;
using S = c10::Scalar;

// One helper per schema shape: functional, in-place and out= flavours over the same meta + kernel. The
// table marks these ops or_cpu: a dtype the kernel library lacks (complex, mostly) runs on the CPU fallback.
template <class Meta>
T unary(UnaryOp op, const T& self) {
  if (auto flat = flat_unary(op, self)) return *std::move(flat);
  return structured_functional<Meta>(unary_kernel(op), self);
}
template <class Meta>
T& unary_(UnaryOp op, T& self) {
  if (flat_unary_(op, self)) return self;
  return structured_inplace<Meta>(unary_kernel(op), self);
}
template <class Meta>
T& unary_out(UnaryOp op, const T& self, T& out) {
  return structured_out<Meta>(unary_kernel(op), out, self);
}
template <class Meta, class B>
T binary(BinaryOp op, const T& a, const B& b) {
  if constexpr (std::is_same_v<B, T>) {
    if (auto flat = flat_binary(op, a, b)) return *std::move(flat);
  }
  return structured_functional<Meta>(binary_kernel(op), a, b);
}
template <class Meta, class B>
T& binary_(BinaryOp op, T& a, const B& b) {
  if constexpr (std::is_same_v<B, T>) {
    if (flat_binary_(op, a, b)) return a;
  }
  return structured_inplace<Meta>(binary_kernel(op), a, b);
}
template <class Meta, class B>
T& binary_out(BinaryOp op, const T& a, const B& b, T& out) {
  return structured_out<Meta>(binary_kernel(op), out, a, b);
}

// Ops without a structured meta function: libtorch's TensorIterator builders do the same job.

T& logical_out(BinaryOp op, const T& a, const T& b, T& out) {
  auto iter = at::TensorIterator::comparison_op(out, a, b);
  binary_kernel(op)(iter);
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

}  // namespace

T NF::relu(const T& self) {
  at::TensorBase out;
  auto iter = at::TensorIterator::unary_op(out, self);
  unary_kernel(UnaryOp::kRelu)(iter);
  return iter.output();
}

T& NF::relu_(T& self) {
  auto iter = at::TensorIterator::unary_op(self, self);
  unary_kernel(UnaryOp::kRelu)(iter);
  return self;
}

T& NF::abs_out(const T& self, T& out) {
  if (self.is_complex()) throw_no_kernel_for_dtype(c10::str("abs: no npu kernel for dtype ", self.scalar_type()));
  auto iter = at::TensorIterator::unary_op(out, self);
  unary_kernel(UnaryOp::kAbs)(iter);
  return out;
}

T& NF::sgn_out(const T& self, T& out) {  // real dtypes: sgn == sign; complex has no kernel
  if (self.is_complex()) throw_no_kernel_for_dtype(c10::str("sgn: no npu kernel for dtype ", self.scalar_type()));
  return at::sign_out(out, self);
}

// complex operands have no kernel: the CPU fallback (or_cpu), as CUDA accepts them
T& NF::logical_and_out(const T& a, const T& b, T& out) { return logical_out(BinaryOp::kLogicalAnd, a, b, out); }

T& NF::logical_or_out(const T& a, const T& b, T& out) { return logical_out(BinaryOp::kLogicalOr, a, b, out); }

T& NF::logical_xor_out(const T& a, const T& b, T& out) { return logical_out(BinaryOp::kLogicalXor, a, b, out); }

T& NF::logical_not_out(const T& self, T& out) {
  auto iter = at::TensorIteratorConfig().check_all_same_dtype(false).add_output(out).add_const_input(self).build();
  run_pointwise(iter, "logical_not", true,
                [](npu_sim::Stream s, const npu_kernels::ElementwiseIter& e) {
                  return npu_kernels::unary(s, UnaryOp::kLogicalNot, e, {});
                },
                self.scalar_type());
  return out;
}

T NF::where(const T& cond, const T& self, const T& other) {
  TORCH_CHECK(cond.scalar_type() == at::kBool || cond.scalar_type() == at::kByte,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ", cond.scalar_type());
  const auto type = at::result_type(self, other);
  at::Tensor out;
  const at::Tensor c = cond.to(type), a = self.to(type), b = other.to(type);
  auto iter = at::TensorIteratorConfig().add_output(out).add_const_input(c).add_const_input(a).add_const_input(b).build();
  ternary_kernel(TernaryOp::kWhere)(iter);
  return iter.output();
}

T& NF::where_out(const T& cond, const T& self, const T& other, T& out) {
  const T r = NF::where(cond, self, other);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

T& NF::isposinf_out(const T& self, T& out) { return inf_predicate_out(UnaryOp::kIsposinf, self, out); }

T& NF::isneginf_out(const T& self, T& out) { return inf_predicate_out(UnaryOp::kIsneginf, self, out); }

// complex has no kernel: the CPU fallback (CUDA accepts complex: NaN in either part)
T NF::isnan(const T& s) { return npu_isnan(s); }

// clamp with tensor bounds and rsub are compositions of native ops (no math of their own).
T NF::clamp(const T& self, const std::optional<T>& lo, const std::optional<T>& hi) {
  TORCH_CHECK(lo.has_value() || hi.has_value(), "torch.clamp: At least one of 'min' or 'max' must not be None");
  T r = self;
  if (lo) r = at::maximum(r, *lo);
  if (hi) r = at::minimum(r, *hi);
  return r;
}

T& NF::clamp_out(const T& self, const std::optional<T>& lo, const std::optional<T>& hi, T& out) {
  const T r = NF::clamp(self, lo, hi);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

T& NF::clamp_(T& self, const std::optional<T>& lo, const std::optional<T>& hi) {
  return self.copy_(NF::clamp(self, lo, hi));
}

T NF::rsub(const T& self, const T& other, const S& alpha) { return at::sub(other, self, alpha); }

T NF::round(const T& self, int64_t decimals) {
  PointwiseParams p;
  p.i = decimals;
  return structured_functional<at::meta::structured_round_decimals>(unary_kernel(UnaryOp::kRoundDecimals, p), self,
                                                                    decimals);
}

T& NF::round_out(const T& self, int64_t decimals, T& out) {
  PointwiseParams p;
  p.i = decimals;
  return structured_out<at::meta::structured_round_decimals>(unary_kernel(UnaryOp::kRoundDecimals, p), out, self,
                                                             decimals);
}

T& NF::hardtanh_out(const T& self, const S& lo, const S& hi, T& out) {
  auto iter = at::TensorIterator::unary_op(out, self);
  unary_kernel(UnaryOp::kHardtanh, with_ab(lo, hi))(iter);
  return out;
}

T NF::hardtanh(const T& self, const S& lo, const S& hi) {
  at::Tensor out = at::empty_like(self);
  return NF::hardtanh_out(self, lo, hi, out);
}

T& NF::hardtanh_(T& self, const S& lo, const S& hi) { return NF::hardtanh_out(self, lo, hi, self); }

T NF::hardtanh_backward(const T& g, const T& x, const S& lo, const S& hi) {
  at::TensorBase out;
  auto iter = at::TensorIterator::binary_op(out, g, x);
  binary_kernel(BinaryOp::kHardtanhBackward, with_ab(lo, hi))(iter);
  return iter.output();
}

T NF::floor_divide(const T& a, const T& b) {
  at::TensorBase out;
  auto iter = at::TensorIterator::binary_op(out, a, b);
  binary_kernel(BinaryOp::kDivFloor)(iter);
  return iter.output();
}

T& NF::floor_divide_out(const T& a, const T& b, T& out) {
  auto iter = at::TensorIterator::binary_op(out, a, b);
  binary_kernel(BinaryOp::kDivFloor)(iter);
  return out;
}

T& NF::floor_divide_(T& a, const T& b) { return NF::floor_divide_out(a, b, a); }

T& NF::nan_to_num_out(const T& self, std::optional<double> nan, std::optional<double> posinf,
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

// arithmetic with alpha
T NF::add(const T& a, const T& b, const S& alpha) {
  if (!alpha.isComplex()) {  // a complex alpha is an error for real tensors: the structured path raises it
    if (auto flat = flat_binary(BinaryOp::kAdd, a, b, with_a(alpha))) return *std::move(flat);
  }
  return structured_functional<at::meta::structured_add_Tensor>(binary_kernel(BinaryOp::kAdd, with_a(alpha)), a, b,
                                                                alpha);
}

T& NF::add_(T& a, const T& b, const S& alpha) {
  if (!alpha.isComplex() && flat_binary_(BinaryOp::kAdd, a, b, with_a(alpha))) return a;
  return structured_inplace<at::meta::structured_add_Tensor>(binary_kernel(BinaryOp::kAdd, with_a(alpha)), a, b, alpha);
}

T& NF::add_out(const T& a, const T& b, const S& alpha, T& out) {
  return structured_out<at::meta::structured_add_Tensor>(binary_kernel(BinaryOp::kAdd, with_a(alpha)), out, a, b,
                                                         alpha);
}

T NF::sub(const T& a, const T& b, const S& alpha) {
  if (!alpha.isComplex()) {  // a complex alpha is an error for real tensors: the structured path raises it
    if (auto flat = flat_binary(BinaryOp::kSub, a, b, with_a(alpha))) return *std::move(flat);
  }
  return structured_functional<at::meta::structured_sub_Tensor>(binary_kernel(BinaryOp::kSub, with_a(alpha)), a, b,
                                                                alpha);
}

T& NF::sub_(T& a, const T& b, const S& alpha) {
  if (!alpha.isComplex() && flat_binary_(BinaryOp::kSub, a, b, with_a(alpha))) return a;
  return structured_inplace<at::meta::structured_sub_Tensor>(binary_kernel(BinaryOp::kSub, with_a(alpha)), a, b, alpha);
}

T& NF::sub_out(const T& a, const T& b, const S& alpha, T& out) {
  return structured_out<at::meta::structured_sub_Tensor>(binary_kernel(BinaryOp::kSub, with_a(alpha)), out, a, b,
                                                         alpha);
}

T NF::div(const T& a, const T& b, std::optional<c10::string_view> mode) {
  const BinaryOp op = !mode ? BinaryOp::kDiv : (*mode == "trunc" ? BinaryOp::kDivTrunc : BinaryOp::kDivFloor);
  return structured_functional<at::meta::structured_div_Tensor_mode>(binary_kernel(op), a, b, mode);
}

T& NF::div_(T& a, const T& b, std::optional<c10::string_view> mode) {
  const BinaryOp op = !mode ? BinaryOp::kDiv : (*mode == "trunc" ? BinaryOp::kDivTrunc : BinaryOp::kDivFloor);
  return structured_inplace<at::meta::structured_div_Tensor_mode>(binary_kernel(op), a, b, mode);
}

T& NF::div_out(const T& a, const T& b, std::optional<c10::string_view> mode, T& out) {
  const BinaryOp op = !mode ? BinaryOp::kDiv : (*mode == "trunc" ? BinaryOp::kDivTrunc : BinaryOp::kDivFloor);
  return structured_out<at::meta::structured_div_Tensor_mode>(binary_kernel(op), out, a, b, mode);
}

T& NF::atan2_(T& a, const T& b) {
  return structured_inplace<at::meta::structured_atan2>(binary_kernel(BinaryOp::kAtan2), a, b);
}

T NF::pow(const T& a, const T& b) {
  return structured_functional<at::meta::structured_pow_Tensor_Tensor>(binary_kernel(BinaryOp::kPow), a, b);
}

T& NF::pow_(T& a, const T& b) {
  return structured_inplace<at::meta::structured_pow_Tensor_Tensor>(binary_kernel(BinaryOp::kPow), a, b);
}

T& NF::pow_out(const T& a, const T& b, T& out) {
  return structured_out<at::meta::structured_pow_Tensor_Tensor>(binary_kernel(BinaryOp::kPow), out, a, b);
}

T NF::pow(const T& a, const S& e) {
  return structured_functional<at::meta::structured_pow_Tensor_Scalar>(unary_kernel(UnaryOp::kPowScalar, with_a(e)), a,
                                                                       e);
}

T& NF::pow_(T& a, const S& e) {
  return structured_inplace<at::meta::structured_pow_Tensor_Scalar>(unary_kernel(UnaryOp::kPowScalar, with_a(e)), a, e);
}

// Scalar base: ATen's meta sizes the output; the base travels as a CPU scalar operand of pow.Tensor_Tensor.
T& NF::pow_out(const S& base, const T& e, T& out) {
  return structured_out<at::meta::structured_pow_Scalar>(
      [&](auto& meta) {
        T result = meta.maybe_get_output(0);
        if (base.equal(1.0))
          result.fill_(1);
        else
          at::pow_out(result, at::native::wrapped_scalar_tensor(base), e);
      },
      out, base, e);
}

T NF::pow(const S& base, const T& e) {
  return structured_functional<at::meta::structured_pow_Scalar>(
      [&](auto& meta) {
        T result = meta.maybe_get_output(0);
        if (base.equal(1.0))
          result.fill_(1);
        else
          at::pow_out(result, at::native::wrapped_scalar_tensor(base), e);
      },
      base, e);
}

T& NF::pow_out(const T& a, const S& e, T& out) {
  return structured_out<at::meta::structured_pow_Tensor_Scalar>(unary_kernel(UnaryOp::kPowScalar, with_a(e)), out, a,
                                                                e);
}

// polygamma: n = 0 (digamma) and n = 1 (trigamma, digamma's gradient) are native; higher orders run on
// the CPU, recorded and warned about like any fallback.
T& NF::polygamma_out(int64_t n, const T& self, T& out) {
  if (n == 0 || n == 1) {
    const UnaryOp op = n == 0 ? UnaryOp::kDigamma : UnaryOp::kTrigamma;
    return structured_out<at::meta::structured_polygamma>(unary_kernel(op), out, n, self);
  }
  return structured_out<at::meta::structured_polygamma>(
      [&](at::TensorIteratorBase& it) {
        note_cpu_fallback("aten::polygamma.out");
        at::Tensor(it.output()).copy_(at::polygamma(n, self.cpu()));
      },
      out, n, self);
}

T NF::signbit(const T& self) {
  return structured_functional<at::meta::structured_signbit>(unary_kernel(UnaryOp::kSignbit), self);
}

T& NF::signbit_out(const T& self, T& out) {
  return structured_out<at::meta::structured_signbit>(unary_kernel(UnaryOp::kSignbit), out, self);
}

// activations with parameters
T NF::gelu(const T& self, c10::string_view approximate) {
  const UnaryOp op = approximate == "tanh" ? UnaryOp::kGeluTanh : UnaryOp::kGelu;
  return structured_functional<at::meta::structured_gelu>(unary_kernel(op), self, approximate);
}

T& NF::gelu_(T& self, c10::string_view approximate) {
  const UnaryOp op = approximate == "tanh" ? UnaryOp::kGeluTanh : UnaryOp::kGelu;
  return structured_inplace<at::meta::structured_gelu>(unary_kernel(op), self, approximate);
}

T& NF::gelu_out(const T& self, c10::string_view approximate, T& out) {
  const UnaryOp op = approximate == "tanh" ? UnaryOp::kGeluTanh : UnaryOp::kGelu;
  return structured_out<at::meta::structured_gelu>(unary_kernel(op), out, self, approximate);
}

T NF::gelu_backward(const T& g, const T& x, c10::string_view approximate) {
  const BinaryOp op = approximate == "tanh" ? BinaryOp::kGeluTanhBackward : BinaryOp::kGeluBackward;
  return structured_functional<at::meta::structured_gelu_backward>(binary_kernel(op), g, x, approximate);
}

T& NF::gelu_backward_out(const T& g, const T& x, c10::string_view approximate, T& out) {
  const BinaryOp op = approximate == "tanh" ? BinaryOp::kGeluTanhBackward : BinaryOp::kGeluBackward;
  return structured_out<at::meta::structured_gelu_backward>(binary_kernel(op), out, g, x, approximate);
}

T NF::leaky_relu(const T& self, const S& slope) {
  return structured_functional<at::meta::structured_leaky_relu>(unary_kernel(UnaryOp::kLeakyRelu, with_a(slope)), self,
                                                                slope);
}

T& NF::leaky_relu_(T& self, const S& slope) {
  return structured_inplace<at::meta::structured_leaky_relu>(unary_kernel(UnaryOp::kLeakyRelu, with_a(slope)), self,
                                                             slope);
}

T& NF::leaky_relu_out(const T& self, const S& slope, T& out) {
  return structured_out<at::meta::structured_leaky_relu>(unary_kernel(UnaryOp::kLeakyRelu, with_a(slope)), out, self,
                                                         slope);
}

T NF::leaky_relu_backward(const T& g, const T& x, const S& slope, bool self_is_result) {
  return structured_functional<at::meta::structured_leaky_relu_backward>(
      binary_kernel(BinaryOp::kLeakyReluBackward, with_a(slope)), g, x, slope, self_is_result);
}

T NF::softplus(const T& self, const S& beta, const S& threshold) {
  return structured_functional<at::meta::structured_softplus>(
      unary_kernel(UnaryOp::kSoftplus, with_ab(beta, threshold)), self, beta, threshold);
}

T NF::softplus_backward(const T& g, const T& x, const S& beta, const S& threshold) {
  return structured_functional<at::meta::structured_softplus_backward>(
      binary_kernel(BinaryOp::kSoftplusBackward, with_ab(beta, threshold)), g, x, beta, threshold);
}

T NF::elu(const T& self, const S& alpha, const S& scale, const S& input_scale) {
  PointwiseParams p = with_ab(alpha, scale);
  p.c = input_scale.toDouble();
  return structured_functional<at::meta::structured_elu>(unary_kernel(UnaryOp::kElu, p), self, alpha, scale,
                                                         input_scale);
}

T& NF::elu_(T& self, const S& alpha, const S& scale, const S& input_scale) {
  PointwiseParams p = with_ab(alpha, scale);
  p.c = input_scale.toDouble();
  return structured_inplace<at::meta::structured_elu>(unary_kernel(UnaryOp::kElu, p), self, alpha, scale, input_scale);
}

T NF::elu_backward(const T& g, const S& alpha, const S& scale, const S& input_scale, bool is_result,
                   const T& self_or_result) {
  PointwiseParams p = with_ab(alpha, scale);
  p.c = input_scale.toDouble();
  p.i = is_result ? 1 : 0;
  return structured_functional<at::meta::structured_elu_backward>(binary_kernel(BinaryOp::kEluBackward, p), g, alpha,
                                                                  scale, input_scale, is_result, self_or_result);
}

T NF::threshold(const T& self, const S& threshold, const S& value) {
  // threshold(x, t, v) = x > t ? x : v; relu is threshold(x, 0, 0) composite in ATen.
  return structured_functional<at::meta::structured_threshold>(
      binary_kernel(BinaryOp::kThreshold, with_ab(threshold, value)), self, threshold, value);
}

T NF::hardsigmoid_backward(const T& g, const T& x) {
  return structured_functional<at::meta::structured_hardsigmoid_backward>(binary_kernel(BinaryOp::kHardsigmoidBackward),
                                                                          g, x);
}

T NF::threshold_backward(const T& g, const T& x, const S& threshold) {
  return structured_functional<at::meta::structured_threshold_backward>(
      binary_kernel(BinaryOp::kThresholdBackward, with_a(threshold)), g, x, threshold);
}

T& NF::threshold_backward_out(const T& g, const T& x, const S& threshold, T& out) {
  return structured_out<at::meta::structured_threshold_backward>(
      binary_kernel(BinaryOp::kThresholdBackward, with_a(threshold)), out, g, x, threshold);
}

// clamp family
T NF::clamp(const T& self, const std::optional<S>& lo, const std::optional<S>& hi) {
  PointwiseParams p;
  if (lo) {
    p.a = lo->toDouble();
    p.has_a = true;
  }
  if (hi) {
    p.b = hi->toDouble();
    p.has_b = true;
  }
  return structured_functional<at::meta::structured_clamp>(unary_kernel(UnaryOp::kClamp, p), self,
                                                           lo ? at::OptionalScalarRef(&*lo) : at::OptionalScalarRef(),
                                                           hi ? at::OptionalScalarRef(&*hi) : at::OptionalScalarRef());
}

T& NF::clamp_(T& self, const std::optional<S>& lo, const std::optional<S>& hi) {
  PointwiseParams p;
  if (lo) {
    p.a = lo->toDouble();
    p.has_a = true;
  }
  if (hi) {
    p.b = hi->toDouble();
    p.has_b = true;
  }
  return structured_inplace<at::meta::structured_clamp>(unary_kernel(UnaryOp::kClamp, p), self,
                                                        lo ? at::OptionalScalarRef(&*lo) : at::OptionalScalarRef(),
                                                        hi ? at::OptionalScalarRef(&*hi) : at::OptionalScalarRef());
}

T NF::clamp_min(const T& self, const S& lo) {
  PointwiseParams p = with_a(lo);
  return structured_functional<at::meta::structured_clamp_min>(unary_kernel(UnaryOp::kClamp, p), self, lo);
}

T& NF::clamp_min_(T& self, const S& lo) {
  PointwiseParams p = with_a(lo);
  return structured_inplace<at::meta::structured_clamp_min>(unary_kernel(UnaryOp::kClamp, p), self, lo);
}

T NF::clamp_max(const T& self, const S& hi) {
  PointwiseParams p;
  p.b = hi.toDouble();
  p.has_b = true;
  return structured_functional<at::meta::structured_clamp_max>(unary_kernel(UnaryOp::kClamp, p), self, hi);
}

T& NF::clamp_max_(T& self, const S& hi) {
  PointwiseParams p;
  p.b = hi.toDouble();
  p.has_b = true;
  return structured_inplace<at::meta::structured_clamp_max>(unary_kernel(UnaryOp::kClamp, p), self, hi);
}

// ternary
T NF::addcmul(const T& self, const T& a, const T& b, const S& value) {
  return structured_functional<at::meta::structured_addcmul>(ternary_kernel(TernaryOp::kAddcmul, with_a(value)), self,
                                                             a, b, value);
}

T& NF::addcmul_(T& self, const T& a, const T& b, const S& value) {
  return structured_inplace<at::meta::structured_addcmul>(ternary_kernel(TernaryOp::kAddcmul, with_a(value)), self, a,
                                                          b, value);
}

T& NF::addcmul_out(const T& self, const T& a, const T& b, const S& value, T& out) {
  return structured_out<at::meta::structured_addcmul>(ternary_kernel(TernaryOp::kAddcmul, with_a(value)), out, self, a,
                                                      b, value);
}

T NF::addcdiv(const T& self, const T& a, const T& b, const S& value) {
  return structured_functional<at::meta::structured_addcdiv>(ternary_kernel(TernaryOp::kAddcdiv, with_a(value)), self,
                                                             a, b, value);
}

T& NF::addcdiv_(T& self, const T& a, const T& b, const S& value) {
  return structured_inplace<at::meta::structured_addcdiv>(ternary_kernel(TernaryOp::kAddcdiv, with_a(value)), self, a,
                                                          b, value);
}

T& NF::addcdiv_out(const T& self, const T& a, const T& b, const S& value, T& out) {
  return structured_out<at::meta::structured_addcdiv>(ternary_kernel(TernaryOp::kAddcdiv, with_a(value)), out, self, a,
                                                      b, value);
}

T& NF::lerp_out(const T& self, const T& end, const T& w, T& out) {
  return structured_out<at::meta::structured_lerp_Tensor>(ternary_kernel(TernaryOp::kLerp), out, self, end, w);
}

// lerp with a Python-number weight: the iterator has two inputs, the weight travels as a parameter
T NF::lerp(const T& self, const T& end, const S& w) {
  return structured_functional<at::meta::structured_lerp_Scalar>(binary_kernel(BinaryOp::kLerpScalar, with_a(w)), self,
                                                                 end, w);
}

T& NF::lerp_(T& self, const T& end, const S& w) {
  return structured_inplace<at::meta::structured_lerp_Scalar>(binary_kernel(BinaryOp::kLerpScalar, with_a(w)), self,
                                                              end, w);
}

T& NF::lerp_out(const T& self, const T& end, const S& w, T& out) {
  return structured_out<at::meta::structured_lerp_Scalar>(binary_kernel(BinaryOp::kLerpScalar, with_a(w)), out, self,
                                                          end, w);
}

T NF::lerp(const T& self, const T& end, const T& w) {
  return structured_functional<at::meta::structured_lerp_Tensor>(ternary_kernel(TernaryOp::kLerp), self, end, w);
}

T& NF::lerp_(T& self, const T& end, const T& w) {
  return structured_inplace<at::meta::structured_lerp_Tensor>(ternary_kernel(TernaryOp::kLerp), self, end, w);
}

// The one-schema-shape ops, over the helpers above.
T NF::mul(const T& a, const T& b) { return binary<at::meta::structured_mul_Tensor>(BinaryOp::kMul, a, b); }
T& NF::mul_(T& a, const T& b) { return binary_<at::meta::structured_mul_Tensor>(BinaryOp::kMul, a, b); }
T& NF::mul_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_mul_Tensor>(BinaryOp::kMul, a, b, out);
}
T NF::div(const T& a, const T& b) { return binary<at::meta::structured_div_Tensor>(BinaryOp::kDiv, a, b); }
T& NF::div_(T& a, const T& b) { return binary_<at::meta::structured_div_Tensor>(BinaryOp::kDiv, a, b); }
T& NF::div_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_div_Tensor>(BinaryOp::kDiv, a, b, out);
}
T NF::remainder(const T& a, const T& b) {
  return binary<at::meta::structured_remainder_Tensor>(BinaryOp::kRemainder, a, b);
}
T& NF::remainder_(T& a, const T& b) {
  return binary_<at::meta::structured_remainder_Tensor>(BinaryOp::kRemainder, a, b);
}
T& NF::remainder_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_remainder_Tensor>(BinaryOp::kRemainder, a, b, out);
}
T NF::fmod(const T& a, const T& b) { return binary<at::meta::structured_fmod_Tensor>(BinaryOp::kFmod, a, b); }
T& NF::fmod_(T& a, const T& b) { return binary_<at::meta::structured_fmod_Tensor>(BinaryOp::kFmod, a, b); }
T& NF::fmod_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_fmod_Tensor>(BinaryOp::kFmod, a, b, out);
}
T NF::copysign(const T& a, const T& b) {
  return binary<at::meta::structured_copysign_Tensor>(BinaryOp::kCopysign, a, b);
}
T& NF::copysign_(T& a, const T& b) { return binary_<at::meta::structured_copysign_Tensor>(BinaryOp::kCopysign, a, b); }
T& NF::copysign_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_copysign_Tensor>(BinaryOp::kCopysign, a, b, out);
}
T NF::xlogy(const T& a, const T& b) { return binary<at::meta::structured_xlogy_Tensor>(BinaryOp::kXlogy, a, b); }
T& NF::xlogy_(T& a, const T& b) { return binary_<at::meta::structured_xlogy_Tensor>(BinaryOp::kXlogy, a, b); }
T& NF::xlogy_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_xlogy_Tensor>(BinaryOp::kXlogy, a, b, out);
}
T NF::bitwise_and(const T& a, const T& b) {
  return binary<at::meta::structured_bitwise_and_Tensor>(BinaryOp::kBitwiseAnd, a, b);
}
T& NF::bitwise_and_(T& a, const T& b) {
  return binary_<at::meta::structured_bitwise_and_Tensor>(BinaryOp::kBitwiseAnd, a, b);
}
T& NF::bitwise_and_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_bitwise_and_Tensor>(BinaryOp::kBitwiseAnd, a, b, out);
}
T NF::bitwise_or(const T& a, const T& b) {
  return binary<at::meta::structured_bitwise_or_Tensor>(BinaryOp::kBitwiseOr, a, b);
}
T& NF::bitwise_or_(T& a, const T& b) {
  return binary_<at::meta::structured_bitwise_or_Tensor>(BinaryOp::kBitwiseOr, a, b);
}
T& NF::bitwise_or_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_bitwise_or_Tensor>(BinaryOp::kBitwiseOr, a, b, out);
}
T NF::bitwise_xor(const T& a, const T& b) {
  return binary<at::meta::structured_bitwise_xor_Tensor>(BinaryOp::kBitwiseXor, a, b);
}
T& NF::bitwise_xor_(T& a, const T& b) {
  return binary_<at::meta::structured_bitwise_xor_Tensor>(BinaryOp::kBitwiseXor, a, b);
}
T& NF::bitwise_xor_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_bitwise_xor_Tensor>(BinaryOp::kBitwiseXor, a, b, out);
}
T NF::maximum(const T& a, const T& b) { return binary<at::meta::structured_maximum>(BinaryOp::kMaximum, a, b); }
T& NF::maximum_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_maximum>(BinaryOp::kMaximum, a, b, out);
}
T NF::minimum(const T& a, const T& b) { return binary<at::meta::structured_minimum>(BinaryOp::kMinimum, a, b); }
T& NF::minimum_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_minimum>(BinaryOp::kMinimum, a, b, out);
}
T NF::fmax(const T& a, const T& b) { return binary<at::meta::structured_fmax>(BinaryOp::kFmax, a, b); }
T& NF::fmax_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_fmax>(BinaryOp::kFmax, a, b, out);
}
T NF::fmin(const T& a, const T& b) { return binary<at::meta::structured_fmin>(BinaryOp::kFmin, a, b); }
T& NF::fmin_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_fmin>(BinaryOp::kFmin, a, b, out);
}
T NF::atan2(const T& a, const T& b) { return binary<at::meta::structured_atan2>(BinaryOp::kAtan2, a, b); }
T& NF::atan2_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_atan2>(BinaryOp::kAtan2, a, b, out);
}
T NF::hypot(const T& a, const T& b) { return binary<at::meta::structured_hypot>(BinaryOp::kHypot, a, b); }
T& NF::hypot_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_hypot>(BinaryOp::kHypot, a, b, out);
}
T NF::eq(const T& a, const T& b) { return binary<at::meta::structured_eq_Tensor>(BinaryOp::kEq, a, b); }
T& NF::eq_(T& a, const T& b) { return binary_<at::meta::structured_eq_Tensor>(BinaryOp::kEq, a, b); }
T& NF::eq_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_eq_Tensor>(BinaryOp::kEq, a, b, out);
}
T NF::eq(const T& a, const S& b) { return binary<at::meta::structured_eq_Scalar>(BinaryOp::kEq, a, b); }
T& NF::eq_(T& a, const S& b) { return binary_<at::meta::structured_eq_Scalar>(BinaryOp::kEq, a, b); }
T& NF::eq_out(const T& a, const S& b, T& out) {
  return binary_out<at::meta::structured_eq_Scalar>(BinaryOp::kEq, a, b, out);
}
T NF::ne(const T& a, const T& b) { return binary<at::meta::structured_ne_Tensor>(BinaryOp::kNe, a, b); }
T& NF::ne_(T& a, const T& b) { return binary_<at::meta::structured_ne_Tensor>(BinaryOp::kNe, a, b); }
T& NF::ne_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_ne_Tensor>(BinaryOp::kNe, a, b, out);
}
T NF::ne(const T& a, const S& b) { return binary<at::meta::structured_ne_Scalar>(BinaryOp::kNe, a, b); }
T& NF::ne_(T& a, const S& b) { return binary_<at::meta::structured_ne_Scalar>(BinaryOp::kNe, a, b); }
T& NF::ne_out(const T& a, const S& b, T& out) {
  return binary_out<at::meta::structured_ne_Scalar>(BinaryOp::kNe, a, b, out);
}
T NF::lt(const T& a, const T& b) { return binary<at::meta::structured_lt_Tensor>(BinaryOp::kLt, a, b); }
T& NF::lt_(T& a, const T& b) { return binary_<at::meta::structured_lt_Tensor>(BinaryOp::kLt, a, b); }
T& NF::lt_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_lt_Tensor>(BinaryOp::kLt, a, b, out);
}
T NF::lt(const T& a, const S& b) { return binary<at::meta::structured_lt_Scalar>(BinaryOp::kLt, a, b); }
T& NF::lt_(T& a, const S& b) { return binary_<at::meta::structured_lt_Scalar>(BinaryOp::kLt, a, b); }
T& NF::lt_out(const T& a, const S& b, T& out) {
  return binary_out<at::meta::structured_lt_Scalar>(BinaryOp::kLt, a, b, out);
}
T NF::le(const T& a, const T& b) { return binary<at::meta::structured_le_Tensor>(BinaryOp::kLe, a, b); }
T& NF::le_(T& a, const T& b) { return binary_<at::meta::structured_le_Tensor>(BinaryOp::kLe, a, b); }
T& NF::le_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_le_Tensor>(BinaryOp::kLe, a, b, out);
}
T NF::le(const T& a, const S& b) { return binary<at::meta::structured_le_Scalar>(BinaryOp::kLe, a, b); }
T& NF::le_(T& a, const S& b) { return binary_<at::meta::structured_le_Scalar>(BinaryOp::kLe, a, b); }
T& NF::le_out(const T& a, const S& b, T& out) {
  return binary_out<at::meta::structured_le_Scalar>(BinaryOp::kLe, a, b, out);
}
T NF::gt(const T& a, const T& b) { return binary<at::meta::structured_gt_Tensor>(BinaryOp::kGt, a, b); }
T& NF::gt_(T& a, const T& b) { return binary_<at::meta::structured_gt_Tensor>(BinaryOp::kGt, a, b); }
T& NF::gt_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_gt_Tensor>(BinaryOp::kGt, a, b, out);
}
T NF::gt(const T& a, const S& b) { return binary<at::meta::structured_gt_Scalar>(BinaryOp::kGt, a, b); }
T& NF::gt_(T& a, const S& b) { return binary_<at::meta::structured_gt_Scalar>(BinaryOp::kGt, a, b); }
T& NF::gt_out(const T& a, const S& b, T& out) {
  return binary_out<at::meta::structured_gt_Scalar>(BinaryOp::kGt, a, b, out);
}
T NF::ge(const T& a, const T& b) { return binary<at::meta::structured_ge_Tensor>(BinaryOp::kGe, a, b); }
T& NF::ge_(T& a, const T& b) { return binary_<at::meta::structured_ge_Tensor>(BinaryOp::kGe, a, b); }
T& NF::ge_out(const T& a, const T& b, T& out) {
  return binary_out<at::meta::structured_ge_Tensor>(BinaryOp::kGe, a, b, out);
}
T NF::ge(const T& a, const S& b) { return binary<at::meta::structured_ge_Scalar>(BinaryOp::kGe, a, b); }
T& NF::ge_(T& a, const S& b) { return binary_<at::meta::structured_ge_Scalar>(BinaryOp::kGe, a, b); }
T& NF::ge_out(const T& a, const S& b, T& out) {
  return binary_out<at::meta::structured_ge_Scalar>(BinaryOp::kGe, a, b, out);
}
T NF::neg(const T& self) { return unary<at::meta::structured_neg>(UnaryOp::kNeg, self); }
T& NF::neg_(T& self) { return unary_<at::meta::structured_neg>(UnaryOp::kNeg, self); }
T& NF::neg_out(const T& self, T& out) { return unary_out<at::meta::structured_neg>(UnaryOp::kNeg, self, out); }
T NF::sign(const T& self) { return unary<at::meta::structured_sign>(UnaryOp::kSign, self); }
T& NF::sign_(T& self) { return unary_<at::meta::structured_sign>(UnaryOp::kSign, self); }
T& NF::sign_out(const T& self, T& out) { return unary_out<at::meta::structured_sign>(UnaryOp::kSign, self, out); }
T NF::sqrt(const T& self) { return unary<at::meta::structured_sqrt>(UnaryOp::kSqrt, self); }
T& NF::sqrt_(T& self) { return unary_<at::meta::structured_sqrt>(UnaryOp::kSqrt, self); }
T& NF::sqrt_out(const T& self, T& out) { return unary_out<at::meta::structured_sqrt>(UnaryOp::kSqrt, self, out); }
T NF::rsqrt(const T& self) { return unary<at::meta::structured_rsqrt>(UnaryOp::kRsqrt, self); }
T& NF::rsqrt_(T& self) { return unary_<at::meta::structured_rsqrt>(UnaryOp::kRsqrt, self); }
T& NF::rsqrt_out(const T& self, T& out) { return unary_out<at::meta::structured_rsqrt>(UnaryOp::kRsqrt, self, out); }
T NF::exp(const T& self) { return unary<at::meta::structured_exp>(UnaryOp::kExp, self); }
T& NF::exp_(T& self) { return unary_<at::meta::structured_exp>(UnaryOp::kExp, self); }
T& NF::exp_out(const T& self, T& out) { return unary_out<at::meta::structured_exp>(UnaryOp::kExp, self, out); }
T NF::exp2(const T& self) { return unary<at::meta::structured_exp2>(UnaryOp::kExp2, self); }
T& NF::exp2_(T& self) { return unary_<at::meta::structured_exp2>(UnaryOp::kExp2, self); }
T& NF::exp2_out(const T& self, T& out) { return unary_out<at::meta::structured_exp2>(UnaryOp::kExp2, self, out); }
T NF::expm1(const T& self) { return unary<at::meta::structured_expm1>(UnaryOp::kExpm1, self); }
T& NF::expm1_(T& self) { return unary_<at::meta::structured_expm1>(UnaryOp::kExpm1, self); }
T& NF::expm1_out(const T& self, T& out) { return unary_out<at::meta::structured_expm1>(UnaryOp::kExpm1, self, out); }
T NF::log(const T& self) { return unary<at::meta::structured_log>(UnaryOp::kLog, self); }
T& NF::log_(T& self) { return unary_<at::meta::structured_log>(UnaryOp::kLog, self); }
T& NF::log_out(const T& self, T& out) { return unary_out<at::meta::structured_log>(UnaryOp::kLog, self, out); }
T NF::log2(const T& self) { return unary<at::meta::structured_log2>(UnaryOp::kLog2, self); }
T& NF::log2_(T& self) { return unary_<at::meta::structured_log2>(UnaryOp::kLog2, self); }
T& NF::log2_out(const T& self, T& out) { return unary_out<at::meta::structured_log2>(UnaryOp::kLog2, self, out); }
T NF::log10(const T& self) { return unary<at::meta::structured_log10>(UnaryOp::kLog10, self); }
T& NF::log10_(T& self) { return unary_<at::meta::structured_log10>(UnaryOp::kLog10, self); }
T& NF::log10_out(const T& self, T& out) { return unary_out<at::meta::structured_log10>(UnaryOp::kLog10, self, out); }
T NF::log1p(const T& self) { return unary<at::meta::structured_log1p>(UnaryOp::kLog1p, self); }
T& NF::log1p_(T& self) { return unary_<at::meta::structured_log1p>(UnaryOp::kLog1p, self); }
T& NF::log1p_out(const T& self, T& out) { return unary_out<at::meta::structured_log1p>(UnaryOp::kLog1p, self, out); }
T NF::sin(const T& self) { return unary<at::meta::structured_sin>(UnaryOp::kSin, self); }
T& NF::sin_(T& self) { return unary_<at::meta::structured_sin>(UnaryOp::kSin, self); }
T& NF::sin_out(const T& self, T& out) { return unary_out<at::meta::structured_sin>(UnaryOp::kSin, self, out); }
T NF::cos(const T& self) { return unary<at::meta::structured_cos>(UnaryOp::kCos, self); }
T& NF::cos_(T& self) { return unary_<at::meta::structured_cos>(UnaryOp::kCos, self); }
T& NF::cos_out(const T& self, T& out) { return unary_out<at::meta::structured_cos>(UnaryOp::kCos, self, out); }
T NF::tan(const T& self) { return unary<at::meta::structured_tan>(UnaryOp::kTan, self); }
T& NF::tan_(T& self) { return unary_<at::meta::structured_tan>(UnaryOp::kTan, self); }
T& NF::tan_out(const T& self, T& out) { return unary_out<at::meta::structured_tan>(UnaryOp::kTan, self, out); }
T NF::asin(const T& self) { return unary<at::meta::structured_asin>(UnaryOp::kAsin, self); }
T& NF::asin_(T& self) { return unary_<at::meta::structured_asin>(UnaryOp::kAsin, self); }
T& NF::asin_out(const T& self, T& out) { return unary_out<at::meta::structured_asin>(UnaryOp::kAsin, self, out); }
T NF::acos(const T& self) { return unary<at::meta::structured_acos>(UnaryOp::kAcos, self); }
T& NF::acos_(T& self) { return unary_<at::meta::structured_acos>(UnaryOp::kAcos, self); }
T& NF::acos_out(const T& self, T& out) { return unary_out<at::meta::structured_acos>(UnaryOp::kAcos, self, out); }
T NF::atan(const T& self) { return unary<at::meta::structured_atan>(UnaryOp::kAtan, self); }
T& NF::atan_(T& self) { return unary_<at::meta::structured_atan>(UnaryOp::kAtan, self); }
T& NF::atan_out(const T& self, T& out) { return unary_out<at::meta::structured_atan>(UnaryOp::kAtan, self, out); }
T NF::sinh(const T& self) { return unary<at::meta::structured_sinh>(UnaryOp::kSinh, self); }
T& NF::sinh_(T& self) { return unary_<at::meta::structured_sinh>(UnaryOp::kSinh, self); }
T& NF::sinh_out(const T& self, T& out) { return unary_out<at::meta::structured_sinh>(UnaryOp::kSinh, self, out); }
T NF::cosh(const T& self) { return unary<at::meta::structured_cosh>(UnaryOp::kCosh, self); }
T& NF::cosh_(T& self) { return unary_<at::meta::structured_cosh>(UnaryOp::kCosh, self); }
T& NF::cosh_out(const T& self, T& out) { return unary_out<at::meta::structured_cosh>(UnaryOp::kCosh, self, out); }
T NF::tanh(const T& self) { return unary<at::meta::structured_tanh>(UnaryOp::kTanh, self); }
T& NF::tanh_(T& self) { return unary_<at::meta::structured_tanh>(UnaryOp::kTanh, self); }
T& NF::tanh_out(const T& self, T& out) { return unary_out<at::meta::structured_tanh>(UnaryOp::kTanh, self, out); }
T NF::asinh(const T& self) { return unary<at::meta::structured_asinh>(UnaryOp::kAsinh, self); }
T& NF::asinh_(T& self) { return unary_<at::meta::structured_asinh>(UnaryOp::kAsinh, self); }
T& NF::asinh_out(const T& self, T& out) { return unary_out<at::meta::structured_asinh>(UnaryOp::kAsinh, self, out); }
T NF::acosh(const T& self) { return unary<at::meta::structured_acosh>(UnaryOp::kAcosh, self); }
T& NF::acosh_(T& self) { return unary_<at::meta::structured_acosh>(UnaryOp::kAcosh, self); }
T& NF::acosh_out(const T& self, T& out) { return unary_out<at::meta::structured_acosh>(UnaryOp::kAcosh, self, out); }
T NF::atanh(const T& self) { return unary<at::meta::structured_atanh>(UnaryOp::kAtanh, self); }
T& NF::atanh_(T& self) { return unary_<at::meta::structured_atanh>(UnaryOp::kAtanh, self); }
T& NF::atanh_out(const T& self, T& out) { return unary_out<at::meta::structured_atanh>(UnaryOp::kAtanh, self, out); }
T NF::sigmoid(const T& self) { return unary<at::meta::structured_sigmoid>(UnaryOp::kSigmoid, self); }
T& NF::sigmoid_(T& self) { return unary_<at::meta::structured_sigmoid>(UnaryOp::kSigmoid, self); }
T& NF::sigmoid_out(const T& self, T& out) {
  return unary_out<at::meta::structured_sigmoid>(UnaryOp::kSigmoid, self, out);
}
T NF::erf(const T& self) { return unary<at::meta::structured_erf>(UnaryOp::kErf, self); }
T& NF::erf_(T& self) { return unary_<at::meta::structured_erf>(UnaryOp::kErf, self); }
T& NF::erf_out(const T& self, T& out) { return unary_out<at::meta::structured_erf>(UnaryOp::kErf, self, out); }
T NF::erfc(const T& self) { return unary<at::meta::structured_erfc>(UnaryOp::kErfc, self); }
T& NF::erfc_(T& self) { return unary_<at::meta::structured_erfc>(UnaryOp::kErfc, self); }
T& NF::erfc_out(const T& self, T& out) { return unary_out<at::meta::structured_erfc>(UnaryOp::kErfc, self, out); }
T NF::floor(const T& self) { return unary<at::meta::structured_floor>(UnaryOp::kFloor, self); }
T& NF::floor_(T& self) { return unary_<at::meta::structured_floor>(UnaryOp::kFloor, self); }
T& NF::floor_out(const T& self, T& out) { return unary_out<at::meta::structured_floor>(UnaryOp::kFloor, self, out); }
T NF::ceil(const T& self) { return unary<at::meta::structured_ceil>(UnaryOp::kCeil, self); }
T& NF::ceil_(T& self) { return unary_<at::meta::structured_ceil>(UnaryOp::kCeil, self); }
T& NF::ceil_out(const T& self, T& out) { return unary_out<at::meta::structured_ceil>(UnaryOp::kCeil, self, out); }
T NF::round(const T& self) { return unary<at::meta::structured_round>(UnaryOp::kRound, self); }
T& NF::round_(T& self) { return unary_<at::meta::structured_round>(UnaryOp::kRound, self); }
T& NF::round_out(const T& self, T& out) { return unary_out<at::meta::structured_round>(UnaryOp::kRound, self, out); }
T NF::trunc(const T& self) { return unary<at::meta::structured_trunc>(UnaryOp::kTrunc, self); }
T& NF::trunc_(T& self) { return unary_<at::meta::structured_trunc>(UnaryOp::kTrunc, self); }
T& NF::trunc_out(const T& self, T& out) { return unary_out<at::meta::structured_trunc>(UnaryOp::kTrunc, self, out); }
T NF::frac(const T& self) { return unary<at::meta::structured_frac>(UnaryOp::kFrac, self); }
T& NF::frac_(T& self) { return unary_<at::meta::structured_frac>(UnaryOp::kFrac, self); }
T& NF::frac_out(const T& self, T& out) { return unary_out<at::meta::structured_frac>(UnaryOp::kFrac, self, out); }
T NF::reciprocal(const T& self) { return unary<at::meta::structured_reciprocal>(UnaryOp::kReciprocal, self); }
T& NF::reciprocal_(T& self) { return unary_<at::meta::structured_reciprocal>(UnaryOp::kReciprocal, self); }
T& NF::reciprocal_out(const T& self, T& out) {
  return unary_out<at::meta::structured_reciprocal>(UnaryOp::kReciprocal, self, out);
}
T NF::bitwise_not(const T& self) { return unary<at::meta::structured_bitwise_not>(UnaryOp::kBitwiseNot, self); }
T& NF::bitwise_not_(T& self) { return unary_<at::meta::structured_bitwise_not>(UnaryOp::kBitwiseNot, self); }
T& NF::bitwise_not_out(const T& self, T& out) {
  return unary_out<at::meta::structured_bitwise_not>(UnaryOp::kBitwiseNot, self, out);
}
T NF::silu(const T& self) { return unary<at::meta::structured_silu>(UnaryOp::kSilu, self); }
T& NF::silu_(T& self) { return unary_<at::meta::structured_silu>(UnaryOp::kSilu, self); }
T& NF::silu_out(const T& self, T& out) { return unary_out<at::meta::structured_silu>(UnaryOp::kSilu, self, out); }
T NF::mish(const T& self) { return unary<at::meta::structured_mish>(UnaryOp::kMish, self); }
T& NF::mish_(T& self) { return unary_<at::meta::structured_mish>(UnaryOp::kMish, self); }
T& NF::mish_out(const T& self, T& out) { return unary_out<at::meta::structured_mish>(UnaryOp::kMish, self, out); }
T NF::hardsigmoid(const T& self) { return unary<at::meta::structured_hardsigmoid>(UnaryOp::kHardsigmoid, self); }
T& NF::hardsigmoid_(T& self) { return unary_<at::meta::structured_hardsigmoid>(UnaryOp::kHardsigmoid, self); }
T& NF::hardsigmoid_out(const T& self, T& out) {
  return unary_out<at::meta::structured_hardsigmoid>(UnaryOp::kHardsigmoid, self, out);
}
T NF::lgamma(const T& self) { return unary<at::meta::structured_lgamma>(UnaryOp::kLgamma, self); }
T& NF::lgamma_(T& self) { return unary_<at::meta::structured_lgamma>(UnaryOp::kLgamma, self); }
T& NF::lgamma_out(const T& self, T& out) { return unary_out<at::meta::structured_lgamma>(UnaryOp::kLgamma, self, out); }
T NF::sinc(const T& self) { return unary<at::meta::structured_sinc>(UnaryOp::kSinc, self); }
T& NF::sinc_(T& self) { return unary_<at::meta::structured_sinc>(UnaryOp::kSinc, self); }
T& NF::sinc_out(const T& self, T& out) { return unary_out<at::meta::structured_sinc>(UnaryOp::kSinc, self, out); }
T NF::digamma(const T& self) { return unary<at::meta::structured_digamma>(UnaryOp::kDigamma, self); }
T& NF::digamma_(T& self) { return unary_<at::meta::structured_digamma>(UnaryOp::kDigamma, self); }
T& NF::digamma_out(const T& self, T& out) {
  return unary_out<at::meta::structured_digamma>(UnaryOp::kDigamma, self, out);
}
T NF::erfinv(const T& self) { return unary<at::meta::structured_erfinv>(UnaryOp::kErfinv, self); }
T& NF::erfinv_(T& self) { return unary_<at::meta::structured_erfinv>(UnaryOp::kErfinv, self); }
T& NF::erfinv_out(const T& self, T& out) { return unary_out<at::meta::structured_erfinv>(UnaryOp::kErfinv, self, out); }
T NF::sigmoid_backward(const T& g, const T& x) {
  return binary<at::meta::structured_sigmoid_backward>(BinaryOp::kSigmoidBackward, g, x);
}
T& NF::sigmoid_backward_out(const T& g, const T& x, T& out) {
  return binary_out<at::meta::structured_sigmoid_backward>(BinaryOp::kSigmoidBackward, g, x, out);
}
T NF::tanh_backward(const T& g, const T& x) {
  return binary<at::meta::structured_tanh_backward>(BinaryOp::kTanhBackward, g, x);
}
T& NF::tanh_backward_out(const T& g, const T& x, T& out) {
  return binary_out<at::meta::structured_tanh_backward>(BinaryOp::kTanhBackward, g, x, out);
}
T NF::silu_backward(const T& g, const T& x) {
  return binary<at::meta::structured_silu_backward>(BinaryOp::kSiluBackward, g, x);
}
T& NF::silu_backward_out(const T& g, const T& x, T& out) {
  return binary_out<at::meta::structured_silu_backward>(BinaryOp::kSiluBackward, g, x, out);
}

}  // namespace torch_npu_sim
