// Separable resampling kernels (see npu_kernels/resample.h): per-axis K-tap tables built on the host at launch,
// then row-parallel gathers / interpolations (forward) and plane-parallel scatters into a float buffer (backward).
// The window modes (antialiased, uint8 bilinear / bicubic) go to resample_aa.cpp.
#include "npu_kernels/resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "npu_kernels/float_dispatch.h"
#include "npu_kernels/launch.h"
#include "resample_aa.h"
#include "traffic.h"

namespace npu_kernels {

namespace {

constexpr int kMaxTaps = 4;
int taps_of(ResampleMode mode) { return mode == ResampleMode::kCubic ? 4 : (mode == ResampleMode::kLinear ? 2 : 1); }

// Output position o of one axis reads input idx[o * k + j] with weight wgt[o * k + j], j < k.
template <typename A>
struct Taps {
  int k = 1;
  std::vector<int64_t> idx;
  std::vector<A> wgt;
};

// PyTorch's conventions (ATen/native/UpSample.h): nearest scales are float whatever the dtype; linear and cubic
// ones are in the accumulation type; a scale factor given by the user replaces in/out.
float nearest_scale(const ResampleAxis& ax) {
  return ax.scale > 0 ? static_cast<float>(1.0 / ax.scale) : static_cast<float>(ax.in) / static_cast<float>(ax.out);
}

// The source coordinate of output o (area_pixel_compute_source_index); linear clamps it at 0, cubic does not.
template <typename A>
A source_index(const ResampleAxis& ax, int64_t o, bool cubic) {
  const int64_t last = ax.in - 1;
  A ratio;
  if (ax.align_corners) ratio = ax.out > 1 ? static_cast<A>(last) / static_cast<A>(ax.out - 1) : A(0);
  else ratio = ax.scale > 0 ? static_cast<A>(1.0 / ax.scale) : static_cast<A>(ax.in) / static_cast<A>(ax.out);
  if (ax.align_corners) return ratio * static_cast<A>(o);
  const A real = ratio * (static_cast<A>(o) + A(0.5)) - A(0.5);
  return !cubic && real < A(0) ? A(0) : real;
}

// Keys' cubic convolution weights for the four taps around a fractional position t (A = -0.75, as PyTorch).
template <typename A>
void cubic_weights(A t, A* w) {
  constexpr A kA = A(-0.75);
  auto near = [&](A x) { return ((kA + A(2)) * x - (kA + A(3))) * x * x + A(1); };    // |x| <= 1
  auto far = [&](A x) { return ((kA * x - A(5) * kA) * x + A(8) * kA) * x - A(4) * kA; };  // 1 < |x| < 2
  w[0] = far(t + A(1));
  w[1] = near(t);
  w[2] = near(A(1) - t);
  w[3] = far(A(2) - t);
}

template <typename A>
Taps<A> make_taps(ResampleMode mode, const ResampleAxis& ax) {
  Taps<A> t;
  t.k = taps_of(mode);
  t.idx.assign(static_cast<size_t>(ax.out * t.k), 0);
  t.wgt.assign(static_cast<size_t>(ax.out * t.k), A(0));
  const int64_t last = ax.in - 1;
  for (int64_t o = 0; o < ax.out; ++o) {
    int64_t* idx = t.idx.data() + o * t.k;
    A* wgt = t.wgt.data() + o * t.k;
    int64_t i = o;
    switch (mode) {
      case ResampleMode::kNearest:
        if (ax.out == ax.in) i = o;
        else if (ax.out == 2 * ax.in) i = o >> 1;
        else i = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * nearest_scale(ax))), last);
        break;
      case ResampleMode::kNearestExact:
        i = std::min(static_cast<int64_t>(std::floor(static_cast<float>((o + 0.5) * nearest_scale(ax)))), last);
        break;
      case ResampleMode::kReflect:
        i = o - ax.pad_before;
        if (i < 0) i = -i;
        if (i > last) i = 2 * last - i;
        break;
      case ResampleMode::kReplicate: i = std::clamp<int64_t>(o - ax.pad_before, 0, last); break;
      default: break;  // the window modes: resample_aa.cpp
      case ResampleMode::kLinear: {
        idx[0] = idx[1] = o;
        wgt[0] = A(1);
        if (ax.out == ax.in) continue;  // the identity, exactly
        const A real = source_index<A>(ax, o, false);
        i = std::min(static_cast<int64_t>(std::floor(real)), last);
        const A l1 = std::min(std::max(real - static_cast<A>(i), A(0)), A(1));
        idx[0] = i;
        idx[1] = i + (i < last ? 1 : 0);
        wgt[0] = A(1) - l1;
        wgt[1] = l1;
        continue;
      }
      case ResampleMode::kCubic: {
        const A real = source_index<A>(ax, o, true);
        i = std::min(static_cast<int64_t>(std::floor(real)), last);
        cubic_weights<A>(std::min(std::max(real - static_cast<A>(i), A(0)), A(1)), wgt);
        for (int j = 0; j < 4; ++j) idx[j] = std::clamp<int64_t>(i - 1 + j, 0, last);
        continue;
      }
    }
    idx[0] = i;
    wgt[0] = A(1);
  }
  return t;
}

template <typename A>
struct Plan {
  Taps<A> d, h, w;
  bool three_d = false;
};

template <typename A>
std::shared_ptr<const Plan<A>> make_plan(const ResampleArgs& a) {
  auto p = std::make_shared<Plan<A>>();
  p->three_d = a.d.in != 1 || a.d.out != 1 || a.d.pad_before != 0;
  p->d = make_taps<A>(p->three_d ? a.mode : ResampleMode::kNearest, a.d);  // below 3-D: one tap, weight 1
  p->h = make_taps<A>(a.mode, a.h);
  p->w = make_taps<A>(a.mode, a.w);
  return p;
}

// Gather modes move raw elements, so one instantiation per element size serves every dtype.
template <typename E>
npu_sim::Status gather(npu_sim::Stream s, const ResampleArgs& a, const void* in, void* out) {
  auto plan = make_plan<float>(a);
  const E* x = static_cast<const E*>(in);
  E* y = static_cast<E*>(out);
  const int64_t rows = a.planes * a.d.out * a.h.out;
  return parallel_for(s, resample_name(a.mode, false), rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(a.w.out, 1)),
                      [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        // Launch records, per output row: its int64 row tap (and depth tap in 3-D), then per
                        // element the int64 column tap (the table is re-read each row) and the element; the row
                        // written. 1 Vector op (the move) per element.
                        const int64_t n = (e - b) * a.w.out;
                        constexpr int64_t es = sizeof(E);
                        detail::record_vec(ctx, (e - b) * (plan->three_d ? 16 : 8) + n * (8 + es), n * es, n);
                        const int64_t* iw = plan->w.idx.data();
                        for (int64_t r = b; r < e; ++r) {
                          const int64_t oh = r % a.h.out, od = r / a.h.out % a.d.out, p = r / a.h.out / a.d.out;
                          const E* src = x + ((p * a.d.in + plan->d.idx[od]) * a.h.in + plan->h.idx[oh]) * a.w.in;
                          E* dst = y + r * a.w.out;
                          for (int64_t ow = 0; ow < a.w.out; ++ow) dst[ow] = src[iw[ow]];
                        }
                      });
}

// Linear and cubic: each output row (plane, od, oh) combines its kd x K input rows (weights wd * wh), each
// interpolated along w with K taps first (PyTorch's order: the innermost axis first).
template <typename T, int K>
npu_sim::Status interpolate(npu_sim::Stream s, const ResampleArgs& a, const void* in, void* out) {
  using A = acc_t<T>;
  auto plan = make_plan<A>(a);
  const T* x = static_cast<const T*>(in);
  T* y = static_cast<T*>(out);
  const int64_t rows = a.planes * a.d.out * a.h.out;
  return parallel_for(s, resample_name(a.mode, false), rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(a.w.out, 1)),
                      [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        const Plan<A>& pl = *plan;
                        const int kd = pl.d.k;
                        // Launch records, per output row: its depth taps (3-D) and row taps, an int64 index and a
                        // weight each; per element its K column taps (re-read each row) and kd * K * K input
                        // elements; the row written. Vector ops per element: rows * (2K - 1) for the column
                        // interpolations, then rows multiplies and rows - 1 adds.
                        {
                          constexpr int64_t ts = sizeof(T), tap = 8 + static_cast<int64_t>(sizeof(A));
                          const int64_t row_taps = (pl.three_d ? kd : 0) + K, in_rows = kd * K;
                          const int64_t n = (e - b) * a.w.out;
                          detail::record_vec(ctx, (e - b) * row_taps * tap + n * (K * tap + in_rows * K * ts), n * ts,
                                             n * (in_rows * (2 * K + 1) - 1));
                        }
                        const A* ww = pl.w.wgt.data();
                        const int64_t* iw = pl.w.idx.data();
                        const T* src[kMaxTaps * kMaxTaps];
                        A wr[kMaxTaps * kMaxTaps];
                        for (int64_t r = b; r < e; ++r) {
                          const int64_t oh = r % a.h.out, od = r / a.h.out % a.d.out, p = r / a.h.out / a.d.out;
                          int nr = 0;
                          for (int i = 0; i < kd; ++i) {
                            const int64_t id = pl.d.idx[od * kd + i];
                            for (int j = 0; j < K; ++j) {
                              src[nr] = x + ((p * a.d.in + id) * a.h.in + pl.h.idx[oh * K + j]) * a.w.in;
                              wr[nr++] = pl.d.wgt[od * kd + i] * pl.h.wgt[oh * K + j];
                            }
                          }
                          T* dst = y + r * a.w.out;
                          for (int64_t ow = 0; ow < a.w.out; ++ow) {
                            const int64_t* c = iw + ow * K;
                            const A* l = ww + ow * K;
                            A v = A(0);
                            for (int q = 0; q < nr; ++q) {
                              A t = l[0] * static_cast<A>(src[q][c[0]]);
                              for (int j = 1; j < K; ++j) t += l[j] * static_cast<A>(src[q][c[j]]);
                              v += wr[q] * t;
                            }
                            dst[ow] = static_cast<T>(v);
                          }
                        }
                      });
}

}  // namespace

const char* resample_name(ResampleMode mode, bool backward) {
  static const char* const fwd[] = {"upsample_nearest",   "upsample_nearest_exact", "upsample_linear",
                                    "reflection_pad",     "replication_pad",        "upsample_bicubic",
                                    "upsample_bilinear_aa", "upsample_bicubic_aa",  "upsample_lanczos_aa"};
  static const char* const bwd[] = {"upsample_nearest_backward",     "upsample_nearest_exact_backward",
                                    "upsample_linear_backward",      "reflection_pad_backward",
                                    "replication_pad_backward",      "upsample_bicubic_backward",
                                    "upsample_bilinear_aa_backward", "upsample_bicubic_aa_backward",
                                    "upsample_lanczos_aa_backward"};
  return (backward ? bwd : fwd)[static_cast<int>(mode)];
}

bool is_window_mode(ResampleMode mode, DType dtype) {
  return mode == ResampleMode::kLinearAA || mode == ResampleMode::kCubicAA || mode == ResampleMode::kLanczosAA ||
         (dtype == DType::kUInt8 && (mode == ResampleMode::kLinear || mode == ResampleMode::kCubic));
}

std::size_t resample_scratch_bytes(const ResampleArgs& a) {
  return is_window_mode(a.mode, a.dtype) ? detail::window_scratch_bytes(a) : 0;
}

npu_sim::Status resample(npu_sim::Stream s, const ResampleArgs& a, const void* in, void* out, void* scratch) {
  if (is_window_mode(a.mode, a.dtype)) return detail::window_resample(s, a, in, out, scratch);
  if (a.mode == ResampleMode::kLinear) {
    return dispatch_fp(a.dtype, [&](auto tag) { return interpolate<decltype(tag), 2>(s, a, in, out); });
  }
  if (a.mode == ResampleMode::kCubic) {
    return dispatch_fp(a.dtype, [&](auto tag) { return interpolate<decltype(tag), 4>(s, a, in, out); });
  }
  switch (dtype_size(a.dtype)) {
    case 1: return gather<uint8_t>(s, a, in, out);
    case 2: return gather<uint16_t>(s, a, in, out);
    case 4: return gather<uint32_t>(s, a, in, out);
    case 8: return gather<uint64_t>(s, a, in, out);
    default: return npu_sim::Status::kInvalidValue;
  }
}

npu_sim::Status resample_backward(npu_sim::Stream s, const ResampleArgs& a, const void* grad_out, void* grad_in) {
  if (is_window_mode(a.mode, a.dtype)) return detail::window_resample_backward(s, a, grad_out, grad_in);
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    auto plan = make_plan<A>(a);
    const T* g = static_cast<const T*>(grad_out);
    T* gi = static_cast<T*>(grad_in);
    return parallel_for(s, resample_name(a.mode, true), a.planes, 1,
                        [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                          const Plan<A>& pl = *plan;
                          const int kd = pl.d.k, kh = pl.h.k, kw = pl.w.k;
                          // Launch records, per plane: grad_out read once, the taps read per output row (the depth
                          // and row taps) and per element (the column taps, re-read each row), an int64 index and
                          // a weight each (gathers: the index only); the accumulation plane is block-local (UB),
                          // written to grad_in once. Vector ops: gathers 1 (add) per grad element; otherwise a
                          // multiply and an add per grad element and tap, and with kd x kh > 1 input rows a
                          // multiply-add per element of each of them (the separable form below).
                          {
                            constexpr int64_t ts = sizeof(T);
                            const int64_t tap = kw == 1 ? 8 : 8 + static_cast<int64_t>(sizeof(A));
                            const int64_t n_out = a.d.out * a.h.out * a.w.out, out_rows = a.d.out * a.h.out;
                            const int64_t row_taps = (pl.three_d ? kd : 0) + kh;
                            const int64_t rows_ops = kd * kh > 1 ? out_rows * kd * kh * 2 * a.w.in : 0;
                            const int64_t ops = kw == 1 ? n_out : n_out * 2 * kw + rows_ops;
                            const int64_t read = n_out * ts + out_rows * row_taps * tap + n_out * kw * tap;
                            const int64_t written = a.d.in * a.h.in * a.w.in * ts;
                            detail::record_vec(ctx, (e - b) * read, (e - b) * written, (e - b) * ops);
                          }
                          const int64_t n_in = a.d.in * a.h.in * a.w.in;
                          std::vector<A> acc(static_cast<size_t>(n_in));  // one plane, in the UB's role
                          // one grad row's adjoint along w (the separable form below, kd x kh > 1 only)
                          std::vector<A> col(static_cast<size_t>(kd * kh > 1 ? a.w.in : 0));
                          // Scatters grad row gp along w into dst (K taps per element).
                          auto scatter_w = [&](const T* gp, A* dst, A wr) {
                            if (kw == 1) {  // gathers: one source each (no 0 * inf = NaN from unused taps)
                              const int64_t* iw = pl.w.idx.data();
                              for (int64_t ow = 0; ow < a.w.out; ++ow) dst[iw[ow]] += static_cast<A>(gp[ow]);
                              return;
                            }
                            for (int64_t ow = 0; ow < a.w.out; ++ow) {
                              const A v = wr * static_cast<A>(gp[ow]);
                              for (int q = 0; q < kw; ++q) dst[pl.w.idx[ow * kw + q]] += pl.w.wgt[ow * kw + q] * v;
                            }
                          };
                          for (int64_t p = b; p < e; ++p) {
                            std::fill(acc.begin(), acc.end(), A(0));
                            const T* gp = g + p * a.d.out * a.h.out * a.w.out;
                            for (int64_t od = 0; od < a.d.out; ++od) {
                              for (int64_t oh = 0; oh < a.h.out; ++oh, gp += a.w.out) {
                                auto in_row = [&](int i, int j) {
                                  return acc.data() + (pl.d.idx[od * kd + i] * a.h.in + pl.h.idx[oh * kh + j]) * a.w.in;
                                };
                                if (kd * kh == 1) {
                                  scatter_w(gp, in_row(0, 0), pl.d.wgt[od] * pl.h.wgt[oh]);
                                  continue;
                                }
                                // Separable: the row is scattered along w once, then added into its kd x kh input
                                // rows with their weights (contiguous, vectorised) instead of kd x kh scatters. A 0
                                // weight meeting an inf still gives NaN in the same element as CPU's direct form.
                                std::fill(col.begin(), col.end(), A(0));
                                scatter_w(gp, col.data(), A(1));
                                for (int i = 0; i < kd; ++i) {
                                  for (int j = 0; j < kh; ++j) {
                                    A* __restrict row = in_row(i, j);
                                    const A* __restrict c = col.data();
                                    const A wr = pl.d.wgt[od * kd + i] * pl.h.wgt[oh * kh + j];
                                    for (int64_t iw = 0; iw < a.w.in; ++iw) row[iw] += wr * c[iw];
                                  }
                                }
                              }
                            }
                            T* dst = gi + p * n_in;
                            for (int64_t i = 0; i < n_in; ++i) dst[i] = static_cast<T>(acc[i]);
                          }
                        });
  });
}

}  // namespace npu_kernels
