// The elementwise engine (torch-free): a TensorIterator-shaped operand description (shared shape,
// per-operand byte strides, dim 0 fastest) and the loop that runs a functor over a range of it, with a
// contiguous fast path the compiler vectorises. Ops instantiate it in kernels/src/*_ops.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "npu_kernels/dtype.h"
#include "npu_kernels/stream_store.h"
#include "npu_kernels/tensor_desc.h"
#include "npu_kernels/vec16.h"

namespace npu_kernels {

constexpr int kMaxOperands = 6;

// Only the first ndim dims of the first noutputs + ninputs operands are meaningful, and only they are
// copied: a launch copies its iterator into the stream's queue entry, and writing all ~1.1 KB made each
// small launch miss on ~18 cache lines the stream worker had read last (the rest of a copy is unset).
struct ElementwiseIter {
  int ndim = 0;
  int64_t shape[kMaxDims];  // dim 0 moves fastest (TensorIterator order)
  int noutputs = 1;
  int ninputs = 0;
  void* data[kMaxOperands];  // outputs first, then inputs
  int64_t strides[kMaxOperands][kMaxDims];  // bytes
  DType out_dtype = DType::kFloat32;  // every output
  DType in_dtype = DType::kFloat32;   // every input (the adapter promotes inputs to one dtype)
  // Host scalars (CPU zero-dim tensors, Python numbers) travel inside the iterator, converted to
  // in_dtype; such an operand has stride 0 and reads its value from here.
  bool is_scalar[kMaxOperands];
  alignas(16) unsigned char scalar_bytes[kMaxOperands][16];
  // A batch (the _foreach ops): when nparts > 0 this iterator only carries the dtypes, and the launch
  // runs the same functor over every part, one after another in one linear range (multi-tensor apply).
  // The parts are copied into the launch; they need not outlive the call.
  const ElementwiseIter* parts = nullptr;
  int nparts = 0;

  ElementwiseIter() : shape{}, data{}, strides{}, is_scalar{}, scalar_bytes{} {}
  // noexcept: KernelFn keeps a callable inline only if it is nothrow-movable (else it goes to the heap).
  ElementwiseIter(const ElementwiseIter& o) noexcept
      : ndim(o.ndim), noutputs(o.noutputs), ninputs(o.ninputs), out_dtype(o.out_dtype), in_dtype(o.in_dtype),
        parts(o.parts), nparts(o.nparts) {
    for (int d = 0; d < ndim; ++d) shape[d] = o.shape[d];
    for (int k = 0; k < noperands(); ++k) {
      data[k] = o.data[k];
      for (int d = 0; d < ndim; ++d) strides[k][d] = o.strides[k][d];
      is_scalar[k] = o.is_scalar[k];
      if (is_scalar[k]) std::memcpy(scalar_bytes[k], o.scalar_bytes[k], sizeof(scalar_bytes[k]));
    }
  }
  ElementwiseIter& operator=(const ElementwiseIter& o) noexcept {
    if (this != &o) new (this) ElementwiseIter(o);  // trivially destructible: no destructor to run first
    return *this;
  }

  int noperands() const { return noutputs + ninputs; }
  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[d];
    return n;
  }
};

static_assert(std::is_nothrow_move_constructible_v<ElementwiseIter>,
              "a launch keeps its iterator in KernelFn's inline storage only if it is nothrow-movable");

// The type arithmetic happens in: float for the 16-bit floating types, the type itself otherwise.
template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

namespace detail {

// Calls body(ptrs, inner, n, rows, outer) for the linear range [begin, end), in blocks of `rows` runs of n elements
// along dim 0: run r of a block starts at ptrs[k] + r * outer[k] (outer = the dim-1 strides), element i of a run at
// + i * inner[k]. Whole runs of consecutive dim-1 indices come as one block (CPU's TensorIterator loop is 2-D the
// same way): a broadcast or a strided view gives runs of 32-128 elements, and a call per run cost more than
// the run (q * cos of a rotary embedding: 2048 runs of 32, 42 us against CPU eager's 11). The range's partial
// first and last runs come alone (rows = 1).
template <int NOP, typename Body>
inline void for_each_rows(const ElementwiseIter& it, int64_t begin, int64_t end, Body&& body) {
  int64_t idx[kMaxDims] = {};
  int64_t rem = begin;
  for (int d = 0; d < it.ndim; ++d) {
    idx[d] = rem % it.shape[d];
    rem /= it.shape[d];
  }
  char* ptrs[NOP];
  int64_t inner[NOP], outer[NOP];
  for (int k = 0; k < NOP; ++k) {
    int64_t off = 0;
    for (int d = 0; d < it.ndim; ++d) off += idx[d] * it.strides[k][d];
    char* base = it.is_scalar[k] ? const_cast<char*>(reinterpret_cast<const char*>(it.scalar_bytes[k]))
                                 : static_cast<char*>(it.data[k]);
    ptrs[k] = base + off;
    inner[k] = it.ndim > 0 ? it.strides[k][0] : 0;
    outer[k] = it.ndim > 1 ? it.strides[k][1] : 0;
  }
  int64_t pos = begin;
  while (pos < end) {
    int carry_from = 0;  // the dim whose index just moved
    if (it.ndim > 1 && idx[0] == 0 && end - pos >= it.shape[0]) {
      const int64_t rows = std::min(it.shape[1] - idx[1], (end - pos) / it.shape[0]);
      body(ptrs, inner, it.shape[0], rows, outer);
      pos += rows * it.shape[0];
      if (pos >= end) break;
      for (int k = 0; k < NOP; ++k) ptrs[k] += rows * outer[k];
      idx[1] += rows;
      carry_from = 1;
    } else {
      const int64_t run = it.ndim > 0 ? std::min<int64_t>(it.shape[0] - idx[0], end - pos) : 1;
      body(ptrs, inner, run, int64_t{1}, outer);
      pos += run;
      if (pos >= end) break;
      for (int k = 0; k < NOP; ++k) ptrs[k] += run * inner[k];
      idx[0] += run;
    }
    // carry an exhausted dim into the next
    for (int d = carry_from; d < it.ndim; ++d) {
      if (idx[d] < it.shape[d]) break;
      for (int k = 0; k < NOP; ++k) ptrs[k] -= idx[d] * it.strides[k][d];
      idx[d] = 0;
      if (d + 1 < it.ndim) {
        ++idx[d + 1];
        for (int k = 0; k < NOP; ++k) ptrs[k] += it.strides[k][d + 1];
      }
    }
  }
}

// Calls body(ptrs, inner_strides, n) for every run along dim 0 inside the linear range [begin, end).
template <int NOP, typename Body>
inline void for_each_run(const ElementwiseIter& it, int64_t begin, int64_t end, Body&& body) {
  for_each_rows<NOP>(it, begin, end,
                     [&](char* const* p, const int64_t* inner, int64_t n, int64_t rows, const int64_t* outer) {
                       char* q[NOP];
                       for (int k = 0; k < NOP; ++k) q[k] = p[k];
                       for (int64_t r = 0; r < rows; ++r) {
                         body(q, inner, n);
                         for (int k = 0; k < NOP; ++k) q[k] += outer[k];
                       }
                     });
}

template <typename T>
inline compute_t<T> load(const char* p) {
  return static_cast<compute_t<T>>(*reinterpret_cast<const T*>(p));
}

// dst[j] = g(base + j) for j < m: the one loop of a contiguous run, whether it writes the output or write_run's tile
// (where's select, whose operands are not one dtype; the engine's own functors go through fill_rows below).
// What lets it vectorise: g (and the op functor it holds) are always inlined (flatten: left to GCC's inline budget,
// the big pointwise TUs kept some functors, tanh-gelu and tanh, out of line and their loops scalar, 10x slower),
// and g is copied into a local that holds the functor by value, so an op's scalars (leaky_relu's slope, clamp's
// bounds) are registers, not loads through a reference: a load under a condition cannot be if-converted, which
// left such loops scalar with an unpredictable branch (20x slower). Out of line (noinline), so that the streamed
// and the plain run share it: each op's loop is vectorised once, not twice (binary_ops.cpp compiled in 166 s
// instead of 200, special_ops.cpp 77 instead of 100); the streamed run calls it once per 4 KiB tile.
template <typename Out, typename G>
__attribute__((flatten, noinline)) void fill_run(Out* dst, int64_t base, int64_t m, const G& g_in) {
  const G g = g_in;
  for (int64_t j = 0; j < m; ++j) dst[j] = g(base + j);
}

// out[i] = g(i) for i < n; with `stream`, through an L1-resident tile and streaming stores.
template <typename Out, typename G>
inline void write_run(Out* out, int64_t n, bool stream, const G& g) {
  if (!stream) return fill_run(out, 0, n, g);
  constexpr int64_t kTile = 4096 / static_cast<int64_t>(sizeof(Out));
  alignas(64) Out tile[kTile];
  for (int64_t i0 = 0; i0 < n; i0 += kTile) {
    const int64_t m = std::min(kTile, n - i0);
    fill_run(tile, i0, m, g);
    stream_store_bytes(out + i0, tile, static_cast<std::size_t>(m) * sizeof(Out));
  }
  stream_fence();
}

// Rows of contiguous elements: row r of the output at out + r * out_step (bytes), of input k at in[k] + r *
// in_step[k]; out[j] = f(inputs[j]) for j < n. Bit k of S marks input k as stride 0 along the row (a host scalar,
// or one value per row of a broadcast), read once per row. Like fill_run, one out-of-line loop per op (flatten:
// the functor inlined, held by value), and the row loop is inside it, so a block of short rows costs no call
// per row.
template <typename Out, typename In, int N, unsigned S, typename F>
__attribute__((flatten, noinline)) void fill_rows(char* out, int64_t out_step, const char* const* in,
                                                  const int64_t* in_step, int64_t rows, int64_t n, const F& f_in) {
  using C = compute_t<In>;
  const F f = f_in;
  for (int64_t r = 0; r < rows; ++r) {
    Out* o = reinterpret_cast<Out*>(out + r * out_step);
    if constexpr (N == 0) {
      for (int64_t j = 0; j < n; ++j) o[j] = static_cast<Out>(f());
    } else {
      const In* a = reinterpret_cast<const In*>(in[0] + r * in_step[0]);
      if constexpr (N == 1) {
        for (int64_t j = 0; j < n; ++j) o[j] = static_cast<Out>(f(static_cast<C>(a[j])));
      } else if constexpr (N == 2) {
        const In* b = reinterpret_cast<const In*>(in[1] + r * in_step[1]);
        if constexpr (S == 0) {
          for (int64_t j = 0; j < n; ++j) o[j] = static_cast<Out>(f(static_cast<C>(a[j]), static_cast<C>(b[j])));
        } else if constexpr (S == 2) {
          const C bv = static_cast<C>(b[0]);
          for (int64_t j = 0; j < n; ++j) o[j] = static_cast<Out>(f(static_cast<C>(a[j]), bv));
        } else {
          static_assert(S == 1, "one stride-0 input of two");
          const C av = static_cast<C>(a[0]);
          for (int64_t j = 0; j < n; ++j) o[j] = static_cast<Out>(f(av, static_cast<C>(b[j])));
        }
      } else {
        static_assert(N == 3 && S == 0, "ternary rows are all contiguous");
        const In* b = reinterpret_cast<const In*>(in[1] + r * in_step[1]);
        const In* c = reinterpret_cast<const In*>(in[2] + r * in_step[2]);
        for (int64_t j = 0; j < n; ++j)
          o[j] = static_cast<Out>(f(static_cast<C>(a[j]), static_cast<C>(b[j]), static_cast<C>(c[j])));
      }
    }
  }
}

// fill_rows over the rows at ptrs (output first) and outer; with `stream`, each row through an L1-resident tile
// and streaming stores.
template <typename Out, typename In, int N, unsigned S, typename F>
inline void write_rows(char* const* ptrs, const int64_t* outer, int64_t rows, int64_t n, bool stream, const F& f) {
  if (!stream) return fill_rows<Out, In, N, S>(ptrs[0], outer[0], ptrs + 1, outer + 1, rows, n, f);
  constexpr int64_t kTile = 4096 / static_cast<int64_t>(sizeof(Out));
  alignas(64) Out tile[kTile];
  const char* in[N > 0 ? N : 1] = {};
  const int64_t no_step[N > 0 ? N : 1] = {};
  for (int64_t r = 0; r < rows; ++r) {
    Out* out = reinterpret_cast<Out*>(ptrs[0] + r * outer[0]);
    for (int64_t i0 = 0; i0 < n; i0 += kTile) {
      const int64_t m = std::min(kTile, n - i0);
      for (int k = 0; k < N; ++k) {
        const bool scalar = (S >> k) & 1u;
        in[k] = ptrs[k + 1] + r * outer[k + 1] + (scalar ? 0 : i0 * static_cast<int64_t>(sizeof(In)));
      }
      fill_rows<Out, In, N, S>(reinterpret_cast<char*>(tile), 0, in, no_step, 1, m, f);
      stream_store_bytes(out + i0, tile, static_cast<std::size_t>(m) * sizeof(Out));
    }
  }
  stream_fence();
}

// A contiguous 16-bit run (inputs and output fp16 or bf16 alike), as the Vector unit does it: copy each
// input's tile in widened to fp32, apply f over fp32 tiles, round the tile out once. GCC vectorises no
// per-element fp16 conversion (the scalar bit arithmetic of Half cost 2-3x against bf16 here), and in
// tiles f's loop is a plain fp32 loop; the conversions are vcvtph2ps / vcvtps2ph and bf16's shifts.
// A stride-0 input (a host scalar or a broadcast along the run) fills its tile once.
template <typename T, int N, typename F>
__attribute__((flatten)) inline void reduced_float_run(T* out, const T* const* in, const bool* scalar_in,
                                                       int64_t n, bool stream, const F& f_in) {
  const F f = f_in;
  constexpr int64_t kTile = 1024;  // 4 KiB of fp32 per operand: all tiles stay in L1
  alignas(64) float x[N > 0 ? N : 1][kTile];
  alignas(64) float y[kTile];
  alignas(64) T narrow[kTile];
  for (int k = 0; k < N; ++k) {
    if (scalar_in[k]) std::fill(x[k], x[k] + kTile, static_cast<float>(in[k][0]));
  }
  for (int64_t i0 = 0; i0 < n; i0 += kTile) {
    const int64_t m = std::min(kTile, n - i0);
    for (int k = 0; k < N; ++k) {
      if (!scalar_in[k]) widen_row(x[k], in[k] + i0, m);
    }
    if constexpr (N == 0) {
      for (int64_t j = 0; j < m; ++j) y[j] = static_cast<float>(f());
    } else if constexpr (N == 1) {
      for (int64_t j = 0; j < m; ++j) y[j] = static_cast<float>(f(x[0][j]));
    } else if constexpr (N == 2) {
      for (int64_t j = 0; j < m; ++j) y[j] = static_cast<float>(f(x[0][j], x[1][j]));
    } else {
      for (int64_t j = 0; j < m; ++j) y[j] = static_cast<float>(f(x[0][j], x[1][j], x[2][j]));
    }
    if (!stream) {
      narrow_row(out + i0, y, m);
    } else {
      narrow_row(narrow, y, m);
      stream_store_bytes(out + i0, narrow, static_cast<std::size_t>(m) * sizeof(T));
    }
  }
  if (stream) stream_fence();
}

// An op functor cheap enough to run over 16 lanes in registers (add, sub, mul, div; exp, tanh, sigmoid, silu, erf
// and the gelus of fast_math.h, branch-free): the caller marks it with in_registers(f). Other functors keep
// reduced_float_run's tiles, whose long loops GCC's loop vectoriser takes (a libm call over 16 lanes was left
// scalar).
template <typename F>
struct InRegisters {
  F f;
  template <typename... X>
  auto operator()(X... x) const {
    return f(x...);
  }
};
template <typename F>
InRegisters<F> in_registers(F f) {
  return {f};
}
template <typename F>
struct is_in_registers : std::false_type {};
template <typename F>
struct is_in_registers<InRegisters<F>> : std::true_type {};

// x[0..16) = the count (<= 16) elements at p in fp32, the rest 0: in registers for a full 16 (vec16.h).
template <typename T>
__attribute__((always_inline)) inline void load_lanes(float* x, const T* p, int64_t count) {
  if (count == 16) {
    store16(x, load16(p));
    return;
  }
  for (int64_t k = 0; k < 16; ++k) x[k] = k < count ? static_cast<float>(p[k]) : 0.0f;
}

// A contiguous 16-bit run of an in_registers unary or binary functor, as CPU eager's vectorised loop does it: 16
// elements of each input loaded and converted into fp32 registers, f over the 16 lanes, rounded and stored: one
// pass, where reduced_float_run's tiles make three over L1 (16-bit add and mul ran 1.3-1.6x CPU eager on an AVX2
// host). One input of a binary functor may be stride 0 (one fp32 scalar), not both.
template <int N, typename T, typename F>
__attribute__((flatten)) inline void reduced_float_lanes(T* out, const T* a, const T* b, const bool* scalar_in,
                                                         int64_t n, bool stream, const InRegisters<F>& op) {
  const F f = op.f;
  // y[0..16) = f over the 16 elements from i, count of them real
  const auto run = [&](auto body) {
    constexpr int64_t kTile = 2048;
    alignas(64) T narrow[kTile];
    alignas(64) float y[16];
    for (int64_t i0 = 0; i0 < n; i0 += kTile) {
      const int64_t m = std::min(kTile, n - i0);
      T* dst = stream ? narrow : out + i0;
      int64_t j = 0;
      for (; j + 16 <= m; j += 16) {
        body(y, i0 + j, 16);
        store16(dst + j, load16(y));
      }
      if (j < m) {
        body(y, i0 + j, m - j);
        for (int64_t k = 0; k < m - j; ++k) dst[j + k] = T(y[k]);
      }
      if (stream) stream_store_bytes(out + i0, narrow, static_cast<std::size_t>(m) * sizeof(T));
    }
    if (stream) stream_fence();
  };
  alignas(64) float x0[16], x1[16];
  if constexpr (N == 1) {
    run([&](float* y, int64_t i, int64_t count) {
      load_lanes(x0, a + i, count);
      for (int j = 0; j < 16; ++j) y[j] = static_cast<float>(f(x0[j]));
    });
  } else if (scalar_in[1]) {
    const float bv = static_cast<float>(b[0]);
    run([&](float* y, int64_t i, int64_t count) {
      load_lanes(x0, a + i, count);
      for (int j = 0; j < 16; ++j) y[j] = static_cast<float>(f(x0[j], bv));
    });
  } else if (scalar_in[0]) {
    const float av = static_cast<float>(a[0]);
    run([&](float* y, int64_t i, int64_t count) {
      load_lanes(x1, b + i, count);
      for (int j = 0; j < 16; ++j) y[j] = static_cast<float>(f(av, x1[j]));
    });
  } else {
    run([&](float* y, int64_t i, int64_t count) {
      load_lanes(x0, a + i, count);
      load_lanes(x1, b + i, count);
      for (int j = 0; j < 16; ++j) y[j] = static_cast<float>(f(x0[j], x1[j]));
    });
  }
}

// A unary or binary functor whose vectorised form holds only within a range may name the elements outside it:
// f.exceptional(x...) is true for them and f.exact(x...) evaluates them one at a time (a call inside the main
// loop would keep it scalar). Such runs go in chunks: the exceptional elements of a chunk are evaluated first
// (the output may alias an input), the vectorised loop writes the chunk, and they are written over it.
template <typename F, typename C, int N, typename = void>
struct has_exceptions : std::false_type {};
template <typename F, typename C>
struct has_exceptions<F, C, 1, std::void_t<decltype(std::declval<const F&>().exceptional(std::declval<C>())),
                                           decltype(std::declval<const F&>().exact(std::declval<C>()))>>
    : std::true_type {};
template <typename F, typename C>
struct has_exceptions<
    F, C, 2,
    std::void_t<decltype(std::declval<const F&>().exceptional(std::declval<C>(), std::declval<C>())),
                decltype(std::declval<const F&>().exact(std::declval<C>(), std::declval<C>()))>> : std::true_type {};

// g(inputs of element i)
template <typename In, int N, typename G>
inline auto with_inputs(char* const* p, const int64_t* inner, int64_t i, const G& g) {
  if constexpr (N == 1) {
    return g(load<In>(p[1] + i * inner[1]));
  } else {
    return g(load<In>(p[1] + i * inner[1]), load<In>(p[2] + i * inner[2]));
  }
}

template <typename Out, typename In, int N, typename F, typename Run>
void run_with_exceptions(char* const* ptrs, const int64_t* inner, int64_t n, const F& f, const Run& run) {
  constexpr int64_t kChunk = 1024;
  Out exact[kChunk];
  int32_t where[kChunk];
  const auto exceptional = [&f](auto... x) { return f.exceptional(x...); };
  bool contiguous = true;
  for (int k = 1; k <= N; ++k) contiguous = contiguous && inner[k] == static_cast<int64_t>(sizeof(In));
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t m = std::min(kChunk, n - c0);
    char* p[N + 1];
    for (int k = 0; k <= N; ++k) p[k] = ptrs[k] + c0 * inner[k];
    bool any = false;
    if (contiguous) {  // one vectorised pass: the common chunk has none
      const In* a = reinterpret_cast<const In*>(p[1]);
      const In* b = reinterpret_cast<const In*>(p[N]);
      for (int64_t i = 0; i < m; ++i) {
        if constexpr (N == 1) {
          any |= f.exceptional(static_cast<compute_t<In>>(a[i]));
        } else {
          any |= f.exceptional(static_cast<compute_t<In>>(a[i]), static_cast<compute_t<In>>(b[i]));
        }
      }
    } else {
      for (int64_t i = 0; i < m; ++i) any |= with_inputs<In, N>(p, inner, i, exceptional);
    }
    int32_t count = 0;
    for (int64_t i = 0; any && i < m; ++i) {
      if (with_inputs<In, N>(p, inner, i, exceptional)) {
        exact[count] = static_cast<Out>(with_inputs<In, N>(p, inner, i, [&f](auto... x) { return f.exact(x...); }));
        where[count++] = static_cast<int32_t>(i);
      }
    }
    run(p, inner, m);
    for (int32_t k = 0; k < count; ++k) *reinterpret_cast<Out*>(p[0] + where[k] * inner[0]) = exact[k];
  }
}

}  // namespace detail

// A block of elementwise_range: `rows` runs of n elements, run r at ptrs[k] + r * outer[k], element i at
// + i * inner[k] (outer is read only for rows > 1).
template <typename Out, typename In, int N, typename F>
inline void elementwise_rows(char* const* ptrs, const int64_t* inner, int64_t n, int64_t rows, const int64_t* outer,
                             const F& f, bool stream) {
  bool contiguous = inner[0] == static_cast<int64_t>(sizeof(Out));
  bool scalar_in[N > 0 ? N : 1] = {};
  for (int k = 0; k < N; ++k) {
    scalar_in[k] = inner[k + 1] == 0;
    contiguous = contiguous && (inner[k + 1] == static_cast<int64_t>(sizeof(In)) || scalar_in[k]);
  }
  if constexpr (std::is_same_v<Out, In> && is_reduced_float_v<In>) {
    if (contiguous && n >= 64) {
      for (int64_t r = 0; r < rows; ++r) {
        Out* out = reinterpret_cast<Out*>(ptrs[0] + r * outer[0]);
        const In* ins[N > 0 ? N : 1];
        for (int k = 0; k < N; ++k) ins[k] = reinterpret_cast<const In*>(ptrs[k + 1] + r * outer[k + 1]);
        if constexpr (detail::is_in_registers<F>::value && N == 2) {  // two stride-0 inputs: the tiles fill them
          if (!scalar_in[0] || !scalar_in[1]) {
            detail::reduced_float_lanes<2>(out, ins[0], ins[1], scalar_in, n, stream, f);
            continue;
          }
        }
        if constexpr (detail::is_in_registers<F>::value && N == 1) {
          if (!scalar_in[0]) {
            detail::reduced_float_lanes<1>(out, ins[0], ins[0], scalar_in, n, stream, f);
            continue;
          }
        }
        detail::reduced_float_run<In, N>(out, ins, scalar_in, n, stream, f);
      }
      return;
    }
  }
  if (contiguous) {
    if constexpr (N == 0) return detail::write_rows<Out, In, 0, 0>(ptrs, outer, rows, n, stream, f);
    if constexpr (N == 1) {
      if (!scalar_in[0]) return detail::write_rows<Out, In, 1, 0>(ptrs, outer, rows, n, stream, f);
    }
    if constexpr (N == 2) {
      if (!scalar_in[0] && !scalar_in[1]) return detail::write_rows<Out, In, 2, 0>(ptrs, outer, rows, n, stream, f);
      if (!scalar_in[0]) return detail::write_rows<Out, In, 2, 2>(ptrs, outer, rows, n, stream, f);
      if (!scalar_in[1]) return detail::write_rows<Out, In, 2, 1>(ptrs, outer, rows, n, stream, f);
    }
    if constexpr (N == 3) {
      if (!scalar_in[0] && !scalar_in[1] && !scalar_in[2])
        return detail::write_rows<Out, In, 3, 0>(ptrs, outer, rows, n, stream, f);
    }
  }
  // strided: element by element, run by run
  static_assert(N <= 3, "the engine handles nullary to ternary functors");
  for (int64_t r = 0; r < rows; ++r) {
    char* p[N + 1];
    for (int k = 0; k <= N; ++k) p[k] = ptrs[k] + r * outer[k];
    for (int64_t i = 0; i < n; ++i) {
      Out* o = reinterpret_cast<Out*>(p[0] + i * inner[0]);
      if constexpr (N == 0) {
        *o = static_cast<Out>(f());
      } else if constexpr (N == 1) {
        *o = static_cast<Out>(f(detail::load<In>(p[1] + i * inner[1])));
      } else if constexpr (N == 2) {
        *o = static_cast<Out>(f(detail::load<In>(p[1] + i * inner[1]), detail::load<In>(p[2] + i * inner[2])));
      } else {
        *o = static_cast<Out>(f(detail::load<In>(p[1] + i * inner[1]), detail::load<In>(p[2] + i * inner[2]),
                                detail::load<In>(p[3] + i * inner[3])));
      }
    }
  }
}

// One run of elementwise_range: n elements at ptrs[k] + i * inner[k].
template <typename Out, typename In, int N, typename F>
inline void elementwise_run(char* const* ptrs, const int64_t* inner, int64_t n, const F& f, bool stream) {
  elementwise_rows<Out, In, N>(ptrs, inner, n, 1, inner, f, stream);
}

// out = f(in0, ..., in{N-1}) over [begin, end). Out/In are storage types; f works on compute types.
// `stream`: contiguous runs write the output with streaming stores (see launch_elementwise).
template <typename Out, typename In, int N, typename F>
inline void elementwise_range(const ElementwiseIter& it, int64_t begin, int64_t end, const F& f,
                              bool stream = false) {
  using C = compute_t<In>;
  if constexpr (detail::has_exceptions<F, C, N>::value) {
    const auto run = [&](char* const* ptrs, const int64_t* inner, int64_t n) {
      elementwise_run<Out, In, N>(ptrs, inner, n, f, stream);
    };
    detail::for_each_run<N + 1>(it, begin, end, [&](char* const* ptrs, const int64_t* inner, int64_t n) {
      detail::run_with_exceptions<Out, In, N>(ptrs, inner, n, f, run);
    });
  } else {
    detail::for_each_rows<N + 1>(it, begin, end,
                                 [&](char* const* ptrs, const int64_t* inner, int64_t n, int64_t rows,
                                     const int64_t* outer) {
                                   elementwise_rows<Out, In, N>(ptrs, inner, n, rows, outer, f, stream);
                                 });
  }
}

}  // namespace npu_kernels

#include "npu_kernels/launch.h"

namespace npu_kernels {

// Output bytes from which contiguous runs use streaming stores: far beyond the caches, where a plain store
// would first read every line it writes; below it, a consumer op may still find the output in cache.
constexpr int64_t kStreamOutputBytes = int64_t{16} << 20;

// True if the output should be streamed: large, and not an input as well (in place, its lines are in
// cache already and streaming them would only evict them).
inline bool stream_output(const ElementwiseIter& it, int64_t out_size) {
  if (it.numel() * out_size < kStreamOutputBytes) return false;
  for (int k = it.noutputs; k < it.noutputs + it.ninputs; ++k)
    if (!it.is_scalar[k] && it.data[k] == it.data[0]) return false;
  return true;
}

namespace detail {

// The parts of a batch and where each starts in the launch's linear range (offsets.back() = total).
struct ElementwiseBatch {
  std::vector<ElementwiseIter> parts;
  std::vector<int64_t> offsets;
};

// What an element costs in the launch records: each tensor input read and each output written once per
// element (a broadcast input counts as if materialised, host scalars not at all), one Vector op.
struct Traffic {
  std::uint64_t read_per_elem, write_per_elem;
  void record(const npu_sim::BlockContext& ctx, int64_t n) const {
    const auto u = static_cast<std::uint64_t>(n);
    npu_sim::record_traffic(ctx, read_per_elem * u, write_per_elem * u, 0, u);
  }
};
template <typename Out, typename In>
Traffic traffic_of(const ElementwiseIter& it) {
  std::uint64_t tensors = 0;
  for (int k = it.noutputs; k < it.noperands(); ++k) tensors += it.is_scalar[k] ? 0 : 1;
  return {tensors * sizeof(In), static_cast<std::uint64_t>(it.noutputs) * sizeof(Out)};
}

template <typename Out, typename In, int N, typename F>
npu_sim::Status launch_batch(npu_sim::Stream stream, const char* name, const ElementwiseIter& it, F f,
                             int64_t grain) {
  auto batch = std::make_shared<ElementwiseBatch>();
  batch->offsets.push_back(0);
  for (int k = 0; k < it.nparts; ++k) {
    if (it.parts[k].numel() == 0) continue;
    batch->parts.push_back(it.parts[k]);
    batch->offsets.push_back(batch->offsets.back() + it.parts[k].numel());
  }
  const Traffic traffic = traffic_of<Out, In>(it.parts[0]);
  return parallel_for(stream, name, batch->offsets.back(), grain,
                      [batch, f, traffic](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        traffic.record(ctx, e - b);
                        const auto& off = batch->offsets;
                        const auto first = std::upper_bound(off.begin(), off.end(), b) - off.begin() - 1;
                        auto k = static_cast<std::size_t>(first);
                        for (; b < e; ++k) {
                          const int64_t stop = std::min(e, off[k + 1]);
                          elementwise_range<Out, In, N>(batch->parts[k], b - off[k], stop - off[k], f);
                          b = stop;
                        }
                      });
}

}  // namespace detail

// Launches elementwise_range over the whole iterator (or batch) on `stream`, split over AI-core blocks.
template <typename Out, typename In, int N, typename F>
inline npu_sim::Status launch_elementwise(npu_sim::Stream stream, const char* name, const ElementwiseIter& it, F f) {
  // 32K elements per block at least (CPU eager's grain): smaller ops run as one block on the stream worker. Ops
  // come back to back in a model step, and the pool threads still poll then: 64K fp32 elements took 7.3 / 12.2 /
  // 18.9 us for add / div / exp as one block and 5.8 / 8.3 / 11.4 as two (grain 64K before).
  constexpr int64_t kGrain = 1 << 15;
  if (it.nparts > 0) return detail::launch_batch<Out, In, N>(stream, name, it, f, kGrain);
  if (it.noperands() < N + 1 || it.noperands() > kMaxOperands) return npu_sim::Status::kInternal;
  const bool streamed = stream_output(it, sizeof(Out));
  const detail::Traffic traffic = detail::traffic_of<Out, In>(it);
  return parallel_for(stream, name, it.numel(), kGrain,
                      [it, f, streamed, traffic](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        traffic.record(ctx, e - b);
                        elementwise_range<Out, In, N>(it, b, e, f, streamed);
                      });
}

}  // namespace npu_kernels
