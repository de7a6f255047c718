// Private to kernels/: convolution passes on oneDNN (src/dnnl_conv.cpp): conv.cpp tries them before its tiled
// conv2d path; conv3d tries them before the 2-D slices of conv3d_slices.cpp.
#pragma once

#include "npu_kernels/conv.h"

namespace npu_kernels {
namespace detail {

enum class ConvPass { kForward = 0, kBackwardInput = 1, kBackwardWeight = 2 };

// The forward-sense geometry of a 2-D or 3-D convolution (`rank` spatial dims, outermost first).
struct ConvNd {
  DType dtype = DType::kFloat32;
  int rank = 2;
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  int64_t in[3] = {}, out[3] = {}, kernel[3] = {}, stride[3] = {}, pad[3] = {}, dilation[3] = {};
  void *x = nullptr, *w = nullptr, *y = nullptr;
  int64_t x_strides[5] = {}, w_strides[5] = {}, y_strides[5] = {};
  const void* bias = nullptr;
  int64_t bias_stride = 1;
};
ConvNd conv_nd(const Conv2dArgs& a);
ConvNd conv_nd(const Conv3dArgs& a);

// Enqueues the pass on oneDNN and stores the launch status in *status if oneDNN takes it (float32, float16 or
// bfloat16, a JIT implementation for the geometry, NPU_SIM_CONV_DNNL not 0); false, enqueuing nothing,
// otherwise. `a` must have passed conv2d_validate / conv3d_validate.
bool dnnl_conv(npu_sim::Stream stream, const ConvNd& a, ConvPass pass, npu_sim::Status* status);

// conv3d_slices.cpp: a 3-D pass oneDNN does not serve, in float64, as sums of the tiled 2-D passes over depth
// slices (kNotSupported for other dtypes, nothing enqueued); backward-input needs a.scratch of
// conv3d_slices_scratch_bytes(a) bytes (0 for the dtypes it does not serve).
std::size_t conv3d_slices_scratch_bytes(const Conv3dArgs& a);
npu_sim::Status conv3d_by_slices(npu_sim::Stream stream, const Conv3dArgs& a, ConvPass pass);

}  // namespace detail
}  // namespace npu_kernels
