// Registration of grid_sampler_{2,3}d and their backward ops (F.grid_sample): ATen's own checks
// (ATen/native/GridSamplerUtils.h), contiguous operands, then kernels/src/grid_sample.cpp on the stream.
#include <ATen/core/Tensor.h>
#include <ATen/native/GridSamplerUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/DeviceGuard.h>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "fallback/dtype_fallback.h"
#include "npu_kernels/grid_sample.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using at::Tensor;

npu_kernels::GridSampleArgs grid_args(const Tensor& input, const Tensor& grid, int64_t interpolation,
                                      int64_t padding, bool align_corners, int rank) {
  const char* op = rank == 3 ? "grid_sampler_3d" : "grid_sampler_2d";
  at::native::check_grid_sampler_common(input, grid);
  if (rank == 3) at::native::check_grid_sampler_3d(input, grid, interpolation);
  else at::native::check_grid_sampler_2d(input, grid);
  TORCH_CHECK(padding >= 0 && padding <= 2, op, ": padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got ",
              padding);
  TORCH_CHECK(interpolation >= 0 && interpolation <= 2, op, ": interpolation_mode must be 0 (bilinear), 1 (nearest) "
              "or 2 (bicubic), got ", interpolation);
  TORCH_CHECK(is_npu(input), op, ": expected npu tensors, got input on ", input.device());
  // CPU's and CUDA's kernels read the grid in the input's scalar type, and say so in these words
  TORCH_CHECK(grid.scalar_type() == input.scalar_type(), "expected scalar type ", input.scalar_type(), " but found ",
              grid.scalar_type());
  if (!at::isFloatingType(input.scalar_type())) {
    throw_no_kernel_for_dtype(c10::str(op, ": no npu kernel for dtype ", input.scalar_type()));
  }
  npu_kernels::GridSampleArgs a;
  a.dtype = kernel_dtype(input.scalar_type(), op);
  a.three_d = rank == 3;
  a.n = input.size(0);
  a.c = input.size(1);
  a.in_d = rank == 3 ? input.size(2) : 1;
  a.in_h = input.size(-2);
  a.in_w = input.size(-1);
  a.out_d = rank == 3 ? grid.size(1) : 1;
  a.out_h = grid.size(-3);
  a.out_w = grid.size(-2);
  a.interpolation = static_cast<npu_kernels::GridInterpolation>(interpolation);
  a.padding = static_cast<npu_kernels::GridPadding>(padding);
  a.align_corners = align_corners;
  return a;
}

std::vector<int64_t> output_sizes(const Tensor& input, const Tensor& grid, int rank) {
  std::vector<int64_t> sizes{input.size(0), input.size(1)};
  for (int k = 1; k <= rank; ++k) sizes.push_back(grid.size(k));
  return sizes;
}

Tensor grid_sampler(const Tensor& input, const Tensor& grid, int64_t interpolation, int64_t padding,
                    bool align_corners, int rank) {
  c10::DeviceGuard guard(input.device());
  const auto a = grid_args(input, grid, interpolation, padding, align_corners, rank);
  Tensor out = at::empty(output_sizes(input, grid, rank), input.options());
  if (out.numel() > 0) {
    const Tensor x = input.contiguous(), g = grid.contiguous();
    NPU_CHECK(npu_kernels::grid_sample(stream_of(input), a, x.const_data_ptr(), g.const_data_ptr(), out.data_ptr()));
  }
  return out;
}

// grad_input only when output_mask[0] (else undefined), grad_grid always (CPU's contract).
std::tuple<Tensor, Tensor> grid_sampler_backward(const Tensor& grad_output, const Tensor& input, const Tensor& grid,
                                                 int64_t interpolation, int64_t padding, bool align_corners,
                                                 std::array<bool, 2> output_mask, int rank) {
  c10::DeviceGuard guard(input.device());
  const auto a = grid_args(input, grid, interpolation, padding, align_corners, rank);
  const auto sizes = output_sizes(input, grid, rank);
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(sizes), rank == 3 ? "grid_sampler_3d" : "grid_sampler_2d",
              "_backward: grad_output has shape ", grad_output.sizes(), ", expected ", at::IntArrayRef(sizes));
  Tensor grad_input = output_mask[0] ? at::empty(input.sizes(), input.options()) : Tensor();
  Tensor grad_grid = at::empty(grid.sizes(), grid.options());
  const Tensor go = grad_output.contiguous().to(input.scalar_type()), x = input.contiguous(), g = grid.contiguous();
  if (grid.numel() > 0 || (grad_input.defined() && grad_input.numel() > 0)) {
    NPU_CHECK(npu_kernels::grid_sample_backward(stream_of(input), a, go.const_data_ptr(), x.const_data_ptr(),
                                                g.const_data_ptr(), grad_input.defined() ? grad_input.data_ptr() : nullptr,
                                                grad_grid.data_ptr()));
  }
  return {grad_input, grad_grid};
}

}  // namespace

Tensor NF::grid_sampler_2d(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode,
                           bool align_corners) {
  return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 2);
}

Tensor NF::grid_sampler_3d(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode,
                           bool align_corners) {
  return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 3);
}

std::tuple<Tensor, Tensor> NF::grid_sampler_2d_backward(const Tensor& grad_output, const Tensor& input,
                                                        const Tensor& grid, int64_t interpolation_mode,
                                                        int64_t padding_mode, bool align_corners,
                                                        std::array<bool, 2> output_mask) {
  return grid_sampler_backward(grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask, 2);
}

std::tuple<Tensor, Tensor> NF::grid_sampler_3d_backward(const Tensor& grad_output, const Tensor& input,
                                                        const Tensor& grid, int64_t interpolation_mode,
                                                        int64_t padding_mode, bool align_corners,
                                                        std::array<bool, 2> output_mask) {
  return grid_sampler_backward(grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask, 3);
}

}  // namespace torch_npu_sim
