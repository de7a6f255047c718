// The Mixture-of-Experts kernels (npu_kernels/moe.h): gating top-k softmax, init routing, grouped GEMM, finalize.
#include "npu_kernels/moe.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dtype_convert.h"
#include "gemm_tiling.h"
#include "npu_kernels/launch.h"

namespace npu_kernels {

namespace {

using detail::load_as;
using detail::store_as;

// Calls f(T{}) for the MoE dtypes (float32, float16, bfloat16); kInvalidValue for any other.
template <typename F>
npu_sim::Status dispatch_moe(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat16: return f(Half{});
    case DType::kBFloat16: return f(BFloat16{});
    default: return npu_sim::Status::kInvalidValue;
  }
}

[[noreturn]] void fail(const char* op, const std::string& what) {
  throw npu_sim::KernelError(std::string(op) + ": " + what);
}

// torch.topk's order: NaN above every number.
inline bool greater_nan_first(float a, float b) {
  if (std::isnan(a)) return !std::isnan(b);
  if (std::isnan(b)) return false;
  return a > b;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
npu_sim::Status moe_gating_top_k_softmax(npu_sim::Stream stream, const MoeGatingTopKSoftmaxArgs& a) {
  if (a.rows < 0 || a.experts < 1 || a.k < 1 || a.k > a.experts || a.experts > INT32_MAX) {
    return npu_sim::Status::kInvalidValue;
  }
  if (a.rows == 0) return npu_sim::Status::kSuccess;
  if (a.x == nullptr || a.y == nullptr || a.expert_idx == nullptr || a.row_idx == nullptr) {
    return npu_sim::Status::kInvalidValue;
  }
  return dispatch_moe(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const MoeGatingTopKSoftmaxArgs g = a;
    const int64_t grain = std::max<int64_t>(1, 4096 / g.experts);
    return parallel_for(stream, "moe_gating_top_k_softmax", g.rows, grain,
                        [g](int64_t begin, int64_t end, const npu_sim::BlockContext& ctx) {
      const int64_t E = g.experts, K = g.k;
      const T* x = static_cast<const T*>(g.x);
      T* y = static_cast<T*>(g.y);
      std::vector<float> p(E);
      std::vector<int32_t> order(E);
      for (int64_t i = begin; i < end; ++i) {
        const T* row = x + i * E;
        float m = -INFINITY;
        for (int64_t e = 0; e < E; ++e) m = std::max(m, p[e] = load_as<float>(row[e]));
        float sum = 0.0f;
        for (int64_t e = 0; e < E; ++e) sum += (p[e] = std::exp(p[e] - m));
        // Rank the probabilities as y stores them (rounded to T), ties to the lower expert.
        for (int64_t e = 0; e < E; ++e) p[e] = load_as<float>(store_as<T>(p[e] / sum));
        for (int64_t e = 0; e < E; ++e) order[e] = static_cast<int32_t>(e);
        auto before = [&](int32_t u, int32_t v) {
          return greater_nan_first(p[u], p[v]) || (!greater_nan_first(p[v], p[u]) && u < v);
        };
        std::partial_sort(order.begin(), order.begin() + K, order.end(), before);
        const bool done = g.finished != nullptr && g.finished[i];
        for (int64_t j = 0; j < K; ++j) {
          y[i * K + j] = store_as<T>(p[order[j]]);
          g.expert_idx[i * K + j] = done ? static_cast<int32_t>(E) : order[j];
          g.row_idx[i * K + j] = static_cast<int32_t>(j * g.rows + i);
        }
      }
      const uint64_t n = static_cast<uint64_t>(end - begin);
      npu_sim::record_traffic(ctx, n * (E * sizeof(T) + (g.finished != nullptr ? 1 : 0)),
                              n * K * (sizeof(T) + 2 * sizeof(int32_t)), 0, n * E * 5);
    });
  });
}

// ---------------------------------------------------------------------------------------------------
// Two launches: one block counting-sorts the rows * k (expert, position) pairs (histogram, exclusive scan,
// stable scatter: deterministic, equal experts keep flattened order) and writes expanded_expert_idx and
// expanded_row_idx; then the copy of the kept x rows, parallel over the sources, each into its destination.
npu_sim::Status moe_init_routing(npu_sim::Stream stream, const MoeInitRoutingArgs& a) {
  if (a.rows < 0 || a.hidden < 0 || a.k < 1 || a.num_experts < 1 || a.active_num < 0 ||
      a.rows * a.k > INT32_MAX) {
    return npu_sim::Status::kInvalidValue;
  }
  const int64_t n = a.rows * a.k;
  const int64_t kept = std::min(a.rows, a.active_num) * a.k;
  if (n == 0) return npu_sim::Status::kSuccess;
  if (a.row_idx == nullptr || a.expert_idx == nullptr || a.expanded_row_idx == nullptr ||
      a.expanded_expert_idx == nullptr || (kept > 0 && a.hidden > 0 && (a.x == nullptr || a.expanded_x == nullptr))) {
    return npu_sim::Status::kInvalidValue;
  }
  return dispatch_moe(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const MoeInitRoutingArgs r = a;
    auto sort = [r, n](const npu_sim::BlockContext& ctx) {
      const int64_t buckets = r.num_experts + 1;  // expert == num_experts: gating's finished rows, last
      std::vector<int64_t> start(buckets + 1, 0);
      for (int64_t p = 0; p < n; ++p) {
        const int32_t e = r.expert_idx[p];
        if (e < 0 || e > r.num_experts) {
          fail("moe_init_routing", "expert_idx[" + std::to_string(p) + "] = " + std::to_string(e) +
                                       " is out of range [0, " + std::to_string(r.num_experts) + "]");
        }
        ++start[e + 1];
      }
      for (int64_t e = 0; e < buckets; ++e) start[e + 1] += start[e];
      std::vector<char> seen(n, 0);  // row_idx must be a permutation of [0, n): every destination once
      for (int64_t p = 0; p < n; ++p) {
        const int32_t e = r.expert_idx[p], src = r.row_idx[p];
        if (src < 0 || src >= n || seen[src]) {
          fail("moe_init_routing", "row_idx[" + std::to_string(p) + "] = " + std::to_string(src) +
                                       (src < 0 || src >= n ? " is out of range [0, " + std::to_string(n) + ")"
                                                            : " repeats (row_idx must be a permutation)"));
        }
        seen[src] = 1;
        const int64_t d = start[e]++;
        r.expanded_expert_idx[d] = e;
        r.expanded_row_idx[src] = static_cast<int32_t>(d);
      }
      npu_sim::record_traffic(ctx, 3 * n * sizeof(int32_t), 2 * n * sizeof(int32_t), 0, 2 * n);
    };
    npu_sim::Status s = npu_sim::launch_kernel(stream, "moe_init_routing_sort", 1, std::move(sort));
    if (s != npu_sim::Status::kSuccess || kept == 0 || r.hidden == 0) return s;
    const int64_t grain = std::max<int64_t>(1, 16384 / (r.hidden * static_cast<int64_t>(sizeof(T))));
    return parallel_for(stream, "moe_init_routing_gather", n, grain,
                        [r, kept, n](int64_t begin, int64_t end, const npu_sim::BlockContext& ctx) {
      const std::size_t row_bytes = r.hidden * sizeof(T);
      const char* x = static_cast<const char*>(r.x);
      char* out = static_cast<char*>(r.expanded_x);
      uint64_t copied = 0;
      for (int64_t src = begin; src < end; ++src) {
        const int64_t d = r.expanded_row_idx[src];
        if (d < 0 || d >= n) {  // the sort failed (its error is the device's): never write outside expanded_x
          fail("moe_init_routing", "expanded_row_idx[" + std::to_string(src) + "] = " + std::to_string(d) +
                                       " is out of range (the routing sort did not complete)");
        }
        if (d >= kept) continue;  // past active_num: not materialised
        std::memcpy(out + d * row_bytes, x + (src % r.rows) * row_bytes, row_bytes);
        ++copied;
      }
      npu_sim::record_traffic(ctx, (end - begin) * sizeof(int32_t) + copied * row_bytes, copied * row_bytes, 0, 0);
    });
  });
}

// ---------------------------------------------------------------------------------------------------
// One launch over the C tiles of every group (a group of m_g rows has ceil(m_g / mc) * ceil(n / nc) of
// them; empty groups have none), the Cube GEMM's tiling and micro-kernel: A and B panels packed (widened)
// into the UB, fp32 accumulator, bias added and rounded once on the store.
npu_sim::Status grouped_matmul(npu_sim::Stream stream, const GroupedMatmulArgs& a) {
  if (a.groups < 0 || a.k < 0 || a.n < 0) return npu_sim::Status::kInvalidValue;
  if (a.groups == 0) return npu_sim::Status::kSuccess;
  if (a.group_list == nullptr) return npu_sim::Status::kInvalidValue;
  int64_t prev = 0, max_m = 0;
  for (int64_t g = 0; g < a.groups; ++g) {
    if (a.group_list[g] < prev) return npu_sim::Status::kInvalidValue;  // negative or decreasing
    max_m = std::max(max_m, a.group_list[g] - prev);
    prev = a.group_list[g];
  }
  const int64_t rows = prev;
  if (rows == 0 || a.n == 0) return npu_sim::Status::kSuccess;
  if (a.y == nullptr || (a.k > 0 && (a.x == nullptr || a.weight == nullptr))) return npu_sim::Status::kInvalidValue;
  for (int64_t g = 0; g < a.groups && a.k > 0; ++g) {
    if (a.weight[g] == nullptr) return npu_sim::Status::kInvalidValue;
  }
  return dispatch_moe(a.dtype, [&](auto tag) -> npu_sim::Status {
    using T = decltype(tag);
    detail::ensure_micro_kernel_loaded();
    std::size_t ub_bytes = 0;
    int ai_cores = 1, core_threads = 1;
    if (!detail::device_limits(stream, &ub_bytes, &ai_cores, &core_threads)) return npu_sim::Status::kInvalidHandle;
    const detail::TilePlan plan =
        detail::plan_tiles(ub_bytes, sizeof(float), 1, max_m, a.n, a.k, 2 * int64_t{core_threads});
    const int64_t nt = (a.n + plan.nc - 1) / plan.nc;
    // Per group: first row, rows, first tile, operands (the host arrays are copied: the kernel owns them).
    struct Group {
      int64_t row0, m, tile0;
      const T* w;
      const T* bias;
    };
    auto groups = std::make_shared<std::vector<Group>>();
    int64_t tiles = 0, row0 = 0;
    for (int64_t g = 0; g < a.groups; ++g) {
      const int64_t m = a.group_list[g] - row0;
      groups->push_back({row0, m, tiles, a.k > 0 ? static_cast<const T*>(a.weight[g]) : nullptr,
                         a.bias != nullptr ? static_cast<const T*>(a.bias[g]) : nullptr});
      tiles += (m + plan.mc - 1) / plan.mc * nt;
      row0 = a.group_list[g];
    }
    const uint32_t grid = static_cast<uint32_t>(std::min<int64_t>(tiles, std::max(ai_cores, 1)));
    const T* x = static_cast<const T*>(a.x);
    T* y = static_cast<T*>(a.y);
    const int64_t K = a.k, N = a.n;
    return npu_sim::launch_kernel(stream, "grouped_matmul", grid, [=](const npu_sim::BlockContext& ctx) {
      const std::size_t need = sizeof(float) * (plan.mc * plan.kc + plan.kc * plan.nc + plan.mc * plan.nc);
      if (need > ctx.ub_bytes) {
        fail("grouped_matmul", "tile plan needs " + std::to_string(need) + " bytes of Unified Buffer, the core has " +
                                   std::to_string(ctx.ub_bytes));
      }
      float* pa = static_cast<float*>(ctx.ub);
      float* pb = pa + plan.mc * plan.kc;
      float* pc = pb + plan.kc * plan.nc;
      const int64_t begin = tiles * ctx.block_idx / ctx.block_dim, end = tiles * (ctx.block_idx + 1) / ctx.block_dim;
      uint64_t read = 0, written = 0, flops = 0;
      for (int64_t u = begin; u < end; ++u) {
        const auto it = std::upper_bound(groups->begin(), groups->end(), u,
                                         [](int64_t t, const Group& gr) { return t < gr.tile0; }) - 1;
        const Group& gr = *it;
        const int64_t r = u - gr.tile0;
        const int64_t i0 = (r / nt) * plan.mc, j0 = (r % nt) * plan.nc;
        const int64_t mc = std::min(plan.mc, gr.m - i0), nc = std::min(plan.nc, N - j0);
        if (K == 0) std::fill(pc, pc + mc * nc, 0.0f);
        for (int64_t k0 = 0; k0 < K; k0 += plan.kc) {
          const int64_t kc = std::min(plan.kc, K - k0);
          detail::pack_strided(pa, x + (gr.row0 + i0) * K + k0, mc, kc, K, int64_t{1});
          detail::pack_strided(pb, gr.w + k0 * N + j0, kc, nc, N, int64_t{1});
          detail::micro_gemm(mc, nc, kc, pa, pb, pc, k0 > 0);
          read += (mc + nc) * kc * sizeof(T);
        }
        for (int64_t i = 0; i < mc; ++i) {
          T* out = y + (gr.row0 + i0 + i) * N + j0;
          const float* acc = pc + i * nc;
          if (gr.bias != nullptr) {
            for (int64_t j = 0; j < nc; ++j) out[j] = store_as<T>(acc[j] + load_as<float>(gr.bias[j0 + j]));
          } else {
            for (int64_t j = 0; j < nc; ++j) out[j] = store_as<T>(acc[j]);
          }
        }
        if (gr.bias != nullptr) read += nc * sizeof(T);
        written += mc * nc * sizeof(T);
        flops += 2 * mc * nc * K;
      }
      npu_sim::record_traffic(ctx, read, written, flops, 0);
    });
  });
}

// ---------------------------------------------------------------------------------------------------
npu_sim::Status moe_finalize_routing(npu_sim::Stream stream, const MoeFinalizeRoutingArgs& a) {
  if (a.rows < 0 || a.hidden < 0 || a.k < 1 || a.expanded_rows < 0 || a.expanded_rows > a.rows * a.k ||
      a.drop_pad_mode != 0 || (a.bias != nullptr && (a.num_experts < 1 || a.export_for_source_row == nullptr))) {
    return npu_sim::Status::kInvalidValue;
  }
  if (a.rows == 0 || a.hidden == 0) return npu_sim::Status::kSuccess;
  if (a.out == nullptr || a.expanded_src_to_dst_row == nullptr ||
      (a.expanded_rows > 0 && a.expanded_permuted_rows == nullptr)) {
    return npu_sim::Status::kInvalidValue;
  }
  return dispatch_moe(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const MoeFinalizeRoutingArgs f = a;
    const int64_t grain = std::max<int64_t>(1, 8192 / (f.hidden * f.k));
    return parallel_for(stream, "moe_finalize_routing", f.rows, grain,
                        [f](int64_t begin, int64_t end, const npu_sim::BlockContext& ctx) {
      const int64_t H = f.hidden, K = f.k;
      const T* rows = static_cast<const T*>(f.expanded_permuted_rows);
      const T* skip1 = static_cast<const T*>(f.skip1);
      const T* skip2 = static_cast<const T*>(f.skip2);
      const T* bias = static_cast<const T*>(f.bias);
      const T* scales = static_cast<const T*>(f.scales);
      T* out = static_cast<T*>(f.out);
      std::vector<float> acc(H);
      uint64_t gathered = 0;
      for (int64_t i = begin; i < end; ++i) {
        for (int64_t h = 0; h < H; ++h) {
          acc[h] = (skip1 != nullptr ? load_as<float>(skip1[i * H + h]) : 0.0f) +
                   (skip2 != nullptr ? load_as<float>(skip2[i * H + h]) : 0.0f);
        }
        for (int64_t j = 0; j < K; ++j) {
          const int64_t d = f.expanded_src_to_dst_row[i + j * f.rows];
          if (d < 0 || d >= f.rows * K) {
            fail("moe_finalize_routing", "expanded_src_to_dst_row[" + std::to_string(i + j * f.rows) + "] = " +
                                             std::to_string(d) + " is out of range [0, " +
                                             std::to_string(f.rows * K) + ")");
          }
          if (d >= f.expanded_rows) continue;  // cut by init_routing's active_num: no expert output
          const float s = scales != nullptr ? load_as<float>(scales[i * K + j]) : 1.0f;
          const T* src = rows + d * H;
          if (bias != nullptr) {
            const int64_t e = f.export_for_source_row[i * K + j];
            if (e < 0 || e >= f.num_experts) {
              fail("moe_finalize_routing", "export_for_source_row[" + std::to_string(i * K + j) + "] = " +
                                               std::to_string(e) + " is out of range [0, " +
                                               std::to_string(f.num_experts) + ")");
            }
            const T* b = bias + e * H;
            for (int64_t h = 0; h < H; ++h) acc[h] += s * (load_as<float>(src[h]) + load_as<float>(b[h]));
          } else {
            for (int64_t h = 0; h < H; ++h) acc[h] += s * load_as<float>(src[h]);
          }
          ++gathered;
        }
        for (int64_t h = 0; h < H; ++h) out[i * H + h] = store_as<T>(acc[h]);
      }
      const uint64_t n = static_cast<uint64_t>(end - begin);
      const uint64_t row_bytes = H * sizeof(T);
      const uint64_t read = n * ((skip1 != nullptr) + (skip2 != nullptr)) * row_bytes +
                            gathered * row_bytes * (bias != nullptr ? 2 : 1) +
                            n * K * (sizeof(int32_t) * (bias != nullptr ? 2 : 1) + (scales != nullptr ? sizeof(T) : 0));
      npu_sim::record_traffic(ctx, read, n * row_bytes, 0, gathered * H * 3 + n * H * 2);
    });
  });
}

}  // namespace npu_kernels
