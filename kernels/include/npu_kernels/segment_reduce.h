// Segment reduction (torch-free): torch._segment_reduce (sum, mean, max, min, prod over segments of one axis given
// by lengths or offsets, batched over the leading dims) and its backward, with the semantics of ATen's CPU kernels
// (ATen/native/SegmentReduce.cpp).
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

enum class SegmentReduction { kSum, kMean, kMax, kMin, kProd };

// Layouts, all contiguous: data and grad_input (outer, axis_size, inner); output and grad (outer, segments, inner);
// lengths (outer, segments) or offsets (outer, segments + 1), where outer is the product of data's dims before
// the axis (lengths' leading dims) and inner that of the dims after it. dtype (data, output, grad): kFloat32,
// kFloat64, kFloat16, kBFloat16; index_dtype (lengths / offsets): kInt32 or kInt64. The arithmetic runs in dtype,
// each Half/BFloat16 operation rounded back to it, in CPU's order.
struct SegmentReduceArgs {
  DType dtype = DType::kFloat32;
  DType index_dtype = DType::kInt64;
  SegmentReduction reduce = SegmentReduction::kSum;
  int64_t outer = 1, axis_size = 0, inner = 1, segments = 0;
  bool offsets = false;      // the index tensor holds offsets (segment s of a row is [off[s], off[s + 1]))
  bool unsafe = false;       // forward only: skip CPU's checks of the lengths (as torch's unsafe=True)
  bool has_initial = false;  // initial given: the start value of every segment (converted to dtype)
  double initial = 0.0;
};

// out[r, s, j] = the reduction of data[r, e, j] over the segment's e, in order, from the start value: initial when
// given, else 0 (sum, mean), -inf (max), +inf (min), 1 (prod). max/min keep a NaN element (and every later result
// stays NaN). mean divides by the length unless the segment is empty or the total is NaN; an empty segment's mean
// is NaN without initial, initial with it. Lengths: segments are consecutive from element 0. Offsets: segment s
// spans [off[s], off[s + 1]), the first starting at off[0] (not validated against the axis by CPU).
// Errors (KernelError from the kernel, the stream fails; every block checks the whole index tensor first, so the
// message is deterministic):
//   lengths, !unsafe: a negative length -> "lengths contains negative value!" (checked over all rows first), then a
//     row not summing to axis_size -> "segment_reduce(): Expected all rows of lengths along axis to sum to
//     data.size(lengths.dim()-1) when !unsafe." (CPU's messages);
//   a negative length with unsafe, or decreasing offsets -> "Expected segment_length >= 0 to be true, but got
//     false." (CPU's in-kernel check);
//   a segment outside [0, axis_size) (unsafe lengths summing past it, offsets out of range: CPU reads out of
//     bounds) -> "segment_reduce(): segment <s> of row <r> spans [a, b), outside data.size(axis) = <n>".
// kInvalidValue for other dtypes, negative sizes or null pointers. Nothing is launched (nor checked) for 0 outputs.
npu_sim::Status segment_reduce_forward(npu_sim::Stream stream, const SegmentReduceArgs& a, const void* data,
                                       const void* lengths_or_offsets, void* output);

// grad_input (outer, axis_size, inner), fully written (0 outside every segment and in empty segments):
//   sum: grad; mean: grad / length;
//   max/min: grad at every element that is NaN or equals output; when there are c >= 2 such elements, each of them
//     whose gradient is > 0 gets grad / c (CPU's rule: a negative or NaN grad is not split);
//   prod: grad * output / x for x non-zero and not NaN; for x zero or NaN, grad times the product of the segment's
//     other elements in order, from initial (1 without it).
// output is the forward's result. CPU's backward does not check the lengths (unsafe is ignored); negative lengths,
// decreasing offsets and segments outside the axis are KernelErrors as in the forward. Other errors as the forward.
npu_sim::Status segment_reduce_backward(npu_sim::Stream stream, const SegmentReduceArgs& a, const void* grad,
                                        const void* output, const void* data, const void* lengths_or_offsets,
                                        void* grad_input);

}  // namespace npu_kernels
