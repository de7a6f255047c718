// torch_npu's fused vector kernels (fused_nn.h): RMSNorm, rotary_mul, SwiGLU, fast GELU, scaled masked softmax.
#include "npu_kernels/fused_nn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "dtype_convert.h"
#include "fast_math.h"
#include "npu_kernels/vec16.h"
#include "npu_kernels/elementwise.h"  // kStreamOutputBytes
#include "npu_kernels/launch.h"
#include "npu_kernels/stream_store.h"

namespace npu_kernels {

namespace {

using npu_sim::Status;

constexpr int64_t kBlockElems = 1 << 13;  // elements per block at least (two core threads get work early)
constexpr int64_t kTile = 2048;           // elementwise kernels: elements per fp32 scratch tile
constexpr int64_t kMaxChunks = 64;        // RMSNorm dgamma: fixed row chunks (partials), whatever the threads
constexpr float kMaskFill = -10000.0f;    // Megatron's masked_fill value

// f(T{}) for the three storage types of these kernels.
template <typename F>
Status dispatch(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat16: return f(Half{});
    case DType::kBFloat16: return f(BFloat16{});
    default: return Status::kInvalidValue;
  }
}

// n elements of T as fp32: float is used in place, 16-bit data is widened into buf (16 lanes in registers).
template <typename T>
inline const float* to_f32(const T* src, int64_t n, float* buf) {
  if constexpr (std::is_same_v<T, float>) {
    return src;
  } else {
    detail::widen_row(buf, src, n);
    return buf;
  }
}
// bf16 element k widened / rounded in registers (bit shifts: vectorises). The pointwise kernels below run
// bf16 in one pass with these instead of through fp32 rows (to_f32 / put): measured 25% faster for SwiGLU
// at 4096 x 2 x 2752 (4.4 vs 5.9 ms), streaming stores or not.
inline float wid(const BFloat16* p, int64_t k) {
  return detail::bf16_bits_to_float(reinterpret_cast<const uint16_t*>(p)[k]);
}
inline void nar(BFloat16* p, int64_t k, float v) { reinterpret_cast<uint16_t*>(p)[k] = detail::float_to_bf16_bits(v); }
// Output rows. Beyond kStreamOutputBytes (elementwise.h) per launch an output not read back is written with
// streaming stores (no read-for-ownership of its lines); `stream` is decided per launch.
bool streams(int64_t out_bytes, const void* out, std::initializer_list<const void*> inputs) {
  if (out_bytes < kStreamOutputBytes) return false;
  for (const void* in : inputs)
    if (in == out) return false;  // in place: the lines are in cache already
  return true;
}
// Where to compute an output row in fp32: dst itself for float stored plainly, else buf (then put).
template <typename T>
inline float* out_f32(T* dst, float* buf, bool stream) {
  if constexpr (std::is_same_v<T, float>) return stream ? buf : dst;
  else return buf;
}
// Stores an fp32 row to T (nothing to do for a float row computed in place). round_back: src gets the
// values as rounded to T (add_rms_norm's sum).
template <typename T>
inline void put(T* dst, float* src, int64_t n, bool stream, bool round_back = false) {
  if constexpr (std::is_same_v<T, float>) {
    if (stream) stream_store_bytes(dst, src, sizeof(float) * n);
    else if (dst != src) std::memcpy(dst, src, sizeof(float) * n);
  } else {
    constexpr int64_t kChunk = 1024;
    alignas(64) T tmp[kChunk];
    for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
      const int64_t m = std::min(kChunk, n - i0);
      T* d = stream ? tmp : dst + i0;
      detail::narrow_row(d, src + i0, m);
      if (round_back) to_f32(d, m, src + i0);
      if (stream) stream_store_bytes(dst + i0, tmp, sizeof(T) * m);
    }
  }
}

// Row reductions in a fixed lane order (two 16-float accumulators), so results do not depend on the grid.
using detail::v16sf;
using detail::load16;
inline float hsum(v16sf v) {
  float t = 0;
  for (int j = 0; j < 16; ++j) t += v[j];
  return t;
}
inline float dot(const float* a, const float* b, int64_t n) {
  v16sf s0 = {}, s1 = {};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 += load16(a + i) * load16(b + i);
    s1 += load16(a + i + 16) * load16(b + i + 16);
  }
  float t = hsum(s0 + s1);
  for (; i < n; ++i) t += a[i] * b[i];
  return t;
}
// Two passes of the softmax row in the lane layout above: v[i] = f(i) with the row max (f inlined into a
// fixed 32-wide loop the compiler vectorises), and v[i] = g(v[i]) with the row sum. Each value is reduced
// right after it is made, while it is in registers / L1.
template <typename F>
inline float fill_max(float* v, int64_t n, F f) {
  const float ninf = -std::numeric_limits<float>::infinity();
  v16sf m0 = detail::splat16(ninf), m1 = m0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 32; ++k) v[i + k] = f(i + k);
    m0 = detail::max16(load16(v + i), m0);
    m1 = detail::max16(load16(v + i + 16), m1);
  }
  m0 = detail::max16(m1, m0);
  float m = ninf;
  for (int j = 0; j < 16; ++j) m = m0[j] > m ? m0[j] : m;
  for (; i < n; ++i) {
    v[i] = f(i);
    m = v[i] > m ? v[i] : m;
  }
  return m;
}
template <typename G>
inline float map_sum(float* v, int64_t n, G g) {
  v16sf s0 = {}, s1 = {};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 32; ++k) v[i + k] = g(v[i + k]);
    s0 += load16(v + i);
    s1 += load16(v + i + 16);
  }
  float t = hsum(s0 + s1);
  for (; i < n; ++i) t += (v[i] = g(v[i]));
  return t;
}

// exp(z) for softmax's z = v - max <= 0: fast_exp without its overflow lanes (one 2^n factor); results
// below 2^-126 (z < -87) flush to 0, NaN stays NaN.
NPU_VEC_INLINE float exp_nonpos(float z) {
  constexpr float kLo = -87.0f;
  const detail::ExpParts e = detail::exp_parts(z < kLo ? kLo : z);
  const float v = e.y * detail::pow2_biased(e.n + 127);
  return z < kLo ? 0.0f : v;
}

// One block's GM traffic and Vector FLOPs, recorded once at its end.
struct Cost {
  uint64_t rd = 0, wr = 0, flops = 0;
};

// The engine every kernel runs on: units [0, units) (rows, row chunks or tiles) split over blocks of at
// least `grain` units; each block owns `scratch` floats of fp32 working rows (its UB), runs setup(scratch, cost)
// once (broadcast operands) and unit(u, scratch, cost) per unit, then records its cost.
template <typename Setup, typename Unit>
Status for_units(npu_sim::Stream stream, const char* name, int64_t units, int64_t grain, int64_t scratch,
                 Setup setup, Unit unit) {
  return parallel_for(stream, name, units, std::max<int64_t>(1, grain),
                      [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        std::vector<float> buf(static_cast<size_t>(std::max<int64_t>(scratch, 1)));
                        Cost c;
                        setup(buf.data(), c);
                        for (int64_t u = b; u < e; ++u) unit(u, buf.data(), c);
                        stream_fence();
                        npu_sim::record_traffic(ctx, c.rd, c.wr, 0, c.flops);
                      });
}
const auto no_setup = [](float*, Cost&) {};

// Elementwise kernels over (outer, inner) index spaces: tiles of kTile elements of the flattened space,
// each cut at row ends into segments seg(o, i, cnt, scratch, cost) of one row (nbuf scratch tiles).
template <typename Seg>
Status for_segments(npu_sim::Stream stream, const char* name, int64_t outer, int64_t inner, int nbuf, Seg seg) {
  const int64_t total = outer * inner, tiles = (total + kTile - 1) / kTile;
  return for_units(stream, name, tiles, kBlockElems / kTile, nbuf * kTile, no_setup,
                   [=](int64_t t, float* buf, Cost& c) {
                     const int64_t end = std::min(total, (t + 1) * kTile);
                     for (int64_t e = t * kTile; e < end;) {
                       const int64_t o = e / inner, i = e % inner, cnt = std::min(end - e, inner - i);
                       seg(o, i, cnt, buf, c);
                       e += cnt;
                     }
                   });
}

bool bad_size(int64_t v) { return v < 0; }

}  // namespace

// ---- RMSNorm ----

npu_sim::Status rms_norm(npu_sim::Stream stream, const RmsNormArgs& a) {
  if (bad_size(a.rows) || bad_size(a.n)) return Status::kInvalidValue;
  const bool empty = a.rows == 0 || a.n == 0;
  if (!empty && (!a.x || !a.gamma || !a.y || (a.x2 && !a.x_sum))) return Status::kInvalidValue;
  return dispatch(a.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (empty) return Status::kSuccess;
    const int64_t n = a.n;
    const uint64_t es = sizeof(T), row_bytes = es * n, ops = a.x2 ? 2 : 1;
    const float inv_n = 1.0f / static_cast<float>(n), eps = static_cast<float>(a.eps);
    const T* x = static_cast<const T*>(a.x);
    const T* x2 = static_cast<const T*>(a.x2);
    const T* gamma = static_cast<const T*>(a.gamma);
    T* y = static_cast<T*>(a.y);
    T* xs = static_cast<T*>(a.x_sum);
    float* rstd = a.rstd;
    const bool nt = streams(a.rows * n * static_cast<int64_t>(es), a.y, {a.x, a.x2, a.x_sum});
    // scratch: gamma | s | x2 | y, n floats each
    auto setup = [=](float* buf, Cost& c) {
      const float* g = to_f32(gamma, n, buf);
      if (g != buf) std::memcpy(buf, g, sizeof(float) * n);
      c.rd += row_bytes;
    };
    auto row = [=](int64_t r, float* buf, Cost& c) {
      const float* g = buf;
      float* sb = buf + n;
      const float* s = to_f32(x + r * n, n, sb);
      if (x2) {  // s = x + x2, written to x_sum; statistics from the sum as rounded to T
        const float* b = to_f32(x2 + r * n, n, buf + 2 * n);
        float* sum = out_f32(xs + r * n, sb, nt);
        for (int64_t i = 0; i < n; ++i) sum[i] = s[i] + b[i];
        put(xs + r * n, sum, n, nt, /*round_back=*/true);
        s = sum;
      }
      const float rs = 1.0f / std::sqrt(dot(s, s, n) * inv_n + eps);
      float* out = out_f32(y + r * n, buf + 3 * n, nt);
      for (int64_t i = 0; i < n; ++i) out[i] = s[i] * rs * g[i];
      put(y + r * n, out, n, nt);
      if (rstd) rstd[r] = rs;
      c.rd += ops * row_bytes;
      c.wr += ops * row_bytes + (rstd ? sizeof(float) : 0);
      c.flops += (3 + ops) * static_cast<uint64_t>(n);  // (add,) square-accumulate (2), scale twice
    };
    return for_units(stream, x2 ? "add_rms_norm" : "rms_norm", a.rows, kBlockElems / n, 4 * n, setup, row);
  });
}

npu_sim::Status rms_norm_backward(npu_sim::Stream stream, const RmsNormGradArgs& a) {
  if (bad_size(a.rows) || bad_size(a.n)) return Status::kInvalidValue;
  const bool empty = a.rows == 0 || a.n == 0 || (!a.dx && !a.dgamma);
  if (!empty && (!a.dy || !a.x || !a.rstd || (a.dx && !a.gamma))) return Status::kInvalidValue;
  return dispatch(a.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (empty) return Status::kSuccess;
    const int64_t n = a.n, rows = a.rows;
    // Rows in a fixed number of chunks (independent of the grid): each chunk sums its rows' dgamma terms
    // in row order into its own partial, and a second launch adds the partials in chunk order.
    const int64_t per_chunk = (rows + kMaxChunks - 1) / kMaxChunks, chunks = (rows + per_chunk - 1) / per_chunk;
    auto partials = a.dgamma ? std::make_shared<std::vector<float>>(static_cast<size_t>(chunks * n))
                             : std::shared_ptr<std::vector<float>>();
    const uint64_t es = sizeof(T), row_bytes = es * n;
    const float inv_n = 1.0f / static_cast<float>(n);
    const T* dy = static_cast<const T*>(a.dy);
    const T* x = static_cast<const T*>(a.x);
    const T* gamma = static_cast<const T*>(a.gamma);
    const float* rstd = a.rstd;
    T* dx = static_cast<T*>(a.dx);
    const bool nt = streams(rows * n * static_cast<int64_t>(es), a.dx, {a.dy, a.x});
    // scratch: gamma | s | dy | g (dx) , n floats each
    auto setup = [=](float* buf, Cost& c) {
      if (!dx) return;
      const float* g = to_f32(gamma, n, buf);
      if (g != buf) std::memcpy(buf, g, sizeof(float) * n);
      c.rd += row_bytes;
    };
    auto chunk = [=](int64_t k, float* buf, Cost& c) {
      const int64_t r0 = k * per_chunk, r1 = std::min(rows, r0 + per_chunk);
      float* p = partials ? partials->data() + k * n : nullptr;
      if (p) std::fill(p, p + n, 0.0f);
      for (int64_t r = r0; r < r1; ++r) {
        const float* s = to_f32(x + r * n, n, buf + n);
        const float* d = to_f32(dy + r * n, n, buf + 2 * n);
        const float rs = rstd[r];
        float* g = buf + 3 * n;
        if (dx && p) {  // one pass for g and the dgamma terms
          for (int64_t i = 0; i < n; ++i) {
            g[i] = d[i] * buf[i];
            p[i] += d[i] * s[i] * rs;
          }
        } else if (dx) {
          for (int64_t i = 0; i < n; ++i) g[i] = d[i] * buf[i];
        } else {
          for (int64_t i = 0; i < n; ++i) p[i] += d[i] * s[i] * rs;
        }
        if (p) c.flops += 3 * static_cast<uint64_t>(n);
        if (dx) {
          const float k2 = rs * rs * dot(g, s, n) * inv_n;
          float* out = out_f32(dx + r * n, g, nt);
          for (int64_t i = 0; i < n; ++i) out[i] = rs * (g[i] - s[i] * k2);
          put(dx + r * n, out, n, nt);
          c.wr += row_bytes;
          c.flops += 6 * static_cast<uint64_t>(n);
        }
        c.rd += 2 * row_bytes + sizeof(float);
      }
      if (p) c.wr += sizeof(float) * n;  // the chunk's partial (a GM workspace on the device)
    };
    const int64_t rows_grain = kBlockElems / n;
    Status st = for_units(stream, "rms_norm_backward", chunks, rows_grain / per_chunk, 4 * n, setup, chunk);
    if (st != Status::kSuccess || !partials) return st;
    // dgamma: columns in tiles of 256, partials added in chunk order
    constexpr int64_t kCols = 256;
    T* dgamma = static_cast<T*>(a.dgamma);
    auto cols = [=](int64_t t, float* acc, Cost& c) {
      const int64_t j0 = t * kCols, cnt = std::min(kCols, n - j0);
      std::fill(acc, acc + cnt, 0.0f);
      const float* p = partials->data() + j0;
      for (int64_t k = 0; k < chunks; ++k, p += n) {
        for (int64_t j = 0; j < cnt; ++j) acc[j] += p[j];
      }
      put(dgamma + j0, acc, cnt, false);
      c.rd += sizeof(float) * chunks * cnt;
      c.wr += es * cnt;
      c.flops += static_cast<uint64_t>(chunks * cnt);
    };
    return for_units(stream, "rms_norm_backward_dgamma", (n + kCols - 1) / kCols, kBlockElems / (kCols * chunks), kCols,
                     no_setup, cols);
  });
}

// ---- rotary_mul ----

namespace {

// One row of rotary pairs (p, q) = (i, i + h) (kHalf) or (2i, 2i + 1) (kInterleave), h = d / 2:
//   forward  o[p] = x[p] c[p] - x[q] s[p],  o[q] = x[q] c[q] + x[p] s[q]
//   backward o[p] = x[p] c[p] + x[q] s[q],  o[q] = x[q] c[q] - x[p] s[p]   (x = dy: rotate's transpose)
template <bool kFwd, bool kHalfMode>
void rotary_row(const float* __restrict x, const float* __restrict c, const float* __restrict s, float* __restrict o,
                int64_t h) {
  for (int64_t i = 0; i < h; ++i) {
    const int64_t p = kHalfMode ? i : 2 * i, q = kHalfMode ? i + h : 2 * i + 1;
    const float xp = x[p], xq = x[q];
    const float sp = s[kFwd ? p : q], sq = s[kFwd ? q : p], sign = kFwd ? -1.0f : 1.0f;
    o[p] = xp * c[p] + sign * xq * sp;
    o[q] = xq * c[q] - sign * xp * sq;
  }
}

Status rotary(npu_sim::Stream stream, const RotaryArgs& a, bool fwd) {
  for (int64_t v : {a.d0, a.d1, a.d2, a.d})
    if (bad_size(v)) return Status::kInvalidValue;
  if (a.d % 2 != 0) return Status::kInvalidValue;
  const int64_t rows = a.d0 * a.d1 * a.d2;
  const bool empty = rows == 0 || a.d == 0;
  if (!empty && (!a.x || !a.r1 || !a.r2 || !a.out)) return Status::kInvalidValue;
  return dispatch(a.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (empty) return Status::kSuccess;
    const int64_t d = a.d, d1 = a.d1, d2 = a.d2;
    const T* x = static_cast<const T*>(a.x);
    const T* r1 = static_cast<const T*>(a.r1);
    const T* r2 = static_cast<const T*>(a.r2);
    T* out = static_cast<T*>(a.out);
    const int64_t s1[3] = {a.r1_strides[0], a.r1_strides[1], a.r1_strides[2]};
    const int64_t s2[3] = {a.r2_strides[0], a.r2_strides[1], a.r2_strides[2]};
    const bool nt = streams(rows * d * static_cast<int64_t>(sizeof(T)), a.out, {a.x});
    auto fn = fwd ? (a.mode == RotaryMode::kHalf ? rotary_row<true, true> : rotary_row<true, false>)
                  : (a.mode == RotaryMode::kHalf ? rotary_row<false, true> : rotary_row<false, false>);
    auto row = [=](int64_t r, float* buf, Cost& c) {
      const int64_t i2 = r % d2, i1 = r / d2 % d1, i0 = r / (d1 * d2);
      const float* xr = to_f32(x + r * d, d, buf);
      const float* cr = to_f32(r1 + i0 * s1[0] + i1 * s1[1] + i2 * s1[2], d, buf + d);
      const float* sr = to_f32(r2 + i0 * s2[0] + i1 * s2[1] + i2 * s2[2], d, buf + 2 * d);
      float* o = out_f32(out + r * d, buf + 3 * d, nt);
      if (o == xr || o == cr || o == sr) o = buf + 3 * d;  // in place: rotary_row's operands do not alias
      fn(xr, cr, sr, o, d / 2);
      put(out + r * d, o, d, nt);
      c.rd += 3 * sizeof(T) * d;
      c.wr += sizeof(T) * d;
      c.flops += 3 * static_cast<uint64_t>(d);
    };
    return for_units(stream, fwd ? "rotary_mul" : "rotary_mul_backward", rows, kBlockElems / d, 4 * d, no_setup, row);
  });
}

}  // namespace

npu_sim::Status rotary_mul(npu_sim::Stream stream, const RotaryArgs& args) { return rotary(stream, args, true); }
npu_sim::Status rotary_mul_backward(npu_sim::Stream stream, const RotaryArgs& args) {
  return rotary(stream, args, false);
}

// ---- SwiGLU ----

npu_sim::Status swiglu(npu_sim::Stream stream, const SwiGluArgs& a) {
  if (bad_size(a.outer) || bad_size(a.inner)) return Status::kInvalidValue;
  const bool empty = a.outer == 0 || a.inner == 0;
  if (!empty && (!a.x || !a.out)) return Status::kInvalidValue;
  return dispatch(a.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (empty) return Status::kSuccess;
    const int64_t inner = a.inner;
    const T* x = static_cast<const T*>(a.x);
    T* out = static_cast<T*>(a.out);
    const bool nt = streams(a.outer * inner * static_cast<int64_t>(sizeof(T)), a.out, {a.x});
    auto seg = [=](int64_t o, int64_t i, int64_t cnt, float* buf, Cost& c) {
      auto f = [](float a, float b) { return a * detail::fast_sigmoid(a) * b; };
      c.rd += 2 * sizeof(T) * cnt;
      c.wr += sizeof(T) * cnt;
      c.flops += 6 * static_cast<uint64_t>(cnt);
      const T* pa = x + 2 * o * inner + i;
      const T* pb = x + (2 * o + 1) * inner + i;
      if constexpr (std::is_same_v<T, BFloat16>) {
        for (int64_t k = 0; k < cnt; ++k) nar(out + o * inner + i, k, f(wid(pa, k), wid(pb, k)));
        return;
      }
      const float* av = to_f32(pa, cnt, buf);
      const float* bv = to_f32(pb, cnt, buf + kTile);
      float* y = out_f32(out + o * inner + i, buf + 2 * kTile, nt);
      for (int64_t k = 0; k < cnt; ++k) y[k] = f(av[k], bv[k]);
      put(out + o * inner + i, y, cnt, nt);
    };
    return for_segments(stream, "swiglu", a.outer, inner, 3, seg);
  });
}

npu_sim::Status swiglu_backward(npu_sim::Stream stream, const SwiGluArgs& a) {
  if (bad_size(a.outer) || bad_size(a.inner)) return Status::kInvalidValue;
  const bool empty = a.outer == 0 || a.inner == 0;
  if (!empty && (!a.x || !a.dy || !a.dx)) return Status::kInvalidValue;
  return dispatch(a.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (empty) return Status::kSuccess;
    const int64_t inner = a.inner;
    const T* x = static_cast<const T*>(a.x);
    const T* dy = static_cast<const T*>(a.dy);
    T* dx = static_cast<T*>(a.dx);
    const bool nt = streams(2 * a.outer * inner * static_cast<int64_t>(sizeof(T)), a.dx, {a.x, a.dy});
    auto seg = [=](int64_t o, int64_t i, int64_t cnt, float* buf, Cost& c) {
      // (da, db) of one element; a, b and g are read before the writes: dx may alias x
      auto f = [](float a, float b, float g, float& da, float& db) {
        const float sg = detail::fast_sigmoid(a), silu = a * sg;
        da = g * b * (sg + silu * (1.0f - sg));
        db = g * silu;
      };
      c.rd += 3 * sizeof(T) * cnt;
      c.wr += 2 * sizeof(T) * cnt;
      c.flops += 11 * static_cast<uint64_t>(cnt);
      const T *pa = x + 2 * o * inner + i, *pb = x + (2 * o + 1) * inner + i, *pg = dy + o * inner + i;
      T* da_p = dx + 2 * o * inner + i;
      T* db_p = dx + (2 * o + 1) * inner + i;
      if constexpr (std::is_same_v<T, BFloat16>) {
        for (int64_t k = 0; k < cnt; ++k) {
          float da, db;
          f(wid(pa, k), wid(pb, k), wid(pg, k), da, db);
          nar(da_p, k, da);
          nar(db_p, k, db);
        }
        return;
      }
      const float* av = to_f32(pa, cnt, buf);
      const float* bv = to_f32(pb, cnt, buf + kTile);
      const float* g = to_f32(pg, cnt, buf + 2 * kTile);
      float* da = out_f32(da_p, buf + 3 * kTile, nt);
      float* db = out_f32(db_p, buf + 4 * kTile, nt);
      for (int64_t k = 0; k < cnt; ++k) f(av[k], bv[k], g[k], da[k], db[k]);
      put(da_p, da, cnt, nt);
      put(db_p, db, cnt, nt);
    };
    return for_segments(stream, "swiglu_backward", a.outer, inner, 5, seg);
  });
}

// ---- fast GELU ----

namespace {
Status fast_gelu_impl(npu_sim::Stream stream, const FastGeluArgs& a, bool fwd) {
  if (bad_size(a.n)) return Status::kInvalidValue;
  if (a.n > 0 && (!a.x || (fwd ? !a.y : (!a.dy || !a.dx)))) return Status::kInvalidValue;
  return dispatch(a.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (a.n == 0) return Status::kSuccess;
    const T* x = static_cast<const T*>(a.x);
    const T* dy = static_cast<const T*>(a.dy);
    T* out = static_cast<T*>(fwd ? a.y : a.dx);
    const bool nt = streams(a.n * static_cast<int64_t>(sizeof(T)), out, {a.x, fwd ? nullptr : a.dy});
    constexpr float k = 1.702f;
    auto gelu = [](float v) { return v * detail::fast_sigmoid(k * v); };
    auto grad = [](float v, float g) {
      const float sg = detail::fast_sigmoid(k * v);
      return g * (sg + k * v * sg * (1.0f - sg));
    };
    auto seg = [=](int64_t, int64_t i, int64_t cnt, float* buf, Cost& c) {
      c.rd += (fwd ? 1 : 2) * sizeof(T) * cnt;
      c.wr += sizeof(T) * cnt;
      c.flops += (fwd ? 6 : 11) * static_cast<uint64_t>(cnt);
      if constexpr (std::is_same_v<T, BFloat16>) {
        if (fwd) {
          for (int64_t j = 0; j < cnt; ++j) nar(out + i, j, gelu(wid(x + i, j)));
        } else {
          for (int64_t j = 0; j < cnt; ++j) nar(out + i, j, grad(wid(x + i, j), wid(dy + i, j)));
        }
        return;
      }
      const float* xv = to_f32(x + i, cnt, buf);
      float* o = out_f32(out + i, buf + 2 * kTile, nt);
      if (fwd) {
        for (int64_t j = 0; j < cnt; ++j) o[j] = gelu(xv[j]);
      } else {
        const float* g = to_f32(dy + i, cnt, buf + kTile);
        for (int64_t j = 0; j < cnt; ++j) o[j] = grad(xv[j], g[j]);
      }
      put(out + i, o, cnt, nt);
    };
    return for_segments(stream, fwd ? "fast_gelu" : "fast_gelu_backward", 1, a.n, 3, seg);
  });
}
}  // namespace

npu_sim::Status fast_gelu(npu_sim::Stream stream, const FastGeluArgs& args) {
  return fast_gelu_impl(stream, args, true);
}
npu_sim::Status fast_gelu_backward(npu_sim::Stream stream, const FastGeluArgs& args) {
  return fast_gelu_impl(stream, args, false);
}

// ---- scaled masked softmax ----

namespace {
Status scaled_masked_softmax_impl(npu_sim::Stream stream, const ScaledMaskedSoftmaxArgs& a, bool fwd) {
  for (int64_t v : {a.b, a.h, a.s, a.n})
    if (bad_size(v)) return Status::kInvalidValue;
  if (a.fixed_triu_mask && a.mask) return Status::kInvalidValue;
  const int64_t rows = a.b * a.h * a.s;
  const bool empty = rows == 0 || a.n == 0;
  if (!empty && (fwd ? (!a.x || !a.y) : (!a.y || !a.dy || !a.dx))) return Status::kInvalidValue;
  return dispatch(a.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (empty) return Status::kSuccess;
    const int64_t n = a.n, h = a.h, s = a.s;
    const float scale = static_cast<float>(a.scale);
    const T* x = static_cast<const T*>(fwd ? a.x : a.dy);  // forward: x; backward: dy
    const T* yin = static_cast<const T*>(a.y);
    T* out = static_cast<T*>(fwd ? a.y : a.dx);
    const uint8_t* mask = reinterpret_cast<const uint8_t*>(a.mask);
    const int64_t m0 = a.mask_strides[0], m1 = a.mask_strides[1], m2 = a.mask_strides[2];
    const bool triu = a.fixed_triu_mask;
    const int64_t out_bytes = rows * n * static_cast<int64_t>(sizeof(T));
    const bool nt = fwd ? streams(out_bytes, out, {a.x}) : streams(out_bytes, out, {a.y, a.dy});
    auto row = [=](int64_t r, float* buf, Cost& c) {
      const int64_t is = r % s, ih = r / s % h, ib = r / (s * h);
      const uint8_t* m = mask ? mask + ib * m0 + ih * m1 + is * m2 : nullptr;
      const int64_t masked_from = triu ? std::min(n, is + 1) : n;  // triu: j > is masked
      const float* xv = to_f32(x + r * n, n, buf);
      float* o = out_f32(out + r * n, buf, nt);  // else over the input tile
      if (fwd) {
        float* v = buf + n;
        float mx;
        if (m) mx = fill_max(v, n, [=](int64_t j) { return m[j] ? kMaskFill : xv[j] * scale; });
        else if (triu) mx = fill_max(v, n, [=](int64_t j) { return j >= masked_from ? kMaskFill : xv[j] * scale; });
        else mx = fill_max(v, n, [=](int64_t j) { return xv[j] * scale; });
        const float inv = 1.0f / map_sum(v, n, [=](float t) { return exp_nonpos(t - mx); });
        for (int64_t j = 0; j < n; ++j) o[j] = v[j] * inv;
        c.flops += 5 * static_cast<uint64_t>(n);
      } else {  // dx = scale * y * (dy - sum(dy * y)), 0 where masked
        const float* yv = to_f32(yin + r * n, n, buf + n);
        const float sdy = dot(xv, yv, n);
        for (int64_t j = 0; j < n; ++j) o[j] = scale * yv[j] * (xv[j] - sdy);
        if (m)
          for (int64_t j = 0; j < n; ++j) o[j] = m[j] ? 0.0f : o[j];
        for (int64_t j = masked_from; j < n; ++j) o[j] = 0.0f;
        c.rd += sizeof(T) * n;
        c.flops += 5 * static_cast<uint64_t>(n);
      }
      put(out + r * n, o, n, nt);
      c.rd += sizeof(T) * n + (m ? n : 0);
      c.wr += sizeof(T) * n;
    };
    return for_units(stream, fwd ? "scaled_masked_softmax" : "scaled_masked_softmax_backward", rows, kBlockElems / n,
                     2 * n, no_setup, row);
  });
}
}  // namespace

npu_sim::Status scaled_masked_softmax(npu_sim::Stream stream, const ScaledMaskedSoftmaxArgs& args) {
  return scaled_masked_softmax_impl(stream, args, true);
}
npu_sim::Status scaled_masked_softmax_backward(npu_sim::Stream stream, const ScaledMaskedSoftmaxArgs& args) {
  return scaled_masked_softmax_impl(stream, args, false);
}

}  // namespace npu_kernels
