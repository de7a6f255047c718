// Multi-class margin losses (torch-free): multi_margin_loss and multilabel_margin_loss, forward and backward, with
// the order of operations and accumulation types of ATen's CPU kernels (ATen/native/LossMultiMargin.cpp,
// LossMultiLabelMargin.cpp), so results match CPU's.
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// Common to every call here:
//  - input (nframe, dim), contiguous, of dtype kFloat32 or kFloat64 only: CPU dispatches these kernels over the
//    floating types without fp16/bf16 and raises NotImplementedError for them ("\"multi_margin_loss_cpu_kernel\"
//    not implemented for 'Half'", "\"multi_margin_loss_backward_cpu_kernel\" ...",
//    "\"multilabel_margin_loss_forward_out_frame\" ...", "\"multilabel_margin_loss_backward_out_frame\" ..."),
//    so any other dtype is kInvalidValue. A 1-D input (C) is nframe 1, dim C; a 0-dim input is nframe 1, dim 1.
//  - reduction as ATen's enum: 0 none, 1 mean, 2 sum. With none, out / grad_output have nframe elements; with
//    mean or sum, one. (CPU's 1-D / 0-dim "scalar output even for none" cases are the same numbers as nframe 1
//    here, the adapter only shapes them.)
//  - Per-row work runs in dtype (CPU's scalar_t); the mean/sum over rows accumulates in double (CPU's
//    at::acc_type<scalar_t, /*is_cuda=*/false>, double for float too), in row order on one block.
//  - Targets are int64, contiguous. An out-of-range target is found by the kernel, which reads nothing out of
//    bounds and fails the stream with KernelError (seen at the next sync); the messages carry CPU's text.
//  - nframe == 0 with reduction none, or nframe * dim == 0 in a backward: nothing to do. nframe == 0 with mean /
//    sum writes the empty reduction (sum 0, mean 0 / 0 = NaN); CPU returns an uninitialised scalar there.
//    dim == 0 with nframe > 0, negative sizes, a bad reduction or p, null pointers: kInvalidValue (CPU raises
//    "Expected non-empty vector or matrix with optional 0-dim batch size, but got: [N, 0]" for dim 0).

struct MultiMarginArgs {
  DType dtype = DType::kFloat32;
  int64_t nframe = 0, dim = 0;
  int64_t p = 1;          // 1 or 2 (CPU: "only p == 1 and p == 2 supported")
  double margin = 1.0;    // converted to dtype first, as CPU's margin.to<scalar_t>()
  int64_t reduction = 1;  // 0 none, 1 mean, 2 sum
};

// target (nframe); weight (dim) of dtype or null. Row t with y = target[t] (CPU's loop, in dtype):
//   sum = 0; for d != y in order: z = margin - x[y] + x[d]; if z > 0: h = p == 1 ? z : z * z; h *= w[y] if
//   weighted; sum += h. row = sum / dim.
// out: none -> out[t] = row (nframe values); sum -> one value, double acc += row over t, rounded to dtype; mean ->
// the same acc / nframe. NaN never passes z > 0, so it contributes nothing. A target outside [0, dim) fails the
// stream: KernelError "multi_margin_loss: target out of range" (CPU: RuntimeError "target out of range").
npu_sim::Status multi_margin_loss(npu_sim::Stream stream, const MultiMarginArgs& a, const void* input,
                                  const int64_t* target, const void* weight, void* out);

// grad_input (nframe, dim), contiguous, fully written. g = dtype(mean ? 1. / (nframe * dim) : 1. / dim); row t:
// for d != y: z = margin - x[y] + x[d]; grad[d] = z > 0 ? (p == 1 ? g : 2 * g * z) * w[y] (w only if weighted)
// : 0, and grad[y] = 0 - (those h in order of d); then every element *= grad_output[t] (none) or
// grad_output[0] (mean / sum). Target errors as the forward's, message "multi_margin_loss_backward: target out of
// range" (CPU: "target out of range").
npu_sim::Status multi_margin_loss_backward(npu_sim::Stream stream, const MultiMarginArgs& a, const void* grad_output,
                                           const void* input, const int64_t* target, const void* weight,
                                           void* grad_input);

struct MultilabelMarginArgs {
  DType dtype = DType::kFloat32;
  int64_t nframe = 0, dim = 0;
  int64_t reduction = 1;  // 0 none, 1 mean, 2 sum
};

// target (nframe, dim): each row's labels are its entries before the first negative one (-1 ends the list);
// every entry of the whole tensor must be in [-1, dim), also those after the first -1 (CPU checks target.min()
// >= -1 and target.max() < dim before it computes). is_target (nframe, dim) of dtype, fully written: 1 at each
// label of the row, 0 elsewhere. Row t (CPU's loop): acc (double) = 0; for each label y in order, for every d
// with is_target[d] == 0: z = 1 - x[y] + x[d] (dtype); if z > 0: acc += z. The row sum is acc rounded to dtype.
// out: none -> out[t] = row sum / dim (in dtype); sum -> double acc2 += row sum over t, then acc2 / dim; mean ->
// that / nframe; rounded to dtype. A label repeated in a row counts repeatedly, as on CPU. A target entry
// outside [-1, dim) fails the stream: KernelError "multilabel_margin_loss: argument #2 'target' is out of range"
// (CPU: RuntimeError "argument #2 'target' is out of range").
npu_sim::Status multilabel_margin_loss_forward(npu_sim::Stream stream, const MultilabelMarginArgs& a,
                                               const void* input, const int64_t* target, void* out, void* is_target);

// grad_input (nframe, dim), contiguous, fully written: zeros, then g = dtype(mean ? 1. / (nframe * dim) : 1. /
// dim) and, per row t, for each label y (before the first negative) and d in order with is_target[t, d] == 0 (the
// given is_target, compared as CPU's !is_target): if 1 - x[y] + x[d] > 0: grad[y] -= g; grad[d] += g. Then every
// element *= grad_output[t] (none) or grad_output[0] (mean / sum). Checks in CPU's order, each over the whole
// tensor: a target entry outside [-1, dim) fails the stream with KernelError
// "multilabel_margin_loss_backward: argument #3 'target' is out of range" (CPU: "argument #3 'target' is out of
// range"); else an is_target value outside [0, 1] or NaN with "multilabel_margin_loss_backward: argument #5
// 'is_target' is out of range" (CPU: "argument #5 'is_target' is out of range"). Values inside (0, 1] count as
// "is a target", exactly 0 as not.
npu_sim::Status multilabel_margin_loss_backward(npu_sim::Stream stream, const MultilabelMarginArgs& a,
                                                const void* grad_output, const void* input, const int64_t* target,
                                                const void* is_target, void* grad_input);

}  // namespace npu_kernels
