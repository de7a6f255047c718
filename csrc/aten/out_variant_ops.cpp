// The out= overloads served by their functional form: one boxed kernel for every op of the out_variants family.
// Each of these ops has an npu kernel (or a composite of npu kernels) for its functional overload and none of its
// own, so `torch.clamp(x, 0, 1, out=y)` took the CPU fallback where `torch.clamp(x, 0, 1)` ran natively. The
// kernel calls the functional overload through the dispatcher and moves its results into the out tensors under
// ATen's out= contract: the out's dtype must be the result's (out_via_functional: CPU's rule for these ops) or one
// the result casts to (out_via_functional_cast: c10::canCast), an out of another shape is
// resized (with ATen's warning when it was not empty), a strided out receives the values in place, and the out
// tensors are returned (the functional result is new memory, so an out overlapping an input is safe). Also the
// overlap guard (out_overlap.h) that every generated out= and in-place registration applies before its kernel runs.
#include <ATen/MemoryOverlap.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/Resize.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "aten/out_overlap.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {
namespace {

// The functional overload of an out= overload: "out" -> "", "Scalar_out" -> "Scalar", "no_stats_out" -> "no_stats".
std::string functional_overload(const std::string& out_overload) {
  if (out_overload == "out") return "";
  const std::string suffix = "_out";
  TORCH_INTERNAL_ASSERT(out_overload.size() > suffix.size() &&
                            out_overload.compare(out_overload.size() - suffix.size(), suffix.size(), suffix) == 0,
                        "out_via_functional: ", out_overload, " is not an out= overload name");
  return out_overload.substr(0, out_overload.size() - suffix.size());
}

}  // namespace

bool overlaps_written(const at::Tensor& written, const at::Tensor& input) {
  // (get_overlap_status would also answer TooHard for strided tensors with storages of their own)
  if (!written.defined() || !input.defined() || !written.has_storage() || !input.has_storage() ||
      !written.storage().is_alias_of(input.storage())) {
    return false;
  }
  const at::MemOverlapStatus status = at::get_overlap_status(written, input);
  TORCH_CHECK(status != at::MemOverlapStatus::Partial || input.dim() == 0,
              "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
              "memory location. Please clone() the tensor before performing the operation.");
  return status != at::MemOverlapStatus::No;
}

const at::Tensor& OutOverlapGuard::input(const at::Tensor& t) {
  for (const at::Tensor* written : written_) {
    if (overlaps_written(*written, t)) return copies_.emplace_back(t.clone());
  }
  return t;
}

const std::optional<at::Tensor>& OutOverlapGuard::input(const std::optional<at::Tensor>& t) {
  if (!t.has_value()) return t;
  const at::Tensor& checked = input(*t);
  return checked.is_same(*t) ? t : optional_copies_.emplace_back(checked);
}

namespace {

// The out tensors' dtypes: the result's exactly, or any the result casts to.
enum class OutDtype { kSame, kCast };

void run_via_functional(const c10::OperatorHandle& op, torch::jit::Stack* stack, OutDtype rule) {
  const auto& schema = op.schema();
  const auto& name = schema.operator_name();
  const auto functional = c10::Dispatcher::singleton().findSchemaOrThrow(
      name.name.c_str(), functional_overload(name.overload_name).c_str());
  const auto& args = schema.arguments();
  size_t n_out = 0;
  for (const auto& a : args) n_out += a.is_out() ? 1 : 0;
  const size_t n_in = args.size() - n_out;
  TORCH_INTERNAL_ASSERT(functional.schema().arguments().size() == n_in &&
                            functional.schema().returns().size() == n_out,
                        "out_via_functional: ", schema, " does not extend ", functional.schema());
  std::vector<at::Tensor> outs;
  for (size_t i = 0; i < n_out; ++i) outs.push_back(torch::jit::peek(*stack, n_in + i, args.size()).toTensor());
  for (size_t i = 0; i < n_in; ++i) {  // (the functional result is new memory: only a partial overlap matters)
    const c10::IValue& in = torch::jit::peek(*stack, i, args.size());
    if (!in.isTensor()) continue;
    for (const at::Tensor& out : outs) overlaps_written(out, in.toTensor());
  }
  torch::jit::drop(*stack, n_out);
  functional.callBoxed(stack);  // consumes the n_in inputs, pushes n_out results
  const auto results = torch::jit::pop(*stack, n_out);
  const std::string op_name = name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
  for (size_t i = 0; i < n_out; ++i) {
    const at::Tensor& r = results[i].toTensor();
    at::Tensor& out = outs[i];
    TORCH_CHECK(out.device() == r.device(), op_name, ": Expected out tensor to have device ", r.device(),
                ", but got ", out.device(), " instead");
    TORCH_CHECK(c10::canCast(r.scalar_type(), out.scalar_type()), op_name, ": result type ", r.scalar_type(),
                " can't be cast to the desired output type ", out.scalar_type());
    TORCH_CHECK(rule == OutDtype::kCast || out.scalar_type() == r.scalar_type(), op_name,
                ": Expected out tensor to have dtype ", r.scalar_type(), ", but got ", out.scalar_type(), " instead");
    at::native::resize_output(out, r.sizes());
    out.copy_(r);
  }
  for (auto& out : outs) torch::jit::push(*stack, std::move(out));
}

}  // namespace

void NPUNativeFunctions::out_via_functional(const c10::OperatorHandle& op, c10::DispatchKeySet /*ks*/,
                                            torch::jit::Stack* stack) {
  run_via_functional(op, stack, OutDtype::kSame);
}

void NPUNativeFunctions::out_via_functional_cast(const c10::OperatorHandle& op, c10::DispatchKeySet /*ks*/,
                                                 torch::jit::Stack* stack) {
  run_via_functional(op, stack, OutDtype::kCast);
}

}  // namespace torch_npu_sim
