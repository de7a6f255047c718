// grid_sample (torch-free): output[n, c, p] interpolates input[n, c] at the normalized coordinates grid[n, p]
// (bilinear / nearest / bicubic in 2-D, trilinear / nearest in 3-D; zeros / border / reflection padding),
// forward and backward, with PyTorch's coordinate conventions (ATen/native/GridSampler.h).
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

enum class GridInterpolation : int8_t { kBilinear = 0, kNearest = 1, kBicubic = 2 };  // PyTorch's enum values
enum class GridPadding : int8_t { kZeros = 0, kBorder = 1, kReflection = 2 };

struct GridSampleArgs {
  DType dtype = DType::kFloat32;  // input, grid, output and gradients
  int64_t n = 0, c = 0;
  int64_t in_d = 1, in_h = 0, in_w = 0;     // input's spatial sizes (depth 1 in 2-D)
  int64_t out_d = 1, out_h = 0, out_w = 0;  // grid's spatial sizes
  bool three_d = false;                     // grid's last dim is 3 (x, y, z), else 2 (x, y)
  GridInterpolation interpolation = GridInterpolation::kBilinear;
  GridPadding padding = GridPadding::kZeros;
  bool align_corners = false;
};

// Contiguous input (N, C, [D,] H, W), grid (N, [Do,] Ho, Wo, 2 | 3), out (N, C, [Do,] Ho, Wo).
// kInvalidValue for a non-floating dtype or bicubic in 3-D.
npu_sim::Status grid_sample(npu_sim::Stream s, const GridSampleArgs& a, const void* input, const void* grid, void* out);
// grad_grid (grid's shape) always; grad_input (input's shape, fully written) unless null. Accumulated in float
// (double for float64) per input plane.
npu_sim::Status grid_sample_backward(npu_sim::Stream s, const GridSampleArgs& a, const void* grad_out,
                                     const void* input, const void* grid, void* grad_input, void* grad_grid);

}  // namespace npu_kernels
