// grid_sample kernels (see npu_kernels/grid_sample.h): each sample point becomes a list of taps (plane offset,
// weight and the weight's derivatives along x, y, z); the forward sums taps per channel, the grid's gradient
// sums them per point over the channels, and the input's gradient scatters them plane by plane.
#include "npu_kernels/grid_sample.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
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

// A 2-D point whose taps are all inside the input (after padding): they are the products of 4 rows and 4 columns
// (bicubic) or 2 and 2 (bilinear), kept as 8 (4) offsets and weights instead of 16 (4) tap records. The bicubic
// forward interpolates each row with the x weights, then the rows with the y weights (CPU's order); the bilinear
// one sums the four corners as the tap list would.
template <typename A>
struct Separable {
  int64_t row[4], col[4];
  A wy[4], wx[4];
};
constexpr int kSeparable = -2;  // taps_of's count for a point it wrote as a Separable

// The taps of one sample point (g: its x, y[, z] in [-1, 1]); mult: d pixel coordinate / d grid coordinate per
// axis. Out-of-bounds taps are left out (they read zeros). Returns the count (at most 16), or -1 for a point with
// a NaN coordinate, whose output and grid gradient are NaN in every mode (CPU's differ by mode and padding, and
// its border backward crashes on them). With `sep`, a bicubic point with all 16 taps inside is written there
// instead, and the count is kSeparable.
template <typename A, typename T>
int taps_of(const GridSampleArgs& a, const T* g, Tap<A>* taps, A mult[3], Separable<A>* sep = nullptr) {
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
    if (sep != nullptr) {
      A unused = 1, xs[4], ys[4];
      bool all = true;
      for (int j = 0; j < 4; ++j) {
        ys[j] = std::trunc(pad(base[1] - 1 + j, a.in_h, a.padding, a.align_corners, &unused));
        xs[j] = std::trunc(pad(base[0] - 1 + j, a.in_w, a.padding, a.align_corners, &unused));
        all = all && inside(ys[j], a.in_h) && inside(xs[j], a.in_w);
      }
      if (all) {
        for (int j = 0; j < 4; ++j) {
          sep->row[j] = static_cast<int64_t>(ys[j]) * a.in_w;
          sep->col[j] = static_cast<int64_t>(xs[j]);
          sep->wy[j] = w[1][j];
          sep->wx[j] = w[0][j];
        }
        return kSeparable;
      }
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
  if (sep != nullptr && dims == 2 && inside(lo[0], size[0] - 1) && inside(lo[1], size[1] - 1)) {
    for (int k = 0; k < 2; ++k) {
      sep->row[k] = (static_cast<int64_t>(lo[1]) + k) * a.in_w;
      sep->col[k] = static_cast<int64_t>(lo[0]) + k;
      sep->wy[k] = k ? coord[1] - lo[1] : lo[1] + 1 - coord[1];
      sep->wx[k] = k ? coord[0] - lo[0] : lo[0] + 1 - coord[0];
    }
    return kSeparable;
  }
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
// Points per tile: their taps are computed once, then every channel runs over the tile, so the gathers (and the
// backward's scatters) of a channel stay in one input plane while the tile's outputs are written in order.
constexpr int64_t kTile = 128;

int64_t points_per_sample(const GridSampleArgs& a) { return a.out_d * a.out_h * a.out_w; }
int64_t input_plane(const GridSampleArgs& a) { return a.in_d * a.in_h * a.in_w; }
int max_taps(const GridSampleArgs& a) {
  return a.interpolation == GridInterpolation::kBicubic ? 16
         : a.interpolation == GridInterpolation::kNearest ? 1 : (a.three_d ? 8 : 4);
}

bool valid(const GridSampleArgs& a) {
  return !(a.three_d && a.interpolation == GridInterpolation::kBicubic) && a.n >= 0 && a.c >= 0;
}

// The taps of the points [p0, p0 + len) of sample n: taps[i * stride ...], count[i], mult[i].
// With `separable` (the 2-D bilinear and bicubic forward), points whose taps are all inside are kept as Separable (count
// kSeparable).
template <typename A, typename T>
struct TileTaps {
  std::vector<Tap<A>> taps;
  std::vector<int> count;
  std::vector<A> mult;
  std::vector<Separable<A>> sep;
  int stride = 0;

  TileTaps(const GridSampleArgs& a, bool separable)
      : taps(static_cast<size_t>(kTile * max_taps(a))), count(kTile), mult(kTile * 3),
        sep(separable && !a.three_d && a.interpolation != GridInterpolation::kNearest ? kTile : 0),
        stride(max_taps(a)) {}

  void compute(const GridSampleArgs& a, const T* grid_points, int64_t len) {
    const int dims = a.three_d ? 3 : 2;
    Tap<A> tmp[kMaxTaps];
    for (int64_t i = 0; i < len; ++i) {
      count[i] = taps_of<A>(a, grid_points + i * dims, tmp, &mult[i * 3], sep.empty() ? nullptr : &sep[i]);
      for (int k = 0; k < count[i]; ++k) taps[i * stride + k] = tmp[k];
    }
  }
};

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
    const int64_t ts = sizeof(T), taps_max = max_taps(a), tiles = (pts + kTile - 1) / kTile;
    return parallel_for(s, a.three_d ? "grid_sampler_3d" : "grid_sampler_2d", a.n * tiles, 1,
                        [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
      // per point: its grid coordinates read, at most taps_max reads per channel, one write per channel
      const int64_t points = std::min(e * kTile, a.n * tiles * kTile) - b * kTile;
      detail::record_vec(ctx, points * (dims + a.c * taps_max) * ts, points * a.c * ts, points * a.c * 2 * taps_max);
      TileTaps<A, T> tt(a, /*separable=*/true);
      const bool bicubic = a.interpolation == GridInterpolation::kBicubic;
      for (int64_t t = b; t < e; ++t) {
        const int64_t n = t / tiles, p0 = (t % tiles) * kTile, len = std::min(kTile, pts - p0);
        tt.compute(a, g + (n * pts + p0) * dims, len);
        for (int64_t c = 0; c < a.c; ++c) {
          const T* xp = x + (n * a.c + c) * plane;
          T* yp = y + (n * a.c + c) * pts + p0;
          for (int64_t i = 0; i < len; ++i) {
            if (tt.count[i] == kSeparable && !bicubic) {
              const Separable<A>& sp = tt.sep[i];
              const T* r0 = xp + sp.row[0];
              const T* r1 = xp + sp.row[1];
              A sum = 0;
              sum += static_cast<A>(r0[sp.col[0]]) * (sp.wx[0] * sp.wy[0]);
              sum += static_cast<A>(r0[sp.col[1]]) * (sp.wx[1] * sp.wy[0]);
              sum += static_cast<A>(r1[sp.col[0]]) * (sp.wx[0] * sp.wy[1]);
              sum += static_cast<A>(r1[sp.col[1]]) * (sp.wx[1] * sp.wy[1]);
              yp[i] = static_cast<T>(sum);
              continue;
            }
            if (tt.count[i] == kSeparable) {
              const Separable<A>& sp = tt.sep[i];
              A sum = 0;
              for (int j = 0; j < 4; ++j) {
                const T* r = xp + sp.row[j];
                const A row = static_cast<A>(r[sp.col[0]]) * sp.wx[0] + static_cast<A>(r[sp.col[1]]) * sp.wx[1] +
                              static_cast<A>(r[sp.col[2]]) * sp.wx[2] + static_cast<A>(r[sp.col[3]]) * sp.wx[3];
                sum += row * sp.wy[j];
              }
              yp[i] = static_cast<T>(sum);
              continue;
            }
            const Tap<A>* tp = &tt.taps[i * tt.stride];
            A sum = tt.count[i] < 0 ? std::numeric_limits<A>::quiet_NaN() : A(0);
            for (int k = 0; k < tt.count[i]; ++k) sum += static_cast<A>(xp[tp[k].offset]) * tp[k].w;
            yp[i] = static_cast<T>(sum);
          }
        }
      }
    });
  });
}

// One pass over the points of each sample, tile by tile: per channel, the grid's gradient terms are gathered and
// the input's gradient scattered into that channel's plane. Blocks own (sample, channel chunk) pairs, so no two
// write one plane; with several chunks per sample their grid-gradient partial sums are added by a second launch.
npu_sim::Status grid_sample_backward(npu_sim::Stream s, const GridSampleArgs& a, const void* grad_out,
                                     const void* input, const void* grid, void* grad_input, void* grad_grid) {
  if (!valid(a)) return npu_sim::Status::kInvalidValue;
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* go = static_cast<const T*>(grad_out);
    const T* x = static_cast<const T*>(input);
    const T* g = static_cast<const T*>(grid);
    T* gi = static_cast<T*>(grad_input);
    T* gg = static_cast<T*>(grad_grid);
    const int64_t pts = points_per_sample(a), plane = input_plane(a), dims = a.three_d ? 3 : 2;
    const int64_t ts = sizeof(T), taps_max = max_taps(a);
    // enough (sample, chunk) blocks for every AI-core thread when the batch is small
    const int64_t chunks =
        std::max<int64_t>(1, std::min<int64_t>(a.c, (2 * core_threads() + a.n - 1) / std::max<int64_t>(a.n, 1)));
    auto partial = chunks > 1 ? std::make_shared<std::vector<A>>(static_cast<size_t>(chunks * a.n * pts * dims))
                              : std::shared_ptr<std::vector<A>>();
    const char* name = a.three_d ? "grid_sampler_3d_backward" : "grid_sampler_2d_backward";
    npu_sim::Status st = parallel_for(s, name, a.n * chunks, 1, [=](int64_t b, int64_t e,
                                                                     const npu_sim::BlockContext& ctx) {
      const int64_t pairs = e - b, per_chunk = (a.c + chunks - 1) / chunks;
      detail::record_vec(ctx, pairs * (pts * dims + per_chunk * pts * (1 + taps_max)) * ts,
                         pairs * (per_chunk * plane + pts * dims) * ts, pairs * per_chunk * pts * 4 * taps_max);
      TileTaps<A, T> tt(a, /*separable=*/false);
      std::vector<A> d(static_cast<size_t>(kTile * 3)), scratch;
      for (int64_t pair = b; pair < e; ++pair) {
        const int64_t n = pair / chunks, k = pair % chunks;
        const int64_t c0 = a.c * k / chunks, c1 = a.c * (k + 1) / chunks;
        A* out_grid = chunks > 1 ? partial->data() + (k * a.n + n) * pts * dims : nullptr;
        // the input's gradient of these channels, accumulated in A: in place for float32/float64, in a
        // scratch of the chunk's planes for 16-bit (converted at the end)
        A* acc = nullptr;
        if (gi != nullptr) {
          if constexpr (std::is_same_v<A, T>) {
            acc = gi + (n * a.c + c0) * plane;
            std::fill(acc, acc + (c1 - c0) * plane, A(0));
          } else {
            scratch.assign(static_cast<size_t>((c1 - c0) * plane), A(0));
            acc = scratch.data();
          }
        }
        for (int64_t p0 = 0; p0 < pts; p0 += kTile) {
          const int64_t len = std::min(kTile, pts - p0);
          tt.compute(a, g + (n * pts + p0) * dims, len);
          std::fill(d.begin(), d.begin() + len * 3, A(0));
          for (int64_t c = c0; c < c1; ++c) {
            const T* xp = x + (n * a.c + c) * plane;
            const T* gop = go + (n * a.c + c) * pts + p0;
            A* accp = acc != nullptr ? acc + (c - c0) * plane : nullptr;
            for (int64_t i = 0; i < len; ++i) {
              const Tap<A>* tp = &tt.taps[i * tt.stride];
              const A gout = static_cast<A>(gop[i]);
              A dx = 0, dy = 0, dz = 0;
              for (int q = 0; q < tt.count[i]; ++q) {
                const A v = static_cast<A>(xp[tp[q].offset]) * gout;
                dx += v * tp[q].dx;
                dy += v * tp[q].dy;
                dz += v * tp[q].dz;
                if (accp != nullptr) accp[tp[q].offset] += tp[q].w * gout;
              }
              d[i * 3] += dx;
              d[i * 3 + 1] += dy;
              d[i * 3 + 2] += dz;
            }
          }
          for (int64_t i = 0; i < len; ++i) {
            const A* m = &tt.mult[i * 3];
            const bool nan = tt.count[i] < 0;
            for (int j = 0; j < dims; ++j) {
              const A v = nan ? std::numeric_limits<A>::quiet_NaN() : m[j] * d[i * 3 + j];
              if (out_grid != nullptr) out_grid[(p0 + i) * dims + j] = v;
              else gg[(n * pts + p0 + i) * dims + j] = static_cast<T>(v);
            }
          }
        }
        if constexpr (!std::is_same_v<A, T>) {
          if (gi != nullptr) {
            T* dst = gi + (n * a.c + c0) * plane;
            for (int64_t i = 0; i < (c1 - c0) * plane; ++i) dst[i] = static_cast<T>(scratch[i]);
          }
        }
      }
    });
    if (st != npu_sim::Status::kSuccess || chunks == 1) return st;
    return parallel_for(s, "grid_sampler_backward_grid_sum", a.n * pts, 1 << 14,
                        [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
      detail::record_vec(ctx, (e - b) * dims * chunks * static_cast<int64_t>(sizeof(A)), (e - b) * dims * ts,
                         (e - b) * dims * chunks);
      for (int64_t q = b; q < e; ++q) {
        for (int j = 0; j < dims; ++j) {
          A sum = 0;
          for (int64_t k = 0; k < chunks; ++k) sum += (*partial)[(k * a.n * pts + q) * dims + j];
          gg[q * dims + j] = static_cast<T>(sum);
        }
      }
    });
  });
}

}  // namespace npu_kernels
