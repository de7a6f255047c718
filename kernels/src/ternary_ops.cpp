// Ternary pointwise kernels: where (condition promoted by the adapter), addcmul, addcdiv, lerp, prelu's
// input gradient.
#include "pointwise_common.h"

namespace npu_kernels {

const char* op_name(TernaryOp op) {
  static const char* const names[] = {"where", "addcmul", "addcdiv", "lerp", "clamp_tensor", "prelu_backward"};
  return names[static_cast<int>(op)];
}

npu_sim::Status ternary(npu_sim::Stream stream, TernaryOp op, const ElementwiseIter& it, const PointwiseParams& p) {
  if (detail::is_complex(it.in_dtype)) return detail::complex_ternary(stream, op, it, p);
  return detail::dispatch_real(it.in_dtype, [&](auto tag) -> npu_sim::Status {
    using In = decltype(tag);
    using C = compute_t<In>;
    auto go = [&](auto f) { return launch_elementwise<In, In, 3>(stream, op_name(op), it, f); };
    const C value = static_cast<C>(p.a);
    switch (op) {
      case TernaryOp::kWhere: return go([](C cond, C x, C y) { return cond != C(0) ? x : y; });
      case TernaryOp::kAddcmul:
        if constexpr (std::is_same_v<C, bool>) return go([](C s, C x, C y) { return s || (x && y); });
        else return go([=](C s, C x, C y) { return static_cast<C>(s + value * x * y); });
      case TernaryOp::kAddcdiv:
        if constexpr (detail::is_fp_v<C>) return go([=](C s, C x, C y) { return s + value * x / y; });
        else return npu_sim::Status::kInvalidValue;
      case TernaryOp::kLerp:
        if constexpr (detail::is_fp_v<C>) {
          return go([](C start, C end, C w) {
            return std::abs(w) < C(0.5) ? start + w * (end - start) : end - (end - start) * (C(1) - w);
          });
        } else return npu_sim::Status::kInvalidValue;
      case TernaryOp::kPreluGradInput:
        if constexpr (detail::is_fp_v<C>) return go([](C x, C w, C g) { return x > C(0) ? g : w * g; });
        else return npu_sim::Status::kInvalidValue;
      default: return npu_sim::Status::kInvalidValue;
    }
  });
}

}  // namespace npu_kernels
