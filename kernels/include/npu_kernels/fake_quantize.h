// Fake quantization for quantization-aware training (torch-free): values rounded to the affine grid and back,
// with the mask of those inside [quant_min, quant_max] that the backward passes the gradient through. CPU
// PyTorch's arithmetic per variant (ATen's fake_quantize_*_cachemask kernels), so the results match it bit for bit.
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

struct FakeQuantArgs {
  DType dtype = DType::kFloat32;  // input and output: float32, float64, float16 or bfloat16
  int64_t n = 0;                  // contiguous elements
  int64_t quant_min = 0, quant_max = 255;
  // Per tensor: scale and zero_point, or (when scale_ptr is set) read on the device at run time from scale_ptr,
  // zero_point_ptr and enabled_ptr (an enabled value of 0 copies the input and sets the mask).
  float scale = 1.0f;
  int64_t zero_point = 0;
  const float* scale_ptr = nullptr;
  const int64_t* zero_point_ptr = nullptr;
  const int64_t* enabled_ptr = nullptr;
  // Per channel (when scales is set): `channels` float scales and zero points of zp_dtype (kInt32, or kFloat32 /
  // kFloat16 for a floating zero point); element e is in channel (e / inner) % channels.
  const float* scales = nullptr;
  const void* zero_points = nullptr;
  DType zp_dtype = DType::kInt32;
  int64_t channels = 1, inner = 1;
};

// out[e] = the fake-quantized in[e]; mask[e] = its code lies in [quant_min, quant_max]. kInvalidValue for another
// dtype or zero point dtype, or null pointers.
npu_sim::Status fake_quantize(npu_sim::Stream stream, const FakeQuantArgs& a, const void* in, void* out, bool* mask);

}  // namespace npu_kernels
