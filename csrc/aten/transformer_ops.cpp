// The nn.Transformer inference fast paths for npu (nn.TransformerEncoderLayer / nn.MultiheadAttention in eval
// under no_grad): ATen's own compositions (_transformer_encoder_layer_fwd, _native_multi_head_attention, named
// in ops.yaml) run here because the ops they call are native; this file holds those ops' npu kernels, each a
// composition of native ops with the CPU kernel's checks.
#include <ATen/ops/_softmax.h>
#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/relu.h>
#include <c10/core/DeviceGuard.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "aten/npu_tensor.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
using T = at::Tensor;

// qkv [B, L, 3 * D] + bias -> q, k, v [B, heads, L, D / heads], q divided by sqrt(D / heads).
std::tuple<T, T, T> NF::_transform_bias_rescale_qkv(const T& qkv, const T& qkv_bias, int64_t num_heads) {
  constexpr const char* op = "_transform_bias_rescale_qkv";
  TORCH_CHECK(is_npu(qkv), op, ": expected an npu tensor, got one on ", qkv.device());
  TORCH_CHECK(qkv.dim() == 3, op, ": expected qkv of shape [B, L, 3 * D], got ", qkv.sizes());
  const int64_t B = qkv.size(0), L = qkv.size(1), D3 = qkv.size(2);
  TORCH_CHECK(D3 % 3 == 0, op, ": qkv's last dimension (", D3, ") must be a multiple of 3");
  const int64_t D = D3 / 3;
  TORCH_CHECK(num_heads > 0 && D % num_heads == 0, op, ": the embedding dimension ", D,
              " must be divisible by num_heads (", num_heads, ")");
  TORCH_CHECK(qkv_bias.dim() == 1 && qkv_bias.size(0) == D3, op, ": expected qkv_bias of shape [", D3, "], got ",
              qkv_bias.sizes());
  check_device_arg(op, "qkv_bias", qkv_bias, qkv.device());
  c10::DeviceGuard guard(qkv.device());
  const int64_t dh = D / num_heads;
  T q_k_v = at::empty({3, B, num_heads, L, dh}, qkv.options());
  q_k_v.copy_(at::add(qkv, qkv_bias).view({B, L, 3, num_heads, dh}).permute({2, 0, 3, 1, 4}));
  q_k_v.select(0, 0).div_(std::sqrt(static_cast<double>(dh)));
  return {q_k_v.select(0, 0), q_k_v.select(0, 1), q_k_v.select(0, 2)};
}

// softmax over `dim` with the positions where `mask` is true left out (0 in the output; a row masked entirely is
// all 0, as CUDA's kernel writes it, where CPU's writes NaN). mask_type: 0 an [L, L] attention mask, 1 a [B, L]
// key-padding mask (for [B, H, L, L] input), 2 (or another mask/input rank) a mask of the input's shape.
T NF::_masked_softmax(const T& self, const T& mask, std::optional<int64_t> dim, std::optional<int64_t> mask_type) {
  constexpr const char* op = "_masked_softmax";
  TORCH_CHECK(is_npu(self), op, ": expected an npu tensor, got one on ", self.device());
  TORCH_CHECK(mask.scalar_type() == at::kBool, op, ": Mask should be a boolean tensor");
  check_device_arg(op, "mask", mask, self.device());
  int64_t type = mask_type.value_or(2);
  if (mask.dim() != 2 || self.dim() != 4) type = 2;
  T m = mask;
  if (type == 1) {
    TORCH_CHECK(self.size(0) == mask.size(0) && self.size(2) == mask.size(1), op,
                ": For mask_type == 1 mask shape should be (B, L)");
    m = mask.view({self.size(0), 1, 1, self.size(2)}).expand(self.sizes());
  } else if (type == 0) {
    TORCH_CHECK(self.size(2) == mask.size(0) && self.size(2) == mask.size(1), op,
                ": For mask_type == 0 mask shape should be (L, L)");
    m = mask.view({1, 1, self.size(2), self.size(2)}).expand(self.sizes());
  } else {
    TORCH_CHECK(self.sizes() == mask.sizes(), op, ": For mask_type == 2 mask shape should match input shape");
  }
  c10::DeviceGuard guard(self.device());
  const int64_t d = c10::maybe_wrap_dim(dim.value_or(self.dim() - 1), self.dim());
  const T filled = self.masked_fill(m, -std::numeric_limits<double>::infinity());
  return at::_softmax(filled, d, false).masked_fill_(m, 0);
}

// addmm followed by relu, or by GELU (exact form, as CPU's kernel applies it) in place on the output.
T& NF::_addmm_activation_out(const T& self, const T& mat1, const T& mat2, const at::Scalar& beta,
                             const at::Scalar& alpha, bool use_gelu, T& out) {
  NF::addmm_out(self, mat1, mat2, beta, alpha, out);
  return use_gelu ? at::gelu_(out) : at::relu_(out);
}

T NF::_addmm_activation(const T& self, const T& mat1, const T& mat2, const at::Scalar& beta, const at::Scalar& alpha,
                        bool use_gelu) {
  T out = at::empty({0}, self.options());
  return NF::_addmm_activation_out(self, mat1, mat2, beta, alpha, use_gelu, out);
}

}  // namespace torch_npu_sim
