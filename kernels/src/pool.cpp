// 2-D pooling kernels (see npu_kernels/pool.h). Work is split by whole planes, so backward scatters
// never race; accumulation is in float (double for float64).
#include "npu_kernels/pool.h"
#include "npu_kernels/float_dispatch.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {

namespace {


// Window [begin, end) along one axis for output position o.
struct Window {
  int64_t begin, end;
};

Window window(const Pool2dArgs& a, bool rows, int64_t o) {
  const int64_t in = rows ? a.in_h : a.in_w, out = rows ? a.out_h : a.out_w;
  if (a.adaptive) return {o * in / out, ((o + 1) * in + out - 1) / out};
  const int64_t k = rows ? a.kernel_h : a.kernel_w, s = rows ? a.stride_h : a.stride_w;
  const int64_t p = rows ? a.pad_h : a.pad_w;
  return {o * s - p, o * s - p + k};
}

int64_t avg_divisor(const Pool2dArgs& a, const Window& wh, const Window& ww) {
  if (a.divisor != 0) return a.divisor;
  if (a.adaptive) return (wh.end - wh.begin) * (ww.end - ww.begin);
  if (a.count_include_pad) {
    // the window clipped to the padded input (as ATen does)
    const int64_t h = std::min(wh.end, a.in_h + a.pad_h) - wh.begin;
    const int64_t w = std::min(ww.end, a.in_w + a.pad_w) - ww.begin;
    return h * w;
  }
  return (std::min(wh.end, a.in_h) - std::max<int64_t>(wh.begin, 0)) *
         (std::min(ww.end, a.in_w) - std::max<int64_t>(ww.begin, 0));
}

// In-bounds input taps along one axis, summed over that axis's outputs: the windows of avg_pool2d and of
// the adaptive kernels (window()), or max_pool2d's dilated kernel taps. Every plane visits the same
// (sum over rows) x (sum over columns) input elements.
int64_t axis_taps(const Pool2dArgs& a, bool rows, bool dilated) {
  const int64_t in = rows ? a.in_h : a.in_w, out = rows ? a.out_h : a.out_w;
  int64_t total = 0;
  for (int64_t o = 0; o < out; ++o) {
    if (dilated && !a.adaptive) {
      const int64_t k = rows ? a.kernel_h : a.kernel_w, s = rows ? a.stride_h : a.stride_w;
      const int64_t p = rows ? a.pad_h : a.pad_w, dl = rows ? a.dilation_h : a.dilation_w;
      for (int64_t t = 0; t < k; ++t) {
        const int64_t i = o * s - p + t * dl;
        total += i >= 0 && i < in ? 1 : 0;
      }
    } else {
      const Window w = window(a, rows, o);
      total += std::max<int64_t>(0, std::min(w.end, in) - std::max<int64_t>(w.begin, 0));
    }
  }
  return total;
}

// What one plane costs in the launch records (the same for every plane).
struct PlaneCost {
  int64_t rd, wr, flops;
};

template <typename Body>
npu_sim::Status per_plane(npu_sim::Stream s, const char* name, const Pool2dArgs& a, PlaneCost c, Body body) {
  return parallel_for(s, name, a.planes, 1, [a, c, body](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
    detail::record_vec(ctx, (e - b) * c.rd, (e - b) * c.wr, (e - b) * c.flops);
    for (int64_t p = b; p < e; ++p) body(p);
  });
}

}  // namespace

npu_sim::Status max_pool2d(npu_sim::Stream s, const Pool2dArgs& a, const void* in, void* out, int64_t* indices) {
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    // Launch records, per plane: every in-bounds tap of every window read once (a window stopped early by
    // a NaN is counted whole), each output writes its value and an int64 index; 1 Vector op (compare) per tap.
    constexpr int64_t ts = sizeof(T);
    const int64_t taps = axis_taps(a, true, true) * axis_taps(a, false, true), n_out = a.out_h * a.out_w;
    const PlaneCost c{taps * ts, n_out * (ts + 8), taps};
    return per_plane(s, a.adaptive ? "adaptive_max_pool2d" : "max_pool2d", a, c, [=](int64_t p) {
      const T* plane = x + p * a.in_h * a.in_w;
      for (int64_t oh = 0; oh < a.out_h; ++oh) {
        for (int64_t ow = 0; ow < a.out_w; ++ow) {
          int64_t h0 = oh * a.stride_h - a.pad_h, w0 = ow * a.stride_w - a.pad_w;
          int64_t kh_n = a.kernel_h, kw_n = a.kernel_w, dh = a.dilation_h, dw = a.dilation_w;
          if (a.adaptive) {  // windows from the adaptive rule, dilation 1
            const Window wh = window(a, true, oh), ww = window(a, false, ow);
            h0 = wh.begin;
            w0 = ww.begin;
            kh_n = wh.end - wh.begin;
            kw_n = ww.end - ww.begin;
            dh = dw = 1;
          }
          A best = -std::numeric_limits<A>::infinity();
          int64_t arg = -1;
          for (int64_t kh = 0; kh < kh_n; ++kh) {
            const int64_t h = h0 + kh * dh;
            if (h < 0 || h >= a.in_h) continue;
            for (int64_t kw = 0; kw < kw_n; ++kw) {
              const int64_t w = w0 + kw * dw;
              if (w < 0 || w >= a.in_w) continue;
              const A v = static_cast<A>(plane[h * a.in_w + w]);
              if (arg < 0 || v > best || std::isnan(v)) {  // NaN wins, as in ATen
                best = v;
                arg = h * a.in_w + w;
                // max_pool2d keeps the first NaN; ATen's adaptive kernel keeps scanning (the last one wins)
                if (std::isnan(v) && !a.adaptive) break;
              }
            }
          }
          const int64_t o = p * a.out_h * a.out_w + oh * a.out_w + ow;
          y[o] = static_cast<T>(best);
          indices[o] = arg;
        }
      }
    });
  });
}

npu_sim::Status max_pool2d_backward(npu_sim::Stream s, const Pool2dArgs& a, const void* grad_out,
                                    const int64_t* indices, void* grad_in) {
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* g = static_cast<const T*>(grad_out);
    T* gi = static_cast<T*>(grad_in);
    // Launch records, per plane: grad_in zeroed (n_in written), then per output its int64 index and grad
    // read and the target element read, added to and written back; 1 Vector op per output.
    constexpr int64_t ts = sizeof(T);
    const int64_t n_in = a.in_h * a.in_w, n_out = a.out_h * a.out_w;
    const PlaneCost c{n_out * (8 + 2 * ts), (n_in + n_out) * ts, n_out};
    return per_plane(s, a.adaptive ? "adaptive_max_pool2d_backward" : "max_pool2d_backward", a, c, [=](int64_t p) {
      T* plane = gi + p * a.in_h * a.in_w;
      const int64_t n_in = a.in_h * a.in_w, n_out = a.out_h * a.out_w;
      for (int64_t i = 0; i < n_in; ++i) plane[i] = static_cast<T>(A(0));
      for (int64_t o = 0; o < n_out; ++o) {
        const int64_t idx = indices[p * n_out + o];
        if (idx < 0 || idx >= n_in) {
          throw npu_sim::KernelError("max_pool2d_backward: index " + std::to_string(idx) +
                                     " is out of bounds for an input plane of " + std::to_string(n_in));
        }
        plane[idx] = static_cast<T>(static_cast<A>(plane[idx]) + static_cast<A>(g[p * n_out + o]));
      }
    });
  });
}

npu_sim::Status avg_pool2d(npu_sim::Stream s, const Pool2dArgs& a, const void* in, void* out) {
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    // Launch records, per plane: every in-bounds tap of every window read once, each output written; 1
    // Vector op (add) per tap and 1 (divide) per output.
    constexpr int64_t ts = sizeof(T);
    const int64_t taps = axis_taps(a, true, false) * axis_taps(a, false, false), n_out = a.out_h * a.out_w;
    const PlaneCost c{taps * ts, n_out * ts, taps + n_out};
    return per_plane(s, a.adaptive ? "adaptive_avg_pool2d" : "avg_pool2d", a, c, [=](int64_t p) {
      const T* plane = x + p * a.in_h * a.in_w;
      for (int64_t oh = 0; oh < a.out_h; ++oh) {
        const Window wh = window(a, true, oh);
        for (int64_t ow = 0; ow < a.out_w; ++ow) {
          const Window ww = window(a, false, ow);
          A sum = 0;
          for (int64_t h = std::max<int64_t>(wh.begin, 0); h < std::min(wh.end, a.in_h); ++h) {
            for (int64_t w = std::max<int64_t>(ww.begin, 0); w < std::min(ww.end, a.in_w); ++w) {
              sum += static_cast<A>(plane[h * a.in_w + w]);
            }
          }
          y[p * a.out_h * a.out_w + oh * a.out_w + ow] = static_cast<T>(sum / static_cast<A>(avg_divisor(a, wh, ww)));
        }
      }
    });
  });
}

npu_sim::Status avg_pool2d_backward(npu_sim::Stream s, const Pool2dArgs& a, const void* grad_out, void* grad_in) {
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* g = static_cast<const T*>(grad_out);
    T* gi = static_cast<T*>(grad_in);
    // Launch records, per plane: grad_in zeroed (n_in written), each output's grad read once, and every
    // in-bounds tap of its window read, added to and written back; 1 Vector op per tap and 1 per output.
    constexpr int64_t ts = sizeof(T);
    const int64_t taps = axis_taps(a, true, false) * axis_taps(a, false, false), n_out = a.out_h * a.out_w;
    const PlaneCost c{(n_out + taps) * ts, (a.in_h * a.in_w + taps) * ts, taps + n_out};
    return per_plane(s, a.adaptive ? "adaptive_avg_pool2d_backward" : "avg_pool2d_backward", a, c, [=](int64_t p) {
      T* plane = gi + p * a.in_h * a.in_w;
      for (int64_t i = 0; i < a.in_h * a.in_w; ++i) plane[i] = static_cast<T>(A(0));
      for (int64_t oh = 0; oh < a.out_h; ++oh) {
        const Window wh = window(a, true, oh);
        for (int64_t ow = 0; ow < a.out_w; ++ow) {
          const Window ww = window(a, false, ow);
          const A share = static_cast<A>(g[p * a.out_h * a.out_w + oh * a.out_w + ow]) /
                          static_cast<A>(avg_divisor(a, wh, ww));
          for (int64_t h = std::max<int64_t>(wh.begin, 0); h < std::min(wh.end, a.in_h); ++h) {
            for (int64_t w = std::max<int64_t>(ww.begin, 0); w < std::min(ww.end, a.in_w); ++w) {
              plane[h * a.in_w + w] = static_cast<T>(static_cast<A>(plane[h * a.in_w + w]) + share);
            }
          }
        }
      }
    });
  });
}

}  // namespace npu_kernels
