// Registration of the order statistics along a dim: median / nanmedian (whole tensor and along a dim) by a
// selection per line (kernels/src/sort.cpp; ties resolve to the lowest index among equal values, as CPU's do),
// and mode, whose kernel (kernels/src/mode.cpp) reproduces CPU's sort-and-scan.
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/accumulate.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/full.h>
#include <torch/library.h>

#include <limits>

#include "aten/index_util.h"
#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "npu_kernels/index.h"
#include "npu_kernels/mode.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using T = at::Tensor;

// Values and indices (keepdim; indices only `with_indices`) of the median of every line of `self` along `dim`
// (see npu_kernels::median_lines).
std::tuple<T, T> median_along(const T& self, int64_t dim, bool ignore_nan, bool with_indices = true) {
  c10::DeviceGuard guard(self.device());
  const char* op = ignore_nan ? "nanmedian" : "median";
  // (bool has no median on CPU or CUDA either)
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex() && self.scalar_type() != at::kBool, "\"", op,
                              "_npu\" not implemented for '", self.scalar_type(), "'");
  std::vector<int64_t> sizes = self.sizes().vec();
  sizes[dim] = 1;
  T values = at::empty(sizes, self.options());
  T indices = with_indices ? at::empty(sizes, self.options().dtype(at::kLong)) : T();
  if (values.numel() > 0) {
    npu_kernels::TensorDesc idesc = tensor_desc(with_indices ? indices : values, op);
    if (!with_indices) idesc.data = nullptr;  // the value alone
    NPU_CHECK(npu_kernels::median_lines(stream_of(self), tensor_desc(self, op), static_cast<int>(dim),
                                        tensor_desc(values, op), idesc, ignore_nan, op));
  }
  return {values, indices};
}

std::tuple<T&, T&> median_dim_out(const T& self, int64_t dim, bool keepdim, T& values, T& indices, bool ignore_nan) {
  const char* op = ignore_nan ? "nanmedian()" : "median()";
  TORCH_CHECK(is_npu(self), op, ": expected an npu tensor, got one on ", self.device());
  dim = c10::maybe_wrap_dim(dim, self.dim());
  at::native::zero_numel_check_dims(self, dim, op);
  index_util::check_selection_out(op, self, values, indices);
  const T line = self.dim() == 0 ? self.reshape({1}) : self;
  auto [v, i] = median_along(line, self.dim() == 0 ? 0 : dim, ignore_nan);
  index_util::write_selection(v, i, self, dim, keepdim, values, indices);
  return {values, indices};
}

T median_all(const T& self, bool ignore_nan) {
  const char* op = ignore_nan ? "nanmedian()" : "median()";
  TORCH_CHECK(is_npu(self), op, ": expected an npu tensor, got one on ", self.device());
  if (self.numel() == 0) {  // CPU's: a float NaN converted to the dtype (integers get what the conversion gives)
    return at::full({}, std::numeric_limits<float>::quiet_NaN(), self.options().dtype(at::kFloat)).to(self.scalar_type());
  }
  return std::get<0>(median_along(self.reshape({-1}), 0, ignore_nan, /*with_indices=*/false)).reshape({});
}

}  // namespace

std::tuple<T, T> NF::mode(const T& self, int64_t dim, bool keepdim) {
  TORCH_CHECK(is_npu(self), "mode(): expected an npu tensor, got one on ", self.device());
  c10::DeviceGuard guard(self.device());
  dim = c10::maybe_wrap_dim(dim, self.dim());
  at::native::zero_numel_check_dims(self, dim, "mode()");
  const at::ScalarType st = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(!at::isComplexType(st), "\"mode_npu\" not implemented for '", c10::toString(st), "'");
  npu_kernels::ModeArgs a;
  a.dtype = kernel_dtype(st, "mode");
  if (self.dim() > 0) {
    a.outer = c10::multiply_integers(self.sizes().slice(0, dim));
    a.size = self.size(dim);
    a.inner = c10::multiply_integers(self.sizes().slice(dim + 1));
  } else {
    a.size = 1;
  }
  std::vector<int64_t> sizes = self.sizes().vec();
  if (self.dim() > 0) {
    if (keepdim) sizes[dim] = 1;
    else sizes.erase(sizes.begin() + dim);
  }
  T values = at::empty(sizes, self.options()), indices = at::empty(sizes, self.options().dtype(at::kLong));
  if (values.numel() == 0) return {values, indices};
  const T x = self.contiguous();
  NPU_CHECK(npu_kernels::mode(stream_of(self), a, x.const_data_ptr(), values.data_ptr(), indices.data_ptr<int64_t>()));
  return {values, indices};
}

// mode.values is CompositeExplicitAutograd in ATen, but its kernel refuses devices other than CPU / CUDA / XPU.
std::tuple<T&, T&> NF::mode_out(const T& self, int64_t dim, bool keepdim, T& values, T& indices) {
  TORCH_CHECK(values.scalar_type() == self.scalar_type(), "expected scalar type '", self.scalar_type(), "' but got '",
              values.scalar_type(), "' for values output");
  TORCH_CHECK(indices.scalar_type() == at::kLong, "expected scalar type 'Long' but got '", indices.scalar_type(),
              "' for indices output");
  auto [v, i] = NF::mode(self, dim, keepdim);
  at::native::resize_output(values, v.sizes());
  at::native::resize_output(indices, i.sizes());
  values.copy_(v);
  indices.copy_(i);
  return {values, indices};
}

T NF::median(const T& self) { return median_all(self, false); }

T NF::nanmedian(const T& self) { return median_all(self, true); }

::std::tuple<at::Tensor&, at::Tensor&> NF::median_out(const T& self, int64_t dim, bool keepdim, T& values, T& indices) {
  return median_dim_out(self, dim, keepdim, values, indices, false);
}

::std::tuple<at::Tensor&, at::Tensor&> NF::nanmedian_out(const T& self, int64_t dim, bool keepdim, T& values,
                                                         T& indices) {
  return median_dim_out(self, dim, keepdim, values, indices, true);
}

}  // namespace torch_npu_sim
