// 2-D and 3-D pooling kernels (see npu_kernels/pool.h): windows over up to three spatial axes (depth, height,
// width; 2-D is depth 1). Work is split by whole planes, so backward scatters
// never race; accumulation is in float (double for float64).
#include "npu_kernels/pool.h"
#include "npu_kernels/float_dispatch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <string>

#include "npu_kernels/launch.h"
#include "real_dispatch.h"
#include "traffic.h"

namespace npu_kernels {

namespace {


// One spatial axis of the pooling: 0 depth, 1 height, 2 width.
struct Axis {
  int64_t in, out, k, s, p, dl;
};
Axis axis(const Pool2dArgs& a, int ax) {
  switch (ax) {
    case 0: return {a.in_d, a.out_d, a.kernel_d, a.stride_d, a.pad_d, a.dilation_d};
    case 1: return {a.in_h, a.out_h, a.kernel_h, a.stride_h, a.pad_h, a.dilation_h};
    default: return {a.in_w, a.out_w, a.kernel_w, a.stride_w, a.pad_w, a.dilation_w};
  }
}

// Window [begin, end) along one axis for output position o.
struct Window {
  int64_t begin, end;
};

Window window(const Pool2dArgs& a, int ax, int64_t o) {
  const Axis x = axis(a, ax);
  if (a.adaptive) return {o * x.in / x.out, ((o + 1) * x.in + x.out - 1) / x.out};
  return {o * x.s - x.p, o * x.s - x.p + x.k};
}

int64_t avg_divisor(const Pool2dArgs& a, const Window (&w)[3]) {
  if (a.divisor != 0) return a.divisor;
  int64_t n = 1;
  for (int ax = 0; ax < 3; ++ax) {
    const Axis x = axis(a, ax);
    if (a.adaptive) {
      n *= w[ax].end - w[ax].begin;
    } else if (a.count_include_pad) {  // the window clipped to the padded input (as ATen does)
      n *= std::min(w[ax].end, x.in + x.p) - w[ax].begin;
    } else {
      n *= std::min(w[ax].end, x.in) - std::max<int64_t>(w[ax].begin, 0);
    }
  }
  return n;
}

// In-bounds input taps along one axis, summed over that axis's outputs: the windows of avg_pool and of the
// adaptive kernels (window()), or max_pool's dilated kernel taps. Every plane visits the same product over the
// axes of these input elements.
int64_t axis_taps(const Pool2dArgs& a, int ax, bool dilated) {
  const Axis x = axis(a, ax);
  int64_t total = 0;
  for (int64_t o = 0; o < x.out; ++o) {
    if (dilated && !a.adaptive) {
      for (int64_t t = 0; t < x.k; ++t) {
        const int64_t i = o * x.s - x.p + t * x.dl;
        total += i >= 0 && i < x.in ? 1 : 0;
      }
    } else {
      const Window w = window(a, ax, o);
      total += std::max<int64_t>(0, std::min(w.end, x.in) - std::max<int64_t>(w.begin, 0));
    }
  }
  return total;
}
int64_t taps(const Pool2dArgs& a, bool dilated) {
  return axis_taps(a, 0, dilated) * axis_taps(a, 1, dilated) * axis_taps(a, 2, dilated);
}
int64_t in_plane(const Pool2dArgs& a) { return a.in_d * a.in_h * a.in_w; }
int64_t out_plane(const Pool2dArgs& a) { return a.out_d * a.out_h * a.out_w; }
const char* kernel_name(const Pool2dArgs& a, const char* two_d, const char* three_d) { return a.three_d ? three_d : two_d; }

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
  return detail::dispatch_real(a.dtype, [&](auto tag) {  // every real dtype (the adapter refuses bool)
    using T = decltype(tag);
    using A = std::conditional_t<std::is_integral_v<T>, T, acc_t<T>>;  // integers compare as themselves
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    // Launch records, per plane: every in-bounds tap of every window read once (a window stopped early by
    // a NaN is counted whole), each output writes its value and an int64 index; 1 Vector op (compare) per tap.
    constexpr int64_t ts = sizeof(T);
    const int64_t n_taps = taps(a, true), n_out = out_plane(a);
    const PlaneCost c{n_taps * ts, n_out * (ts + 8), n_taps};
    const char* name = a.adaptive ? kernel_name(a, "adaptive_max_pool2d", "adaptive_max_pool3d")
                                  : kernel_name(a, "max_pool2d", "max_pool3d");
    return per_plane(s, name, a, c, [=](int64_t p) {
      const T* plane = x + p * in_plane(a);
      int64_t o = p * out_plane(a);
      for (int64_t od = 0; od < a.out_d; ++od) {
        for (int64_t oh = 0; oh < a.out_h; ++oh) {
          for (int64_t ow = 0; ow < a.out_w; ++ow, ++o) {
            // Per axis: first tap, tap count and dilation (adaptive windows: from the adaptive rule, dilation 1).
            int64_t first[3], count[3], step[3];
            const int64_t pos[3] = {od, oh, ow};
            for (int ax = 0; ax < 3; ++ax) {
              const Axis xa = axis(a, ax);
              const Window w = window(a, ax, pos[ax]);
              first[ax] = w.begin;
              count[ax] = a.adaptive ? w.end - w.begin : xa.k;
              step[ax] = a.adaptive ? 1 : xa.dl;
            }
            A best = std::numeric_limits<A>::lowest();  // replaced by the first tap (arg < 0)
            int64_t arg = -1;
            for (int64_t kd = 0; kd < count[0]; ++kd) {
              const int64_t d = first[0] + kd * step[0];
              if (d < 0 || d >= a.in_d) continue;
              for (int64_t kh = 0; kh < count[1]; ++kh) {
                const int64_t h = first[1] + kh * step[1];
                if (h < 0 || h >= a.in_h) continue;
                for (int64_t kw = 0; kw < count[2]; ++kw) {
                  const int64_t w = first[2] + kw * step[2];
                  if (w < 0 || w >= a.in_w) continue;
                  const int64_t at = (d * a.in_h + h) * a.in_w + w;
                  const A v = static_cast<A>(plane[at]);
                  const bool nan = [&] {
                    if constexpr (std::is_integral_v<A>) return false;
                    else return std::isnan(v);
                  }();
                  if (arg < 0 || v > best || nan) {  // NaN wins, as in ATen
                    best = v;
                    arg = at;
                    // max_pool ends the row at a NaN; ATen's adaptive kernel keeps scanning (the last one wins)
                    if (nan && !a.adaptive) break;
                  }
                }
              }
            }
            y[o] = static_cast<T>(best);
            indices[o] = arg;
          }
        }
      }
    });
  });
}

namespace {
// The pooled plane `src` (out_d x out_h x out_w) scattered into the plane `dst` (in_d x in_h x in_w, zeroed
// here) at `indices`: added (max pooling's backward) or written (max_unpool, the last write of a repeated
// index winning as on CPU). An index outside the plane is a kernel error; `bad_index` words it.
template <class BadIndex>
npu_sim::Status scatter_planes(npu_sim::Stream s, const char* name, const Pool2dArgs& a, const void* src,
                               const int64_t* indices, void* dst, bool accumulate, BadIndex bad_index) {
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* g = static_cast<const T*>(src);
    T* gi = static_cast<T*>(dst);
    // Launch records, per plane: dst zeroed (n_in written), then per source element its int64 index and value
    // read and the target element written (and read, when added); 1 Vector op per source element.
    constexpr int64_t ts = sizeof(T);
    const int64_t n_in = in_plane(a), n_out = out_plane(a);
    const PlaneCost c{n_out * (8 + (accumulate ? 2 : 1) * ts), (n_in + n_out) * ts, n_out};
    return per_plane(s, name, a, c, [=](int64_t p) {
      T* plane = gi + p * n_in;
      for (int64_t i = 0; i < n_in; ++i) plane[i] = static_cast<T>(A(0));
      for (int64_t o = 0; o < n_out; ++o) {
        const int64_t idx = indices[p * n_out + o];
        if (idx < 0 || idx >= n_in) throw npu_sim::KernelError(bad_index(idx));
        plane[idx] = accumulate ? static_cast<T>(static_cast<A>(plane[idx]) + static_cast<A>(g[p * n_out + o]))
                                : g[p * n_out + o];
      }
    });
  });
}
}  // namespace

npu_sim::Status max_pool2d_backward(npu_sim::Stream s, const Pool2dArgs& a, const void* grad_out,
                                    const int64_t* indices, void* grad_in) {
  const char* name = a.adaptive ? kernel_name(a, "adaptive_max_pool2d_backward", "adaptive_max_pool3d_backward")
                                : kernel_name(a, "max_pool2d_backward", "max_pool3d_backward");
  const int64_t n_in = in_plane(a);
  return scatter_planes(s, name, a, grad_out, indices, grad_in, true, [=](int64_t idx) {
    return std::string(name) + ": index " + std::to_string(idx) + " is out of bounds for an input plane of " +
           std::to_string(n_in);
  });
}

npu_sim::Status max_unpool(npu_sim::Stream s, const Pool2dArgs& a, const void* in, const int64_t* indices,
                           void* out) {
  const std::string sizes = (a.three_d ? std::to_string(a.in_d) + "x" : std::string()) + std::to_string(a.in_h) +
                            "x" + std::to_string(a.in_w);
  return scatter_planes(s, kernel_name(a, "max_unpool2d", "max_unpool3d"), a, in, indices, out, false,
                        [sizes](int64_t idx) {  // CPU's message
                          return "Found an invalid max index: " + std::to_string(idx) + " (output volumes are of size " +
                                 sizes + ")";
                        });
}

namespace {
// Calls f(offset in the input plane) for every in-bounds tap of the windows `w` (average pooling).
template <class F>
void for_window(const Pool2dArgs& a, const Window (&w)[3], F&& f) {
  for (int64_t d = std::max<int64_t>(w[0].begin, 0); d < std::min(w[0].end, a.in_d); ++d)
    for (int64_t h = std::max<int64_t>(w[1].begin, 0); h < std::min(w[1].end, a.in_h); ++h)
      for (int64_t x = std::max<int64_t>(w[2].begin, 0); x < std::min(w[2].end, a.in_w); ++x) f((d * a.in_h + h) * a.in_w + x);
}
// Calls f(output offset in the plane, windows) for every output position.
template <class F>
void for_outputs(const Pool2dArgs& a, F&& f) {
  int64_t o = 0;
  for (int64_t od = 0; od < a.out_d; ++od)
    for (int64_t oh = 0; oh < a.out_h; ++oh)
      for (int64_t ow = 0; ow < a.out_w; ++ow, ++o) {
        const Window w[3] = {window(a, 0, od), window(a, 1, oh), window(a, 2, ow)};
        f(o, w);
      }
}
}  // namespace

npu_sim::Status avg_pool2d(npu_sim::Stream s, const Pool2dArgs& a, const void* in, void* out) {
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    // Launch records, per plane: every in-bounds tap of every window read once, each output written; 1
    // Vector op (add) per tap and 1 (divide) per output.
    constexpr int64_t ts = sizeof(T);
    const int64_t n_taps = taps(a, false), n_out = out_plane(a);
    const PlaneCost c{n_taps * ts, n_out * ts, n_taps + n_out};
    const char* name = a.adaptive ? kernel_name(a, "adaptive_avg_pool2d", "adaptive_avg_pool3d")
                                  : kernel_name(a, "avg_pool2d", "avg_pool3d");
    return per_plane(s, name, a, c, [=](int64_t p) {
      const T* plane = x + p * in_plane(a);
      T* yp = y + p * out_plane(a);
      for_outputs(a, [&](int64_t o, const Window (&w)[3]) {
        A sum = 0;
        for_window(a, w, [&](int64_t i) { sum += static_cast<A>(plane[i]); });
        yp[o] = static_cast<T>(sum / static_cast<A>(avg_divisor(a, w)));
      });
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
    const int64_t n_taps = taps(a, false), n_out = out_plane(a), n_in = in_plane(a);
    const PlaneCost c{(n_out + n_taps) * ts, (n_in + n_taps) * ts, n_taps + n_out};
    const char* name = a.adaptive ? kernel_name(a, "adaptive_avg_pool2d_backward", "adaptive_avg_pool3d_backward")
                                  : kernel_name(a, "avg_pool2d_backward", "avg_pool3d_backward");
    return per_plane(s, name, a, c, [=](int64_t p) {
      T* plane = gi + p * n_in;
      const T* gp = g + p * n_out;
      for (int64_t i = 0; i < n_in; ++i) plane[i] = static_cast<T>(A(0));
      for_outputs(a, [&](int64_t o, const Window (&w)[3]) {
        const A share = static_cast<A>(gp[o]) / static_cast<A>(avg_divisor(a, w));
        for_window(a, w, [&](int64_t i) { plane[i] = static_cast<T>(static_cast<A>(plane[i]) + share); });
      });
    });
  });
}

}  // namespace npu_kernels
