// Fused scaled_dot_product_attention for npu: the SDPA backend choice (PrivateUse1's _fused_sdp_choice
// stub) and the "overrideable" fused op pair ATen calls for it. What the fused kernel does not take
// (dropout, 16-bit types, GQA, a mask that needs a gradient, nested or non-4-D inputs) stays on
// ATen's math path, which runs on our native kernels. The math is in kernels/src/attention.cpp.
#include <ATen/Context.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/native/transformers/sdp_utils_cpp.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/attention.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using T = at::Tensor;
using OptT = std::optional<T>;

bool fused_dtype(const T& t) { return t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble; }

int64_t max_kv_len(const T& q) {
  return npu_kernels::attention_max_kv_len(current_native_stream(q.device().index()),
                                           q.scalar_type() == at::kFloat ? npu_kernels::DType::kFloat32
                                                                         : npu_kernels::DType::kFloat64);
}

// Whether the fused kernel can take these operands (else ATen's math path).
bool fused_ok(const T& q, const T& k, const T& v, const OptT& mask, double dropout_p) {
  for (const T* t : {&q, &k, &v}) {
    if (!is_npu(*t) || t->is_nested() || t->dim() != 4 || !fused_dtype(*t) || t->scalar_type() != q.scalar_type() ||
        t->device() != q.device())
      return false;
  }
  if (dropout_p > 0.0 || k.size(0) != q.size(0) || v.size(0) != q.size(0) || k.size(1) != q.size(1) ||
      v.size(1) != q.size(1) || k.size(2) != v.size(2) || k.size(3) != q.size(3) || q.size(2) == 0 ||
      k.size(2) == 0 || q.size(3) == 0)
    return false;
  if (mask.has_value() && mask->defined()) {
    // A bool mask arrives converted to the query's dtype; one that needs its own gradient stays unfused.
    if (!is_npu(*mask) || mask->device() != q.device() || mask->dim() > 4 ||
        (mask->scalar_type() != q.scalar_type() && mask->scalar_type() != at::kBool) ||
        (mask->requires_grad() && at::GradMode::is_enabled()))
      return false;
  }
  return k.size(2) <= max_kv_len(q);
}

npu_kernels::AttnOperand operand(const T& t) {
  return {t.const_data_ptr(), t.stride(0), t.stride(1), t.stride(2)};
}

// Unit column stride, as the kernel needs; every other layout is read in place.
T unit_cols(const T& t) { return t.stride(3) == 1 ? t : t.contiguous(); }

// [B, H, rows, cols] laid out as [B, rows, H, cols]: what `out.transpose(1, 2).reshape(B, rows, H * cols)`
// (the usual next step) reads without a copy.
T empty_bhld(const T& like, int64_t rows, int64_t cols) {
  return at::empty({like.size(0), rows, like.size(1), cols}, like.options()).transpose(1, 2);
}

npu_kernels::AttentionArgs args_of(const char* op, const T& q, const T& k, const T& v, const T& bias, bool causal,
                                   std::optional<double> scale) {
  TORCH_CHECK(fused_ok(q, k, v, bias.defined() ? OptT(bias) : std::nullopt, 0.0), op,
              ": expected 4-D float32/float64 query, key and value on one npu device with equal batch and head "
              "counts, key and value of equal length, an optional float mask without gradient; got query ",
              q.sizes(), " ", q.scalar_type(), ", key ", k.sizes(), ", value ", v.sizes());
  npu_kernels::AttentionArgs a;
  a.dtype = q.scalar_type() == at::kFloat ? npu_kernels::DType::kFloat32 : npu_kernels::DType::kFloat64;
  a.batch = q.size(0);
  a.heads = q.size(1);
  a.q_len = q.size(2);
  a.kv_len = k.size(2);
  a.head_dim = q.size(3);
  a.v_dim = v.size(3);
  a.q = operand(q);
  a.k = operand(k);
  a.v = operand(v);
  if (bias.defined()) {
    a.bias = bias.const_data_ptr();
    a.bias_batch_stride = bias.stride(0);
    a.bias_head_stride = bias.stride(1);
    a.bias_row_stride = bias.stride(2);
    a.bias_col_stride = bias.stride(3);
  }
  a.causal = causal;
  a.scale = sdp::calculate_scale(q, scale).expect_float();
  return a;
}

// The mask as a [B, H, L, S] view (0 strides where broadcast) in the query's dtype; bool masks become
// 0 / -inf as ATen's own conversion does.
T bias_view(const OptT& mask, const T& q, const T& k) {
  if (!mask.has_value() || !mask->defined()) return T();
  T m = *mask;
  if (m.scalar_type() == at::kBool) {
    m = at::zeros_like(m, q.options()).masked_fill_(m.logical_not(), -std::numeric_limits<double>::infinity());
  }
  return m.expand({q.size(0), q.size(1), q.size(2), k.size(2)});
}

}  // namespace

int64_t NF::_fused_sdp_choice(const T& q, const T& k, const T& v, const OptT& mask, double dropout_p,
                              bool /*is_causal*/, std::optional<double> /*scale*/, bool /*enable_gqa*/) {
  // GQA (fewer key heads) fails fused_ok's head check and goes to the math path, which repeats them.
  const bool fused = at::globalContext().userEnabledOverrideableSDP() && fused_ok(q, k, v, mask, dropout_p);
  return static_cast<int64_t>(fused ? sdp::SDPBackend::overrideable : sdp::SDPBackend::math);
}

std::tuple<T, T, T, T, c10::SymInt, c10::SymInt, T, T, T> NF::_scaled_dot_product_fused_attention_overrideable(
    const T& query, const T& key, const T& value, const OptT& attn_bias, double dropout_p, bool is_causal,
    bool return_debug_mask, std::optional<double> scale) {
  constexpr const char* op = "_scaled_dot_product_fused_attention_overrideable";
  TORCH_CHECK(dropout_p == 0.0, op, ": dropout_p must be 0 on npu's fused attention (got ", dropout_p,
              "); scaled_dot_product_attention routes dropout to the math path");
  TORCH_CHECK(!return_debug_mask, op, ": return_debug_mask is not supported");
  c10::DeviceGuard guard(query.device());
  const T q = unit_cols(query), k = unit_cols(key), v = unit_cols(value);
  const T bias = bias_view(attn_bias, q, k);
  npu_kernels::AttentionArgs a = args_of(op, q, k, v, bias, is_causal, scale);
  T out = empty_bhld(q, a.q_len, a.v_dim);
  T lse = at::empty({a.batch, a.heads, a.q_len}, q.options());
  a.out = operand(out);
  a.lse = lse.data_ptr();
  NPU_CHECK(npu_kernels::attention_forward(current_native_stream(q.device().index()), a));
  return {out, lse, T(), T(), a.q_len, a.kv_len, T(), T(), T()};
}

std::tuple<T, T, T, T> NF::_scaled_dot_product_fused_attention_overrideable_backward(
    const T& grad_out, const T& query, const T& key, const T& value, const T& attn_bias,
    std::array<bool, 4> grad_input_mask, const T& out, const T& logsumexp, const T& /*cum_seq_q*/,
    const T& /*cum_seq_k*/, int64_t /*max_q*/, int64_t /*max_k*/, double dropout_p, bool is_causal,
    const T& /*philox_seed*/, const T& /*philox_offset*/, std::optional<double> scale) {
  constexpr const char* op = "_scaled_dot_product_fused_attention_overrideable_backward";
  TORCH_CHECK(dropout_p == 0.0, op, ": dropout_p must be 0 (got ", dropout_p, ")");
  TORCH_CHECK(!grad_input_mask[3] || !attn_bias.defined(), op, ": the gradient of attn_bias is not supported");
  c10::DeviceGuard guard(query.device());
  const T q = unit_cols(query), k = unit_cols(key), v = unit_cols(value);
  const T bias = bias_view(attn_bias.defined() ? OptT(attn_bias) : std::nullopt, q, k);
  npu_kernels::AttentionGradArgs g;
  g.fwd = args_of(op, q, k, v, bias, is_causal, scale);
  const T o = unit_cols(out), d = unit_cols(grad_out), lse = logsumexp.contiguous();
  const int64_t rows = g.fwd.batch * g.fwd.heads * g.fwd.q_len;
  TORCH_CHECK(o.sizes() == grad_out.sizes() && o.size(3) == v.size(3) && lse.numel() == rows &&
                  lse.scalar_type() == q.scalar_type() && d.scalar_type() == q.scalar_type(),
              op, ": out ", out.sizes(), ", grad_out ", grad_out.sizes(), " and logsumexp ", logsumexp.sizes(),
              " do not match the forward of query ", q.sizes());
  g.fwd.out = operand(o);
  g.fwd.lse = const_cast<void*>(lse.const_data_ptr());
  g.dout = operand(d);
  T dq = empty_bhld(q, g.fwd.q_len, g.fwd.head_dim), dk = empty_bhld(k, g.fwd.kv_len, g.fwd.head_dim);
  T dv = empty_bhld(v, g.fwd.kv_len, g.fwd.v_dim);
  g.dq = operand(dq);
  g.dk = operand(dk);
  g.dv = operand(dv);
  NPU_CHECK(npu_kernels::attention_backward(current_native_stream(q.device().index()), g));
  return {dq, dk, dv, T()};
}

}  // namespace torch_npu_sim

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &torch_npu_sim::NPUNativeFunctions::_fused_sdp_choice);
}  // namespace at::native
