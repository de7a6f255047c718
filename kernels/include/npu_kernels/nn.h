// nn kernels (torch-free): softmax / log_softmax and their backward, layer norm and its backward,
// nll_loss forward/backward. Tensors are contiguous; the adapter makes them so.
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// (log_)softmax over the middle dim of an (outer, n, inner) tensor, max-subtracted, fp32 accumulation
// for fp16/bf16. out_dtype is in_dtype, or float32 for a half input with half_to_float.
struct SoftmaxDesc {
  const void* in = nullptr;
  void* out = nullptr;
  DType in_dtype = DType::kFloat32, out_dtype = DType::kFloat32;
  int64_t outer = 1, n = 1, inner = 1;
  bool log = false;
};
npu_sim::Status softmax(npu_sim::Stream stream, const SoftmaxDesc& d);

// grad_in = y * (g - sum(g * y))  (softmax)  or  g - exp(y) * sum(g)  (log_softmax); g and y have
// `dtype`, grad_in has `out_dtype` (the forward's input dtype).
struct SoftmaxBackwardDesc {
  const void* grad = nullptr;
  const void* output = nullptr;
  void* grad_in = nullptr;
  DType dtype = DType::kFloat32, out_dtype = DType::kFloat32;
  int64_t outer = 1, n = 1, inner = 1;
  bool log = false;
};
npu_sim::Status softmax_backward(npu_sim::Stream stream, const SoftmaxBackwardDesc& d);

// Layer norm over rows of an (M, N) tensor. weight/bias may be null; mean/rstd (M) have `dtype`.
struct LayerNormDesc {
  DType dtype = DType::kFloat32;
  int64_t M = 0, N = 0;
  double eps = 1e-5;
  const void* x = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  void* y = nullptr;
  void* mean = nullptr;
  void* rstd = nullptr;
  // backward
  const void* dy = nullptr;
  void* dx = nullptr;      // may be null
  void* dweight = nullptr; // may be null
  void* dbias = nullptr;   // may be null
};
npu_sim::Status layer_norm(npu_sim::Stream stream, const LayerNormDesc& d);
npu_sim::Status layer_norm_backward(npu_sim::Stream stream, const LayerNormDesc& d);

// nll_loss over (N, C) log-probabilities with int64 targets (N). reduction: 0 none, 1 mean, 2 sum.
// A target outside [0, C) that is not ignore_index raises KernelError naming nll_loss.
struct NllLossDesc {
  DType dtype = DType::kFloat32;
  int64_t N = 0, C = 0;
  int64_t reduction = 1;
  int64_t ignore_index = -100;
  const void* input = nullptr;
  const int64_t* target = nullptr;
  const void* weight = nullptr;  // (C) or null
  void* out = nullptr;           // (N) for none, scalar otherwise
  void* total_weight = nullptr;  // scalar
  // backward
  const void* grad_out = nullptr;          // (N) for none, scalar otherwise
  const void* total_weight_in = nullptr;   // scalar
  void* grad_in = nullptr;                 // (N, C), fully written
};
npu_sim::Status nll_loss_forward(npu_sim::Stream stream, const NllLossDesc& d);
npu_sim::Status nll_loss_backward(npu_sim::Stream stream, const NllLossDesc& d);

// Elementwise losses over n contiguous elements (reduction is done by the adapter with the reduction
// engine). bce: input outside [0, 1] raises KernelError naming binary_cross_entropy.
enum class LossKind { kMse, kSmoothL1, kBce, kHuber };
struct PointLossDesc {
  DType dtype = DType::kFloat32;
  int64_t n = 0;
  const void* input = nullptr;
  const void* target = nullptr;
  const void* weight = nullptr;  // bce only, n elements or null
  double beta = 1.0;             // smooth_l1's beta, huber's delta
  void* out = nullptr;           // forward: n elementwise losses
  // backward: grad_in[i] = dloss/dinput[i] * grad[i * grad_stride] * scale
  const void* grad = nullptr;
  int64_t grad_stride = 1;
  double scale = 1.0;
  void* grad_in = nullptr;
};
npu_sim::Status pointwise_loss(npu_sim::Stream stream, LossKind kind, const PointLossDesc& d);
npu_sim::Status pointwise_loss_backward(npu_sim::Stream stream, LossKind kind, const PointLossDesc& d);

// Batch norm over (N, C, HW) contiguous input. Per-channel parameters and statistics (weight, bias,
// running_mean/var, save_mean/save_invstd) are in the accumulation type: float64 for float64 input,
// float32 otherwise. Training: batch statistics, running stats updated with momentum (unbiased var).
struct BatchNormDesc {
  DType dtype = DType::kFloat32;
  int64_t N = 0, C = 0, HW = 0;
  bool training = true;
  double momentum = 0.1, eps = 1e-5;
  const void* x = nullptr;
  void* y = nullptr;
  const void* weight = nullptr;  // null: 1
  const void* bias = nullptr;    // null: 0
  void* running_mean = nullptr;  // may be null (training without stats)
  void* running_var = nullptr;
  void* save_mean = nullptr;     // training: written; backward (training): read
  void* save_invstd = nullptr;
  // backward
  const void* dy = nullptr;
  void* dx = nullptr;
  void* dweight = nullptr;
  void* dbias = nullptr;
};
npu_sim::Status batch_norm(npu_sim::Stream stream, const BatchNormDesc& d);
npu_sim::Status batch_norm_backward(npu_sim::Stream stream, const BatchNormDesc& d);

// Group norm backward over (N, C, HW) contiguous input with G groups; mean/rstd (N, G) and
// weight/dweight/dbias (C) in the accumulation type (see BatchNormDesc); dx in dtype.
struct GroupNormBackwardDesc {
  DType dtype = DType::kFloat32;
  int64_t N = 0, C = 0, HW = 0, G = 1;
  const void* dy = nullptr;
  const void* x = nullptr;
  const void* mean = nullptr;
  const void* rstd = nullptr;
  const void* weight = nullptr;  // null: 1
  void* dx = nullptr;            // may be null
  void* dweight = nullptr;       // may be null
  void* dbias = nullptr;         // may be null
};
npu_sim::Status group_norm_backward(npu_sim::Stream stream, const GroupNormBackwardDesc& d);

}  // namespace npu_kernels
