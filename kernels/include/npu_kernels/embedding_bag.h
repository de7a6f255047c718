// embedding_bag (torch-free): per bag, the sum / mean / max of the weight rows its int64 indices pick
// (optionally scaled by per-sample weights), and the backward to the table and to the per-sample weights,
// with PyTorch's semantics (ATen/native/EmbeddingBag.cpp; CUDA's where CPU's differ, see each function).
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

enum class BagMode : int8_t { kSum = 0, kMean = 1, kMax = 2 };  // PyTorch's mode values

struct EmbeddingBagArgs {
  DType dtype = DType::kFloat32;  // weight, per-sample weights, output and gradients (floating)
  int64_t num_weights = 0, dim = 0;
  int64_t weight_stride0 = 0, weight_stride1 = 1;  // the table's strides in elements (any layout)
  int64_t num_indices = 0, num_bags = 0;
  BagMode mode = BagMode::kSum;
  int64_t padding_idx = -1;  // a row that counts in no bag; -1: none
  // Bag b is [offsets[b], offsets[b + 1]); the last one ends at offsets[num_bags] when true, else at
  // num_indices. Indices after the last bag belong to none.
  bool include_last_offset = false;
};

// Forward. indices (num_indices) and offsets (num_bags + include_last_offset) contiguous int64;
// per_sample_weights (num_indices, contiguous) or null; out (num_bags x dim, contiguous): an empty bag gives 0
// (and a mean divides by its count, at least 1). offset2bag (num_indices): each index's bag, -1 if none.
// bag_size (num_bags): its indices other than padding_idx. max_indices: for kMax (num_bags x dim) the row that
// gave each maximum (the first of equals; NaN only when first), -1 in an empty bag; otherwise (num_bags) a copy
// of bag_size, as CPU returns it. KernelError with CPU's message for offsets[0] != 0, offsets past the end and
// indices outside [0, num_weights), and for decreasing offsets (which CPU assumes away).
npu_sim::Status embedding_bag(npu_sim::Stream stream, const EmbeddingBagArgs& a, const void* weight,
                              const int64_t* indices, const int64_t* offsets, const void* per_sample_weights,
                              void* out, int64_t* offset2bag, int64_t* bag_size, int64_t* max_indices);

// grad_weight (num_weights x dim, contiguous, fully written) from grad (num_bags x dim, contiguous), both a.dtype
// accumulated in that dtype (the adapter widens 16-bit types). Sum/mean: every index in a bag, not padding_idx,
// adds grad[bag] * per_sample_weights[i] (if given) / bag_size[bag] (mean, nonzero sizes) / counts[row] (if
// given: scale_grad_by_freq, as CUDA; CPU's kernel divides by another row's count). Max: grad[bag, c] goes to
// row max_indices[bag, c] of each nonempty bag. Rows are split between blocks, so no two blocks write one row.
npu_sim::Status embedding_bag_backward(npu_sim::Stream stream, const EmbeddingBagArgs& a, const void* grad,
                                       const int64_t* indices, const int64_t* offset2bag, const int64_t* bag_size,
                                       const int64_t* max_indices, const void* per_sample_weights,
                                       const int64_t* counts, void* grad_weight);

// out (num_indices, contiguous): the gradient of the per-sample weights of a sum, dot(grad[bag], weight[row]) per
// index (accumulated in float, double for float64); 0 for padding_idx and for an index in no bag.
npu_sim::Status embedding_bag_per_sample_weights_backward(npu_sim::Stream stream, const EmbeddingBagArgs& a,
                                                          const void* grad, const void* weight, const int64_t* indices,
                                                          const int64_t* offset2bag, void* out);

}  // namespace npu_kernels
