// Convolution on the Cube unit (torch-free): conv2d forward, backward-input and backward-weight as
// tiled GEMMs over implicit im2col panels, plus the bias gradient. Transposed convolution is the
// backward-input path; conv1d is conv2d with H = 1 (the adapter arranges both).
#pragma once

#include <cstddef>
#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// Geometry and operands of one conv2d in the *forward* sense: x (N, C, H, W) convolved with
// w (O, C / groups, KH, KW) gives y (N, O, OH, OW). Strides are element strides of each NCHW / OCHW
// dimension, so any layout works. All tensors share `dtype` and live on the stream's device.
struct Conv2dArgs {
  DType dtype = DType::kFloat32;
  int64_t batch = 0, in_channels = 0, in_h = 0, in_w = 0;
  int64_t out_channels = 0, out_h = 0, out_w = 0, kernel_h = 0, kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1, groups = 1;
  void* x = nullptr;  // forward: input (read); backward_input: grad_input (written)
  int64_t x_strides[4] = {};
  void* w = nullptr;  // forward/backward_input: weight (read); backward_weight: grad_weight (written)
  int64_t w_strides[4] = {};
  void* y = nullptr;  // forward: output (written); backward_*: grad_output (read)
  int64_t y_strides[4] = {};
  // forward: added to y per output channel; backward_input: added to x per input channel (this is the
  // bias of a transposed convolution). May be null.
  const void* bias = nullptr;
  int64_t bias_stride = 1;
  // The pass adds its result into the tensor it writes (forward: y, backward_input: x, backward_weight: w)
  // instead of overwriting it: 3-D convolution runs as such sums of 2-D passes (conv3d_slices.cpp).
  bool accumulate = false;
};

// Checks sizes, dtype and geometry; kInvalidValue with a reason in *why (if given) otherwise.
npu_sim::Status conv2d_validate(const Conv2dArgs& a, const char** why = nullptr);

// y = conv(x, w) (+ bias).
npu_sim::Status conv2d_forward(npu_sim::Stream stream, const Conv2dArgs& a);

// x = conv_transpose(y, w) (+ bias): GEMM into a column buffer, then col2im. `scratch` is device memory
// of at least conv2d_backward_input_scratch_bytes(a, 1) bytes; more lets more images go per pass.
std::size_t conv2d_backward_input_scratch_bytes(const Conv2dArgs& a, int64_t images);
npu_sim::Status conv2d_backward_input(npu_sim::Stream stream, const Conv2dArgs& a, void* scratch,
                                      std::size_t scratch_bytes);

// w = grad_weight from x (input) and y (grad_output).
npu_sim::Status conv2d_backward_weight(npu_sim::Stream stream, const Conv2dArgs& a);

// grad_bias[o] = sum over n, oh, ow of y[n, o, oh, ow].
npu_sim::Status conv2d_backward_bias(npu_sim::Stream stream, const Conv2dArgs& a, void* grad_bias,
                                     int64_t grad_bias_stride);


// 3-D convolution: x (N, C, D, H, W) * w (O, C / groups, KD, KH, KW) -> y (N, O, OD, OH, OW), spatial
// parameters outermost first, any element strides. oneDNN serves float32 and bfloat16. What it does not serve
// in float32 or float64 (float64 always; float32 without oneDNN, under NPU_SIM_CONV_DNNL=0, or in a geometry
// oneDNN has only its reference kernel for) runs as sums of the tiled 2-D passes over depth slices
// (conv3d_slices.cpp). The passes return kNotSupported, enqueuing nothing, for float16 and bfloat16 that
// oneDNN does not serve; the caller then runs the op elsewhere (the adapter convolves in float32).
struct Conv3dArgs {
  DType dtype = DType::kFloat32;
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  int64_t in[3] = {}, out[3] = {}, kernel[3] = {}, stride[3] = {1, 1, 1}, pad[3] = {}, dilation[3] = {1, 1, 1};
  void* x = nullptr;  // as in Conv2dArgs: input, or grad_input for backward_input
  int64_t x_strides[5] = {};
  void* w = nullptr;  // weight, or grad_weight for backward_weight
  int64_t w_strides[5] = {};
  void* y = nullptr;  // output, or grad_output for the backward passes
  int64_t y_strides[5] = {};
  const void* bias = nullptr;  // forward: per output channel; backward_input: per input channel
  int64_t bias_stride = 1;
  // backward_input on the 2-D slices: device memory of conv3d_backward_input_scratch_bytes(a) bytes.
  void* scratch = nullptr;
  std::size_t scratch_bytes = 0;
};
npu_sim::Status conv3d_validate(const Conv3dArgs& a, const char** why = nullptr);
// Scratch conv3d_backward_input needs for `a` (0 when oneDNN serves it or the passes need none).
std::size_t conv3d_backward_input_scratch_bytes(const Conv3dArgs& a);
npu_sim::Status conv3d_forward(npu_sim::Stream stream, const Conv3dArgs& a);
npu_sim::Status conv3d_backward_input(npu_sim::Stream stream, const Conv3dArgs& a);
npu_sim::Status conv3d_backward_weight(npu_sim::Stream stream, const Conv3dArgs& a);

}  // namespace npu_kernels
