// Indexing and shape kernels (torch-free): gather/scatter along one dimension (index_select, index_add,
// gather, scatter, scatter_add, scatter_reduce, index_fill/copy/reduce, take/put_), advanced indexing
// (index / index_put), masked_scatter/select, tril/triu, nonzero, sort/topk, unique, bincount,
// searchsorted and embedding_dense_backward. Indices are int64 and checked on the device:
// an out-of-range index throws npu_sim::KernelError("<op>(): index 7 is out of bounds for dimension 0
// with size 5"), which surfaces at the next sync.
#pragma once

#include <cstdint>

#include "npu_kernels/copy.h"
#include "npu_kernels/tensor_desc.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

enum class IndexReduce { kAssign, kAdd, kMul, kMean, kMax, kMin };

// One dimension indexed by an int64 tensor. All descs (dst, src, index) have the same sizes (the
// iteration shape); the indexed operand carries stride 0 along `dim`, and the index moves it by
// idx * dim_stride.
//   gather mode  (scatter == false): dst[p] = src[p + idx[p] * dim_stride]
//   scatter mode (scatter == true) : dst[p + idx[p] * dim_stride] (reduce)= src[p]
// Scatter mode runs every line along `dim` inside one block, so duplicate indices never race.
// `src_scalar`: src is the scalar `value` (scatter.value). `include_self` and kMean follow
// scatter_reduce.two (mean divides by the number of contributions, floor division for integers).
struct IndexAlongDim {
  TensorDesc dst, src, index;
  int dim = 0;
  int64_t dim_size = 0;
  int64_t dim_stride = 0;
  bool scatter = false;
  IndexReduce reduce = IndexReduce::kAssign;
  bool include_self = true;
  bool src_scalar = false;
  bool wrap_negative = false;  // index_fill/take/put_: -size <= idx < 0 counts from the end
  ScalarValue value;
  const char* op = "index";
};
npu_sim::Status index_along_dim(npu_sim::Stream stream, const IndexAlongDim& a);

// Advanced indexing. `data` (the restrided source for index, destination for index_put) and `other`
// (result resp. values) have the iteration shape; each of the `nindex` int64 index descs too (broadcast,
// stride 0). offset = sum_k wrap(idx_k) * indexed_strides[k]; negative indices wrap once.
constexpr int kMaxIndices = 8;
struct AdvancedIndexArgs {
  TensorDesc data, other;
  int nindex = 0;
  TensorDesc index[kMaxIndices];
  int64_t indexed_sizes[kMaxIndices] = {};
  int64_t indexed_strides[kMaxIndices] = {};
  bool put = false;         // false: other[p] = data[p + off]; true: data[p + off] = other[p]
  bool accumulate = false;  // index_put with accumulate=True (runs in one block: duplicates add up)
  const char* op = "index";
};
npu_sim::Status advanced_index(npu_sim::Stream stream, const AdvancedIndexArgs& a);


// self[p] = source[j++] for the positions where mask[p] (row-major order); source: contiguous, `source_numel`
// elements (running out is a KernelError). One block.
npu_sim::Status masked_scatter(npu_sim::Stream stream, const TensorDesc& self, const TensorDesc& mask,
                               const void* source, int64_t source_numel);

// out = tril/triu(in, diagonal) over the last two dims (same sizes).
npu_sim::Status triangle(npu_sim::Stream stream, const TensorDesc& out, const TensorDesc& in, int64_t diagonal,
                         bool upper);

// Counts the non-zero elements of `in` into *count (device int64).
npu_sim::Status count_nonzero(npu_sim::Stream stream, const TensorDesc& in, int64_t* count);
// Writes the coordinates of the non-zero elements of `in` (row-major order) into out (n x ndim int64,
// contiguous); n is the count from count_nonzero.
npu_sim::Status nonzero(npu_sim::Stream stream, const TensorDesc& in, int64_t* out, int64_t n);
// Copies the elements of `in` where `mask` (same sizes) is true into contiguous `out` (n elements).
npu_sim::Status masked_select(npu_sim::Stream stream, const TensorDesc& in, const TensorDesc& mask, void* out,
                              int64_t n);

// Sorts every line of `in` along `dim` (stable; NaN sorts as the largest, as in PyTorch) into values and
// int64 indices (same sizes as `in` with k along dim for topk: the first k of each sorted line, selected in
// O(len) with O(k) working memory, then sorted).
npu_sim::Status sort_lines(npu_sim::Stream stream, const TensorDesc& in, int dim, bool descending,
                           const TensorDesc& values, const TensorDesc& indices, int64_t k, const char* op);
// The k-th smallest (1-based; ties in position order) of every line of `in` along dim into values and int64
// indices (size 1 along dim): a selection, O(len) per line.
npu_sim::Status kth_lines(npu_sim::Stream stream, const TensorDesc& in, int dim, const TensorDesc& values,
                          const TensorDesc& indices, int64_t k, const char* op);
// The median of every line of `in` along dim into values and int64 indices (size 1 along dim): the
// ((n - 1) / 2)-th smallest (0-based; ties in position order) of the line's n non-NaN elements, by selection.
// A line with a NaN gives its first NaN, or with ignore_nan (nanmedian) only a line of NaNs does.
// indices.data may be null (the value alone, as median() of a whole tensor returns).
npu_sim::Status median_lines(npu_sim::Stream stream, const TensorDesc& in, int dim, const TensorDesc& values,
                             const TensorDesc& indices, bool ignore_nan, const char* op);

// grad_weight (num_weights x D, zeroed by the caller) += grad rows for each index != padding_idx.
// grad: (n x D) contiguous, indices: n contiguous int64. One block per column range, no races.
npu_sim::Status embedding_backward(npu_sim::Stream stream, const TensorDesc& grad_weight, const TensorDesc& grad,
                                   const int64_t* indices, int64_t n, int64_t padding_idx);

// Sorted unique of all elements of `in` (any strides, real dtypes): values (numel slots, in's dtype,
// contiguous) get the distinct values ascending, inverse (numel, may be null) each element's slot,
// counts (numel, may be null) the multiplicities, *num_unique (device int64) how many there are.
npu_sim::Status unique_sorted(npu_sim::Stream stream, const TensorDesc& in, void* values, int64_t* inverse,
                              int64_t* counts, int64_t* num_unique);
// *max_out = max(in) (or -1 when empty) of a 1-D integer tensor; a negative element is a KernelError.
npu_sim::Status bincount_max(npu_sim::Stream stream, const TensorDesc& in, int64_t* max_out);
// out[in[i]] += weights ? weights[i] : 1 (out zeroed by the caller, contiguous; weights: ndim 0 = none).
npu_sim::Status bincount(npu_sim::Stream stream, const TensorDesc& in, const TensorDesc& weights, const TensorDesc& out);
// For every element of `values` (rows x m, contiguous), the insertion point in the matching row of
// `boundaries` (brows x len, contiguous; brows == 1 shares one row): first i with b[i] >= v (left) or
// b[i] > v (right). out: int64 or int32, contiguous like values.
npu_sim::Status searchsorted(npu_sim::Stream stream, const TensorDesc& boundaries, const TensorDesc& values,
                             const TensorDesc& out, bool right);

}  // namespace npu_kernels
