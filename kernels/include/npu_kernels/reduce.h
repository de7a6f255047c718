// The reduction engine (torch-free). An input is described as kept ("outer") dims and reduced dims, each
// with element strides, so one kernel handles any set of reduced dims and any strides. Outputs (one, or
// two for values + indices / var + mean) are addressed by their own strides over the outer dims.
//
// Work split: with many outputs the outputs are split over AI-core blocks (each output reduced by one
// block; when the innermost kept dim is contiguous and the reduced one is not, a block reduces a tile of
// neighbouring outputs together so the inner loop runs along memory). With few outputs (full reductions)
// the reduced range of each output is split over blocks (phase 1 writes partial states, phase 2 merges
// them in order). Accumulation: double for float64, float for float32/float16/bfloat16, int64 for
// integers and bool. var/std use per-run two-pass moments merged with Chan's formula.
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_kernels/tensor_desc.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

enum class ReduceOp {
  kSum, kMean, kProd, kMax, kMin,   // out[0] = value (input dtype; all/any: bool/uint8)
  kArgmax, kArgmin,                 // out[0] = int64 index
  kMaxIdx, kMinIdx,                 // out[0] = value, out[1] = int64 index (first occurrence)
  kVar, kStd,                       // out[0]; with out[1] set, also the mean (var_mean / std_mean)
  kAll, kAny,                       // out[0] written as 0/1 bytes (bool or uint8 output)
  kNorm,                            // p-norm with params.p (0, 1, 2, +-inf, other)
  kLogsumexp,
  kNansum,                          // sum with NaN counted as 0 (value dtype)
  kCountNonzero,                    // out[0] = int64 count of x != 0
};

const char* reduce_op_name(ReduceOp op);

struct ReduceDesc {
  const void* in = nullptr;
  DType dtype = DType::kFloat32;  // input dtype; value outputs have it too (all/any: see out_dtype)
  // Kept dims: the last one moves fastest. Sizes shared by the input and the outputs.
  int n_outer = 0;
  int64_t outer_sizes[kMaxDims] = {};
  int64_t in_outer_strides[kMaxDims] = {};
  int64_t out_strides[2][kMaxDims] = {};
  // Reduced dims: the last one moves fastest (give it the smallest stride).
  int n_red = 0;
  int64_t red_sizes[kMaxDims] = {};
  int64_t red_strides[kMaxDims] = {};
  void* out[2] = {nullptr, nullptr};
  DType out_dtype = DType::kFloat32;  // of out[0] for kAll/kAny (kBool or kUInt8); ignored otherwise
  // kSum / kMean: out[0] holds the accumulation type (int64 for integers and bool, float32 for float16 / bfloat16)
  // instead of the input's dtype, so mask.sum() or x.sum(dtype=torch.float32) read the input as it is.
  bool widened_out = false;

  int64_t outputs() const;
  int64_t reduced() const;
};

struct ReduceParams {
  double p = 2.0;           // kNorm
  double correction = 1.0;  // kVar / kStd
};

// Enqueues the reduction on `stream`. kInvalidValue for an unsupported dtype/op combination (floating
// point only: mean, var, std, norm, logsumexp).
npu_sim::Status reduce(npu_sim::Stream stream, ReduceOp op, const ReduceDesc& d, const ReduceParams& p = {});

// Inclusive scan along one dim: the tensor is (outer, n, inner) with element strides for in and out.
// cummax/cummin also write the index of the running extreme (ties and NaNs: the latest wins, as ATen).
// kLogcumsumexp (floating point only): log(sum_k<=i exp(x_k)), ATen's log-add-exp step accumulated as CPU's
// (double for float32 and float64, float for float16/bfloat16).
enum class ScanOp { kCumsum, kCumprod, kCummax, kCummin, kLogcumsumexp };
struct ScanDesc {
  const void* in = nullptr;
  void* out = nullptr;
  int64_t* indices = nullptr;  // cummax/cummin: int64, addressed with out_strides
  DType dtype = DType::kFloat32;  // both tensors
  int64_t outer = 1, n = 1, inner = 1;
  int64_t in_strides[3] = {};   // (outer, n, inner)
  int64_t out_strides[3] = {};
};
npu_sim::Status scan(npu_sim::Stream stream, ScanOp op, const ScanDesc& d);

}  // namespace npu_kernels
