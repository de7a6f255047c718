// cdist / pdist kernels (see npu_kernels/distance.h): the norm chosen once per launch as a template parameter, the
// per-coordinate map, reduction and derivative written as CPU's Dist<scalar_t> structs compute them, in dtype.
// Forward work is split over outputs, backward over gradient rows, so every element is summed in CPU's order by one
// block (deterministic, no atomics).
#include "npu_kernels/distance.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {
namespace {

using Status = npu_sim::Status;

enum class Norm { kZero, kOne, kLessThanTwo, kTwo, kInf, kGeneral };

template <Norm N>
using NormTag = std::integral_constant<Norm, N>;

// The forward's choice, on p rounded to the dtype (CPU converts p to scalar_t before testing it).
template <typename T>
Norm forward_norm(T p) {
  if (p == T(0)) return Norm::kZero;
  if (p == T(1)) return Norm::kOne;
  if (p == T(2)) return Norm::kTwo;
  if (std::isinf(p)) return Norm::kInf;
  return Norm::kGeneral;
}

// The backward's choice, on the double p (CPU tests it before converting).
Norm backward_norm(double p) {
  if (p == 0.0) return Norm::kZero;
  if (p == 1.0) return Norm::kOne;
  if (p < 2.0) return Norm::kLessThanTwo;
  if (p == 2.0) return Norm::kTwo;
  if (std::isinf(p)) return Norm::kInf;
  return Norm::kGeneral;
}

template <typename F>
Status with_norm(Norm n, F&& f) {
  switch (n) {
    case Norm::kZero: return f(NormTag<Norm::kZero>{});
    case Norm::kOne: return f(NormTag<Norm::kOne>{});
    case Norm::kLessThanTwo: return f(NormTag<Norm::kLessThanTwo>{});
    case Norm::kTwo: return f(NormTag<Norm::kTwo>{});
    case Norm::kInf: return f(NormTag<Norm::kInf>{});
    case Norm::kGeneral: return f(NormTag<Norm::kGeneral>{});
  }
  return Status::kInvalidValue;
}

template <typename F>
Status with_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: return f(double{});
    default: return Status::kInvalidValue;
  }
}

// || a - b ||_p over m coordinates, in order. kNanMax: the inf norm's max propagates NaN (pdist's vectorised
// maximum) instead of skipping it (cdist's std::max(agg, d), false for a NaN d).
template <Norm N, bool kNanMax, typename T>
T distance(const T* a, const T* b, int64_t m, T p) {
  T agg = 0;
  for (int64_t x = 0; x < m; ++x) {
    const T d = std::abs(a[x] - b[x]);
    if constexpr (N == Norm::kZero) {
      const T c = std::ceil(d);
      agg += T(1) < c ? T(1) : c;  // std::min(c, 1): NaN stays
    } else if constexpr (N == Norm::kOne) {
      agg += d;
    } else if constexpr (N == Norm::kTwo) {
      agg += d * d;
    } else if constexpr (N == Norm::kInf) {
      if constexpr (kNanMax) {
        agg = std::isnan(agg) || std::isnan(d) ? std::numeric_limits<T>::quiet_NaN() : std::max(agg, d);
      } else {
        agg = std::max(agg, d);
      }
    } else {
      agg += std::pow(d, p);
    }
  }
  if constexpr (N == Norm::kTwo) return std::sqrt(agg);
  if constexpr (N == Norm::kGeneral) return static_cast<T>(std::pow(static_cast<double>(agg), 1.0 / static_cast<double>(p)));
  return agg;
}

// CPU's sign: 1 above 0, -1 below, 0 at (either) zero, NaN at NaN.
template <typename T>
T sign(T v) {
  if (std::isnan(v)) return v;
  return v > T(0) ? T(1) : (v < T(0) ? T(-1) : T(0));
}

// The derivative of one pair's distance along one coordinate, times grad: CPU's backward of each norm.
template <Norm N, typename T>
T grad_term(T diff, T grad, T dist, T p) {
  if constexpr (N == Norm::kOne) {
    return grad * sign(diff);
  } else if constexpr (N == Norm::kLessThanTwo) {
    T r = dist == T(0) ? T(0) : sign(diff) * std::pow(std::abs(diff), p - T(1)) * grad / std::pow(dist, p - T(1));
    if (diff == T(0) && p < T(1)) r = T(0);  // |0|^(p-1) is inf there: CPU's subgradient 0
    return r;
  } else if constexpr (N == Norm::kTwo) {
    return dist == T(0) ? T(0) : grad * diff / dist;
  } else if constexpr (N == Norm::kInf) {
    // 1 where |diff| is the distance (every tied coordinate), 0 elsewhere, as CPU's ceil/min expression says it.
    const T t = std::ceil(std::abs(std::abs(diff) - dist));
    const T mn = std::isnan(t) ? t : std::min(T(1), t);
    return grad * sign(diff) * (T(1) - mn);
  } else if constexpr (N == Norm::kGeneral) {
    return dist == T(0) ? T(0) : diff * std::pow(std::abs(diff), p - T(2)) * grad / std::pow(dist, p - T(1));
  } else {
    return T(0);
  }
}

// Vector FLOPs of one coordinate's map + reduce (a pow counted as 4).
constexpr int64_t map_flops(Norm n) { return n == Norm::kGeneral ? 6 : 3; }
constexpr int64_t grad_flops(Norm n) { return n == Norm::kGeneral || n == Norm::kLessThanTwo ? 12 : 5; }

// Row i of the first pair k = start(i) of n rows: start(i) = i (2n - i - 1) / 2. CPU's closed form, then corrected
// by whole rows against the floating-point truncation it guards against.
int64_t pair_start(int64_t i, int64_t n) { return i * (2 * n - i - 1) / 2; }

int64_t pair_row(int64_t k, int64_t n) {
  const double n2 = static_cast<double>(n) - .5;
  int64_t i = static_cast<int64_t>(n2 - std::sqrt(std::max(0.0, n2 * n2 - 2.0 * static_cast<double>(k) - 1.0)));
  i = std::clamp<int64_t>(i, 0, n - 2);
  while (i > 0 && pair_start(i, n) > k) --i;
  while (i + 1 < n - 1 && pair_start(i + 1, n) <= k) ++i;
  return i;
}

bool valid(int64_t a, int64_t b, int64_t c, int64_t d, double p) {
  return a >= 0 && b >= 0 && c >= 0 && d >= 0 && !std::isnan(p);
}

}  // namespace

int64_t pdist_pairs(int64_t n) { return n < 2 ? 0 : n * (n - 1) / 2; }

Status cdist_forward(npu_sim::Stream stream, const CdistArgs& a, const void* x1, const void* x2, void* out) {
  if (!valid(a.batch, a.r1, a.r2, a.m, a.p)) return Status::kInvalidValue;
  const int64_t outputs = a.batch * a.r1 * a.r2;
  if (outputs == 0) return Status::kSuccess;
  if (!out || (a.m > 0 && (!x1 || !x2))) return Status::kInvalidValue;
  return with_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T p = static_cast<T>(a.p);
    return with_norm(forward_norm(p), [&](auto norm) {
      constexpr Norm N = decltype(norm)::value;
      return parallel_for(stream, "cdist_forward", outputs, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, a.m)),
                          [=](int64_t o0, int64_t o1, const npu_sim::BlockContext& ctx) {
        const T* t1 = static_cast<const T*>(x1);
        const T* t2 = static_cast<const T*>(x2);
        T* res = static_cast<T*>(out);
        const int64_t m = a.m, r2 = a.r2, plane = a.r1 * r2;
        for (int64_t o = o0; o < o1; ++o) {
          const int64_t b = o / plane, i = (o % plane) / r2, j = o % r2;
          res[o] = distance<N, false, T>(t1 + (b * a.r1 + i) * m, t2 + (b * r2 + j) * m, m, p);
        }
        // Launch records: the x1 rows of the block's outputs once, the x2 rows of their batches at most once each,
        // every output written.
        const int64_t es = static_cast<int64_t>(sizeof(T)), n = o1 - o0;
        const int64_t rows1 = (o1 - 1) / r2 - o0 / r2 + 1, batches = (o1 - 1) / plane - o0 / plane + 1;
        detail::record_vec(ctx, (rows1 + std::min(n, batches * r2)) * m * es, n * es, n * (m * map_flops(N) + 1));
      });
    });
  });
}

Status cdist_backward(npu_sim::Stream stream, const CdistArgs& a, const void* grad, const void* x1, const void* x2,
                      const void* dist, void* grad_x1) {
  if (!valid(a.batch, a.r1, a.r2, a.m, a.p)) return Status::kInvalidValue;
  const int64_t rows = a.batch * a.r1;
  if (rows == 0 || a.m == 0) return Status::kSuccess;
  if (!grad_x1 || (a.r2 > 0 && (!grad || !x1 || !x2 || !dist))) return Status::kInvalidValue;
  return with_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    return with_norm(backward_norm(a.p), [&](auto norm) {
      constexpr Norm N = decltype(norm)::value;
      const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, a.r2 * a.m));
      return parallel_for(stream, "cdist_backward", rows, grain,
                          [=](int64_t q0, int64_t q1, const npu_sim::BlockContext& ctx) {
        const T* t1 = static_cast<const T*>(x1);
        const T* t2 = static_cast<const T*>(x2);
        const T* g = static_cast<const T*>(grad);
        const T* dd = static_cast<const T*>(dist);
        T* res = static_cast<T*>(grad_x1);
        const T p = static_cast<T>(a.p);
        const int64_t m = a.m, r2 = a.r2;
        for (int64_t q = q0; q < q1; ++q) {  // q = b * r1 + i
          T* out = res + q * m;
          std::fill(out, out + m, T(0));
          if constexpr (N == Norm::kZero) continue;
          const T* xi = t1 + q * m;
          const T* x2b = t2 + (q / a.r1) * r2 * m;
          for (int64_t j = 0; j < r2; ++j) {
            const T gk = g[q * r2 + j], dk = dd[q * r2 + j];
            const T* xj = x2b + j * m;
            for (int64_t x = 0; x < m; ++x) out[x] = out[x] + grad_term<N, T>(xi[x] - xj[x], gk, dk, p);
          }
        }
        // Launch records: the block's x1 rows, grad and dist rows, the x2 rows of their batches (at most once each),
        // the gradient rows written.
        const int64_t es = static_cast<int64_t>(sizeof(T)), n = q1 - q0;
        const int64_t batches = (q1 - 1) / a.r1 - q0 / a.r1 + 1;
        detail::record_vec(ctx, (n * m + 2 * n * r2 + std::min(n * r2, batches * r2) * m) * es, n * m * es,
                           n * r2 * m * grad_flops(N));
      });
    });
  });
}

Status pdist_forward(npu_sim::Stream stream, const PdistArgs& a, const void* x, void* out) {
  if (!valid(a.n, a.m, 0, 0, a.p)) return Status::kInvalidValue;
  const int64_t pairs = pdist_pairs(a.n);
  if (pairs == 0) return Status::kSuccess;
  if (!out || (a.m > 0 && !x)) return Status::kInvalidValue;
  return with_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T p = static_cast<T>(a.p);
    return with_norm(forward_norm(p), [&](auto norm) {
      constexpr Norm N = decltype(norm)::value;
      return parallel_for(stream, "pdist_forward", pairs, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, a.m)),
                          [=](int64_t k0, int64_t k1, const npu_sim::BlockContext& ctx) {
        const T* xs = static_cast<const T*>(x);
        T* res = static_cast<T*>(out);
        const int64_t n = a.n, m = a.m;
        int64_t i = pair_row(k0, n);
        int64_t j = k0 - pair_start(i, n) + i + 1;
        for (int64_t k = k0; k < k1; ++k) {
          res[k] = distance<N, true, T>(xs + i * m, xs + j * m, m, p);
          if (++j == n) {
            ++i;
            j = i + 1;
          }
        }
        // Launch records: at most every row once per block (the block streams rows i and j), outputs written.
        const int64_t es = static_cast<int64_t>(sizeof(T)), cnt = k1 - k0;
        detail::record_vec(ctx, std::min(2 * cnt, n) * m * es, cnt * es, cnt * (m * map_flops(N) + 1));
      });
    });
  });
}

Status pdist_backward(npu_sim::Stream stream, const PdistArgs& a, const void* grad, const void* x, const void* dist,
                      void* grad_x) {
  if (!valid(a.n, a.m, 0, 0, a.p)) return Status::kInvalidValue;
  if (a.n == 0 || a.m == 0) return Status::kSuccess;
  if (!grad_x || !x || (a.n > 1 && (!grad || !dist))) return Status::kInvalidValue;
  return with_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    return with_norm(backward_norm(a.p), [&](auto norm) {
      constexpr Norm N = decltype(norm)::value;
      const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, a.n * a.m));
      return parallel_for(stream, "pdist_backward", a.n, grain,
                          [=](int64_t r0, int64_t r1, const npu_sim::BlockContext& ctx) {
        const T* xs = static_cast<const T*>(x);
        const T* g = static_cast<const T*>(grad);
        const T* dd = static_cast<const T*>(dist);
        T* res = static_cast<T*>(grad_x);
        const T p = static_cast<T>(a.p);
        const int64_t n = a.n, m = a.m;
        for (int64_t r = r0; r < r1; ++r) {
          T* out = res + r * m;
          std::fill(out, out + m, T(0));
          if constexpr (N == Norm::kZero) continue;
          const T* xr = xs + r * m;
          for (int64_t i = 0; i < r; ++i) {  // pairs (i, r): CPU subtracts them while it walks row i
            const int64_t k = pair_start(i, n) + (r - i - 1);
            const T* xi = xs + i * m;
            for (int64_t c = 0; c < m; ++c) out[c] = out[c] - grad_term<N, T>(xi[c] - xr[c], g[k], dd[k], p);
          }
          const int64_t k0 = pair_start(r, n) - r - 1;
          for (int64_t j = r + 1; j < n; ++j) {  // pairs (r, j): then adds them when it walks row r
            const T* xj = xs + j * m;
            for (int64_t c = 0; c < m; ++c) out[c] = out[c] + grad_term<N, T>(xr[c] - xj[c], g[k0 + j], dd[k0 + j], p);
          }
        }
        // Launch records: every row of x and each row's n - 1 grad and dist entries read, the block's rows written.
        const int64_t es = static_cast<int64_t>(sizeof(T)), cnt = r1 - r0;
        detail::record_vec(ctx, (n * m + 2 * cnt * (n - 1)) * es, cnt * m * es, cnt * (n - 1) * m * grad_flops(N));
      });
    });
  });
}

}  // namespace npu_kernels
