// torch_npu's Mixture-of-Experts ops (namespace npu, ops.yaml family `moe`): argument checks, outputs and
// the kernel descriptors; the math is in kernels/src/moe.cpp (semantics and sources in npu_kernels/moe.h).
#include <ATen/core/Tensor.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <c10/core/DeviceGuard.h>

#include <vector>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/moe.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
using T = at::Tensor;
using OptT = std::optional<T>;

namespace {

npu_kernels::DType float_dtype(const char* op, const char* arg, const T& t) {
  TORCH_CHECK(t.scalar_type() == at::kFloat || t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16, op,
              ": argument '", arg, "' must be float32, float16 or bfloat16, got ", t.scalar_type());
  return static_cast<npu_kernels::DType>(t.scalar_type());
}

void check_shape(const char* op, const char* arg, const T& t, at::IntArrayRef shape) {
  TORCH_CHECK(t.sizes() == shape, op, ": argument '", arg, "' must have shape ", shape, ", got ", t.sizes());
}

// An optional operand as the kernels read it: `like`'s dtype, dense, on its device.
const void* opt_data(const char* op, const char* arg, const OptT& t, const T& like, std::vector<T>& keep) {
  if (!t.has_value() || !t->defined()) return nullptr;
  check_device_arg(op, arg, *t, like.device());
  float_dtype(op, arg, *t);
  keep.push_back(t->to(like.scalar_type()).contiguous());
  return keep.back().const_data_ptr();
}

const int32_t* int32_data(const char* op, const char* arg, const T& t, const T& like, std::vector<T>& keep) {
  check_device_arg(op, arg, t, like.device());
  TORCH_CHECK(t.scalar_type() == at::kInt, op, ": argument '", arg, "' must be int32, got ", t.scalar_type());
  keep.push_back(t.contiguous());
  return keep.back().const_data_ptr<int32_t>();
}

// The MoE grouped matmul: one x split along its rows by the cumulative group_list, weight[g] (K, N) per group.
std::vector<T> grouped_by_list(const char* op, const T& x, at::TensorList weight, std::optional<at::TensorList> bias,
                               const T& group_list, int64_t split_item, int64_t group_list_type) {
  TORCH_CHECK(x.dim() == 2, op, ": with group_list, x must be one 2-D tensor (rows, K), got ", x.sizes());
  TORCH_CHECK(group_list.dim() == 1 && !at::isFloatingType(group_list.scalar_type()), op,
              ": argument 'group_list' must be a 1-D integer tensor, got ", group_list.sizes(), " ",
              group_list.scalar_type());
  TORCH_CHECK(group_list_type == 0 || group_list_type == 1, op,
              ": argument 'group_list_type' must be 0 (cumulative row counts) or 1 (row counts), got ", group_list_type);
  const int64_t groups = group_list.numel();
  // weight: one (K, N) tensor per group, or a single (groups, K, N) stack
  std::vector<T> w;
  if (weight.size() == 1 && weight[0].dim() == 3) {
    for (int64_t g = 0; g < weight[0].size(0); ++g) w.push_back(weight[0][g]);
  } else {
    w.assign(weight.begin(), weight.end());
  }
  TORCH_CHECK(static_cast<int64_t>(w.size()) == groups, op, ": group_list has ", groups, " groups but weight has ",
              w.size());
  const npu_kernels::DType dt = float_dtype(op, "x", x);
  const int64_t K = x.size(1), N = groups > 0 ? w[0].size(1) : 0;
  std::vector<T> keep;
  std::vector<const void*> wp, bp;
  for (int64_t g = 0; g < groups; ++g) {
    check_device_arg(op, "weight", w[g], x.device());
    TORCH_CHECK(w[g].dim() == 2 && w[g].size(0) == K && w[g].size(1) == N, op, ": weight[", g,
                "] must be (K, N) = (", K, ", ", N, "), got ", w[g].sizes());
    TORCH_CHECK(w[g].scalar_type() == x.scalar_type(), op, ": weight[", g, "] has dtype ", w[g].scalar_type(),
                ", x ", x.scalar_type());
    keep.push_back(w[g].contiguous());
    wp.push_back(keep.back().const_data_ptr());
  }
  if (bias.has_value() && !bias->empty()) {
    std::vector<T> b;
    if (bias->size() == 1 && (*bias)[0].dim() == 2) {
      for (int64_t g = 0; g < (*bias)[0].size(0); ++g) b.push_back((*bias)[0][g]);
    } else {
      b.assign(bias->begin(), bias->end());
    }
    TORCH_CHECK(static_cast<int64_t>(b.size()) == groups, op, ": bias has ", b.size(), " entries for ", groups,
                " groups");
    for (int64_t g = 0; g < groups; ++g) {
      check_shape(op, "bias", b[g], {N});
      bp.push_back(opt_data(op, "bias", b[g], x, keep));
    }
  }
  // the cumulative row counts stay on the device: the kernel reads (and checks) them when it runs, int64 or int32
  // (npu_moe_compute_expert_tokens' output) as they are
  const bool as_is = group_list_type == 0 && group_list.device() == x.device() &&
                     (group_list.scalar_type() == at::kLong || group_list.scalar_type() == at::kInt);
  const T cum = as_is ? group_list.contiguous()
                : group_list_type == 1 ? group_list.to(x.device(), at::kLong).cumsum(0)
                                       : group_list.to(x.device(), at::kLong).contiguous();
  c10::DeviceGuard guard(x.device());
  const T xc = x.contiguous();
  T y = at::empty({x.size(0), N}, x.options());  // rows past the last group: zeros, from the kernel
  npu_kernels::GroupedMatmulArgs a;
  a.dtype = dt;
  a.groups = groups;
  a.k = K;
  a.n = N;
  a.x_rows = x.size(0);
  if (cum.scalar_type() == at::kInt) {
    a.group_list_i32 = cum.const_data_ptr<int32_t>();
  } else {
    a.group_list = cum.const_data_ptr<int64_t>();
  }
  a.x = xc.const_data_ptr();
  a.weight = wp.data();
  a.bias = bp.empty() ? nullptr : bp.data();
  a.y = y.data_ptr();
  if (N > 0) NPU_CHECK(npu_kernels::grouped_matmul(stream_of(x), a));
  if (split_item == 2 || split_item == 3) return {y};
  // one output per group: their sizes are data, read on the host (a sync, as torch_npu's list output needs)
  const T ends = cum.cpu();
  std::vector<T> out;
  for (int64_t g = 0, begin = 0; g < groups; ++g) {
    const int64_t end = ends[g].item<int64_t>();
    out.push_back(y.narrow(0, begin, end - begin));
    begin = end;
  }
  return out;
}

}  // namespace

std::tuple<T, T, T> NF::npu_moe_gating_top_k_softmax(const T& x, const OptT& finished, int64_t k) {
  constexpr const char* op = "npu_moe_gating_top_k_softmax";
  check_devices(op, {{"x", &x}});
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) > 0, op, ": argument 'x' must be (..., experts) with experts > 0, got ",
              x.sizes());
  const int64_t experts = x.size(-1), rows = x.numel() / experts;
  TORCH_CHECK(k >= 1 && k <= experts, op, ": argument 'k' must be in [1, experts = ", experts, "], got ", k);
  c10::DeviceGuard guard(x.device());
  std::vector<T> keep;
  npu_kernels::MoeGatingTopKSoftmaxArgs a;
  a.dtype = float_dtype(op, "x", x);
  a.rows = rows;
  a.experts = experts;
  a.k = k;
  const T xc = x.contiguous();
  a.x = xc.const_data_ptr();
  if (finished.has_value() && finished->defined()) {
    check_device_arg(op, "finished", *finished, x.device());
    TORCH_CHECK(finished->scalar_type() == at::kBool && finished->numel() == rows, op,
                ": argument 'finished' must be a bool tensor with one value per row (", rows, "), got ",
                finished->sizes(), " ", finished->scalar_type());
    keep.push_back(finished->contiguous());
    a.finished = keep.back().const_data_ptr<bool>();
  }
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape.back() = k;
  T y = at::empty(shape, x.options()), expert_idx = at::empty(shape, x.options().dtype(at::kInt)),
    row_idx = at::empty(shape, x.options().dtype(at::kInt));
  a.y = y.data_ptr();
  a.expert_idx = expert_idx.data_ptr<int32_t>();
  a.row_idx = row_idx.data_ptr<int32_t>();
  if (rows > 0) NPU_CHECK(npu_kernels::moe_gating_top_k_softmax(stream_of(x), a));
  return {y, expert_idx, row_idx};
}

std::tuple<T, T, T> NF::npu_moe_init_routing(const T& x, const T& row_idx, const T& expert_idx, int64_t active_num) {
  constexpr const char* op = "npu_moe_init_routing";
  check_devices(op, {{"x", &x}, {"row_idx", &row_idx}, {"expert_idx", &expert_idx}});
  TORCH_CHECK(x.dim() == 2, op, ": argument 'x' must be (rows, hidden), got ", x.sizes());
  TORCH_CHECK(expert_idx.dim() == 2 && expert_idx.size(0) == x.size(0), op,
              ": argument 'expert_idx' must be (rows, k) with rows = ", x.size(0), ", got ", expert_idx.sizes());
  check_shape(op, "row_idx", row_idx, expert_idx.sizes());
  TORCH_CHECK(active_num >= 0, op, ": argument 'active_num' must be >= 0, got ", active_num);
  c10::DeviceGuard guard(x.device());
  std::vector<T> keep;
  npu_kernels::MoeInitRoutingArgs a;
  a.dtype = float_dtype(op, "x", x);
  a.rows = x.size(0);
  a.hidden = x.size(1);
  a.k = expert_idx.size(1);
  a.active_num = active_num;
  a.row_idx = int32_data(op, "row_idx", row_idx, x, keep);
  a.expert_idx = int32_data(op, "expert_idx", expert_idx, x, keep);
  a.num_experts = 0;  // the sort takes its buckets from the data (gating's finished rows carry `experts`)
  const T xc = x.contiguous();
  a.x = xc.const_data_ptr();
  T expanded_x = at::empty({std::min(a.rows, active_num) * a.k, a.hidden}, x.options());
  T expanded_row_idx = at::empty({a.rows * a.k}, x.options().dtype(at::kInt));
  T expanded_expert_idx = at::empty({a.rows * a.k}, x.options().dtype(at::kInt));
  a.expanded_x = expanded_x.data_ptr();
  a.expanded_row_idx = expanded_row_idx.data_ptr<int32_t>();
  a.expanded_expert_idx = expanded_expert_idx.data_ptr<int32_t>();
  if (a.rows > 0 && a.k > 0) NPU_CHECK(npu_kernels::moe_init_routing(stream_of(x), a));
  return {expanded_x, expanded_row_idx, expanded_expert_idx};
}

T NF::npu_moe_compute_expert_tokens(const T& sorted_expert_for_source_row, int64_t num_expert) {
  constexpr const char* op = "npu_moe_compute_expert_tokens";
  const T& s = sorted_expert_for_source_row;
  check_devices(op, {{"sorted_expert_for_source_row", &s}});
  TORCH_CHECK(s.dim() == 1 && s.scalar_type() == at::kInt, op,
              ": argument 'sorted_expert_for_source_row' must be a 1-D int32 tensor, got ", s.sizes(), " ",
              s.scalar_type());
  TORCH_CHECK(s.numel() <= INT32_MAX, op, ": argument 'sorted_expert_for_source_row' must have fewer than 2^31 "
              "entries, got ", s.numel());
  TORCH_CHECK(num_expert >= 0, op, ": argument 'num_expert' must be >= 0, got ", num_expert);
  c10::DeviceGuard guard(s.device());
  const T sc = s.contiguous();
  T out = at::empty({num_expert}, s.options());
  npu_kernels::MoeComputeExpertTokensArgs a;
  a.rows = sc.numel();
  a.num_experts = num_expert;
  a.sorted_experts = sc.const_data_ptr<int32_t>();
  a.expert_tokens = out.data_ptr<int32_t>();
  NPU_CHECK(npu_kernels::moe_compute_expert_tokens(stream_of(s), a));
  return out;
}

std::vector<T> NF::npu_grouped_matmul(at::TensorList x, at::TensorList weight, std::optional<at::TensorList> bias,
                                      const OptT& group_list, int64_t split_item, std::optional<int64_t> group_type,
                                      int64_t group_list_type) {
  constexpr const char* op = "npu_grouped_matmul";
  TORCH_CHECK(!x.empty() && !weight.empty(), op, ": arguments 'x' and 'weight' must not be empty lists");
  TORCH_CHECK(split_item >= 0 && split_item <= 3, op, ": argument 'split_item' must be 0-3, got ", split_item);
  for (const T& t : x) check_device_arg(op, "x", t, x[0].device());
  if (group_list.has_value() && group_list->defined()) {
    TORCH_CHECK(x.size() == 1, op, ": with group_list, x must be a single tensor, got ", x.size());
    TORCH_CHECK(group_type.value_or(0) == 0, op, ": argument 'group_type' must be 0 (split x's rows) with group_list, got ",
                *group_type);
    return grouped_by_list(op, x[0], weight, bias, *group_list, split_item, group_list_type);
  }
  // no group_list: one GEMM per (x[i], weight[i]) pair
  TORCH_CHECK(x.size() == weight.size(), op, ": without group_list, x and weight must be lists of one length, got ",
              x.size(), " and ", weight.size());
  TORCH_CHECK(!bias.has_value() || bias->empty() || bias->size() == x.size(), op, ": bias must have ", x.size(),
              " entries, got ", bias->size());
  std::vector<T> out;
  for (size_t i = 0; i < x.size(); ++i) {
    check_device_arg(op, "weight", weight[i], x[0].device());
    TORCH_CHECK(x[i].dim() == 2 && weight[i].dim() == 2 && weight[i].size(0) == x[i].size(1), op, ": x[", i, "] ",
                x[i].sizes(), " and weight[", i, "] ", weight[i].sizes(), " are not (M, K) and (K, N)");
    const bool has_bias = bias.has_value() && !bias->empty() && (*bias)[i].defined();
    out.push_back(has_bias ? at::addmm((*bias)[i], x[i], weight[i]) : at::mm(x[i], weight[i]));
  }
  if (split_item == 2 || split_item == 3) return {at::cat(out, 0)};
  return out;
}

T NF::npu_moe_finalize_routing(const T& expanded_permuted_rows, const OptT& skip1, const OptT& skip2, const OptT& bias,
                               const OptT& scales, const T& expanded_src_to_dst_row,
                               const OptT& export_for_source_row, std::optional<int64_t> drop_pad_mode) {
  constexpr const char* op = "npu_moe_finalize_routing";
  const T& rows_in = expanded_permuted_rows;
  check_devices(op, {{"expanded_permuted_rows", &rows_in}, {"expanded_src_to_dst_row", &expanded_src_to_dst_row}});
  TORCH_CHECK(rows_in.dim() == 2, op, ": argument 'expanded_permuted_rows' must be 2-D, got ", rows_in.sizes());
  TORCH_CHECK(drop_pad_mode.value_or(0) == 0, op, ": argument 'drop_pad_mode' must be 0, got ", *drop_pad_mode);
  // the token count and k: from scales, export_for_source_row or skip1, and the index's length
  const int64_t n_idx = expanded_src_to_dst_row.numel();
  int64_t rows = -1, k = -1;
  for (const OptT* t : {&scales, &export_for_source_row}) {
    if (t->has_value() && (*t)->defined() && rows < 0) {
      TORCH_CHECK((*t)->dim() == 2, op, ": scales and export_for_source_row must be (rows, k), got ", (*t)->sizes());
      rows = (*t)->size(0), k = (*t)->size(1);
    }
  }
  if (rows < 0 && skip1.has_value() && skip1->defined()) {
    rows = skip1->size(0);
    k = rows > 0 ? n_idx / rows : 0;
  }
  TORCH_CHECK(rows >= 0, op, ": pass scales, export_for_source_row or skip1 (the token count is taken from them)");
  TORCH_CHECK(rows * k == n_idx, op, ": argument 'expanded_src_to_dst_row' must have rows * k = ", rows * k,
              " entries, got ", n_idx);
  const int64_t H = rows_in.size(1);
  c10::DeviceGuard guard(rows_in.device());
  std::vector<T> keep;
  npu_kernels::MoeFinalizeRoutingArgs a;
  a.dtype = float_dtype(op, "expanded_permuted_rows", rows_in);
  a.rows = rows;
  a.hidden = H;
  a.k = k;
  a.expanded_rows = rows_in.size(0);
  const T epr = rows_in.contiguous();
  a.expanded_permuted_rows = epr.const_data_ptr();
  for (auto [arg, t] : {std::pair{"skip1", &skip1}, std::pair{"skip2", &skip2}}) {
    if (t->has_value() && (*t)->defined()) check_shape(op, arg, **t, {rows, H});
  }
  a.skip1 = opt_data(op, "skip1", skip1, epr, keep);
  a.skip2 = opt_data(op, "skip2", skip2, epr, keep);
  a.scales = opt_data(op, "scales", scales, epr, keep);
  if (bias.has_value() && bias->defined()) {
    TORCH_CHECK(bias->dim() == 2 && bias->size(1) == H, op, ": argument 'bias' must be (experts, ", H, "), got ",
                bias->sizes());
    TORCH_CHECK(export_for_source_row.has_value() && export_for_source_row->defined(), op,
                ": bias needs export_for_source_row (each token's experts)");
    a.num_experts = bias->size(0);
    a.bias = opt_data(op, "bias", bias, epr, keep);
  }
  a.expanded_src_to_dst_row = int32_data(op, "expanded_src_to_dst_row", expanded_src_to_dst_row, epr, keep);
  if (export_for_source_row.has_value() && export_for_source_row->defined())
    a.export_for_source_row = int32_data(op, "export_for_source_row", *export_for_source_row, epr, keep);
  T out = at::empty({rows, H}, epr.options());
  a.out = out.data_ptr();
  if (rows > 0 && H > 0) NPU_CHECK(npu_kernels::moe_finalize_routing(stream_of(epr), a));
  return out;
}

}  // namespace torch_npu_sim
