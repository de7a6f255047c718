// Separable resampling of 1-D to 3-D planes (torch-free): each output element reads K taps per axis picked by a
// per-axis table (K = 1 for nearest and padding, 2 for linear, 4 for bicubic). One engine serves nearest /
// nearest-exact / (bi/tri)linear / bicubic interpolation and reflect / replicate padding, lower ranks being the
// D = 1 and H = 1 cases, forward and backward. Antialiased 2-D modes and uint8 bilinear / bicubic use windows of
// input positions per output instead, in separable passes (resample_aa.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// The *AA modes are PIL's antialiased filters (ATen's _upsample_{bilinear,bicubic,lanczos}2d_aa): triangle,
// Keys cubic with A = -0.5, Lanczos-3, widened by the scale when downsampling; 2-D only.
enum class ResampleMode : int8_t {
  kNearest, kNearestExact, kLinear, kReflect, kReplicate, kCubic, kLinearAA, kCubicAA, kLanczosAA
};
// Whether (mode, dtype) runs on windows of input positions: the antialiased modes, and uint8 bilinear / bicubic.
bool is_window_mode(ResampleMode mode, DType dtype);

struct ResampleAxis {
  int64_t in = 1, out = 1;
  double scale = 0;            // interpolation: the user's scale factor for this axis, <= 0 = none (in/out)
  bool align_corners = false;  // linear and cubic
  int64_t pad_before = 0;      // padding modes: left / top padding (negative crops)
};

struct ResampleArgs {
  DType dtype = DType::kFloat32;
  ResampleMode mode = ResampleMode::kNearest;
  int64_t planes = 0;  // N * C; planes are contiguous (d, h, w) volumes
  ResampleAxis d, h, w;  // d: in = out = 1 below 3-D (not cubic or the window modes)
};

const char* resample_name(ResampleMode mode, bool backward);

// out[p, od, oh, ow] from in[p, ...]. Nearest and padding modes copy elements of any dtype up to 8 bytes (2-D);
// linear and cubic need a floating dtype (fp16/bf16 computed in float), PyTorch's tap positions and weights
// (cubic: A = -0.75, taps clamped to the border). kInvalidValue for an unsupported dtype.
// Antialiased modes take floating dtypes and uint8; uint8 bilinear / bicubic (with or without antialiasing) run
// CPU PyTorch's integer arithmetic (int16 weights, int32 sums, rounded and clamped), so they match it exactly.
// The window modes write an intermediate (the w pass; float for 16-bit dtypes, rounded once at the end as CUDA
// does) when both axes change size: `scratch`, of at least resample_scratch_bytes(a) bytes of device memory (0
// otherwise).
std::size_t resample_scratch_bytes(const ResampleArgs& a);
npu_sim::Status resample(npu_sim::Stream s, const ResampleArgs& a, const void* in, void* out, void* scratch = nullptr);
// grad_in (fully written) = the adjoint of resample applied to grad_out; floating dtypes only,
// accumulated per plane in float (double for float64).
npu_sim::Status resample_backward(npu_sim::Stream s, const ResampleArgs& a, const void* grad_out, void* grad_in);

}  // namespace npu_kernels
