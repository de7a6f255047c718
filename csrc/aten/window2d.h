// The 2-D sliding window of the fold ops (im2col / col2im), as the kernels' argument structs hold it (*_h / *_w).
#pragma once

#include <c10/util/ArrayRef.h>

namespace torch_npu_sim {

// Copies kernel size, stride, padding and dilation ({h, w} each, already checked) into `a`'s fields.
template <class Args>
void set_window2d(Args& a, c10::IntArrayRef k, c10::IntArrayRef s, c10::IntArrayRef p, c10::IntArrayRef d) {
  a.kernel_h = k[0];
  a.kernel_w = k[1];
  a.stride_h = s[0];
  a.stride_w = s[1];
  a.pad_h = p[0];
  a.pad_w = p[1];
  a.dilation_h = d[0];
  a.dilation_w = d[1];
}

}  // namespace torch_npu_sim
