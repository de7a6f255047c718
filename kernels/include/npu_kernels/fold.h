// Sliding-window extraction (torch-free): im2col (unfold) gathers every kernel-sized patch of each image
// plane into columns, col2im (fold) sums columns back into planes; each is the other's adjoint.
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// Planes are contiguous (h, w) images, N * C of them; columns are contiguous (planes * kh * kw, L) with
// L = out_h * out_w window positions, row (p * kh + i) * kw + j holding kernel tap (i, j) of plane p.
struct FoldArgs {
  DType dtype = DType::kFloat32;
  int64_t planes = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, dilation_h = 1, dilation_w = 1, pad_h = 0, pad_w = 0, stride_h = 1,
          stride_w = 1;
};

// Any dtype up to 8 bytes (an element copy; padding taps are 0). kInvalidValue otherwise.
npu_sim::Status im2col(npu_sim::Stream s, const FoldArgs& a, const void* image, void* columns);
// Floating dtypes; overlapping taps are summed in float (double for float64).
npu_sim::Status col2im(npu_sim::Stream s, const FoldArgs& a, const void* columns, void* image);

}  // namespace npu_kernels
