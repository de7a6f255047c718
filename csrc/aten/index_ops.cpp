// Indexing along one dim on npu: gather, scatter (src/value/reduce), scatter_add, scatter_reduce.two,
// index_select / index_add / index_reduce / index_fill / index_copy, take / put_ and
// embedding_dense_backward. Registration and argument plumbing only: shapes and checks come from ATen's
// structured meta functions, the device work from kernels/src/index.cpp.
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
using npu_kernels::IndexReduce;

// An int64 index on `device`; as on CUDA, the index of gather/scatter/index_select/index_add/... must be
// on the op's device already (only advanced indexing, x[idx], accepts CPU indices).
at::Tensor long_index(const at::Tensor& index, const at::Device& device, const char* op) {
  check_device_arg(op, "index", index, device);
  return index.to(at::kLong);
}

// A desc with `sizes` but `t`'s strides (t may be larger than sizes along some dims).
npu_kernels::TensorDesc resized(const at::Tensor& t, at::IntArrayRef sizes, const char* op) {
  auto d = tensor_desc(t, op);
  for (int i = 0; i < d.ndim; ++i) d.sizes[i] = sizes[i];
  return d;
}

IndexReduce reduce_of(c10::string_view reduce) {
  if (reduce == "sum" || reduce == "add") return IndexReduce::kAdd;
  if (reduce == "prod" || reduce == "multiply") return IndexReduce::kMul;
  if (reduce == "mean") return IndexReduce::kMean;
  if (reduce == "amax") return IndexReduce::kMax;
  if (reduce == "amin") return IndexReduce::kMin;
  TORCH_CHECK(false, "reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
}

// gather: out[p] = self[p with index[p] along dim]
void gather_kernel(const at::Tensor& out, const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  if (index.numel() == 0) return;
  c10::DeviceGuard guard(out.device());
  const auto s = as_1d(self), o = as_1d(out), ix = as_1d(long_index(index, out.device(), "gather"));
  npu_kernels::IndexAlongDim a;
  a.op = "gather";
  a.dim = static_cast<int>(dim);
  a.index = tensor_desc(ix, a.op);
  a.dst = tensor_desc(o, a.op);
  a.src = restrided(s, ix.sizes(), dim, a.op);
  a.dim_size = s.size(dim);
  a.dim_stride = s.stride(dim);
  NPU_CHECK(npu_kernels::index_along_dim(stream_of(out), a));
}

// scatter family: out (already holding self) gets src/value at index along dim.
void scatter_kernel(const at::Tensor& out, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                    const at::Tensor* src, const c10::Scalar* value, IndexReduce reduce, bool include_self,
                    const char* op) {
  check_device_arg(op, "index", index, out.device());
  if (src != nullptr) check_device_arg(op, "src", *src, out.device());
  c10::DeviceGuard guard(out.device());
  if (!out.is_same(self)) out.copy_(self);
  if (index.numel() == 0) return;
  const auto o = as_1d(out), ix = as_1d(long_index(index, out.device(), op));
  npu_kernels::IndexAlongDim a;
  a.op = op;
  a.dim = static_cast<int>(dim);
  a.scatter = true;
  a.reduce = reduce;
  a.include_self = include_self;
  a.index = tensor_desc(ix, op);
  a.dst = restrided(o, ix.sizes(), dim, op);
  a.dim_size = o.size(dim);
  a.dim_stride = o.stride(dim);
  at::Tensor src_conv;
  if (src != nullptr) {
    src_conv = as_1d(src->to(out.scalar_type()));
    a.src = resized(src_conv, ix.sizes(), op);
  } else {
    a.src_scalar = true;
    a.value = to_scalar_value(*value, out.scalar_type());
    a.src = a.index;
  }
  NPU_CHECK(npu_kernels::index_along_dim(stream_of(out), a));
}

// ---- gather ----------------------------------------------------------------------------------------

// ---- scatter ---------------------------------------------------------------------------------------

// The structured body of the scatter family: self's values, then src (or value) scattered along dim.
auto scatter_body(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor* src,
                  const at::Scalar* value, IndexReduce reduce, bool include_self, const char* op) {
  return [&self, dim, &index, src, value, reduce, include_self, op](auto& meta) {
    scatter_kernel(meta.maybe_get_output(0), self, at::maybe_wrap_dim(dim, self.dim()), index, src, value, reduce,
                   include_self, op);
  };
}

// ---- index_select / index_add ----------------------------------------------------------------------

void check_index_1d(const at::Tensor& index, const char* op) {
  TORCH_CHECK_INDEX(index.dim() <= 1, op, "(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt, op,
              "(): Expected dtype int32/int64 for index");
}

// The 1-D index seen with the iteration sizes: stride 0 everywhere except along dim.
npu_kernels::TensorDesc index_along(const at::Tensor& ix, at::IntArrayRef sizes, int64_t dim, const char* op) {
  auto d = tensor_desc(ix.dim() == 0 ? ix.view({1}) : ix, op);
  d.ndim = static_cast<int>(sizes.size());
  for (int i = 0; i < d.ndim; ++i) {
    d.sizes[i] = sizes[i];
    d.strides[i] = 0;
  }
  d.strides[dim] = ix.dim() == 0 ? 1 : ix.stride(0);
  return d;
}

void index_add_kernel(const at::Tensor& out, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                      const at::Tensor& source, const at::Scalar& alpha) {
  check_device_arg("index_add", "source", source, out.device());
  c10::DeviceGuard guard(out.device());
  if (!out.is_same(self)) out.copy_(self);
  if (index.numel() == 0) return;
  const auto ix = long_index(index, out.device(), "index_add");
  at::Tensor src = source.to(out.scalar_type());
  if (!(alpha.isIntegral(true) && alpha.toLong() == 1)) src = src.mul(alpha);
  const auto s1 = as_1d(src), o1 = as_1d(out);
  npu_kernels::IndexAlongDim a;
  a.op = "index_add";
  a.dim = static_cast<int>(dim);
  a.scatter = true;
  a.reduce = IndexReduce::kAdd;
  a.dst = restrided(o1, s1.sizes(), dim, a.op);
  a.src = tensor_desc(s1, a.op);
  a.index = index_along(ix, s1.sizes(), dim, a.op);
  a.dim_size = o1.size(dim);
  a.dim_stride = o1.stride(dim);
  NPU_CHECK(npu_kernels::index_along_dim(stream_of(out), a));
}

void index_reduce_kernel(const at::Tensor& out, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                         const at::Tensor& source, c10::string_view reduce, bool include_self) {
  check_device_arg("index_reduce", "source", source, out.device());
  c10::DeviceGuard guard(out.device());
  if (!out.is_same(self)) out.copy_(self);
  if (index.numel() == 0) return;
  const auto ix = long_index(index, out.device(), "index_reduce");
  const at::Tensor src = source.to(out.scalar_type());
  const auto s1 = as_1d(src), o1 = as_1d(out);
  npu_kernels::IndexAlongDim a;
  a.op = "index_reduce";
  a.dim = static_cast<int>(dim);
  a.scatter = true;
  a.reduce = reduce_of(reduce);
  a.include_self = include_self;
  a.dst = restrided(o1, s1.sizes(), dim, a.op);
  a.src = tensor_desc(s1, a.op);
  a.index = index_along(ix, s1.sizes(), dim, a.op);
  a.dim_size = o1.size(dim);
  a.dim_stride = o1.stride(dim);
  NPU_CHECK(npu_kernels::index_along_dim(stream_of(out), a));
}

// The structured body of index_reduce's three flavours.
auto index_reduce_body(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                       c10::string_view reduce, bool include_self) {
  return [&self, dim, &index, &source, reduce, include_self](auto& op) {
    index_reduce_kernel(op.maybe_get_output(0), self, at::maybe_wrap_dim(dim, self.dim()), index, source, reduce,
                        include_self);
  };
}

// index_fill_ / index_copy: scatter mode with the 1-D index broadcast over self's other dims.
void index_fill_copy(const at::Tensor& out, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                     const at::Tensor* source, const c10::Scalar* value, const char* op) {
  if (source != nullptr) check_device_arg(op, "source", *source, out.device());
  c10::DeviceGuard guard(out.device());
  if (!out.is_same(self)) out.copy_(self);
  if (index.numel() > 0 && out.dim() > 0 && out.size(dim) == 0) {
    // every index is out of range; ATen's kernel (CPU and CUDA) fails restriding self to index.numel()
    // elements along dim unless another dim is empty too
    int64_t others = 1;
    for (int64_t d = 0; d < out.dim(); ++d) others *= d == dim ? 1 : out.size(d);
    TORCH_CHECK(others == 0, op, ": index out of range for dimension ", dim, " of size 0");
  }
  if (index.numel() == 0 || out.numel() == 0) return;
  const auto ix = long_index(index, out.device(), op);
  const auto o1 = as_1d(out);
  std::vector<int64_t> sizes(o1.sizes().begin(), o1.sizes().end());
  sizes[dim] = ix.numel();
  npu_kernels::IndexAlongDim a;
  a.op = op;
  a.dim = static_cast<int>(dim);
  a.scatter = true;
  a.dst = restrided(o1, sizes, dim, op);
  a.index = index_along(ix, sizes, dim, op);
  a.dim_size = o1.size(dim);
  a.dim_stride = o1.stride(dim);
  at::Tensor src;
  if (source != nullptr) {
    src = as_1d(source->to(out.scalar_type()));
    a.src = tensor_desc(src, op);
  } else {
    a.wrap_negative = true;
    a.src_scalar = true;
    a.value = to_scalar_value(*value, out.scalar_type());
    a.src = a.index;
  }
  NPU_CHECK(npu_kernels::index_along_dim(stream_of(out), a));
}

// The structured body of index_copy's three flavours.
auto index_copy_body(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source) {
  return [&self, dim, &index, &source](auto& op) {
    index_fill_copy(op.maybe_get_output(0), self, at::maybe_wrap_dim(dim, self.dim()), index, &source, nullptr,
                    "index_copy_");
  };
}

// ---- embedding -------------------------------------------------------------------------------------

}  // namespace

at::Tensor NF::gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad) {
  return structured_functional<at::meta::structured_gather>(
      [&](auto& op) { gather_kernel(op.maybe_get_output(0), self, at::maybe_wrap_dim(dim, self.dim()), index); }, self,
      dim, index, sparse_grad);
}

at::Tensor& NF::gather_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad,
                           at::Tensor& out) {
  return structured_out<at::meta::structured_gather>(
      [&](auto& op) { gather_kernel(op.maybe_get_output(0), self, at::maybe_wrap_dim(dim, self.dim()), index); }, out,
      self, dim, index, sparse_grad);
}

at::Tensor NF::scatter(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  return structured_functional<at::meta::structured_scatter_src>(
      scatter_body(self, dim, index, &src, nullptr, IndexReduce::kAssign, true, "scatter"), self, dim, index, src);
}
at::Tensor& NF::scatter_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  return structured_inplace<at::meta::structured_scatter_src>(
      scatter_body(self, dim, index, &src, nullptr, IndexReduce::kAssign, true, "scatter"), self, dim, index, src);
}
at::Tensor& NF::scatter_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                            at::Tensor& out) {
  return structured_out<at::meta::structured_scatter_src>(
      scatter_body(self, dim, index, &src, nullptr, IndexReduce::kAssign, true, "scatter"), out, self, dim, index, src);
}

at::Tensor NF::scatter(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value) {
  return structured_functional<at::meta::structured_scatter_value>(
      scatter_body(self, dim, index, nullptr, &value, IndexReduce::kAssign, true, "scatter"), self, dim, index, value);
}
at::Tensor& NF::scatter_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value) {
  return structured_inplace<at::meta::structured_scatter_value>(
      scatter_body(self, dim, index, nullptr, &value, IndexReduce::kAssign, true, "scatter"), self, dim, index, value);
}
at::Tensor& NF::scatter_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value,
                            at::Tensor& out) {
  return structured_out<at::meta::structured_scatter_value>(
      scatter_body(self, dim, index, nullptr, &value, IndexReduce::kAssign, true, "scatter"), out, self, dim, index,
      value);
}

at::Tensor NF::scatter(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                       c10::string_view reduce) {
  return structured_functional<at::meta::structured_scatter_reduce>(
      scatter_body(self, dim, index, &src, nullptr, reduce_of(reduce), true, "scatter"), self, dim, index, src, reduce);
}
at::Tensor& NF::scatter_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                         c10::string_view reduce) {
  return structured_inplace<at::meta::structured_scatter_reduce>(
      scatter_body(self, dim, index, &src, nullptr, reduce_of(reduce), true, "scatter"), self, dim, index, src, reduce);
}
at::Tensor& NF::scatter_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                            c10::string_view reduce, at::Tensor& out) {
  return structured_out<at::meta::structured_scatter_reduce>(
      scatter_body(self, dim, index, &src, nullptr, reduce_of(reduce), true, "scatter"), out, self, dim, index, src,
      reduce);
}

at::Tensor NF::scatter(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value,
                       c10::string_view reduce) {
  return structured_functional<at::meta::structured_scatter_value_reduce>(
      scatter_body(self, dim, index, nullptr, &value, reduce_of(reduce), true, "scatter"), self, dim, index, value,
      reduce);
}
at::Tensor& NF::scatter_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value,
                         c10::string_view reduce) {
  return structured_inplace<at::meta::structured_scatter_value_reduce>(
      scatter_body(self, dim, index, nullptr, &value, reduce_of(reduce), true, "scatter"), self, dim, index, value,
      reduce);
}
at::Tensor& NF::scatter_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value,
                            c10::string_view reduce, at::Tensor& out) {
  return structured_out<at::meta::structured_scatter_value_reduce>(
      scatter_body(self, dim, index, nullptr, &value, reduce_of(reduce), true, "scatter"), out, self, dim, index, value,
      reduce);
}

at::Tensor NF::scatter_add(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  return structured_functional<at::meta::structured_scatter_add>(
      scatter_body(self, dim, index, &src, nullptr, IndexReduce::kAdd, true, "scatter_add"), self, dim, index, src);
}
at::Tensor& NF::scatter_add_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  return structured_inplace<at::meta::structured_scatter_add>(
      scatter_body(self, dim, index, &src, nullptr, IndexReduce::kAdd, true, "scatter_add"), self, dim, index, src);
}
at::Tensor& NF::scatter_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                                at::Tensor& out) {
  return structured_out<at::meta::structured_scatter_add>(
      scatter_body(self, dim, index, &src, nullptr, IndexReduce::kAdd, true, "scatter_add"), out, self, dim, index,
      src);
}

at::Tensor NF::scatter_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                              c10::string_view reduce, bool include_self) {
  return structured_functional<at::meta::structured_scatter_reduce_two>(
      scatter_body(self, dim, index, &src, nullptr, reduce_of(reduce), include_self, "scatter_reduce"), self, dim,
      index, src, reduce, include_self);
}
at::Tensor& NF::scatter_reduce_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                                c10::string_view reduce, bool include_self) {
  return structured_inplace<at::meta::structured_scatter_reduce_two>(
      scatter_body(self, dim, index, &src, nullptr, reduce_of(reduce), include_self, "scatter_reduce"), self, dim,
      index, src, reduce, include_self);
}
at::Tensor& NF::scatter_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                                   c10::string_view reduce, bool include_self, at::Tensor& out) {
  return structured_out<at::meta::structured_scatter_reduce_two>(
      scatter_body(self, dim, index, &src, nullptr, reduce_of(reduce), include_self, "scatter_reduce"), out, self, dim,
      index, src, reduce, include_self);
}

at::Tensor NF::index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  at::Tensor out = at::empty({0}, self.options());
  return NF::index_select_out(self, dim, index, out);
}

at::Tensor& NF::index_select_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, at::Tensor& out) {
  check_index_1d(index, "index_select");
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(self.dim() > 0 || index.numel() == 1, "index_select(): Index to scalar can have only 1 value, got ",
              index.numel(), " value(s)");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(),
              "index_select(): self and result must have the same scalar type");
  TORCH_CHECK(out.device() == self.device(), "index_select(): expected out on ", self.device());
  c10::DeviceGuard guard(self.device());
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  if (self.dim() > 0) sizes[dim] = index.numel();
  at::native::resize_output(out, sizes);
  if (out.numel() == 0) return out;
  const auto ix = long_index(index, self.device(), "index_select");
  const auto s = as_1d(self);
  into_contiguous(out, [&](const at::Tensor& o) {
    const auto o1 = as_1d(o);
    npu_kernels::IndexAlongDim a;
    a.op = "index_select";
    a.dim = static_cast<int>(dim);
    a.dst = tensor_desc(o1, a.op);
    a.src = restrided(s, o1.sizes(), dim, a.op);
    a.index = index_along(ix, o1.sizes(), dim, a.op);
    a.dim_size = s.size(dim);
    a.dim_stride = s.stride(dim);
    NPU_CHECK(npu_kernels::index_along_dim(stream_of(self), a));
  });
  return out;
}

at::Tensor NF::index_add(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                         const at::Scalar& alpha) {
  return structured_functional<at::meta::structured_index_add>(
      [&](auto& op) {
        index_add_kernel(op.maybe_get_output(0), self, at::maybe_wrap_dim(dim, self.dim()), index, source, alpha);
      },
      self, dim, index, source, alpha);
}

at::Tensor& NF::index_add_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                           const at::Scalar& alpha) {
  return structured_inplace<at::meta::structured_index_add>(
      [&](auto& op) {
        index_add_kernel(op.maybe_get_output(0), self, at::maybe_wrap_dim(dim, self.dim()), index, source, alpha);
      },
      self, dim, index, source, alpha);
}

at::Tensor& NF::index_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                              const at::Scalar& alpha, at::Tensor& out) {
  return structured_out<at::meta::structured_index_add>(
      [&](auto& op) {
        index_add_kernel(op.maybe_get_output(0), self, at::maybe_wrap_dim(dim, self.dim()), index, source, alpha);
      },
      out, self, dim, index, source, alpha);
}

at::Tensor NF::embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices, int64_t num_weights,
                                        int64_t padding_idx, bool scale_grad_by_freq) {
  c10::DeviceGuard guard(grad_output.device());
  const int64_t nw = num_weights;
  const int64_t dim = grad_output.size(-1);
  at::Tensor idx = indices.to(grad_output.device(), at::kLong).reshape({-1}).contiguous();
  at::Tensor grad = grad_output.reshape({-1, dim});
  at::Tensor gw = at::zeros({nw, dim}, grad_output.options());
  if (idx.numel() > 0 && dim > 0) {
    NPU_CHECK(npu_kernels::embedding_backward(stream_of(grad), tensor_desc(gw, "embedding_dense_backward"),
                                              tensor_desc(grad, "embedding_dense_backward"), idx.data_ptr<int64_t>(),
                                              idx.numel(), padding_idx));
  }
  if (scale_grad_by_freq) {
    // counts per row (an index_add of ones), then grad_weight /= count where count > 0
    at::Tensor counts = at::zeros({nw}, grad_output.options());
    counts.index_add_(0, idx, at::ones_like(idx, grad_output.options()));
    gw = gw.div(counts.clamp_min(1).unsqueeze(1));
  }
  return gw;
}

at::Tensor& NF::index_fill_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value) {
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong, "index_fill_(): Expected a long tensor for index, but got ",
                    index.scalar_type());
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_fill_(): Index is supposed to be a vector");
  TORCH_CHECK(!value.isComplex() || self.is_complex(),
              "index_fill_(): Converting complex Scalar to non-complex type is not supported");  // (as CPU and CUDA)
  dim = at::maybe_wrap_dim(dim, self.dim());
  index_fill_copy(self, self, dim, index, nullptr, &value, "index_fill_");
  return self;
}

at::Tensor& NF::index_fill_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  return NF::index_fill_(self, dim, index, value.item());
}

at::Tensor NF::index_copy(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source) {
  return structured_functional<at::meta::structured_index_copy>(index_copy_body(self, dim, index, source), self, dim,
                                                                index, source);
}

at::Tensor& NF::index_copy_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source) {
  return structured_inplace<at::meta::structured_index_copy>(index_copy_body(self, dim, index, source), self, dim,
                                                             index, source);
}

at::Tensor& NF::index_copy_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                               at::Tensor& out) {
  return structured_out<at::meta::structured_index_copy>(index_copy_body(self, dim, index, source), out, self, dim,
                                                         index, source);
}

// take / put_: the flattened tensor indexed along its only dim (negative indices count from the end).
at::Tensor NF::take(const at::Tensor& self, const at::Tensor& index) {
  TORCH_CHECK(index.scalar_type() == at::kLong, "take(): Expected a long tensor for index, but got ",
              index.scalar_type());
  c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty(index.sizes(), self.options());
  if (out.numel() == 0) return out;
  TORCH_CHECK_INDEX(self.numel() > 0, "take(): tried to take from an empty tensor");
  const at::Tensor flat = self.reshape({-1});
  const at::Tensor ix = long_index(index, self.device(), "take").reshape({-1});
  npu_kernels::IndexAlongDim a;
  a.op = "take";
  a.wrap_negative = true;
  a.dst = tensor_desc(out.view({-1}), a.op);
  a.src = restrided(flat, {ix.numel()}, 0, a.op);
  a.index = tensor_desc(ix, a.op);
  a.dim_size = flat.numel();
  a.dim_stride = flat.stride(0);
  NPU_CHECK(npu_kernels::index_along_dim(stream_of(self), a));
  return out;
}

at::Tensor& NF::put_(at::Tensor& self, const at::Tensor& index, const at::Tensor& source, bool accumulate) {
  TORCH_CHECK(index.scalar_type() == at::kLong, "put_(): Expected a long tensor for index, but got ",
              index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "put_(): self and source expected to have the same dtype");
  TORCH_CHECK(index.numel() == source.numel(), "put_(): Expected source and index to have the same number of elements");
  c10::DeviceGuard guard(self.device());
  if (index.numel() == 0) return self;
  TORCH_CHECK_INDEX(self.numel() > 0, "put_(): Tried to put elements into an empty tensor");
  at::Tensor target = self.is_contiguous() ? self : self.contiguous();
  const at::Tensor flat = target.view({-1});
  check_device_arg("put_", "source", source, self.device());
  const at::Tensor ix = long_index(index, self.device(), "put_").reshape({-1});
  const at::Tensor src = source.reshape({-1});
  npu_kernels::IndexAlongDim a;
  a.op = "put_";
  a.scatter = true;
  a.wrap_negative = true;
  a.reduce = accumulate ? IndexReduce::kAdd : IndexReduce::kAssign;
  a.dst = restrided(flat, {ix.numel()}, 0, a.op);
  a.src = tensor_desc(src, a.op);
  a.index = tensor_desc(ix, a.op);
  a.dim_size = flat.numel();
  a.dim_stride = 1;
  NPU_CHECK(npu_kernels::index_along_dim(stream_of(self), a));
  if (!target.is_same(self)) self.copy_(target);
  return self;
}

at::Tensor NF::index_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                            c10::string_view reduce, bool include_self) {
  return structured_functional<at::meta::structured_index_reduce>(
      index_reduce_body(self, dim, index, source, reduce, include_self), self, dim, index, source, reduce,
      include_self);
}

at::Tensor& NF::index_reduce_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                              c10::string_view reduce, bool include_self) {
  return structured_inplace<at::meta::structured_index_reduce>(
      index_reduce_body(self, dim, index, source, reduce, include_self), self, dim, index, source, reduce,
      include_self);
}

at::Tensor& NF::index_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                                 c10::string_view reduce, bool include_self, at::Tensor& out) {
  return structured_out<at::meta::structured_index_reduce>(
      index_reduce_body(self, dim, index, source, reduce, include_self), out, self, dim, index, source, reduce,
      include_self);
}

}  // namespace torch_npu_sim
