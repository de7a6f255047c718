// Affine quantization (torch-free): float32 values to int8 / uint8 / int32 codes and back, per tensor or per
// channel, with PyTorch's arithmetic (x * (1 / scale) in float, rounded half to even, plus the zero point,
// saturated); and the int8 GEMM of quantized linear layers, int32 accumulation then a dequantizing epilogue
// (torch_npu.npu_quant_matmul).
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// The codes' storage type: kInt8 (qint8), kUInt8 (quint8) or kInt32 (qint32).
struct QuantParams {
  DType code = DType::kInt8;
  double scale = 1.0;  // per tensor
  int64_t zero_point = 0;
  // Per channel (when scales is set): device arrays of `channels` entries; element e (row-major over the
  // logical shape) is in channel (e / inner) % channels, inner being the product of the sizes after the axis.
  const double* scales = nullptr;
  const int64_t* zero_points = nullptr;
  int64_t channels = 1, inner = 1;
};

// codes[e] = clamp(zero_point + nearbyint(in[e] * (1 / scale))) for n contiguous float32 values; NaN gives the
// code range's minimum (x86's conversion of NaN, which CPU PyTorch clamps), +-inf its ends.
npu_sim::Status quantize(npu_sim::Stream stream, const float* in, void* codes, int64_t n, const QuantParams& q);
// out[e] = (codes[e] - zero_point) * scale, n contiguous codes: in float32 per tensor, in float64 per channel (then
// rounded to float32), as CPU computes them.
npu_sim::Status dequantize(npu_sim::Stream stream, const void* codes, float* out, int64_t n, const QuantParams& q);

// out[b] = epilogue(x1[b] @ x2[b]) for int8 x1 (m x k) and x2 (k x n), each addressed by (batch, row, col)
// element strides (batch stride 0 broadcasts), accumulated exactly in int32. The epilogue, per output element
// (i, j), in float32: with an int32 bias, (acc + bias[j]) * scale[j] * pertoken_scale[i] + offset[j]; with a
// floating bias, acc * scale[j] * pertoken_scale[i] + bias[j] (+ offset[j]). scale / offset have 1 or n entries
// (1 broadcasts), pertoken_scale m (or null), bias n per batch (bias_batch_stride, 0 shares one). The result is
// rounded half to even and saturated for an int8 output, or converted once to float16 / bfloat16 / float32. An int32
// output is the accumulator itself (torch._int_mm): no epilogue, scale / offset / pertoken_scale / bias unused.
struct QuantMatmulArgs {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  const int8_t* x1 = nullptr;
  int64_t x1_batch_stride = 0, x1_row_stride = 0, x1_col_stride = 1;
  const int8_t* x2 = nullptr;
  int64_t x2_batch_stride = 0, x2_row_stride = 0, x2_col_stride = 1;
  const float* scale = nullptr;
  int64_t scale_len = 1;
  const float* offset = nullptr;  // optional
  int64_t offset_len = 1;
  const float* pertoken_scale = nullptr;  // optional, m entries
  const void* bias = nullptr;             // optional
  DType bias_dtype = DType::kInt32;       // kInt32 or a floating dtype
  int64_t bias_batch_stride = 0;
  void* out = nullptr;  // batch x m x n, contiguous
  DType out_dtype = DType::kInt8;
  const char* name = "npu_quant_matmul";  // the launch's name (a string literal)
};
npu_sim::Status quant_matmul(npu_sim::Stream stream, const QuantMatmulArgs& a);

// "onednn <version> <implementation>" when oneDNN serves the int8 GEMM, "own" for the portable loop.
const char* quant_matmul_library_name();

}  // namespace npu_kernels
