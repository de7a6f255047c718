// Ordering ops on npu: sort / topk / kthvalue, _unique2, bincount, searchsorted / bucketize. Registration
// and argument plumbing only; the device work is kernels/src/sort.cpp.
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/IndexingUtils.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/ReductionType.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/gather_meta.h>
#include <ATen/ops/index_add_meta.h>
#include <ATen/ops/index_copy_meta.h>
#include <ATen/ops/index_reduce_meta.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/nonzero_native.h>
#include <ATen/ops/scatter_add_meta.h>
#include <ATen/ops/scatter_meta.h>
#include <ATen/ops/scatter_reduce_meta.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cstring>

#include "aten/npu_tensor.h"
#include "aten/structured.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/index.h"
#include "aten/index_util.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using namespace index_util;

// ---- sort / topk -----------------------------------------------------------------------------------

void sort_into(const at::Tensor& self, int64_t dim, bool descending, const at::Tensor& values,
               const at::Tensor& indices, int64_t k, const char* op) {
  // complex numbers have no order: CPU's and CUDA's refusal, in their words (the kernel would fail at the sync)
  TORCH_CHECK(!self.is_complex(), std::strcmp(op, "sort") == 0 ? "Sort" : op, " does not support complex dtypes on npu");
  TORCH_CHECK(self.scalar_type() != at::kBool || std::strcmp(op, "topk") != 0,
              "topk does not support bool dtypes on npu");  // (CPU's and CUDA's refusal; sort takes bool)
  c10::DeviceGuard guard(self.device());
  if (self.numel() == 0) return;
  const auto s = as_1d(self);
  NPU_CHECK(npu_kernels::sort_lines(stream_of(self), tensor_desc(s, op), static_cast<int>(dim), descending,
                                    tensor_desc(as_1d(values), op), tensor_desc(as_1d(indices), op), k, op));
}

// ---- unique / bincount / searchsorted ------------------------------------------------------------

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> NF::_unique2(const at::Tensor& self, bool /*sorted*/,
                                                            bool return_inverse, bool return_counts) {
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "\"unique\" not implemented for '", self.scalar_type(), "'");
  c10::DeviceGuard guard(self.device());
  const int64_t n = self.numel();
  // at most n distinct values, and at most 2 (bool) or 2^bits of a 1- or 2-byte dtype: a uint8 input of 2^31
  // elements needs 256 counts, not 16 GiB of them
  const int64_t bits = 8 * static_cast<int64_t>(self.element_size());
  const int64_t most = self.scalar_type() == at::kBool ? std::min<int64_t>(n, 2)
                       : bits <= 16                     ? std::min<int64_t>(n, int64_t{1} << bits)
                                                        : n;
  at::Tensor values = at::empty({most}, self.options());
  at::Tensor inverse = at::empty(return_inverse ? self.sizes() : at::IntArrayRef{0}, self.options().dtype(at::kLong));
  at::Tensor counts = at::empty({return_counts ? most : 0}, self.options().dtype(at::kLong));
  if (n == 0) return {values, inverse, counts};
  at::Tensor num = at::empty({}, self.options().dtype(at::kLong));
  NPU_CHECK(npu_kernels::unique_sorted(stream_of(self), tensor_desc(self, "unique"), values.data_ptr(),
                                       return_inverse ? inverse.data_ptr<int64_t>() : nullptr,
                                       return_counts ? counts.data_ptr<int64_t>() : nullptr, num.data_ptr<int64_t>()));
  const int64_t k = num.item<int64_t>();  // the result's size depends on the data: a sync, as on CUDA
  values = values.narrow(0, 0, k).clone();
  if (return_counts) counts = counts.narrow(0, 0, k).clone();
  return {values, inverse, counts};
}

// The legacy torch._unique (index_fill's backward calls it): _unique2 without the counts.
std::tuple<at::Tensor, at::Tensor> NF::_unique(const at::Tensor& self, bool sorted, bool return_inverse) {
  auto [values, inverse, counts] = NF::_unique2(self, sorted, return_inverse, false);
  return {values, inverse};
}

at::Tensor NF::bincount(const at::Tensor& self, const std::optional<at::Tensor>& weights_opt, int64_t minlength) {
  TORCH_CHECK(self.dim() == 1 && !at::isFloatingType(self.scalar_type()) && self.scalar_type() != at::kBool,
              "bincount only supports 1-d non-negative integral inputs.");
  TORCH_CHECK(minlength >= 0, "minlength should be >= 0");
  // an empty input counts nothing: zeros(minlength) of int64 before the weights are looked at (CPU and CUDA)
  if (self.numel() == 0) return at::zeros({minlength}, self.options().dtype(at::kLong));
  const at::Tensor weights = weights_opt.has_value() ? *weights_opt : at::Tensor();
  TORCH_CHECK(!weights.defined() || (weights.dim() == 1 && weights.size(0) == self.size(0)),
              "weights should be 1-d and have the same length as input");
  c10::DeviceGuard guard(self.device());
  int64_t nbins = minlength;
  if (self.numel() > 0) {
    at::Tensor mx = at::empty({}, self.options().dtype(at::kLong));
    NPU_CHECK(npu_kernels::bincount_max(stream_of(self), tensor_desc(self, "bincount"), mx.data_ptr<int64_t>()));
    nbins = std::max(nbins, mx.item<int64_t>() + 1);
  }
  const at::ScalarType out_type = !weights.defined() ? at::kLong
                                  : weights.scalar_type() == at::kFloat ? at::kFloat
                                                                        : at::kDouble;
  at::Tensor out = at::zeros({nbins}, self.options().dtype(out_type));
  if (self.numel() == 0) return out;
  npu_kernels::TensorDesc wd;  // ndim 0: no weights
  at::Tensor w;
  if (weights.defined()) {
    // complex weights count by their real part, in double (CPU converts the weights so, with the cast's warning)
    w = weights.is_complex() ? weights.to(self.device(), out_type) : weights.to(self.device());
    wd = tensor_desc(w, "bincount");
  }
  NPU_CHECK(npu_kernels::bincount(stream_of(self), tensor_desc(self, "bincount"), wd, tensor_desc(out, "bincount")));
  return out;
}

at::Tensor NF::searchsorted(const at::Tensor& sorted_sequence, const at::Tensor& self, bool out_int32, bool right,
                            std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter) {
  at::Tensor out = at::empty({0}, self.options().dtype(out_int32 ? at::kInt : at::kLong));
  return NF::searchsorted_out(sorted_sequence, self, out_int32, right, side, sorter, out);
}

at::Tensor NF::bucketize(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right) {
  at::Tensor out = at::empty({0}, self.options().dtype(out_int32 ? at::kInt : at::kLong));
  return NF::bucketize_out(self, boundaries, out_int32, right, out);
}

// bucketize is searchsorted with the arguments swapped (1-D boundaries).
at::Tensor& NF::bucketize_out(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right,
                              at::Tensor& out) {
  TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(), ")");
  return NF::searchsorted_out(boundaries, self, out_int32, right, std::nullopt, std::nullopt, out);
}

at::Tensor& NF::searchsorted_out(const at::Tensor& sorted_sequence, const at::Tensor& self, bool out_int32, bool right,
                                 std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter,
                                 at::Tensor& out) {
  TORCH_CHECK(!side.has_value() || *side == "left" || *side == "right",
              "torch.searchsorted(): side can only be 'left' or 'right' but got ", *side);
  TORCH_CHECK(!(side.has_value() && *side == "left" && right),
              "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True");
  const bool use_right = right || (side.has_value() && *side == "right");
  TORCH_CHECK(sorted_sequence.dim() >= 1, "torch.searchsorted(): boundaries tensor should have positive dimension");
  TORCH_CHECK(sorted_sequence.dim() == 1 || (sorted_sequence.dim() == self.dim() &&
                                             sorted_sequence.sizes().slice(0, self.dim() - 1) ==
                                                 self.sizes().slice(0, self.dim() - 1)),
              "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
              "tensor and input value tensor must match");
  c10::DeviceGuard guard(self.device());
  at::Tensor bd = sorted_sequence.to(self.device());
  if (sorter.has_value() && sorter->defined()) bd = bd.gather(-1, sorter->to(self.device(), at::kLong));
  const at::ScalarType common = at::result_type(bd, self);
  bd = bd.to(common).contiguous();
  const at::Tensor v = self.to(common).contiguous();
  at::native::resize_output(out, self.sizes());
  TORCH_CHECK(out.scalar_type() == (out_int32 ? at::kInt : at::kLong), "torch.searchsorted(): output tensor's dtype is wrong");
  if (self.numel() == 0) return out;
  into_contiguous(out, [&](const at::Tensor& o) {
    NPU_CHECK(npu_kernels::searchsorted(stream_of(self), tensor_desc(bd, "searchsorted"), tensor_desc(v, "searchsorted"),
                                        tensor_desc(o, "searchsorted"), use_right));
  });
  return out;
}

at::Tensor NF::searchsorted(const at::Tensor& sorted_sequence, const at::Scalar& self, bool out_int32, bool right,
                            std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter) {
  const at::Tensor value = at::scalar_tensor(self, sorted_sequence.options());
  return NF::searchsorted(sorted_sequence, value, out_int32, right, side, sorter);
}

std::tuple<at::Tensor, at::Tensor> NF::sort(const at::Tensor& self, std::optional<bool> stable, int64_t dim,
                                            bool descending) {
  at::Tensor values = at::empty(self.sizes(), self.options());
  at::Tensor indices = at::empty(self.sizes(), self.options().dtype(at::kLong));
  NF::sort_out(self, stable, dim, descending, values, indices);
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> NF::sort_out(const at::Tensor& self, std::optional<bool> /*stable*/, int64_t dim,
                                                  bool descending, at::Tensor& values, at::Tensor& indices) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  check_selection_out("sort()", self, values, indices);
  at::native::resize_output(values, self.sizes());
  at::native::resize_output(indices, self.sizes());
  at::Tensor v = values.is_contiguous() ? values : at::empty(self.sizes(), values.options());
  at::Tensor i = indices.is_contiguous() ? indices : at::empty(self.sizes(), indices.options());
  sort_into(self, dim, descending, v, i, self.dim() == 0 ? 1 : self.size(dim), "sort");
  if (!v.is_same(values)) values.copy_(v);
  if (!i.is_same(indices)) indices.copy_(i);
  return {values, indices};
}

std::tuple<at::Tensor, at::Tensor> NF::topk(const at::Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  at::Tensor values = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  NF::topk_out(self, k, dim, largest, sorted, values, indices);
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> NF::topk_out(const at::Tensor& self, int64_t k, int64_t dim, bool largest,
                                                  bool /*sorted*/, at::Tensor& values, at::Tensor& indices) {
  dim = at::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  const int64_t len = self.dim() == 0 ? 1 : self.size(dim);
  TORCH_CHECK(k >= 0 && k <= len, "selected index k out of range");
  check_selection_out("topk()", self, values, indices);
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  if (!sizes.empty()) sizes[dim] = k;
  at::native::resize_output(values, sizes);
  at::native::resize_output(indices, sizes);
  at::Tensor v = values.is_contiguous() ? values : at::empty(sizes, values.options());
  at::Tensor i = indices.is_contiguous() ? indices : at::empty(sizes, indices.options());
  sort_into(self, dim, largest, v, i, k, "topk");
  if (!v.is_same(values)) values.copy_(v);
  if (!i.is_same(indices)) indices.copy_(i);
  return {values, indices};
}

// kthvalue: the k-th smallest of each line (ties in position order, as the stable sort would give), by selection.
std::tuple<at::Tensor&, at::Tensor&> NF::kthvalue_out(const at::Tensor& self, int64_t k, int64_t dim, bool keepdim,
                                                      at::Tensor& values, at::Tensor& indices) {
  dim = at::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  const int64_t len = self.dim() == 0 ? 1 : self.size(dim);
  at::native::zero_numel_check_dims(self, dim, "kthvalue()");  // IndexError on an empty line, as CPU and CUDA
  TORCH_CHECK(k >= 1 && k <= len, "kthvalue(): selected number k out of range for dimension ", dim);
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex() && self.scalar_type() != at::kBool,
                              "\"kthvalue_npu\" not implemented for '", self.scalar_type(), "'");  // (as CPU, CUDA)
  check_selection_out("kthvalue()", self, values, indices);
  c10::DeviceGuard guard(self.device());
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  if (!sizes.empty()) sizes[dim] = 1;
  at::Tensor v = at::empty(sizes, self.options());
  at::Tensor i = at::empty(sizes, self.options().dtype(at::kLong));
  NPU_CHECK(npu_kernels::kth_lines(stream_of(self), tensor_desc(as_1d(self), "kthvalue"), static_cast<int>(dim),
                                   tensor_desc(as_1d(v), "kthvalue"), tensor_desc(as_1d(i), "kthvalue"), k, "kthvalue"));
  write_selection(v, i, self, dim, keepdim, values, indices);
  return {values, indices};
}

}  // namespace torch_npu_sim
