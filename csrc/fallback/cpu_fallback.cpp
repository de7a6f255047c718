// Boxed CPU fallback for PrivateUse1: checks devices, warns once per op in torch_npu's wording (or
// refuses under TORCH_NPU_FALLBACK_CPU_DISABLE=1), records the op, then runs libtorch's cpu_fallback,
// which syncs through our copies, runs the CPU kernel and writes results (incl. in-place/out=) back. Ops CPU lacks a
// float16/bfloat16 kernel for (CUDA has one) run in float32 and are rounded back (run_widened).
#include "fallback/cpu_fallback.h"
#include "fallback/dtype_fallback.h"

#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace torch_npu_sim {
namespace {

std::mutex g_mutex;                      // guards g_counts
std::map<std::string, int64_t> g_counts;  // op -> calls that fell back

bool fallback_disabled() {
  static const bool disabled = [] {
    const char* v = std::getenv("TORCH_NPU_FALLBACK_CPU_DISABLE");
    return v != nullptr && std::string(v) == "1";
  }();
  return disabled;
}

// Mixed-device inputs are a user error on CUDA; the fallback would otherwise accept them silently.
// CPU zero-dim tensors are allowed, as in TensorIterator.
void check_same_device(const std::string& op, const torch::jit::Stack& stack, size_t num_args) {
  std::optional<c10::Device> seen;
  auto visit = [&](const at::Tensor& t) {
    if (!t.defined()) return;
    if (t.device().is_cpu() && t.dim() == 0) return;
    if (!seen) {
      seen = t.device();
    } else {
      TORCH_CHECK(*seen == t.device(), op, ": expected all tensors to be on the same device, but found at least two "
                  "devices, ", *seen, " and ", t.device(), "!");
    }
  };
  for (size_t i = stack.size() - num_args; i < stack.size(); ++i) {
    const auto& iv = stack[i];
    if (iv.isTensor()) {
      visit(iv.toTensor());
    } else if (iv.isTensorList()) {
      for (const at::Tensor& t : iv.toTensorList().vec()) visit(t);
    } else if (iv.isOptionalTensorList()) {
      for (const auto& t : iv.toOptionalTensorList().vec()) {
        if (t.has_value()) visit(*t);
      }
    }
  }
}

// Fallback dtype parity (docs/fallback_dtype_parity.md): ops whose CPU kernels lack float16/bfloat16 while CUDA's
// have them, computing in float (opmath) and rounding once. The fallback runs them on the CPU in float32 and rounds
// the float32 results back to the operands' dtype: CUDA's arithmetic. (The structured ones reach the fallback as their
// out= overload.)
bool widens_reduced_float(const std::string& op) {
  static const std::set<std::string> ops = {
      "aten::avg_pool3d",
      "aten::avg_pool3d_backward",
      "aten::multi_margin_loss",
      "aten::multi_margin_loss_backward",
      "aten::multilabel_margin_loss_forward",
      "aten::multilabel_margin_loss_backward",
      "aten::_upsample_bilinear2d_aa",
      "aten::_upsample_bilinear2d_aa_backward",
      "aten::_upsample_bicubic2d_aa",
      "aten::_upsample_bicubic2d_aa_backward",
      "aten::rrelu_with_noise",
  };
  return ops.count(op) > 0;
}

// Runs op on the CPU with its float16/bfloat16 tensor arguments in float32 (an out= or in-place argument through a
// float32 copy written back afterwards); false (stack untouched) when op is not one of widens_reduced_float's or has no
// such argument.
bool run_widened(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  if (!widens_reduced_float(schema.name())) return false;
  const size_t n = schema.arguments().size();
  const size_t base = stack->size() - n;
  std::optional<at::ScalarType> narrow;
  for (size_t i = base; i < stack->size(); ++i) {
    const auto& iv = (*stack)[i];
    if (iv.isTensor() && iv.toTensor().defined() && at::isReducedFloatingType(iv.toTensor().scalar_type())) {
      narrow = iv.toTensor().scalar_type();
      break;
    }
  }
  if (!narrow) return false;
  std::vector<std::pair<at::Tensor, at::Tensor>> written;  // (the caller's tensor, its float32 stand-in)
  for (size_t i = base; i < stack->size(); ++i) {
    auto& iv = (*stack)[i];
    if (!iv.isTensor() || !iv.toTensor().defined() || iv.toTensor().scalar_type() != *narrow) continue;
    const at::Tensor original = iv.toTensor();
    const at::Tensor wide = original.to(at::kFloat);
    const auto* alias = schema.arguments()[i - base].alias_info();
    if (alias != nullptr && alias->isWrite()) written.emplace_back(original, wide);
    iv = wide;
  }
  at::native::cpu_fallback(op, stack);
  for (auto& [original, wide] : written) {
    if (original.sizes() != wide.sizes()) original.resize_(wide.sizes());
    original.copy_(wide);
  }
  for (size_t i = stack->size() - schema.returns().size(); i < stack->size(); ++i) {
    auto& iv = (*stack)[i];
    if (!iv.isTensor() || !iv.toTensor().defined()) continue;
    const at::Tensor t = iv.toTensor();
    bool replaced = false;
    for (auto& [original, wide] : written) {
      if (t.is_same(wide)) {  // an out= or in-place result: the caller's own tensor
        iv = original;
        replaced = true;
        break;
      }
    }
    if (!replaced && t.scalar_type() == at::kFloat) iv = t.to(*narrow);
  }
  return true;
}

}  // namespace

void npu_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const std::string name = schema.operator_name().name +
                           (schema.overload_name().empty() ? "" : "." + schema.overload_name());
  check_same_device(name, *stack, schema.arguments().size());
  note_cpu_fallback(name);
  if (run_widened(op, stack)) return;
  at::native::cpu_fallback(op, stack);
}

void note_cpu_fallback(const std::string& name) {
  TORCH_CHECK_NOT_IMPLEMENTED(!fallback_disabled(), "The operator '", name,
                              "' is not currently implemented for the NPU device, and CPU fallback is disabled "
                              "(TORCH_NPU_FALLBACK_CPU_DISABLE=1).");
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    first = g_counts[name]++ == 0;
  }
  if (first) {
    TORCH_WARN("The operator '", name, "' is not currently supported on the NPU backend and will fall back to run "
               "on the CPU. This may have performance implications.");
  }
}

std::map<std::string, int64_t> fallback_ops() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_counts;
}

void reset_fallback_ops() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_counts.clear();
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&npu_cpu_fallback>());
}

}  // namespace torch_npu_sim
