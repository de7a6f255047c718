// Fused optimizer steps (torch's _fused_adam_ / _fused_adamw_ / _fused_sgd_ / _fused_adagrad_): one launch over every tensor of
// the lists, the whole per-element update in registers (fp16/bf16 state computed in float).
#pragma once

#include <cstdint>
#include <vector>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// The tensor lists of one step, all contiguous device memory of one floating dtype; entry i of every list
// belongs to parameter i and has numel[i] elements. A list the optimizer does not use is empty.
struct OptimLists {
  DType dtype = DType::kFloat32;
  std::vector<void*> param, grad;
  // Adam: exp_avg, exp_avg_sq, max_exp_avg_sq; SGD: momentum_buffer; Adagrad: state_sum
  std::vector<void*> state1, state2, state3;
  std::vector<const float*> step;  // Adam, Adagrad: each parameter's float32 step count (already incremented)
  std::vector<int64_t> numel;
};

// Device scalars of torch's AMP and LR-scheduler paths (float32 device memory, read when the launch runs;
// null when absent). found_inf == 1 skips the whole step; grads are divided by grad_scale and written back
// unscaled, as CUDA's fused kernels do. lr overrides the host lr.
struct OptimScalars {
  const float* lr = nullptr;
  const float* grad_scale = nullptr;
  const float* found_inf = nullptr;
};

struct AdamHyper {
  double lr, beta1, beta2, weight_decay, eps;
  bool amsgrad, maximize, decoupled_weight_decay;  // decoupled: AdamW
};
npu_sim::Status fused_adam(npu_sim::Stream s, const OptimLists& lists, const AdamHyper& h, const OptimScalars& sc);

struct SgdHyper {
  double weight_decay, momentum, lr, dampening;
  bool nesterov, maximize, is_first_step;
};
npu_sim::Status fused_sgd(npu_sim::Stream s, const OptimLists& lists, const SgdHyper& h, const OptimScalars& sc);

struct AdagradHyper {
  double lr, lr_decay, weight_decay, eps;
  bool maximize;
};
npu_sim::Status fused_adagrad(npu_sim::Stream s, const OptimLists& lists, const AdagradHyper& h,
                              const OptimScalars& sc);

}  // namespace npu_kernels
