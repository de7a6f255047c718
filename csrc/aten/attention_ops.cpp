// Fused scaled_dot_product_attention for npu: the SDPA backend choice (PrivateUse1's _fused_sdp_choice
// stub) and the "overrideable" fused op pair ATen calls for it, in float32/float64/float16/bfloat16 with
// dropout (counter-based: the backward regenerates the forward's mask from its seed and offset). What the
// fused kernel does not take (GQA, a mask that needs a gradient, nested or non-4-D inputs) stays on ATen's
// math path, which runs on our native kernels. The math is in kernels/src/attention.cpp.
#include <ATen/Context.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/native/transformers/sdp_utils_cpp.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ExpandUtils.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string_view>
#include <tuple>
#include <utility>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_generator.h"
#include "core/npu_stream.h"
#include "npu_kernels/attention.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using T = at::Tensor;
using OptT = std::optional<T>;

bool fused_dtype(const T& t) { return at::isFloatingType(t.scalar_type()); }

npu_kernels::DType attn_dtype(const T& t) { return static_cast<npu_kernels::DType>(t.scalar_type()); }

// The kernel's lse: float32 for 16-bit inputs (as FlashAttention's logsumexp), else the input dtype.
at::ScalarType lse_dtype(const T& q) { return at::isReducedFloatingType(q.scalar_type()) ? at::kFloat : q.scalar_type(); }

int64_t max_kv_len(const T& q, const T& v) {
  return npu_kernels::attention_max_kv_len(current_native_stream(q.device().index()), attn_dtype(q), q.size(3),
                                           v.size(3));
}

// Whether the fused kernel can take these operands (else ATen's math path).
bool fused_ok(const T& q, const T& k, const T& v, const OptT& mask, double dropout_p) {
  for (const T* t : {&q, &k, &v}) {
    if (!is_npu(*t) || t->is_nested() || t->dim() != 4 || !fused_dtype(*t) || t->scalar_type() != q.scalar_type() ||
        t->device() != q.device())
      return false;
  }
  if (!(dropout_p >= 0.0 && dropout_p < 1.0) || k.size(0) != q.size(0) || v.size(0) != q.size(0) || k.size(1) != q.size(1) ||
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
  return k.size(2) <= max_kv_len(q, v);
}

npu_kernels::AttnOperand operand(const T& t) {
  return {t.const_data_ptr(), t.stride(0), t.stride(1), t.stride(2)};
}

// Unit column stride, as the kernel needs; every other layout is read in place.
T unit_cols(const T& t) { return t.stride(3) == 1 ? t : t.contiguous(); }

// A [B, H, rows, cols] output laid out as ATen's meta function lays it out (Python's alloc_with_matching_layout):
// like `query` when the shapes agree, else with query's dimension order. libtorch's C++ alloc_with_matching_layout
// (sdp_utils.h) orders equal and zero strides differently; torch.compile plans by the meta function.
T empty_matching(const T& query, std::array<int64_t, 4> shape) {
  if (query.sizes() == c10::IntArrayRef(shape)) return at::empty_like(query);
  std::array<int64_t, 4> order{0, 1, 2, 3}, strides{};
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return query.stride(x) > query.stride(y); });
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) strides[order[i]] = stride, stride *= shape[order[i]];
  return at::empty_strided(shape, strides, query.options());
}

// The kernels write outputs with unit column stride: `t` itself, or a buffer to copy into `t` afterwards.
T unit_cols_out(const T& t) { return t.stride(3) == 1 ? t : at::empty(t.sizes(), t.options()); }

npu_kernels::AttentionArgs args_of(const char* op, const T& q, const T& k, const T& v, const T& bias, bool causal,
                                   std::optional<double> scale, double dropout_p = 0.0) {
  TORCH_CHECK(fused_ok(q, k, v, bias.defined() ? OptT(bias) : std::nullopt, dropout_p), op,
              ": expected 4-D floating query, key and value of one dtype on one npu device with equal batch and head "
              "counts, key and value of equal length, an optional float mask without gradient; got query ",
              q.sizes(), " ", q.scalar_type(), ", key ", k.sizes(), ", value ", v.sizes());
  npu_kernels::AttentionArgs a;
  a.dtype = attn_dtype(q);
  a.keep_prob = 1.0 - dropout_p;
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

// Reserves the dropout mask's counters from the device's generator: (seed, offset) into `a`, and as the CPU
// int64 scalars the backward receives.
std::pair<T, T> reserve_dropout(npu_kernels::AttentionArgs& a, const T& q) {
  const auto [seed, offset] = reserve_philox(std::nullopt, q.device().index(),
                                             static_cast<uint64_t>(a.batch * a.heads * a.q_len * a.kv_len));
  a.seed = seed;
  a.offset = offset;
  const auto cpu = at::TensorOptions().dtype(at::kLong);
  return {at::scalar_tensor(static_cast<int64_t>(seed), cpu), at::scalar_tensor(static_cast<int64_t>(offset), cpu)};
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
  TORCH_CHECK(!return_debug_mask, op, ": return_debug_mask is not supported");
  c10::DeviceGuard guard(query.device());
  const T q = unit_cols(query), k = unit_cols(key), v = unit_cols(value);
  const T bias = bias_view(attn_bias, q, k);
  npu_kernels::AttentionArgs a = args_of(op, q, k, v, bias, is_causal, scale, dropout_p);
  T seed, offset;  // the dropout mask's counters, for the backward to regenerate it (CPU scalars, as CUDA's)
  if (dropout_p > 0.0) std::tie(seed, offset) = reserve_dropout(a, q);
  // The layouts ATen's meta function gives (torch.compile plans its buffers by them); unused counters are
  // empty CPU scalars, as CUDA's
  T out = empty_matching(query, {a.batch, a.heads, a.q_len, a.v_dim});
  T lse = at::empty({a.batch, a.heads, a.q_len}, q.options().dtype(lse_dtype(q)));
  if (!seed.defined()) seed = at::empty({}, at::kLong), offset = at::empty({}, at::kLong);
  T o = unit_cols_out(out);
  a.out = operand(o);
  a.lse = lse.data_ptr();
  NPU_CHECK(npu_kernels::attention_forward(current_native_stream(q.device().index()), a));
  if (!o.is_same(out)) out.copy_(o);
  return {out, lse, T(), T(), a.q_len, a.kv_len, seed, offset, T()};
}

std::tuple<T, T, T, T> NF::_scaled_dot_product_fused_attention_overrideable_backward(
    const T& grad_out, const T& query, const T& key, const T& value, const T& attn_bias,
    std::array<bool, 4> grad_input_mask, const T& out, const T& logsumexp, const T& /*cum_seq_q*/,
    const T& /*cum_seq_k*/, int64_t /*max_q*/, int64_t /*max_k*/, double dropout_p, bool is_causal,
    const T& philox_seed, const T& philox_offset, std::optional<double> scale) {
  constexpr const char* op = "_scaled_dot_product_fused_attention_overrideable_backward";
  TORCH_CHECK(dropout_p == 0.0 || (philox_seed.defined() && philox_offset.defined()), op,
              ": dropout_p > 0 needs the forward's philox_seed and philox_offset");
  TORCH_CHECK(!grad_input_mask[3] || !attn_bias.defined(), op, ": the gradient of attn_bias is not supported");
  c10::DeviceGuard guard(query.device());
  const T q = unit_cols(query), k = unit_cols(key), v = unit_cols(value);
  const T bias = bias_view(attn_bias.defined() ? OptT(attn_bias) : std::nullopt, q, k);
  npu_kernels::AttentionGradArgs g;
  g.fwd = args_of(op, q, k, v, bias, is_causal, scale, dropout_p);
  if (dropout_p > 0.0) {
    g.fwd.seed = static_cast<uint64_t>(philox_seed.item<int64_t>());
    g.fwd.offset = static_cast<uint64_t>(philox_offset.item<int64_t>());
  }
  const T o = unit_cols(out), d = unit_cols(grad_out), lse = logsumexp.contiguous();
  const int64_t rows = g.fwd.batch * g.fwd.heads * g.fwd.q_len;
  TORCH_CHECK(o.sizes() == grad_out.sizes() && o.size(3) == v.size(3) && lse.numel() == rows &&
                  lse.scalar_type() == lse_dtype(q) && d.scalar_type() == q.scalar_type(),
              op, ": out ", out.sizes(), ", grad_out ", grad_out.sizes(), " and logsumexp ", logsumexp.sizes(),
              " do not match the forward of query ", q.sizes());
  g.fwd.out = operand(o);
  g.fwd.lse = const_cast<void*>(lse.const_data_ptr());
  g.dout = operand(d);
  // The gradients are laid out as their inputs (ATen's meta function: empty_like)
  const T dq = at::empty_like(query), dk = at::empty_like(key), dv = at::empty_like(value);
  T dq_k = unit_cols_out(dq), dk_k = unit_cols_out(dk), dv_k = unit_cols_out(dv);
  g.dq = operand(dq_k);
  g.dk = operand(dk_k);
  g.dv = operand(dv_k);
  NPU_CHECK(npu_kernels::attention_backward(current_native_stream(q.device().index()), g));
  for (auto [want, got] : {std::pair<const T&, const T&>{dq, dq_k}, {dk, dk_k}, {dv, dv_k}})
    if (!got.is_same(want)) want.copy_(got);
  return {dq, dk, dv, T()};
}

// --- torch_npu's npu_fusion_attention: the same kernel over its layouts, masks and dropout ---------------

namespace {

// A layout operand (BSH, SBH, BSND, BNSD) as the kernel's [B, N, S, D] view of the same memory.
T to_bnsd(const char* op, const char* arg, const T& t, std::string_view layout, int64_t heads) {
  const int64_t want = layout == "BNSD" || layout == "BSND" ? 4 : 3;
  TORCH_CHECK(t.dim() == want, op, ": argument '", arg, "' must be ", want, "-D for input_layout ", layout, ", got ",
              t.sizes());
  if (layout == "BNSD") return t;
  if (layout == "BSND") return t.transpose(1, 2);
  TORCH_CHECK(heads > 0 && t.size(2) % heads == 0, op, ": the hidden size of '", arg, "' (", t.size(2),
              ") is not a multiple of its head count ", heads);
  const T split = t.unflatten(2, {heads, t.size(2) / heads});
  return layout == "BSH" ? split.transpose(1, 2) : split.permute({1, 2, 0, 3});  // SBH: [S, B, N, D]
}

std::string_view check_layout(const char* op, c10::string_view layout) {
  for (std::string_view l : {"BSH", "SBH", "BSND", "BNSD"})
    if (layout == l) return l;
  TORCH_CHECK(false, op, ": argument 'input_layout' must be one of BSH, SBH, BSND, BNSD, got '", layout, "'");
}

// A layout operand's head count: query's is head_num; key's and value's follow from their hidden size.
int64_t kv_heads(const T& q4, const T& t, std::string_view layout) {
  if (layout == "BNSD") return t.size(1);
  if (layout == "BSND") return t.size(2);
  return t.size(2) / q4.size(3);
}

// Key/value heads repeated to the query's (grouped-query attention) as the kernel needs equal counts.
T repeat_heads(const char* op, const char* arg, const T& t, int64_t heads) {
  TORCH_CHECK(t.size(1) > 0 && heads % t.size(1) == 0, op, ": head_num ", heads, " is not a multiple of the ",
              t.size(1), " heads of '", arg, "'");
  return t.size(1) == heads ? t : t.repeat_interleave(heads / t.size(1), 1);
}

// The scores' additive term: pse plus the mask (true/1 = masked out) as -inf, and the sparse modes'
// causal shapes; `causal` is set for the top-left causal mask the kernel applies itself.
T fusion_bias(const char* op, const T& q, const T& k, const OptT& pse, const OptT& mask, int64_t sparse_mode,
              int64_t pre_tokens, int64_t next_tokens, bool* causal) {
  const int64_t B = q.size(0), N = q.size(1), L = q.size(2), S = k.size(2);
  *causal = false;
  T bias;
  auto add = [&](const T& t) { bias = bias.defined() ? bias + t : t; };
  if (pse.has_value() && pse->defined()) {
    check_device_arg(op, "pse", *pse, q.device());
    TORCH_CHECK(pse->dim() <= 4 && at::is_expandable_to(pse->sizes(), {B, N, L, S}), op, ": argument 'pse' of shape ",
                pse->sizes(), " does not broadcast to [B, N, Sq, Skv] = ", at::IntArrayRef{B, N, L, S});
    add(pse->to(q.scalar_type()));
  }
  const double inf = std::numeric_limits<double>::infinity();
  auto masked = [&](const T& m) { return at::zeros(m.sizes(), q.options()).masked_fill_(m, -inf); };
  const T rows = at::arange(L, q.options().dtype(at::kLong)).unsqueeze(1);
  const T cols = at::arange(S, q.options().dtype(at::kLong)).unsqueeze(0);
  switch (sparse_mode) {
    case 0:
    case 1: {
      if (mask.has_value() && mask->defined()) {
        check_device_arg(op, "atten_mask", *mask, q.device());
        TORCH_CHECK(mask->scalar_type() == at::kBool || mask->scalar_type() == at::kByte, op,
                    ": argument 'atten_mask' must be bool or uint8 (1 = masked out), got ", mask->scalar_type());
        TORCH_CHECK(mask->dim() <= 4 && at::is_expandable_to(mask->sizes(), {B, N, L, S}), op,
                    ": argument 'atten_mask' of shape ", mask->sizes(), " does not broadcast to [B, N, Sq, Skv] = ",
                    at::IntArrayRef{B, N, L, S});
        add(masked(mask->to(at::kBool)));
      }
      // sparse_mode 0's band: key j is seen from query i when i - pre_tokens <= j <= i + next_tokens
      if (sparse_mode == 0 && (pre_tokens < L + S || next_tokens < L + S)) {
        add(masked((cols > rows + next_tokens).logical_or_(cols < rows - pre_tokens)));
      }
      break;
    }
    case 2: *causal = true; break;  // leftUpCausal: key j > query i masked (the kernel's causal)
    case 3:  // rightDownCausal: aligned to the bottom-right corner
      if (L == S) {
        *causal = true;
      } else {
        add(masked(cols > rows + (S - L)));
      }
      break;
    default:
      TORCH_CHECK(false, op, ": argument 'sparse_mode' ", sparse_mode,
                  " is not supported on npu (0 mask and band, 1 full mask, 2 left-up causal, 3 right-down causal)");
  }
  return bias.defined() ? bias.expand({B, N, L, S}) : bias;
}

void check_fusion_args(const char* op, const OptT& padding_mask, at::OptionalIntArrayRef prefix,
                       at::OptionalIntArrayRef qlen, at::OptionalIntArrayRef kvlen, double keep_prob) {
  TORCH_CHECK(!padding_mask.has_value() || !padding_mask->defined(), op,
              ": argument 'padding_mask' is reserved by torch_npu and not supported; pass atten_mask");
  TORCH_CHECK(!prefix.has_value() && !qlen.has_value() && !kvlen.has_value(), op,
              ": arguments 'prefix', 'actual_seq_qlen' and 'actual_seq_kvlen' (the TND / prefix sparse modes) are "
              "not supported on npu");
  TORCH_CHECK(keep_prob > 0.0 && keep_prob <= 1.0, op, ": argument 'keep_prob' must be in (0, 1], got ", keep_prob);
}

// The [B, N, S, D] views of query, key and value and the kernel's arguments for them.
struct Fusion {
  T q, k, v, bias;
  npu_kernels::AttentionArgs args;
  int64_t kv_group = 1;  // query heads per key/value head
};
Fusion fusion_args(const char* op, const T& query, const T& key, const T& value, int64_t head_num,
                   c10::string_view input_layout, const OptT& pse, const OptT& atten_mask, double scale,
                   double keep_prob, int64_t pre_tokens, int64_t next_tokens, int64_t sparse_mode) {
  check_devices(op, {{"query", &query}, {"key", &key}, {"value", &value}});
  const std::string_view layout = check_layout(op, input_layout);
  TORCH_CHECK(head_num > 0, op, ": argument 'head_num' must be positive, got ", head_num);
  for (auto [arg, t] : {std::pair{"query", &query}, std::pair{"key", &key}, std::pair{"value", &value}}) {
    TORCH_CHECK(at::isFloatingType(t->scalar_type()) && t->scalar_type() == query.scalar_type(), op, ": argument '",
                arg, "' must be floating and of query's dtype ", query.scalar_type(), ", got ", t->scalar_type());
  }
  Fusion f;
  f.q = unit_cols(to_bnsd(op, "query", query, layout, head_num));
  TORCH_CHECK(layout.size() == 4 || query.size(2) == head_num * f.q.size(3), op, ": query's hidden size ",
              query.size(2), " is not head_num * head_dim");
  TORCH_CHECK(f.q.size(1) == head_num, op, ": query has ", f.q.size(1), " heads, head_num is ", head_num);
  const T k4 = to_bnsd(op, "key", key, layout, kv_heads(f.q, key, layout));
  const T v4 = to_bnsd(op, "value", value, layout, kv_heads(f.q, key, layout));
  TORCH_CHECK(k4.size(0) == f.q.size(0) && v4.size(0) == f.q.size(0) && k4.size(3) == f.q.size(3) &&
                  v4.sizes().slice(0, 3) == k4.sizes().slice(0, 3),
              op, ": key ", key.sizes(), " and value ", value.sizes(), " do not match query ", query.sizes(),
              " in layout ", layout, " (equal batch, head_dim and key/value lengths and heads)");
  f.kv_group = head_num / std::max<int64_t>(k4.size(1), 1);
  f.k = unit_cols(repeat_heads(op, "key", k4, head_num));
  f.v = unit_cols(repeat_heads(op, "value", v4, head_num));
  bool causal = false;
  f.bias = fusion_bias(op, f.q, f.k, pse, atten_mask, sparse_mode, pre_tokens, next_tokens, &causal);
  f.args = args_of(op, f.q, f.k, f.v, f.bias, causal, scale, 1.0 - keep_prob);
  return f;
}

// An output in the input layout and its [B, N, S, D] view for the kernel.
std::pair<T, T> empty_in_layout(const T& like, const T& like4, std::string_view layout, int64_t heads) {
  T out = at::empty(like.sizes(), like.options());
  return {out, to_bnsd("", "", out, layout, heads)};
}

// The sums over a group of repeated key/value heads (grouped-query attention's gradient).
T sum_heads(const T& g, int64_t group) {
  return group == 1 ? g : g.unflatten(1, {g.size(1) / group, group}).sum(2);
}

}  // namespace

std::tuple<T, T, T, T, c10::SymInt, c10::SymInt, c10::SymInt> NF::npu_fusion_attention(
    const T& query, const T& key, const T& value, int64_t head_num, c10::string_view input_layout, const OptT& pse,
    const OptT& padding_mask, const OptT& atten_mask, double scale, double keep_prob, int64_t pre_tockens,
    int64_t next_tockens, int64_t /*inner_precise*/, at::OptionalIntArrayRef prefix,
    at::OptionalIntArrayRef actual_seq_qlen, at::OptionalIntArrayRef actual_seq_kvlen, int64_t sparse_mode,
    bool /*gen_mask_parallel*/, bool /*sync*/) {
  constexpr const char* op = "npu_fusion_attention";
  check_fusion_args(op, padding_mask, prefix, actual_seq_qlen, actual_seq_kvlen, keep_prob);
  c10::DeviceGuard guard(query.device());
  Fusion f = fusion_args(op, query, key, value, head_num, input_layout, pse, atten_mask, scale, keep_prob,
                         pre_tockens, next_tockens, sparse_mode);
  auto& a = f.args;
  if (keep_prob < 1.0) reserve_dropout(a, f.q);
  const std::string_view layout = check_layout(op, input_layout);
  std::vector<int64_t> out_shape(query.sizes().begin(), query.sizes().end());
  out_shape.back() = layout.size() == 4 ? a.v_dim : a.heads * a.v_dim;  // value's head_dim may differ
  T out = at::empty(out_shape, query.options());
  const T out4 = to_bnsd(op, "out", out, layout, a.heads);
  T lse = at::empty({a.batch, a.heads, a.q_len}, f.q.options().dtype(lse_dtype(f.q)));
  a.out = operand(out4);
  a.lse = lse.data_ptr();
  NPU_CHECK(npu_kernels::attention_forward(current_native_stream(query.device().index()), a));
  // torch_npu's softmax_max / softmax_sum ([B, N, Sq, 8] float32): here max = the row's log-sum-exp and
  // sum = 1, which reconstruct the same probabilities exp(s - max) / sum
  T softmax_max = lse.to(at::kFloat).unsqueeze(-1).expand({a.batch, a.heads, a.q_len, 8}).contiguous();
  T softmax_sum = at::ones({a.batch, a.heads, a.q_len, 8}, softmax_max.options());
  const int64_t numels = a.batch * a.heads * a.q_len * a.kv_len;
  // SymInt in the schema: under torch.compile the seed and offset are data-dependent (unbacked) ints
  return {out, softmax_max, softmax_sum, at::empty({0}, query.options()), c10::SymInt(static_cast<int64_t>(a.seed)),
          c10::SymInt(static_cast<int64_t>(a.offset)), c10::SymInt(numels)};
}

std::tuple<T, T, T, T> NF::npu_fusion_attention_grad(
    const T& query, const T& key, const T& value, const T& dy, int64_t head_num, c10::string_view input_layout,
    const OptT& pse, const OptT& padding_mask, const OptT& atten_mask, const OptT& softmax_max,
    const OptT& softmax_sum, const OptT& /*softmax_in*/, const OptT& attention_in, double scale_value,
    double keep_prob, int64_t pre_tockens, int64_t next_tockens, int64_t /*inner_precise*/, int64_t seed,
    int64_t offset, int64_t /*numels*/, at::OptionalIntArrayRef prefix, at::OptionalIntArrayRef actual_seq_qlen,
    at::OptionalIntArrayRef actual_seq_kvlen, int64_t sparse_mode, bool /*gen_mask_parallel*/, bool /*sync*/) {
  constexpr const char* op = "npu_fusion_attention_grad";
  check_fusion_args(op, padding_mask, prefix, actual_seq_qlen, actual_seq_kvlen, keep_prob);
  TORCH_CHECK(softmax_max.has_value() && softmax_sum.has_value() && attention_in.has_value(), op,
              ": needs the forward's softmax_max, softmax_sum and attention_in");
  c10::DeviceGuard guard(query.device());
  Fusion f = fusion_args(op, query, key, value, head_num, input_layout, pse, atten_mask, scale_value, keep_prob,
                         pre_tockens, next_tockens, sparse_mode);
  const std::string_view layout = check_layout(op, input_layout);
  TORCH_CHECK(dy.sizes() == attention_in->sizes(), op, ": argument 'dy' of shape ", dy.sizes(),
              " must match attention_in ", attention_in->sizes());
  npu_kernels::AttentionGradArgs g;
  g.fwd = f.args;
  g.fwd.seed = static_cast<uint64_t>(seed);
  g.fwd.offset = static_cast<uint64_t>(offset);
  const int64_t B = g.fwd.batch, N = g.fwd.heads, L = g.fwd.q_len;
  const T lse = (softmax_max->select(-1, 0) + softmax_sum->select(-1, 0).log())
                    .to(lse_dtype(f.q))
                    .expand({B, N, L})
                    .contiguous();
  const T o4 = unit_cols(to_bnsd(op, "attention_in", attention_in->to(query.scalar_type()), layout, N));
  const T d4 = unit_cols(to_bnsd(op, "dy", dy.to(query.scalar_type()), layout, N));
  g.fwd.out = operand(o4);
  g.fwd.lse = const_cast<void*>(lse.const_data_ptr());
  g.dout = operand(d4);
  // dq in query's layout; dk / dv per repeated head first, then summed over each group of query heads
  auto [dq, dq4] = empty_in_layout(query, f.q, layout, N);
  T dk4 = at::empty(f.k.sizes(), f.k.options()), dv4 = at::empty(f.v.sizes(), f.v.options());
  g.dq = operand(dq4);
  g.dk = operand(dk4);
  g.dv = operand(dv4);
  NPU_CHECK(npu_kernels::attention_backward(current_native_stream(query.device().index()), g));
  auto back = [&](const T& grad4, const T& like) {
    T out = at::empty(like.sizes(), like.options());
    to_bnsd(op, "", out, layout, kv_heads(f.q, like, layout)).copy_(sum_heads(grad4, f.kv_group));
    return out;
  };
  return {dq, back(dk4, key), back(dv4, value), at::empty({0}, query.options())};
}

}  // namespace torch_npu_sim

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &torch_npu_sim::NPUNativeFunctions::_fused_sdp_choice);
}  // namespace at::native
