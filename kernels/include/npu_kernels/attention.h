// The fused attention kernel (torch-free): softmax(scale * Q K^T + bias, causal), optional dropout, times V
// per (batch, head), forward with its row log-sum-exp, and the backward that recomputes the probabilities
// from it (no L x S matrix is ever stored in device memory). float32, float64, float16 and bfloat16.
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

// Q is [B, H, L, E], K [B, H, S, E], V [B, H, S, Ev]; O [B, H, L, Ev]; lse [B, H, L] contiguous. All of
// Q, K, V, O, bias (and the gradients below) are in `dtype`. lse is in the input dtype for float32 and
// float64 and float32 for float16 / bfloat16 (as FlashAttention's logsumexp). 16-bit operands are widened
// to float32 in registers: scores, softmax and the products accumulate in float32 and each output is
// rounded once. `bias` (optional) is added to the scores, broadcast by 0 strides (bias_col_stride may be
// 0 too); `causal` masks key j > query i (top-left aligned, as torch's is_causal). Rows whose every
// score is -inf give 0 (as torch's math path) and lse = -inf.
//
// Dropout (keep_prob < 1): the output is softmax -> dropout -> times V, as torch's SDPA with dropout_p =
// 1 - keep_prob: probability p[b, h, i, j] is kept iff a counter-based hash of (seed, offset, its flat
// index ((b * H + h) * L + i) * S + j) falls under keep_prob (see attention_dropout_mask), kept ones are
// scaled by 1 / keep_prob. lse is that of the undropped softmax. The mask depends on nothing else (not
// the tiling, the thread count or the dtype), so the backward regenerates it from the same seed and
// offset. keep_prob must be in (0, 1].
struct AttentionArgs {
  DType dtype = DType::kFloat32;
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head_dim = 0, v_dim = 0;
  AttnOperand q, k, v, out;
  const void* bias = nullptr;
  int64_t bias_batch_stride = 0, bias_head_stride = 0, bias_row_stride = 0, bias_col_stride = 0;
  bool causal = false;
  double scale = 1.0;
  void* lse = nullptr;
  double keep_prob = 1.0;
  uint64_t seed = 0, offset = 0;
};

// Gradients of the forward above: dQ, dK, dV (same layouts as Q, K, V; written, not accumulated) from
// dO, O and lse of the forward (and its dropout arguments).
struct AttentionGradArgs {
  AttentionArgs fwd;  // fwd.out and fwd.lse are read
  AttnOperand dout, dq, dk, dv;
};

// Longest key sequence the kernels take for `dtype` and head dims on the stream's device (a row of
// scores must fit the Unified Buffer twice; for float16/bfloat16 next to the query row widened to float32
// and a chunk of widened key rows, so the limit shrinks with head_dim and v_dim). -1 for dtypes they do
// not take. The two-argument form assumes head dims up to 256 (float32/float64 do not depend on them).
int64_t attention_max_kv_len(npu_sim::Stream stream, DType dtype, int64_t head_dim, int64_t v_dim);
int64_t attention_max_kv_len(npu_sim::Stream stream, DType dtype);

// What runs the bfloat16 forward's two products on this machine: "amx_bf16" (the AMX tile kernels, any length),
// oneDNN's bf16 matmul name (from 128 keys; shorter ones widened), or "none" (widened to float32).
const char* attention_bf16_kernel_name();

// kInvalidValue for a dtype the kernels do not take, negative sizes, kv_len above the limit, keep_prob
// outside (0, 1] (and, for the backward, no lse).
npu_sim::Status attention_forward(npu_sim::Stream stream, const AttentionArgs& args);
npu_sim::Status attention_backward(npu_sim::Stream stream, const AttentionGradArgs& args);

// Writes the dropout keep mask of `args` (batch, heads, q_len, kv_len, keep_prob, seed, offset; the
// operands are not read) to `mask`, [B, H, L, S] contiguous device memory: 1 where the forward keeps the
// probability, 0 where it drops it (all 1 for keep_prob == 1). The causal and bias masks are not applied.
// Element n = ((b * H + h) * L + i) * S + j is kept iff (splitmix64(key + (n + 1) * 0x9e3779b97f4a7c15) >> 32)
// < floor(keep_prob * 2^32), with splitmix64 the SplitMix64 output mix and key = splitmix64(seed ^
// splitmix64(offset + 0x9e3779b97f4a7c15)). kInvalidValue for keep_prob outside (0, 1] or negative sizes.
npu_sim::Status attention_dropout_mask(npu_sim::Stream stream, const AttentionArgs& args, uint8_t* mask);

}  // namespace npu_kernels
