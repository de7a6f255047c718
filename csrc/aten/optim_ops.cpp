// torch.optim's fused steps for npu (Adam/AdamW/SGD/Adagrad with fused=True): the lists and device scalars are
// checked here, then one launch of kernels/src/optim.cpp updates every parameter.
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>

#include <optional>
#include <vector>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/optim.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using at::TensorList;

// A 1-element float32 npu tensor on `device` (GradScaler's scale and found_inf, a tensor lr), as the kernel
// reads it when the launch runs; kept alive by `keep` until then (the launch is ordered on the stream).
const float* device_scalar(const std::optional<at::Tensor>& t, const at::Device& device, const char* op,
                           const char* name, std::vector<at::Tensor>& keep) {
  if (!t.has_value() || !t->defined()) return nullptr;
  check_device_arg(op, name, *t, device);
  TORCH_CHECK(t->numel() == 1, op, ": ", name, " must be a 1-element tensor, got ", t->numel(), " elements");
  TORCH_CHECK(at::isFloatingType(t->scalar_type()), op, ": ", name, " must be floating point, got ", t->scalar_type());
  keep.push_back(t->to(at::kFloat).contiguous());
  return keep.back().const_data_ptr<float>();
}

// The lists of one step: params, grads and the per-parameter state lists, all of one floating dtype on one
// npu device, entry i of each list with param i's sizes and strides (dense); steps are 1-element float32.
struct Step {
  npu_kernels::OptimLists lists;
  at::Device device{at::kPrivateUse1};
  std::vector<at::Tensor> keep;

  Step(const char* op, TensorList params, TensorList grads,
       std::initializer_list<std::pair<const char*, TensorList>> states, TensorList steps) {
    const std::size_t n = params.size();
    TORCH_CHECK(grads.size() == n, op, ": expected as many grads as params (", n, "), got ", grads.size());
    for (const auto& [name, list] : states) {
      TORCH_CHECK(list.size() == n, op, ": expected as many ", name, " as params (", n, "), got ", list.size());
    }
    TORCH_CHECK(steps.empty() || steps.size() == n, op, ": expected as many state_steps as params (", n, "), got ",
                steps.size());
    if (n == 0) return;
    device = params[0].device();
    TORCH_CHECK(is_npu(params[0]), op, ": params must be npu tensors, got one on ", device);
    const at::ScalarType dtype = params[0].scalar_type();
    TORCH_CHECK(at::isFloatingType(dtype), op, ": params must be floating point, got ", dtype);
    lists.dtype = kernel_dtype(dtype, op);
    std::vector<void*>* state_lists[] = {&lists.state1, &lists.state2, &lists.state3};
    for (std::size_t i = 0; i < n; ++i) {
      const at::Tensor& p = params[i];
      TORCH_CHECK(p.is_non_overlapping_and_dense(), op, ": params[", i, "] must be dense (non-overlapping)");
      auto check = [&](const at::Tensor& t, const char* name) {
        check_device_arg(op, name, t, device);
        TORCH_CHECK(t.scalar_type() == dtype, op, ": ", name, "[", i, "] has dtype ", t.scalar_type(),
                    ", expected the params' ", dtype);
        TORCH_CHECK(t.sizes() == p.sizes() && t.strides() == p.strides(), op, ": ", name, "[", i, "] must have the ",
                    "sizes and strides of params[", i, "] (", p.sizes(), "), got ", t.sizes());
        return t.data_ptr();
      };
      lists.param.push_back(check(p, "params"));
      lists.grad.push_back(check(grads[i], "grads"));
      int k = 0;
      for (const auto& [name, list] : states) state_lists[k++]->push_back(check(list[i], name));
      if (!steps.empty()) {
        const at::Tensor& s = steps[i];
        check_device_arg(op, "state_steps", s, device);
        TORCH_CHECK(s.numel() == 1 && s.scalar_type() == at::kFloat, op, ": state_steps[", i,
                    "] must be a 1-element float32 tensor, got ", s.numel(), " elements of ", s.scalar_type());
        lists.step.push_back(s.const_data_ptr<float>());
      }
      lists.numel.push_back(p.numel());
    }
  }
};

npu_kernels::OptimScalars scalars(Step& st, const char* op, const std::optional<at::Tensor>& lr,
                                  const std::optional<at::Tensor>& grad_scale,
                                  const std::optional<at::Tensor>& found_inf) {
  npu_kernels::OptimScalars sc;
  sc.lr = device_scalar(lr, st.device, op, "lr", st.keep);
  sc.grad_scale = device_scalar(grad_scale, st.device, op, "grad_scale", st.keep);
  sc.found_inf = device_scalar(found_inf, st.device, op, "found_inf", st.keep);
  return sc;
}

void adam(const char* op, bool adamw, TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
          TensorList max_exp_avg_sqs, TensorList steps, double lr, const std::optional<at::Tensor>& lr_tensor,
          double beta1, double beta2, double weight_decay, double eps, bool amsgrad, bool maximize,
          const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  Step st = amsgrad ? Step(op, params, grads,
                           {{"exp_avgs", exp_avgs}, {"exp_avg_sqs", exp_avg_sqs}, {"max_exp_avg_sqs", max_exp_avg_sqs}},
                           steps)
                    : Step(op, params, grads, {{"exp_avgs", exp_avgs}, {"exp_avg_sqs", exp_avg_sqs}}, steps);
  if (params.empty()) return;
  c10::DeviceGuard guard(st.device);
  const auto sc = scalars(st, op, lr_tensor, grad_scale, found_inf);
  const npu_kernels::AdamHyper h{lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, adamw};
  NPU_CHECK(npu_kernels::fused_adam(current_native_stream(st.device.index()), st.lists, h, sc));
}

void sgd(TensorList params, TensorList grads, TensorList momentum_buffers, double weight_decay, double momentum,
         double lr, const std::optional<at::Tensor>& lr_tensor, double dampening, bool nesterov, bool maximize,
         bool is_first_step, const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  constexpr const char* op = "_fused_sgd_";
  TORCH_CHECK(momentum_buffers.empty() || momentum != 0, op, ": momentum buffers given with momentum 0");
  Step st = momentum_buffers.empty() ? Step(op, params, grads, {}, {})
                                     : Step(op, params, grads, {{"momentum_buffer_list", momentum_buffers}}, {});
  if (params.empty()) return;
  c10::DeviceGuard guard(st.device);
  const auto sc = scalars(st, op, lr_tensor, grad_scale, found_inf);
  const npu_kernels::SgdHyper h{weight_decay, momentum, lr, dampening, nesterov, maximize, is_first_step};
  NPU_CHECK(npu_kernels::fused_sgd(current_native_stream(st.device.index()), st.lists, h, sc));
}

void adagrad(TensorList params, TensorList grads, TensorList state_sums, TensorList steps, double lr,
             const std::optional<at::Tensor>& lr_tensor, double lr_decay, double weight_decay, double eps,
             bool maximize, const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  constexpr const char* op = "_fused_adagrad_";
  TORCH_CHECK(steps.size() == params.size(), op, ": expected as many state_steps as params (", params.size(),
              "), got ", steps.size());
  Step st(op, params, grads, {{"state_sums", state_sums}}, steps);
  if (params.empty()) return;
  c10::DeviceGuard guard(st.device);
  const auto sc = scalars(st, op, lr_tensor, grad_scale, found_inf);
  const npu_kernels::AdagradHyper h{lr, lr_decay, weight_decay, eps, maximize};
  NPU_CHECK(npu_kernels::fused_adagrad(current_native_stream(st.device.index()), st.lists, h, sc));
}

// A CPU lr tensor is read on the host, as CUDA's tensor_lr kernels do; an npu one is read by the launch.
std::optional<at::Tensor> device_lr(const at::Tensor& lr, double* host_lr) {
  if (lr.device().is_cpu()) {
    *host_lr = lr.item<double>();
    return std::nullopt;
  }
  return lr;
}

}  // namespace

void NF::_fused_adam_(TensorList self, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                      TensorList max_exp_avg_sqs, TensorList state_steps, double lr, double beta1, double beta2,
                      double weight_decay, double eps, bool amsgrad, bool maximize,
                      const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  adam("_fused_adam_", false, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, std::nullopt, beta1,
       beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}

void NF::_fused_adam_(TensorList self, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                      TensorList max_exp_avg_sqs, TensorList state_steps, const at::Tensor& lr, double beta1,
                      double beta2, double weight_decay, double eps, bool amsgrad, bool maximize,
                      const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  double host_lr = 0;
  const auto lr_tensor = device_lr(lr, &host_lr);
  adam("_fused_adam_", false, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, host_lr, lr_tensor,
       beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}

void NF::_fused_adamw_(TensorList self, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                       TensorList max_exp_avg_sqs, TensorList state_steps, double lr, double beta1, double beta2,
                       double weight_decay, double eps, bool amsgrad, bool maximize,
                       const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  adam("_fused_adamw_", true, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, std::nullopt, beta1,
       beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}

void NF::_fused_adamw_(TensorList self, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                       TensorList max_exp_avg_sqs, TensorList state_steps, const at::Tensor& lr, double beta1,
                       double beta2, double weight_decay, double eps, bool amsgrad, bool maximize,
                       const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  double host_lr = 0;
  const auto lr_tensor = device_lr(lr, &host_lr);
  adam("_fused_adamw_", true, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, host_lr, lr_tensor,
       beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}

void NF::_fused_sgd_(TensorList self, TensorList grads, TensorList momentum_buffer_list, double weight_decay,
                     double momentum, double lr, double dampening, bool nesterov, bool maximize, bool is_first_step,
                     const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  sgd(self, grads, momentum_buffer_list, weight_decay, momentum, lr, std::nullopt, dampening, nesterov, maximize,
      is_first_step, grad_scale, found_inf);
}

void NF::_fused_sgd_(TensorList self, TensorList grads, TensorList momentum_buffer_list, double weight_decay,
                     double momentum, const at::Tensor& lr, double dampening, bool nesterov, bool maximize,
                     bool is_first_step, const std::optional<at::Tensor>& grad_scale,
                     const std::optional<at::Tensor>& found_inf) {
  double host_lr = 0;
  const auto lr_tensor = device_lr(lr, &host_lr);
  sgd(self, grads, momentum_buffer_list, weight_decay, momentum, host_lr, lr_tensor, dampening, nesterov, maximize,
      is_first_step, grad_scale, found_inf);
}

void NF::_fused_adagrad_(TensorList self, TensorList grads, TensorList state_sums, TensorList state_steps, double lr,
                         double lr_decay, double weight_decay, double eps, bool maximize,
                         const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  adagrad(self, grads, state_sums, state_steps, lr, std::nullopt, lr_decay, weight_decay, eps, maximize, grad_scale,
          found_inf);
}

void NF::_fused_adagrad_(TensorList self, TensorList grads, TensorList state_sums, TensorList state_steps,
                         const at::Tensor& lr, double lr_decay, double weight_decay, double eps, bool maximize,
                         const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  double host_lr = 0;
  const auto lr_tensor = device_lr(lr, &host_lr);
  adagrad(self, grads, state_sums, state_steps, host_lr, lr_tensor, lr_decay, weight_decay, eps, maximize, grad_scale,
          found_inf);
}

}  // namespace torch_npu_sim
