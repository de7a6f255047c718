// Native adapters whose kernel library lacks the operands' dtype (complex operands of most pointwise ops)
// run the op through the CPU fallback instead, exactly as an op without any native kernel would.
#pragma once

#include <ATen/core/boxing/KernelFunction.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>

#include <string>
#include <utility>

namespace torch_npu_sim {

// What the engines throw when the kernel library has no kernel for a dtype; uncaught it is the
// NotImplementedError users saw before.
struct NoKernelForDtype : c10::NotImplementedError {
  using c10::NotImplementedError::NotImplementedError;
};

[[noreturn]] inline void throw_no_kernel_for_dtype(const std::string& msg) {
  throw NoKernelForDtype({__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, msg);
}

// The boxed CPU fallback registered for PrivateUse1 (cpu_fallback.cpp).
void npu_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// The generated registration of an op marked or_cpu in csrc/aten/ops.yaml (tools/gen_op_table.py):
// calls native(); if it throws NoKernelForDtype, runs aten::<name>.<overload> with the same arguments
// through npu_cpu_fallback (warning once, refused under TORCH_NPU_FALLBACK_CPU_DISABLE=1).
template <typename Sig>
struct OrCpu;
template <typename Ret, typename... Args>
struct OrCpu<Ret(Args...)> {
  template <typename Native>
  static Ret call(const char* name, const char* overload, Native&& native, Args... args) {
    try {
      return native();
    } catch (const NoKernelForDtype&) {
    }
    const auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
    return c10::impl::BoxedKernelWrapper<Ret(Args...)>::call(c10::BoxedKernel::makeFromFunction<&npu_cpu_fallback>(),
                                                              op, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                              std::forward<Args>(args)...);
  }
};

}  // namespace torch_npu_sim
