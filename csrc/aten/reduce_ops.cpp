// Registration of the reductions for npu: ATen's structured meta functions (or ReduceOpsUtils helpers
// where an op has none) compute output shapes, dtypes and checks; the adapter turns (input, dim mask,
// outputs) into the engine's ReduceDesc and enqueues npu_kernels::reduce / scan. No math here.
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/all_meta.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/amax_meta.h>
#include <ATen/ops/real.h>
#include <ATen/ops/amin_meta.h>
#include <ATen/ops/aminmax_meta.h>
#include <ATen/ops/any_meta.h>
#include <ATen/ops/argmax_meta.h>
#include <ATen/ops/argmin_meta.h>
#include <ATen/ops/cumprod_meta.h>
#include <ATen/ops/cumsum_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/view_as_complex.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/where.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/linalg_vector_norm_meta.h>
#include <ATen/ops/norm_meta.h>
#include <ATen/ops/max_meta.h>
#include <ATen/ops/mean_meta.h>
#include <ATen/ops/min_meta.h>
#include <ATen/ops/prod_meta.h>
#include <ATen/ops/sum_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <tuple>
#include <type_traits>
#include <vector>

#include "aten/npu_tensor.h"
#include "aten/reduce_adapter.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "fallback/dtype_fallback.h"
#include "npu_kernels/reduce.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
using namespace at::meta;
using IA = at::IntArrayRef;
using OIA = at::OptionalIntArrayRef;
using OptS = std::optional<at::ScalarType>;
using OptI = std::optional<int64_t>;
using OptSc = std::optional<c10::Scalar>;

using npu_kernels::ReduceOp;

void run_reduce(ReduceOp op, const at::Tensor& self_in, const at::native::DimMask& mask,
                std::initializer_list<at::Tensor> outs_in, bool keepdim, const npu_kernels::ReduceParams& prm,
                std::optional<at::ScalarType> compute_dtype) {
  const char* name = npu_kernels::reduce_op_name(op);
  std::vector<at::Tensor> outs(outs_in);
  TORCH_CHECK(is_npu(self_in), name, ": expected the input on npu, got ", self_in.device());
  if (at::isComplexType(self_in.scalar_type()) && op != ReduceOp::kSum && op != ReduceOp::kMean &&
      op != ReduceOp::kProd && op != ReduceOp::kAll && op != ReduceOp::kAny && op != ReduceOp::kCountNonzero) {
    throw_no_kernel_for_dtype(c10::str(name, ": no npu kernel for complex inputs"));  // CPU's rules (and errors)
  }
  TORCH_CHECK(self_in.dim() <= npu_kernels::kMaxDims, name, ": more than ", npu_kernels::kMaxDims, " dims");
  c10::DeviceGuard guard(self_in.device());
  at::Tensor self = self_in;
  // A sum / mean into the input's accumulation type (int64 for integers and bool, float32 for float16 / bfloat16)
  // reads the input as it is; any other output dtype converts the input first.
  const at::ScalarType in_type = self_in.scalar_type();
  const bool widened = compute_dtype && (op == ReduceOp::kSum || op == ReduceOp::kMean) &&
                       ((*compute_dtype == at::kLong && (at::isIntegralType(in_type, /*includeBool=*/true))) ||
                        (*compute_dtype == at::kFloat && at::isReducedFloatingType(in_type)));
  if (compute_dtype && in_type != *compute_dtype && !widened) self = self.to(*compute_dtype);
  const int64_t ndim = self.dim();

  // outputs in keepdim shape
  std::vector<at::Tensor> views;
  std::vector<at::Tensor> temps;  // outputs of another dtype than the kernel writes
  for (size_t k = 0; k < outs.size(); ++k) {
    at::Tensor o = outs[k];
    if (!keepdim && ndim > 0) {
      for (int64_t d = 0; d < ndim; ++d) {
        if (mask[d]) o = o.unsqueeze(d);
      }
    }
    views.push_back(o);
  }
  if (self.numel() == 0 && outs[0].numel() == 0) return;

  npu_kernels::ReduceDesc d;
  d.in = self.const_data_ptr();
  d.dtype = kernel_dtype(self.scalar_type(), name);
  struct Kept {
    int64_t size, in_stride, out0, out1;
  };
  std::vector<Kept> kept;
  std::vector<std::pair<int64_t, int64_t>> red;  // size, stride
  for (int64_t i = 0; i < ndim; ++i) {
    const int64_t sz = self.size(i);
    if (mask[i]) {
      if (sz != 1) red.emplace_back(sz, self.stride(i));
    } else if (sz != 1) {
      kept.push_back({sz, self.stride(i), views[0].stride(i), views.size() > 1 ? views[1].stride(i) : 0});
    }
  }
  // index-producing reductions keep the logical order of the reduced dims (flat index); others put the
  // smallest stride innermost. Kept dims: smallest input stride innermost.
  const bool indexed = op == ReduceOp::kArgmax || op == ReduceOp::kArgmin || op == ReduceOp::kMaxIdx ||
                       op == ReduceOp::kMinIdx;
  if (!indexed) {
    std::stable_sort(red.begin(), red.end(), [](const auto& a, const auto& b) {
      return std::abs(a.second) > std::abs(b.second);
    });
  }
  std::stable_sort(kept.begin(), kept.end(),
                   [](const Kept& a, const Kept& b) { return std::abs(a.in_stride) > std::abs(b.in_stride); });
  d.n_outer = static_cast<int>(kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    d.outer_sizes[i] = kept[i].size;
    d.in_outer_strides[i] = kept[i].in_stride;
    d.out_strides[0][i] = kept[i].out0;
    d.out_strides[1][i] = kept[i].out1;
  }
  d.n_red = static_cast<int>(red.size());
  for (size_t i = 0; i < red.size(); ++i) {
    d.red_sizes[i] = red[i].first;
    d.red_strides[i] = red[i].second;
  }
  for (size_t k = 0; k < views.size(); ++k) {
    TORCH_CHECK(is_npu(views[k]), name, ": expected the output on npu, got ", views[k].device());
    d.out[k] = views[k].data_ptr();
  }
  d.out_dtype = views[0].scalar_type() == at::kByte ? npu_kernels::DType::kUInt8 : npu_kernels::DType::kBool;
  d.widened_out = widened && in_type != *compute_dtype;
  NPU_CHECK(npu_kernels::reduce(current_native_stream(self.device().index()), op, d, prm));
}

namespace {

using T = at::Tensor;
using at::native::DimMask;
using at::native::make_dim_mask;

DimMask mask_of(const T& self, at::OptionalIntArrayRef dim) { return make_dim_mask(dim, self.dim()); }
DimMask mask_one(const T& self, int64_t dim) {
  DimMask m;
  if (self.dim() > 0) m.set(at::maybe_wrap_dim(dim, self.dim()));
  return m;
}

// value-typed reductions: the kernel runs in the output's dtype
void value_reduce(ReduceOp op, const T& self, const DimMask& mask, const T& out, bool keepdim,
                  npu_kernels::ReduceParams prm = {}) {
  run_reduce(op, self, mask, {out}, keepdim, prm, out.scalar_type());
}

// ---- sum / mean / prod ----
T sum_dim(const T& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  auto m = meta_functional<at::meta::structured_sum_dim_IntList>(self, dim, keepdim, dtype);
  value_reduce(ReduceOp::kSum, self, mask_of(self, dim), m.outs[0], keepdim);
  return m.outs[0];
}
T& sum_dim_out(const T& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype, T& out) {
  auto m = meta_out<at::meta::structured_sum_dim_IntList>({out}, self, dim, keepdim, dtype);
  value_reduce(ReduceOp::kSum, self, mask_of(self, dim), out, keepdim);
  return out;
}
T mean_dim(const T& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  auto m = meta_functional<at::meta::structured_mean_dim>(self, dim, keepdim, dtype);
  value_reduce(ReduceOp::kMean, self, mask_of(self, dim), m.outs[0], keepdim);
  return m.outs[0];
}
T& mean_dim_out(const T& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype, T& out) {
  auto m = meta_out<at::meta::structured_mean_dim>({out}, self, dim, keepdim, dtype);
  value_reduce(ReduceOp::kMean, self, mask_of(self, dim), out, keepdim);
  return out;
}

// ---- max / min ----
T full_extreme(const T& self, bool is_max) {
  TORCH_CHECK(self.numel() > 0, is_max ? "max" : "min", "(): Expected reduction dim to be specified for input.numel() == 0. "
              "Specify the reduction dim with the 'dim' argument.");
  T out = at::empty({}, self.options());
  value_reduce(is_max ? ReduceOp::kMax : ReduceOp::kMin, self, make_dim_mask({}, self.dim()), out, false);
  return out;
}
T& full_extreme_out(const T& self, bool is_max, T& out) {
  // the value is cast into an out of any dtype it casts to (CPU's max_unary_out)
  TORCH_CHECK(c10::canCast(self.scalar_type(), out.scalar_type()), is_max ? "max" : "min", "(): result type ",
              self.scalar_type(), " can't be cast to the desired output type ", out.scalar_type());
  at::native::resize_output(out, {});
  T r = full_extreme(self, is_max);
  out.copy_(r);
  return out;
}
template <class Meta>
std::tuple<T, T> extreme_dim(const T& self, int64_t dim, bool keepdim, bool is_max) {
  auto m = meta_functional<Meta, 2>(self, dim, keepdim);
  if (m.outs[0].numel() > 0) {
    run_reduce(is_max ? ReduceOp::kMaxIdx : ReduceOp::kMinIdx, self, mask_one(self, dim), {m.outs[0], m.outs[1]},
               keepdim, {}, std::nullopt);
  }
  return {m.outs[0], m.outs[1]};
}
template <class Meta>
std::tuple<T&, T&> extreme_dim_out(const T& self, int64_t dim, bool keepdim, bool is_max, T& values, T& indices) {
  auto m = meta_out<Meta, 2>({values, indices}, self, dim, keepdim);
  if (values.numel() > 0) {
    run_reduce(is_max ? ReduceOp::kMaxIdx : ReduceOp::kMinIdx, self, mask_one(self, dim), {values, indices}, keepdim,
               {}, std::nullopt);
  }
  return {values, indices};
}

template <class Meta>
T ext_amax(const T& self, at::IntArrayRef dim, bool keepdim, ReduceOp op) {
  auto m = meta_functional<Meta>(self, dim, keepdim);
  value_reduce(op, self, mask_of(self, dim), m.outs[0], keepdim);
  return m.outs[0];
}
template <class Meta>
T& ext_amax_out(const T& self, at::IntArrayRef dim, bool keepdim, ReduceOp op, T& out) {
  auto m = meta_out<Meta>({out}, self, dim, keepdim);
  value_reduce(op, self, mask_of(self, dim), out, keepdim);
  return out;
}

DimMask arg_mask(const T& self, std::optional<int64_t> dim) {
  return dim ? mask_one(self, *dim) : make_dim_mask({}, self.dim());
}
template <class Meta>
T arg_ext(const T& self, std::optional<int64_t> dim, bool keepdim, ReduceOp op) {
  auto m = meta_functional<Meta>(self, dim, keepdim);
  run_reduce(op, self, arg_mask(self, dim), {m.outs[0]}, keepdim, {}, std::nullopt);
  return m.outs[0];
}
template <class Meta>
T& arg_ext_out(const T& self, std::optional<int64_t> dim, bool keepdim, ReduceOp op, T& out) {
  auto m = meta_out<Meta>({out}, self, dim, keepdim);
  run_reduce(op, self, arg_mask(self, dim), {out}, keepdim, {}, std::nullopt);
  return out;
}

// ---- var / std (no structured meta: ReduceOpsUtils computes the shape) ----
void check_var_dtype(const T& self, const char* name) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()), name,
              " only support floating point and complex dtypes");
}
void var_into(const T& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction, bool keepdim,
              const T& out, const T& mean_out, bool is_std);
// Complex: var(z) = var(re) + var(im) (CPU's and CUDA's definition), the two parts as a trailing dim of the real
// view, reduced by the real kernel; the mean is complex.
void complex_var_into(const T& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction,
                      bool keepdim, const T& out, const T& mean_out, bool is_std) {
  if (self.dim() == 0) {  // one element: reduce a 1-element dim instead (an empty dim list means all dims)
    return complex_var_into(self.reshape({1}), at::IntArrayRef{0}, correction, false, out, mean_out, is_std);
  }
  const T parts = at::view_as_real(self.resolve_conj());
  std::vector<int64_t> dims;
  if (dim && !dim->empty()) {
    for (int64_t d : *dim) dims.push_back(at::maybe_wrap_dim(d, self.dim()));
  } else {
    for (int64_t d = 0; d < self.dim(); ++d) dims.push_back(d);
  }
  const auto shape = at::native::shape_from_dim_mask(parts, make_dim_mask(dims, parts.dim()), keepdim);
  T var = at::empty(shape, parts.options());
  T mean = mean_out.defined() ? at::empty(shape, parts.options()) : T();
  var_into(parts, dims, correction, keepdim, var, mean, false);
  T total = var.sum(-1);
  if (is_std) total.sqrt_();
  const_cast<T&>(out).copy_(total);
  if (mean_out.defined()) const_cast<T&>(mean_out).copy_(at::view_as_complex(mean));
}
void var_into(const T& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction, bool keepdim,
              const T& out, const T& mean_out, bool is_std) {
  if (self.is_complex()) return complex_var_into(self, dim, correction, keepdim, out, mean_out, is_std);
  npu_kernels::ReduceParams prm;
  prm.correction = correction ? correction->toDouble() : 1.0;
  const DimMask mask = mask_of(self, dim);
  if (mean_out.defined()) {
    run_reduce(is_std ? ReduceOp::kStd : ReduceOp::kVar, self, mask, {out, mean_out}, keepdim, prm, out.scalar_type());
  } else {
    run_reduce(is_std ? ReduceOp::kStd : ReduceOp::kVar, self, mask, {out}, keepdim, prm, out.scalar_type());
  }
}
T var_like(const T& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction, bool keepdim,
           bool is_std) {
  check_var_dtype(self, is_std ? "std" : "var");
  const auto shape = at::native::shape_from_dim_mask(self, mask_of(self, dim), keepdim);
  T out = at::empty(shape, self.options().dtype(c10::toRealValueType(self.scalar_type())));
  var_into(self, dim, correction, keepdim, out, T(), is_std);
  return out;
}
T& var_like_out(const T& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction, bool keepdim,
                bool is_std, T& out) {
  check_var_dtype(self, is_std ? "std" : "var");
  const at::ScalarType real = c10::toRealValueType(self.scalar_type());
  // a complex input may also write a complex out of its own dtype (CPU's rule): the real result, imaginary 0
  const bool complex_out = self.is_complex() && out.scalar_type() == self.scalar_type();
  // any floating out: a real input computes in its dtype, as CPU does (its reduction's dtype); a complex one's real
  // result is cast into it
  TORCH_CHECK(complex_out || at::isFloatingType(out.scalar_type()), is_std ? "std" : "var", ": result type ", real,
              " can't be cast to the desired output type ", out.scalar_type());
  at::native::resize_output(out, at::native::shape_from_dim_mask(self, mask_of(self, dim), keepdim));
  if (complex_out) {
    const T result = at::empty(out.sizes(), out.options().dtype(real));
    var_into(self, dim, correction, keepdim, result, T(), is_std);
    return out.copy_(result);
  }
  var_into(self, dim, correction, keepdim, out, T(), is_std);
  return out;
}
std::tuple<T, T> var_mean_like(const T& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction,
                               bool keepdim, bool is_std) {
  check_var_dtype(self, is_std ? "std_mean" : "var_mean");
  const auto shape = at::native::shape_from_dim_mask(self, mask_of(self, dim), keepdim);
  T out = at::empty(shape, self.options().dtype(c10::toRealValueType(self.scalar_type())));
  T mean = at::empty(shape, self.options());
  var_into(self, dim, correction, keepdim, out, mean, is_std);
  return {out, mean};
}

// ---- all / any ----
template <class Meta, class... Args>
T logic(ReduceOp op, const T& self, const DimMask& mask, bool keepdim, const Args&... args) {
  auto m = meta_functional<Meta>(self, args...);
  run_reduce(op, self, mask, {m.outs[0]}, keepdim, {}, std::nullopt);
  return m.outs[0];
}
template <class Meta, class... Args>
T& logic_out(ReduceOp op, const T& self, const DimMask& mask, bool keepdim, T& out, const Args&... args) {
  auto m = meta_out<Meta>({out}, self, args...);
  run_reduce(op, self, mask, {out}, keepdim, {}, std::nullopt);
  return out;
}

// ---- norms ----
T& vector_norm_into(const T& self, const c10::Scalar& ord, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, T& out) {
  npu_kernels::ReduceParams prm;
  prm.p = ord.toDouble();
  // the kernel runs in the output dtype (self converted first, as CPU does with `dtype`); a complex input's
  // norm is its moduli's (converting it to the real output would drop the imaginary parts)
  const T values = self.is_complex() ? at::abs(self) : self;
  value_reduce(ReduceOp::kNorm, values, mask_of(self, dim), out, keepdim, prm);
  return out;
}

// ---- scans ----
void scan_into(npu_kernels::ScanOp op, const T& self, int64_t dim, const T& out) {
  if (out.numel() == 0) return;
  c10::DeviceGuard guard(self.device());
  T in = self.scalar_type() == out.scalar_type() ? self : self.to(out.scalar_type());
  const int64_t nd = in.dim();
  npu_kernels::ScanDesc d;
  d.in = in.const_data_ptr();
  d.out = out.data_ptr();
  const char* name = op == npu_kernels::ScanOp::kLogcumsumexp ? "logcumsumexp" : "cumsum/cumprod";
  if (op == npu_kernels::ScanOp::kLogcumsumexp && !at::isFloatingType(out.scalar_type()) &&
      !at::isComplexType(out.scalar_type())) {
    throw_no_kernel_for_dtype(c10::str(name, ": no npu kernel for dtype ", out.scalar_type()));
  }
  TORCH_CHECK(out.scalar_type() != at::kBool, name, ": dtype ", out.scalar_type(), " is not supported on npu");
  d.dtype = kernel_dtype(out.scalar_type(), name);
  if (nd == 0) {
    d.outer = d.n = d.inner = 1;
  } else {
    dim = at::maybe_wrap_dim(dim, nd);
    // (outer, n, inner) over contiguous copies (src / dst below)
    d.n = in.size(dim);
    d.outer = 1;
    for (int64_t i = 0; i < dim; ++i) d.outer *= in.size(i);
    d.inner = 1;
    for (int64_t i = dim + 1; i < nd; ++i) d.inner *= in.size(i);
  }
  T src = in.contiguous();
  d.in = src.const_data_ptr();
  d.in_strides[0] = d.n * d.inner;
  d.in_strides[1] = d.inner;
  d.in_strides[2] = 1;
  std::copy(d.in_strides, d.in_strides + 3, d.out_strides);
  into_contiguous(out, [&](const T& dst) {
    d.out = dst.data_ptr();
    NPU_CHECK(npu_kernels::scan(current_native_stream(self.device().index()), op, d));
  });
}
// _cummax_helper / _cummin_helper: values and indices are allocated (self's sizes) by ATen's cummax.
void extreme_scan(npu_kernels::ScanOp op, const T& self, T& values, T& indices, int64_t dim) {
  const char* name = op == npu_kernels::ScanOp::kCummax ? "cummax" : "cummin";
  TORCH_CHECK(is_npu(self), name, ": expected an npu tensor, got one on ", self.device());
  TORCH_CHECK(indices.scalar_type() == at::kLong, name, ": expected indices of dtype Long, got ", indices.scalar_type());
  TORCH_CHECK(values.scalar_type() == self.scalar_type(), name, ": expected values of dtype ", self.scalar_type(),
              ", got ", values.scalar_type());
  if (self.numel() == 0) return;
  c10::DeviceGuard guard(self.device());
  npu_kernels::ScanDesc d;
  d.dtype = kernel_dtype(self.scalar_type(), name);
  const int64_t nd = self.dim();
  if (nd > 0) {
    dim = at::maybe_wrap_dim(dim, nd);
    d.n = self.size(dim);
    for (int64_t i = 0; i < dim; ++i) d.outer *= self.size(i);
    for (int64_t i = dim + 1; i < nd; ++i) d.inner *= self.size(i);
  }
  const T src = self.contiguous();
  T v = values.is_contiguous() ? values : at::empty(self.sizes(), values.options());
  T ix = indices.is_contiguous() ? indices : at::empty(self.sizes(), indices.options());
  d.in = src.const_data_ptr();
  d.out = v.data_ptr();
  d.indices = ix.data_ptr<int64_t>();
  d.in_strides[0] = d.out_strides[0] = d.n * d.inner;
  d.in_strides[1] = d.out_strides[1] = d.inner;
  d.in_strides[2] = d.out_strides[2] = 1;
  const npu_sim::Status status = npu_kernels::scan(current_native_stream(self.device().index()), op, d);
  if (status == npu_sim::Status::kInvalidValue) {
    throw_no_kernel_for_dtype(c10::str(name, ": no npu kernel for dtype ", self.scalar_type()));
  }
  NPU_CHECK(status);
  if (!v.is_same(values)) values.copy_(v);
  if (!ix.is_same(indices)) indices.copy_(ix);
}

template <class Meta>
T scan_fn(npu_kernels::ScanOp op, const T& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  auto m = meta_functional<Meta>(self, dim, dtype);
  scan_into(op, self, dim, m.outs[0]);
  return m.outs[0];
}
template <class Meta>
T& scan_out(npu_kernels::ScanOp op, const T& self, int64_t dim, std::optional<at::ScalarType> dtype, T& out) {
  auto m = meta_out<Meta>({out}, self, dim, dtype);
  scan_into(op, self, dim, out);
  return out;
}

}  // namespace

// _logcumsumexp (torch.logcumsumexp's kernel: the composite has wrapped dim and handled 0-dim inputs); integer
// inputs run CPU's kernel (or_cpu), which refuses them.
T NF::_logcumsumexp(const T& self, int64_t dim) {
  T out = at::empty_like(self, at::MemoryFormat::Contiguous);
  return NF::_logcumsumexp_out(self, dim, out);
}

T& NF::_logcumsumexp_out(const T& self, int64_t dim, T& out) {
  TORCH_CHECK(is_npu(self), "logcumsumexp: expected an npu tensor, got one on ", self.device());
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "logcumsumexp: expected out of dtype ", self.scalar_type(),
              ", got ", out.scalar_type());
  dim = c10::maybe_wrap_dim(dim, self.dim());  // CPU's IndexError for a dim out of range (0-dim: -1 or 0)
  at::native::resize_output(out, self.sizes());
  scan_into(npu_kernels::ScanOp::kLogcumsumexp, self, dim, out);
  return out;
}

// Complex inputs (no kernel) go to the CPU fallback: these ops are or_cpu in ops.yaml.
T NF::sum(const T& s, OIA d, bool k, OptS t) { return sum_dim(s, d, k, t); }

T& NF::sum_out(const T& s, OIA d, bool k, OptS t, T& o) { return sum_dim_out(s, d, k, t, o); }

T NF::mean(const T& s, OIA d, bool k, OptS t) { return mean_dim(s, d, k, t); }

T& NF::mean_out(const T& s, OIA d, bool k, OptS t, T& o) { return mean_dim_out(s, d, k, t, o); }

T NF::prod(const T& self, std::optional<at::ScalarType> dtype) {
  const auto out_type = at::native::get_dtype_from_self(self, dtype, true);
  T out = at::empty({}, self.options().dtype(out_type));
  value_reduce(ReduceOp::kProd, self, make_dim_mask({}, self.dim()), out, false);
  return out;
}

T& NF::prod_out(const T& self, std::optional<at::ScalarType> dtype, T& out) {
  const auto out_type = dtype ? *dtype : out.scalar_type();
  TORCH_CHECK(out.scalar_type() == out_type, "prod: expected out dtype ", out_type, ", got ", out.scalar_type());
  at::native::resize_output(out, {});
  value_reduce(ReduceOp::kProd, self, make_dim_mask({}, self.dim()), out, false);
  return out;
}

T NF::prod(const T& self, int64_t dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  auto m = meta_functional<at::meta::structured_prod_dim_int>(self, dim, keepdim, dtype);
  value_reduce(ReduceOp::kProd, self, mask_one(self, dim), m.outs[0], keepdim);
  return m.outs[0];
}

T& NF::prod_out(const T& self, int64_t dim, bool keepdim, std::optional<at::ScalarType> dtype, T& out) {
  auto m = meta_out<at::meta::structured_prod_dim_int>({out}, self, dim, keepdim, dtype);
  value_reduce(ReduceOp::kProd, self, mask_one(self, dim), out, keepdim);
  return out;
}

T NF::max(const T& s) { return full_extreme(s, true); }

T NF::min(const T& s) { return full_extreme(s, false); }

T& NF::max_out(const T& s, T& o) { return full_extreme_out(s, true, o); }

T& NF::min_out(const T& s, T& o) { return full_extreme_out(s, false, o); }

::std::tuple<at::Tensor, at::Tensor> NF::max(const T& s, int64_t d, bool k) {
  return extreme_dim<structured_max_dim>(s, d, k, true);
}

::std::tuple<at::Tensor, at::Tensor> NF::min(const T& s, int64_t d, bool k) {
  return extreme_dim<structured_min_dim>(s, d, k, false);
}

::std::tuple<at::Tensor&, at::Tensor&> NF::max_out(const T& s, int64_t d, bool k, T& v, T& i) {
  return extreme_dim_out<structured_max_dim>(s, d, k, true, v, i);
}

::std::tuple<at::Tensor&, at::Tensor&> NF::min_out(const T& s, int64_t d, bool k, T& v, T& i) {
  return extreme_dim_out<structured_min_dim>(s, d, k, false, v, i);
}

T NF::amax(const T& s, IA d, bool k) { return ext_amax<structured_amax>(s, d, k, ReduceOp::kMax); }

T NF::amin(const T& s, IA d, bool k) { return ext_amax<structured_amin>(s, d, k, ReduceOp::kMin); }

T& NF::amax_out(const T& s, IA d, bool k, T& o) { return ext_amax_out<structured_amax>(s, d, k, ReduceOp::kMax, o); }

T& NF::amin_out(const T& s, IA d, bool k, T& o) { return ext_amax_out<structured_amin>(s, d, k, ReduceOp::kMin, o); }

T NF::argmax(const T& s, OptI d, bool k) { return arg_ext<structured_argmax>(s, d, k, ReduceOp::kArgmax); }

T NF::argmin(const T& s, OptI d, bool k) { return arg_ext<structured_argmin>(s, d, k, ReduceOp::kArgmin); }

T& NF::argmax_out(const T& s, OptI d, bool k, T& o) {
  return arg_ext_out<structured_argmax>(s, d, k, ReduceOp::kArgmax, o);
}

T& NF::argmin_out(const T& s, OptI d, bool k, T& o) {
  return arg_ext_out<structured_argmin>(s, d, k, ReduceOp::kArgmin, o);
}

T NF::var(const T& s, OIA d, const OptSc& c, bool k) { return var_like(s, d, c, k, false); }

T NF::std(const T& s, OIA d, const OptSc& c, bool k) { return var_like(s, d, c, k, true); }

T& NF::var_out(const T& s, OIA d, const OptSc& c, bool k, T& o) { return var_like_out(s, d, c, k, false, o); }

T& NF::std_out(const T& s, OIA d, const OptSc& c, bool k, T& o) { return var_like_out(s, d, c, k, true, o); }

::std::tuple<at::Tensor, at::Tensor> NF::var_mean(const T& s, OIA d, const OptSc& c, bool k) {
  return var_mean_like(s, d, c, k, false);
}

::std::tuple<at::Tensor, at::Tensor> NF::std_mean(const T& s, OIA d, const OptSc& c, bool k) {
  return var_mean_like(s, d, c, k, true);
}

T NF::all(const T& s) { return logic<structured_all>(ReduceOp::kAll, s, make_dim_mask({}, s.dim()), false); }

T NF::any(const T& s) { return logic<structured_any>(ReduceOp::kAny, s, make_dim_mask({}, s.dim()), false); }

T& NF::all_out(const T& s, T& o) {
  return logic_out<structured_all>(ReduceOp::kAll, s, make_dim_mask({}, s.dim()), false, o);
}

T& NF::any_out(const T& s, T& o) {
  return logic_out<structured_any>(ReduceOp::kAny, s, make_dim_mask({}, s.dim()), false, o);
}

T NF::all(const T& s, int64_t d, bool k) {
  return logic<structured_all_dim>(ReduceOp::kAll, s, mask_one(s, d), k, d, k);
}

T NF::any(const T& s, int64_t d, bool k) {
  return logic<structured_any_dim>(ReduceOp::kAny, s, mask_one(s, d), k, d, k);
}

T& NF::all_out(const T& s, int64_t d, bool k, T& o) {
  return logic_out<structured_all_dim>(ReduceOp::kAll, s, mask_one(s, d), k, o, d, k);
}

T& NF::any_out(const T& s, int64_t d, bool k, T& o) {
  return logic_out<structured_any_dim>(ReduceOp::kAny, s, mask_one(s, d), k, o, d, k);
}

T NF::all(const T& s, OIA d, bool k) { return logic<structured_all_dims>(ReduceOp::kAll, s, mask_of(s, d), k, d, k); }

T NF::any(const T& s, OIA d, bool k) { return logic<structured_any_dims>(ReduceOp::kAny, s, mask_of(s, d), k, d, k); }

T& NF::all_out(const T& s, OIA d, bool k, T& o) {
  return logic_out<structured_all_dims>(ReduceOp::kAll, s, mask_of(s, d), k, o, d, k);
}

T& NF::any_out(const T& s, OIA d, bool k, T& o) {
  return logic_out<structured_any_dims>(ReduceOp::kAny, s, mask_of(s, d), k, o, d, k);
}

T NF::linalg_vector_norm(const T& self, const c10::Scalar& ord, at::OptionalIntArrayRef dim, bool keepdim,
                         std::optional<at::ScalarType> dtype) {
  auto m = meta_functional<at::meta::structured_linalg_vector_norm>(self, ord, dim, keepdim, dtype);
  vector_norm_into(self, ord, dim, keepdim, dtype, m.outs[0]);
  return m.outs[0];
}

T& NF::linalg_vector_norm_out(const T& self, const c10::Scalar& ord, at::OptionalIntArrayRef dim, bool keepdim,
                              std::optional<at::ScalarType> dtype, T& out) {
  auto m = meta_out<at::meta::structured_linalg_vector_norm>({out}, self, ord, dim, keepdim, dtype);
  return vector_norm_into(self, ord, dim, keepdim, dtype, out);
}

// The legacy aten::norm overloads (torch.nn.functional.pairwise_distance, torch.dist, the triplet losses): ATen's
// norm meta function (its dtype checks and output), then the vector norm's kernel; p = None is the 2-norm.
T& NF::norm_out(const T& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim, bool keepdim, T& out) {
  meta_out<at::meta::structured_norm_ScalarOpt_dim>({out}, self, at::OptionalScalarRef(p ? &*p : nullptr), dim,
                                                   keepdim);
  return vector_norm_into(self, p.value_or(2), dim, keepdim, std::nullopt, out);
}

T& NF::norm_out(const T& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim, bool keepdim,
                  at::ScalarType dtype, T& out) {
  meta_out<at::meta::structured_norm_ScalarOpt_dim_dtype>({out}, self, at::OptionalScalarRef(p ? &*p : nullptr),
                                                         dim, keepdim, dtype);
  return vector_norm_into(self, p.value_or(2), dim, keepdim, dtype, out);
}

T NF::norm(const T& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim, bool keepdim) {
  auto m = meta_functional<at::meta::structured_norm_ScalarOpt_dim>(self, at::OptionalScalarRef(p ? &*p : nullptr),
                                                                    dim, keepdim);
  vector_norm_into(self, p.value_or(2), dim, keepdim, std::nullopt, m.outs[0]);
  return m.outs[0];
}

T NF::norm(const T& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim, bool keepdim,
           at::ScalarType dtype) {
  auto m = meta_functional<at::meta::structured_norm_ScalarOpt_dim_dtype>(
      self, at::OptionalScalarRef(p ? &*p : nullptr), dim, keepdim, dtype);
  vector_norm_into(self, p.value_or(2), dim, keepdim, dtype, m.outs[0]);
  return m.outs[0];
}

T NF::logsumexp(const T& self, at::IntArrayRef dims, bool keepdim) {
  const auto type = at::isIntegralType(self.scalar_type(), true) ? at::typeMetaToScalarType(c10::get_default_dtype())
                                                                 : self.scalar_type();
  T out = at::empty({0}, self.options().dtype(type));
  return NF::logsumexp_out(self, dims, keepdim, out);
}

T NF::nansum(const T& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  T out = at::empty({0}, self.options().dtype(at::native::get_dtype_from_self(self, dtype, true)));
  return NF::nansum_out(self, dim, keepdim, dtype, out);
}

// ---- nansum / count_nonzero / aminmax ----
T& NF::nansum_out(const T& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype,
                  T& out) {
  if (at::isComplexType(self.scalar_type())) {
    // CUDA accepts complex (CPU does not): an element with a NaN part counts as zero (NanSumOps' _isnan), the rest
    // is a plain sum
    const T zeroed = at::where(at::isnan(self), at::zeros({}, self.options()), self);
    return at::sum_out(out, zeroed, dim, keepdim, dtype);
  }
  const auto type = at::native::get_dtype_from_result(out, dtype);
  TORCH_CHECK(out.scalar_type() == type, "nansum: expected out dtype ", type, ", got ", out.scalar_type());
  // an integer input has no NaN: a sum into any out (CPU); a floating input reduces in the out's dtype, which
  // must then be floating or complex (CPU has no integral nansum kernel either)
  if (at::isIntegralType(self.scalar_type(), /*includeBool=*/true)) return at::sum_out(out, self, dim, keepdim, dtype);
  TORCH_CHECK_NOT_IMPLEMENTED(!at::isIntegralType(type, /*includeBool=*/true), "\"nansum\" not implemented for '",
                              type, "'");
  at::native::resize_output(out, at::native::shape_from_dim_mask(self, mask_of(self, dim), keepdim));
  if (at::isComplexType(type)) return out.copy_(NF::nansum(self, dim, keepdim, std::nullopt));
  value_reduce(ReduceOp::kNansum, self, mask_of(self, dim), out, keepdim);
  return out;
}

T NF::count_nonzero(const T& self, at::IntArrayRef dims) {
  const auto mask = make_dim_mask(dims, self.dim());
  T out = at::empty(at::native::shape_from_dim_mask(self, mask, false), self.options().dtype(at::kLong));
  run_reduce(ReduceOp::kCountNonzero, self, mask, {out}, false, {}, std::nullopt);
  return out;
}

std::tuple<T, T> NF::aminmax(const T& self, std::optional<int64_t> dim, bool keepdim) {
  auto m = meta_functional<at::meta::structured_aminmax, 2>(self, dim, keepdim);
  const DimMask mask = dim ? mask_one(self, *dim) : make_dim_mask({}, self.dim());
  value_reduce(ReduceOp::kMin, self, mask, m.outs[0], keepdim);
  value_reduce(ReduceOp::kMax, self, mask, m.outs[1], keepdim);
  return {m.outs[0], m.outs[1]};
}

std::tuple<T&, T&> NF::aminmax_out(const T& self, std::optional<int64_t> dim, bool keepdim, T& mn, T& mx) {
  auto m = meta_out<at::meta::structured_aminmax, 2>({mn, mx}, self, dim, keepdim);
  const DimMask mask = dim ? mask_one(self, *dim) : make_dim_mask({}, self.dim());
  value_reduce(ReduceOp::kMin, self, mask, mn, keepdim);
  value_reduce(ReduceOp::kMax, self, mask, mx, keepdim);
  return {mn, mx};
}

// ---- logsumexp ----
T& NF::logsumexp_out(const T& self, at::IntArrayRef dims, bool keepdim, T& out) {
  TORCH_CHECK(at::isFloatingType(out.scalar_type()) || at::isComplexType(out.scalar_type()),
              "logsumexp(): Expected floating point type for result tensor, but got: ", out.scalar_type());
  const auto mask = make_dim_mask(dims, self.dim(), /*allow_empty_dims=*/true);
  at::native::resize_output(out, at::native::shape_from_dim_mask(self, mask, keepdim));
  if (out.is_complex() && !self.is_complex()) {  // the real result, computed in the out's real dtype and cast
    return out.copy_(NF::logsumexp(self.to(c10::toRealValueType(out.scalar_type())), dims, keepdim));
  }
  if (dims.empty() && self.dim() > 0) {  // empty dim list: identity, as on CPU
    out.copy_(self);
    return out;
  }
  if (self.is_complex()) {
    // CPU's complex form: shifted by the largest real part (an infinite shift counts as 0), over native ops
    if (self.numel() == 0) return at::sum_out(out, self.exp(), dims, keepdim).log_();
    T shift = at::amax(at::real(self), dims, /*keepdim=*/true);
    shift.masked_fill_(shift.abs().eq(INFINITY), 0);
    at::sum_out(out, self.sub(shift).exp_(), dims, keepdim);
    return out.log_().add_(keepdim ? shift : at::sum(shift, dims, false));  // (sum over size-1 dims: a squeeze)
  }
  value_reduce(ReduceOp::kLogsumexp, self, mask, out, keepdim);
  return out;
}

void NF::_cummax_helper(const T& self, T& values, T& indices, int64_t dim) {
  extreme_scan(npu_kernels::ScanOp::kCummax, self, values, indices, dim);
}

void NF::_cummin_helper(const T& self, T& values, T& indices, int64_t dim) {
  extreme_scan(npu_kernels::ScanOp::kCummin, self, values, indices, dim);
}

T NF::cumsum(const T& s, int64_t d, OptS t) {
  return scan_fn<structured_cumsum>(npu_kernels::ScanOp::kCumsum, s, d, t);
}

T& NF::cumsum_out(const T& s, int64_t d, OptS t, T& o) {
  return scan_out<structured_cumsum>(npu_kernels::ScanOp::kCumsum, s, d, t, o);
}

T NF::cumprod(const T& s, int64_t d, OptS t) {
  return scan_fn<structured_cumprod>(npu_kernels::ScanOp::kCumprod, s, d, t);
}

T& NF::cumprod_out(const T& s, int64_t d, OptS t, T& o) {
  return scan_out<structured_cumprod>(npu_kernels::ScanOp::kCumprod, s, d, t, o);
}

}  // namespace torch_npu_sim
