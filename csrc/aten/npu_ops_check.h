// The npu namespace's CPU-key kernel: an npu:: op called on CPU tensors raises an error naming the argument.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

namespace torch_npu_sim {

// Boxed: finds the first tensor argument that is not on npu and raises "<op>: expected argument '<name>' on
// an npu device, got <device>" (torch_npu's ops run on the NPU only; there is no CPU kernel to fall back to).
void npu_op_on_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack);

}  // namespace torch_npu_sim
