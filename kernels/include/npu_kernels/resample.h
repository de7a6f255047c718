// Separable 2-D resampling (torch-free): each output pixel reads at most two input rows and two input
// columns picked per axis by a table. One engine serves nearest / nearest-exact / (bi)linear
// interpolation and reflect / replicate padding, 1-D ops being the H = 1 case, forward and backward.
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

enum class ResampleMode : int8_t { kNearest, kNearestExact, kLinear, kReflect, kReplicate };

struct ResampleAxis {
  int64_t in = 1, out = 1;
  double scale = 0;            // interpolation: the user's scale factor for this axis, <= 0 = none (in/out)
  bool align_corners = false;  // linear only
  int64_t pad_before = 0;      // padding modes: left / top padding (negative crops)
};

struct ResampleArgs {
  DType dtype = DType::kFloat32;
  ResampleMode mode = ResampleMode::kNearest;
  int64_t planes = 0;  // N * C; planes are contiguous (h, w) images
  ResampleAxis h, w;
};

const char* resample_name(ResampleMode mode, bool backward);

// out[p, oh, ow] from in[p, ...]. Nearest and padding modes copy elements of any dtype up to 8 bytes;
// linear needs a floating dtype (fp16/bf16 computed in float). kInvalidValue for an unsupported dtype.
npu_sim::Status resample2d(npu_sim::Stream s, const ResampleArgs& a, const void* in, void* out);
// grad_in (fully written) = the adjoint of resample2d applied to grad_out; floating dtypes only,
// accumulated per plane in float (double for float64).
npu_sim::Status resample2d_backward(npu_sim::Stream s, const ResampleArgs& a, const void* grad_out, void* grad_in);

}  // namespace npu_kernels
