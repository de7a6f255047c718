// Private to kernels/: conv2d passes on oneDNN (src/dnnl_conv.cpp), tried by conv.cpp before its tiled path.
#pragma once

#include "npu_kernels/conv.h"

namespace npu_kernels {
namespace detail {

enum class ConvPass { kForward, kBackwardInput, kBackwardWeight };

// Enqueues the pass on oneDNN and stores the launch status in *status if oneDNN takes it (float32 or
// bfloat16, a JIT implementation for the geometry, NPU_SIM_CONV_DNNL not 0); false, enqueuing nothing,
// otherwise. `a` must have passed conv2d_validate.
bool dnnl_conv2d(npu_sim::Stream stream, const Conv2dArgs& a, ConvPass pass, npu_sim::Status* status);

}  // namespace detail
}  // namespace npu_kernels
