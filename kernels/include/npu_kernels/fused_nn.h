// torch_npu's fused vector kernels (torch-free): RMSNorm (optionally after a residual add), rotary
// position embedding, SwiGLU, fast GELU and the scaled masked softmax, forward and backward. float32,
// float16 and bfloat16 in and out; 16-bit data is widened to fp32 in registers, never through fp32 copies
// in device memory. Every launch records its GM bytes and Vector FLOPs (launch records).
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// RMSNorm over the rows of a contiguous (rows, n) tensor:
//   s = x (+ x2);  rstd = 1 / sqrt(mean(s^2) + eps);  y = s * rstd * gamma
// x, x2, gamma, y and x_sum have `dtype`; rstd is float32 (rows). With x2 (npu_add_rms_norm) the sum s is
// written to x_sum in `dtype` and the statistics are taken from that rounded sum, as torch_npu does.
// rstd may be null (not written); x_sum is not read or written without x2. rows or n == 0 writes nothing.
struct RmsNormArgs {
  DType dtype = DType::kFloat32;
  int64_t rows = 0, n = 0;
  double eps = 1e-6;
  const void* x = nullptr;
  const void* x2 = nullptr;  // residual; null for npu_rms_norm
  const void* gamma = nullptr;  // (n)
  void* y = nullptr;
  float* rstd = nullptr;  // (rows)
  void* x_sum = nullptr;  // (rows, n); required with x2
};
npu_sim::Status rms_norm(npu_sim::Stream stream, const RmsNormArgs& args);

// Its backward, from the forward's input x (the sum s for add_rms_norm) and rstd:
//   g = dy * gamma;  dx = rstd * (g - s * rstd^2 * mean(g * s))  (written, `dtype`; may be null)
//   dgamma = sum over rows of dy * s * rstd  (fp32 accumulation, written in `dtype`; may be null)
// gamma is read only for dx. dgamma is deterministic: rows are cut into at most 64 fixed chunks, each summed
// in row order into its own fp32 partial, and the partials are added in chunk order (a second launch,
// "rms_norm_backward_dgamma"); the result does not depend on the number of core threads.
struct RmsNormGradArgs {
  DType dtype = DType::kFloat32;
  int64_t rows = 0, n = 0;
  const void* dy = nullptr;
  const void* x = nullptr;
  const float* rstd = nullptr;
  const void* gamma = nullptr;
  void* dx = nullptr;
  void* dgamma = nullptr;
};
npu_sim::Status rms_norm_backward(npu_sim::Stream stream, const RmsNormGradArgs& args);

// Rotary position embedding, npu_rotary_mul: out = x * r1 + rotate(x) * r2 over rows of d elements.
// kHalf: rotate(x) = cat(-x[d/2:], x[:d/2]); kInterleave: rotate(x)[2i] = -x[2i+1], rotate(x)[2i+1] = x[2i].
// x and out are contiguous [d0, d1, d2, d]; r1 and r2 are read at r[i0 * s0 + i1 * s1 + i2 * s2 + j]
// (element strides, 0 where broadcast; unit stride along d). d is even (odd: kInvalidValue). out may be x.
enum class RotaryMode { kHalf, kInterleave };
struct RotaryArgs {
  DType dtype = DType::kFloat32;
  RotaryMode mode = RotaryMode::kHalf;
  int64_t d0 = 1, d1 = 1, d2 = 1, d = 0;
  const void* x = nullptr;
  const void* r1 = nullptr;
  const void* r2 = nullptr;
  int64_t r1_strides[3] = {0, 0, 0};
  int64_t r2_strides[3] = {0, 0, 0};
  void* out = nullptr;
};
npu_sim::Status rotary_mul(npu_sim::Stream stream, const RotaryArgs& args);
// dx = dy * r1 + rotate^T(dy * r2), where rotate^T is rotate's transpose (kHalf: cat(z[d/2:], -z[:d/2]));
// args.x is read as dy, args.out is written as dx. The gradients of r1 and r2 are left to the caller
// (they are usually constant tables).
npu_sim::Status rotary_mul_backward(npu_sim::Stream stream, const RotaryArgs& args);

// SwiGLU, npu_swiglu: x is contiguous (outer, 2, inner) (the split dim in the middle); a = x[:, 0],
// b = x[:, 1]; out (outer, inner) = silu(a) * b.
struct SwiGluArgs {
  DType dtype = DType::kFloat32;
  int64_t outer = 0, inner = 0;
  const void* x = nullptr;
  void* out = nullptr;
  // backward: dy (outer, inner) -> dx (outer, 2, inner): da = dy * b * silu'(a), db = dy * silu(a)
  const void* dy = nullptr;
  void* dx = nullptr;
};
npu_sim::Status swiglu(npu_sim::Stream stream, const SwiGluArgs& args);
npu_sim::Status swiglu_backward(npu_sim::Stream stream, const SwiGluArgs& args);

// npu_fast_gelu over n contiguous elements: y = x / (1 + exp(-1.702 |x|)) * exp(0.851 (x - |x|))
// (= x * sigmoid(1.702 x)); backward dx = dy * d/dx of the same.
struct FastGeluArgs {
  DType dtype = DType::kFloat32;
  int64_t n = 0;
  const void* x = nullptr;
  void* y = nullptr;
  const void* dy = nullptr;  // backward
  void* dx = nullptr;        // backward
};
npu_sim::Status fast_gelu(npu_sim::Stream stream, const FastGeluArgs& args);
npu_sim::Status fast_gelu_backward(npu_sim::Stream stream, const FastGeluArgs& args);

// npu_scaled_masked_softmax over the last dim of a contiguous [b, h, s, n] x, with torch_npu's (Megatron's)
// masking: y = softmax(masked_fill(x * scale, mask, -10000)), fp32 math. A masked position gives ~0, a fully
// masked row the uniform 1/n. mask is bool (true = masked out), read at mask[ib*ms0 + ih*ms1 + is*ms2 + j]
// (element strides, 0 where broadcast; unit stride along n); with fixed_triu_mask it is null and j > is is
// masked (the upper triangle). y has `dtype`. A null mask without fixed_triu_mask masks nothing; a mask with
// fixed_triu_mask is kInvalidValue. The backward reads scale, the mask (or fixed_triu_mask), y and dy, not x.
struct ScaledMaskedSoftmaxArgs {
  DType dtype = DType::kFloat32;
  int64_t b = 1, h = 1, s = 1, n = 0;
  double scale = 1.0;
  const void* x = nullptr;
  const bool* mask = nullptr;
  int64_t mask_strides[3] = {0, 0, 0};
  bool fixed_triu_mask = false;
  void* y = nullptr;
  // backward: dx = scale * y * (dy - sum_j(dy * y)), 0 where masked (the fill's gradient), from dy and y
  const void* dy = nullptr;
  void* dx = nullptr;
};
npu_sim::Status scaled_masked_softmax(npu_sim::Stream stream, const ScaledMaskedSoftmaxArgs& args);
npu_sim::Status scaled_masked_softmax_backward(npu_sim::Stream stream, const ScaledMaskedSoftmaxArgs& args);

}  // namespace npu_kernels
