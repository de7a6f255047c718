// The Cube-unit GEMM of the device (torch-free): batched, strided C = alpha * op(A) @ op(B) + beta * Cin
// for float32, float64, float16 and bfloat16 (half types accumulate in float32), complex64 and complex128.
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// Every operand is addressed by (batch, row, col) element strides, so transposed, sliced and
// batched-strided views need no copy: op(A)[b][i][p] = a[b * a_batch_stride + i * a_row_stride +
// p * a_col_stride] for i < m, p < k; op(B) is k x n, C and Cin are m x n. Strides may be 0 (broadcast)
// for A, B and Cin, never for C. All operands share `dtype` and live on the stream's device.
struct GemmArgs {
  DType dtype = DType::kFloat32;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t a_batch_stride = 0, a_row_stride = 0, a_col_stride = 0;
  const void* b = nullptr;
  int64_t b_batch_stride = 0, b_row_stride = 0, b_col_stride = 0;
  void* c = nullptr;
  int64_t c_batch_stride = 0, c_row_stride = 0, c_col_stride = 0;
  // Source of the beta term; nullptr means C itself (in place). Ignored, NaN and all, when beta == 0.
  const void* cin = nullptr;
  int64_t cin_batch_stride = 0, cin_row_stride = 0, cin_col_stride = 0;
  double alpha = 1.0, beta = 0.0;
  // complex64 / complex128 only: the imaginary parts of alpha and beta, and operands read conjugated
  // (PyTorch's lazy conjugation: a conj view's memory holds the unconjugated values).
  double alpha_imag = 0.0, beta_imag = 0.0;
  bool conj_a = false, conj_b = false;
};

// Enqueues the GEMM on `stream`. kInvalidValue (with last_error_message) for unsupported dtypes or bad
// sizes; errors inside the kernel surface at the next sync point as for any kernel.
npu_sim::Status gemm(npu_sim::Stream stream, const GemmArgs& args);

// Which micro-kernel multiplies the packed panels: "openblas-threaded(1) (<core>)" or "own" (the portable
// loop, used when OpenBLAS cannot be loaded or NPU_SIM_GEMM_BLAS=0).
const char* gemm_micro_kernel_name();
// The library of the direct GEMM path (operands with a unit stride) for `dtype` (float32, bfloat16 or float16;
// int8: quant_matmul_library_name): "onednn <version> <implementation>" where oneDNN has a JIT kernel for the
// type on this CPU, else "none" (also without oneDNN or with NPU_SIM_GEMM_DNNL=0): float32 then calls OpenBLAS,
// bfloat16 takes the staged path (widened into fp32 UB panels for the micro-kernel above), float16 is widened
// to float32 for the float32 library.
const char* gemm_library_name(DType dtype);
// The library of convolution: "onednn <version>" when oneDNN is built in and on (each shape and type then runs
// on it where it has a JIT implementation), else "none".
const char* conv_library_name();

}  // namespace npu_kernels
