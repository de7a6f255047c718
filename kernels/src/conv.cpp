// conv2d on the Cube unit: forward and backward-weight are tiled GEMMs whose B panels are gathered
// straight from the image (implicit im2col into the Unified Buffer, no column matrix in HBM);
// backward-input is a GEMM into a column buffer in caller-provided scratch followed by col2im (a
// gather per input plane, so blocks never write the same element).
#include "npu_kernels/conv.h"
#include "npu_kernels/float_dispatch.h"

#include <algorithm>

#include "dnnl_conv.h"
#include "gemm_tiling.h"
#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {
namespace {

using detail::acc_t;
using detail::load_as;
using detail::store_as;

// Writes v into dst, or adds it to what dst holds when the pass accumulates (Conv2dArgs::accumulate).
template <typename T, typename Acc>
inline void put(T& dst, Acc v, bool accumulate) {
  dst = store_as<T>(accumulate ? v + load_as<Acc>(dst) : v);
}

// Walks a flat index over (c, ki, kj) of the weight's reduction dims.
struct KernelPos {
  int64_t kh, kw, c = 0, ki = 0, kj = 0;
  KernelPos(int64_t flat, int64_t kh_, int64_t kw_) : kh(kh_), kw(kw_) {
    kj = flat % kw;
    ki = (flat / kw) % kh;
    c = flat / (kw * kh);
  }
  void next() {
    if (++kj == kw) {
      kj = 0;
      if (++ki == kh) {
        ki = 0;
        ++c;
      }
    }
  }
};

// Walks a flat index over (n, oh, ow) of the output positions (n only moves when asked to).
struct OutPos {
  int64_t oh_size, ow_size, n = 0, oh = 0, ow = 0;
  OutPos(int64_t flat, int64_t ohs, int64_t ows) : oh_size(ohs), ow_size(ows) {
    ow = flat % ows;
    oh = (flat / ows) % ohs;
    n = flat / (ows * ohs);
  }
  void next() {
    if (++ow == ow_size) {
      ow = 0;
      if (++oh == oh_size) {
        oh = 0;
        ++n;
      }
    }
  }
};

// Weight with contiguous (c, ki, kj) dims: each output channel's taps are one contiguous run.
inline bool weight_taps_contiguous(const Conv2dArgs& a) {
  return a.w_strides[3] == 1 && a.w_strides[2] == a.kernel_w && a.w_strides[1] == a.kernel_h * a.kernel_w;
}

// One tap (channel plane `plane` of image 0 at x_strides[0] per n, offsets dh/dw) over the output
// positions [q0, q0 + count) counted over (n, oh, ow): dst[t * dst_stride] = x[...] or 0 in the padding.
// Runs of one output row hoist the row test; the inner loop only tests columns.
template <typename T, typename Acc>
inline void gather_tap(const Conv2dArgs& a, const T* plane, int64_t dh, int64_t dw, int64_t q0, int64_t count,
                       Acc* dst, int64_t dst_stride) {
  OutPos op(q0, a.out_h, a.out_w);
  int64_t n = op.n, oh = op.oh, ow0 = op.ow;
  for (int64_t t = 0; t < count;) {
    const int64_t run = std::min(count - t, a.out_w - ow0);
    const int64_t ih = oh * a.stride_h + dh;
    Acc* d = dst + t * dst_stride;
    if (ih < 0 || ih >= a.in_h) {
      for (int64_t r = 0; r < run; ++r) d[r * dst_stride] = Acc(0);
    } else if (a.stride_w == 1) {
      // Unit stride: the in-range columns are one run (zeros on either side), copied as a row.
      const T* row = plane + n * a.x_strides[0] + ih * a.x_strides[2];
      const int64_t lo = std::clamp<int64_t>(-dw - ow0, 0, run);
      const int64_t hi = std::clamp<int64_t>(a.in_w - dw - ow0, lo, run);
      for (int64_t r = 0; r < lo; ++r) d[r * dst_stride] = Acc(0);
      if (dst_stride == 1 && a.x_strides[3] == 1) {
        detail::pack_strided(d + lo, row + ow0 + lo + dw, int64_t{1}, hi - lo, int64_t{0}, int64_t{1});
      } else {
        for (int64_t r = lo; r < hi; ++r) d[r * dst_stride] = load_as<Acc>(row[(ow0 + r + dw) * a.x_strides[3]]);
      }
      for (int64_t r = hi; r < run; ++r) d[r * dst_stride] = Acc(0);
    } else {
      const T* row = plane + n * a.x_strides[0] + ih * a.x_strides[2];
      for (int64_t r = 0; r < run; ++r) {
        const int64_t iw = (ow0 + r) * a.stride_w + dw;
        d[r * dst_stride] = (iw >= 0 && iw < a.in_w) ? load_as<Acc>(row[iw * a.x_strides[3]]) : Acc(0);
      }
    }
    t += run;
    ow0 = 0;
    if (++oh == a.out_h) {
      oh = 0;
      ++n;
    }
  }
}

template <typename T>
npu_sim::Status forward_typed(npu_sim::Stream stream, const Conv2dArgs& a) {
  using Acc = acc_t<T>;
  const int64_t G = a.groups, Cg = a.in_channels / G, Og = a.out_channels / G;
  const int64_t P = a.out_h * a.out_w, KK = Cg * a.kernel_h * a.kernel_w;
  const T* x = static_cast<const T*>(a.x);
  const T* w = static_cast<const T*>(a.w);
  const T* bias = static_cast<const T*>(a.bias);
  T* y = static_cast<T*>(a.y);
  const bool w_contig = weight_taps_contiguous(a);
  auto pack_a = [=](int64_t bi, int64_t i0, int64_t mc, int64_t k0, int64_t kc, Acc* dst) {
    const T* base = w + ((bi % G) * Og + i0) * a.w_strides[0];
    if (w_contig) {
      detail::pack_strided(dst, base + k0, mc, kc, a.w_strides[0], int64_t{1});
      return;
    }
    KernelPos kp(k0, a.kernel_h, a.kernel_w);
    for (int64_t p = 0; p < kc; ++p, kp.next()) {
      const T* src = base + kp.c * a.w_strides[1] + kp.ki * a.w_strides[2] + kp.kj * a.w_strides[3];
      for (int64_t i = 0; i < mc; ++i) dst[i * kc + p] = load_as<Acc>(src[i * a.w_strides[0]]);
    }
  };
  auto pack_b = [=](int64_t bi, int64_t k0, int64_t kc, int64_t j0, int64_t nc, Acc* dst) {
    const int64_t n = bi / G, g = bi % G;
    KernelPos kp(k0, a.kernel_h, a.kernel_w);
    for (int64_t p = 0; p < kc; ++p, kp.next()) {
      const T* plane = x + n * a.x_strides[0] + (g * Cg + kp.c) * a.x_strides[1];
      gather_tap(a, plane, kp.ki * a.dilation_h - a.pad_h, kp.kj * a.dilation_w - a.pad_w, j0, nc, dst + p * nc,
                 int64_t{1});
    }
  };
  auto store = [=](int64_t bi, int64_t i0, int64_t mc, int64_t j0, int64_t nc, const Acc* acc) {
    const int64_t n = bi / G, g = bi % G;
    for (int64_t i = 0; i < mc; ++i) {
      const int64_t o = g * Og + i0 + i;
      const Acc b = bias != nullptr ? load_as<Acc>(bias[o * a.bias_stride]) : Acc(0);
      T* plane = y + n * a.y_strides[0] + o * a.y_strides[1];
      OutPos op(j0, a.out_h, a.out_w);
      for (int64_t j = 0; j < nc; ++j, op.next()) {
        put(plane[op.oh * a.y_strides[2] + op.ow * a.y_strides[3]], acc[i * nc + j] + b, a.accumulate);
      }
    }
  };
  return detail::tiled_gemm<Acc>(stream, "conv2d_forward", a.batch * G, Og, P, KK, pack_a, pack_b, store, sizeof(T));
}

template <typename T>
npu_sim::Status backward_weight_typed(npu_sim::Stream stream, const Conv2dArgs& a) {
  using Acc = acc_t<T>;
  const int64_t G = a.groups, Cg = a.in_channels / G, Og = a.out_channels / G;
  const int64_t P = a.out_h * a.out_w, KK = Cg * a.kernel_h * a.kernel_w;
  const T* x = static_cast<const T*>(a.x);
  const T* gy = static_cast<const T*>(a.y);
  T* gw = static_cast<T*>(a.w);
  // grad_w[g] (Og x KK) = grad_y[g] (Og x N*P) @ im2col(x)[g]^T (N*P x KK)
  auto pack_a = [=](int64_t g, int64_t i0, int64_t mc, int64_t k0, int64_t kc, Acc* dst) {
    // Row i: grad_y of channel g*Og+i0+i over positions [k0, k0+kc) of (n, oh, ow); contiguous runs per
    // image when the planes are dense.
    const bool dense = a.y_strides[3] == 1 && a.y_strides[2] == a.out_w;
    for (int64_t i = 0; i < mc; ++i) {
      const T* chan = gy + (g * Og + i0 + i) * a.y_strides[1];
      Acc* d = dst + i * kc;
      if (dense) {
        int64_t n = k0 / P, pos = k0 % P;
        for (int64_t p = 0; p < kc; ++n, pos = 0) {
          const int64_t run = std::min(kc - p, P - pos);
          detail::pack_strided(d + p, chan + n * a.y_strides[0] + pos, int64_t{1}, run, int64_t{0}, int64_t{1});
          p += run;
        }
      } else {
        OutPos op(k0, a.out_h, a.out_w);
        for (int64_t p = 0; p < kc; ++p, op.next()) {
          d[p] = load_as<Acc>(chan[op.n * a.y_strides[0] + op.oh * a.y_strides[2] + op.ow * a.y_strides[3]]);
        }
      }
    }
  };
  auto pack_b = [=](int64_t g, int64_t k0, int64_t kc, int64_t j0, int64_t nc, Acc* dst) {
    // Column j is one tap (c, ki, kj) over positions [k0, k0+kc): gathered along image rows.
    KernelPos kp(j0, a.kernel_h, a.kernel_w);
    for (int64_t j = 0; j < nc; ++j, kp.next()) {
      const T* plane = x + (g * Cg + kp.c) * a.x_strides[1];
      gather_tap(a, plane, kp.ki * a.dilation_h - a.pad_h, kp.kj * a.dilation_w - a.pad_w, k0, kc, dst + j, nc);
    }
  };
  auto store = [=](int64_t g, int64_t i0, int64_t mc, int64_t j0, int64_t nc, const Acc* acc) {
    for (int64_t i = 0; i < mc; ++i) {
      T* row = gw + (g * Og + i0 + i) * a.w_strides[0];
      KernelPos kp(j0, a.kernel_h, a.kernel_w);
      for (int64_t j = 0; j < nc; ++j, kp.next()) {
        put(row[kp.c * a.w_strides[1] + kp.ki * a.w_strides[2] + kp.kj * a.w_strides[3]], acc[i * nc + j], a.accumulate);
      }
    }
  };
  return detail::tiled_gemm<Acc>(stream, "conv2d_backward_weight", G, Og, KK, a.batch * P, pack_a, pack_b, store, sizeof(T));
}

// The column elements conv2d_col2im adds into one input plane: a (row, column) tap is used when its row
// and its column are, so the count is (used row taps) x (used column taps).
inline int64_t col2im_taps(const Conv2dArgs& a) {
  auto axis = [](int64_t in, int64_t k, int64_t pad, int64_t dil, int64_t stride, int64_t out) {
    int64_t n = 0;
    for (int64_t i = 0; i < in; ++i) {
      for (int64_t t = 0; t < k; ++t) {
        const int64_t x = i + pad - t * dil;
        n += x >= 0 && x % stride == 0 && x / stride < out ? 1 : 0;
      }
    }
    return n;
  };
  return axis(a.in_h, a.kernel_h, a.pad_h, a.dilation_h, a.stride_h, a.out_h) *
         axis(a.in_w, a.kernel_w, a.pad_w, a.dilation_w, a.stride_w, a.out_w);
}

template <typename T>
npu_sim::Status backward_input_typed(npu_sim::Stream stream, const Conv2dArgs& a, void* scratch,
                                     std::size_t scratch_bytes) {
  using Acc = acc_t<T>;
  const int64_t G = a.groups, Cg = a.in_channels / G, Og = a.out_channels / G;
  const int64_t P = a.out_h * a.out_w, KK = Cg * a.kernel_h * a.kernel_w;
  // Stride 1: grad_x is a forward convolution of grad_y with the flipped, transposed weight and padding
  // dilation * (k - 1) - pad. No column buffer, no col2im. The flipped weight is a view with negative tap
  // strides; per group it needs Cg * w_stride[1] == Og * w_stride[0] (any G = 1 or depthwise layout).
  {
    const int64_t ph = a.dilation_h * (a.kernel_h - 1) - a.pad_h, pw = a.dilation_w * (a.kernel_w - 1) - a.pad_w;
    if (a.stride_h == 1 && a.stride_w == 1 && ph >= 0 && pw >= 0 &&
        (G == 1 || Cg * a.w_strides[1] == Og * a.w_strides[0])) {
      Conv2dArgs f = a;
      f.in_channels = a.out_channels; f.in_h = a.out_h; f.in_w = a.out_w;
      f.out_channels = a.in_channels; f.out_h = a.in_h; f.out_w = a.in_w;
      f.pad_h = ph; f.pad_w = pw;
      f.x = a.y;
      f.y = a.x;
      std::copy(a.y_strides, a.y_strides + 4, f.x_strides);
      std::copy(a.x_strides, a.x_strides + 4, f.y_strides);
      f.w = const_cast<T*>(static_cast<const T*>(a.w) + (a.kernel_h - 1) * a.w_strides[2] +
                           (a.kernel_w - 1) * a.w_strides[3]);
      const int64_t ws[4] = {a.w_strides[1], a.w_strides[0], -a.w_strides[2], -a.w_strides[3]};
      std::copy(ws, ws + 4, f.w_strides);
      return forward_typed<T>(stream, f);
    }
  }
  const std::size_t per_image = conv2d_backward_input_scratch_bytes(a, 1);
  if (scratch == nullptr || scratch_bytes < per_image) return npu_sim::Status::kInvalidValue;
  const int64_t chunk = std::min<int64_t>(a.batch, static_cast<int64_t>(scratch_bytes / per_image));
  const T* w = static_cast<const T*>(a.w);
  const T* gy = static_cast<const T*>(a.y);
  const T* bias = static_cast<const T*>(a.bias);
  T* gx = static_cast<T*>(a.x);
  Acc* col = static_cast<Acc*>(scratch);
  for (int64_t n0 = 0; n0 < a.batch; n0 += chunk) {
    const int64_t nb = std::min(chunk, a.batch - n0);
    // col[n][g] (KK x P) = w[g]^T (KK x Og) @ grad_y[n][g] (Og x P)
    const bool w_contig = weight_taps_contiguous(a);
    auto pack_a = [=](int64_t bi, int64_t i0, int64_t mc, int64_t k0, int64_t kc, Acc* dst) {
      const T* base = w + ((bi % G) * Og + k0) * a.w_strides[0];
      if (w_contig) {  // A = W^T: read each output channel's contiguous taps
        detail::pack_strided(dst, base + i0, mc, kc, int64_t{1}, a.w_strides[0]);
        return;
      }
      KernelPos kp(i0, a.kernel_h, a.kernel_w);
      for (int64_t i = 0; i < mc; ++i, kp.next()) {
        const T* src = base + kp.c * a.w_strides[1] + kp.ki * a.w_strides[2] + kp.kj * a.w_strides[3];
        for (int64_t p = 0; p < kc; ++p) dst[i * kc + p] = load_as<Acc>(src[p * a.w_strides[0]]);
      }
    };
    auto pack_b = [=](int64_t bi, int64_t k0, int64_t kc, int64_t j0, int64_t nc, Acc* dst) {
      const int64_t n = n0 + bi / G, g = bi % G;
      const OutPos start(j0, a.out_h, a.out_w);
      for (int64_t p = 0; p < kc; ++p) {
        const T* plane = gy + n * a.y_strides[0] + (g * Og + k0 + p) * a.y_strides[1];
        OutPos op = start;
        for (int64_t j = 0; j < nc; ++j, op.next()) {
          dst[p * nc + j] = load_as<Acc>(plane[op.oh * a.y_strides[2] + op.ow * a.y_strides[3]]);
        }
      }
    };
    auto store = [=](int64_t bi, int64_t i0, int64_t mc, int64_t j0, int64_t nc, const Acc* acc) {
      for (int64_t i = 0; i < mc; ++i) std::copy(acc + i * nc, acc + (i + 1) * nc, col + (bi * KK + i0 + i) * P + j0);
    };
    auto st = detail::tiled_gemm<Acc>(stream, "conv2d_backward_input", nb * G, KK, P, Og, pack_a, pack_b, store, sizeof(T));
    if (st != npu_sim::Status::kSuccess) return st;
    // col2im as a gather: each block owns whole input planes.
    // Launch records, per input plane: its bias (when given), every column element that lands in it
    // (col2im_taps, in the accumulation type: the scratch is device memory) read, the plane written once;
    // 1 Vector op (add) per tap.
    const int64_t plane_rd = (bias != nullptr ? int64_t{sizeof(T)} : 0) + col2im_taps(a) * int64_t{sizeof(Acc)};
    const int64_t plane_wr = a.in_h * a.in_w * int64_t{sizeof(T)}, plane_ops = col2im_taps(a);
    st = parallel_for(stream, "conv2d_col2im", nb * a.in_channels, 1,
                      [=](int64_t begin, int64_t end, const npu_sim::BlockContext& ctx) {
                        detail::record_vec(ctx, (end - begin) * plane_rd, (end - begin) * plane_wr,
                                           (end - begin) * plane_ops);
                        for (int64_t q = begin; q < end; ++q) {
                          const int64_t nl = q / a.in_channels, ch = q % a.in_channels;
                          const int64_t g = ch / Cg, c = ch % Cg;
                          const Acc* cimg = col + (nl * G + g) * KK * P;
                          const Acc b = bias != nullptr ? load_as<Acc>(bias[ch * a.bias_stride]) : Acc(0);
                          T* plane = gx + (n0 + nl) * a.x_strides[0] + ch * a.x_strides[1];
                          for (int64_t ih = 0; ih < a.in_h; ++ih) {
                            for (int64_t iw = 0; iw < a.in_w; ++iw) {
                              Acc s = b;
                              for (int64_t ki = 0; ki < a.kernel_h; ++ki) {
                                const int64_t th = ih + a.pad_h - ki * a.dilation_h;
                                if (th < 0 || th % a.stride_h != 0 || th / a.stride_h >= a.out_h) continue;
                                const int64_t oh = th / a.stride_h;
                                const Acc* crow = cimg + ((c * a.kernel_h + ki) * a.kernel_w) * P + oh * a.out_w;
                                for (int64_t kj = 0; kj < a.kernel_w; ++kj) {
                                  const int64_t tw = iw + a.pad_w - kj * a.dilation_w;
                                  if (tw < 0 || tw % a.stride_w != 0 || tw / a.stride_w >= a.out_w) continue;
                                  s += crow[kj * P + tw / a.stride_w];
                                }
                              }
                              put(plane[ih * a.x_strides[2] + iw * a.x_strides[3]], s, a.accumulate);
                            }
                          }
                        }
                      });
    if (st != npu_sim::Status::kSuccess) return st;
  }
  return npu_sim::Status::kSuccess;
}

template <typename T>
npu_sim::Status backward_bias_typed(npu_sim::Stream stream, const Conv2dArgs& a, void* grad_bias, int64_t gb_stride) {
  const T* gy = static_cast<const T*>(a.y);
  T* gb = static_cast<T*>(grad_bias);
  // Launch records, per output channel: its batch x out_h x out_w grads read, one value written; 1 Vector
  // op (add) per element read.
  const int64_t per_ch = a.batch * a.out_h * a.out_w;
  return parallel_for(stream, "conv2d_backward_bias", a.out_channels, 1,
                      [=](int64_t begin, int64_t end, const npu_sim::BlockContext& ctx) {
                        detail::record_vec(ctx, (end - begin) * per_ch * int64_t{sizeof(T)},
                                           (end - begin) * int64_t{sizeof(T)}, (end - begin) * per_ch);
                        for (int64_t o = begin; o < end; ++o) {
                          double s = 0;
                          for (int64_t n = 0; n < a.batch; ++n) {
                            const T* plane = gy + n * a.y_strides[0] + o * a.y_strides[1];
                            for (int64_t h = 0; h < a.out_h; ++h)
                              for (int64_t w = 0; w < a.out_w; ++w)
                                s += load_as<double>(plane[h * a.y_strides[2] + w * a.y_strides[3]]);
                          }
                          gb[o * gb_stride] = store_as<T>(static_cast<acc_t<T>>(s));
                        }
                      });
}

}  // namespace

npu_sim::Status conv2d_validate(const Conv2dArgs& a, const char** why) {
  const char* reason = nullptr;
  auto expected_out = [](int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
    return (in + 2 * p - d * (k - 1) - 1) / s + 1;
  };
  if (a.dtype != DType::kFloat32 && a.dtype != DType::kFloat64 && a.dtype != DType::kFloat16 &&
      a.dtype != DType::kBFloat16) {
    reason = "dtype must be float32, float64, float16 or bfloat16";
  } else if (a.batch < 0 || a.in_channels <= 0 || a.out_channels <= 0 || a.in_h <= 0 || a.in_w <= 0 ||
             a.kernel_h <= 0 || a.kernel_w <= 0 || a.out_h <= 0 || a.out_w <= 0) {
    reason = "sizes must be positive";
  } else if (a.stride_h <= 0 || a.stride_w <= 0 || a.dilation_h <= 0 || a.dilation_w <= 0 || a.pad_h < 0 ||
             a.pad_w < 0) {
    reason = "stride and dilation must be positive, padding non-negative";
  } else if (a.groups <= 0 || a.in_channels % a.groups != 0 || a.out_channels % a.groups != 0) {
    reason = "groups must divide in_channels and out_channels";
  } else if (a.out_h > expected_out(a.in_h, a.kernel_h, a.stride_h, a.pad_h, a.dilation_h) ||
             a.out_w > expected_out(a.in_w, a.kernel_w, a.stride_w, a.pad_w, a.dilation_w)) {
    // Fewer outputs than the input allows is valid: a transposed convolution with output_padding >=
    // stride runs as the input-gradient of a forward convolution whose last input rows reach no output.
    reason = "output size does not match input size, kernel, stride, padding and dilation";
  }
  if (why != nullptr) *why = reason;
  return reason == nullptr ? npu_sim::Status::kSuccess : npu_sim::Status::kInvalidValue;
}

npu_sim::Status conv2d_forward(npu_sim::Stream stream, const Conv2dArgs& a) {
  if (auto st = conv2d_validate(a); st != npu_sim::Status::kSuccess) return st;
  npu_sim::Status st = npu_sim::Status::kSuccess;
  if (!a.accumulate && detail::dnnl_conv(stream, detail::conv_nd(a), detail::ConvPass::kForward, &st)) return st;
  return dispatch_fp(a.dtype, [&](auto t) { return forward_typed<decltype(t)>(stream, a); });
}

std::size_t conv2d_backward_input_scratch_bytes(const Conv2dArgs& a, int64_t images) {
  const std::size_t acc = a.dtype == DType::kFloat64 ? sizeof(double) : sizeof(float);
  return acc * static_cast<std::size_t>(images * (a.in_channels / std::max<int64_t>(a.groups, 1)) * a.groups *
                                        a.kernel_h * a.kernel_w * a.out_h * a.out_w);
}

npu_sim::Status conv2d_backward_input(npu_sim::Stream stream, const Conv2dArgs& a, void* scratch,
                                      std::size_t scratch_bytes) {
  if (auto st = conv2d_validate(a); st != npu_sim::Status::kSuccess) return st;
  npu_sim::Status st = npu_sim::Status::kSuccess;
  if (!a.accumulate && detail::dnnl_conv(stream, detail::conv_nd(a), detail::ConvPass::kBackwardInput, &st)) return st;
  return dispatch_fp(a.dtype,
                        [&](auto t) { return backward_input_typed<decltype(t)>(stream, a, scratch, scratch_bytes); });
}

npu_sim::Status conv2d_backward_weight(npu_sim::Stream stream, const Conv2dArgs& a) {
  if (auto st = conv2d_validate(a); st != npu_sim::Status::kSuccess) return st;
  npu_sim::Status st = npu_sim::Status::kSuccess;
  if (!a.accumulate && detail::dnnl_conv(stream, detail::conv_nd(a), detail::ConvPass::kBackwardWeight, &st)) return st;
  return dispatch_fp(a.dtype, [&](auto t) { return backward_weight_typed<decltype(t)>(stream, a); });
}

npu_sim::Status conv2d_backward_bias(npu_sim::Stream stream, const Conv2dArgs& a, void* grad_bias,
                                     int64_t grad_bias_stride) {
  if (auto st = conv2d_validate(a); st != npu_sim::Status::kSuccess) return st;
  return dispatch_fp(a.dtype, [&](auto t) {
    return backward_bias_typed<decltype(t)>(stream, a, grad_bias, grad_bias_stride);
  });
}

}  // namespace npu_kernels
