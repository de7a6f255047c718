// Internal to the resampling kernels: the window engine (resample_aa.cpp) that resample.cpp hands the
// antialiased modes and uint8 bilinear / bicubic to.
#pragma once

#include <cstddef>

#include "npu_kernels/resample.h"

namespace npu_kernels::detail {

std::size_t window_scratch_bytes(const ResampleArgs& a);
npu_sim::Status window_resample(npu_sim::Stream s, const ResampleArgs& a, const void* in, void* out, void* scratch);
npu_sim::Status window_resample_backward(npu_sim::Stream s, const ResampleArgs& a, const void* grad_out,
                                         void* grad_in);

}  // namespace npu_kernels::detail
