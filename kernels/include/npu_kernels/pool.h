// 2-D and 3-D pooling kernels (torch-free): max (with argmax indices), average (count_include_pad, divisor
// override), adaptive average and adaptive max, forward and backward, and max unpooling, over contiguous
// N C (D) H W planes.
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// One set of arguments for both ranks: 2-D pooling leaves the depth fields at their defaults (a depth-1 window
// over a depth-1 plane), so the same kernels serve max_pool2d and max_pool3d.
struct Pool2dArgs {
  DType dtype = DType::kFloat32;
  int64_t planes = 0;            // N * C
  int64_t in_h = 0, in_w = 0;    // input plane
  int64_t out_h = 0, out_w = 0;  // output plane
  int64_t in_d = 1, out_d = 1, kernel_d = 1, stride_d = 1, pad_d = 0, dilation_d = 1;  // depth (3-D)
  bool three_d = false;          // names the launches *_pool3d
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;  // max pooling only
  bool count_include_pad = true;           // average pooling only
  int64_t divisor = 0;                     // average pooling: 0 = window size
  bool adaptive = false;                   // windows from the adaptive rule instead of kernel/stride/pad
};

// out[p, (od,) oh, ow] = max over the window; indices = argmax as (d * in_h +) h * in_w + w (PyTorch's layout).
// Any floating or integer dtype (a comparison); the other pooling kernels take floating dtypes.
npu_sim::Status max_pool2d(npu_sim::Stream s, const Pool2dArgs& a, const void* in, void* out, int64_t* indices);
// grad_in (zeroed here) += grad_out at the recorded indices.
npu_sim::Status max_pool2d_backward(npu_sim::Stream s, const Pool2dArgs& a, const void* grad_out,
                                    const int64_t* indices, void* grad_in);
// max_unpool{2,3}d, the pooling geometry read backwards: out (planes of in_d x in_h x in_w, zeroed here) gets
// in[p, o] (planes of out_d x out_h x out_w) at indices[p, o]; an index outside the plane is a kernel error.
npu_sim::Status max_unpool(npu_sim::Stream s, const Pool2dArgs& a, const void* in, const int64_t* indices,
                           void* out);
npu_sim::Status avg_pool2d(npu_sim::Stream s, const Pool2dArgs& a, const void* in, void* out);
npu_sim::Status avg_pool2d_backward(npu_sim::Stream s, const Pool2dArgs& a, const void* grad_out, void* grad_in);

using PoolArgs = Pool2dArgs;

}  // namespace npu_kernels
