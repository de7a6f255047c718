// Indexing ops for npu: index_select, index_add, gather, scatter (src/value/reduce), scatter_add,
// scatter_reduce.two, advanced indexing (index.Tensor, _index_put_impl_), masked_fill_, masked_select,
// nonzero, sort/topk and embedding_dense_backward. Registration and argument plumbing only: shapes and
// checks come from ATen's structured meta functions and index helpers, the device work from
// kernels/src/index.cpp and shape.cpp.
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

namespace torch_npu_sim {
namespace {

using npu_kernels::IndexReduce;

npu_sim::Stream stream_of(const at::Tensor& t) { return current_native_stream(t.device().index()); }

// 0-dim tensors take part as 1-element 1-D tensors.
at::Tensor as_1d(const at::Tensor& t) { return t.dim() == 0 ? t.view({1}) : t; }

// An int64 index on `device`; as on CUDA, the index of gather/scatter/index_select/index_add/... must be
// on the op's device already (only advanced indexing, x[idx], accepts CPU indices).
at::Tensor long_index(const at::Tensor& index, const at::Device& device, const char* op) {
  check_device_arg(op, "index", index, device);
  return index.to(at::kLong);
}

// `t`'s desc with the iteration sizes `sizes` and stride 0 along `dim` (the indexed operand).
npu_kernels::TensorDesc restrided(const at::Tensor& t, at::IntArrayRef sizes, int64_t dim, const char* op) {
  auto d = tensor_desc(t, op);
  for (int i = 0; i < d.ndim; ++i) d.sizes[i] = sizes[i];
  d.strides[dim] = 0;
  return d;
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
    a.value = to_scalar_value(*value);
    a.src = a.index;
  }
  NPU_CHECK(npu_kernels::index_along_dim(stream_of(out), a));
}

// ---- gather ----------------------------------------------------------------------------------------

at::Tensor gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad) {
  return structured_functional<at::meta::structured_gather>(
      [&](auto& op) { gather_kernel(op.maybe_get_output(0), self, at::maybe_wrap_dim(dim, self.dim()), index); },
      self, dim, index, sparse_grad);
}
at::Tensor& gather_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad,
                       at::Tensor& out) {
  return structured_out<at::meta::structured_gather>(
      [&](auto& op) { gather_kernel(op.maybe_get_output(0), self, at::maybe_wrap_dim(dim, self.dim()), index); }, out,
      self, dim, index, sparse_grad);
}

// ---- scatter ---------------------------------------------------------------------------------------

#define NPU_SCATTER_FLAVOURS(NAME, META, KERNEL_ARGS, PARAMS, ARGS)                                        \
  at::Tensor NAME(const at::Tensor& self, int64_t dim, const at::Tensor& index PARAMS) {                   \
    return structured_functional<META>(                                                                    \
        [&](auto& op) {                                                                                    \
          const int64_t d = at::maybe_wrap_dim(dim, self.dim());                                           \
          scatter_kernel(op.maybe_get_output(0), self, d, index, KERNEL_ARGS);                             \
        },                                                                                                 \
        self, dim, index ARGS);                                                                            \
  }                                                                                                        \
  at::Tensor& NAME##_(at::Tensor& self, int64_t dim, const at::Tensor& index PARAMS) {                     \
    return structured_inplace<META>(                                                                       \
        [&](auto& op) {                                                                                    \
          const int64_t d = at::maybe_wrap_dim(dim, self.dim());                                           \
          scatter_kernel(op.maybe_get_output(0), self, d, index, KERNEL_ARGS);                             \
        },                                                                                                 \
        self, dim, index ARGS);                                                                            \
  }                                                                                                        \
  at::Tensor& NAME##_out(const at::Tensor& self, int64_t dim, const at::Tensor& index PARAMS, at::Tensor& out) { \
    return structured_out<META>(                                                                           \
        [&](auto& op) {                                                                                    \
          const int64_t d = at::maybe_wrap_dim(dim, self.dim());                                           \
          scatter_kernel(op.maybe_get_output(0), self, d, index, KERNEL_ARGS);                             \
        },                                                                                                 \
        out, self, dim, index ARGS);                                                                       \
  }

#define COMMA ,
NPU_SCATTER_FLAVOURS(scatter_src, at::meta::structured_scatter_src,
                     &src COMMA nullptr COMMA IndexReduce::kAssign COMMA true COMMA "scatter",
                     COMMA const at::Tensor& src, COMMA src)
NPU_SCATTER_FLAVOURS(scatter_value, at::meta::structured_scatter_value,
                     nullptr COMMA &value COMMA IndexReduce::kAssign COMMA true COMMA "scatter",
                     COMMA const at::Scalar& value, COMMA value)
NPU_SCATTER_FLAVOURS(scatter_reduce_src, at::meta::structured_scatter_reduce,
                     &src COMMA nullptr COMMA reduce_of(reduce) COMMA true COMMA "scatter",
                     COMMA const at::Tensor& src COMMA c10::string_view reduce, COMMA src COMMA reduce)
NPU_SCATTER_FLAVOURS(scatter_reduce_value, at::meta::structured_scatter_value_reduce,
                     nullptr COMMA &value COMMA reduce_of(reduce) COMMA true COMMA "scatter",
                     COMMA const at::Scalar& value COMMA c10::string_view reduce, COMMA value COMMA reduce)
NPU_SCATTER_FLAVOURS(scatter_add, at::meta::structured_scatter_add,
                     &src COMMA nullptr COMMA IndexReduce::kAdd COMMA true COMMA "scatter_add",
                     COMMA const at::Tensor& src, COMMA src)
NPU_SCATTER_FLAVOURS(scatter_reduce_two, at::meta::structured_scatter_reduce_two,
                     &src COMMA nullptr COMMA reduce_of(reduce) COMMA include_self COMMA "scatter_reduce",
                     COMMA const at::Tensor& src COMMA c10::string_view reduce COMMA bool include_self,
                     COMMA src COMMA reduce COMMA include_self)
#undef COMMA

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

at::Tensor& index_select_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, at::Tensor& out) {
  check_index_1d(index, "index_select");
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(self.dim() > 0 || index.numel() == 1, "index_select(): Index to scalar can have only 1 value, got ",
              index.numel(), " value(s)");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "index_select(): self and result must have the same scalar type");
  TORCH_CHECK(out.device() == self.device(), "index_select(): expected out on ", self.device());
  c10::DeviceGuard guard(self.device());
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  if (self.dim() > 0) sizes[dim] = index.numel();
  at::native::resize_output(out, sizes);
  if (out.numel() == 0) return out;
  const auto ix = long_index(index, self.device(), "index_select");
  const auto s = as_1d(self);
  at::Tensor o = out.is_contiguous() ? out : at::empty(sizes, out.options());
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
  if (!o.is_same(out)) out.copy_(o);
  return out;
}

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  at::Tensor out = at::empty({0}, self.options());
  return index_select_out(self, dim, index, out);
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

#define NPU_INDEX_REDUCE_KERNEL                                                                                 \
  [&](auto& op) {                                                                                               \
    index_reduce_kernel(op.maybe_get_output(0), self, at::maybe_wrap_dim(dim, self.dim()), index, source, reduce, \
                        include_self);                                                                          \
  }
at::Tensor index_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                        c10::string_view reduce, bool include_self) {
  return structured_functional<at::meta::structured_index_reduce>(NPU_INDEX_REDUCE_KERNEL, self, dim, index, source,
                                                                  reduce, include_self);
}
at::Tensor& index_reduce_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                          c10::string_view reduce, bool include_self) {
  return structured_inplace<at::meta::structured_index_reduce>(NPU_INDEX_REDUCE_KERNEL, self, dim, index, source,
                                                                reduce, include_self);
}
at::Tensor& index_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                             c10::string_view reduce, bool include_self, at::Tensor& out) {
  return structured_out<at::meta::structured_index_reduce>(NPU_INDEX_REDUCE_KERNEL, out, self, dim, index, source,
                                                           reduce, include_self);
}
#undef NPU_INDEX_REDUCE_KERNEL

at::Tensor index_add(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                     const at::Scalar& alpha) {
  return structured_functional<at::meta::structured_index_add>(
      [&](auto& op) {
        index_add_kernel(op.maybe_get_output(0), self, at::maybe_wrap_dim(dim, self.dim()), index, source, alpha);
      },
      self, dim, index, source, alpha);
}
at::Tensor& index_add_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                       const at::Scalar& alpha) {
  return structured_inplace<at::meta::structured_index_add>(
      [&](auto& op) {
        index_add_kernel(op.maybe_get_output(0), self, at::maybe_wrap_dim(dim, self.dim()), index, source, alpha);
      },
      self, dim, index, source, alpha);
}
at::Tensor& index_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                          const at::Scalar& alpha, at::Tensor& out) {
  return structured_out<at::meta::structured_index_add>(
      [&](auto& op) {
        index_add_kernel(op.maybe_get_output(0), self, at::maybe_wrap_dim(dim, self.dim()), index, source, alpha);
      },
      out, self, dim, index, source, alpha);
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
    a.value = to_scalar_value(*value);
    a.src = a.index;
  }
  NPU_CHECK(npu_kernels::index_along_dim(stream_of(out), a));
}

at::Tensor& index_fill_scalar(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value) {
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong, "index_fill_(): Expected a long tensor for index, but got ",
                    index.scalar_type());
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_fill_(): Index is supposed to be a vector");
  dim = at::maybe_wrap_dim(dim, self.dim());
  index_fill_copy(self, self, dim, index, nullptr, &value, "index_fill_");
  return self;
}
at::Tensor& index_fill_tensor(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  return index_fill_scalar(self, dim, index, value.item());
}

#define NPU_INDEX_COPY_KERNEL                                                                            \
  [&](auto& op) {                                                                                        \
    index_fill_copy(op.maybe_get_output(0), self, at::maybe_wrap_dim(dim, self.dim()), index, &source, nullptr, \
                    "index_copy_");                                                                      \
  }
at::Tensor index_copy(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source) {
  return structured_functional<at::meta::structured_index_copy>(NPU_INDEX_COPY_KERNEL, self, dim, index, source);
}
at::Tensor& index_copy_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source) {
  return structured_inplace<at::meta::structured_index_copy>(NPU_INDEX_COPY_KERNEL, self, dim, index, source);
}
at::Tensor& index_copy_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                           at::Tensor& out) {
  return structured_out<at::meta::structured_index_copy>(NPU_INDEX_COPY_KERNEL, out, self, dim, index, source);
}
#undef NPU_INDEX_COPY_KERNEL

// take / put_: the flattened tensor indexed along its only dim (negative indices count from the end).
at::Tensor take(const at::Tensor& self, const at::Tensor& index) {
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

at::Tensor& put_(at::Tensor& self, const at::Tensor& index, const at::Tensor& source, bool accumulate) {
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

// ---- advanced indexing -----------------------------------------------------------------------------

// What CPU/CUDA's AdvancedIndex holds: the restrided self and the broadcast int64 indices, all with the
// result shape; built with ATen's own expandTensors / expand_outplace / transposeToFront.
struct IndexPlan {
  at::Tensor self;  // possibly permuted view of the input
  std::vector<at::Tensor> indices;  // defined ones, broadcast to each other, int64 on self's device
  std::vector<int64_t> result_sizes;
  int64_t before = 0, after = 0;
  std::vector<int64_t> indexed_sizes, indexed_strides;
};

IndexPlan plan_index(const at::Tensor& self_in, const c10::List<std::optional<at::Tensor>>& orig, const char* op) {
  // Reached with a CPU self only when an index is on npu: CUDA refuses that too.
  TORCH_CHECK_INDEX(is_npu(self_in), "indices should be either on cpu or on the same device as the indexed tensor (",
                    self_in.device(), ")");
  TORCH_CHECK_INDEX(static_cast<int64_t>(orig.size()) <= self_in.dim(), "too many indices for tensor of dimension ",
                    self_in.dim(), " (got ", orig.size(), ")");
  at::native::checkIndexTensorTypes(orig, /*allow_int=*/true);
  // CPU indices are accepted (as CUDA does): masks are expanded where they are, then moved.
  std::vector<at::Tensor> indices = at::native::expandTensors(self_in, orig);
  for (auto& t : indices) {
    if (t.defined()) t = t.to(self_in.device(), at::kLong);
  }
  std::vector<at::Tensor> defined;
  for (auto& t : indices) {
    if (t.defined()) defined.push_back(t);
  }
  try {
    defined = at::expand_outplace(defined);
  } catch (std::exception&) {
    TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together");
  }
  size_t k = 0;
  for (auto& t : indices) {
    if (t.defined()) t = defined[k++];
  }
  while (static_cast<int64_t>(indices.size()) < self_in.dim()) indices.emplace_back();
  IndexPlan p;
  p.self = self_in;
  if (!at::native::hasContiguousSubspace(indices)) std::tie(p.self, indices) = at::native::transposeToFront(p.self, indices);
  at::IntArrayRef rep;
  for (int64_t d = 0; d < p.self.dim(); ++d) {
    if (!indices[d].defined()) {
      (p.indices.empty() ? p.before : p.after)++;
    } else {
      p.indices.push_back(indices[d]);
      p.indexed_sizes.push_back(p.self.size(d));
      p.indexed_strides.push_back(p.self.stride(d));
      rep = indices[d].sizes();
      TORCH_CHECK_INDEX(p.self.size(d) != 0 || indices[d].numel() == 0, op,
                        "(): index is out of bounds for dimension with size 0");
    }
  }
  TORCH_CHECK(static_cast<int>(p.indices.size()) <= npu_kernels::kMaxIndices, op, ": at most ",
              npu_kernels::kMaxIndices, " index tensors are supported on npu");
  for (int64_t d = 0; d < p.before; ++d) p.result_sizes.push_back(p.self.size(d));
  for (auto s : rep) p.result_sizes.push_back(s);
  for (int64_t d = p.self.dim() - p.after; d < p.self.dim(); ++d) p.result_sizes.push_back(p.self.size(d));
  return p;
}

npu_kernels::AdvancedIndexArgs index_args(const IndexPlan& p, const char* op) {
  npu_kernels::AdvancedIndexArgs a;
  a.op = op;
  const int64_t nrep = static_cast<int64_t>(p.result_sizes.size()) - p.before - p.after;
  const int nd = static_cast<int>(p.result_sizes.size());
  TORCH_CHECK(nd <= npu_kernels::kMaxDims, op, ": too many dimensions");
  // data: self's strides on the kept dims, 0 on the replaced ones
  auto sd = tensor_desc(p.self, op);
  a.data = sd;
  a.data.ndim = nd;
  for (int i = 0; i < nd; ++i) {
    a.data.sizes[i] = p.result_sizes[i];
    if (i < p.before) {
      a.data.strides[i] = sd.strides[i];
    } else if (i < p.before + nrep) {
      a.data.strides[i] = 0;
    } else {
      a.data.strides[i] = sd.strides[p.self.dim() - (nd - i)];
    }
  }
  a.nindex = static_cast<int>(p.indices.size());
  for (int k = 0; k < a.nindex; ++k) {
    const auto& ix = p.indices[k];
    auto d = tensor_desc(ix, op);
    d.ndim = nd;
    for (int i = 0; i < nd; ++i) {
      d.sizes[i] = p.result_sizes[i];
      d.strides[i] = (i >= p.before && i < p.before + nrep) ? ix.stride(i - p.before) : 0;
    }
    a.index[k] = d;
    a.indexed_sizes[k] = p.indexed_sizes[k];
    a.indexed_strides[k] = p.indexed_strides[k];
  }
  return a;
}

at::Tensor index_tensor(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  c10::DeviceGuard guard(self.device());
  const auto p = plan_index(self, indices, "index");
  at::Tensor out = at::empty(p.result_sizes, self.options());
  if (out.numel() == 0) return out;
  auto a = index_args(p, "index");
  a.other = tensor_desc(out, "index");
  NPU_CHECK(npu_kernels::advanced_index(stream_of(self), a));
  return out;
}

at::Tensor& index_put_impl(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                           const at::Tensor& values, bool accumulate, bool /*unsafe*/) {
  TORCH_CHECK_INDEX(self.scalar_type() == values.scalar_type(),
                    "Index put requires the source and destination dtypes match, got ", self.scalar_type(),
                    " for the destination and ", values.scalar_type(), " for the source.");
  c10::DeviceGuard guard(self.device());
  const auto p = plan_index(self, indices, "index_put_");
  check_device_arg("index_put_", "values", values, self.device(), /*cpu_allowed=*/values.dim() == 0);
  at::Tensor v = values.to(self.device());
  TORCH_CHECK(at::is_expandable_to(v.sizes(), p.result_sizes), "shape mismatch: value tensor of shape ", v.sizes(),
              " cannot be broadcast to indexing result of shape ", at::IntArrayRef(p.result_sizes));
  v = v.expand(p.result_sizes);
  if (v.numel() == 0) return self;
  auto a = index_args(p, "index_put_");
  a.other = tensor_desc(v, "index_put_");
  a.put = true;
  a.accumulate = accumulate;
  NPU_CHECK(npu_kernels::advanced_index(stream_of(self), a));
  return self;
}

// ---- masks -----------------------------------------------------------------------------------------

at::Tensor& masked_fill_scalar(at::Tensor& self, const at::Tensor& mask, const at::Scalar& value) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  c10::DeviceGuard guard(self.device());
  if (self.numel() == 0) return self;
  TORCH_CHECK(at::is_expandable_to(mask.sizes(), self.sizes()), "masked_fill_: mask of shape ", mask.sizes(),
              " cannot be broadcast to ", self.sizes());
  check_device_arg("masked_fill_", "mask", mask, self.device());
  const at::Tensor m = mask.expand(self.sizes());
  NPU_CHECK(npu_kernels::masked_fill(stream_of(self), tensor_desc(self, "masked_fill_"), tensor_desc(m, "masked_fill_"),
                                     to_scalar_value(value)));
  return self;
}

at::Tensor& masked_fill_tensor(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  return masked_fill_scalar(self, mask, value.item());
}

at::Tensor& masked_scatter_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter_: expected self and source to have same dtypes but got ", self.scalar_type(), " and ",
              source.scalar_type());
  c10::DeviceGuard guard(self.device());
  if (self.numel() == 0) return self;
  TORCH_CHECK(at::is_expandable_to(mask.sizes(), self.sizes()), "masked_scatter_: mask of shape ", mask.sizes(),
              " cannot be broadcast to ", self.sizes());
  check_device_arg("masked_scatter_", "mask", mask, self.device());
  check_device_arg("masked_scatter_", "source", source, self.device());
  const at::Tensor m = mask.expand(self.sizes());
  const at::Tensor src = source.contiguous();
  NPU_CHECK(npu_kernels::masked_scatter(stream_of(self), tensor_desc(self, "masked_scatter_"),
                                        tensor_desc(m, "masked_scatter_"), src.const_data_ptr(), src.numel()));
  return self;
}

// Reads a device int64 count (syncs: the result's size depends on it, as on CUDA).
int64_t device_count_of(const at::Tensor& t, const char* op) {
  at::Tensor c = at::empty({}, t.options().dtype(at::kLong));
  NPU_CHECK(npu_kernels::count_nonzero(stream_of(t), tensor_desc(t, op), c.data_ptr<int64_t>()));
  return c.item<int64_t>();
}

at::Tensor& nonzero_out(const at::Tensor& self, at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == at::kLong, "nonzero: expected out to have dtype int64");
  c10::DeviceGuard guard(self.device());
  const int64_t n = self.numel() == 0 ? 0 : device_count_of(self, "nonzero");
  at::native::resize_output(out, {n, self.dim()});
  if (n == 0 || self.dim() == 0) return out;
  at::Tensor o = out.is_contiguous() ? out : at::empty({n, self.dim()}, out.options());
  NPU_CHECK(npu_kernels::nonzero(stream_of(self), tensor_desc(self, "nonzero"), o.data_ptr<int64_t>(), n));
  if (!o.is_same(out)) out.copy_(o);
  return out;
}

at::Tensor nonzero(const at::Tensor& self) {
  at::Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  return nonzero_out(self, out);
}

at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  c10::DeviceGuard guard(self.device());
  check_device_arg("masked_select", "mask", mask, self.device(), /*cpu_allowed=*/true);  // as CUDA's indexing
  const at::Tensor mask_dev = mask.to(self.device());
  auto [s, m] = at::expand_outplace(self, mask_dev);
  const int64_t n = s->numel() == 0 ? 0 : device_count_of(*m, "masked_select");
  at::Tensor out = at::empty({n}, self.options());
  if (n == 0) return out;
  NPU_CHECK(npu_kernels::masked_select(stream_of(self), tensor_desc(*s, "masked_select"),
                                       tensor_desc(*m, "masked_select"), out.data_ptr(), n));
  return out;
}

// ---- sort / topk -----------------------------------------------------------------------------------

void sort_into(const at::Tensor& self, int64_t dim, bool descending, const at::Tensor& values,
               const at::Tensor& indices, int64_t k, const char* op) {
  c10::DeviceGuard guard(self.device());
  if (self.numel() == 0) return;
  const auto s = as_1d(self);
  NPU_CHECK(npu_kernels::sort_lines(stream_of(self), tensor_desc(s, op), static_cast<int>(dim), descending,
                                    tensor_desc(as_1d(values), op), tensor_desc(as_1d(indices), op), k, op));
}

std::tuple<at::Tensor&, at::Tensor&> sort_values_stable(const at::Tensor& self, std::optional<bool> /*stable*/,
                                                        int64_t dim, bool descending, at::Tensor& values,
                                                        at::Tensor& indices) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  at::native::resize_output(values, self.sizes());
  at::native::resize_output(indices, self.sizes());
  TORCH_CHECK(indices.scalar_type() == at::kLong, "sort: indices must be int64");
  at::Tensor v = values.is_contiguous() ? values : at::empty(self.sizes(), values.options());
  at::Tensor i = indices.is_contiguous() ? indices : at::empty(self.sizes(), indices.options());
  sort_into(self, dim, descending, v, i, self.dim() == 0 ? 1 : self.size(dim), "sort");
  if (!v.is_same(values)) values.copy_(v);
  if (!i.is_same(indices)) indices.copy_(i);
  return {values, indices};
}

std::tuple<at::Tensor, at::Tensor> sort_stable(const at::Tensor& self, std::optional<bool> stable, int64_t dim,
                                               bool descending) {
  at::Tensor values = at::empty(self.sizes(), self.options());
  at::Tensor indices = at::empty(self.sizes(), self.options().dtype(at::kLong));
  sort_values_stable(self, stable, dim, descending, values, indices);
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> topk_values(const at::Tensor& self, int64_t k, int64_t dim, bool largest,
                                                 bool /*sorted*/, at::Tensor& values, at::Tensor& indices) {
  dim = at::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  const int64_t len = self.dim() == 0 ? 1 : self.size(dim);
  TORCH_CHECK(k >= 0 && k <= len, "selected index k out of range");
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

std::tuple<at::Tensor, at::Tensor> topk(const at::Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  at::Tensor values = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  topk_values(self, k, dim, largest, sorted, values, indices);
  return {values, indices};
}

// kthvalue: the k-th smallest of each line, from the stable sort.
std::tuple<at::Tensor&, at::Tensor&> kthvalue_values(const at::Tensor& self, int64_t k, int64_t dim, bool keepdim,
                                                     at::Tensor& values, at::Tensor& indices) {
  dim = at::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  const int64_t len = self.dim() == 0 ? 1 : self.size(dim);
  at::native::zero_numel_check_dims(self, dim, "kthvalue()");  // IndexError on an empty line, as CPU and CUDA
  TORCH_CHECK(k >= 1 && k <= len, "kthvalue(): selected number k out of range for dimension ", dim);
  at::Tensor v = at::empty({0}, self.options());
  at::Tensor i = at::empty({0}, self.options().dtype(at::kLong));
  topk_values(self, k, dim, /*largest=*/false, true, v, i);
  at::Tensor kv = as_1d(v).narrow(dim, k - 1, 1), ki = as_1d(i).narrow(dim, k - 1, 1);
  if (self.dim() == 0) {
    // a 0-dim result; view({}) would pick Tensor::view(ScalarType) and reinterpret the bytes as uint8
    kv = kv.reshape(at::IntArrayRef{});
    ki = ki.reshape(at::IntArrayRef{});
  } else if (!keepdim) {
    kv = kv.squeeze(dim);
    ki = ki.squeeze(dim);
  }
  at::native::resize_output(values, kv.sizes());
  at::native::resize_output(indices, ki.sizes());
  values.copy_(kv);
  indices.copy_(ki);
  return {values, indices};
}

// ---- embedding -------------------------------------------------------------------------------------

at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices, c10::SymInt num_weights,
                                    c10::SymInt padding_idx, bool scale_grad_by_freq) {
  c10::DeviceGuard guard(grad_output.device());
  const int64_t nw = num_weights.expect_int();
  const int64_t dim = grad_output.size(-1);
  at::Tensor idx = indices.to(grad_output.device(), at::kLong).reshape({-1}).contiguous();
  at::Tensor grad = grad_output.reshape({-1, dim});
  at::Tensor gw = at::zeros({nw, dim}, grad_output.options());
  if (idx.numel() > 0 && dim > 0) {
    NPU_CHECK(npu_kernels::embedding_backward(stream_of(grad), tensor_desc(gw, "embedding_dense_backward"),
                                              tensor_desc(grad, "embedding_dense_backward"), idx.data_ptr<int64_t>(),
                                              idx.numel(), padding_idx.expect_int()));
  }
  if (scale_grad_by_freq) {
    // counts per row (an index_add of ones), then grad_weight /= count where count > 0
    at::Tensor counts = at::zeros({nw}, grad_output.options());
    counts.index_add_(0, idx, at::ones_like(idx, grad_output.options()));
    gw = gw.div(counts.clamp_min(1).unsqueeze(1));
  }
  return gw;
}

// ---- unique / bincount / searchsorted ------------------------------------------------------------

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique2(const at::Tensor& self, bool /*sorted*/, bool return_inverse,
                                                       bool return_counts) {
  c10::DeviceGuard guard(self.device());
  const int64_t n = self.numel();
  at::Tensor values = at::empty({n}, self.options());
  at::Tensor inverse = at::empty(return_inverse ? self.sizes() : at::IntArrayRef{0}, self.options().dtype(at::kLong));
  at::Tensor counts = at::empty({return_counts ? n : 0}, self.options().dtype(at::kLong));
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

at::Tensor bincount(const at::Tensor& self, const std::optional<at::Tensor>& weights_opt, int64_t minlength) {
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
    w = weights.to(self.device());
    wd = tensor_desc(w, "bincount");
  }
  NPU_CHECK(npu_kernels::bincount(stream_of(self), tensor_desc(self, "bincount"), wd, tensor_desc(out, "bincount")));
  return out;
}

at::Tensor& searchsorted_out(const at::Tensor& sorted_sequence, const at::Tensor& self, bool out_int32, bool right,
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
  at::Tensor o = out.is_contiguous() ? out : at::empty(self.sizes(), out.options());
  NPU_CHECK(npu_kernels::searchsorted(stream_of(self), tensor_desc(bd, "searchsorted"), tensor_desc(v, "searchsorted"),
                                      tensor_desc(o, "searchsorted"), use_right));
  if (!o.is_same(out)) out.copy_(o);
  return out;
}

at::Tensor searchsorted_npu(const at::Tensor& sorted_sequence, const at::Tensor& self, bool out_int32, bool right,
                        std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter) {
  at::Tensor out = at::empty({0}, self.options().dtype(out_int32 ? at::kInt : at::kLong));
  return searchsorted_out(sorted_sequence, self, out_int32, right, side, sorter, out);
}

at::Tensor searchsorted_scalar(const at::Tensor& sorted_sequence, const at::Scalar& self, bool out_int32, bool right,
                               std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter) {
  const at::Tensor value = at::scalar_tensor(self, sorted_sequence.options());
  return searchsorted_npu(sorted_sequence, value, out_int32, right, side, sorter);
}

// bucketize is searchsorted with the arguments swapped (1-D boundaries).
at::Tensor& bucketize_out(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right,
                          at::Tensor& out) {
  TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(), ")");
  return searchsorted_out(boundaries, self, out_int32, right, std::nullopt, std::nullopt, out);
}
at::Tensor bucketize(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right) {
  at::Tensor out = at::empty({0}, self.options().dtype(out_int32 ? at::kInt : at::kLong));
  return bucketize_out(self, boundaries, out_int32, right, out);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_unique2", unique2);
  m.impl("bincount", bincount);
  m.impl("searchsorted.Tensor", searchsorted_npu);
  m.impl("bucketize.Tensor", bucketize);
  m.impl("bucketize.Tensor_out", bucketize_out);
  m.impl("searchsorted.Tensor_out", searchsorted_out);
  m.impl("searchsorted.Scalar", searchsorted_scalar);
  m.impl("gather", gather);
  m.impl("gather.out", gather_out);
  m.impl("scatter.src", scatter_src);
  m.impl("scatter_.src", scatter_src_);
  m.impl("scatter.src_out", scatter_src_out);
  m.impl("scatter.value", scatter_value);
  m.impl("scatter_.value", scatter_value_);
  m.impl("scatter.value_out", scatter_value_out);
  m.impl("scatter.reduce", scatter_reduce_src);
  m.impl("scatter_.reduce", scatter_reduce_src_);
  m.impl("scatter.reduce_out", scatter_reduce_src_out);
  m.impl("scatter.value_reduce", scatter_reduce_value);
  m.impl("scatter_.value_reduce", scatter_reduce_value_);
  m.impl("scatter.value_reduce_out", scatter_reduce_value_out);
  m.impl("scatter_add", scatter_add);
  m.impl("scatter_add_", scatter_add_);
  m.impl("scatter_add.out", scatter_add_out);
  m.impl("scatter_reduce.two", scatter_reduce_two);
  m.impl("scatter_reduce_.two", scatter_reduce_two_);
  m.impl("scatter_reduce.two_out", scatter_reduce_two_out);
  m.impl("index_select", index_select);
  m.impl("index_select.out", index_select_out);
  m.impl("index_add", index_add);
  m.impl("index_add_", index_add_);
  m.impl("index_add.out", index_add_out);
  m.impl("index.Tensor", index_tensor);
  m.impl("_index_put_impl_", index_put_impl);
  m.impl("masked_fill_.Scalar", masked_fill_scalar);
  m.impl("masked_fill_.Tensor", masked_fill_tensor);
  m.impl("nonzero", nonzero);
  m.impl("nonzero.out", nonzero_out);
  m.impl("masked_select", masked_select);
  m.impl("sort.stable", sort_stable);
  m.impl("sort.values_stable", sort_values_stable);
  m.impl("topk", topk);
  m.impl("topk.values", topk_values);
  m.impl("embedding_dense_backward", embedding_dense_backward);
  m.impl("index_fill_.int_Scalar", index_fill_scalar);
  m.impl("index_fill_.int_Tensor", index_fill_tensor);
  m.impl("index_copy", index_copy);
  m.impl("index_copy_", index_copy_);
  m.impl("index_copy.out", index_copy_out);
  m.impl("take", take);
  m.impl("put_", put_);
  m.impl("kthvalue.values", kthvalue_values);
  m.impl("index_reduce", index_reduce);
  m.impl("index_reduce_", index_reduce_);
  m.impl("index_reduce.out", index_reduce_out);
  m.impl("masked_scatter_", masked_scatter_);
}

}  // namespace
}  // namespace torch_npu_sim
