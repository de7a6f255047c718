// The Mixture-of-Experts kernels (npu_kernels/moe.h): gating top-k softmax, init routing, grouped GEMM, finalize.
#include "npu_kernels/moe.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
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
  if (a.rows < 0 || a.hidden < 0 || a.k < 1 || a.num_experts < 0 || a.num_experts > INT32_MAX || a.active_num < 0 ||
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
      // The experts' range: given, or [0, max] from the data (num_experts == 0; one more scan).
      int64_t top = r.num_experts;
      if (top == 0) {
        int64_t bad = -1;
        for (int64_t p = 0; p < n; ++p) {
          const int32_t e = r.expert_idx[p];
          if (e < 0 && bad < 0) bad = p;
          top = std::max<int64_t>(top, e);
        }
        if (bad >= 0) {
          fail("moe_init_routing", "expert_idx[" + std::to_string(bad) + "] = " + std::to_string(r.expert_idx[bad]) +
                                       " is out of range [0, " + std::to_string(top) +
                                       "] (num_experts = 0: the range is taken from the data)");
        }
      } else {
        for (int64_t p = 0; p < n; ++p) {
          const int32_t e = r.expert_idx[p];
          if (e < 0 || e > top) {
            fail("moe_init_routing", "expert_idx[" + std::to_string(p) + "] = " + std::to_string(e) +
                                         " is out of range [0, " + std::to_string(top) + "]");
          }
        }
      }
      // dest[p]: p's row in the sorted order (stable: equal experts keep flattened order). A counting sort
      // over top + 1 buckets (top == num_experts: gating's finished rows, last); a stable comparison sort,
      // same order, when the buckets would far outnumber the entries (a huge expert value).
      std::vector<int64_t> dest(n);
      if (top + 1 <= 4 * n + 4096) {
        std::vector<int64_t> start(top + 2, 0);
        for (int64_t p = 0; p < n; ++p) ++start[r.expert_idx[p] + 1];
        for (int64_t e = 0; e <= top; ++e) start[e + 1] += start[e];
        for (int64_t p = 0; p < n; ++p) dest[p] = start[r.expert_idx[p]]++;
      } else {
        std::vector<int64_t> order(n);
        for (int64_t p = 0; p < n; ++p) order[p] = p;
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t u, int64_t v) { return r.expert_idx[u] < r.expert_idx[v]; });
        for (int64_t d = 0; d < n; ++d) dest[order[d]] = d;
      }
      std::vector<char> seen(n, 0);  // row_idx must be a permutation of [0, n): every destination once
      for (int64_t p = 0; p < n; ++p) {
        const int32_t e = r.expert_idx[p], src = r.row_idx[p];
        if (src < 0 || src >= n || seen[src]) {
          fail("moe_init_routing", "row_idx[" + std::to_string(p) + "] = " + std::to_string(src) +
                                       (src < 0 || src >= n ? " is out of range [0, " + std::to_string(n) + ")"
                                                            : " repeats (row_idx must be a permutation)"));
        }
        seen[src] = 1;
        const int64_t d = dest[p];
        r.expanded_expert_idx[d] = e;
        r.expanded_row_idx[src] = static_cast<int32_t>(d);
      }
      const int64_t reads = r.num_experts == 0 ? 4 : 3;  // expert_idx once more to find its max
      npu_sim::record_traffic(ctx, reads * n * sizeof(int32_t), 2 * n * sizeof(int32_t), 0, 2 * n);
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
// One launch, planned without the row counts: group_list lives on the device and is read by every block
// when the kernel runs (no host sync). Each block validates it (the same scan in every block, so every
// block that fails names the same first bad entry), derives the work from it and takes its share, a pure
// function of (group_list, block_idx, block_dim): deterministic.
//  - float32/float64 with OpenBLAS loaded (and K > 0, sizes within int): as gemm_direct does, one GEMM per
//    unit (fp32 on oneDNN when present, else OpenBLAS), on the operands in place (x's rows of a group and its
//    weight are contiguous row-major): a group is cut along its longer side into units of about half a
//    block's share of all outputs (so both core threads get work, however the rows fall), units are dealt to
//    the first blocks (two per core thread) in order by their work. Launch records use gemm_direct's model:
//    2 m n k / kCubeTile element reads and m n writes per call. Exception: when every group has fewer than
//    kGmmSmallGroup rows (decided at run time, from group_list), fp32 units run on libxsmm's kernels in place
//    (records: Cube tiles of min(m, 128) x 128, each reading its rows of x and columns of w), and without
//    libxsmm the packed tiles below.
//  - otherwise (float16/bfloat16, no BLAS): the Cube GEMM's tiling and micro-kernel over the C tiles of every
//    group (a group of m_g rows has ceil(m_g / mc) * ceil(n / nc) of them; empty groups none; the tile plan is
//    made from the largest group), A and B panels packed (widened) into the UB, fp32 (fp64 for float64)
//    accumulator, bias added and rounded once on the store; the grid is the AI-core count.
// Rows of y from group_list[groups - 1] to x_rows are zero-filled, split evenly over the blocks.
namespace {

constexpr int64_t kGmmMinSlice = 32;
// Below this many rows in its largest group a launch takes the packed tiles even with BLAS. Measured on 8
// groups, K 512 / N 2048 and K 1024 / N 512: with groups of 6-34 rows BLAS ran 10-15% slower than the UB
// tiles; with groups of 38-132 rows it was even or better, and better still on larger ones.
constexpr int64_t kGmmSmallGroup = 64;

// Reads and checks the device's group_list (cumulative row counts): non-decreasing, >= 0, <= x_rows.
void read_group_list(const int64_t* gl, const int32_t* gl32, int64_t groups, int64_t x_rows,
                     std::vector<int64_t>* cum) {
  cum->resize(groups);
  int64_t prev = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t v = gl32 != nullptr ? int64_t{gl32[g]} : gl[g];
    if (v < 0) {
      fail("grouped_matmul", "group_list[" + std::to_string(g) + "] = " + std::to_string(v) + " is negative");
    }
    if (v < prev) {
      fail("grouped_matmul", "group_list[" + std::to_string(g) + "] = " + std::to_string(v) +
                                 " is less than group_list[" +
                                 std::to_string(g - 1) + "] = " + std::to_string(prev) +
                                 " (cumulative row counts must be non-decreasing)");
    }
    if (v > x_rows) {
      fail("grouped_matmul", "group_list[" + std::to_string(g) + "] = " + std::to_string(v) + " exceeds x_rows = " +
                                 std::to_string(x_rows));
    }
    (*cum)[g] = prev = v;
  }
}

// This block's share of y's rows past the last group: zero-filled. Returns the bytes written.
template <typename T>
uint64_t zero_tail(T* y, int64_t rows, int64_t x_rows, int64_t n, const npu_sim::BlockContext& ctx) {
  const int64_t tail = x_rows - rows;
  if (tail <= 0 || n == 0) return 0;
  const int64_t lo = rows + tail * ctx.block_idx / ctx.block_dim;
  const int64_t hi = rows + tail * (ctx.block_idx + 1) / ctx.block_dim;
  if (hi <= lo) return 0;
  std::memset(static_cast<void*>(y + lo * n), 0, static_cast<std::size_t>((hi - lo) * n) * sizeof(T));
  return static_cast<uint64_t>((hi - lo) * n) * sizeof(T);
}

// The packed-UB tiling over the C tiles of every group (this block's contiguous run of them).
template <typename T, typename Acc>
void packed_tiles(const npu_sim::BlockContext& ctx, const std::vector<int64_t>& cum, const T* x, T* y,
                  const std::vector<const T*>& wv, const std::vector<const T*>& bv, int64_t K, int64_t N,
                  int64_t min_units, uint64_t& read, uint64_t& written, uint64_t& flops) {
  const int64_t G = static_cast<int64_t>(cum.size());
  int64_t max_m = 0;
  for (int64_t g = 0; g < G; ++g) max_m = std::max(max_m, cum[g] - (g > 0 ? cum[g - 1] : 0));
  if (max_m > 0 && N > 0) {
    const detail::TilePlan plan = detail::plan_tiles(ctx.ub_bytes, sizeof(Acc), 1, max_m, N, K, min_units);
    const std::size_t need = sizeof(Acc) * (plan.mc * plan.kc + plan.kc * plan.nc + plan.mc * plan.nc);
    if (need > ctx.ub_bytes) {
      fail("grouped_matmul", "tile plan needs " + std::to_string(need) + " bytes of Unified Buffer, the core has " +
                                 std::to_string(ctx.ub_bytes));
    }
    const int64_t nt = (N + plan.nc - 1) / plan.nc;
    std::vector<int64_t> tile0(G + 1, 0);  // first tile of each group; tile0[G] = all tiles
    for (int64_t g = 0; g < G; ++g) {
      const int64_t m = cum[g] - (g > 0 ? cum[g - 1] : 0);
      tile0[g + 1] = tile0[g] + (m + plan.mc - 1) / plan.mc * nt;
    }
    const int64_t tiles = tile0[G];
    Acc* pa = static_cast<Acc*>(ctx.ub);
    Acc* pb = pa + plan.mc * plan.kc;
    Acc* pc = pb + plan.kc * plan.nc;
    const int64_t begin = tiles * ctx.block_idx / ctx.block_dim, end = tiles * (ctx.block_idx + 1) / ctx.block_dim;
    for (int64_t u = begin; u < end; ++u) {
      const int64_t g = std::upper_bound(tile0.begin(), tile0.end(), u) - tile0.begin() - 1;
      const int64_t row0 = g > 0 ? cum[g - 1] : 0, m = cum[g] - row0;
      const T* wg = wv[g];
      const T* bias = bv[g];
      const int64_t r = u - tile0[g];
      const int64_t i0 = (r / nt) * plan.mc, j0 = (r % nt) * plan.nc;
      const int64_t mc = std::min(plan.mc, m - i0), nc = std::min(plan.nc, N - j0);
      if (K == 0) std::fill(pc, pc + mc * nc, Acc(0));
      for (int64_t k0 = 0; k0 < K; k0 += plan.kc) {
        const int64_t kc = std::min(plan.kc, K - k0);
        detail::pack_strided(pa, x + (row0 + i0) * K + k0, mc, kc, K, int64_t{1});
        detail::pack_strided(pb, wg + k0 * N + j0, kc, nc, N, int64_t{1});
        detail::micro_gemm(mc, nc, kc, pa, pb, pc, k0 > 0);
        read += (mc + nc) * kc * sizeof(T);
      }
      for (int64_t i = 0; i < mc; ++i) {
        T* out = y + (row0 + i0 + i) * N + j0;
        const Acc* acc = pc + i * nc;
        if (bias != nullptr) {
          for (int64_t j = 0; j < nc; ++j) out[j] = store_as<T>(acc[j] + load_as<Acc>(bias[j0 + j]));
        } else {
          for (int64_t j = 0; j < nc; ++j) out[j] = store_as<T>(acc[j]);
        }
      }
      if (bias != nullptr) read += nc * sizeof(T);
      written += mc * nc * sizeof(T);
      flops += 2 * mc * nc * K;
    }
  }
}

template <typename T>
npu_sim::Status grouped_matmul_blas(npu_sim::Stream stream, const GroupedMatmulArgs& a, int ai_cores,
                                    int core_threads) {
  const int64_t min_units = 2 * int64_t{core_threads};
  auto w = std::make_shared<std::vector<const T*>>(a.groups);
  auto b = std::make_shared<std::vector<const T*>>(a.groups, nullptr);
  for (int64_t g = 0; g < a.groups; ++g) {
    (*w)[g] = static_cast<const T*>(a.weight[g]);
    if (a.bias != nullptr) (*b)[g] = static_cast<const T*>(a.bias[g]);
  }
  // The grid of the packed tiles (the AI cores); BLAS units go to the first min_units blocks only.
  const uint32_t grid = static_cast<uint32_t>(std::max<int64_t>(ai_cores, min_units));
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  const int64_t G = a.groups, K = a.k, N = a.n, x_rows = a.x_rows;
  const int64_t* gl = a.group_list;
  const int32_t* gl32 = a.group_list_i32;
  const bool xsmm = std::is_same_v<T, float> && detail::xsmm_name() != nullptr;
  const bool onednn = std::is_same_v<T, float> && detail::dnnl_f32_name() != nullptr;
  return npu_sim::launch_kernel(stream, "grouped_matmul", grid, [=](const npu_sim::BlockContext& ctx) {
    std::vector<int64_t> cum;
    read_group_list(gl, gl32, G, x_rows, &cum);
    const int64_t rows = G > 0 ? cum.back() : 0;
    uint64_t read = 0, written = zero_tail(y, rows, x_rows, N, ctx), flops = 0;
    int64_t max_m = 0;
    for (int64_t g = 0; g < G; ++g) max_m = std::max(max_m, cum[g] - (g > 0 ? cum[g - 1] : 0));
    // Only small groups: libxsmm's kernels in place when it serves fp32, else the packed tiles (both are faster
    // than BLAS on them).
    const bool small = max_m < kGmmSmallGroup;
    if (small && !xsmm) {
      packed_tiles<T, T>(ctx, cum, x, y, *w, *b, K, N, min_units, read, written, flops);
      npu_sim::record_traffic(ctx, read, written, flops, 0);
      return;
    }
    // Units of about half a block's share of the m * n outputs: a group is cut along its longer side (rows
    // if m >= n, else columns, as gemm_direct: a column slice packs only its part of the weight), into
    // slices of >= kGmmMinSlice. Block b runs the units whose middle falls in its share of the total.
    const int64_t P = std::min<int64_t>(ctx.block_dim, min_units), total = rows * N;
    const int64_t target = std::max<int64_t>(1, total / (2 * P));
    int64_t start = 0;
    for (int64_t g = 0; g < G; ++g) {
      const int64_t row0 = g > 0 ? cum[g - 1] : 0, m = cum[g] - row0;
      if (m == 0) continue;
      const bool split_m = m >= N;
      const int64_t len = split_m ? m : N;
      const int64_t parts =
          std::max<int64_t>(1, std::min((m * N + target - 1) / target, (len + kGmmMinSlice - 1) / kGmmMinSlice));
      for (int64_t part = 0; part < parts; ++part) {
        const int64_t lo = len * part / parts, hi = len * (part + 1) / parts;
        const int64_t i0 = split_m ? lo : 0, mc = split_m ? hi - lo : m;
        const int64_t j0 = split_m ? 0 : lo, nc = split_m ? N : hi - lo;
        const int64_t cost = mc * nc;
        const int64_t owner = static_cast<int64_t>((static_cast<double>(2 * start + cost) * P) / (2.0 * total));
        start += cost;
        if (std::min(owner, P - 1) != int64_t{ctx.block_idx}) continue;
        T* out = y + (row0 + i0) * N + j0;
        const T* xg = x + (row0 + i0) * K;
        bool done = false;
        if constexpr (std::is_same_v<T, float>) {
          done = small && detail::xsmm_gemm(mc, nc, K, xg, K, (*w)[g] + j0, N, out, N, false);
          if (!done && onednn) {  // the library mm's direct path uses: the same speed as the unfused layer's GEMMs
            detail::dnnl_gemm_f32(false, false, mc, nc, K, 1.0f, xg, K, (*w)[g] + j0, N, 0.0f, out, N);
            done = true;
          }
        }
        if (!done) detail::blas_gemm(false, false, mc, nc, K, T(1), xg, K, (*w)[g] + j0, N, T(0), out, N);
        if (const T* bias = (*b)[g]) {
          for (int64_t i = 0; i < mc; ++i) {
            for (int64_t j = 0; j < nc; ++j) out[i * N + j] += bias[j0 + j];
          }
          read += nc * sizeof(T);
        }
        const auto mn = static_cast<uint64_t>(cost), k = static_cast<uint64_t>(K);
        if (small) {  // Cube tiles of min(mc, 128) x 128: each reads its rows of x and its columns of w in full
          const auto tiles = [](int64_t len) {
            return (static_cast<uint64_t>(len) + detail::kCubeTile - 1) / detail::kCubeTile;
          };
          read += sizeof(T) * k * (tiles(mc) * static_cast<uint64_t>(nc) + tiles(nc) * static_cast<uint64_t>(mc));
        } else {
          read += sizeof(T) * (2 * mn * k / detail::kCubeTile);
        }
        written += sizeof(T) * mn;
        flops += 2 * mn * k;
      }
    }
    npu_sim::record_traffic(ctx, read, written, flops, 0);
  });
}

template <typename T, typename Acc>
npu_sim::Status grouped_matmul_packed(npu_sim::Stream stream, const GroupedMatmulArgs& a, int ai_cores,
                                      int core_threads) {
  auto w = std::make_shared<std::vector<const T*>>(a.groups, nullptr);
  auto b = std::make_shared<std::vector<const T*>>(a.groups, nullptr);
  for (int64_t g = 0; g < a.groups; ++g) {
    if (a.k > 0 && a.weight != nullptr) (*w)[g] = static_cast<const T*>(a.weight[g]);
    if (a.bias != nullptr) (*b)[g] = static_cast<const T*>(a.bias[g]);
  }
  const uint32_t grid =
      a.x_rows == 0 || a.n == 0 ? 1u : static_cast<uint32_t>(std::max(ai_cores, 1));  // else validation only
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  const int64_t G = a.groups, K = a.k, N = a.n, x_rows = a.x_rows, min_units = 2 * int64_t{core_threads};
  const int64_t* gl = a.group_list;
  const int32_t* gl32 = a.group_list_i32;
  return npu_sim::launch_kernel(stream, "grouped_matmul", grid, [=](const npu_sim::BlockContext& ctx) {
    std::vector<int64_t> cum;
    read_group_list(gl, gl32, G, x_rows, &cum);
    const int64_t rows = G > 0 ? cum.back() : 0;
    uint64_t read = 0, written = zero_tail(y, rows, x_rows, N, ctx), flops = 0;
    packed_tiles<T, Acc>(ctx, cum, x, y, *w, *b, K, N, min_units, read, written, flops);
    npu_sim::record_traffic(ctx, read, written, flops, 0);
  });
}

}  // namespace

npu_sim::Status moe_compute_expert_tokens(npu_sim::Stream stream, const MoeComputeExpertTokensArgs& a) {
  if (a.rows < 0 || a.num_experts < 0 || a.rows > INT32_MAX) return npu_sim::Status::kInvalidValue;
  if (a.num_experts == 0) return npu_sim::Status::kSuccess;
  if (a.expert_tokens == nullptr || (a.rows > 0 && a.sorted_experts == nullptr)) {
    return npu_sim::Status::kInvalidValue;
  }
  return npu_sim::launch_kernel(stream, "moe_compute_expert_tokens", 1, [a](const npu_sim::BlockContext& ctx) {
    const int32_t* v = a.sorted_experts;
    for (int64_t i = 1; i < a.rows; ++i) {
      if (v[i] < v[i - 1]) {
        fail("moe_compute_expert_tokens", "sorted_expert_for_source_row[" + std::to_string(i) + "] = " +
                                              std::to_string(v[i]) + " is below the entry before it (" +
                                              std::to_string(v[i - 1]) + "): the input must be sorted ascending");
      }
    }
    for (int64_t e = 0; e < a.num_experts; ++e) {
      // Experts past INT32_MAX cannot occur in int32 data: they take every row.
      a.expert_tokens[e] = e >= INT32_MAX ? static_cast<int32_t>(a.rows)
                                          : static_cast<int32_t>(std::upper_bound(v, v + a.rows,
                                                                                  static_cast<int32_t>(e)) - v);
    }
    npu_sim::record_traffic(ctx, static_cast<uint64_t>(a.rows) * 4, static_cast<uint64_t>(a.num_experts) * 4,
                            0, static_cast<uint64_t>(a.rows));
  });
}

npu_sim::Status grouped_matmul(npu_sim::Stream stream, const GroupedMatmulArgs& a) {
  if (a.groups < 0 || a.k < 0 || a.n < 0 || a.x_rows < 0) return npu_sim::Status::kInvalidValue;
  if (a.groups > 0 && a.group_list == nullptr && a.group_list_i32 == nullptr) return npu_sim::Status::kInvalidValue;
  const bool outputs = a.x_rows > 0 && a.n > 0;
  if (a.groups == 0 && !outputs) return npu_sim::Status::kSuccess;  // no group_list to check, no y
  if (outputs && a.y == nullptr) return npu_sim::Status::kInvalidValue;
  if (outputs && a.groups > 0 && a.k > 0) {
    if (a.x == nullptr || a.weight == nullptr) return npu_sim::Status::kInvalidValue;
    for (int64_t g = 0; g < a.groups; ++g) {
      if (a.weight[g] == nullptr) return npu_sim::Status::kInvalidValue;
    }
  }
  if (a.dtype != DType::kFloat32 && a.dtype != DType::kFloat64 && a.dtype != DType::kFloat16 &&
      a.dtype != DType::kBFloat16) {
    return npu_sim::Status::kInvalidValue;
  }
  detail::ensure_micro_kernel_loaded();
  std::size_t ub_bytes = 0;
  int ai_cores = 1, core_threads = 1;
  if (!detail::device_limits(stream, &ub_bytes, &ai_cores, &core_threads)) return npu_sim::Status::kInvalidHandle;
  constexpr int64_t kMaxInt = INT_MAX;
  const bool blas = outputs && a.groups > 0 && a.k > 0 && a.x_rows <= kMaxInt && a.n <= kMaxInt && a.k <= kMaxInt &&
                    detail::blas_loaded();
  switch (a.dtype) {
    case DType::kFloat32:
      return blas ? grouped_matmul_blas<float>(stream, a, ai_cores, core_threads)
                  : grouped_matmul_packed<float, float>(stream, a, ai_cores, core_threads);
    case DType::kFloat64:
      return blas ? grouped_matmul_blas<double>(stream, a, ai_cores, core_threads)
                  : grouped_matmul_packed<double, double>(stream, a, ai_cores, core_threads);
    case DType::kFloat16: return grouped_matmul_packed<Half, float>(stream, a, ai_cores, core_threads);
    default: return grouped_matmul_packed<BFloat16, float>(stream, a, ai_cores, core_threads);
  }
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
