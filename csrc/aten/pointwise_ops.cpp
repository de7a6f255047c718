// Registration of the pointwise ops for npu: each op runs ATen's structured meta function (shape,
// broadcasting, promotion, checks) through NpuStructured, then our elementwise kernel. No math here.
#include <c10/util/Exception.h>
#include <ATen/ExpandUtils.h>
#include <ATen/TensorIterator.h>
#include <ATen/ops/add_meta.h>
#include <ATen/ops/clamp_max_meta.h>
#include <ATen/ops/clamp_meta.h>
#include <ATen/ops/clamp_min_meta.h>
#include <ATen/ops/div_meta.h>
#include <ATen/ops/elu_backward_meta.h>
#include <ATen/ops/elu_meta.h>
#include <ATen/ops/gelu_backward_meta.h>
#include <ATen/ops/gelu_meta.h>
#include <ATen/ops/pow_meta.h>
#include <ATen/ops/sub_meta.h>
#include <ATen/ops/threshold_meta.h>
#include <ATen/ops/sign.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/pow.h>
#include <ATen/ScalarOps.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/round_meta.h>
#include <ATen/ops/polygamma_meta.h>
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

PointwiseParams clamp_params(const std::optional<S>& lo, const std::optional<S>& hi) {
  PointwiseParams p;
  if (lo) p = with_a(*lo);
  if (hi) {
    p.b = hi->toDouble();
    p.has_b = true;
  }
  return p;
}

at::OptionalScalarRef scalar_ref(const std::optional<S>& v) {
  return v ? at::OptionalScalarRef(&*v) : at::OptionalScalarRef();
}

// add / sub: a op alpha * b. A complex alpha is an error for real tensors: the structured path raises it.
template <class Meta>
T with_alpha(BinaryOp op, const T& a, const T& b, const S& alpha) {
  if (!alpha.isComplex()) {
    if (auto flat = flat_binary(op, a, b, with_a(alpha))) return *std::move(flat);
  }
  return structured_functional<Meta>(binary_kernel(op, with_a(alpha)), a, b, alpha);
}
template <class Meta>
T& with_alpha_(BinaryOp op, T& a, const T& b, const S& alpha) {
  if (!alpha.isComplex() && flat_binary_(op, a, b, with_a(alpha))) return a;
  return structured_inplace<Meta>(binary_kernel(op, with_a(alpha)), a, b, alpha);
}

// pow.Scalar's body on the meta's output: 1 ** e is 1 (also for NaN e), otherwise pow.Tensor_Tensor with the base
// as a CPU scalar operand.
auto scalar_base_pow(const S& base, const T& e) {
  return [&base, &e](auto& meta) {
    T result = meta.maybe_get_output(0);
    if (base.equal(1.0)) {
      result.fill_(1);
    } else {
      at::pow_out(result, at::native::wrapped_scalar_tensor(base), e);
    }
  };
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
  TORCH_CHECK(self.scalar_type() != at::kBool, "Boolean inputs not supported for relu");
  at::TensorBase out;
  return unary_into(out, self, UnaryOp::kRelu);
}

T& NF::relu_(T& self) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Boolean inputs not supported for relu");
  unary_into(self, self, UnaryOp::kRelu);
  return self;
}

// abs of a complex tensor writes its real type (or a complex out with zero imaginary parts), as ATen's
// abs_out; real dtypes keep theirs.
T& NF::abs_out(const T& self, T& out) {
  if (!self.is_complex()) {
    unary_into(out, self, UnaryOp::kAbs);
    return out;
  }
  const at::ScalarType real = c10::toRealValueType(self.scalar_type());
  TORCH_CHECK(out.is_complex() || at::canCast(real, out.scalar_type()), "result type ", real,
              " can't be cast to the desired output type ", out.scalar_type());
  at::native::resize_output(out, self.sizes());
  auto iter = at::TensorIteratorConfig().check_all_same_dtype(false).add_output(out).add_const_input(self).build();
  run_pointwise(iter, "abs", false, unary_launch(UnaryOp::kAbs), self.scalar_type(),
                out.is_complex() ? self.scalar_type() : real);
  return out;
}

T& NF::sgn_out(const T& self, T& out) {  // real dtypes: sgn == sign; complex: z / |z| (the kernels' kSign)
  if (self.is_complex()) {
    unary_into(out, self, UnaryOp::kSign);
    return out;
  }
  return at::sign_out(out, self);
}

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

namespace {
// out = cond ? x : y through the where kernel: the condition read as it is (1 byte per element), x and y
// converted to out's dtype where they differ (host scalars inline, in the launch), broadcast to out's shape
// without resizing it (ATen's rule for masked_fill_, whose self may not grow; where's own out is resized first).
void where_into(const T& out, const T& cond, const T& x, const T& y, const char* op) {
  // TensorIterator takes one host scalar per launch: further CPU 0-dim operands move to the device (as ATen's
  // where moves them all on CUDA)
  T in[3] = {cond, x, y};
  int host = 0;
  for (T& t : in) {
    if (t.dim() == 0 && t.device().is_cpu() && is_npu(out) && host++ > 0) t = t.to(out.device());
  }
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .allow_cpu_scalars(true)
                  .resize_outputs(false)
                  .add_output(out)
                  .add_const_input(in[0])
                  .add_const_input(in[1])
                  .add_const_input(in[2])
                  .build();
  run_pointwise(
      iter, op, false,
      [](npu_sim::Stream s, const npu_kernels::ElementwiseIter& e) {
        return npu_kernels::ternary(s, TernaryOp::kWhere, e, {});
      },
      out.scalar_type(), out.scalar_type(), /*raw_first_input=*/true);
}

// A masked_fill value as a host scalar operand of where (converted to self's dtype as CPU converts it: a complex
// value with an imaginary part into a real self raises). A 0-dim npu value tensor stays an operand: no sync.
T fill_value(const S& value) { return c10::scalar_to_tensor(value); }
}  // namespace

// where: ATen's where_self_out, on the where kernel. The condition is bool (uint8 read as nonzero, as CUDA does);
// self and other are promoted to their result type; CPU 0-dim operands travel as host scalars.
T& NF::where_out(const T& cond, const T& self, const T& other, T& out) {
  TORCH_CHECK(cond.scalar_type() == at::kBool || cond.scalar_type() == at::kByte,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ", cond.scalar_type());
  const auto type = at::result_type(self, other);
  TORCH_CHECK(out.scalar_type() == type, "Expected out type to be ", type, " but got ", out.scalar_type());
  at::native::resize_output(out, at::infer_size(at::infer_size(cond.sizes(), self.sizes()), other.sizes()));
  where_into(out, cond, self, other, "where");
  return out;
}

T NF::where(const T& cond, const T& self, const T& other) {
  const at::Device device = is_npu(cond) ? cond.device() : is_npu(self) ? self.device() : other.device();
  T out = at::empty({0}, self.options().dtype(at::result_type(self, other)).device(device));
  return NF::where_out(cond, self, other, out);
}

// masked_fill_ / masked_fill: self = where(mask, value, self), in place (the mask broadcast to self) or into a new
// contiguous tensor of the broadcast shape (ATen's composite: expand both, clone, fill), in one pass.
T& NF::masked_fill_(T& self, const T& mask, const S& value) { return NF::masked_fill_(self, mask, fill_value(value)); }

T& NF::masked_fill_(T& self, const T& mask, const T& value) {
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  TORCH_CHECK(at::is_expandable_to(mask.sizes(), self.sizes()), "masked_fill_: mask of shape ", mask.sizes(),
              " cannot be broadcast to ", self.sizes());
  if (self.numel() > 0) where_into(self, mask, value, self, "masked_fill_");
  return self;
}

T NF::masked_fill(const T& self, const T& mask, const S& value) {
  return NF::masked_fill(self, mask, fill_value(value));
}

T NF::masked_fill(const T& self, const T& mask, const T& value) {
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  T out = at::empty(at::infer_size(self.sizes(), mask.sizes()), self.options());
  if (out.numel() > 0) where_into(out, mask, value, self, "masked_fill");
  return out;
}

T& NF::isposinf_out(const T& self, T& out) { return inf_predicate_out(UnaryOp::kIsposinf, self, out); }

T& NF::isneginf_out(const T& self, T& out) { return inf_predicate_out(UnaryOp::kIsneginf, self, out); }

// complex has no kernel: the CPU fallback (CUDA accepts complex: NaN in either part)
// frexp: exponent and mantissa as two launches over the input (the engine writes one output per launch), with
// CPU's checks.
std::tuple<T&, T&> NF::frexp_out(const T& self, T& mantissa, T& exponent) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "torch.frexp() only supports floating-point dtypes");
  TORCH_CHECK(mantissa.dtype() == self.dtype(), "torch.frexp() expects mantissa to have dtype ", self.dtype(),
              " but got ", mantissa.dtype());
  TORCH_CHECK(exponent.dtype() == at::kInt, "torch.frexp() expects exponent to have int dtype but got ",
              exponent.dtype());
  at::native::resize_output(mantissa, self.sizes());
  at::native::resize_output(exponent, self.sizes());
  // The exponent first: mantissa may be self (out=(x, e)), whose launch overwrites the input.
  for (T* out : {&exponent, &mantissa}) {
    const UnaryOp op = out == &mantissa ? UnaryOp::kFrexpMantissa : UnaryOp::kFrexpExponent;
    auto iter = at::TensorIteratorConfig().check_all_same_dtype(false).add_output(*out).add_const_input(self).build();
    run_pointwise(iter, "frexp", false, unary_launch(op), self.scalar_type(), out->scalar_type());
  }
  return std::forward_as_tuple(mantissa, exponent);
}

T NF::isnan(const T& s) { return npu_isnan(s); }

// clamp with tensor bounds and rsub are compositions of native ops (no math of their own).
T NF::clamp(const T& self, const std::optional<T>& lo, const std::optional<T>& hi) {
  TORCH_CHECK(lo.has_value() || hi.has_value(), "torch.clamp: At least one of 'min' or 'max' must not be None");
  // both bounds: ATen's clamp kernel, which has none for bool (one bound is maximum / minimum, which has)
  const auto is_bool = [](const T& t) { return t.scalar_type() == at::kBool; };  // the result is bool iff all are
  TORCH_CHECK_NOT_IMPLEMENTED(!(lo && hi && is_bool(self) && is_bool(*lo) && is_bool(*hi)),
                              "\"clamp_npu\" not implemented for 'Bool'");
  T r = self;
  if (lo) r = at::maximum(r, *lo);
  if (hi) r = at::minimum(r, *hi);
  return r;
}

T& NF::clamp_out(const T& self, const std::optional<T>& lo, const std::optional<T>& hi, T& out) {
  const T r = NF::clamp(self, lo, hi);
  TORCH_CHECK(c10::canCast(r.scalar_type(), out.scalar_type()), "result type ", r.scalar_type(),
              " can't be cast to the desired output type ", out.scalar_type());
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
  // ATen's checks (its integer bounds truncate, as the kernel's casts do)
  TORCH_CHECK(self.scalar_type() != at::kBool, "Bool inputs not supported for hardtanh");
  TORCH_CHECK(self.scalar_type() != at::kByte || (lo.toLong() >= 0 && hi.toLong() >= 0),
              "cannot do hardtanh on an unsigned type with negative limits");
  unary_into(out, self, UnaryOp::kHardtanh, with_ab(lo, hi));
  return out;
}

T NF::hardtanh(const T& self, const S& lo, const S& hi) {
  at::Tensor out = at::empty_like(self);
  return NF::hardtanh_out(self, lo, hi, out);
}

T& NF::hardtanh_(T& self, const S& lo, const S& hi) { return NF::hardtanh_out(self, lo, hi, self); }

T NF::hardtanh_backward(const T& g, const T& x, const S& lo, const S& hi) {
  at::TensorBase out;
  return binary_into(out, g, x, BinaryOp::kHardtanhBackward, with_ab(lo, hi));
}

T NF::floor_divide(const T& a, const T& b) {
  at::TensorBase out;
  return binary_into(out, a, b, BinaryOp::kDivFloor);
}

T& NF::floor_divide_out(const T& a, const T& b, T& out) {
  binary_into(out, a, b, BinaryOp::kDivFloor);
  return out;
}

T& NF::floor_divide_(T& a, const T& b) { return NF::floor_divide_out(a, b, a); }

T& NF::nan_to_num_out(const T& self, std::optional<double> nan, std::optional<double> posinf,
                      std::optional<double> neginf, T& out) {
  auto iter = at::TensorIterator::unary_op(out, self);
  if (at::isIntegralType(self.scalar_type(), /*includeBool=*/true)) {
    out.copy_(self);  // integers have no NaN or infinity
    return out;
  }
  double hi = 0;
  switch (c10::toRealValueType(self.scalar_type())) {  // complex: each part replaced as its real type's values
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
  return with_alpha<at::meta::structured_add_Tensor>(BinaryOp::kAdd, a, b, alpha);
}

T& NF::add_(T& a, const T& b, const S& alpha) {
  return with_alpha_<at::meta::structured_add_Tensor>(BinaryOp::kAdd, a, b, alpha);
}

T NF::sub(const T& a, const T& b, const S& alpha) {
  return with_alpha<at::meta::structured_sub_Tensor>(BinaryOp::kSub, a, b, alpha);
}

T& NF::sub_(T& a, const T& b, const S& alpha) {
  return with_alpha_<at::meta::structured_sub_Tensor>(BinaryOp::kSub, a, b, alpha);
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

// Scalar base: ATen's meta sizes the output; the base travels as a CPU scalar operand of pow.Tensor_Tensor.
T& NF::pow_out(const S& base, const T& e, T& out) {
  return structured_out<at::meta::structured_pow_Scalar>(scalar_base_pow(base, e), out, base, e);
}

T NF::pow(const S& base, const T& e) {
  return structured_functional<at::meta::structured_pow_Scalar>(scalar_base_pow(base, e), base, e);
}

// polygamma: n = 0 is digamma, n = 1 trigamma (digamma's gradient), higher orders the special-function kernel.
namespace {
auto polygamma_kernel(int64_t n) {
  npu_kernels::PointwiseParams p;
  p.i = n;
  return unary_kernel(n == 0 ? UnaryOp::kDigamma : (n == 1 ? UnaryOp::kTrigamma : UnaryOp::kPolygamma), p);
}
}  // namespace

T& NF::polygamma_out(int64_t n, const T& self, T& out) {
  return structured_out<at::meta::structured_polygamma>(polygamma_kernel(n), out, n, self);
}

T NF::polygamma(int64_t n, const T& self) {
  return structured_functional<at::meta::structured_polygamma>(polygamma_kernel(n), n, self);
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

// clamp family: kClamp bounds below by a (has_a) and above by b (has_b).
T NF::clamp(const T& self, const std::optional<S>& lo, const std::optional<S>& hi) {
  return structured_functional<at::meta::structured_clamp>(unary_kernel(UnaryOp::kClamp, clamp_params(lo, hi)), self,
                                                           scalar_ref(lo), scalar_ref(hi));
}

T& NF::clamp_(T& self, const std::optional<S>& lo, const std::optional<S>& hi) {
  return structured_inplace<at::meta::structured_clamp>(unary_kernel(UnaryOp::kClamp, clamp_params(lo, hi)), self,
                                                        scalar_ref(lo), scalar_ref(hi));
}

T NF::clamp_min(const T& self, const S& lo) {
  return structured_functional<at::meta::structured_clamp_min>(unary_kernel(UnaryOp::kClamp, clamp_params(lo, {})),
                                                               self, lo);
}

T& NF::clamp_min_(T& self, const S& lo) {
  return structured_inplace<at::meta::structured_clamp_min>(unary_kernel(UnaryOp::kClamp, clamp_params(lo, {})), self,
                                                            lo);
}

T NF::clamp_max(const T& self, const S& hi) {
  return structured_functional<at::meta::structured_clamp_max>(unary_kernel(UnaryOp::kClamp, clamp_params({}, hi)),
                                                               self, hi);
}

T& NF::clamp_max_(T& self, const S& hi) {
  return structured_inplace<at::meta::structured_clamp_max>(unary_kernel(UnaryOp::kClamp, clamp_params({}, hi)), self,
                                                            hi);
}

}  // namespace torch_npu_sim
