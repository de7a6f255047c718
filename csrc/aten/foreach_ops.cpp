// The _foreach_* ops (torch.optim's default "foreach" path) for npu. Their CPU kernels are pure
// compositions of per-tensor ATen ops (the "slow" foreach path), so npu reuses them as they are: a boxed
// kernel re-dispatches to the CPU kernel *without moving data*, and every per-tensor op it issues
// dispatches on the npu tensors to our native kernels. Registered once at import for every
// aten::_foreach_* op that has a CPU kernel.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <memory>
#include <string>
#include <vector>

namespace torch_npu_sim {
namespace {

void forward_to_composite_cpu_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet /*ks*/,
                                     torch::jit::Stack* stack) {
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
}

}  // namespace

// Called from the module's init (after libtorch registered every operator).
void register_foreach_ops() {
  static std::unique_ptr<torch::Library> lib;  // registrations live as long as the process
  if (lib) return;
  lib = std::make_unique<torch::Library>(torch::Library::IMPL, "aten",
                                         std::make_optional(c10::DispatchKey::PrivateUse1), __FILE__, __LINE__);
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    if (name.name.rfind("aten::_foreach_", 0) != 0) continue;
    auto handle = dispatcher.findOp(name);
    if (!handle || !handle->hasKernelForDispatchKey(c10::DispatchKey::CPU)) continue;
    if (handle->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) continue;
    const std::string full = name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
    const std::string schema_name = full.substr(std::string("aten::").size());
    lib->impl(schema_name.c_str(),
              torch::CppFunction::makeFromBoxedFunction<&forward_to_composite_cpu_kernel>());
  }
}

}  // namespace torch_npu_sim
