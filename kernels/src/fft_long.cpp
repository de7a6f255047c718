// Long FFT lines by the four-step split (see fft_long.h). For z of M = M1 * M2 points, z[M2 n1 + n2]:
//   columns: A[k1][n2] = sum_n1 z[M2 n1 + n2] w_M1^(n1 k1) * w_M^(k1 n2)        (M2 transforms of M1 points)
//   rows:    X[k1 + M1 k2] = sum_n2 A[k1][n2] w_M2^(n2 k2)                       (M1 transforms of M2 points)
// The real transforms of n = 2M points run the complex one of M points: R2C reads the signal as M complex pairs
// and untangles the even and odd halves after; C2R tangles them before and splits the pairs after.
#include "fft_long.h"

#include <pocketfft_hdronly.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <map>
#include <memory>
#include <mutex>

#include "fft_lanes.h"
#include "npu_kernels/launch.h"

namespace npu_kernels::fft::detail {
namespace {

using npu_sim::Status;

constexpr int64_t kMinPoints = int64_t{1} << 15;  // shorter lines stay in cache as one pocketfft call
constexpr std::size_t kMaxTableBytes = std::size_t{32} << 20;  // one length's tables; longer lines stay whole
constexpr std::size_t kMaxCachedBytes = std::size_t{64} << 20;  // all lengths' tables together
constexpr int64_t kGroup = 16;                    // pocketfft's across-lines SIMD width (float, AVX-512)

// The twiddles of an M-point split, as (re, im) pairs of R from double angles: the grid
// w_M^(k1 n2) row-major M1 x M2 (the columns step multiplies row k1 of its block by row k1 here: a contiguous,
// vectorised complex product), and the half turn w_2M^k for k in [0, M] (the real kinds' untangling). Built
// once per M and R and cached (4 M sizeof(R) bytes; at most kMaxTableBytes, and the cache is emptied when the
// lengths it holds pass kMaxCachedBytes). A running product w *= step was a
// latency-bound chain (~16 cycles a point) that drifted; std::complex<double> tables were repacked through the
// stack (a store-forwarding stall per twiddle).
template <class R>
struct Tables {
  std::vector<R> grid, turn;
};

template <class R>
struct Plan {
  int64_t M = 0, M1 = 0, M2 = 0;
  std::shared_ptr<const Tables<R>> tw;
};

template <class R>
std::size_t table_bytes(int64_t M) {
  return 4 * static_cast<std::size_t>(M + 1) * sizeof(R);
}

template <class R>
std::shared_ptr<const Tables<R>> tables_of(const Plan<R>& p) {
  static std::mutex mu;
  static std::map<int64_t, std::shared_ptr<const Tables<R>>> cache;  // guarded by mu; a few lengths in practice
  static std::size_t cached_bytes = 0;                                   // guarded by mu
  std::lock_guard<std::mutex> lock(mu);
  if (cache.count(p.M) == 0 && cached_bytes + table_bytes<R>(p.M) > kMaxCachedBytes) {
    cache.clear();  // launches in flight hold their tables
    cached_bytes = 0;
  }
  auto& slot = cache[p.M];
  if (!slot) {
    cached_bytes += table_bytes<R>(p.M);
    auto t = std::make_shared<Tables<R>>();
    const double unit = -2.0 * M_PI / static_cast<double>(p.M);
    t->grid.resize(static_cast<std::size_t>(2 * p.M));
    for (int64_t k1 = 0; k1 < p.M1; ++k1) {
      for (int64_t n2 = 0; n2 < p.M2; ++n2) {
        const double a = unit * static_cast<double>((k1 * n2) % p.M);
        t->grid[static_cast<std::size_t>(2 * (k1 * p.M2 + n2))] = static_cast<R>(std::cos(a));
        t->grid[static_cast<std::size_t>(2 * (k1 * p.M2 + n2) + 1)] = static_cast<R>(std::sin(a));
      }
    }
    t->turn.resize(static_cast<std::size_t>(2 * (p.M + 1)));
    for (int64_t k = 0; k <= p.M; ++k) {
      const double a = 0.5 * unit * static_cast<double>(k);
      t->turn[static_cast<std::size_t>(2 * k)] = static_cast<R>(std::cos(a));
      t->turn[static_cast<std::size_t>(2 * k + 1)] = static_cast<R>(std::sin(a));
    }
    slot = std::move(t);
  }
  return slot;
}

// M1 the largest divisor of M at most sqrt(M); none if M1 < 64 (a long prime-ish factor would make the rows
// transform as long as the whole, for nothing).
template <class R = float>
Plan<R> plan_of(int64_t M) {
  Plan<R> p;
  for (int64_t d = static_cast<int64_t>(std::sqrt(static_cast<double>(M))); d >= 64; --d) {
    if (M % d == 0) {
      p.M = M, p.M1 = d, p.M2 = M / d;
      return p;
    }
  }
  return p;
}

int64_t complex_points(Kind kind, int64_t n) { return kind == Kind::kC2C ? n : (n % 2 == 0 ? n / 2 : 0); }

// Complex products by hand: std::complex's operator* follows C's Annex G (inf / NaN recovery), a __mulsc3 call
// per product.
template <class R>
inline std::complex<R> mul(std::complex<R> a, std::complex<R> b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

// v[j] *= w[j] (conj(w[j]) when sign > 0) for j < count; w as (re, im) pairs.
template <class R>
void rotate(std::complex<R>* v, const R* w, int64_t count, int sign) {
  R* a = reinterpret_cast<R*>(v);
  const R s = sign < 0 ? R(1) : R(-1);
  for (int64_t j = 0; j < count; ++j) {
    const R ar = a[2 * j], ai = a[2 * j + 1], wr = w[2 * j], wi = s * w[2 * j + 1];
    a[2 * j] = ar * wr - ai * wi;
    a[2 * j + 1] = ar * wi + ai * wr;
  }
}

// Columns [c0, c1) of A (M1 x M2, row-major) from z (stride zs): the transforms down the columns, then the twiddle.
template <class R, class C = std::complex<R>>
void columns(const Plan<R>& p, bool forward, const C* z, int64_t zs, C* A, int64_t c0, int64_t c1) {
  const auto cs = static_cast<std::ptrdiff_t>(sizeof(C));
  if (std::is_same_v<R, float> && lanes_apply(DType::kComplex64, Kind::kC2C, p.M1)) {
    run_lanes_grid(forward, 1.0f, p.M1, c1 - c0, z + c0 * zs, zs, p.M2 * zs, A + c0, 1, p.M2);
  } else {
    pocketfft::c2c<R>({static_cast<size_t>(p.M1), static_cast<size_t>(c1 - c0)}, {p.M2 * zs * cs, zs * cs},
                      {p.M2 * cs, cs}, {0}, forward, z + c0 * zs, A + c0, R(1), 1);
  }
  const R* grid = p.tw->grid.data();
  for (int64_t k1 = 1; k1 < p.M1; ++k1) {
    rotate(A + k1 * p.M2 + c0, grid + 2 * (k1 * p.M2 + c0), c1 - c0, forward ? -1 : 1);
  }
}

// Rows [r0, r1) of A transformed along the rows into X[k1 + M1 k2] (X stride xs), times fct.
template <class R, class C = std::complex<R>>
void rows(const Plan<R>& p, bool forward, const C* A, C* X, int64_t xs, int64_t r0, int64_t r1, R fct) {
  const auto cs = static_cast<std::ptrdiff_t>(sizeof(C));
  if (std::is_same_v<R, float> && lanes_apply(DType::kComplex64, Kind::kC2C, p.M2)) {
    run_lanes_grid(forward, static_cast<float>(fct), p.M2, r1 - r0, A + r0 * p.M2, p.M2, 1, X + r0 * xs, xs,
                   p.M1 * xs);
  } else {
    pocketfft::c2c<R>({static_cast<size_t>(r1 - r0), static_cast<size_t>(p.M2)}, {p.M2 * cs, cs},
                      {xs * cs, p.M1 * xs * cs}, {1}, forward, A + r0 * p.M2, X + r0 * xs, fct, 1);
  }
}

// R2C, bins [k0, k1) of the n = 2M point spectrum (k <= M) from the M-point transform Zt of the pairs:
// X[k] = E + w_n^k O, E = (Zt[k] + conj Zt[M-k]) / 2, O = -i (Zt[k] - conj Zt[M-k]) / 2.
template <class R, class C = std::complex<R>>
void untangle(const Plan<R>& p, const C* Zt, C* X, int64_t xs, int64_t k0, int64_t k1, R fct) {
  const int64_t M = p.M;
  const R* turn = p.tw->turn.data();
  auto bin = [&](int64_t k, C a, C b) {
    const C e = R(0.5) * (a + b), h = R(0.5) * (a - b), o(h.imag(), -h.real());  // o = -i (a - b) / 2
    X[k * xs] = fct * (e + mul(C(turn[2 * k], turn[2 * k + 1]), o));
  };
  // k = 0 and k = M pair Zt[0] with itself; between them Zt[k] with Zt[M - k] (a loop without index wrapping)
  if (k0 == 0) bin(0, Zt[0], std::conj(Zt[0]));
  for (int64_t k = std::max<int64_t>(k0, 1); k < std::min(k1, M); ++k) bin(k, Zt[k], std::conj(Zt[M - k]));
  if (k1 == M + 1) bin(M, Zt[0], std::conj(Zt[0]));
}

// C2R, the M-point sequence whose inverse transform holds the output's (even, odd) samples as complex pairs:
// Zt[k] = E + i O, E = X[k] + conj X[M-k], O = (X[k] - conj X[M-k]) w_n^-k, for k in [k0, k1) < M. The
// imaginary parts of X[0] and X[M] are ignored, as pocketfft's c2r (and a Hermitian spectrum) has them.
template <class R, class C = std::complex<R>>
void tangle(const Plan<R>& p, const C* X, int64_t xs, C* Zt, int64_t k0, int64_t k1) {
  const int64_t M = p.M;
  for (int64_t k = k0; k < k1; ++k) {
    C a = X[k * xs], b = std::conj(X[(M - k) * xs]);
    if (k == 0) a = C(a.real(), R(0)), b = C(b.real(), R(0));
    const C w(p.tw->turn[static_cast<std::size_t>(2 * k)], -p.tw->turn[static_cast<std::size_t>(2 * k + 1)]);
    const C e = a + b, o = mul(a - b, w);
    Zt[k] = e + C(-o.imag(), o.real());  // e + i o
  }
}

// C2R: the complex pairs [m0, m1) of z to the real output (stride xs), times fct.
template <class R, class C = std::complex<R>>
void split_pairs(const C* z, R* x, int64_t xs, int64_t m0, int64_t m1, R fct) {
  for (int64_t m = m0; m < m1; ++m) {
    x[2 * m * xs] = z[m].real() * fct;
    x[(2 * m + 1) * xs] = z[m].imag() * fct;
  }
}

// Work of one line's steps in the launch records: the columns and the rows each read and write the line once;
// 5 M log2 (length) real flops for each; the untangling reads and writes it once more, ~10 flops a point.
uint64_t step_flops(int64_t count, int64_t length) {
  return static_cast<uint64_t>(5.0 * static_cast<double>(count) * std::log2(static_cast<double>(length)));
}

// The whole of one line, serially (a block of the batched launch): in -> out, with the two M-point buffers.
template <class R, class C = std::complex<R>>
void one_line(const LongLines& l, const Plan<R>& p, const void* in, void* out, C* A, C* B) {
  const R fct = static_cast<R>(l.scale);
  switch (l.kind) {
    case Kind::kC2C:
      columns(p, l.forward, static_cast<const C*>(in), l.in_stride, A, 0, p.M2);
      rows(p, l.forward, A, static_cast<C*>(out), l.out_stride, 0, p.M1, fct);
      break;
    case Kind::kR2C:
      columns(p, true, static_cast<const C*>(in), 1, A, 0, p.M2);
      rows(p, true, A, B, 1, 0, p.M1, R(1));
      untangle(p, B, static_cast<C*>(out), l.out_stride, 0, p.M + 1, fct);
      break;
    case Kind::kC2R:
      tangle(p, static_cast<const C*>(in), l.in_stride, B, 0, p.M);
      columns(p, false, B, 1, A, 0, p.M2);
      rows(p, false, A, B, 1, 0, p.M1, R(1));
      split_pairs(B, static_cast<R*>(out), l.out_stride, 0, p.M, fct);
      break;
  }
}

// Several lines: one launch, each block whole lines with its own thread's buffers.
template <class R, class C = std::complex<R>>
Status launch_batched(npu_sim::Stream s, std::shared_ptr<const LongLines> l, const Plan<R>& p) {
  const int64_t count = static_cast<int64_t>(l->in_offsets.size());
  const char* name = l->kind == Kind::kR2C ? "fft_r2c" : (l->kind == Kind::kC2R ? "fft_c2r" : "fft_c2c");
  return parallel_for(s, name, count, 1, [l, p](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
    thread_local std::vector<C> buffers;  // the core thread's UB stand-in: 2 M points, reused across launches
    buffers.resize(static_cast<std::size_t>(2 * p.M));
    for (int64_t i = b; i < e; ++i) {
      const char* in = static_cast<const char*>(l->in) + l->in_offsets[i] * in_size<R>(l->kind);
      char* out = static_cast<char*>(l->out) + l->out_offsets[i] * out_size<R>(l->kind);
      one_line(*l, p, in, out, buffers.data(), buffers.data() + p.M);
    }
    if (buffers.size() * sizeof(C) > kKeptThreadBufferBytes) std::vector<C>().swap(buffers);
    const auto lines = static_cast<uint64_t>(e - b);
    const uint64_t bytes = lines * static_cast<uint64_t>(p.M) * sizeof(C);
    npu_sim::record_traffic(ctx, bytes, bytes, 0, lines * (step_flops(p.M, p.M) + 10 * static_cast<uint64_t>(p.M)));
  });
}

// The split path's two M-point buffers, held by its launches until the last one finishes, then kept for the next
// call: a fresh 8 MB allocation (2^20 real points) is fresh pages, and faulting them in cost 1-3 ms a call, as
// much as the transform. At most kKept buffers of at most kKeptBytes are kept, each reused for any request it is
// large enough for.
template <class C>
std::shared_ptr<C> scratch_buffer(std::size_t count) {
  struct Pool {
    std::mutex mu;
    std::vector<std::unique_ptr<std::vector<C>>> free;  // guarded by mu
  };
  static Pool* pool = new Pool;  // never destroyed: a launch may still return a buffer at exit
  constexpr std::size_t kKept = 2, kKeptBytes = std::size_t{16} << 20;
  std::unique_ptr<std::vector<C>> buf;
  {
    std::lock_guard<std::mutex> lock(pool->mu);
    for (auto& f : pool->free) {
      if (f->size() >= count) {
        buf = std::move(f);
        f = std::move(pool->free.back());
        pool->free.pop_back();
        break;
      }
    }
  }
  if (!buf) buf = std::make_unique<std::vector<C>>(count);
  std::vector<C>* raw = buf.release();
  return std::shared_ptr<C>(raw->data(), [raw](C*) {
    std::unique_ptr<std::vector<C>> back(raw);
    std::lock_guard<std::mutex> lock(pool->mu);
    if (pool->free.size() < kKept && back->size() * sizeof(C) <= kKeptBytes) pool->free.push_back(std::move(back));
  });
}

// One line: each step a launch over the cores, in stream order (the barrier between them). Columns and rows go
// in groups of kGroup, pocketfft's SIMD width across lines.
template <class R, class C = std::complex<R>>
Status launch_split(npu_sim::Stream s, std::shared_ptr<const LongLines> l, const Plan<R>& p) {
  auto scratch = scratch_buffer<C>(static_cast<std::size_t>(l->kind == Kind::kC2C ? p.M : 2 * p.M));
  C* A = scratch.get();
  C* B = l->kind == Kind::kC2C ? nullptr : A + p.M;
  const auto* in = static_cast<const char*>(l->in) + l->in_offsets[0] * in_size<R>(l->kind);
  auto* out = static_cast<char*>(l->out) + l->out_offsets[0] * out_size<R>(l->kind);
  const bool fwd = l->kind == Kind::kC2R ? false : l->forward;
  const R fct = static_cast<R>(l->scale);
  const int64_t col_groups = (p.M2 + kGroup - 1) / kGroup, row_groups = (p.M1 + kGroup - 1) / kGroup;
  const uint64_t point = sizeof(C);
  Status st = Status::kSuccess;
  auto then = [&st](Status next) {
    if (st == Status::kSuccess) st = next;
  };
  // C2R first tangles the half spectrum into B, which the columns then read
  const C* z = l->kind == Kind::kC2R ? B : reinterpret_cast<const C*>(in);
  const int64_t zs = l->kind == Kind::kC2C ? l->in_stride : 1;
  if (l->kind == Kind::kC2R) {
    then(parallel_for(s, "fft_c2r_tangle", p.M, 4096,
                      [scratch, p, in, B, xs = l->in_stride](int64_t k0, int64_t k1, const npu_sim::BlockContext& ctx) {
                        tangle(p, reinterpret_cast<const C*>(in), xs, B, k0, k1);
                        npu_sim::record_traffic(ctx, 2 * (k1 - k0) * point, (k1 - k0) * point, 0, 12 * (k1 - k0));
                      }));
  }
  then(parallel_for(s, "fft_four_step_columns", col_groups, 1,
                    [scratch, p, fwd, z, zs, A](int64_t g0, int64_t g1, const npu_sim::BlockContext& ctx) {
                      const int64_t c0 = g0 * kGroup, c1 = std::min(g1 * kGroup, p.M2);
                      columns(p, fwd, z, zs, A, c0, c1);
                      const auto pts = static_cast<uint64_t>(p.M1 * (c1 - c0));
                      npu_sim::record_traffic(ctx, pts * point, pts * point, 0,
                                              step_flops(p.M1 * (c1 - c0), p.M1) + 6 * pts);
                    }));
  // the rows write the transposed result: the output itself (C2C) or B (the real transforms' last step reads it)
  C* X = l->kind == Kind::kC2C ? reinterpret_cast<C*>(out) : B;
  const int64_t xs = l->kind == Kind::kC2C ? l->out_stride : 1;
  const R row_fct = l->kind == Kind::kC2C ? fct : R(1);
  then(parallel_for(s, "fft_four_step_rows", row_groups, 1,
                    [scratch, p, fwd, A, X, xs, row_fct](int64_t g0, int64_t g1, const npu_sim::BlockContext& ctx) {
                      const int64_t r0 = g0 * kGroup, r1 = std::min(g1 * kGroup, p.M1);
                      rows(p, fwd, A, X, xs, r0, r1, row_fct);
                      const auto pts = static_cast<uint64_t>(p.M2 * (r1 - r0));
                      npu_sim::record_traffic(ctx, pts * point, pts * point, 0, step_flops(p.M2 * (r1 - r0), p.M2));
                    }));
  if (l->kind == Kind::kR2C) {
    then(parallel_for(s, "fft_r2c_untangle", p.M + 1, 4096,
                      [scratch, p, B, out, xs = l->out_stride, fct](int64_t k0, int64_t k1,
                                                                     const npu_sim::BlockContext& ctx) {
                        untangle(p, B, reinterpret_cast<C*>(out), xs, k0, k1, fct);
                        npu_sim::record_traffic(ctx, 2 * (k1 - k0) * point, (k1 - k0) * point, 0, 12 * (k1 - k0));
                      }));
  } else if (l->kind == Kind::kC2R) {
    then(parallel_for(s, "fft_c2r_split", p.M, 8192,
                      [scratch, B, out, xs = l->out_stride, fct](int64_t m0, int64_t m1,
                                                                  const npu_sim::BlockContext& ctx) {
                        split_pairs(B, reinterpret_cast<R*>(out), xs, m0, m1, fct);
                        npu_sim::record_traffic(ctx, (m1 - m0) * point, (m1 - m0) * point, 0, 2 * (m1 - m0));
                      }));
  }
  return st;
}

}  // namespace

bool four_step_applies(DType dt, Kind kind, bool forward, int64_t n, int64_t in_stride) {
  if (dt != DType::kComplex64 && dt != DType::kComplex128) return false;
  if (kind == Kind::kR2C && (!forward || in_stride != 1)) return false;
  const int64_t M = complex_points(kind, n);
  const std::size_t bytes = dt == DType::kComplex64 ? table_bytes<float>(M) : table_bytes<double>(M);
  return M >= kMinPoints && bytes <= kMaxTableBytes && plan_of(M).M1 > 0;
}

Status launch_four_step(npu_sim::Stream s, DType dt, LongLines lines) {
  if (lines.in_offsets.empty() || lines.in_offsets.size() != lines.out_offsets.size()) return Status::kInvalidValue;
  auto go = [&](auto real) {
    using R = decltype(real);
    Plan<R> p = plan_of<R>(complex_points(lines.kind, lines.n));
    if (p.M1 == 0) return Status::kInvalidValue;
    p.tw = tables_of(p);
    auto l = std::make_shared<const LongLines>(std::move(lines));
    if (l->in_offsets.size() == 1) return launch_split(s, std::move(l), p);
    return launch_batched(s, std::move(l), p);
  };
  return dt == DType::kComplex128 ? go(double{}) : go(float{});
}

}  // namespace npu_kernels::fft::detail
