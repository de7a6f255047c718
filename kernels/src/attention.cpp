// The fused attention kernel: one (batch, head) per unit of work, query rows in tiles. The forward walks
// the keys in blocks (online softmax, the score block and an fp32 output accumulator in the core's Unified
// Buffer); the backward keeps a tile's whole Br x S score matrix there. The products are Cube GEMMs on the
// strided operands, the softmax runs on the tile in place. The backward recomputes each tile's
// probabilities from the forward's log-sum-exp and accumulates dK, dV over the tiles of its head (so heads
// never share outputs).
// float16 / bfloat16 operands are widened to float32 tile by tile (Q / dO rows of the tile, K / V rows in
// chunks of kKeyChunk keys) into the UB next to the scores, everything accumulates in float32 and each
// output is rounded once; float32 / float64 read their operands in place, as before. Dropout keeps a
// probability by a counter-based hash of its [B, H, L, S] index (see keep_bits), so the backward and
// attention_dropout_mask regenerate the forward's mask exactly, whatever the tiling or thread count.
#include "npu_kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "dtype_convert.h"
#include "fast_math.h"
#include "attention_amx.h"
#include "gemm_tiling.h"
#include "npu_kernels/launch.h"
#include "row_math.h"

namespace npu_kernels {
namespace {

using detail::acc_t;

// Keys whose K or V rows a 16-bit tile widens at a time (the UB chunk next to the scores).
constexpr int64_t kKeyChunk = 64;
// Head dims the two-argument attention_max_kv_len assumes for 16-bit operands.
constexpr int64_t kDefaultHalfDim = 256;

template <typename T>
constexpr bool kWidened = !std::is_same_v<T, acc_t<T>>;  // fp16 / bf16: converted into the UB

// ---- dropout ---------------------------------------------------------------------------------------
// Element n of the flat [B, H, L, S] index is kept iff the upper 32 bits of the n-th SplitMix64 output
// from state key(seed, offset) fall under keep_prob * 2^32. The output is a pure function of (key, n):
// mix64(key + (n + 1) * gamma), so any element is drawn on its own.
constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ull;

inline uint64_t mix64(uint64_t z) {  // SplitMix64's output function
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct Dropout {
  bool on = false;
  uint64_t key = 0, threshold = 0;  // kept iff keep_bits(n) < threshold
  double inv_keep = 1.0;
  uint64_t keep_bits(uint64_t n) const { return mix64(key + (n + 1) * kGamma) >> 32; }
  bool kept(uint64_t n) const { return keep_bits(n) < threshold; }
};

Dropout dropout_of(const AttentionArgs& a) {
  Dropout d;
  d.on = a.keep_prob < 1.0;
  d.key = mix64(a.seed ^ mix64(a.offset + kGamma));  // distinct offsets give unrelated streams, not shifts
  d.threshold = static_cast<uint64_t>(std::ldexp(a.keep_prob, 32));
  d.inv_keep = 1.0 / a.keep_prob;
  return d;
}

// First flat index of row i of unit (b * H + h).
inline uint64_t row_counter(const AttentionArgs& a, int64_t unit, int64_t i) {
  return (static_cast<uint64_t>(unit) * a.q_len + i) * static_cast<uint64_t>(a.kv_len);
}

// ---- operands --------------------------------------------------------------------------------------
template <typename T>
struct Head {  // one (batch, head): base pointers of every operand
  const T *q, *k, *v, *bias;
  T* out;
  acc_t<T>* lse;
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
  hd.lse = a.lse == nullptr ? nullptr : static_cast<acc_t<T>*>(a.lse) + unit * a.q_len;
  return hd;
}

// rows x cols of a T operand (row stride ld, unit columns) as its accumulation type.
template <typename A>
struct Panel {
  const A* p;
  int64_t ld;
};

// The operand itself when T is its own accumulation type, else converted into `scratch` (rows x cols).
template <typename T>
Panel<acc_t<T>> widen(const T* src, int64_t rows, int64_t cols, int64_t ld, acc_t<T>* scratch) {
  if constexpr (kWidened<T>) {
    detail::pack_strided(scratch, src, rows, cols, ld, 1);
    return {scratch, std::max<int64_t>(cols, 1)};  // BLAS wants a leading dimension >= 1, even for 0 columns
  } else {
    return {src, ld};
  }
}

// dst rows (T, row stride ldd) = src rows (accumulation type), each value rounded once.
template <typename T, typename A>
void store_rows(T* dst, int64_t ldd, const A* src, int64_t lds, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    T* d = dst + r * ldd;
    const A* s = src + r * lds;
    if constexpr (std::is_same_v<T, Half>) {
      if (detail::cpu_has_f16c()) {
        detail::float_row_to_half_f16c(reinterpret_cast<uint16_t*>(d), s, cols);
        continue;
      }
    }
    if constexpr (std::is_same_v<T, BFloat16>) {
      auto* bits = reinterpret_cast<uint16_t*>(d);
      for (int64_t c = 0; c < cols; ++c) bits[c] = detail::float_to_bf16_bits(s[c]);
    } else {
      for (int64_t c = 0; c < cols; ++c) d[c] = detail::store_as<T>(s[c]);
    }
  }
}

template <typename T>
void zero_rows(T* p, int64_t rows, int64_t cols, int64_t row_stride) {
  const T zero = detail::store_as<T>(acc_t<T>(0));
  for (int64_t r = 0; r < rows; ++r) std::fill(p + r * row_stride, p + r * row_stride + cols, zero);
}

// c (m x nk, ldc) = alpha * x (m x d) . y^T, y the key rows [0, nk) of a T operand (row stride ldy):
// one GEMM on y in place, or kKeyChunk widened rows at a time.
template <typename T, typename A = acc_t<T>>
void times_keys_t(int64_t m, int64_t nk, int64_t d, A alpha, Panel<A> x, const T* y, int64_t ldy, A* c,
                  int64_t ldc, A* scratch) {
  if constexpr (!kWidened<T>) {
    detail::gemm_rowmajor<A>(false, true, m, nk, d, alpha, x.p, x.ld, y, ldy, A(0), c, ldc);
  } else {
    for (int64_t j0 = 0; j0 < nk; j0 += kKeyChunk) {
      const int64_t kc = std::min(kKeyChunk, nk - j0);
      // The chunk widened transposed (d x kc) and scaled by alpha: an NN product libxsmm multiplies in place
      // (it has no transposed A), the same rounding in the forward and the backward's recomputation.
      detail::pack_strided(scratch, y + j0 * ldy, d, kc, int64_t{1}, ldy);
      if (alpha != A(1)) {
        for (int64_t i = 0; i < d * kc; ++i) scratch[i] *= alpha;
      }
      if (!detail::xsmm_gemm(m, kc, d, x.p, x.ld, scratch, kc, c + j0, ldc, false)) {
        detail::gemm_rowmajor<A>(false, false, m, kc, d, A(1), x.p, x.ld, scratch, std::max<int64_t>(kc, 1), A(0),
                                 c + j0, ldc);
      }
    }
  }
}

// c (m x d, ldc) = alpha * p (m x nk) . y, y the key rows [0, nk) of a T operand; chunked as above.
// accumulate: c += instead of c =.
template <typename T, typename A = acc_t<T>>
void keys_times(int64_t m, int64_t nk, int64_t d, A alpha, const A* p, int64_t ldp, const T* y, int64_t ldy, A* c,
                int64_t ldc, A* scratch, bool accumulate = false) {
  if constexpr (!kWidened<T>) {
    // fp32: libxsmm reads the thin P and the key rows in place (BLAS repacks V's nk x d panel per tile)
    if constexpr (std::is_same_v<A, float>) {
      if (alpha == A(1) && detail::xsmm_gemm(m, d, nk, p, ldp, y, ldy, c, ldc, accumulate)) return;
    }
    detail::gemm_rowmajor<A>(false, false, m, d, nk, alpha, p, ldp, y, ldy, A(accumulate), c, ldc);
  } else {
    for (int64_t j0 = 0; j0 < nk; j0 += kKeyChunk) {
      const int64_t kc = std::min(kKeyChunk, nk - j0);
      const Panel<A> yw = widen(y + j0 * ldy, kc, d, ldy, scratch);
      const bool acc = accumulate || j0 > 0;
      if (alpha == A(1) && detail::xsmm_gemm(m, d, kc, p + j0, ldp, yw.p, yw.ld, c, ldc, acc)) continue;
      detail::gemm_rowmajor<A>(false, false, m, d, kc, alpha, p + j0, ldp, yw.p, yw.ld, A(acc), c, ldc);
    }
  }
}

// The bias and the causal mask (key j0 + j is masked for query row i0 + r when j0 + j > i0 + r) on scores already
// computed (s = scale * Q K^T). fill_causal false: the caller skips the masked keys itself (the forward: they
// become probability 0).
template <typename T, typename A = acc_t<T>>
void mask_scores(const AttentionArgs& a, const Head<T>& hd, int64_t i0, int64_t br, int64_t nk, A* s, int64_t lds,
                 int64_t j0, bool fill_causal = true) {
  const A neg_inf = -std::numeric_limits<A>::infinity();
  for (int64_t r = 0; r < br; ++r) {
    A* row = s + r * lds;
    if (hd.bias != nullptr) {
      const T* brow = hd.bias + (i0 + r) * a.bias_row_stride + j0 * a.bias_col_stride;
      for (int64_t j = 0; j < nk; ++j) row[j] += detail::load_as<A>(brow[j * a.bias_col_stride]);
    }
    if (a.causal && fill_causal) {
      for (int64_t j = std::max<int64_t>(i0 + r + 1 - j0, 0); j < nk; ++j) row[j] = neg_inf;
    }
  }
}

// Scores of query rows [i0, i0 + br) against keys [j0, j0 + nk): s = scale * Q K^T + bias, causal mask applied.
template <typename T, typename A = acc_t<T>>
void scores(const AttentionArgs& a, const Head<T>& hd, int64_t i0, int64_t br, int64_t nk, Panel<A> q, A* s,
            int64_t lds, A* scratch, int64_t j0 = 0, bool fill_causal = true) {
  times_keys_t<T>(br, nk, a.head_dim, static_cast<A>(a.scale), q, hd.k + j0 * a.k.row_stride, a.k.row_stride, s, lds,
                  scratch);
  mask_scores(a, hd, i0, br, nk, s, lds, j0, fill_causal);
}

// bf16 attention on the machine's bf16 matrix unit, as CPU's flash attention and CUDA's run it: Q K^T into fp32
// scores, the probabilities rounded to bf16 and P V into the fp32 accumulator. Widened to fp32 instead, the forward
// ran at 1.6-2.6x CPU eager's on an AMX host (fp32 products at a tenth of AMX's rate).
// - kAmx: our AMX tile kernels (attention_amx.h), any length: K and V packed once per head into the tile layout.
//   B1 H8 S2048 D64 causal: 12.2 -> 7.x ms against oneDNN's matmul primitive per tile (1488 calls of a few us).
// - kDnnl: oneDNN's JIT bf16 matmul (AVX512-BF16 CPUs without AMX, or NPU_SIM_AMX=0) on the operands in place,
//   from 128 keys: below, its few microseconds per call outweigh the products (GPT-mini's 64 keys, head dim 32:
//   170 us widened, 262 on oneDNN for 8 x 4 heads).
// - kNone: widened to fp32 in the UB (float16 always: this CPU family has no fp16 matrix unit).
enum class Bf16Cube { kNone, kDnnl, kAmx };
constexpr int64_t kCubeMinKeys = 128;
template <typename T>
Bf16Cube bf16_cube(const AttentionArgs& a) {
  if (!std::is_same_v<T, BFloat16> || a.head_dim <= 0 || a.v_dim <= 0) return Bf16Cube::kNone;
  if (detail::amx_bf16_ready()) return Bf16Cube::kAmx;
  return a.kv_len >= kCubeMinKeys && detail::dnnl_bf16_name() != nullptr ? Bf16Cube::kDnnl : Bf16Cube::kNone;
}

// Keys a tile of query rows can see: all of them, or up to the last row's diagonal when causal.
inline int64_t visible_keys(const AttentionArgs& a, int64_t i0, int64_t br) {
  return a.causal ? std::min(a.kv_len, i0 + br) : a.kv_len;
}

// The UB layout of a tile, in elements of the accumulation type: per query row the score rows (one in
// the forward; P, dP and rowsum(dO * O) in the backward) and, for 16-bit operands, the widened Q (and
// dO) rows and the float32 output accumulator; once per tile the widened chunk of K or V rows.
struct UbPlan {
  int64_t per_row = 0, fixed = 0;
};
inline UbPlan ub_plan(bool widened, bool backward, int64_t kv_len, int64_t head_dim, int64_t v_dim) {
  UbPlan p;
  p.per_row = backward ? 2 * kv_len + 1 : kv_len;
  if (widened) {
    p.per_row += backward ? 2 * head_dim + v_dim : head_dim + v_dim;
    p.fixed = kKeyChunk * std::max(head_dim, v_dim);
  }
  return p;
}

// Query rows per tile for a plan.
inline int64_t tile_rows(const AttentionArgs& a, std::size_t ub_bytes, std::size_t elem, const UbPlan& p) {
  const int64_t fit = (static_cast<int64_t>(ub_bytes / elem) - p.fixed) / std::max<int64_t>(p.per_row, 1);
  return std::max<int64_t>(1, std::min<int64_t>({fit, a.q_len, 256}));
}

// What one block moved and computed, recorded once per block.
struct Traffic {
  uint64_t read = 0, write = 0, cube = 0, vector = 0;
};

// Keys per block of the forward's online softmax: a tile's score block is br x kKeyBlock, so query tiles stay
// tall (64-80 rows in fp32 at any length) and K / V are read (and, for 16-bit, widened) once per tile.
constexpr int64_t kKeyBlock = 512;

// The forward's UB plan: keys per block, query rows per tile, and the row layout (see forward_head).
struct FwdPlan {
  Bf16Cube cube = Bf16Cube::kNone;
  int64_t bk = 1, br_max = 1;
  int64_t ldo = 1;  // output accumulator row stride (Ev, on the AMX path Ev rounded up to 16)
  int64_t e32 = 0;  // AMX: packed Q row length, head_dim rounded up to 32
};

template <typename T>
FwdPlan forward_plan(const AttentionArgs& a, std::size_t ub_bytes) {
  using A = acc_t<T>;
  const int64_t S = a.kv_len, E = a.head_dim, Ev = a.v_dim;
  FwdPlan p;
  p.cube = bf16_cube<T>(a);
  if (p.cube == Bf16Cube::kAmx) {
    // Per query row: bk fp32 scores, the row's bf16 probabilities (bk / 2), the output row, m, l and the packed
    // bf16 Q row (e32 / 2); rows in whole tiles of 16, keys in whole pairs of tiles (32). Where 16 rows do not fit
    // the UB even with 32-key blocks, the products go to oneDNN or are widened.
    const int64_t avail = static_cast<int64_t>(ub_bytes / sizeof(A));
    p.e32 = detail::round_up(E, 32);
    p.ldo = detail::round_up(Ev, 16);
    const int64_t row_fixed = p.ldo + 2 + p.e32 / 2;
    const int64_t rows_cap = std::min<int64_t>(detail::round_up(a.q_len, 16), 256);
    for (p.bk = detail::round_up(std::min(S, kKeyBlock), 32); p.bk >= 32; p.bk -= 32) {
      p.br_max = std::min(avail / (p.bk + p.bk / 2 + row_fixed) / 16 * 16, rows_cap);
      if (p.br_max >= 16) return p;
    }
    p.cube = a.kv_len >= kCubeMinKeys && detail::dnnl_bf16_name() != nullptr ? Bf16Cube::kDnnl : Bf16Cube::kNone;
  }
  const bool cube16 = p.cube == Bf16Cube::kDnnl;
  const bool widened = kWidened<T> && !cube16;
  // UB: per query row a block of scores, O, m and l (for widened 16-bit the widened Q row, on the bf16 Cube the
  // row's probabilities in bf16: half an element per key); the widened K / V chunk once.
  const int64_t avail = static_cast<int64_t>(ub_bytes / sizeof(A)) - (widened ? kKeyChunk * std::max(E, Ev) : 0);
  const int64_t row_fixed = Ev + 2 + (widened ? E : 0);
  // valid() admits kv_len > 0 only where the backward's larger plan fits, so a block of >= 1 key fits then;
  // with no keys nothing below touches the UB (head dims may fill it: kv_len 0 is still a valid call).
  const int64_t key_room = cube16 ? (avail - row_fixed - 1) * 2 / 3 : avail - row_fixed;
  p.bk = std::max<int64_t>(1, std::min<int64_t>({S, kKeyBlock, key_room}));
  const int64_t per_row = p.bk + (cube16 ? (p.bk + 1) / 2 : 0) + row_fixed;
  p.br_max = std::max<int64_t>(1, std::min<int64_t>({(avail - 1) / per_row, a.q_len, 256}));
  p.ldo = std::max<int64_t>(Ev, 1);
  return p;
}

// The forward, flash-style: a tile of query rows walks the visible keys in blocks, keeping per row the running
// max m, the running sum l of exp(s - m) and the output accumulator O (rescaled by exp(m_old - m_new) when the
// max grows); dropout scales the kept probabilities after the sum, so l is the softmax's own denominator.
// Finally O / l is rounded once into the output and lse = m + log(l).
template <typename T>
void forward_head(const AttentionArgs& a, int64_t unit, const npu_sim::BlockContext& ctx, Traffic& tr) {
  using A = acc_t<T>;
  const Head<T> hd = head_of<T>(a, unit);
  const int64_t S = a.kv_len, E = a.head_dim, Ev = a.v_dim;
  const FwdPlan plan = forward_plan<T>(a, ctx.ub_bytes);
  const bool amx = plan.cube == Bf16Cube::kAmx, dnnl = plan.cube == Bf16Cube::kDnnl, cube16 = amx || dnnl;
  const bool widened = kWidened<T> && !cube16;
  const int64_t bk = plan.bk, br_max = plan.br_max, ldo = plan.ldo, e32 = plan.e32;
  A* s = static_cast<A*>(ctx.ub);     // br x bk scores, then probabilities
  A* oacc = s + br_max * bk;          // br x ldo output accumulator
  A* m = oacc + br_max * ldo;         // br running maxima
  A* l = m + br_max;                  // br running sums
  A* qw = l + br_max;                 // widened 16-bit: br x E widened Q rows
  A* chunk = qw + (widened ? br_max * E : 0);  // widened 16-bit: kKeyChunk widened K or V rows
  // bf16 Cube: the probabilities in bf16, dense rows of kc for oneDNN, rows of bk (zero from the row's last key to
  // the next 32) for AMX; then AMX's packed Q rows
  BFloat16* pb = reinterpret_cast<BFloat16*>(qw);
  auto* qa = reinterpret_cast<uint16_t*>(pb + (amx ? br_max * bk : 0));
  const A neg_inf = -std::numeric_limits<A>::infinity();
  const Dropout drop = dropout_of(a);
  const uint64_t es = sizeof(T), lse_es = hd.lse != nullptr ? sizeof(A) : 0;
  // AMX: the head's K and V in the tile layout, in this core thread's workspace (GM), packed once per head
  thread_local std::vector<uint16_t> packed;
  const uint16_t *kpk = nullptr, *vpk = nullptr;
  std::optional<detail::AmxTiles> tiles;
  if constexpr (std::is_same_v<T, BFloat16>) {
    if (amx && S > 0) {
      const int64_t kn = detail::amx_keys_elems(S, E), vn = detail::amx_values_elems(S, Ev);
      if (packed.size() < static_cast<std::size_t>(kn + vn)) packed.resize(kn + vn);
      detail::amx_pack_keys(hd.k, a.k.row_stride, S, E, packed.data());
      detail::amx_pack_values(hd.v, a.v.row_stride, S, Ev, packed.data() + kn);
      kpk = packed.data();
      vpk = packed.data() + kn;
      tr.read += es * S * (E + Ev);
      tr.write += 2 * (kn + vn);
      tiles.emplace();
    }
  }
  // float32: K^T packed once per head (E x S in the workspace, rows ldk apart so that they do not alias in the
  // L1 cache), so that Q K^T is an NN product libxsmm runs in place, with no per-tile packing of K (BLAS repacked
  // both operands on every tile)
  thread_local std::vector<float> kt_buf;
  const float* kt = nullptr;
  const int64_t ldk = detail::unaliased_ld(S);
  if constexpr (std::is_same_v<T, float>) {
    if (S > 0 && E > 0) {
      if (kt_buf.size() < static_cast<std::size_t>(E * ldk)) kt_buf.resize(static_cast<std::size_t>(E * ldk));
      detail::pack_strided(kt_buf.data(), hd.k, E, S, int64_t{1}, a.k.row_stride, ldk);
      kt = kt_buf.data();
      tr.read += es * S * E;
      tr.write += es * S * E;
    }
  }
  // AMX and packed K^T: the products are unscaled; the scale is applied in the softmax passes where nothing is added
  // to the scores (max(scale x) = scale max(x)), else by a pass before the bias
  const bool unscaled = amx || kt != nullptr;
  const bool late_scale = unscaled && hd.bias == nullptr && a.scale > 0;
  const A row_scale = late_scale ? static_cast<A>(a.scale) : A(1);
  for (int64_t i0 = 0; i0 < a.q_len; i0 += br_max) {
    const int64_t br = std::min(br_max, a.q_len - i0), nk = visible_keys(a, i0, br);
    const int64_t m16 = detail::round_up(br, 16);
    T* out = hd.out + i0 * a.out.row_stride;
    tr.write += br * (Ev * es + lse_es);
    if (nk == 0) {  // no key at all: zero output rows
      zero_rows(out, br, Ev, a.out.row_stride);
      if (hd.lse != nullptr) std::fill(hd.lse + i0, hd.lse + i0 + br, neg_inf);
      continue;
    }
    const Panel<A> q = cube16 ? Panel<A>{nullptr, 0} : widen(hd.q + i0 * a.q.row_stride, br, E, a.q.row_stride, qw);
    if (amx) {  // Q rows into whole tiles, zero padded
      std::fill(qa, qa + m16 * e32, uint16_t{0});
      for (int64_t r = 0; r < br; ++r) std::memcpy(qa + r * e32, hd.q + (i0 + r) * a.q.row_stride, E * sizeof(T));
    }
    std::fill(m, m + br, neg_inf);
    std::fill(l, l + br, A(0));
    std::fill(oacc, oacc + br * ldo, A(0));
    for (int64_t j0 = 0; j0 < nk; j0 += bk) {
      const int64_t kc = std::min(bk, nk - j0);
      const int64_t lds = dnnl ? kc : bk;  // oneDNN's brgemm writes only dense rows (else it copies)
      const int64_t k32 = amx ? detail::round_up(kc, 32) : kc, ldp = amx ? bk : kc;  // P rows
      // row r sees keys j0 + c for c < r + shift (all keys: a shift past the block)
      const int64_t shift = a.causal ? i0 + 1 - j0 : bk + 1;
      if constexpr (std::is_same_v<T, BFloat16>) {
        if (amx) {
          detail::amx_scores(qa, m16, e32, kpk, j0, detail::round_up(kc, 16), shift, s, lds);
        } else if (dnnl) {
          detail::dnnl_gemm_bf16_f32(false, true, br, kc, E, static_cast<float>(a.scale), hd.q + i0 * a.q.row_stride,
                                     a.q.row_stride, hd.k + j0 * a.k.row_stride, a.k.row_stride, 0.0f, s, lds);
          mask_scores(a, hd, i0, br, kc, s, lds, j0, /*fill_causal=*/false);
        }
      }
      if constexpr (std::is_same_v<T, float>) {
        if (kt != nullptr && !detail::xsmm_gemm(br, kc, E, q.p, q.ld, kt + j0, ldk, s, lds, false)) {
          detail::gemm_rowmajor<float>(false, false, br, kc, E, 1.0f, q.p, q.ld, kt + j0, ldk, 0.0f, s, lds);
        }
      }
      if (unscaled && !late_scale) {
        for (int64_t r = 0; r < br; ++r) {
          A* row = s + r * lds;
          for (int64_t j = 0; j < kc; ++j) row[j] *= static_cast<A>(a.scale);
        }
        mask_scores(a, hd, i0, br, kc, s, lds, j0, /*fill_causal=*/false);
      }
      if (!cube16 && kt == nullptr) scores(a, hd, i0, br, kc, q, s, bk, chunk, j0, /*fill_causal=*/false);
      // On the bf16 Cube without dropout the probabilities go straight into their bf16 rows (pb) as exp makes them.
      const bool to_pb = cube16 && !drop.on;
      for (int64_t r = 0; r < br; ++r) {
        A* row = s + r * lds;
        BFloat16* prow = pb + r * ldp;
        // keys [vis, kc) are causally masked for this row: probability 0, no max or exp over them
        const int64_t vis = a.causal ? std::clamp<int64_t>(r + shift, 0, kc) : kc;
        const A m_new = std::max(m[r], row_scale * detail::lane_max(row, vis));
        if (m_new == neg_inf) {  // every key so far masked: nothing to add
          if (cube16) std::fill(prow, prow + k32, BFloat16{});
          if (!to_pb) std::fill(row, row + kc, A(0));
          continue;
        }
        A sum = 0;
        if (to_pb) {
          if constexpr (std::is_same_v<A, float>) {
            sum = amx ? detail::exp_sub_sum_cvtne(row, prow, vis, m_new, row_scale)  // AMX CPUs have AVX512-BF16
                      : detail::exp_sub_sum(row, prow, vis, m_new, row_scale);
            std::fill(prow + vis, prow + k32, BFloat16{});
          }
        } else {
          std::fill(row + vis, row + kc, A(0));
          sum = detail::exp_sub_sum(row, row, vis, m_new, row_scale);
        }
        if (m_new != m[r]) {  // the max grew: rescale what was accumulated under the old one
          const A corr = m[r] == neg_inf ? A(0) : std::exp(m[r] - m_new);
          l[r] *= corr;
          A* o = oacc + r * ldo;
          for (int64_t c = 0; c < Ev; ++c) o[c] *= corr;
          m[r] = m_new;
        }
        l[r] += sum;
        if (drop.on) {  // dropout after the sum: kept values scaled by 1 / keep_prob
          const A inv_keep = static_cast<A>(drop.inv_keep);
          const uint64_t n0 = row_counter(a, unit, i0 + r) + static_cast<uint64_t>(j0);
          for (int64_t j = 0; j < kc; ++j) row[j] *= drop.kept(n0 + j) ? inv_keep : A(0);
        }
      }
      if constexpr (std::is_same_v<T, BFloat16>) {
        if (cube16 && !to_pb) {
          for (int64_t r = 0; r < br; ++r) {
            detail::narrow_row(pb + r * ldp, s + r * lds, kc);
            std::fill(pb + r * ldp + kc, pb + r * ldp + k32, BFloat16{});
          }
        }
        if (amx) {
          detail::amx_accumulate(reinterpret_cast<const uint16_t*>(pb), ldp, m16, k32, vpk,
                                 detail::round_up(S, 32), j0, ldo, shift, oacc, ldo);
        } else if (dnnl) {
          detail::dnnl_gemm_bf16_f32(false, false, br, Ev, kc, 1.0f, pb, kc, hd.v + j0 * a.v.row_stride,
                                     a.v.row_stride, 1.0f, oacc, ldo);
        }
      }
      if (!cube16) {
        keys_times<T>(br, kc, Ev, A(1), s, bk, hd.v + j0 * a.v.row_stride, a.v.row_stride, oacc, ldo, chunk,
                      /*accumulate=*/true);
      }
    }
    for (int64_t r = 0; r < br; ++r) {  // O / l; a row that saw no unmasked key stays 0, as torch's math path
      A* o = oacc + r * ldo;
      const A inv = m[r] == neg_inf ? A(0) : A(1) / l[r];
      for (int64_t c = 0; c < Ev; ++c) o[c] *= inv;
      if (hd.lse != nullptr) hd.lse[i0 + r] = m[r] == neg_inf ? neg_inf : m[r] + std::log(l[r]);
    }
    store_rows(out, a.out.row_stride, oacc, ldo, br, Ev);
    const uint64_t cells = static_cast<uint64_t>(br) * nk;
    tr.read += es * (br * E + nk * (E + Ev) + (hd.bias != nullptr ? br * nk : 0));
    tr.cube += 2 * cells * (E + Ev);
    tr.vector += cells * (5 + (hd.bias != nullptr) + drop.on);  // max, subtract, exp, sum, normalise
  }
}

template <typename T>
void backward_head(const AttentionGradArgs& g, int64_t unit, const npu_sim::BlockContext& ctx, Traffic& tr) {
  using A = acc_t<T>;
  constexpr bool wide = kWidened<T>;
  const AttentionArgs& a = g.fwd;
  const Head<T> hd = head_of<T>(a, unit);
  const int64_t b = unit / a.heads, h = unit % a.heads;
  auto at = [&](const AttnOperand& o) {
    return const_cast<T*>(static_cast<const T*>(o.data)) + b * o.batch_stride + h * o.head_stride;
  };
  const T* dout = at(g.dout);
  T *dq = at(g.dq), *dk = at(g.dk), *dv = at(g.dv);
  const int64_t S = a.kv_len, E = a.head_dim, Ev = a.v_dim;
  const int64_t br_max = tile_rows(a, ctx.ub_bytes, sizeof(A), ub_plan(wide, true, S, E, Ev));
  A* p = static_cast<A*>(ctx.ub);  // br x S probabilities (after dS: dropped ones)
  A* dp = p + br_max * S;          // br x S: dP, then dS in place
  A* dsum = dp + br_max * S;       // br: rowsum(dO * O)
  A* qw = dsum + br_max;           // 16-bit: br x E widened Q rows
  A* dow = qw + br_max * E;        // 16-bit: br x Ev widened dO rows
  A* dqacc = dow + br_max * Ev;    // 16-bit: br x E float32 dQ
  A* chunk = dqacc + br_max * E;   // 16-bit: kKeyChunk widened K or V rows
  const A neg_inf = -std::numeric_limits<A>::infinity();
  const Dropout drop = dropout_of(a);
  const uint64_t es = sizeof(T);
  // dK, dV accumulate over the query tiles: in the outputs themselves for float32/float64; for 16-bit in
  // float32 block scratch of one head, rounded into the outputs once at the end.
  std::vector<A> acc_scratch(wide ? S * (std::max<int64_t>(E, 1) + std::max<int64_t>(Ev, 1)) : 0);
  A* dk_acc;
  A* dv_acc;
  int64_t ld_dk, ld_dv;
  if constexpr (wide) {
    dk_acc = acc_scratch.data();
    ld_dk = std::max<int64_t>(E, 1);
    ld_dv = std::max<int64_t>(Ev, 1);
    dv_acc = dk_acc + S * ld_dk;
  } else {
    zero_rows(dk, S, E, g.dk.row_stride);
    zero_rows(dv, S, Ev, g.dv.row_stride);
    dk_acc = dk;
    dv_acc = dv;
    ld_dk = g.dk.row_stride;
    ld_dv = g.dv.row_stride;
    tr.write += es * S * (E + Ev);
  }
  for (int64_t i0 = 0; i0 < a.q_len; i0 += br_max) {
    const int64_t br = std::min(br_max, a.q_len - i0), nk = visible_keys(a, i0, br);
    T* dq_t = dq + i0 * g.dq.row_stride;
    tr.write += es * br * E;
    if (nk == 0) {
      zero_rows(dq_t, br, E, g.dq.row_stride);
      continue;
    }
    const Panel<A> q = widen(hd.q + i0 * a.q.row_stride, br, E, a.q.row_stride, qw);
    const Panel<A> d_o = widen(dout + i0 * g.dout.row_stride, br, Ev, g.dout.row_stride, dow);
    scores(a, hd, i0, br, nk, q, p, S, chunk);
    for (int64_t r = 0; r < br; ++r) {
      A* row = p + r * S;
      const A lse = hd.lse[i0 + r];
      if (lse == neg_inf) {
        std::fill(row, row + nk, A(0));
      } else {
        detail::exp_sub_sum(row, row, nk, lse);  // P = exp(S - lse) (the sum is not needed)
      }
      const T* o = hd.out + (i0 + r) * a.out.row_stride;
      const A* d = d_o.p + r * d_o.ld;
      if constexpr (std::is_same_v<A, float>) {  // 16 lanes, O converted in registers
        dsum[r] = detail::lane_reduce_sum(
            Ev, [d, o](int64_t e) { return detail::load16(d + e) * detail::load16(o + e); },
            [d, o](int64_t e) { return d[e] * detail::load_as<float>(o[e]); });
      } else {
        A acc = 0;
        for (int64_t e = 0; e < Ev; ++e) acc += d[e] * detail::load_as<A>(o[e]);
        dsum[r] = acc;
      }
    }
    // dP = dO V^T
    times_keys_t<T>(br, nk, Ev, A(1), d_o, hd.v, a.v.row_stride, dp, S, chunk);
    for (int64_t r = 0; r < br; ++r) {  // dS = P * (dP - rowsum(dO * O)), dP through the dropout mask
      A* dr = dp + r * S;
      A* pr = p + r * S;
      if (drop.on) {  // dP of the undropped probabilities, and P as dropped for dV
        const A kept_scale = static_cast<A>(drop.inv_keep);
        const uint64_t n0 = row_counter(a, unit, i0 + r);
        for (int64_t j = 0; j < nk; ++j) {
          const A f = drop.kept(n0 + j) ? kept_scale : A(0);
          dr[j] = pr[j] * (dr[j] * f - dsum[r]);
          pr[j] *= f;
        }
      } else {
        for (int64_t j = 0; j < nk; ++j) dr[j] = pr[j] * (dr[j] - dsum[r]);
      }
    }
    // dV += P^T dO
    detail::gemm_rowmajor<A>(true, false, nk, Ev, br, A(1), p, S, d_o.p, d_o.ld, A(1), dv_acc, ld_dv);
    const A scale = static_cast<A>(a.scale);
    // dQ = scale * dS K; dK += scale * dS^T Q
    if constexpr (wide) {
      keys_times<T>(br, nk, E, scale, dp, S, hd.k, a.k.row_stride, dqacc, ld_dk, chunk);
      store_rows(dq_t, g.dq.row_stride, dqacc, ld_dk, br, E);
    } else {
      keys_times<T>(br, nk, E, scale, dp, S, hd.k, a.k.row_stride, dq_t, g.dq.row_stride, chunk);
      tr.read += es * nk * (E + Ev);  // the read half of dK, dV's read-modify-write (the write below)
      tr.write += es * nk * (E + Ev);
    }
    detail::gemm_rowmajor<A>(true, false, nk, E, br, scale, dp, S, q.p, q.ld, A(1), dk_acc, ld_dk);
    const uint64_t cells = static_cast<uint64_t>(br) * nk;
    tr.read += es * (br * (E + 2 * Ev) + nk * (E + Ev) + (hd.bias != nullptr ? br * nk : 0)) + sizeof(A) * br;
    tr.cube += 2 * cells * (3 * E + 2 * Ev);
    tr.vector += cells * (4 + (hd.bias != nullptr) + 2 * drop.on) + 2 * static_cast<uint64_t>(br) * Ev;
  }
  if constexpr (wide) {
    store_rows(dk, g.dk.row_stride, dk_acc, ld_dk, S, E);
    store_rows(dv, g.dv.row_stride, dv_acc, ld_dv, S, Ev);
    tr.write += es * S * (E + Ev);
  }
}

bool valid_dims(const AttentionArgs& a) {
  return a.batch >= 0 && a.heads >= 0 && a.q_len >= 0 && a.kv_len >= 0 && a.head_dim >= 0 && a.v_dim >= 0 &&
         a.keep_prob > 0.0 && a.keep_prob <= 1.0;  // NaN fails both
}

bool valid(npu_sim::Stream stream, const AttentionArgs& a) {
  return valid_dims(a) && a.kv_len <= attention_max_kv_len(stream, a.dtype, a.head_dim, a.v_dim);
}

// One (batch, head) per unit of work, contiguous runs of heads per block; each block records its traffic
// once.
template <typename Body>
npu_sim::Status per_head(npu_sim::Stream stream, const char* name, const AttentionArgs& a, Body body) {
  if (a.q_len == 0) return npu_sim::Status::kSuccess;
  detail::ensure_micro_kernel_loaded();
  return parallel_for(stream, name, a.batch * a.heads, 1,
                      [body](int64_t begin, int64_t end, const npu_sim::BlockContext& ctx) {
                        Traffic tr;
                        for (int64_t u = begin; u < end; ++u) body(u, ctx, tr);
                        npu_sim::record_traffic(ctx, tr.read, tr.write, tr.cube, tr.vector);
                      });
}

// Calls f(T{}) for the element types the kernels take; kInvalidValue for the others.
template <typename F>
npu_sim::Status dispatch_attention(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: return f(double{});
    case DType::kFloat16: return f(Half{});
    case DType::kBFloat16: return f(BFloat16{});
    default: return npu_sim::Status::kInvalidValue;
  }
}

}  // namespace

npu_sim::Status attention_forward(npu_sim::Stream stream, const AttentionArgs& a) {
  if (!valid(stream, a)) return npu_sim::Status::kInvalidValue;
  return dispatch_attention(a.dtype, [&](auto t) {
    using T = decltype(t);
    return per_head(stream, "attention_forward", a,
                    [a](int64_t u, const npu_sim::BlockContext& ctx, Traffic& tr) { forward_head<T>(a, u, ctx, tr); });
  });
}

npu_sim::Status attention_backward(npu_sim::Stream stream, const AttentionGradArgs& g) {
  if (!valid(stream, g.fwd) || g.fwd.lse == nullptr) return npu_sim::Status::kInvalidValue;
  return dispatch_attention(g.fwd.dtype, [&](auto t) {
    using T = decltype(t);
    return per_head(stream, "attention_backward", g.fwd,
                    [g](int64_t u, const npu_sim::BlockContext& ctx, Traffic& tr) { backward_head<T>(g, u, ctx, tr); });
  });
}

npu_sim::Status attention_dropout_mask(npu_sim::Stream stream, const AttentionArgs& a, uint8_t* mask) {
  if (!valid_dims(a) || (mask == nullptr && a.batch * a.heads * a.q_len * a.kv_len > 0))
    return npu_sim::Status::kInvalidValue;
  if (a.q_len == 0 || a.kv_len == 0) return npu_sim::Status::kSuccess;
  return parallel_for(stream, "attention_dropout_mask", a.batch * a.heads, 1,
                      [a, mask](int64_t begin, int64_t end, const npu_sim::BlockContext& ctx) {
                        const Dropout drop = dropout_of(a);
                        for (int64_t u = begin; u < end; ++u) {
                          for (int64_t i = 0; i < a.q_len; ++i) {
                            const uint64_t n0 = row_counter(a, u, i);
                            uint8_t* row = mask + n0;
                            for (int64_t j = 0; j < a.kv_len; ++j) row[j] = !drop.on || drop.kept(n0 + j);
                          }
                        }
                        const uint64_t cells = static_cast<uint64_t>(end - begin) * a.q_len * a.kv_len;
                        npu_sim::record_traffic(ctx, 0, cells, 0, cells);
                      });
}

int64_t attention_max_kv_len(npu_sim::Stream stream, DType dtype, int64_t head_dim, int64_t v_dim) {
  const bool widened = dtype == DType::kFloat16 || dtype == DType::kBFloat16;
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64 && !widened) return -1;
  std::size_t ub = 0;
  int ai_cores = 1, core_threads = 1;
  if (!detail::device_limits(stream, &ub, &ai_cores, &core_threads)) return -1;
  const std::size_t elem = dtype == DType::kFloat64 ? sizeof(double) : sizeof(float);
  // The backward's tile of one query row: its two score rows, rowsum(dO * O) and, for 16-bit operands,
  // the widened rows and the key chunk (ub_plan with kv_len 0).
  const UbPlan p = ub_plan(widened, true, 0, std::max<int64_t>(head_dim, 0), std::max<int64_t>(v_dim, 0));
  return std::max<int64_t>(0, (static_cast<int64_t>(ub / elem) - p.fixed - p.per_row) / 2);
}

const char* attention_bf16_kernel_name() {
  if (detail::amx_bf16_ready()) return "amx_bf16";
  const char* dnnl = detail::dnnl_bf16_name();
  return dnnl != nullptr ? dnnl : "none";
}

int64_t attention_max_kv_len(npu_sim::Stream stream, DType dtype) {
  return attention_max_kv_len(stream, dtype, kDefaultHalfDim, kDefaultHalfDim);
}

}  // namespace npu_kernels
