// The window engine of the resampling kernels (see npu_kernels/resample.h): per output position a run of input
// positions and its weights, built on the host at launch the way ATen's CPU kernels build them; forward as two
// separable passes (along w, into `scratch` when h changes too, then along h; 16-bit types keep that intermediate
// in float), backward as the adjoint summed
// per plane in ATen's order. It serves the antialiased filters (every floating dtype and uint8) and uint8
// bilinear / bicubic without antialiasing; uint8 runs in ATen's integers (int16 weights, int32 sums).
#include "resample_aa.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "npu_kernels/float_dispatch.h"
#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels::detail {

namespace {

bool antialiased(ResampleMode m) {
  return m == ResampleMode::kLinearAA || m == ResampleMode::kCubicAA || m == ResampleMode::kLanczosAA;
}

// The filter's width in input pixels at scale 1 (ATen's interp_size): linear 2, cubic 4, Lanczos-3 6.
int interp_size(ResampleMode m) {
  switch (m) {
    case ResampleMode::kLinear:
    case ResampleMode::kLinearAA: return 2;
    case ResampleMode::kCubic:
    case ResampleMode::kCubicAA: return 4;
    default: return 6;
  }
}

// PIL's filters, in ATen's arithmetic (the argument arrives in S; constants mix in as ATen writes them).
template <typename S>
S sinc(S x) {
  constexpr double kPi = 3.14159265358979323846;
  if (x == S(0)) return S(1);
  x *= static_cast<S>(kPi);
  return std::sin(x) / x;
}

template <typename S>
S filter(ResampleMode m, S x) {
  x = std::abs(x);
  switch (m) {
    case ResampleMode::kLinear:
    case ResampleMode::kLinearAA: return x < S(1) ? S(1) - x : S(0);
    case ResampleMode::kCubic:
    case ResampleMode::kCubicAA: {
      const S a = m == ResampleMode::kCubicAA ? S(-0.5) : S(-0.75);  // PIL's Keys cubic; OpenCV's without aa
      if (x < S(1)) return ((a + 2) * x - (a + 3)) * x * x + 1;
      if (x < S(2)) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
      return S(0);
    }
    default: return x < S(3) ? sinc(x) * sinc(static_cast<S>(x / 3.0)) : S(0);
  }
}

// Output position o reads input positions start[o] .. start[o] + size[o] - 1 with weights wgt[o * k + j].
template <typename S>
struct Windows {
  int64_t k = 1;
  std::vector<int64_t> start, size;
  std::vector<S> wgt;
  S wt_max = 0;  // the largest weight (uint8 picks its fixed-point precision from it)
};

template <typename S>
Windows<S> empty_windows(int64_t out, int64_t k) {
  Windows<S> w;
  w.k = k;
  w.start.assign(static_cast<size_t>(out), 0);
  w.size.assign(static_cast<size_t>(out), 0);
  w.wgt.assign(static_cast<size_t>(out * k), S(0));
  return w;
}

// area_pixel_compute_scale
template <typename S>
S axis_scale(const ResampleAxis& ax) {
  if (ax.align_corners) return ax.out > 1 ? static_cast<S>(ax.in - 1) / static_cast<S>(ax.out - 1) : S(0);
  return ax.scale > 0 ? static_cast<S>(1.0 / ax.scale) : static_cast<S>(ax.in) / static_cast<S>(ax.out);
}

// Antialiased windows (ATen's _compute_indices_min_size_weights_aa): the filter stretched by the scale when
// downsampling, centred on the output pixel's centre, weights normalised to sum 1.
template <typename S>
Windows<S> aa_windows(ResampleMode m, const ResampleAxis& ax) {
  const S scale = axis_scale<S>(ax);
  const S support = scale >= 1.0 ? (interp_size(m) * 0.5) * scale : interp_size(m) * 0.5;
  const S invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
  Windows<S> w = empty_windows<S>(ax.out, static_cast<int64_t>(std::ceil(support)) * 2 + 1);
  for (int64_t i = 0; i < ax.out; ++i) {
    const S center = scale * (i + 0.5);
    const int64_t xmin = std::max(static_cast<int64_t>(center - support + 0.5), int64_t{0});
    const int64_t xsize =
        std::clamp<int64_t>(std::min(static_cast<int64_t>(center + support + 0.5), ax.in) - xmin, 0, w.k);
    S* wt = w.wgt.data() + i * w.k;
    S total = 0;
    for (int64_t j = 0; j < xsize; ++j) {
      wt[j] = filter<S>(m, (j + xmin - center + 0.5) * invscale);
      total += wt[j];
    }
    if (total != S(0)) {
      for (int64_t j = 0; j < xsize; ++j) {
        wt[j] /= total;
        w.wt_max = std::max(w.wt_max, wt[j]);
      }
    }
    w.start[i] = xmin;
    w.size[i] = xsize;
  }
  return w;
}

// uint8 bilinear / bicubic without antialiasing (ATen's _compute_indices_min_size_weights, in double): the
// interp_size taps around the source position, taps beyond the border folded onto the border pixel.
Windows<double> interp_windows(ResampleMode m, const ResampleAxis& ax) {
  const double scale = axis_scale<double>(ax);
  const int64_t k = interp_size(m), support = k / 2;
  const bool cubic = k > 2;
  Windows<double> w = empty_windows<double>(ax.out, k);
  for (int64_t i = 0; i < ax.out; ++i) {
    double real = ax.align_corners ? scale * static_cast<double>(i) : scale * (static_cast<double>(i) + 0.5) - 0.5;
    if (!cubic && real < 0) real = 0;
    const int64_t index = std::min(static_cast<int64_t>(std::floor(static_cast<float>(real))), ax.in - 1);
    const double lambda = std::min(std::max(real - static_cast<double>(index), 0.0), 1.0);
    const int64_t lo = index - support + 1;
    const int64_t xmin = std::max(lo, int64_t{0});
    const int64_t xsize = std::clamp<int64_t>(std::min(index + support + 1, ax.in) - xmin, 0, k);
    double* wt = w.wgt.data() + i * k;
    int64_t at = 0;
    for (int64_t j = 0; j < k; ++j) {
      const double v = filter<double>(m, static_cast<double>(j + 1 - support) - lambda);
      if (lo + j <= 0) at = 0;
      else if (lo + j >= ax.in - 1) at = xsize - 1;
      wt[at] += v;
      w.wt_max = std::max(w.wt_max, wt[at]);
      ++at;
    }
    w.start[i] = xmin;
    w.size[i] = xsize;
  }
  return w;
}

// Weights, sums and the final store per element type: floating types sum in their accumulation type; uint8 sums
// int16 weights with `prec` fractional bits in int32, rounds half up and clamps.
template <typename T>
struct Arith {
  using W = acc_t<T>;
  using Acc = acc_t<T>;
  static Acc init(unsigned) { return Acc(0); }
  static T store(Acc v, unsigned) { return static_cast<T>(v); }
};
template <>
struct Arith<uint8_t> {
  using W = int16_t;
  using Acc = int32_t;
  static Acc init(unsigned prec) { return Acc{1} << (prec - 1); }
  static uint8_t store(Acc v, unsigned prec) { return static_cast<uint8_t>(std::clamp(v >> prec, 0, 255)); }
};

// One axis's windows in the element type's arithmetic.
template <typename T>
struct Table {
  using W = typename Arith<T>::W;
  int64_t k = 1;
  std::vector<int64_t> start, size;
  std::vector<W> wgt;
  unsigned prec = 0;
  int64_t taps = 0;  // sum of the window sizes, for the launch records
  int64_t out() const { return static_cast<int64_t>(start.size()); }
};

template <typename T>
using TablePtr = std::shared_ptr<const Table<T>>;

template <typename T>
TablePtr<T> make_table(ResampleMode m, const ResampleAxis& ax) {
  using W = typename Arith<T>::W;
  auto t = std::make_shared<Table<T>>();
  if constexpr (std::is_same_v<T, uint8_t>) {
    // ATen's _compute_index_ranges_int16_weights: as many fractional bits as keep the largest weight in int16.
    Windows<double> w = antialiased(m) ? aa_windows<double>(m, ax) : interp_windows(m, ax);
    unsigned prec = 0;
    for (; prec < 22; ++prec) {
      if (static_cast<int>(0.5 + w.wt_max * (1 << (prec + 1))) >= (1 << 15)) break;
    }
    t->wgt.resize(w.wgt.size());
    for (size_t i = 0; i < w.wgt.size(); ++i) {
      const double v = w.wgt[i] * (1 << prec);
      t->wgt[i] = static_cast<int16_t>(v < 0 ? static_cast<int>(-0.5 + v) : static_cast<int>(0.5 + v));
    }
    t->prec = prec;
    t->k = w.k;
    t->start = std::move(w.start);
    t->size = std::move(w.size);
  } else {
    Windows<W> w = aa_windows<W>(m, ax);
    t->k = w.k;
    t->start = std::move(w.start);
    t->size = std::move(w.size);
    t->wgt = std::move(w.wgt);
  }
  for (int64_t s : t->size) t->taps += s;
  return t;
}

// Along w: each of `rows` rows of in_w elements becomes a row of table.out() elements. Rows go kRowGroup at a time,
// transposed into a block-local buffer (in the accumulation type) so that one output position's window sums
// across the group's rows in vector lanes (the windows differ per position, the rows share them), each lane in
// ATen's order.
constexpr int64_t kRowGroup = 16;

// O: the output's type, T's own or (16-bit, both axes changing) float for the pass along h to read.
template <typename T, typename O = T>
npu_sim::Status pass_w(npu_sim::Stream s, const char* name, TablePtr<T> tab, int64_t rows, int64_t in_w, const T* src,
                       O* dst) {
  using A = Arith<T>;
  using Acc = typename A::Acc;
  // Output positions summed at once: float adds wait on the previous one (4 cycles), so four independent sums
  // hide that; int32 adds do not wait, and more sums only cost registers (measured: uint8 1.2x slower with 4).
  constexpr int64_t kOuts = std::is_floating_point_v<Acc> ? 4 : 1;
  const int64_t out_w = tab->out();
  return parallel_for(s, name, rows, std::max<int64_t>(kRowGroup, 4096 / std::max<int64_t>(out_w, 1)),
                      [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        const auto& t = *tab;
                        // Launch records, per row: each window's elements and weights, its start and size
                        // (int64 each); the row written. 2 Vector ops (multiply, add) per tap.
                        constexpr int64_t ts = sizeof(T), os = sizeof(O), ws = sizeof(typename A::W);
                        detail::record_vec(ctx, (e - b) * (t.taps * (ts + ws) + out_w * 16), (e - b) * out_w * os,
                                           (e - b) * t.taps * 2);
                        std::vector<Acc> cols(static_cast<size_t>(in_w * kRowGroup), Acc(0));
                        for (int64_t r0 = b; r0 < e; r0 += kRowGroup) {
                          const int64_t g_n = std::min(kRowGroup, e - r0);
                          const T* x = src + r0 * in_w;
                          int64_t i = 0;
                          if constexpr (std::is_same_v<T, uint8_t> && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) {
                            // 8 pixels per load from each row, spread into lanes by shifts (vectorised across rows).
                            for (; g_n == kRowGroup && i + 8 <= in_w; i += 8) {
                              uint64_t u[kRowGroup];
                              for (int64_t g = 0; g < kRowGroup; ++g) std::memcpy(&u[g], x + g * in_w + i, 8);
                              for (int64_t q = 0; q < 8; ++q) {
                                for (int64_t g = 0; g < kRowGroup; ++g) {
                                  cols[(i + q) * kRowGroup + g] = static_cast<Acc>((u[g] >> (8 * q)) & 0xff);
                                }
                              }
                            }
                          }
                          for (; i < in_w; ++i) {  // contiguous writes, g_n sequential reads
                            for (int64_t g = 0; g < g_n; ++g) {
                              cols[i * kRowGroup + g] = static_cast<Acc>(x[g * in_w + i]);
                            }
                          }
                          for (int64_t o0 = 0; o0 < out_w; o0 += kOuts) {
                            const int64_t n_o = std::min(kOuts, out_w - o0);
                            Acc acc[kOuts][kRowGroup];
                            const Acc* col[kOuts];
                            const typename A::W* wt[kOuts];
                            int64_t common = t.size[o0];
                            for (int64_t q = 0; q < kOuts; ++q) {
                              const int64_t o = o0 + std::min(q, n_o - 1);
                              col[q] = cols.data() + t.start[o] * kRowGroup;
                              wt[q] = t.wgt.data() + o * t.k;
                              common = std::min(common, t.size[o]);
                              for (int64_t g = 0; g < kRowGroup; ++g) acc[q][g] = A::init(t.prec);
                            }
                            for (int64_t j = 0; j < common; ++j) {
                              for (int64_t q = 0; q < kOuts; ++q) {
                                const Acc wj = static_cast<Acc>(wt[q][j]);
                                const Acc* c = col[q] + j * kRowGroup;
                                for (int64_t g = 0; g < kRowGroup; ++g) acc[q][g] += c[g] * wj;
                              }
                            }
                            for (int64_t q = 0; q < n_o; ++q) {
                              for (int64_t j = common; j < t.size[o0 + q]; ++j) {
                                const Acc wj = static_cast<Acc>(wt[q][j]);
                                const Acc* c = col[q] + j * kRowGroup;
                                for (int64_t g = 0; g < kRowGroup; ++g) acc[q][g] += c[g] * wj;
                              }
                              for (int64_t g = 0; g < g_n; ++g) {
                                O& y = dst[(r0 + g) * out_w + o0 + q];
                                if constexpr (std::is_same_v<O, T>) y = A::store(acc[q][g], t.prec);
                                else y = static_cast<O>(acc[q][g]);  // unrounded, for the pass along h
                              }
                            }
                          }
                        }
                      });
}

// Along h: each plane of in_h rows of `width` elements becomes table.out() rows, a row at a time (the window's
// rows scaled and summed across the whole row, which vectorises).
template <typename T, typename I = T>
npu_sim::Status pass_h(npu_sim::Stream s, const char* name, TablePtr<T> tab, int64_t planes, int64_t in_h,
                       int64_t width, const I* src, T* dst) {
  using A = Arith<T>;
  const int64_t out_h = tab->out();
  return parallel_for(s, name, planes * out_h, std::max<int64_t>(1, 4096 / std::max<int64_t>(width, 1)),
                      [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        const auto& t = *tab;
                        constexpr int64_t ts = sizeof(T), is = sizeof(I), ws = sizeof(typename A::W);
                        {
                          // Launch records, per output row: its window's rows and weights, start and size; the
                          // row written. 2 Vector ops per tap and element.
                          int64_t taps = 0;
                          for (int64_t r = b; r < e; ++r) taps += t.size[r % out_h];
                          detail::record_vec(ctx, taps * (width * is + ws) + (e - b) * 16, (e - b) * width * ts,
                                             taps * width * 2);
                        }
                        std::vector<typename A::Acc> acc(static_cast<size_t>(width));
                        for (int64_t r = b; r < e; ++r) {
                          const int64_t p = r / out_h, o = r % out_h;
                          const I* x = src + (p * in_h + t.start[o]) * width;
                          const typename A::W* wt = t.wgt.data() + o * t.k;
                          std::fill(acc.begin(), acc.end(), A::init(t.prec));
                          for (int64_t j = 0; j < t.size[o]; ++j) {
                            const I* xr = x + j * width;
                            const typename A::W wj = wt[j];
                            for (int64_t c = 0; c < width; ++c) acc[c] += static_cast<typename A::Acc>(xr[c]) * wj;
                          }
                          T* y = dst + r * width;
                          for (int64_t c = 0; c < width; ++c) y[c] = A::store(acc[c], t.prec);
                        }
                      });
}

template <typename T>
using Mid = std::conditional_t<is_reduced_float_v<T>, float, T>;

template <typename T>
npu_sim::Status forward(npu_sim::Stream s, const ResampleArgs& a, const void* in, void* out, void* scratch) {
  const char* name = resample_name(a.mode, false);
  const T* x = static_cast<const T*>(in);
  T* y = static_cast<T*>(out);
  const bool along_w = a.w.in != a.w.out, along_h = a.h.in != a.h.out;  // ATen skips an axis of equal sizes
  if (!along_w && !along_h) {
    const int64_t n = a.planes * a.h.in * a.w.in;
    return parallel_for(s, name, n, 1 << 16, [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
      detail::record_vec(ctx, (e - b) * static_cast<int64_t>(sizeof(T)), (e - b) * static_cast<int64_t>(sizeof(T)), 0);
      std::memcpy(y + b, x + b, static_cast<size_t>(e - b) * sizeof(T));
    });
  }
  if (!along_h) return pass_w<T>(s, name, make_table<T>(a.mode, a.w), a.planes * a.h.in, a.w.in, x, y);
  if (!along_w) return pass_h<T>(s, name, make_table<T>(a.mode, a.h), a.planes, a.h.in, a.w.in, x, y);
  // Both axes: the intermediate in T as ATen's CPU kernel keeps it, but float for 16-bit types (CPU refuses
  // them; CUDA computes in float and rounds once)
  using M = Mid<T>;
  M* mid = static_cast<M*>(scratch);
  if (mid == nullptr) return npu_sim::Status::kInvalidValue;
  const npu_sim::Status st = pass_w<T, M>(s, name, make_table<T>(a.mode, a.w), a.planes * a.h.in, a.w.in, x, mid);
  if (st != npu_sim::Status::kSuccess) return st;
  return pass_h<T, M>(s, name, make_table<T>(a.mode, a.h), a.planes, a.h.in, a.w.out, mid, y);
}

// grad_in[p, ih, iw] = sum over outputs (oh, ow) whose windows hold (ih, iw) of wx * wy * grad_out[p, oh, ow],
// summed in ATen's order (oh, ow, then the window's rows and columns) in the accumulation type, a plane per
// block-local buffer (the UB's role), written once.
template <typename T>
npu_sim::Status backward(npu_sim::Stream s, const ResampleArgs& a, const void* grad_out, void* grad_in) {
  using S = acc_t<T>;
  const TablePtr<T> th = make_table<T>(a.mode, a.h), tw = make_table<T>(a.mode, a.w);
  const T* g = static_cast<const T*>(grad_out);
  T* gi = static_cast<T*>(grad_in);
  return parallel_for(s, resample_name(a.mode, true), a.planes, 1,
                      [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        const auto &wh = *th, &ww = *tw;
                        const int64_t n_in = a.h.in * a.w.in, n_out = a.h.out * a.w.out;
                        // Launch records, per plane: grad_out once, the row window per output row and the column
                        // window per output element (weights, start, size); the plane written once. 3 Vector
                        // ops (two multiplies, an add) per (row tap, column tap) pair.
                        constexpr int64_t ts = sizeof(T), ws = sizeof(S);
                        detail::record_vec(ctx,
                                           (e - b) * (n_out * ts + a.w.out * (wh.taps * ws + 16) +
                                                      n_out * 16 + a.h.out * ww.taps * ws),
                                           (e - b) * n_in * ts, (e - b) * 3 * wh.taps * ww.taps);
                        std::vector<S> acc(static_cast<size_t>(n_in));
                        for (int64_t p = b; p < e; ++p) {
                          std::fill(acc.begin(), acc.end(), S(0));
                          const T* gp = g + p * n_out;
                          for (int64_t oh = 0; oh < a.h.out; ++oh) {
                            const S* wy = wh.wgt.data() + oh * wh.k;
                            for (int64_t ow = 0; ow < a.w.out; ++ow) {
                              const S v = static_cast<S>(gp[oh * a.w.out + ow]);
                              const S* wx = ww.wgt.data() + ow * ww.k;
                              for (int64_t y = 0; y < wh.size[oh]; ++y) {
                                S* row = acc.data() + (wh.start[oh] + y) * a.w.in + ww.start[ow];
                                for (int64_t x = 0; x < ww.size[ow]; ++x) row[x] += wx[x] * wy[y] * v;
                              }
                            }
                          }
                          T* dst = gi + p * n_in;
                          for (int64_t i = 0; i < n_in; ++i) dst[i] = static_cast<T>(acc[i]);
                        }
                      });
}

bool planar(const ResampleArgs& a) { return a.d.in == 1 && a.d.out == 1; }

}  // namespace

std::size_t window_scratch_bytes(const ResampleArgs& a) {
  if (a.w.in == a.w.out || a.h.in == a.h.out) return 0;
  const bool narrow = a.dtype == DType::kFloat16 || a.dtype == DType::kBFloat16;  // a float intermediate (Mid)
  return static_cast<std::size_t>(a.planes * a.h.in * a.w.out) * (narrow ? sizeof(float) : dtype_size(a.dtype));
}

npu_sim::Status window_resample(npu_sim::Stream s, const ResampleArgs& a, const void* in, void* out, void* scratch) {
  if (!planar(a)) return npu_sim::Status::kInvalidValue;
  if (a.dtype == DType::kUInt8) return forward<uint8_t>(s, a, in, out, scratch);
  if (!antialiased(a.mode)) return npu_sim::Status::kInvalidValue;
  return dispatch_fp(a.dtype, [&](auto tag) { return forward<decltype(tag)>(s, a, in, out, scratch); });
}

npu_sim::Status window_resample_backward(npu_sim::Stream s, const ResampleArgs& a, const void* grad_out,
                                         void* grad_in) {
  if (!planar(a) || !antialiased(a.mode)) return npu_sim::Status::kInvalidValue;
  return dispatch_fp(a.dtype, [&](auto tag) { return backward<decltype(tag)>(s, a, grad_out, grad_in); });
}

}  // namespace npu_kernels::detail
