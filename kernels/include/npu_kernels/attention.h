// The fused attention kernel (torch-free): softmax(scale * Q K^T + bias, causal) V per (batch, head),
// forward with its row log-sum-exp, and the backward that recomputes the probabilities from it
// (no L x S matrix is ever stored in device memory). float32 and float64.
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// A [batch, heads, rows, cols] operand by element strides; the column stride must be 1.
struct AttnOperand {
  const void* data = nullptr;
  int64_t batch_stride = 0, head_stride = 0, row_stride = 0;
};

// Q is [B, H, L, E], K [B, H, S, E], V [B, H, S, Ev]; O [B, H, L, Ev]; lse [B, H, L] contiguous, in the
// input dtype. `bias` (optional) is added to the scores, broadcast by 0 strides (bias_col_stride may be
// 0 too); `causal` masks key j > query i (top-left aligned, as torch's is_causal). Rows whose every
// score is -inf give 0 (as torch's math path) and lse = -inf.
struct AttentionArgs {
  DType dtype = DType::kFloat32;
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head_dim = 0, v_dim = 0;
  AttnOperand q, k, v, out;
  const void* bias = nullptr;
  int64_t bias_batch_stride = 0, bias_head_stride = 0, bias_row_stride = 0, bias_col_stride = 0;
  bool causal = false;
  double scale = 1.0;
  void* lse = nullptr;
};

// Gradients of the forward above: dQ, dK, dV (same layouts as Q, K, V; written, not accumulated) from
// dO, O and lse of the forward.
struct AttentionGradArgs {
  AttentionArgs fwd;  // fwd.out and fwd.lse are read
  AttnOperand dout, dq, dk, dv;
};

// Longest key sequence the kernels take for `dtype` on the stream's device (a row of scores must fit the
// Unified Buffer twice); -1 for dtypes they do not take (float16/bfloat16 go through the unfused path).
int64_t attention_max_kv_len(npu_sim::Stream stream, DType dtype);

npu_sim::Status attention_forward(npu_sim::Stream stream, const AttentionArgs& args);
npu_sim::Status attention_backward(npu_sim::Stream stream, const AttentionGradArgs& args);

}  // namespace npu_kernels
