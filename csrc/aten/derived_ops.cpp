// Registration of small ops that are compositions of native npu ops, with CPU's checks and messages:
// equal (eq + all), trace (diagonal + sum), isin (sort + searchsorted + gather), repeat_interleave with
// a repeats tensor (cumsum + searchsorted), conj_physical (a copy, the imaginary parts negated in place),
// unfold_backward (index_add of the windows), hash_tensor (bitwise_xor halvings), renorm (vector norm + where + mul), embedding_renorm_ (unique +
// index_select + norm + index_copy_), and the dispatch stubs of libtorch's complex / polar / angle (parts written
// through view_as_real), Python's shift operators (bitwise shifts), remainder and bucketize with a Scalar first
// operand. No math of their own.
#include <ATen/core/Tensor.h>
#include <ATen/ScalarOps.h>
#include <ATen/TensorIterator.h>
#include <ATen/TensorUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/bitwise_left_shift.h>
#include <ATen/ops/bitwise_right_shift.h>
#include <ATen/ops/bitwise_xor.h>
#include <ATen/ops/bucketize.h>
#include <ATen/ops/remainder.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/native/UnaryOps.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/atan2.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/imag.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/real.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/sin.h>
#include <ATen/ops/where.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/renorm_meta.h>
#include <ATen/AccumulateType.h>
#include <ATen/ops/add.h>
#include <ATen/ops/div.h>
#include <ATen/ops/gt.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/full.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/_unique2.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/lt.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/util/MathConstants.h>
#include <torch/library.h>

#include "aten/reduce_adapter.h"
#include "aten/npu_tensor.h"
#include "fallback/dtype_fallback.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using T = at::Tensor;
using S = c10::Scalar;

// elements[i] in test_elements <=> the sorted test values hold it at its left insertion point.
void isin_into(const T& elements, const T& test, bool invert, T& out) {
  TORCH_CHECK(is_npu(elements) || is_npu(test), "isin: expected npu tensors");
  TORCH_CHECK(!elements.is_complex() && !test.is_complex(), "Unsupported input type encountered for isin(): ",
              elements.is_complex() ? elements.scalar_type() : test.scalar_type());
  TORCH_CHECK(out.scalar_type() == at::kBool, "isin: expected out of dtype Bool, got ", out.scalar_type());
  at::native::resize_output(out, elements.sizes());
  if (elements.numel() == 0) return;
  if (test.numel() == 0) {
    out.fill_(invert);
    return;
  }
  const auto common = at::result_type(elements, test);
  const T e = elements.to(common);
  const T sorted = std::get<0>(at::sort(test.to(common).reshape({-1}), /*stable=*/false, 0, false));
  const T pos = at::searchsorted(sorted, e.reshape({-1})).clamp_max(sorted.numel() - 1);
  const T found = at::eq(at::index_select(sorted, 0, pos), e.reshape({-1})).reshape(elements.sizes());
  out.copy_(invert ? found.logical_not() : found);
}

}  // namespace

bool NF::equal(const T& self, const T& other) {
  TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different devices. Got: ", self.device(),
              " and ", other.device());
  if (self.sizes() != other.sizes()) return false;
  if (self.numel() == 0) return true;
  return at::eq(self, other).all().item<bool>();
}

// CUDA's trace: diagonal().sum(), so a bool matrix counts its true diagonal elements (int64); CPU refuses bool.
namespace {
// ATen's renorm factor: max_norm / (norm + 1e-7) where norm exceeds max_norm, else 1 (norm's dtype).
T max_norm_factor(const T& norm, const S& max_norm) {
  const T limit = at::full_like(norm, max_norm);
  return at::where(at::gt(norm, limit), at::div(limit, at::add(norm, 1e-7)), at::ones_like(norm));
}
}  // namespace

// renorm as ATen's: every slice along `dim` whose p-norm (in the accumulation type) exceeds maxnorm is scaled by
// maxnorm / (norm + 1e-7); the factor is computed in that type and rounded to the input's before the product
// (complex input: the real norm and factor, the factor then taken as complex, as CPU's kernel casts it).
T& NF::renorm_out(const T& self, const S& p, int64_t dim, const S& maxnorm, T& out) {
  meta_out<at::meta::structured_renorm>({out}, self, p, dim, maxnorm);
  dim = c10::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> reduce_dims;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d != dim) reduce_dims.push_back(d);
  }
  const auto dtype = self.scalar_type();
  const auto acc = at::toAccumulateType(dtype, /*is_cuda=*/true);
  const T norm = acc != dtype ? at::linalg_vector_norm(self, p.toDouble(), reduce_dims, true, acc)
                              : at::linalg_vector_norm(self, p.toDouble(), reduce_dims, true);
  T factor = max_norm_factor(norm, maxnorm);
  if (acc != c10::toRealValueType(dtype)) factor = factor.to(dtype);
  return at::mul_out(out, self, factor);
}

T NF::renorm(const T& self, const S& p, int64_t dim, const S& maxnorm) {
  T out = at::empty({0}, self.options());
  return NF::renorm_out(self, p, dim, maxnorm, out);
}

T& NF::renorm_(T& self, const S& p, int64_t dim, const S& maxnorm) { return NF::renorm_out(self, p, dim, maxnorm, self); }

// embedding_renorm_ (nn.Embedding / F.embedding_bag with max_norm) as CPU's: each distinct row the indices name
// whose norm_type-norm exceeds max_norm is scaled in place by max_norm / (norm + 1e-7).
T& NF::embedding_renorm_(T& self, const T& indices, double max_norm, double norm_type) {
  at::checkDim("embedding_renorm_", at::TensorArg(self, "self", 1), 2);
  at::checkScalarTypes("embedding_renorm_", at::TensorArg(indices, "indices", 2), {at::kLong, at::kInt});
  if (indices.numel() == 0 || self.numel() == 0) return self;
  const T rows = std::get<0>(at::_unique2(indices.reshape({-1}).to(at::kLong), /*sorted=*/true, false, false));
  const T picked = self.index_select(0, rows);
  const T norm = at::linalg_vector_norm(picked, norm_type, {1}, /*keepdim=*/true);
  self.index_copy_(0, rows, at::mul(picked, max_norm_factor(norm, max_norm)));
  return self;
}

T NF::trace(const T& self) {
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  return self.diagonal().sum();
}

T& NF::isin_out(const T& e, const T& t, bool assume_unique, bool invert, T& out) {
  (void)assume_unique;  // a hint only: the sorted search is exact either way
  isin_into(e, t, invert, out);
  return out;
}

T NF::isin(const T& e, const T& t, bool, bool invert) {
  T out = at::empty({0}, e.options().dtype(at::kBool));
  isin_into(e, t, invert, out);
  return out;
}

T& NF::isin_out(const T& e, const S& t, bool, bool invert, T& out) {
  at::native::resize_output(out, e.sizes());
  out.copy_(invert ? at::ne(e, t) : at::eq(e, t));
  return out;
}

T NF::isin(const T& e, const S& t, bool, bool invert) { return invert ? at::ne(e, t) : at::eq(e, t); }

T& NF::isin_out(const S& e, const T& t, bool, bool invert, T& out) {
  isin_into(at::native::wrapped_scalar_tensor(e, t.device()), t, invert, out);
  return out;
}

T NF::isin(const S& e, const T& t, bool, bool invert) {
  T out = at::empty({0}, t.options().dtype(at::kBool));
  isin_into(at::native::wrapped_scalar_tensor(e, t.device()), t, invert, out);
  return out;
}

T NF::repeat_interleave(const T& repeats, std::optional<int64_t> output_size) {
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  TORCH_CHECK_NOT_IMPLEMENTED(repeats.scalar_type() == at::kLong || repeats.scalar_type() == at::kInt,
                              "\"repeat_interleave\" not implemented for '", c10::toString(repeats.scalar_type()), "'");
  if (repeats.numel() == 0) return at::empty({0}, repeats.options());
  TORCH_CHECK(!at::lt(repeats, 0).any().item<bool>(), "repeats can not be negative");
  const T ends = at::cumsum(repeats, 0, at::kLong);
  const int64_t total = output_size.has_value() ? *output_size : ends[-1].item<int64_t>();
  // output position j belongs to the first i with ends[i] > j
  const T positions = at::arange(total, repeats.options().dtype(at::kLong));
  return at::searchsorted(ends, positions, /*out_int32=*/false, /*right=*/true).to(repeats.scalar_type());
}

at::Tensor& NF::conj_physical_out(const at::Tensor& self, at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "conj_physical: expected out of dtype ", self.scalar_type(),
              ", got ", out.scalar_type());
  at::native::resize_output(out, self.sizes());
  if (!self.is_complex()) return out.copy_(self);
  if (self.is_conj()) return out.copy_(self.conj());  // the conjugate of a lazy conjugate is its memory
  out.copy_(self);
  at::view_as_real(out).select(-1, 1).neg_();
  return out;
}

// In place: svd's out= path (and x.conj_physical_()) called ATen's composite, which reaches a DispatchStub npu has no
// kernel for (an INTERNAL ASSERT).
at::Tensor& NF::conj_physical_(at::Tensor& self) {
  if (!self.is_complex()) return self;
  if (self.is_conj()) return self.copy_(self.conj().clone());  // a lazy conjugate: its values, conjugated, in place
  at::view_as_real(self).select(-1, 1).neg_();
  return self;
}

// The gradient of x.unfold(dim, size, step): every window's values added back where they were read, as one
// index_add along dim (window w's element k sits at w * step + k).
at::Tensor NF::unfold_backward(const at::Tensor& grad_in, at::IntArrayRef input_sizes, int64_t dim, int64_t size,
                               int64_t step) {
  TORCH_CHECK(step > 0, "unfold_backward: step must be positive, got ", step);
  const int64_t d = at::maybe_wrap_dim(dim, static_cast<int64_t>(input_sizes.size()));
  TORCH_CHECK(grad_in.dim() == static_cast<int64_t>(input_sizes.size()) + 1,
              "unfold_backward: expected grad_in of ", input_sizes.size() + 1, " dims, got ", grad_in.sizes());
  at::Tensor grad = at::zeros(input_sizes, grad_in.options());
  if (grad_in.numel() == 0) return grad;
  if (input_sizes.empty()) return grad.add_(grad_in.sum());  // a 0-dim input unfolds into one window of itself
  const int64_t windows = grad_in.size(d);
  const auto opts = grad_in.options().dtype(at::kLong);
  const at::Tensor index = at::arange(windows, opts).mul_(step).unsqueeze(1).add(at::arange(size, opts).unsqueeze(0))
                               .reshape({-1});
  const at::Tensor src = grad_in.movedim(-1, d + 1).flatten(d, d + 1);
  return grad.index_add_(d, index, src);
}

// channel_shuffle with CPU's checks; the shuffle is a permuted copy (ATen's device-generic version views its input,
// which fails for a non-contiguous one).
at::Tensor NF::channel_shuffle(const at::Tensor& self, int64_t groups) {
  TORCH_CHECK(self.dim() > 2, "channel_shuffle expects input with > 2 dims, but got input with sizes ",
              self.sizes());
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive. Value of groups:", groups);
  const int64_t c = self.size(1);
  TORCH_CHECK(c % groups == 0, "Number of channels must be divisible by groups. Got ", c, " channels and ", groups,
              " groups.");
  int64_t spatial = 1;
  for (int64_t d = 2; d < self.dim(); ++d) spatial *= self.size(d);
  return self.reshape({self.size(0), groups, c / groups, spatial})
      .permute({0, 2, 1, 3})
      .reshape(self.sizes())
      .contiguous(self.suggest_memory_format());
}

// ---- dispatch stubs of libtorch's complex_out / polar_out / angle_out: the iterator's operands (out first) ----
namespace {

// out = real + i imag (complex_stub; the iterator has checked the dtypes and sized out to the broadcast shape)
void complex_npu(at::TensorIterator& iter) {
  const T parts = at::view_as_real(T(iter.tensor_base(0)));
  parts.select(-1, 0).copy_(T(iter.tensor_base(1)));
  parts.select(-1, 1).copy_(T(iter.tensor_base(2)));
}

// out = abs (cos angle + i sin angle) (polar_stub)
void polar_npu(at::TensorIterator& iter) {
  const T parts = at::view_as_real(T(iter.tensor_base(0))), abs(iter.tensor_base(1)), angle(iter.tensor_base(2));
  parts.select(-1, 0).copy_(abs.mul(at::cos(angle)));
  parts.select(-1, 1).copy_(abs.mul(at::sin(angle)));
}

// angle_stub: a real x gives 0 or pi (NaN stays NaN); a complex one atan2(imag, real) in the real part of a complex
// out (libtorch copies that real part to the float result).
void angle_npu(at::TensorIteratorBase& iter) {
  const T out(iter.tensor_base(0)), x(iter.tensor_base(1));
  if (x.is_complex()) {
    const T parts = at::view_as_real(out);
    parts.select(-1, 0).copy_(at::atan2(at::imag(x), at::real(x)));
    parts.select(-1, 1).zero_();
    return;
  }
  const T pi = at::scalar_tensor(c10::pi<double>, out.options());
  out.copy_(at::where(at::isnan(x), x.to(out.scalar_type()), at::where(x.lt(0), pi, at::zeros_like(pi))));
}

}  // namespace
// hash_tensor (mode 0, xor_sum): each element's bit pattern as CPU takes it (integers and bool sign-extended to
// int64, floats widened to float64), xor-reduced over `dim` by halving the reduced extent: log2(n) bitwise_xor
// launches; the int64 result is viewed as uint64 (the same bits).
at::Tensor NF::hash_tensor(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode) {
  TORCH_CHECK(mode == 0, "Unknown hash_tensor mode: ", mode);
  const at::ScalarType st = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(!at::isComplexType(st), "\"xor_sum_npu\" not implemented for '", c10::toString(st), "'");
  TORCH_CHECK(self.numel() > 0 || !dim.empty(), "hash_tensor: Expected reduction dim to be specified for "
              "input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
  const int64_t nd = self.dim();
  std::vector<bool> reduced(static_cast<size_t>(std::max<int64_t>(nd, 1)), dim.empty());
  for (const int64_t d : dim) {
    const int64_t w = at::maybe_wrap_dim(d, nd);
    TORCH_CHECK(!reduced[w] || dim.empty(), "dim ", w, " appears multiple times in the list of dims");
    reduced[w] = true;
  }
  std::vector<int64_t> order, kept_sizes, out_sizes;
  int64_t n = 1;
  for (int64_t d = 0; d < nd; ++d) {
    if (reduced[d]) {
      TORCH_CHECK_INDEX(self.size(d) > 0, "hash_tensor: Expected reduction dim ", d, " to have non-zero size.");
      n *= self.size(d);
      if (keepdim) out_sizes.push_back(1);
    } else {
      order.push_back(d);
      kept_sizes.push_back(self.size(d));
      out_sizes.push_back(self.size(d));
    }
  }
  for (int64_t d = 0; d < nd; ++d) {
    if (reduced[d]) order.push_back(d);
  }
  const at::Tensor bits = at::isFloatingType(st) ? self.to(at::kDouble).view(at::kLong) : self.to(at::kLong);
  std::vector<int64_t> flat = kept_sizes;
  flat.push_back(n);
  at::Tensor x = (nd > 0 ? bits.permute(order) : bits).reshape(flat);
  while (n > 1) {
    const int64_t half = n / 2;
    at::Tensor head = at::bitwise_xor(x.narrow(-1, 0, half), x.narrow(-1, half, half));
    if (n % 2 != 0) head.narrow(-1, 0, 1).bitwise_xor_(x.narrow(-1, n - 1, 1));
    x = head;
    n = half;
  }
  // Nothing to xor (reduced extent 1): x is still the input's own memory, and the result must not alias it.
  if (x.is_alias_of(self)) x = x.clone(at::MemoryFormat::Contiguous);
  return x.reshape(out_sizes).view(at::kUInt64);
}

// Python's shift operators: CPU's __lshift__ / __rshift__ run the same stubs as bitwise_left/right_shift (a Scalar
// wrapped as a 0-dim tensor), so they are those ops.
at::Tensor NF::__lshift__(const at::Tensor& self, const at::Scalar& other) {
  return at::bitwise_left_shift(self, other);
}
at::Tensor NF::__lshift__(const at::Tensor& self, const at::Tensor& other) {
  return at::bitwise_left_shift(self, other);
}
at::Tensor& NF::__ilshift__(at::Tensor& self, const at::Scalar& other) { return self.bitwise_left_shift_(other); }
at::Tensor& NF::__ilshift__(at::Tensor& self, const at::Tensor& other) { return self.bitwise_left_shift_(other); }
at::Tensor NF::__rshift__(const at::Tensor& self, const at::Scalar& other) {
  return at::bitwise_right_shift(self, other);
}
at::Tensor NF::__rshift__(const at::Tensor& self, const at::Tensor& other) {
  return at::bitwise_right_shift(self, other);
}
at::Tensor& NF::__irshift__(at::Tensor& self, const at::Scalar& other) { return self.bitwise_right_shift_(other); }
at::Tensor& NF::__irshift__(at::Tensor& self, const at::Tensor& other) { return self.bitwise_right_shift_(other); }

// A Scalar first operand, as CPU: the Scalar wrapped as a 0-dim tensor (type promotion of a wrapped number).
at::Tensor NF::remainder(const at::Scalar& self, const at::Tensor& other) {
  return at::remainder(at::native::wrapped_scalar_tensor(self), other);
}

at::Tensor NF::bucketize(const at::Scalar& self, const at::Tensor& boundaries, bool out_int32, bool right) {
  return at::bucketize(at::scalar_tensor(self, boundaries.options().dtype(self.type())), boundaries, out_int32, right);
}

}  // namespace torch_npu_sim

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(complex_stub, &torch_npu_sim::complex_npu)
REGISTER_PRIVATEUSE1_DISPATCH(polar_stub, &torch_npu_sim::polar_npu)
REGISTER_PRIVATEUSE1_DISPATCH(angle_stub, &torch_npu_sim::angle_npu)
}  // namespace at::native
