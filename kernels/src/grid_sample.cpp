// grid_sample kernels (see npu_kernels/grid_sample.h): each sample point becomes a list of taps (plane offset,
// weight and the weight's derivatives along x, y, z); the forward sums taps per channel, the grid's gradient
// sums them per point over the channels, and the input's gradient scatters them plane by plane.
#include "npu_kernels/grid_sample.h"

#include <cmath>
#include <limits>
#include <vector>

#include "npu_kernels/float_dispatch.h"
#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {
namespace {

// ---- PyTorch's coordinate conventions (ATen/native/GridSampler.h), each with its derivative ----

// [-1, 1] -> pixel coordinates: corner pixels' centres (align_corners) or their outer edges.
template <typename A>
A unnormalize(A coord, int64_t size, bool align, A* grad) {
  if (align) {
    *grad = static_cast<A>(size - 1) / 2;
    return (coord + 1) / 2 * static_cast<A>(size - 1);
  }
  *grad = static_cast<A>(size) / 2;
  return ((coord + 1) * static_cast<A>(size) - 1) / 2;
}

template <typename A>
A clip(A coord, int64_t size, A* grad) {
  if (coord <= 0) {
    *grad = 0;
    return 0;
  }
  const A max = static_cast<A>(size - 1);
  if (coord >= max) {
    *grad = 0;
    return max;
  }
  *grad = 1;
  return coord;
}

// Reflects coord into [twice_low / 2, twice_high / 2].
template <typename A>
A reflect(A coord, int64_t twice_low, int64_t twice_high, A* grad) {
  if (twice_low == twice_high) {
    *grad = 0;
    return 0;
  }
  const A min = static_cast<A>(twice_low) / 2, span = static_cast<A>(twice_high - twice_low) / 2;
  A in = coord - min, sign = 1;
  if (in < 0) {
    sign = -1;
    in = -in;
  }
  const A extra = std::fmod(in, span);
  const int64_t flips = static_cast<int64_t>(std::floor(in / span));
  if (flips % 2 == 0) {
    *grad = sign;
    return extra + min;
  }
  *grad = -sign;
  return span - extra + min;
}

// The padding mode applied to a pixel coordinate (compute_coordinates), its derivative multiplied into *grad.
template <typename A>
A pad(A coord, int64_t size, GridPadding padding, bool align, A* grad) {
  A g = 1;
  if (padding == GridPadding::kBorder) {
    coord = clip(coord, size, &g);
  } else if (padding == GridPadding::kReflection) {
    A g_reflect, g_clip;
    coord = align ? reflect(coord, 0, 2 * (size - 1), &g_reflect) : reflect(coord, -1, 2 * size - 1, &g_reflect);
    coord = clip(coord, size, &g_clip);
    g = g_reflect * g_clip;
  }
  *grad *= g;
  return coord;
}

// Keys' cubic convolution weights (A = -0.75) of the four taps around t in [0, 1), and their derivatives in t.
template <typename A>
void cubic(A t, A w[4], A dw[4]) {
  constexpr A kA = static_cast<A>(-0.75);
  auto near = [](A x) { return ((kA + 2) * x - (kA + 3)) * x * x + 1; };              // |x| <= 1
  auto far = [](A x) { return ((kA * x - 5 * kA) * x + 8 * kA) * x - 4 * kA; };      // 1 < |x| < 2
  auto d_near = [](A x) { return (3 * (kA + 2) * x - 2 * (kA + 3)) * x; };
  auto d_far = [](A x) { return (3 * kA * x - 10 * kA) * x + 8 * kA; };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
  dw[0] = d_far(t + 1);
  dw[1] = d_near(t);
  dw[2] = -d_near(1 - t);
  dw[3] = -d_far(2 - t);
}

template <typename A>
struct Tap {
  int64_t offset;  // in the input plane
  A w, dx, dy, dz;  // weight and its derivatives in the pixel coordinates
};

// An axis' in-bounds test on an integral coordinate held in A (NaN fails).
template <typename A>
bool inside(A i, int64_t size) {
  return i >= 0 && i < static_cast<A>(size);
}

// The taps of one sample point (g: its x, y[, z] in [-1, 1]); mult: d pixel coordinate / d grid coordinate per
// axis. Out-of-bounds taps are left out (they read zeros). Returns the count (at most 16), or -1 for a point with
// a NaN coordinate, whose output and grid gradient are NaN in every mode (CPU's differ by mode and padding, and
// its border backward crashes on them).
template <typename A, typename T>
int taps_of(const GridSampleArgs& a, const T* g, Tap<A>* taps, A mult[3]) {
  const int64_t size[3] = {a.in_w, a.in_h, a.in_d};
  const int dims = a.three_d ? 3 : 2;
  A coord[3] = {0, 0, 0};
  mult[2] = 0;
  int n = 0;
  for (int k = 0; k < dims; ++k) {
    if (std::isnan(static_cast<A>(g[k]))) return -1;
  }
  if (a.interpolation == GridInterpolation::kBicubic) {  // padding applies to each tap, not to the point
    A w[2][4], dw[2][4], base[2];
    for (int k = 0; k < 2; ++k) {
      coord[k] = unnormalize(static_cast<A>(g[k]), size[k], a.align_corners, &mult[k]);
      base[k] = std::floor(coord[k]);
      cubic(coord[k] - base[k], w[k], dw[k]);
    }
    for (int j = 0; j < 4; ++j) {
      A unused = 1;
      const A y = std::trunc(pad(base[1] - 1 + j, a.in_h, a.padding, a.align_corners, &unused));
      if (!inside(y, a.in_h)) continue;
      for (int i = 0; i < 4; ++i) {
        const A x = std::trunc(pad(base[0] - 1 + i, a.in_w, a.padding, a.align_corners, &unused));
        if (!inside(x, a.in_w)) continue;
        taps[n++] = {static_cast<int64_t>(y) * a.in_w + static_cast<int64_t>(x), w[0][i] * w[1][j],
                     dw[0][i] * w[1][j], w[0][i] * dw[1][j], 0};
      }
    }
    return n;
  }
  for (int k = 0; k < dims; ++k) {
    coord[k] = unnormalize(static_cast<A>(g[k]), size[k], a.align_corners, &mult[k]);
    coord[k] = pad(coord[k], size[k], a.padding, a.align_corners, &mult[k]);
  }
  if (a.interpolation == GridInterpolation::kNearest) {
    A r[3] = {0, 0, 0};
    for (int k = 0; k < dims; ++k) {
      r[k] = std::nearbyint(coord[k]);
      if (!inside(r[k], size[k])) return 0;
    }
    taps[0] = {(static_cast<int64_t>(r[2]) * a.in_h + static_cast<int64_t>(r[1])) * a.in_w + static_cast<int64_t>(r[0]),
               1, 0, 0, 0};
    return 1;
  }
  // (tri)linear: the 4 or 8 corners, weight prod_k (1 - |coord_k - corner_k|)
  A lo[3] = {0, 0, 0};
  for (int k = 0; k < dims; ++k) lo[k] = std::floor(coord[k]);
  const int corners = 1 << dims;
  for (int c = 0; c < corners; ++c) {
    A w[3] = {1, 1, 1}, dw[3] = {0, 0, 0}, at[3] = {0, 0, 0};
    bool ok = true;
    for (int k = 0; k < dims; ++k) {
      const bool high = (c >> k) & 1;
      at[k] = lo[k] + (high ? 1 : 0);
      ok = ok && inside(at[k], size[k]);
      w[k] = high ? coord[k] - lo[k] : lo[k] + 1 - coord[k];
      dw[k] = high ? 1 : -1;
    }
    if (!ok) continue;
    taps[n++] = {(static_cast<int64_t>(at[2]) * a.in_h + static_cast<int64_t>(at[1])) * a.in_w +
                     static_cast<int64_t>(at[0]),
                 w[0] * w[1] * w[2], dw[0] * w[1] * w[2], w[0] * dw[1] * w[2], w[0] * w[1] * dw[2]};
  }
  return n;
}

constexpr int kMaxTaps = 16;

int64_t points_per_sample(const GridSampleArgs& a) { return a.out_d * a.out_h * a.out_w; }
int64_t input_plane(const GridSampleArgs& a) { return a.in_d * a.in_h * a.in_w; }
int max_taps(const GridSampleArgs& a) {
  return a.interpolation == GridInterpolation::kBicubic ? 16
         : a.interpolation == GridInterpolation::kNearest ? 1 : (a.three_d ? 8 : 4);
}

bool valid(const GridSampleArgs& a) {
  return !(a.three_d && a.interpolation == GridInterpolation::kBicubic) && a.n >= 0 && a.c >= 0;
}

}  // namespace

npu_sim::Status grid_sample(npu_sim::Stream s, const GridSampleArgs& a, const void* input, const void* grid,
                            void* out) {
  if (!valid(a)) return npu_sim::Status::kInvalidValue;
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* x = static_cast<const T*>(input);
    const T* g = static_cast<const T*>(grid);
    T* y = static_cast<T*>(out);
    const int64_t pts = points_per_sample(a), plane = input_plane(a), dims = a.three_d ? 3 : 2;
    const int64_t ts = sizeof(T), taps_max = max_taps(a);
    const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(a.c, 1));
    return parallel_for(s, a.three_d ? "grid_sampler_3d" : "grid_sampler_2d", a.n * pts, grain,
                        [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
      // per point: its grid coordinates read, at most taps_max reads per channel, one write per channel
      detail::record_vec(ctx, (e - b) * (dims + a.c * taps_max) * ts, (e - b) * a.c * ts, (e - b) * a.c * 2 * taps_max);
      Tap<A> taps[kMaxTaps];
      A mult[3];
      for (int64_t q = b; q < e; ++q) {
        const int64_t n = q / pts, p = q % pts;
        const int count = taps_of<A>(a, g + q * dims, taps, mult);
        for (int64_t c = 0; c < a.c; ++c) {
          const T* xp = x + (n * a.c + c) * plane;
          A sum = count < 0 ? std::numeric_limits<A>::quiet_NaN() : A(0);
          for (int k = 0; k < count; ++k) sum += static_cast<A>(xp[taps[k].offset]) * taps[k].w;
          y[(n * a.c + c) * pts + p] = static_cast<T>(sum);
        }
      }
    });
  });
}

npu_sim::Status grid_sample_backward(npu_sim::Stream s, const GridSampleArgs& a, const void* grad_out,
                                     const void* input, const void* grid, void* grad_input, void* grad_grid) {
  if (!valid(a)) return npu_sim::Status::kInvalidValue;
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* go = static_cast<const T*>(grad_out);
    const T* x = static_cast<const T*>(input);
    const T* g = static_cast<const T*>(grid);
    const int64_t pts = points_per_sample(a), plane = input_plane(a), dims = a.three_d ? 3 : 2;
    const int64_t ts = sizeof(T), taps_max = max_taps(a);
    // The grid's gradient, per point: sum over channels and taps of grad_out * input * d weight.
    T* gg = static_cast<T*>(grad_grid);
    const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(a.c, 1));
    npu_sim::Status st = parallel_for(
        s, a.three_d ? "grid_sampler_3d_backward_grid" : "grid_sampler_2d_backward_grid", a.n * pts, grain,
        [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
          detail::record_vec(ctx, (e - b) * (dims + a.c * (1 + taps_max)) * ts, (e - b) * dims * ts,
                             (e - b) * a.c * 2 * dims * taps_max);
          Tap<A> taps[kMaxTaps];
          A mult[3];
          for (int64_t q = b; q < e; ++q) {
            const int64_t n = q / pts, p = q % pts;
            const int count = taps_of<A>(a, g + q * dims, taps, mult);
            A d[3] = {0, 0, 0};
            if (count < 0) d[0] = d[1] = d[2] = mult[0] = mult[1] = mult[2] = std::numeric_limits<A>::quiet_NaN();
            for (int64_t c = 0; c < a.c; ++c) {
              const A gout = static_cast<A>(go[(n * a.c + c) * pts + p]);
              const T* xp = x + (n * a.c + c) * plane;
              for (int k = 0; k < count; ++k) {
                const A v = static_cast<A>(xp[taps[k].offset]) * gout;
                d[0] += v * taps[k].dx;
                d[1] += v * taps[k].dy;
                d[2] += v * taps[k].dz;
              }
            }
            for (int k = 0; k < dims; ++k) gg[q * dims + k] = static_cast<T>(mult[k] * d[k]);
          }
        });
    if (st != npu_sim::Status::kSuccess || grad_input == nullptr) return st;
    // The input's gradient, plane by plane (no two blocks write one plane): every point's taps scatter
    // grad_out * weight, accumulated in A.
    T* gi = static_cast<T*>(grad_input);
    return parallel_for(
        s, a.three_d ? "grid_sampler_3d_backward_input" : "grid_sampler_2d_backward_input", a.n * a.c, 1,
        [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
          detail::record_vec(ctx, (e - b) * pts * (dims + 1) * ts, (e - b) * plane * ts, (e - b) * pts * 2 * taps_max);
          Tap<A> taps[kMaxTaps];
          A mult[3];
          std::vector<A> acc(static_cast<size_t>(plane));
          for (int64_t pl = b; pl < e; ++pl) {
            const int64_t n = pl / a.c;
            std::fill(acc.begin(), acc.end(), A(0));
            for (int64_t p = 0; p < pts; ++p) {
              const A gout = static_cast<A>(go[pl * pts + p]);
              const int count = taps_of<A>(a, g + (n * pts + p) * dims, taps, mult);
              for (int k = 0; k < count; ++k) acc[taps[k].offset] += taps[k].w * gout;
            }
            T* dst = gi + pl * plane;
            for (int64_t i = 0; i < plane; ++i) dst[i] = static_cast<T>(acc[i]);
          }
        });
  });
}

}  // namespace npu_kernels
