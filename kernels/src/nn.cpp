// nn kernels: softmax / log_softmax (+ backward), layer norm (+ backward), nll_loss (+ backward).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dtype_convert.h"  // branch-free fp16 <-> fp32 in registers
#include "npu_kernels/launch.h"
#include "npu_kernels/float_dispatch.h"
#include "npu_kernels/nn.h"
#include "fast_math.h"
#include "traffic.h"
#include "npu_kernels/vec16.h"
#include "row_math.h"

namespace npu_kernels {

namespace {

template <typename T>
inline acc_t<T> ld(const T* p) {
  if constexpr (std::is_same_v<T, Half>) return detail::half_bits_to_float(p->bits);  // no libcall
  else
    return static_cast<acc_t<T>>(static_cast<std::conditional_t<is_reduced_float_v<T>, float, T>>(*p));
}

// Calls f(In{}, Out{}) for in == out, or 16-bit in with float32 out.
template <typename F>
npu_sim::Status dispatch_in_out(DType in, DType out, F&& f) {
  if (in == out) return dispatch_fp(in, [&](auto t) { return f(t, t); });
  if (out == DType::kFloat32 && in == DType::kFloat16) return f(Half{}, float{});
  if (out == DType::kFloat32 && in == DType::kBFloat16) return f(BFloat16{}, float{});
  return npu_sim::Status::kInvalidValue;
}

using detail::lane_dot;
using detail::lane_max;
using detail::lane_reduce_sum;
using detail::lane_sqdev;
using detail::lane_sum;
using detail::hsum16;
using detail::load16;
using detail::store16;
using detail::v16sf;

// A contiguous 16-bit row widened into dst, returning its max as lane_max does (a NaN never wins): one pass.
template <typename T>
inline float widen_row_max(float* dst, const T* src, int64_t n) {
  v16sf a = detail::splat16(-std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const v16sf v = load16(src + i);
    store16(dst + i, v);
    a = detail::max16(v, a);
  }
  float m = a[0];
  for (int j = 1; j < 16; ++j) m = a[j] > m ? a[j] : m;
  for (; i < n; ++i) {
    dst[i] = ld(src + i);
    m = dst[i] > m ? dst[i] : m;
  }
  return m;
}

// y[i] = f(i) rounded into a contiguous 16-bit row: f16 gives 16 lanes at i, f1 one element.
template <typename T, typename F16, typename F1>
inline void narrow_map(T* y, int64_t n, F16&& f16, F1&& f1) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) store16(y + i, f16(i));
  for (; i < n; ++i) y[i] = convert<T>(f1(i));
}

// One line of n elements with element stride s; buf holds 2n accumulators. Loops over buf are
// contiguous and branch-free so they vectorise (fast_exp included). Contiguous 16-bit rows are widened with
// the max in one pass and rounded out from registers (six passes over the row were 1.1-1.2x CPU eager's fp16).
template <typename In, typename Out>
void softmax_line(const In* x, Out* y, int64_t n, int64_t s, bool log, acc_t<In>* buf) {
  using A = acc_t<In>;
  A* e = buf + n;
  // The row in the accumulation type: read in place (contiguous float / double), else copied in (16-bit
  // rows widened in registers).
  const A* r = buf;
  A m;
  if constexpr (std::is_same_v<In, A>) {
    if (s == 1) r = x; else for (int64_t i = 0; i < n; ++i) buf[i] = x[i * s];
    m = lane_max(r, n);
  } else if constexpr (is_reduced_float_v<In>) {
    if (s == 1) {
      m = widen_row_max(buf, x, n);
    } else {
      for (int64_t i = 0; i < n; ++i) buf[i] = ld(x + i * s);
      m = lane_max(r, n);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) buf[i] = ld(x + i * s);
    m = lane_max(r, n);
  }
  // a NaN is skipped by lane_max but reaches the sum through exp, so every output becomes NaN
  if (std::isinf(m) && m < 0) m = 0;  // all -inf: exp gives 0, sum 0 -> nan, as on CPU
  const A sum = detail::exp_sub_sum(r, e, n, m);
  if constexpr (is_reduced_float_v<Out>) {
    if (s == 1) {
      if (log) {
        const A lse = std::log(sum);
        narrow_map(y, n, [r, m, lse](int64_t i) { return (load16(r + i) - m) - lse; },
                   [r, m, lse](int64_t i) { return (r[i] - m) - lse; });
      } else {
        const A inv = A(1) / sum;
        narrow_map(y, n, [e, inv](int64_t i) { return load16(e + i) * inv; }, [e, inv](int64_t i) { return e[i] * inv; });
      }
      return;
    }
  }
  // The result: straight into a contiguous row of the same type, else into e and converted out.
  const bool direct = std::is_same_v<Out, A> && s == 1;
  A* res = direct ? reinterpret_cast<A*>(y) : e;
  if (log) {
    const A lse = std::log(sum);
    for (int64_t i = 0; i < n; ++i) res[i] = (r[i] - m) - lse;
  } else {
    const A inv = A(1) / sum;
    for (int64_t i = 0; i < n; ++i) res[i] = e[i] * inv;
  }
  if (direct) return;
  for (int64_t i = 0; i < n; ++i) y[i * s] = convert<Out>(e[i]);
}

// softmax / log_softmax backward of one contiguous fp16 / bf16 row into a row of the same type, converting in
// registers: the reduction reads g (and y) straight from the row; softmax's output pass too. log_softmax's
// exp(y) goes through 256-element fp32 chunks (the compiler vectorises fast_exp over a plain loop). The sums
// keep lane_dot / lane_sum's lane order. Widening whole rows first cost ~2x: the copies' stores bound it.
template <typename T>
void softmax_backward_row16(const T* g, const T* y, T* o, int64_t n, bool log) {
  const auto tail = [](const T* p, int64_t i) { return ld(p + i); };
  if (!log) {
    const float acc = lane_reduce_sum(n, [=](int64_t i) { return load16(g + i) * load16(y + i); },
                                      [=](int64_t i) { return tail(g, i) * tail(y, i); });
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) store16(o + k, (load16(g + k) - acc) * load16(y + k));
    for (; k < n; ++k) o[k] = detail::store_as<T>((tail(g, k) - acc) * tail(y, k));
    return;
  }
  const float acc = lane_reduce_sum(n, [=](int64_t i) { return load16(g + i); }, [=](int64_t i) { return tail(g, i); });
  constexpr int64_t kChunk = 256;
  alignas(64) float ey[kChunk];
  for (int64_t c = 0; c < n; c += kChunk) {
    const int64_t m = std::min(kChunk, n - c);
    const int64_t m16 = m & ~int64_t{15};
    for (int64_t k = 0; k < m16; k += 16) store16(ey + k, load16(y + c + k));
    for (int64_t k = m16; k < m; ++k) ey[k] = tail(y, c + k);
    for (int64_t k = 0; k < m; ++k) ey[k] = detail::fast_exp(ey[k]) * acc;
    for (int64_t k = 0; k < m16; k += 16) store16(o + c + k, load16(g + c + k) - load16(ey + k));
    for (int64_t k = m16; k < m; ++k) o[c + k] = detail::store_as<T>(tail(g, c + k) - ey[k]);
  }
}

}  // namespace

npu_sim::Status softmax(npu_sim::Stream stream, const SoftmaxDesc& d) {
  const int64_t lines = d.outer * d.inner;
  if (lines == 0 || d.n == 0) return npu_sim::Status::kSuccess;
  return dispatch_in_out(d.in_dtype, d.out_dtype, [&](auto ti, auto to) {
    using In = decltype(ti);
    using Out = decltype(to);
    const int64_t grain = std::max<int64_t>(1, (1 << 14) / d.n);
    // Launch records: each line's n inputs are read once into the block's buffer and n outputs written;
    // 5 Vector ops per element (max, subtract, exp, sum, scale / log-subtract).
    return parallel_for(stream, d.log ? "log_softmax" : "softmax", lines, grain,
                        [d](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                          const int64_t elems = (e - b) * d.n;
                          detail::record_vec(ctx, elems * static_cast<int64_t>(sizeof(In)),
                                             elems * static_cast<int64_t>(sizeof(Out)), 5 * elems);
                          std::unique_ptr<acc_t<In>[]> buf(new acc_t<In>[static_cast<size_t>(2 * d.n)]);
                          for (int64_t l = b; l < e; ++l) {
                            const int64_t o = l / d.inner, i = l % d.inner;
                            const int64_t off = o * d.n * d.inner + i;
                            softmax_line(static_cast<const In*>(d.in) + off, static_cast<Out*>(d.out) + off, d.n,
                                         d.inner, d.log, buf.get());
                          }
                        });
  });
}

npu_sim::Status softmax_backward(npu_sim::Stream stream, const SoftmaxBackwardDesc& d) {
  const int64_t lines = d.outer * d.inner;
  if (lines == 0 || d.n == 0) return npu_sim::Status::kSuccess;
  // g/y in `dtype`, grad_in in `out_dtype`: same, or float g/y with half grad_in (half_to_float)
  auto body = [&](auto tg, auto to) {
    using G = decltype(tg);
    using Out = decltype(to);
    using A = std::conditional_t<std::is_same_v<G, double>, double, float>;
    const int64_t grain = std::max<int64_t>(1, (1 << 14) / d.n);
    // Launch records: grad and output are read once each into the block's buffers, grad_in written once;
    // 4 Vector ops per element (softmax: multiply, sum, multiply, subtract; log: sum, exp, multiply, subtract).
    return parallel_for(stream, d.log ? "log_softmax_backward" : "softmax_backward", lines, grain,
                        [d](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                          const int64_t elems = (e - b) * d.n;
                          detail::record_vec(ctx, 2 * elems * static_cast<int64_t>(sizeof(G)),
                                             elems * static_cast<int64_t>(sizeof(Out)), 4 * elems);
                          const G* g = static_cast<const G*>(d.grad);
                          const G* y = static_cast<const G*>(d.output);
                          Out* gi = static_cast<Out*>(d.grad_in);
                          const int64_t s = d.inner;
                          std::vector<A> gb(static_cast<size_t>(d.n)), yb(static_cast<size_t>(d.n));
                          for (int64_t l = b; l < e; ++l) {
                            const int64_t off = (l / d.inner) * d.n * d.inner + l % d.inner;
                            if constexpr (std::is_same_v<G, float> && std::is_same_v<Out, float>) {
                              if (s == 1) {  // contiguous float rows: read in place, one pass out
                                const float* gr = g + off;
                                const float* yr = y + off;
                                float* o = gi + off;
                                if (d.log) {
                                  const float acc = lane_sum(gr, d.n);
                                  for (int64_t k = 0; k < d.n; ++k) o[k] = gr[k] - detail::fast_exp(yr[k]) * acc;
                                } else {
                                  const float acc = lane_dot(gr, yr, d.n);
                                  for (int64_t k = 0; k < d.n; ++k) o[k] = (gr[k] - acc) * yr[k];
                                }
                                continue;
                              }
                            }
                            if constexpr (is_reduced_float_v<G> && std::is_same_v<Out, G>) {
                              if (s == 1) {
                                softmax_backward_row16(g + off, y + off, gi + off, d.n, d.log);
                                continue;
                              }
                            }
                            for (int64_t k = 0; k < d.n; ++k) {  // strided (or float64) rows
                              gb[k] = ld(g + off + k * s);
                              yb[k] = ld(y + off + k * s);
                            }
                            A* G_ = gb.data();
                            A* Y_ = yb.data();
                            if (d.log) {
                              const A acc = lane_sum(G_, d.n);
                              for (int64_t k = 0; k < d.n; ++k) Y_[k] = G_[k] - detail::fast_exp(Y_[k]) * acc;
                            } else if constexpr (std::is_same_v<A, float>) {
                              const A acc = lane_dot(G_, Y_, d.n);
                              for (int64_t k = 0; k < d.n; ++k) Y_[k] = (G_[k] - acc) * Y_[k];
                            } else {
                              for (int64_t k = 0; k < d.n; ++k) G_[k] *= Y_[k];
                              const A acc = lane_sum(G_, d.n);
                              for (int64_t k = 0; k < d.n; ++k) Y_[k] = G_[k] - Y_[k] * acc;
                            }
                            if constexpr (is_reduced_float_v<Out>) {
                              if (s == 1) {
                                detail::narrow_row(gi + off, Y_, d.n);
                                continue;
                              }
                            }
                            for (int64_t k = 0; k < d.n; ++k) gi[off + k * s] = convert<Out>(Y_[k]);
                          }
                        });
  };
  if (d.dtype == d.out_dtype) return dispatch_fp(d.dtype, [&](auto t) { return body(t, t); });
  if (d.dtype == DType::kFloat32 && d.out_dtype == DType::kFloat16) return body(float{}, Half{});
  if (d.dtype == DType::kFloat32 && d.out_dtype == DType::kBFloat16) return body(float{}, BFloat16{});
  return npu_sim::Status::kInvalidValue;
}

// ---- layer norm ----

namespace {
constexpr int64_t kTile = 64;  // outputs reduced together along a contiguous kept dim

// The copy-in of a 16-bit row: widened to float into slot `slot` (n floats each) of the core's Unified
// Buffer, so the row statistics run on the vectorised float loops. Null when `slots` rows of n floats do
// not fit the UB (the caller keeps its per-element loop) or for float rows (read in place).
template <typename T>
const float* widen_into_ub(const npu_sim::BlockContext& ctx, int slot, int slots, const T* src, int64_t n) {
  if constexpr (!is_reduced_float_v<T>) {
    return nullptr;
  } else {
    if (static_cast<std::size_t>(slots * n) * sizeof(float) > ctx.ub_bytes) return nullptr;
    float* dst = static_cast<float*>(ctx.ub) + slot * n;
    detail::widen_row(dst, src, n);
    return dst;
  }
}
}  // namespace

npu_sim::Status layer_norm(npu_sim::Stream stream, const LayerNormDesc& d) {
  if (d.M == 0) return npu_sim::Status::kSuccess;
  return dispatch_fp(d.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const int64_t grain = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(d.N, 1));
    // Launch records: each row reads x three times from GM (sum, squared deviations, normalise) and the
    // weight and bias once (re-read per row), writes y and the row's mean/rstd when asked; 8 Vector ops per
    // element (add; subtract, multiply, add; subtract, multiply, multiply, add).
    return parallel_for(stream, "layer_norm", d.M, grain, [d](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
      const T* w = static_cast<const T*>(d.weight);
      const T* bias = static_cast<const T*>(d.bias);
      // 16-bit weight and bias: widened into the UB once per block (slots 2 and 3 beside the row's x and y), as
      // a per-element fp16 conversion in the normalising loop does not vectorise (fp16 ran 1.7x CPU eager).
      const float* wf = w ? widen_into_ub(ctx, 2, 4, w, d.N) : nullptr;
      const float* bf = bias ? widen_into_ub(ctx, 3, 4, bias, d.N) : nullptr;
      const bool params_in_ub = (w == nullptr || wf != nullptr) && (bias == nullptr || bf != nullptr) &&
                                (wf != nullptr || bf != nullptr);
      {
        constexpr int64_t t = sizeof(T);
        const int64_t rows = e - b;
        const int64_t params_rd = ((w ? 1 : 0) + (bias ? 1 : 0)) * d.N * t;  // per row, or once into the UB
        const int64_t rd = rows * 3 * d.N * t + (params_in_ub ? 1 : rows) * params_rd;
        const int64_t per_row_wr = d.N * t + ((d.mean ? 1 : 0) + (d.rstd ? 1 : 0)) * t;
        detail::record_vec(ctx, rd, rows * per_row_wr, 8 * rows * d.N);
      }
      for (int64_t r = b; r < e; ++r) {
        const T* x = static_cast<const T*>(d.x) + r * d.N;
        T* y = static_cast<T*>(d.y) + r * d.N;
        A mean, m2;
        const float* xf = nullptr;  // the row as float: in place, or widened into the UB
        if constexpr (std::is_same_v<T, float>) xf = x; else xf = widen_into_ub(ctx, 0, 2, x, d.N);
        if (xf != nullptr) {  // vectorised row statistics
          mean = d.N > 0 ? lane_sum(xf, d.N) / static_cast<A>(d.N) : A(0);
          m2 = lane_sqdev(xf, d.N, static_cast<float>(mean));
        } else {
          A sum = 0;
          for (int64_t i = 0; i < d.N; ++i) sum += ld(x + i);
          mean = d.N > 0 ? sum / static_cast<A>(d.N) : A(0);
          m2 = 0;
          for (int64_t i = 0; i < d.N; ++i) {
            const A dx = ld(x + i) - mean;
            m2 += dx * dx;
          }
        }
        const A var = d.N > 0 ? m2 / static_cast<A>(d.N) : A(0);
        const A rstd = A(1) / std::sqrt(var + static_cast<A>(d.eps));
        auto normalise = [&](const auto* src, auto* dst, const auto* wp, const auto* bp) {
          using D = std::remove_pointer_t<decltype(dst)>;
          // one loop per affine case: a test per element kept GCC from vectorising (fp16 without a weight ran
          // 5x slower than with one)
          if (wp && bp) {
            for (int64_t i = 0; i < d.N; ++i) dst[i] = convert<D>((ld(src + i) - mean) * rstd * ld(wp + i) + ld(bp + i));
          } else if (wp) {
            for (int64_t i = 0; i < d.N; ++i) dst[i] = convert<D>((ld(src + i) - mean) * rstd * ld(wp + i));
          } else if (bp) {
            for (int64_t i = 0; i < d.N; ++i) dst[i] = convert<D>((ld(src + i) - mean) * rstd + ld(bp + i));
          } else {
            for (int64_t i = 0; i < d.N; ++i) dst[i] = convert<D>((ld(src + i) - mean) * rstd);
          }
        };
        if constexpr (is_reduced_float_v<T>) {
          if (xf != nullptr) {  // normalise into the UB in float, copy out rounding once
            float* yf = static_cast<float*>(ctx.ub) + d.N;
            if (params_in_ub) normalise(xf, yf, wf, bf); else normalise(xf, yf, w, bias);
            detail::narrow_row(y, yf, d.N);
          } else {
            normalise(x, y, w, bias);
          }
        } else {
          normalise(x, y, w, bias);
        }
        if (d.mean) static_cast<T*>(d.mean)[r] = convert<T>(mean);
        if (d.rstd) static_cast<T*>(d.rstd)[r] = convert<T>(rstd);
      }
    });
  });
}

// One row of layer_norm_backward (float, fp16 or bf16, read in place and converted in registers) in 16 lanes, two
// passes. The first returns (sum g, sum g x) with g = dy * w (w may be null) and adds dy * xhat and dy into pw / pb
// when they are given; the second writes dx. (Six passes over the row for g, its two sums and the two parameter
// sums left (4096, 1024) fp32 at 1.1-1.2x CPU eager's time; 16-bit rows widened into the UB first, 1.2-1.4x.)
template <typename T>
inline std::pair<float, float> layer_norm_backward_sums(const T* x, const T* dy, const T* w, int64_t n, float mean,
                                                        float rstd, float* pw, float* pb) {
  v16sf sg0 = {}, sg1 = {}, sx0 = {}, sx1 = {};
  const auto block = [&](int64_t i, v16sf& sg, v16sf& sx) {
    const v16sf dyv = load16(dy + i), xv = load16(x + i);
    const v16sf g = w ? dyv * load16(w + i) : dyv;
    sg += g;
    sx += g * xv;
    if (pw) {
      store16(pw + i, load16(pw + i) + dyv * ((xv - mean) * rstd));
      store16(pb + i, load16(pb + i) + dyv);
    }
  };
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    block(i, sg0, sx0);
    block(i + 16, sg1, sx1);
  }
  for (; i + 16 <= n; i += 16) block(i, sg0, sx0);
  float sg = hsum16(sg0 + sg1), sx = hsum16(sx0 + sx1);
  for (; i < n; ++i) {
    const float dyi = ld(dy + i), xi = ld(x + i);
    const float g = w ? dyi * ld(w + i) : dyi;
    sg += g;
    sx += g * xi;
    if (pw) {
      pw[i] += dyi * ((xi - mean) * rstd);
      pb[i] += dyi;
    }
  }
  return {sg, sx};
}
template <typename T>
inline void layer_norm_backward_dx(T* dx, const T* x, const T* dy, const T* w, int64_t n, float mean, float rstd,
                                   float k1, float k2) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const v16sf g = w ? load16(dy + i) * load16(w + i) : load16(dy + i);
    store16(dx + i, rstd * (g - k1 - (load16(x + i) - mean) * k2));
  }
  for (; i < n; ++i) {
    const float g = w ? ld(dy + i) * ld(w + i) : ld(dy + i);
    dx[i] = convert<T>(rstd * (g - k1 - (ld(x + i) - mean) * k2));
  }
}

// One pass over the rows: each block of kLnRows rows computes its rows' dx (when asked) and, when the
// weight / bias gradients are asked, sums its rows' dy * xhat and dy into its own slot of a GM workspace; a
// second launch adds the slots by column. x and dy are read from GM once (the separate parameter pass this
// replaced read them again: 1.4x CPU eager's fused kernel at (4096, 1024) fp32). The row blocks depend only on
// M, so the sums are bitwise the same for any number of core threads.
npu_sim::Status layer_norm_backward(npu_sim::Stream stream, const LayerNormDesc& d) {
  if (d.M == 0 || d.N == 0) return npu_sim::Status::kSuccess;
  return dispatch_fp(d.dtype, [&](auto tag) -> npu_sim::Status {
    using T = decltype(tag);
    using A = acc_t<T>;
    // rows per block: up to 64, fewer while that leaves under 16 blocks (parallelism for short M). Each block's
    // parameter sums cost a 2 x N workspace slot written and read back: with 64 blocks, 8 rows of 4096 each, those
    // cost as much as the rows (16-bit (512, 4096) ran 1.4x CPU eager).
    constexpr int64_t kLnRows = 64, kMinBlocks = 16;
    const bool params = d.dweight != nullptr || d.dbias != nullptr;
    const int64_t rows_per = std::max<int64_t>(1, std::min<int64_t>(kLnRows, (d.M + kMinBlocks - 1) / kMinBlocks));
    const int64_t chunks = (d.M + rows_per - 1) / rows_per;
    // workspace: per chunk, N sums of dy * xhat then N sums of dy
    auto part = std::make_shared<std::vector<A>>(params ? static_cast<size_t>(chunks * 2 * d.N) : 0);
    // Launch records: per row, mean and rstd, and what the row's passes read from GM (see below). Written: dx, and
    // the block's workspace slot. 9 Vector ops per element for dx, 3 for the sums.
    auto st = npu_sim::launch_kernel(stream, "layer_norm_backward", static_cast<uint32_t>(chunks),
                                     [d, rows_per, params, part](const npu_sim::BlockContext& ctx) {
      const T* w = static_cast<const T*>(d.weight);
      const int64_t b = ctx.block_idx * rows_per, e = std::min(d.M, b + rows_per);
      A* pw = params ? part->data() + ctx.block_idx * 2 * d.N : nullptr;
      A* pb = params ? pw + d.N : nullptr;
      if (params) std::fill(pw, pw + 2 * d.N, A(0));
      constexpr bool kLanes = std::is_same_v<T, float> || is_reduced_float_v<T>;  // rows read in place, 16 lanes
      {
        constexpr int64_t t = sizeof(T);
        const int64_t rows = e - b, wr = w ? 1 : 0, dx_rows = d.dx ? 1 : 0, sums = params ? 1 : 0;
        // in 16 lanes: the sums' pass reads x and dy (and the weight for dx), dx's pass all three again; per element,
        // each pass reads the row again (dx: dy, weight, x twice; sums: x and dy)
        const int64_t per_row = kLanes ? (2 + dx_rows * (2 * wr + 2)) * d.N : (dx_rows * 2 * (2 + wr) + sums * 2) * d.N;
        detail::record_vec(ctx, rows * (per_row + 2) * t,
                           dx_rows * rows * d.N * t + sums * 2 * d.N * static_cast<int64_t>(sizeof(A)),
                           (9 * dx_rows + 3 * sums) * rows * d.N);
      }
      const A inv_n = A(1) / static_cast<A>(d.N);
      for (int64_t r = b; r < e; ++r) {
        const T* x = static_cast<const T*>(d.x) + r * d.N;
        const T* dy = static_cast<const T*>(d.dy) + r * d.N;
        T* dx = d.dx != nullptr ? static_cast<T*>(d.dx) + r * d.N : nullptr;
        const A mean = ld(static_cast<const T*>(d.mean) + r), rstd = ld(static_cast<const T*>(d.rstd) + r);
        // the parameter sums of this row: dweight += dy * xhat, dbias += dy (vectorised float loops)
        auto add_params = [&](const auto* xr, const auto* dyr) {
          if (!params) return;
          for (int64_t i = 0; i < d.N; ++i) pw[i] += ld(dyr + i) * ((ld(xr + i) - mean) * rstd);
          for (int64_t i = 0; i < d.N; ++i) pb[i] += ld(dyr + i);
        };
        if constexpr (kLanes) {
          const auto [sg, sgx_raw] = layer_norm_backward_sums(x, dy, w, d.N, mean, rstd, pw, pb);
          if (!d.dx) continue;
          const A sgx = (sgx_raw - mean * sg) * rstd;
          layer_norm_backward_dx(dx, x, dy, w, d.N, mean, rstd, sg * inv_n, sgx * inv_n * rstd);
        } else {
          add_params(x, dy);
          if (!d.dx) continue;
          A sg = 0, sgx = 0;
          for (int64_t i = 0; i < d.N; ++i) {
            const A g = ld(dy + i) * (w ? ld(w + i) : A(1));
            sg += g;
            sgx += g * (ld(x + i) - mean) * rstd;
          }
          for (int64_t i = 0; i < d.N; ++i) {
            const A g = ld(dy + i) * (w ? ld(w + i) : A(1));
            const A xh = (ld(x + i) - mean) * rstd;
            dx[i] = convert<T>(rstd * (g - sg * inv_n - xh * sgx * inv_n));
          }
        }
      }
    });
    if (st != npu_sim::Status::kSuccess || !params) return st;
    // Launch records: a tile of cnt columns reads its 2 x cnt workspace sums of every block and writes cnt
    // elements of dweight and/or dbias; one Vector op per sum.
    const int64_t tiles = (d.N + kTile - 1) / kTile;
    return npu_sim::launch_kernel(stream, "layer_norm_backward_params", static_cast<uint32_t>(tiles),
                                  [d, chunks, part](const npu_sim::BlockContext& ctx) {
      const int64_t j0 = ctx.block_idx * kTile, cnt = std::min(kTile, d.N - j0);
      const int64_t outs = (d.dweight ? 1 : 0) + (d.dbias ? 1 : 0);
      detail::record_vec(ctx, chunks * 2 * cnt * int64_t(sizeof(A)), cnt * outs * int64_t(sizeof(T)), chunks * 2 * cnt);
      A dw[kTile] = {}, db[kTile] = {};
      for (int64_t c = 0; c < chunks; ++c) {
        const A* pw = part->data() + c * 2 * d.N + j0;
        const A* pb = pw + d.N;
        for (int64_t j = 0; j < cnt; ++j) dw[j] += pw[j];
        for (int64_t j = 0; j < cnt; ++j) db[j] += pb[j];
      }
      for (int64_t j = 0; j < cnt; ++j) {
        if (d.dweight) static_cast<T*>(d.dweight)[j0 + j] = convert<T>(dw[j]);
        if (d.dbias) static_cast<T*>(d.dbias)[j0 + j] = convert<T>(db[j]);
      }
    });
  });
}

// ---- nll_loss ----

namespace {
[[noreturn]] void bad_target(int64_t t, int64_t C) {
  throw npu_sim::KernelError("nll_loss: Target " + std::to_string(t) + " is out of bounds (classes: " +
                             std::to_string(C) + ")");
}
}  // namespace

npu_sim::Status nll_loss_forward(npu_sim::Stream stream, const NllLossDesc& d) {
  return dispatch_fp(d.dtype, [&](auto tag) -> npu_sim::Status {
    using T = decltype(tag);
    using A = acc_t<T>;
    if (d.reduction == 0) {
      if (d.N == 0) return npu_sim::Status::kSuccess;
      // Launch records: each sample reads its int64 target and writes its loss; a sample not ignored also
      // reads one input element and its class weight; 2 Vector ops per such sample (multiply, negate).
      return parallel_for(stream, "nll_loss_forward", d.N, 1 << 12, [d](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
        const T* x = static_cast<const T*>(d.input);
        const T* w = static_cast<const T*>(d.weight);
        T* out = static_cast<T*>(d.out);
        int64_t hits = 0;
        for (int64_t i = b; i < e; ++i) {
          const int64_t t = d.target[i];
          if (t == d.ignore_index) {
            out[i] = convert<T>(A(0));
            continue;
          }
          if (t < 0 || t >= d.C) bad_target(t, d.C);
          out[i] = convert<T>(-ld(x + i * d.C + t) * (w ? ld(w + t) : A(1)));
          ++hits;
        }
        constexpr int64_t ts = sizeof(T);
        detail::record_vec(ctx, (e - b) * 8 + hits * (w ? 2 : 1) * ts, (e - b) * ts, 2 * hits);
      });
    }
    // Launch records (mean/sum): as above, plus the loss and the total weight written; 3 Vector ops per
    // sample not ignored (multiply, subtract, add).
    return npu_sim::launch_kernel(stream, "nll_loss_forward", 1, [d](const npu_sim::BlockContext& ctx) {
      const T* x = static_cast<const T*>(d.input);
      const T* w = static_cast<const T*>(d.weight);
      A total = 0, tw = 0;
      int64_t hits = 0;
      for (int64_t i = 0; i < d.N; ++i) {
        const int64_t t = d.target[i];
        if (t == d.ignore_index) continue;
        if (t < 0 || t >= d.C) bad_target(t, d.C);
        const A wt = w ? ld(w + t) : A(1);
        total -= ld(x + i * d.C + t) * wt;
        tw += wt;
        ++hits;
      }
      constexpr int64_t ts = sizeof(T);
      detail::record_vec(ctx, d.N * 8 + hits * (w ? 2 : 1) * ts, 2 * ts, 3 * hits);
      if (d.reduction == 1) total = total / tw;  // 0/0 = nan when everything is ignored, as on CPU
      *static_cast<T*>(d.out) = convert<T>(total);
      *static_cast<T*>(d.total_weight) = convert<T>(tw);
    });
  });
}

npu_sim::Status nll_loss_backward(npu_sim::Stream stream, const NllLossDesc& d) {
  if (d.N == 0) return npu_sim::Status::kSuccess;
  return dispatch_fp(d.dtype, [&](auto tag) -> npu_sim::Status {
    using T = decltype(tag);
    using A = acc_t<T>;
    return parallel_for(stream, "nll_loss_backward", d.N, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(d.C, 1)),
                        [d](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                          // Launch records: each sample reads its int64 target and zeroes its row of C; a
                          // sample not ignored reads grad_out (its own, or the scalar) and its class weight
                          // and writes its target's element again; mean also reads total_weight once per
                          // block. 3 Vector ops per sample not ignored.
                          int64_t hits = 0;
                          const T* w = static_cast<const T*>(d.weight);
                          const T* g = static_cast<const T*>(d.grad_out);
                          T* gi = static_cast<T*>(d.grad_in);
                          const A scale = d.reduction == 1 ? A(1) / ld(static_cast<const T*>(d.total_weight_in)) : A(1);
                          for (int64_t i = b; i < e; ++i) {
                            T* row = gi + i * d.C;
                            for (int64_t c = 0; c < d.C; ++c) row[c] = convert<T>(A(0));
                            const int64_t t = d.target[i];
                            if (t == d.ignore_index) continue;
                            if (t < 0 || t >= d.C) bad_target(t, d.C);
                            const A go = d.reduction == 0 ? ld(g + i) : ld(g);
                            row[t] = convert<T>(-(w ? ld(w + t) : A(1)) * go * scale);
                            ++hits;
                          }
                          constexpr int64_t ts = sizeof(T);
                          detail::record_vec(ctx, (e - b) * 8 + hits * (w ? 2 : 1) * ts + (d.reduction == 1 ? ts : 0),
                                             ((e - b) * d.C + hits) * ts, 3 * hits);
                        });
  });
}

}  // namespace npu_kernels
