// 2-D pooling kernels (torch-free): max (with argmax indices), average (count_include_pad, divisor
// override), adaptive average and adaptive max, forward and backward, over contiguous NCHW planes.
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

struct Pool2dArgs {
  DType dtype = DType::kFloat32;
  int64_t planes = 0;            // N * C
  int64_t in_h = 0, in_w = 0;    // input plane
  int64_t out_h = 0, out_w = 0;  // output plane
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;  // max pooling only
  bool count_include_pad = true;           // average pooling only
  int64_t divisor = 0;                     // average pooling: 0 = window size
  bool adaptive = false;                   // windows from the adaptive rule instead of kernel/stride/pad
};

// out[p, oh, ow] = max over the window; indices[p, oh, ow] = argmax as h * in_w + w (PyTorch's layout).
npu_sim::Status max_pool2d(npu_sim::Stream s, const Pool2dArgs& a, const void* in, void* out, int64_t* indices);
// grad_in (zeroed here) += grad_out at the recorded indices.
npu_sim::Status max_pool2d_backward(npu_sim::Stream s, const Pool2dArgs& a, const void* grad_out,
                                    const int64_t* indices, void* grad_in);
npu_sim::Status avg_pool2d(npu_sim::Stream s, const Pool2dArgs& a, const void* in, void* out);
npu_sim::Status avg_pool2d_backward(npu_sim::Stream s, const Pool2dArgs& a, const void* grad_out, void* grad_in);

}  // namespace npu_kernels
