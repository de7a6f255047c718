// Fractional max pooling 2-D and 3-D (torch-free), forward and backward, with the window placement, NaN and tie
// rules of ATen's CPU kernels (ATen/native/FractionalMaxPool{2,3}d.cpp, FractionalMaxPooling.h).
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// One set of arguments for both ranks: 2-D leaves the depth fields at 1 (a depth-1 window over a depth-1 plane).
// Layouts, all contiguous: input (planes, in_t, in_h, in_w); output and indices (planes, out_t, out_h, out_w);
// random_samples (planes, 2) for 2-D, (planes, 3) for 3-D, where planes = N * C (N = 1 for an unbatched input;
// CPU's samples may have more than N rows: only the first N * C planes are read). dtype: kFloat32, kFloat64,
// kFloat16, kBFloat16 (CPU dispatches all four); the samples have the input's dtype.
struct FractionalPoolArgs {
  DType dtype = DType::kFloat32;
  int64_t planes = 0;
  int64_t in_t = 1, in_h = 0, in_w = 0;
  int64_t out_t = 1, out_h = 0, out_w = 0;
  int64_t kernel_t = 1, kernel_h = 1, kernel_w = 1;
  bool three_d = false;  // 3 samples per plane (t, h, w) instead of 2 (w, h); names the launches *_pool3d
};

// Window starts of one dimension, as CPU's generate_intervals computes them in the dtype T (each operation of
// Half/BFloat16 rounded back to it, the integers converted to T first): alpha = T(in - k) / T(out - 1);
// start[i] = int((T(i) + sample) * alpha) - int(sample * alpha) for i < out - 1; start[out - 1] = in - k.
// Sample-to-dimension mapping: 2-D sample 0 -> W, 1 -> H; 3-D sample 0 -> T, 1 -> H, 2 -> W.

// out[p, t, h, w] = max of input[p] over the k_t x k_h x k_w window at the generated starts; indices[p, ...] = the
// flat index (t * in_h + h) * in_w + w of that element in the input plane. Scan in t, h, w order; an element wins
// when it is > the running max (from -inf) or NaN: ties keep the first, NaN the last NaN, an all -inf window index
// its first element. Sizes: all >= 0, kernel >= 1, out + kernel - 1 <= in per dimension (CPU's 2-D check; its 3-D
// check is the stricter out + kernel - 1 < in, left to the adapter). A window the samples place outside the input
// (a sample far outside [0, 1), a NaN sample, or bf16 rounding at large sizes: CPU's internal assert) is a
// KernelError. kInvalidValue for another dtype, bad sizes or null pointers. Nothing is launched for 0 outputs.
npu_sim::Status fractional_max_pool_forward(npu_sim::Stream stream, const FractionalPoolArgs& a, const void* input,
                                            const void* random_samples, void* output, int64_t* indices);

// grad_input (planes, in_t, in_h, in_w), contiguous, fully written: zero, then for each output of a plane in
// row-major order grad_input[p, indices[p, o]] += grad_output[p, o], each add rounded to the dtype (CPU's order, so
// a repeated index sums exactly as CPU does; one block owns whole planes, no atomics). grad_output and indices
// (planes, out_t, out_h, out_w), contiguous. An index outside [0, in_t * in_h * in_w) is a KernelError. kernel_*
// are not read. Errors otherwise as the forward's.
npu_sim::Status fractional_max_pool_backward(npu_sim::Stream stream, const FractionalPoolArgs& a,
                                             const void* grad_output, const int64_t* indices, void* grad_input);

}  // namespace npu_kernels
