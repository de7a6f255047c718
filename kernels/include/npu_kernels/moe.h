// torch_npu's Mixture-of-Experts kernels (torch-free): gating top-k softmax, init routing, grouped matmul, finalize.

// float32, float16 and bfloat16; 16-bit data is widened to fp32 in registers, accumulation in fp32. Every
// launch records its GM bytes and FLOPs (launch records).
//
// Semantics, as documented by torch_npu / CANN (where the docs are silent the choice matching a
// plain-PyTorch reference is said so):
//
// npu_moe_gating_top_k_softmax(x, finished=None, k=1) -> (y, expert_idx, row_idx)
//   https://www.hiascend.com/document/detail/zh/canncommercial/800/apiref/aolapi/context/aclnnMoeGatingTopKSoftmax.md
//   https://hiascend.com/document/detail/zh/Pytorch/600/apiref/apilist/ptaoplist_000856.html
//   softmax over the last dim, then topK: y = the k largest probabilities (descending), expert_idx their
//   experts; row_idx = arange(rows * k).reshape(k, rows).T, i.e. row_idx[i][j] = j * rows + i.
//   0 < k <= E (the torch_npu page; k <= 1024 there, not enforced here). finished (bool, rows): "if a row's
//   finished is True, its expert index is filled with num_expert (= E)"; y keeps the top-k probabilities
//   (torch_npu's own unit-test reference, TestNpuMoeGatingTopKSoftmax.cpu_op_exec, only rewrites
//   expert_idx). Ties: that reference ranks with np.argsort(-softmax, kind='stable') on the
//   probabilities in x's dtype, so equal probabilities go lower expert first; we rank the probabilities
//   rounded to x's dtype (the values y holds), ties to the lower expert, NaN above every number (torch.topk).
//
// npu_moe_init_routing(x, row_idx, expert_idx, active_num) -> (expanded_x, expanded_row_idx, expanded_expert_idx)
//   https://www.hiascend.com/document/detail/zh/CANNCommunityEdition/82RC1/API/aolapi/context/aclnnMoeInitRouting.md
//   github.com/Ascend/op-plugin: docs/zh/custom_APIs/torch_npu/torch_npu-npu_moe_init_routing.md
//   expanded_expert_idx, sorted_row_idx = keyValueSort(expert_idx, row_idx) over the row-major flattening
//   (rows * k); the equivalent numpy logic there is a *stable* argsort, so equal experts keep flattened
//   order (token i, then choice j). expanded_row_idx[sorted_row_idx[d]] = d: indexed by the row_idx value
//   (src, j * rows + i), holding the destination row d (src -> dst), for all rows * k entries.
//   expanded_x[d] = x[sorted_row_idx[d] % rows] for d < min(rows, active_num) * k (the rows it has).
//   Here: a deterministic counting sort over experts [0, num_experts] (num_experts itself is the bucket of
//   gating's finished rows, sorted last); an expert outside that range is a kernel error. num_experts = 0
//   takes the range [0, max(expert_idx)] from the data (a negative expert is the same kernel error).
//
// npu_grouped_matmul(x, weight, *, bias, group_list, split_item, ...) -> list, the MoE case
//   https://hiascend.com/document/detail/zh/Pytorch/60RC3/apiref/apilist/ptaoplist_000451.html
//   https://www.hiascend.com/document/detail/zh/Pytorch/700/apiref/apilist/ptaoplist_000524.html
//   one x (sum of group rows, K) split along M by group_list ("group_list[0]=10: x's first 10 rows take
//   part in the first matmul"; cumulative, group_list_type=0), one weight (K, N) and optional bias (N)
//   per group: y[rows of g] = x[rows of g] @ weight[g] + bias[g]; y is one (rows, N) tensor. Here group_list
//   stays on the device (read by the kernel) and y's rows past the last group are zeros.
//
// npu_moe_finalize_routing(expanded_permuted_rows, skip1, skip2, bias, scales, expanded_src_to_dst_row,
//                          export_for_source_row, drop_pad_mode=0) -> out
//   https://hiascend.com/document/detail/zh/Pytorch/60RC3/apiref/apilist/ptaoplist_000454.html
//   https://www.hiascend.com/document/detail/zh/CANNCommunityEdition/82RC1alpha003/API/aolapi/context/
//   aclnnMoeFinalizeRoutingV2.md
//   e = export_for_source_row[i, k];
//   out[i, h] = skip1[i, h] + skip2[i, h] + sum_k scales[i, k] * (expanded_permuted_rows[
//               expanded_src_to_dst_row[i + k * rows], h] + bias[e, h])
//   skip1, skip2, bias, scales optional (torch_npu: skip2 None requires skip1 None; an absent scale is 1,
//   an absent term 0); drop_pad_mode only 0 (its documented range). Docs silent: a destination row past
//   the rows expanded_permuted_rows has (cut by init_routing's active_num) contributes nothing; the sum
//   over k runs in fp32 in k order, the result is rounded once.
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// x (rows, experts) contiguous in `dtype`; finished (rows) optional; y (rows, k) in `dtype`;
// expert_idx and row_idx (rows, k) int32.
struct MoeGatingTopKSoftmaxArgs {
  DType dtype = DType::kFloat32;
  int64_t rows = 0, experts = 0, k = 1;
  const void* x = nullptr;
  const bool* finished = nullptr;
  void* y = nullptr;
  int32_t* expert_idx = nullptr;
  int32_t* row_idx = nullptr;
};
npu_sim::Status moe_gating_top_k_softmax(npu_sim::Stream stream, const MoeGatingTopKSoftmaxArgs& args);

// x (rows, hidden) in `dtype`; row_idx and expert_idx (rows, k) int32; expert values in [0, num_experts].
// num_experts == 0: the bucket count comes from the data (the sort kernel scans expert_idx: max + 1, values
// must be >= 0), so the caller needs no host read of expert_idx; num_experts > 0 bounds the values as said.
// expanded_x (min(rows, active_num) * k, hidden) in `dtype`; expanded_row_idx and expanded_expert_idx
// (rows * k) int32. active_num >= 0.
struct MoeInitRoutingArgs {
  DType dtype = DType::kFloat32;
  int64_t rows = 0, hidden = 0, k = 1, num_experts = 0, active_num = 0;
  const void* x = nullptr;
  const int32_t* row_idx = nullptr;
  const int32_t* expert_idx = nullptr;
  void* expanded_x = nullptr;
  int32_t* expanded_row_idx = nullptr;
  int32_t* expanded_expert_idx = nullptr;
};
npu_sim::Status moe_init_routing(npu_sim::Stream stream, const MoeInitRoutingArgs& args);

// npu_moe_compute_expert_tokens(sorted_expert_for_source_row, num_expert) -> expert_tokens
//   https://hiascend.com/document/detail/zh/Pytorch/600/apiref/apilist/ptaoplist_000854.html
//   "finds, by binary search, the position of the last row each expert processes": expert_tokens[e] = the
//   number of entries <= e (an upper bound in the sorted input), i.e. the cumulative group_list that
//   grouped_matmul takes, computed on the stream (no host read, unlike bincount's output size). The input is
//   init routing's expanded_expert_idx: int32, sorted ascending; the kernel checks the order (a KernelError
//   names the first entry below its predecessor). Entries >= num_experts count for no expert (the page's
//   example: [3, 3, 4, 5, 6, 7] with 5 experts gives [0, 0, 0, 2, 3]). Output int32, num_experts entries.
struct MoeComputeExpertTokensArgs {
  int64_t rows = 0, num_experts = 0;
  const int32_t* sorted_experts = nullptr;
  int32_t* expert_tokens = nullptr;
};
npu_sim::Status moe_compute_expert_tokens(npu_sim::Stream stream, const MoeComputeExpertTokensArgs& args);

// x (x_rows, k) and y (x_rows, n) contiguous in `dtype` (float32, float64, float16, bfloat16).
// group_list: a DEVICE array of `groups` int64 (or, in group_list_i32, int32) cumulative row counts, read by the
// kernel when it runs (it may
// be written by earlier work on the stream; the launch needs no host copy of it): group g is rows
// [group_list[g - 1], group_list[g]) of x and y (group_list[-1] = 0). The kernel checks
// 0 <= group_list[0] <= ... <= group_list[groups - 1] <= x_rows; a bad entry fails the launch (KernelError
// "grouped_matmul: group_list[g] = v ...", reported at the next sync). Rows of y from group_list[groups - 1]
// to x_rows are zero-filled (all of y when groups == 0). x_rows: rows of x and y, the upper bound known at
// enqueue time. weight: a HOST array of `groups` device pointers to contiguous (k, n) matrices; bias null or
// a HOST array of `groups` device pointers to (n) vectors (an entry may be null: no bias for that group).
// One launch runs every group: float32/float64 through OpenBLAS on row slices when it is loaded, else (and
// for 16-bit types) the Cube tiling with UB-packed panels.
struct GroupedMatmulArgs {
  DType dtype = DType::kFloat32;
  int64_t groups = 0, k = 0, n = 0;
  int64_t x_rows = 0;
  const int64_t* group_list = nullptr;
  const int32_t* group_list_i32 = nullptr;  // instead of group_list: int32 counts (compute_expert_tokens' output)
  const void* x = nullptr;
  const void* const* weight = nullptr;
  const void* const* bias = nullptr;
  void* y = nullptr;
};
npu_sim::Status grouped_matmul(npu_sim::Stream stream, const GroupedMatmulArgs& args);

// expanded_permuted_rows (expanded_rows, hidden); skip1, skip2, out (rows, hidden); bias (num_experts, hidden);
// scales (rows, k): all contiguous in `dtype`. expanded_src_to_dst_row (rows * k) and
// export_for_source_row (rows, k) int32; the latter is needed only with bias.
struct MoeFinalizeRoutingArgs {
  DType dtype = DType::kFloat32;
  int64_t rows = 0, hidden = 0, k = 1, num_experts = 0, expanded_rows = 0;
  int64_t drop_pad_mode = 0;
  const void* expanded_permuted_rows = nullptr;
  const void* skip1 = nullptr;
  const void* skip2 = nullptr;
  const void* bias = nullptr;
  const void* scales = nullptr;
  const int32_t* expanded_src_to_dst_row = nullptr;
  const int32_t* export_for_source_row = nullptr;
  void* out = nullptr;
};
npu_sim::Status moe_finalize_routing(npu_sim::Stream stream, const MoeFinalizeRoutingArgs& args);

}  // namespace npu_kernels
