// torch.autocast("npu"): AutocastPrivateUse1 registrations with CUDA's policy, built from libtorch's own
// op lists (AT_FORALL_* in ATen/autocast_mode.h), so npu autocasts exactly the ops CUDA does:
// lower_precision_fp (mm, conv, linear, ...), fp32 (softmax, norms, losses, exp/log, ...), promote
// (cat-like multi-input ops), and binary_cross_entropy refused as on CUDA.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace torch_npu_sim {
namespace {

at::Tensor binary_cross_entropy_banned(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                       int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
              "safe to autocast.");
}

}  // namespace

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

#define ADD_NS(RAW_OP) at::RAW_OP
#define NPU_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define NPU_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define NPU_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define NPU_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
#define NPU_DIFFERENT_REDISPATCH_SIGNATURE(REDISPATCH_FUNC, REGISTER_NAME, REGISTER_SIGNATURE, REDISPATCH_SIGNATURE, \
                                           POLICY)                                                                 \
  KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE(REDISPATCH_FUNC, REGISTER_NAME, REGISTER_SIGNATURE,          \
                                                      REDISPATCH_SIGNATURE, POLICY)

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  using at::Tensor;
  using c10::IntArrayRef;
  using c10::Scalar;
  using c10::ScalarType;
  AT_FORALL_LOWER_PRECISION_FP(NPU_LOWER_PRECISION_FP)
  AT_FORALL_FP32(NPU_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(NPU_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(NPU_DIFFERENT_REDISPATCH_SIGNATURE)
  AT_FORALL_PROMOTE(NPU_PROMOTE)
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN((&binary_cross_entropy_banned)));
}

}  // namespace torch_npu_sim
