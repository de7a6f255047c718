// The reduction engine (see reduce.h): reducers (state, run over a strided run, merge, write) and the
// three work splits (per output, tiles of outputs along memory, two-phase split of the reduced range).
#include "npu_kernels/reduce.h"

#include <algorithm>
#include <cstring>
#include <cmath>
#include <complex>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "dtype_convert.h"  // branch-free fp16 <-> fp32 in registers
#include "npu_kernels/vec16.h"
#include "npu_kernels/launch.h"
#include "real_dispatch.h"
#include "traffic.h"

namespace npu_kernels {

const char* reduce_op_name(ReduceOp op) {
  static const char* const names[] = {"sum", "mean", "prod", "max", "min", "argmax", "argmin", "max_dim", "min_dim",
                                      "var", "std", "all", "any", "norm", "logsumexp", "nansum", "count_nonzero"};
  return names[static_cast<int>(op)];
}

int64_t ReduceDesc::outputs() const {
  int64_t n = 1;
  for (int d = 0; d < n_outer; ++d) n *= outer_sizes[d];
  return n;
}
int64_t ReduceDesc::reduced() const {
  int64_t n = 1;
  for (int d = 0; d < n_red; ++d) n *= red_sizes[d];
  return n;
}

namespace {

// Accumulation type: double for double, float for float/half/bfloat16, the type itself for complex, int64 for
// integers and bool.
template <typename T>
using acc_t = std::conditional_t<
    std::is_same_v<T, double> || is_complex_v<T>, T,
    std::conditional_t<std::is_same_v<T, float> || is_reduced_float_v<T>, float, int64_t>>;

// The mean of nothing.
template <typename A>
A nan_of() {
  if constexpr (is_complex_v<A>) {
    constexpr auto nan = std::numeric_limits<typename A::value_type>::quiet_NaN();
    return A(nan, nan);
  } else {
    return std::numeric_limits<A>::quiet_NaN();
  }
}

template <typename T>
inline acc_t<T> ld(const T* p) {
  if constexpr (std::is_same_v<T, Half>) return detail::half_bits_to_float(p->bits);  // no libcall, vectorises
  else if constexpr (is_reduced_float_v<T>)
    return static_cast<float>(*p);
  else return static_cast<acc_t<T>>(*p);
}

template <typename A>
inline bool isnan_(A x) {
  if constexpr (std::is_floating_point_v<A>) return x != x;
  else return false;
}

template <typename O, typename A>
inline void store(void* base, int64_t off, A v) {
  static_cast<O*>(base)[off] = convert<O>(v);
}

// ---- reducers: S state; init(); run(S&, p, n, stride, r0); merge(S&, const S&); write(...) ----

// Sum of f(x) over n contiguous values (f: identity, |x|, x^2) in 32 accumulator lanes, in acc_t: four
// independent vector adds per step (one 8-lane chain was bound by the add latency: fp16 sum 16M 3.7 -> ms, see
// benchmarks.md; the 2-norm of 1024-element rows 1.8x CPU's time with 8 lanes). fp32 accumulation (float, fp16,
// bf16) holds the lanes in two 16-lane vectors, lanes 0-15 and 16-31, loaded and widened in registers; as a lane
// array, GCC zeroed and folded them through the stack for every call, which cost a 256-element row's sum more than
// its loads. The fold is the same pairwise one either way (a0 + a1 is its w = 16 step, hsum16 the rest).
struct Identity {
  template <typename X>
  X operator()(X x) const { return x; }
};
struct Abs {
  template <typename X>
  X operator()(X x) const {
    if constexpr (std::is_floating_point_v<X>) return std::fabs(x);
    else return detail::abs16(x);
  }
};
struct Square {
  template <typename X>
  X operator()(X x) const { return x * x; }
};
template <typename T, class F = Identity>
inline acc_t<T> sum_lanes(const T* q, int64_t m, F f = {}) {
  using A = acc_t<T>;
  constexpr int kLanes = 32;
  if constexpr (std::is_same_v<A, float>) {
    detail::v16sf a0 = detail::splat16(0.0f), a1 = a0;
    int64_t i = 0;
    for (; i + kLanes <= m; i += kLanes) {
      a0 += f(detail::load16(q + i));
      a1 += f(detail::load16(q + i + 16));
    }
    float t = detail::hsum16(a0 + a1);
    for (; i < m; ++i) t += f(ld(q + i));
    return t;
  } else {
    A lanes[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= m; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) lanes[j] += f(ld(q + i + j));
    }
    for (int w = kLanes / 2; w >= 1; w /= 2)  // pairwise
      for (int j = 0; j < w; ++j) lanes[j] += lanes[j + w];
    A t = lanes[0];
    for (; i < m; ++i) t += f(ld(q + i));
    return t;
  }
}

// sum_lanes per 2048-element chunk, the chunks' sums added into s (bounded rounding growth).
template <typename T, typename A, class F = Identity>
inline void sum_chunks(A& s, const T* q, int64_t n, F f = {}) {
  constexpr int64_t kChunk = 2048;
  for (int64_t c = 0; c < n; c += kChunk) s += sum_lanes(q + c, std::min(kChunk, n - c), f);
}

template <typename T, bool kMean, typename O = T>  // O: the output's type (acc_t<T> for a widened output)
struct SumR {
  using A = acc_t<T>;
  using S = A;
  S init() const { return A(0); }
  void run(S& s, const T* p, int64_t n, int64_t stride, int64_t) const {
    if (stride == 1) {
      sum_chunks(s, p, n);  // 32 lanes per 2048-element chunk, the chunks into the state (bounded rounding growth)
    } else {
      for (int64_t i = 0; i < n; ++i) s += ld(p + i * stride);
    }
  }
  void step(S& s, const T* p, int64_t) const { s += ld(p); }
  void merge(S& a, const S& b) const { a += b; }
  void write(const ReduceDesc& d, const int64_t* off, const S& s, int64_t r) const {
    if constexpr (kMean) store<O>(d.out[0], off[0], r > 0 ? s / static_cast<A>(r) : nan_of<A>());
    else store<O>(d.out[0], off[0], s);
  }
};

template <typename T>
struct ProdR {
  using A = acc_t<T>;
  using S = A;
  S init() const { return A(1); }
  void run(S& s, const T* p, int64_t n, int64_t stride, int64_t) const {
    for (int64_t i = 0; i < n; ++i) s *= ld(p + i * stride);
  }
  void step(S& s, const T* p, int64_t) const { s *= ld(p); }
  void merge(S& a, const S& b) const { a *= b; }
  void write(const ReduceDesc& d, const int64_t* off, const S& s, int64_t) const { store<T>(d.out[0], off[0], s); }
};

// Max/min of n (a multiple of 32, >= 32) contiguous floats, or of their absolute values (kAbs), in four
// 8-wide vectors (GCC/Clang vector extensions; the scalar-lane form does not vectorise): four independent
// compare-selects per step (two 4-wide chains were bound by their latency: amax of 1024-element rows took
// 2-4x CPU's time). *nan is set when any element is NaN.
typedef float v8sf __attribute__((vector_size(32)));
typedef int v8si __attribute__((vector_size(32)));
template <bool kMax, bool kAbs = false>
inline float extreme_f32(const float* p, int64_t n, bool* nan) {
  constexpr int kVecs = 4;
  const auto load = [p](int64_t i) {
    v8sf x;
    std::memcpy(&x, p + i, sizeof(x));
    if constexpr (kAbs) x = reinterpret_cast<v8sf>(reinterpret_cast<v8si>(x) & 0x7fffffff);
    return x;
  };
  v8sf acc[kVecs];
  v8si bad[kVecs];
  for (int k = 0; k < kVecs; ++k) {
    acc[k] = load(8 * k);
    bad[k] = acc[k] != acc[k];
  }
  for (int64_t i = 8 * kVecs; i < n; i += 8 * kVecs) {
    for (int k = 0; k < kVecs; ++k) {
      const v8sf x = load(i + 8 * k);
      if constexpr (kMax) acc[k] = x > acc[k] ? x : acc[k];
      else acc[k] = x < acc[k] ? x : acc[k];
      bad[k] |= x != x;
    }
  }
  v8sf m = acc[0];  // fold the vectors, then the lanes, without branches
  v8si b = bad[0];
  for (int k = 1; k < kVecs; ++k) {
    if constexpr (kMax) m = acc[k] > m ? acc[k] : m;
    else m = acc[k] < m ? acc[k] : m;
    b |= bad[k];
  }
  float r = m[0];
  int any_nan = b[0];
  for (int j = 1; j < 8; ++j) {
    if constexpr (kMax) r = m[j] > r ? m[j] : r;
    else r = m[j] < r ? m[j] : r;
    any_nan |= b[j];
  }
  *nan = any_nan != 0;
  return r;
}

// max/min values (NaN propagates). The state is the value alone, from the identity (-inf / +inf, the type's
// lowest / highest): a branch-free step, so a tile of column states vectorises (with a seen-flag beside each
// value, amax over dim 0 ran 2.7-4x CPU's time). Reductions are never empty here (the adapter raises first).
template <typename T, bool kMax>
struct ExtremeR {
  using A = acc_t<T>;
  using S = A;
  S init() const {
    if constexpr (std::is_floating_point_v<A>) {
      return kMax ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
    } else {
      return kMax ? std::numeric_limits<A>::lowest() : std::numeric_limits<A>::max();
    }
  }
  // x replaces s when it is more extreme or NaN, unless s is already NaN
  static A pick(A x, A s) {
    if constexpr (std::is_floating_point_v<A>) return s == s && ((kMax ? x > s : x < s) || x != x) ? x : s;
    else return (kMax ? x > s : x < s) ? x : s;
  }
  void step(S& s, const T* p, int64_t) const { s = pick(ld(p), s); }
  void run(S& s, const T* p, int64_t n, int64_t stride, int64_t r0) const {
    if constexpr (std::is_same_v<T, float>) {
      if (stride == 1 && n >= 32) {
        const int64_t n32 = n / 32 * 32;
        bool nan = false;
        S r = extreme_f32<kMax>(p, n32, &nan);
        if (nan) r = std::numeric_limits<float>::quiet_NaN();
        for (int64_t i = n32; i < n; ++i) step(r, p + i, r0 + i);
        merge(s, r);
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) step(s, p + i * stride, r0 + i);
  }
  void merge(S& a, const S& b) const { a = pick(b, a); }
  void write(const ReduceDesc& d, const int64_t* off, const S& s, int64_t) const { store<T>(d.out[0], off[0], s); }
};

// value + first index of the max/min (NaN counts as the extreme). kMode: 0 index only, 1 value + index.
template <typename T, bool kMax, int kMode>
struct ArgR {
  using A = acc_t<T>;
  struct S {
    A v;
    int64_t i;
  };
  S init() const { return {A(0), -1}; }
  static bool better(A x, A v) {
    if constexpr (kMax) return x > v || (isnan_(x) && !isnan_(v));
    else return x < v || (isnan_(x) && !isnan_(v));
  }
  void step(S& s, const T* p, int64_t r) const {
    const A x = ld(p);
    if (s.i < 0 || better(x, s.v)) s = {x, r};
  }
  void run(S& s, const T* p, int64_t n, int64_t stride, int64_t r0) const {
    for (int64_t i = 0; i < n; ++i) step(s, p + i * stride, r0 + i);
  }
  void merge(S& a, const S& b) const {
    if (b.i >= 0 && (a.i < 0 || better(b.v, a.v))) a = b;
  }
  void write(const ReduceDesc& d, const int64_t* off, const S& s, int64_t) const {
    if constexpr (kMode == 0) {
      static_cast<int64_t*>(d.out[0])[off[0]] = std::max<int64_t>(s.i, 0);
    } else {
      store<T>(d.out[0], off[0], s.v);
      static_cast<int64_t*>(d.out[1])[off[1]] = std::max<int64_t>(s.i, 0);
    }
  }
};

// Moments (count, mean, M2): two-pass per run, Chan's merge.
template <typename T, bool kStd>
struct VarR {
  using A = acc_t<T>;
  struct S {
    A n, mean, m2;
  };
  double correction;
  S init() const { return {A(0), A(0), A(0)}; }
  static void combine(S& a, A nb, A mb, A m2b) {
    if (nb == A(0)) return;
    const A n = a.n + nb;
    const A delta = mb - a.mean;
    a.mean += delta * nb / n;
    a.m2 += m2b + delta * delta * a.n * nb / n;
    a.n = n;
  }
  void step(S& s, const T* p, int64_t) const {
    const A x = ld(p);
    s.n += A(1);
    const A delta = x - s.mean;
    s.mean += delta / s.n;
    s.m2 += delta * (x - s.mean);
  }
  void run(S& s, const T* p, int64_t n, int64_t stride, int64_t) const {
    // chunks of 1024: two passes over cached data, bounded rounding growth, merged with Chan's formula
    constexpr int64_t kChunk = 1024;
    for (int64_t c = 0; c < n; c += kChunk) chunk(s, p + c * stride, std::min(kChunk, n - c), stride);
  }
  // (x - mean)^2, on a scalar or on sum_lanes' 16 lanes
  struct SquaredDeviation {
    A mean;
    template <typename X>
    X operator()(X x) const {
      const X d = x - mean;
      return d * d;
    }
  };
  void chunk(S& s, const T* p, int64_t n, int64_t stride) const {
    A sum = 0, m2 = 0;
    if (stride == 1) {  // in sum_lanes' 32 lanes: a scalar chain was bound by the add latency (var of 16M 1.5x CPU's)
      sum = sum_lanes(p, n);
      m2 = sum_lanes(p, n, SquaredDeviation{sum / static_cast<A>(n)});
    } else {
      for (int64_t i = 0; i < n; ++i) sum += ld(p + i * stride);
      const A mean = sum / static_cast<A>(n);
      for (int64_t i = 0; i < n; ++i) m2 += SquaredDeviation{mean}(ld(p + i * stride));
    }
    combine(s, static_cast<A>(n), sum / static_cast<A>(n), m2);
  }
  void merge(S& a, const S& b) const { combine(a, b.n, b.mean, b.m2); }
  void write(const ReduceDesc& d, const int64_t* off, const S& s, int64_t r) const {
    const A denom = std::max(A(0), static_cast<A>(r) - static_cast<A>(correction));
    A var = s.m2 / denom;
    if (r == 0) var = std::numeric_limits<A>::quiet_NaN();
    store<T>(d.out[0], off[0], kStd ? std::sqrt(var) : var);
    if (d.out[1]) store<T>(d.out[1], off[1], r > 0 ? s.mean : std::numeric_limits<A>::quiet_NaN());
  }
};

// all / any over any dtype (x != 0), written as a 0/1 byte.
template <typename T, bool kAll>
struct LogicR {
  using S = bool;
  S init() const { return kAll; }
  void step(S& s, const T* p, int64_t) const {
    const bool nz = convert<bool>(*p);
    if constexpr (kAll) s = s && nz;
    else s = s || nz;
  }
  void run(S& s, const T* p, int64_t n, int64_t stride, int64_t r0) const {
    for (int64_t i = 0; i < n && (kAll ? s : !s); ++i) step(s, p + i * stride, r0 + i);
  }
  void merge(S& a, const S& b) const { a = kAll ? (a && b) : (a || b); }
  void write(const ReduceDesc& d, const int64_t* off, const S& s, int64_t) const {
    static_cast<uint8_t*>(d.out[0])[off[0]] = s ? 1 : 0;
  }
};

// p-norms. kind: 0 count nonzero, 1 sum|x|, 2 sqrt(sum x^2), 3 max|x|, 4 min|x|, 5 general p.
template <typename T>
struct NormR {
  using A = acc_t<T>;
  using S = A;
  int kind;
  A p;
  S init() const { return kind == 4 ? std::numeric_limits<A>::infinity() : A(0); }
  void step(S& s, const T* q, int64_t) const {
    const A x = std::fabs(ld(q));
    switch (kind) {
      case 0: s += x != A(0) ? A(1) : A(0); break;
      case 1: s += x; break;
      case 2: s += x * x; break;
      case 3: s = (x > s || isnan_(x)) ? x : s; break;
      case 4: s = (x < s || isnan_(x)) ? x : s; break;
      default: s += std::pow(x, p); break;
    }
  }
  void run(S& s, const T* q, int64_t n, int64_t stride, int64_t r0) const {
    if (stride == 1 && (kind == 1 || kind == 2)) {
      if (kind == 1) sum_chunks(s, q, n, Abs{});
      else sum_chunks(s, q, n, Square{});
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      if (stride == 1 && (kind == 3 || kind == 4) && n >= 32) {
        const int64_t n32 = n / 32 * 32;
        bool nan = false;
        S r = kind == 3 ? extreme_f32<true, true>(q, n32, &nan) : extreme_f32<false, true>(q, n32, &nan);
        if (nan) r = std::numeric_limits<float>::quiet_NaN();
        for (int64_t i = n32; i < n; ++i) step(r, q + i, 0);
        merge(s, r);
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) step(s, q + i * stride, r0 + i);
  }
  void merge(S& a, const S& b) const {
    if (kind == 3) a = (b > a || isnan_(b)) ? b : a;
    else if (kind == 4) a = (b < a || isnan_(b)) ? b : a;
    else a += b;
  }
  void write(const ReduceDesc& d, const int64_t* off, const S& s, int64_t r) const {
    A v = s;
    if (kind == 2) v = std::sqrt(s);
    else if (kind == 5) v = std::pow(s, A(1) / p);
    else if (kind == 4 && r == 0) v = A(0);
    store<T>(d.out[0], off[0], v);
  }
};

// log(sum(exp(x))) with a running max (online rescaling).
template <typename T>
struct LseR {
  using A = acc_t<T>;
  struct S {
    A m, s;
  };
  S init() const { return {-std::numeric_limits<A>::infinity(), A(0)}; }
  static void add(S& st, A m, A s) {
    if (s == A(0) && !isnan_(m)) return;
    if (isnan_(m) || isnan_(st.m)) {
      st.m = std::numeric_limits<A>::quiet_NaN();
      return;
    }
    if (std::isinf(m) && m > 0) {
      st = {m, A(1)};
      return;
    }
    if (std::isinf(st.m) && st.m > 0) return;
    if (m > st.m) {
      st.s = st.s * std::exp(st.m - m) + s;
      st.m = m;
    } else {
      st.s += s * std::exp(m - st.m);
    }
  }
  void step(S& s, const T* p, int64_t) const {
    const A x = ld(p);
    if (std::isinf(x) && x < 0) return;
    add(s, x, A(1));
  }
  void run(S& s, const T* p, int64_t n, int64_t stride, int64_t r0) const {
    for (int64_t i = 0; i < n; ++i) step(s, p + i * stride, r0 + i);
  }
  void merge(S& a, const S& b) const { add(a, b.m, b.s); }
  void write(const ReduceDesc& d, const int64_t* off, const S& s, int64_t) const {
    A v = s.s == A(0) ? -std::numeric_limits<A>::infinity() : s.m + std::log(s.s);
    if (isnan_(s.m)) v = s.m;
    else if (std::isinf(s.m) && s.m > 0) v = s.m;
    store<T>(d.out[0], off[0], v);
  }
};

// nansum: NaN counts as 0.
template <typename T>
struct NanSumR {
  using A = acc_t<T>;
  using S = A;
  S init() const { return A(0); }
  void step(S& s, const T* p, int64_t) const {
    const A x = ld(p);
    s += isnan_(x) ? A(0) : x;
  }
  void run(S& s, const T* p, int64_t n, int64_t stride, int64_t r0) const {
    for (int64_t i = 0; i < n; ++i) step(s, p + i * stride, r0 + i);
  }
  void merge(S& a, const S& b) const { a += b; }
  void write(const ReduceDesc& d, const int64_t* off, const S& s, int64_t) const { store<T>(d.out[0], off[0], s); }
};

// count_nonzero into int64.
template <typename T>
struct CountR {
  using S = int64_t;
  S init() const { return 0; }
  void step(S& s, const T* p, int64_t) const { s += convert<bool>(*p) ? 1 : 0; }
  void run(S& s, const T* p, int64_t n, int64_t stride, int64_t r0) const {
    for (int64_t i = 0; i < n; ++i) step(s, p + i * stride, r0 + i);
  }
  void merge(S& a, const S& b) const { a += b; }
  void write(const ReduceDesc& d, const int64_t* off, const S& s, int64_t) const {
    static_cast<int64_t*>(d.out[0])[off[0]] = s;
  }
};

// ---- the engine ----

namespace {
// Outputs reduced together along a contiguous kept dim: up to 4 KiB of states, so that each reduced row's piece is
// a page, not 256 bytes (64 outputs read a 4096-column matrix's columns one TLB miss per 4 cache lines: 1.2x CPU's
// time), at least 64, and fewer while that leaves the cores fewer than 4 tiles.
template <typename S>
constexpr int64_t kTileMax = std::max<int64_t>(64, 4096 / sizeof(S) / 16 * 16);
template <typename S>
int64_t tile_width(int64_t rows, int64_t inner) {
  int64_t tw = kTileMax<S>;
  while (tw > 64 && rows * ((inner + tw - 1) / tw) < 4) tw /= 2;
  return std::max<int64_t>(16, tw / 16 * 16);
}
}  // namespace

// Input/output offsets of output number o.
inline void outer_offsets(const ReduceDesc& d, int64_t o, int64_t* in_off, int64_t* out_off) {
  *in_off = 0;
  out_off[0] = out_off[1] = 0;
  for (int k = d.n_outer - 1; k >= 0; --k) {
    const int64_t i = o % d.outer_sizes[k];
    o /= d.outer_sizes[k];
    *in_off += i * d.in_outer_strides[k];
    out_off[0] += i * d.out_strides[0][k];
    out_off[1] += i * d.out_strides[1][k];
  }
}

// Calls body(offset, run_length, r0) for the runs along the innermost reduced dim in [rb, re).
template <typename Body>
inline void for_reduced_runs(const ReduceDesc& d, int64_t rb, int64_t re, Body&& body) {
  if (rb >= re) return;
  const int last = d.n_red - 1;
  int64_t idx[kMaxDims] = {};
  int64_t rem = rb, off = 0;
  for (int k = last; k >= 0; --k) {
    idx[k] = rem % d.red_sizes[k];
    rem /= d.red_sizes[k];
    off += idx[k] * d.red_strides[k];
  }
  int64_t pos = rb;
  while (pos < re) {
    const int64_t run = std::min(d.red_sizes[last] - idx[last], re - pos);
    body(off, run, pos);
    pos += run;
    if (pos >= re) break;
    off += run * d.red_strides[last];
    idx[last] += run;
    for (int k = last; k >= 0; --k) {
      if (idx[k] < d.red_sizes[k]) break;
      off -= idx[k] * d.red_strides[k];
      idx[k] = 0;
      if (k > 0) {
        ++idx[k - 1];
        off += d.red_strides[k - 1];
      }
    }
  }
}

// Launch records (all three splits): every input element is read once from GM (sizeof(T)) and costs one
// Vector op; each output writes `ob` bytes (values and/or int64 indices, see out_bytes). var/std's second
// pass re-reads a 1024-element chunk it has just read (UB-resident), so it is not counted again; all/any
// are counted as reading their whole range (the early exit is not tracked). The two-phase split also
// writes its partial states (sizeof(S) per block) to a GM workspace and its merge launch reads them back
// (one Vector op per partial).
template <typename T, class R>
npu_sim::Status run_reduce(npu_sim::Stream stream, const char* name, const ReduceDesc& d0, const R red, int64_t ob) {
  using S = typename R::S;
  ReduceDesc d = d0;
  if (d.n_red == 0) {  // nothing reduced: one element per output
    d.n_red = 1;
    d.red_sizes[0] = 1;
    d.red_strides[0] = 0;
  }
  const int64_t O = d.outputs(), Rn = d.reduced();
  if (O == 0) return npu_sim::Status::kSuccess;
  const T* in = static_cast<const T*>(d.in);
  const int last = d.n_red - 1;

  // Few outputs, long reductions: two phases over a partial-state buffer.
  constexpr int64_t kSplitGrain = 1 << 15;
  const uint32_t max_blocks = grid_for(int64_t(1) << 40, 1);  // 4 x core threads
  if (O < static_cast<int64_t>(max_blocks) && Rn >= 2 * kSplitGrain) {
    const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(Rn / kSplitGrain, max_blocks / O + 1));
    // One slot per block in a plain array: std::vector<bool> (all / any's S) packs the slots into shared words,
    // and blocks storing neighbouring bits at once lose each other's stores.
    std::shared_ptr<S[]> partial(new S[static_cast<size_t>(O * parts)]());
    npu_sim::Status st = npu_sim::launch_kernel(
        stream, name, static_cast<uint32_t>(O * parts), [d, in, red, parts, Rn, partial](const npu_sim::BlockContext& ctx) {
          const int64_t o = ctx.block_idx / parts, k = ctx.block_idx % parts;
          int64_t in_off, out_off[2];
          outer_offsets(d, o, &in_off, out_off);
          S s = red.init();
          const int64_t rb = Rn * k / parts, re = Rn * (k + 1) / parts;
          detail::record_vec(ctx, (re - rb) * static_cast<int64_t>(sizeof(T)), sizeof(S), re - rb);
          for_reduced_runs(d, rb, re, [&](int64_t off, int64_t n, int64_t r0) {
            red.run(s, in + in_off + off, n, d.red_strides[d.n_red - 1], r0);
          });
          partial[ctx.block_idx] = s;
        });
    if (st != npu_sim::Status::kSuccess) return st;
    return npu_sim::launch_kernel(stream, name, static_cast<uint32_t>(O), [d, red, parts, Rn, partial, ob](const npu_sim::BlockContext& ctx) {
      const int64_t o = ctx.block_idx;
      detail::record_vec(ctx, parts * static_cast<int64_t>(sizeof(S)), ob, parts);
      int64_t in_off, out_off[2];
      outer_offsets(d, o, &in_off, out_off);
      S s = partial[o * parts];
      for (int64_t k = 1; k < parts; ++k) red.merge(s, partial[o * parts + k]);
      red.write(d, out_off, s, Rn);
    });
  }

  // Tiles of outputs along a contiguous innermost kept dim when the reduced dims are not contiguous.
  const bool tiled = d.n_outer > 0 && d.in_outer_strides[d.n_outer - 1] == 1 && d.red_strides[last] != 1 && Rn > 1;
  const int64_t grain = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(Rn, 1));
  if (tiled) {
    const int64_t inner = d.outer_sizes[d.n_outer - 1], rows = O / inner;
    // Few full-width tiles over a long reduction (a bias gradient: the sum over 16384 rows of 256 columns): the
    // reduced rows are split among blocks too, and a second launch merges each column's parts in order, rather than
    // narrowing the tiles to 64 columns (256 bytes a row: 1.2x CPU's time for the sum, 2.5x for amax).
    const int64_t wide = std::min(kTileMax<S>, (inner + 15) / 16 * 16);
    const int64_t wide_tiles = rows * ((inner + wide - 1) / wide);
    const int64_t parts = wide_tiles < 4 && Rn >= 1024 ? std::min<int64_t>((8 + wide_tiles - 1) / wide_tiles, Rn / 256) : 1;
    const int64_t tw = parts > 1 ? wide : tile_width<S>(rows, inner);
    const int64_t tiles_per_row = (inner + tw - 1) / tw;
    const int64_t ntiles = rows * tiles_per_row;
    // tile t: its first output's offsets and its width
    const auto tile = [d, inner, tw, tiles_per_row](int64_t t, int64_t* in_off, int64_t* out_off) {
      const int64_t row = t / tiles_per_row, j0 = (t % tiles_per_row) * tw;
      outer_offsets(d, row * inner + j0, in_off, out_off);
      return std::min(tw, inner - j0);
    };
    // acc[0..cnt) over the reduced rows [rb, re) of the tile at base
    const auto accumulate = [d, red](S* acc, const T* base, int64_t cnt, int64_t rb, int64_t re) {
      for (int64_t j = 0; j < cnt; ++j) acc[j] = red.init();
      const int64_t rs = d.red_strides[d.n_red - 1];
      for_reduced_runs(d, rb, re, [&](int64_t off, int64_t n, int64_t r0) {
        for (int64_t i = 0; i < n; ++i) {
          const T* q = base + off + i * rs;
          for (int64_t j = 0; j < cnt; ++j) red.step(acc[j], q + j, r0 + i);
        }
      });
    };
    const auto write = [d, red, Rn](const S* acc, const int64_t* out_off, int64_t cnt) {
      for (int64_t j = 0; j < cnt; ++j) {
        const int64_t oo[2] = {out_off[0] + j * d.out_strides[0][d.n_outer - 1],
                               out_off[1] + j * d.out_strides[1][d.n_outer - 1]};
        red.write(d, oo, acc[j], Rn);
      }
    };
    if (parts > 1) {  // as the two-phase split above: partial states in a GM workspace, merged in order
      std::shared_ptr<S[]> partial(new S[static_cast<size_t>(ntiles * parts * tw)]());
      npu_sim::Status st = npu_sim::launch_kernel(
          stream, name, static_cast<uint32_t>(ntiles * parts), [in, Rn, parts, tw, tile, accumulate, partial](const npu_sim::BlockContext& ctx) {
            const int64_t t = ctx.block_idx / parts, k = ctx.block_idx % parts;
            int64_t in_off, out_off[2];
            const int64_t cnt = tile(t, &in_off, out_off);
            const int64_t rb = Rn * k / parts, re = Rn * (k + 1) / parts;
            detail::record_vec(ctx, cnt * (re - rb) * static_cast<int64_t>(sizeof(T)), cnt * sizeof(S), cnt * (re - rb));
            accumulate(&partial[ctx.block_idx * tw], in + in_off, cnt, rb, re);
          });
      if (st != npu_sim::Status::kSuccess) return st;
      return npu_sim::launch_kernel(stream, name, static_cast<uint32_t>(ntiles), [red, parts, tw, ob, tile, write, partial](const npu_sim::BlockContext& ctx) {
        int64_t in_off, out_off[2];
        const int64_t cnt = tile(ctx.block_idx, &in_off, out_off);
        detail::record_vec(ctx, parts * cnt * static_cast<int64_t>(sizeof(S)), cnt * ob, parts * cnt);
        S* acc = &partial[ctx.block_idx * parts * tw];
        for (int64_t k = 1; k < parts; ++k) {
          for (int64_t j = 0; j < cnt; ++j) red.merge(acc[j], acc[k * tw + j]);
        }
        write(acc, out_off, cnt);
      });
    }
    return parallel_for(stream, name, ntiles, std::max<int64_t>(1, grain / tw),
                        [in, inner, tw, tiles_per_row, Rn, ob, tile, accumulate, write](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                          int64_t outs = 0;  // outputs of this block's tiles (a row's last tile may be partial)
                          for (int64_t t = b; t < e; ++t) outs += std::min(tw, inner - (t % tiles_per_row) * tw);
                          detail::record_vec(ctx, outs * Rn * static_cast<int64_t>(sizeof(T)), outs * ob, outs * Rn);
                          S acc[kTileMax<S>];
                          for (int64_t t = b; t < e; ++t) {
                            int64_t in_off, out_off[2];
                            const int64_t cnt = tile(t, &in_off, out_off);
                            accumulate(acc, in + in_off, cnt, 0, Rn);
                            write(acc, out_off, cnt);
                          }
                        });
  }

  // At most one kept and one reduced dim (the rows of a matrix, a vector): offsets by multiplication and one run
  // per output, without the general walk (its divisions and index arrays cost more than a 256-element row's sum).
  if (d.n_outer <= 1 && d.n_red == 1) {
    const int64_t in_s = d.n_outer ? d.in_outer_strides[0] : 0, red_s = d.red_strides[0];
    const int64_t out_s0 = d.n_outer ? d.out_strides[0][0] : 0, out_s1 = d.n_outer ? d.out_strides[1][0] : 0;
    return parallel_for(stream, name, O, grain,
                        [d, in, red, Rn, ob, in_s, red_s, out_s0, out_s1](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                          detail::record_vec(ctx, (e - b) * Rn * static_cast<int64_t>(sizeof(T)), (e - b) * ob, (e - b) * Rn);
                          for (int64_t o = b; o < e; ++o) {
                            S s = red.init();
                            red.run(s, in + o * in_s, Rn, red_s, 0);
                            const int64_t out_off[2] = {o * out_s0, o * out_s1};
                            red.write(d, out_off, s, Rn);
                          }
                        });
  }
  return parallel_for(stream, name, O, grain, [d, in, red, Rn, ob](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
    detail::record_vec(ctx, (e - b) * Rn * static_cast<int64_t>(sizeof(T)), (e - b) * ob, (e - b) * Rn);
    for (int64_t o = b; o < e; ++o) {
      int64_t in_off, out_off[2];
      outer_offsets(d, o, &in_off, out_off);
      S s = red.init();
      for_reduced_runs(d, 0, Rn, [&](int64_t off, int64_t n, int64_t r0) {
        red.run(s, in + in_off + off, n, d.red_strides[d.n_red - 1], r0);
      });
      red.write(d, out_off, s, Rn);
    }
  });
}

// GM bytes one output writes: its value (sizeof(T)), int64 indices, all/any's byte, count_nonzero's int64;
// var/std also write the mean when asked (out[1]).
int64_t out_bytes(ReduceOp op, size_t elem, bool second) {
  const int64_t t = static_cast<int64_t>(elem);
  switch (op) {
    case ReduceOp::kArgmax:
    case ReduceOp::kArgmin:
    case ReduceOp::kCountNonzero: return 8;
    case ReduceOp::kMaxIdx:
    case ReduceOp::kMinIdx: return t + 8;
    case ReduceOp::kAll:
    case ReduceOp::kAny: return 1;
    case ReduceOp::kVar:
    case ReduceOp::kStd: return second ? 2 * t : t;
    default: return t;
  }
}

// complex64 / complex128: sum, mean, prod and the ops that only test x != 0 (the adapter builds var, std and
// the norms from real reductions).
template <typename T>
npu_sim::Status reduce_complex(npu_sim::Stream stream, ReduceOp op, const ReduceDesc& d) {
  const char* name = reduce_op_name(op);
  const int64_t ob = out_bytes(op, sizeof(T), false);
  switch (op) {
    case ReduceOp::kSum: return run_reduce<T>(stream, name, d, SumR<T, false>{}, ob);
    case ReduceOp::kMean: return run_reduce<T>(stream, name, d, SumR<T, true>{}, ob);
    case ReduceOp::kProd: return run_reduce<T>(stream, name, d, ProdR<T>{}, ob);
    case ReduceOp::kAll: return run_reduce<T>(stream, name, d, LogicR<T, true>{}, ob);
    case ReduceOp::kAny: return run_reduce<T>(stream, name, d, LogicR<T, false>{}, ob);
    case ReduceOp::kCountNonzero: return run_reduce<T>(stream, name, d, CountR<T>{}, ob);
    default: return npu_sim::invalid_value(std::string(name) + ": no kernel for complex dtypes");
  }
}

}  // namespace

npu_sim::Status reduce(npu_sim::Stream stream, ReduceOp op, const ReduceDesc& d, const ReduceParams& prm) {
  if (d.dtype == DType::kComplex64) return reduce_complex<std::complex<float>>(stream, op, d);
  if (d.dtype == DType::kComplex128) return reduce_complex<std::complex<double>>(stream, op, d);
  const char* name = reduce_op_name(op);
  return detail::dispatch_real(d.dtype, [&](auto tag) -> npu_sim::Status {
    using T = decltype(tag);
    constexpr bool fp = std::is_floating_point_v<acc_t<T>>;
    const int64_t ob = out_bytes(op, sizeof(T), d.out[1] != nullptr);
    using A = acc_t<T>;
    if (d.widened_out) {
      const int64_t wb = static_cast<int64_t>(sizeof(A));
      if (op == ReduceOp::kSum) return run_reduce<T>(stream, name, d, SumR<T, false, A>{}, wb);
      if constexpr (fp) {
        if (op == ReduceOp::kMean) return run_reduce<T>(stream, name, d, SumR<T, true, A>{}, wb);
      }
      return npu_sim::invalid_value(std::string(name) + ": no kernel writes a widened output");
    }
    switch (op) {
      case ReduceOp::kSum: return run_reduce<T>(stream, name, d, SumR<T, false>{}, ob);
      case ReduceOp::kProd: return run_reduce<T>(stream, name, d, ProdR<T>{}, ob);
      case ReduceOp::kMax: return run_reduce<T>(stream, name, d, ExtremeR<T, true>{}, ob);
      case ReduceOp::kMin: return run_reduce<T>(stream, name, d, ExtremeR<T, false>{}, ob);
      case ReduceOp::kArgmax: return run_reduce<T>(stream, name, d, ArgR<T, true, 0>{}, ob);
      case ReduceOp::kArgmin: return run_reduce<T>(stream, name, d, ArgR<T, false, 0>{}, ob);
      case ReduceOp::kMaxIdx: return run_reduce<T>(stream, name, d, ArgR<T, true, 1>{}, ob);
      case ReduceOp::kMinIdx: return run_reduce<T>(stream, name, d, ArgR<T, false, 1>{}, ob);
      case ReduceOp::kAll: return run_reduce<T>(stream, name, d, LogicR<T, true>{}, ob);
      case ReduceOp::kAny: return run_reduce<T>(stream, name, d, LogicR<T, false>{}, ob);
      case ReduceOp::kNansum: return run_reduce<T>(stream, name, d, NanSumR<T>{}, ob);
      case ReduceOp::kCountNonzero: return run_reduce<T>(stream, name, d, CountR<T>{}, ob);
      default: break;
    }
    if constexpr (fp) {
      switch (op) {
        case ReduceOp::kMean: return run_reduce<T>(stream, name, d, SumR<T, true>{}, ob);
        case ReduceOp::kVar: return run_reduce<T>(stream, name, d, VarR<T, false>{prm.correction}, ob);
        case ReduceOp::kStd: return run_reduce<T>(stream, name, d, VarR<T, true>{prm.correction}, ob);
        case ReduceOp::kLogsumexp: return run_reduce<T>(stream, name, d, LseR<T>{}, ob);
        case ReduceOp::kNorm: {
          int kind = 5;
          if (prm.p == 0) kind = 0;
          else if (prm.p == 1) kind = 1;
          else if (prm.p == 2) kind = 2;
          else if (std::isinf(prm.p)) kind = prm.p > 0 ? 3 : 4;
          return run_reduce<T>(stream, name, d, NormR<T>{kind, static_cast<A>(prm.p)}, ob);
        }
        default: break;
      }
    }
    return npu_sim::invalid_value(std::string(name) + ": no kernel for dtype " + dtype_name(d.dtype));
  });
}

// ---- scans ----

namespace {
// Runs line(in_line, out_offset) for every (outer, inner) line of the scan, lines split over the AI
// cores; in_line points at the line's first input element, out_offset is its first output element.
// Launch records: each line reads its n inputs and writes n outputs (`out_elem` bytes each: the value, plus
// an int64 index for cummax/cummin), one Vector op per element.
template <typename T, class Line>
npu_sim::Status for_scan_lines(npu_sim::Stream stream, const char* name, const ScanDesc& d, Line line,
                               int64_t out_elem = sizeof(T)) {
  const int64_t grain = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(d.n, 1));
  return parallel_for(stream, name, d.outer * d.inner, grain, [d, line, out_elem](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
    detail::record_vec(ctx, (e - b) * d.n * static_cast<int64_t>(sizeof(T)), (e - b) * d.n * out_elem, (e - b) * d.n);
    for (int64_t l = b; l < e; ++l) {
      const int64_t o = l / d.inner, i = l % d.inner;
      line(static_cast<const T*>(d.in) + o * d.in_strides[0] + i * d.in_strides[2],
           o * d.out_strides[0] + i * d.out_strides[2]);
    }
  });
}

// log(1 + z) for complex z, accurate near z = 0 (where log(1 + z) loses z's low bits): the modulus of 1 + z as
// 0.5 * log1p(x (2 + x) + y^2) while |z| < 1/2, else as hypot(1 + x, y); the argument is atan2(y, 1 + x).
template <typename R>
std::complex<R> complex_log1p(std::complex<R> z) {
  const R x = z.real(), y = z.imag();
  const R arg = std::atan2(y, x + R(1));
  if (std::abs(z) < R(0.5)) {
    const R r = x * (R(2) + x) + y * y;
    return {r == R(0) ? x : R(0.5) * std::log1p(r), arg};
  }
  return {std::log(std::hypot(x + R(1), y)), arg};
}

// ATen's log_add_exp(x, acc) of logcumsumexp. Real: NaN propagates; equal infinities stay (no inf - inf).
// Complex: ordered by real part, a NaN in either part wins (NaN + NaN i); two -inf real parts give the
// smaller operand, two +inf ones log(exp(min) + exp(max)).
template <typename A>
A log_add_exp(A x, A acc) {
  if constexpr (is_complex_v<A>) {
    using R = typename A::value_type;
    const auto nan_in = [](A v) { return v.real() != v.real() || v.imag() != v.imag(); };
    if (nan_in(acc) || nan_in(x)) return A(std::numeric_limits<R>::quiet_NaN(), std::numeric_limits<R>::quiet_NaN());
    const bool x_lower = x.real() < acc.real();
    const A lo = x_lower ? x : acc, hi = x_lower ? acc : x;
    if (!std::isfinite(lo.real()) && lo.real() == hi.real()) return lo.real() < 0 ? lo : std::log(std::exp(lo) + std::exp(hi));
    return complex_log1p(std::exp(lo - hi)) + hi;
  } else {
    const A lo = acc != acc ? acc : std::min(x, acc), hi = acc != acc ? acc : std::max(x, acc);
    return (lo != hi || std::isfinite(lo)) ? std::log1p(std::exp(lo - hi)) + hi : x;
  }
}

template <typename T, ScanOp kOp>
npu_sim::Status run_scan(npu_sim::Stream stream, const ScanDesc& d) {
  // logcumsumexp of float32 (complex64) accumulates in double (complex128), as CPU's kernel: its backward (exp
  // of differences of these sums) magnifies float rounding into 1e-3 gradient errors
  using A = std::conditional_t<kOp == ScanOp::kLogcumsumexp && std::is_same_v<T, float>, double,
                               std::conditional_t<kOp == ScanOp::kLogcumsumexp && std::is_same_v<T, std::complex<float>>,
                                                  std::complex<double>, acc_t<T>>>;
  constexpr const char* kName =
      kOp == ScanOp::kCumprod ? "cumprod" : (kOp == ScanOp::kCumsum ? "cumsum" : "logcumsumexp");
  return for_scan_lines<T>(stream, kName, d, [d](const T* p, int64_t q) {
    T* out = static_cast<T*>(d.out) + q;
    A acc{kOp == ScanOp::kCumprod ? 1 : 0};
    if constexpr (kOp == ScanOp::kLogcumsumexp) {
      if constexpr (is_complex_v<A>) acc = A(-std::numeric_limits<typename A::value_type>::infinity());
      else acc = -std::numeric_limits<A>::infinity();
    }
    for (int64_t k = 0; k < d.n; ++k) {
      const A x = ld(p + k * d.in_strides[1]);
      if constexpr (kOp == ScanOp::kCumprod) {
        acc *= x;
      } else if constexpr (kOp == ScanOp::kCumsum) {
        acc += x;
      } else {
        acc = log_add_exp(x, acc);
      }
      out[k * d.out_strides[1]] = convert<T>(acc);
    }
  });
}

template <typename T, bool kMax>
npu_sim::Status run_extreme_scan(npu_sim::Stream stream, const ScanDesc& d) {
  using A = acc_t<T>;
  return for_scan_lines<T>(stream, kMax ? "cummax" : "cummin", d, [d](const T* p, int64_t q) {
    T* out = static_cast<T*>(d.out);
    T best = p[0];
    A best_v = ld(p);
    int64_t arg = 0;
    for (int64_t k = 0; k < d.n; ++k) {
      const A v = ld(p + k * d.in_strides[1]);
      const bool better = kMax ? v >= best_v : v <= best_v;  // >=: the latest tie wins
      if (v != v || (best_v == best_v && better)) {      // a NaN sticks until the next NaN
        best = p[k * d.in_strides[1]];
        best_v = v;
        arg = k;
      }
      out[q + k * d.out_strides[1]] = best;
      d.indices[q + k * d.out_strides[1]] = arg;
    }
  }, sizeof(T) + sizeof(int64_t));
}
}  // namespace

npu_sim::Status scan(npu_sim::Stream stream, ScanOp op, const ScanDesc& d) {
  if (d.outer * d.n * d.inner == 0) return npu_sim::Status::kSuccess;
  if (d.dtype == DType::kComplex64 || d.dtype == DType::kComplex128) {  // cumsum, cumprod and logcumsumexp
    const bool dbl = d.dtype == DType::kComplex128;
    if (op == ScanOp::kLogcumsumexp) {
      return dbl ? run_scan<std::complex<double>, ScanOp::kLogcumsumexp>(stream, d)
                 : run_scan<std::complex<float>, ScanOp::kLogcumsumexp>(stream, d);
    }
    if (op == ScanOp::kCumsum) {
      return dbl ? run_scan<std::complex<double>, ScanOp::kCumsum>(stream, d)
                 : run_scan<std::complex<float>, ScanOp::kCumsum>(stream, d);
    }
    if (op == ScanOp::kCumprod) {
      return dbl ? run_scan<std::complex<double>, ScanOp::kCumprod>(stream, d)
                 : run_scan<std::complex<float>, ScanOp::kCumprod>(stream, d);
    }
    return npu_sim::Status::kInvalidValue;
  }
  return detail::dispatch_real(d.dtype, [&](auto tag) -> npu_sim::Status {
    using T = decltype(tag);
    if (op == ScanOp::kCummax) return run_extreme_scan<T, true>(stream, d);
    if (op == ScanOp::kCummin) return run_extreme_scan<T, false>(stream, d);
    if constexpr (std::is_same_v<T, bool>) {
      return npu_sim::Status::kInvalidValue;  // the adapter promotes bool to int64
    } else {
      if (op == ScanOp::kCumsum) return run_scan<T, ScanOp::kCumsum>(stream, d);
      if (op == ScanOp::kCumprod) return run_scan<T, ScanOp::kCumprod>(stream, d);
      if constexpr (std::is_floating_point_v<acc_t<T>>) return run_scan<T, ScanOp::kLogcumsumexp>(stream, d);
      return npu_sim::Status::kInvalidValue;
    }
  });
}

}  // namespace npu_kernels
