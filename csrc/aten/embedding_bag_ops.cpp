// Registration of _embedding_bag (and its forward-only twin), its backward (dense; sparse=True is refused)
// and its per-sample-weights backward (F.embedding_bag, nn.EmbeddingBag): CPU's argument checks, int64 index operands, then
// kernels/src/embedding_bag.cpp on the stream. The side outputs keep the indices' integer type, as CPU's.
#include <ATen/TensorUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/bincount.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/embedding_bag.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using at::Tensor;
using Bag4 = std::tuple<Tensor, Tensor, Tensor, Tensor>;

const Tensor* defined(const std::optional<Tensor>& t) { return t.has_value() && t->defined() ? &*t : nullptr; }

Tensor as_long(const Tensor& t) { return t.to(at::kLong).contiguous(); }

npu_kernels::EmbeddingBagArgs bag_args(const Tensor& weight, int64_t num_indices, int64_t num_bags, int64_t mode,
                                       int64_t padding_idx, bool include_last_offset, const char* op) {
  TORCH_CHECK(mode >= 0 && mode <= 2, op, ": mode must be 0 (sum), 1 (mean) or 2 (max), got ", mode);
  npu_kernels::EmbeddingBagArgs a;
  a.dtype = kernel_dtype(weight.scalar_type(), op);
  a.num_weights = weight.size(0);
  a.dim = weight.size(1);
  a.weight_stride0 = weight.stride(0);
  a.weight_stride1 = weight.stride(1);
  a.num_indices = num_indices;
  a.num_bags = num_bags;
  a.mode = static_cast<npu_kernels::BagMode>(mode);
  a.padding_idx = padding_idx;
  a.include_last_offset = include_last_offset;
  return a;
}

// CPU's check_arguments (ATen/native/EmbeddingBag.cpp) except the offsets' values, which live on the device:
// the kernel checks those and fails the stream with CPU's words.
void check_arguments(const Tensor& weight, const Tensor& indices, const Tensor& offsets, int64_t mode,
                     const Tensor* psw, bool include_last_offset) {
  TORCH_CHECK(indices.dim() == 1, "input has to be a 1D Tensor (F.embedding_bag flattens a 2D one), but got Tensor "
              "of dimension ", indices.dim());
  TORCH_CHECK(offsets.dim() == 1, "offsets has to be a 1D Tensor, but got Tensor of dimension ", offsets.dim());
  const at::TensorArg indices_arg(indices, "indices", 1), offsets_arg(offsets, "offsets", 1),
      weight_arg(weight, "weight", 1);
  at::checkScalarTypes("embedding_bag", indices_arg, {at::kLong, at::kInt});
  at::checkScalarTypes("embedding_bag", offsets_arg, {at::kLong, at::kInt});
  at::checkScalarTypes("embedding_bag", weight_arg, {at::kHalf, at::kBFloat16, at::kFloat, at::kDouble});
  TORCH_CHECK(weight.dim() == 2, "embedding_bag: weight has to be a 2D Tensor, but got Tensor of dimension ",
              weight.dim());
  if (psw) {
    TORCH_CHECK(mode == 0, "embedding_bag: per_sample_weights only supported with mode='sum'");
    at::checkSameType("embedding_bag", weight_arg, at::TensorArg(*psw, "per_sample_weights", 1));
    TORCH_CHECK(psw->dim() == 1, "embedding_bag: per_sample_weights has to be a 1D Tensor, but got Tensor of "
                "dimension ", psw->dim());
    TORCH_CHECK(psw->numel() == indices.numel(), "embedding_bag: per_sample_weights has ", psw->numel(),
                " elements, expected one per index (", indices.numel(), ")");
  }
  if (include_last_offset) {
    TORCH_CHECK(offsets.size(0) >= 1, "include_last_offset: number of offset should be at least 1");
  }
  for (const at::TensorArg& t : {weight_arg, indices_arg, offsets_arg}) {
    TORCH_CHECK(is_npu(*t), "embedding_bag: expected all tensors on npu, but found ", t.name, " on ", t->device());
  }
  TORCH_CHECK(!psw || is_npu(*psw), "embedding_bag: expected all tensors on npu, but found per_sample_weights on ",
              psw->device());
}

Bag4 embedding_bag_forward(const Tensor& weight, const Tensor& indices, const Tensor& offsets, int64_t mode,
                           const std::optional<Tensor>& per_sample_weights, bool include_last_offset,
                           int64_t padding_idx) {
  c10::DeviceGuard guard(weight.device());
  const Tensor* psw = defined(per_sample_weights);
  check_arguments(weight, indices, offsets, mode, psw, include_last_offset);
  // CPU promotes int32 indices with int64 offsets (or the reverse) to int64; the side outputs take that type
  const at::ScalarType index_type = at::promoteTypes(indices.scalar_type(), offsets.scalar_type());
  const int64_t num_bags = offsets.size(0) - (include_last_offset ? 1 : 0);
  const auto a = bag_args(weight, indices.numel(), num_bags, mode, padding_idx, include_last_offset, "embedding_bag");
  const auto long_opts = indices.options().dtype(at::kLong);
  Tensor out = at::empty({num_bags, a.dim}, weight.options());
  Tensor offset2bag = at::empty({a.num_indices}, long_opts);
  Tensor bag_size = at::empty({num_bags}, long_opts);
  Tensor max_indices = mode == 2 ? at::empty({num_bags, a.dim}, long_opts) : at::empty({num_bags}, long_opts);
  if (num_bags > 0) {
    const Tensor idx = as_long(indices), off = as_long(offsets);
    const Tensor w = psw ? psw->contiguous() : Tensor();
    NPU_CHECK(npu_kernels::embedding_bag(stream_of(weight), a, weight.const_data_ptr(), idx.const_data_ptr<int64_t>(),
                                         off.const_data_ptr<int64_t>(), w.defined() ? w.const_data_ptr() : nullptr,
                                         out.data_ptr(), offset2bag.data_ptr<int64_t>(), bag_size.data_ptr<int64_t>(),
                                         max_indices.data_ptr<int64_t>()));
  }
  if (index_type != at::kLong) {
    return {out, offset2bag.to(index_type), bag_size.to(index_type), max_indices.to(index_type)};
  }
  return {out, offset2bag, bag_size, max_indices};
}

}  // namespace

Bag4 NF::_embedding_bag(const Tensor& weight, const Tensor& indices, const Tensor& offsets, bool scale_grad_by_freq,
                        int64_t mode, bool sparse, const std::optional<Tensor>& per_sample_weights,
                        bool include_last_offset, int64_t padding_idx) {
  (void)scale_grad_by_freq;  // backward-only arguments
  (void)sparse;
  return embedding_bag_forward(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx);
}

Bag4 NF::_embedding_bag_forward_only(const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                                     bool scale_grad_by_freq, int64_t mode, bool sparse,
                                     const std::optional<Tensor>& per_sample_weights, bool include_last_offset,
                                     int64_t padding_idx) {
  (void)scale_grad_by_freq;
  (void)sparse;
  return embedding_bag_forward(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx);
}

Tensor NF::_embedding_bag_backward(const Tensor& grad, const Tensor& indices, const Tensor& offsets,
                                   const Tensor& offset2bag, const Tensor& bag_size, const Tensor& maximum_indices,
                                   int64_t num_weights, bool scale_grad_by_freq, int64_t mode, bool sparse,
                                   const std::optional<Tensor>& per_sample_weights, int64_t padding_idx) {
  (void)offsets;  // the forward always returns offset2bag, which says each index's bag
  // CPU's kernel would build a COO gradient, which has no npu tensor type to come back as
  TORCH_CHECK_NOT_IMPLEMENTED(!sparse, "embedding_bag: sparse=True gradients are not supported on npu (sparse "
                              "tensors are not simulated); use sparse=False");
  return NF::_embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, maximum_indices, num_weights,
                                           scale_grad_by_freq, mode, per_sample_weights, padding_idx);
}

Tensor NF::_embedding_bag_dense_backward(const Tensor& grad, const Tensor& indices, const Tensor& offset2bag,
                                         const Tensor& bag_size, const Tensor& maximum_indices, int64_t num_weights,
                                         bool scale_grad_by_freq, int64_t mode,
                                         const std::optional<Tensor>& per_sample_weights, int64_t padding_idx) {
  c10::DeviceGuard guard(grad.device());
  const char* op = "_embedding_bag_dense_backward";
  at::checkScalarTypes("embedding_bag", at::TensorArg(grad, "grad_", 1),
                       {at::kHalf, at::kBFloat16, at::kFloat, at::kDouble});
  TORCH_CHECK(grad.dim() == 2, op, ": grad has to be a 2D Tensor, but got Tensor of dimension ", grad.dim());
  TORCH_CHECK(offset2bag.numel() == indices.numel(), op, ": offset2bag has ", offset2bag.numel(),
              " elements, expected one per index (", indices.numel(), ")");
  TORCH_CHECK(bag_size.numel() == grad.size(0), op, ": bag_size has ", bag_size.numel(), " elements, expected one per "
              "bag (", grad.size(0), ")");
  TORCH_CHECK(mode != 2 || maximum_indices.sizes() == grad.sizes(), op, ": maximum_indices has shape ",
              maximum_indices.sizes(), ", expected ", grad.sizes());
  // 16-bit gradients accumulate in float32, as CUDA's kernel does (CPU adds in the 16-bit type)
  const at::ScalarType acc = grad.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const Tensor g = grad.to(acc).contiguous();
  const Tensor* psw = defined(per_sample_weights);
  const Tensor w = psw ? psw->to(acc).contiguous() : Tensor();
  Tensor gw = at::empty({num_weights, grad.size(1)}, grad.options().dtype(acc));
  auto a = bag_args(gw, indices.numel(), grad.size(0), mode, padding_idx, false, op);
  if (gw.numel() > 0) {
    const Tensor idx = as_long(indices), o2b = as_long(offset2bag), sizes = as_long(bag_size);
    const Tensor maxi = mode == 2 ? as_long(maximum_indices) : Tensor();
    const Tensor counts = scale_grad_by_freq ? at::bincount(idx, {}, num_weights) : Tensor();
    NPU_CHECK(npu_kernels::embedding_bag_backward(
        stream_of(gw), a, g.const_data_ptr(), idx.const_data_ptr<int64_t>(), o2b.const_data_ptr<int64_t>(),
        sizes.const_data_ptr<int64_t>(), maxi.defined() ? maxi.const_data_ptr<int64_t>() : nullptr,
        w.defined() ? w.const_data_ptr() : nullptr, counts.defined() ? counts.const_data_ptr<int64_t>() : nullptr,
        gw.data_ptr()));
  }
  return gw.to(grad.scalar_type());
}

Tensor NF::_embedding_bag_per_sample_weights_backward(const Tensor& grad, const Tensor& weight, const Tensor& indices,
                                                      const Tensor& offsets, const Tensor& offset2bag, int64_t mode,
                                                      int64_t padding_idx) {
  c10::DeviceGuard guard(grad.device());
  const char* op = "_embedding_bag_per_sample_weights_backward";
  TORCH_CHECK(mode == 0, "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  (void)offsets;  // offset2bag says each index's bag
  TORCH_CHECK(grad.dim() == 2 && weight.dim() == 2 && grad.size(1) == weight.size(1), op, ": grad ", grad.sizes(),
              " and weight ", weight.sizes(), " must be 2D with the same number of columns");
  TORCH_CHECK(offset2bag.numel() == indices.numel(), op, ": offset2bag has ", offset2bag.numel(),
              " elements, expected one per index (", indices.numel(), ")");
  const Tensor g = grad.to(weight.scalar_type()).contiguous();
  Tensor out = at::empty({indices.numel()}, grad.options().dtype(weight.scalar_type()));
  const auto a = bag_args(weight, indices.numel(), grad.size(0), mode, padding_idx, false, op);
  if (out.numel() > 0) {
    const Tensor idx = as_long(indices), o2b = as_long(offset2bag);
    NPU_CHECK(npu_kernels::embedding_bag_per_sample_weights_backward(stream_of(weight), a, g.const_data_ptr(),
                                                                     weight.const_data_ptr(),
                                                                     idx.const_data_ptr<int64_t>(),
                                                                     o2b.const_data_ptr<int64_t>(), out.data_ptr()));
  }
  return out.to(grad.scalar_type());
}

}  // namespace torch_npu_sim
