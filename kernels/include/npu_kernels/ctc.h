// CTC loss (torch-free): the forward (negative log likelihood and log_alpha) and backward (gradient of log_probs)
// of the connectionist temporal classification loss with PyTorch's semantics (ATen/native/LossCTC.cpp, CPU).
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

struct CtcArgs {
  DType dtype = DType::kFloat32;  // log_probs, outputs and gradients: kFloat32 or kFloat64, accumulated in it (as CPU)
  int64_t max_input_length = 0, batch = 0, num_labels = 0;  // log_probs' sizes (T, N, C)
  int64_t lp_stride_t = 0, lp_stride_n = 0, lp_stride_c = 1;  // log_probs' strides in elements (any layout)
  // targets (int64): concatenated (1-D, item b starts after the target lengths of items < b) or padded (2-D,
  // item b starts at b * target_stride_n); consecutive labels of one item are target_stride apart.
  bool targets_concatenated = false;
  int64_t target_stride_n = 0, target_stride = 1;
  int64_t num_targets = 0;  // concatenated: the targets' length; padded: their size(1), the longest allowed target
  int64_t blank = 0;
  // Host arrays of `batch` lengths. They are copied when a call enqueues its launch: the caller may free them on
  // return (ATen's int[] lengths are host arrays).
  const int64_t* input_lengths = nullptr;
  const int64_t* target_lengths = nullptr;
  bool zero_infinity = false;  // backward only: items whose nll is +inf get a zero gradient
};

// log_alpha's last dimension, 2 * max(target_lengths) + 1 (log_alpha is batch x max_input_length x this).
int64_t ctc_alpha_width(const CtcArgs& a);

// Forward, one block per range of batch items. nll (batch) and log_alpha (batch x max_input_length x
// ctc_alpha_width, contiguous) are a.dtype. log_alpha holds CPU's values where CPU defines them (t < input length,
// s < 2 * target length + 1; row 0 is -inf past the first two states) and -inf everywhere else (CPU leaves those
// entries uninitialised). An item with input length 0 has nll 0 (empty target) or +inf; an impossible alignment
// (target too long for its input) gives +inf. kInvalidValue for a dtype other than float32/float64, a blank
// outside [0, num_labels), lengths that are negative, input lengths over max_input_length, target lengths over a
// padded num_targets, or concatenated lengths whose sum is not num_targets. KernelError (at the next sync) for a
// target outside [0, num_labels), which CPU does not check (it reads out of bounds).
npu_sim::Status ctc_loss(npu_sim::Stream stream, const CtcArgs& a, const void* log_probs, const int64_t* targets,
                         void* neg_log_likelihood, void* log_alpha);

// Backward: grad (max_input_length x batch x num_labels, contiguous, fully written) from grad_out (batch), the
// forward's nll (batch) and log_alpha (batch x max_input_length x alpha_width, contiguous; alpha_width at least
// ctc_alpha_width), all a.dtype. log_beta is computed inside (two rows per item); per item b and t < input
// length: grad = (exp(log_probs) - exp(logsumexp over the states s labelled c of alpha + beta, + nll - log_probs))
// * grad_out[b]; 0 for t >= input length, and for the whole item when zero_infinity and its nll is +inf.
// Errors as the forward's.
npu_sim::Status ctc_loss_backward(npu_sim::Stream stream, const CtcArgs& a, const void* grad_out,
                                  const void* log_probs, const int64_t* targets, const void* neg_log_likelihood,
                                  const void* log_alpha, int64_t alpha_width, void* grad);

}  // namespace npu_kernels
