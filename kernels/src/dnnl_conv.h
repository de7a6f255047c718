// Private to kernels/: convolution passes on oneDNN (src/dnnl_conv.cpp): conv.cpp tries them before its tiled
// conv2d path; conv3d has only this path.
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

}  // namespace detail
}  // namespace npu_kernels
