// The fused attention kernel: one (batch, head) per unit of work, query rows in tiles whose score
// matrix (Br x S) sits in the core's Unified Buffer; the products are Cube GEMMs on the strided operands,
// the softmax runs on the tile in place. The backward recomputes each tile's probabilities from the
// forward's log-sum-exp and accumulates dK, dV over the tiles of its head (so heads never share outputs).
#include "npu_kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fast_math.h"
#include "gemm_tiling.h"
#include "npu_kernels/launch.h"

namespace npu_kernels {
namespace {

// Row reductions in kLanes independent accumulators, which the compiler turns into vector ops (a single
// float accumulator is an ordered chain it may not reorder).
constexpr int64_t kLanes = 16;

template <typename T>
T row_max(const T* x, int64_t n) {
  T acc[kLanes];
  std::fill(acc, acc + kLanes, -std::numeric_limits<T>::infinity());
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) acc[l] = x[j + l] > acc[l] ? x[j + l] : acc[l];
  for (; j < n; ++j) acc[0] = x[j] > acc[0] ? x[j] : acc[0];
  return *std::max_element(acc, acc + kLanes);
}

// x = exp(x - m) in place; returns the sum.
template <typename T>
T exp_sum(T* x, int64_t n, T m) {
  for (int64_t j = 0; j < n; ++j) x[j] = detail::fast_exp(x[j] - m);
  T acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) acc[l] += x[j + l];
  for (; j < n; ++j) acc[0] += x[j];
  T sum = 0;
  for (int64_t l = 0; l < kLanes; ++l) sum += acc[l];
  return sum;
}

template <typename T>
struct Head {  // one (batch, head): base pointers of every operand
  const T *q, *k, *v, *bias;
  T* out;
  T* lse;
};

template <typename T>
Head<T> head_of(const AttentionArgs& a, int64_t unit) {
  const int64_t b = unit / a.heads, h = unit % a.heads;
  auto at = [&](const AttnOperand& o) {
    return static_cast<const T*>(o.data) + b * o.batch_stride + h * o.head_stride;
  };
  Head<T> hd;
  hd.q = at(a.q);
  hd.k = at(a.k);
  hd.v = at(a.v);
  hd.out = const_cast<T*>(at(a.out));
  hd.bias = a.bias == nullptr ? nullptr
                              : static_cast<const T*>(a.bias) + b * a.bias_batch_stride + h * a.bias_head_stride;
  hd.lse = a.lse == nullptr ? nullptr : static_cast<T*>(a.lse) + unit * a.q_len;
  return hd;
}

// Scores of query rows [i0, i0 + br) against keys [0, nk): s = scale * Q K^T + bias, causal mask applied.
template <typename T>
void scores(const AttentionArgs& a, const Head<T>& hd, int64_t i0, int64_t br, int64_t nk, T* s, int64_t lds) {
  detail::gemm_rowmajor<T>(false, true, br, nk, a.head_dim, static_cast<T>(a.scale), hd.q + i0 * a.q.row_stride,
                           a.q.row_stride, hd.k, a.k.row_stride, T(0), s, lds);
  const T neg_inf = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < br; ++r) {
    T* row = s + r * lds;
    if (hd.bias != nullptr) {
      const T* brow = hd.bias + (i0 + r) * a.bias_row_stride;
      for (int64_t j = 0; j < nk; ++j) row[j] += brow[j * a.bias_col_stride];
    }
    if (a.causal) {
      for (int64_t j = i0 + r + 1; j < nk; ++j) row[j] = neg_inf;
    }
  }
}

// Keys a tile of query rows can see: all of them, or up to the last row's diagonal when causal.
inline int64_t visible_keys(const AttentionArgs& a, int64_t i0, int64_t br) {
  return a.causal ? std::min(a.kv_len, i0 + br) : a.kv_len;
}

// Query rows per tile so that `per_row` values of T per row fit in the UB.
inline int64_t tile_rows(const AttentionArgs& a, std::size_t ub_bytes, std::size_t elem, int64_t per_row) {
  const int64_t fit = static_cast<int64_t>(ub_bytes / elem) / std::max<int64_t>(per_row, 1);
  return std::max<int64_t>(1, std::min<int64_t>({fit, a.q_len, 256}));
}

template <typename T>
void zero_rows(T* p, int64_t rows, int64_t cols, int64_t row_stride) {
  for (int64_t r = 0; r < rows; ++r) std::fill(p + r * row_stride, p + r * row_stride + cols, T(0));
}

template <typename T>
void forward_head(const AttentionArgs& a, int64_t unit, const npu_sim::BlockContext& ctx) {
  const Head<T> hd = head_of<T>(a, unit);
  const int64_t S = a.kv_len, br_max = tile_rows(a, ctx.ub_bytes, sizeof(T), S);
  T* s = static_cast<T*>(ctx.ub);
  const T neg_inf = -std::numeric_limits<T>::infinity();
  for (int64_t i0 = 0; i0 < a.q_len; i0 += br_max) {
    const int64_t br = std::min(br_max, a.q_len - i0), nk = visible_keys(a, i0, br);
    T* out = hd.out + i0 * a.out.row_stride;
    if (nk == 0) {  // no key at all: zero output rows
      zero_rows(out, br, a.v_dim, a.out.row_stride);
      if (hd.lse != nullptr) std::fill(hd.lse + i0, hd.lse + i0 + br, neg_inf);
      continue;
    }
    scores(a, hd, i0, br, nk, s, S);
    for (int64_t r = 0; r < br; ++r) {
      T* row = s + r * S;
      const T m = row_max(row, nk);
      if (m == neg_inf) {  // every key masked: probabilities 0, as torch's math path
        std::fill(row, row + nk, T(0));
        if (hd.lse != nullptr) hd.lse[i0 + r] = neg_inf;
        continue;
      }
      const T sum = exp_sum(row, nk, m);
      const T inv = T(1) / sum;
      for (int64_t j = 0; j < nk; ++j) row[j] *= inv;
      if (hd.lse != nullptr) hd.lse[i0 + r] = m + std::log(sum);
    }
    detail::gemm_rowmajor<T>(false, false, br, a.v_dim, nk, T(1), s, S, hd.v, a.v.row_stride, T(0), out,
                             a.out.row_stride);
  }
}

template <typename T>
void backward_head(const AttentionGradArgs& g, int64_t unit, const npu_sim::BlockContext& ctx) {
  const AttentionArgs& a = g.fwd;
  const Head<T> hd = head_of<T>(a, unit);
  const int64_t b = unit / a.heads, h = unit % a.heads;
  auto at = [&](const AttnOperand& o) {
    return const_cast<T*>(static_cast<const T*>(o.data)) + b * o.batch_stride + h * o.head_stride;
  };
  const T* dout = at(g.dout);
  T *dq = at(g.dq), *dk = at(g.dk), *dv = at(g.dv);
  const int64_t S = a.kv_len, br_max = tile_rows(a, ctx.ub_bytes, sizeof(T), 2 * S + 1);
  T* p = static_cast<T*>(ctx.ub);  // br x S probabilities
  T* dp = p + br_max * S;          // br x S: dP, then dS in place
  T* dsum = dp + br_max * S;       // br: rowsum(dO * O)
  const T neg_inf = -std::numeric_limits<T>::infinity();
  zero_rows(dk, S, a.head_dim, g.dk.row_stride);
  zero_rows(dv, S, a.v_dim, g.dv.row_stride);
  for (int64_t i0 = 0; i0 < a.q_len; i0 += br_max) {
    const int64_t br = std::min(br_max, a.q_len - i0), nk = visible_keys(a, i0, br);
    T* dq_t = dq + i0 * g.dq.row_stride;
    const T* do_t = dout + i0 * g.dout.row_stride;
    if (nk == 0) {
      zero_rows(dq_t, br, a.head_dim, g.dq.row_stride);
      continue;
    }
    scores(a, hd, i0, br, nk, p, S);
    for (int64_t r = 0; r < br; ++r) {
      T* row = p + r * S;
      const T lse = hd.lse[i0 + r];
      if (lse == neg_inf) {
        std::fill(row, row + nk, T(0));
      } else {
        for (int64_t j = 0; j < nk; ++j) row[j] = detail::fast_exp(row[j] - lse);
      }
      const T* o = hd.out + (i0 + r) * a.out.row_stride;
      const T* d = do_t + r * g.dout.row_stride;
      T acc = 0;
      for (int64_t e = 0; e < a.v_dim; ++e) acc += d[e] * o[e];
      dsum[r] = acc;
    }
    // dP = dO V^T; dV += P^T dO
    detail::gemm_rowmajor<T>(false, true, br, nk, a.v_dim, T(1), do_t, g.dout.row_stride, hd.v, a.v.row_stride, T(0),
                             dp, S);
    detail::gemm_rowmajor<T>(true, false, nk, a.v_dim, br, T(1), p, S, do_t, g.dout.row_stride, T(1), dv,
                             g.dv.row_stride);
    for (int64_t r = 0; r < br; ++r) {  // dS = P * (dP - rowsum(dO * O))
      T* dr = dp + r * S;
      const T* pr = p + r * S;
      for (int64_t j = 0; j < nk; ++j) dr[j] = pr[j] * (dr[j] - dsum[r]);
    }
    const T scale = static_cast<T>(a.scale);
    // dQ = scale * dS K; dK += scale * dS^T Q
    detail::gemm_rowmajor<T>(false, false, br, a.head_dim, nk, scale, dp, S, hd.k, a.k.row_stride, T(0), dq_t,
                             g.dq.row_stride);
    detail::gemm_rowmajor<T>(true, false, nk, a.head_dim, br, scale, dp, S, hd.q + i0 * a.q.row_stride,
                             a.q.row_stride, T(1), dk, g.dk.row_stride);
  }
}

bool valid(npu_sim::Stream stream, const AttentionArgs& a) {
  return a.batch >= 0 && a.heads >= 0 && a.q_len >= 0 && a.kv_len >= 0 && a.head_dim >= 0 && a.v_dim >= 0 &&
         a.kv_len <= attention_max_kv_len(stream, a.dtype);
}

// One (batch, head) per unit of work, contiguous runs of heads per block.
template <typename Body>
npu_sim::Status per_head(npu_sim::Stream stream, const char* name, const AttentionArgs& a, Body body) {
  if (a.q_len == 0) return npu_sim::Status::kSuccess;
  detail::ensure_micro_kernel_loaded();
  return parallel_for(stream, name, a.batch * a.heads, 1,
                      [body](int64_t begin, int64_t end, const npu_sim::BlockContext& ctx) {
                        for (int64_t u = begin; u < end; ++u) body(u, ctx);
                      });
}

}  // namespace

npu_sim::Status attention_forward(npu_sim::Stream stream, const AttentionArgs& a) {
  if (!valid(stream, a)) return npu_sim::Status::kInvalidValue;
  if (a.dtype == DType::kFloat32) {
    return per_head(stream, "attention_forward", a,
                    [a](int64_t u, const npu_sim::BlockContext& ctx) { forward_head<float>(a, u, ctx); });
  }
  return per_head(stream, "attention_forward", a,
                  [a](int64_t u, const npu_sim::BlockContext& ctx) { forward_head<double>(a, u, ctx); });
}

npu_sim::Status attention_backward(npu_sim::Stream stream, const AttentionGradArgs& g) {
  if (!valid(stream, g.fwd) || g.fwd.lse == nullptr) return npu_sim::Status::kInvalidValue;
  if (g.fwd.dtype == DType::kFloat32) {
    return per_head(stream, "attention_backward", g.fwd,
                    [g](int64_t u, const npu_sim::BlockContext& ctx) { backward_head<float>(g, u, ctx); });
  }
  return per_head(stream, "attention_backward", g.fwd,
                  [g](int64_t u, const npu_sim::BlockContext& ctx) { backward_head<double>(g, u, ctx); });
}

int64_t attention_max_kv_len(npu_sim::Stream stream, DType dtype) {
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) return -1;
  std::size_t ub = 0;
  int ai_cores = 1, core_threads = 1;
  if (!detail::device_limits(stream, &ub, &ai_cores, &core_threads)) return -1;
  const std::size_t elem = dtype == DType::kFloat32 ? sizeof(float) : sizeof(double);
  return (static_cast<int64_t>(ub / elem) - 1) / 2;  // the backward's two score rows of one query
}

}  // namespace npu_kernels
