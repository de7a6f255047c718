// 16-lane row math of the Vector unit shared by the softmax / norm kernels (nn.cpp) and fused attention: row sums,
// max, dot and squared deviations in 16-lane vectors (vec16.h), and the softmax row's exp(x - m) with its sum in one
// pass. GCC's SLP pass leaves the scalar-lane forms of these loops scalar; the generic templates serve float64.
// Users need -fno-trapping-math (kernels/CMakeLists.txt), as fast_math.h's.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "dtype_convert.h"
#include "fast_math.h"
#include "npu_kernels/vec16.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace npu_kernels::detail {

template <typename A>
inline A lane_sum(const A* v, int64_t n) {
  A lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) lanes[j] += v[i + j];
  }
  A t = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  for (; i < n; ++i) t += v[i];
  return t;
}

// The largest element; a NaN never wins (v > m is false), so a NaN row reaches its sum through exp instead.
template <typename A>
inline A lane_max(const A* v, int64_t n) {
  A lanes[8];
  for (int j = 0; j < 8; ++j) lanes[j] = -std::numeric_limits<A>::infinity();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) lanes[j] = v[i + j] > lanes[j] ? v[i + j] : lanes[j];
  }
  A m = lanes[0];
  for (int j = 1; j < 8; ++j) m = lanes[j] > m ? lanes[j] : m;
  for (; i < n; ++i) m = v[i] > m ? v[i] : m;
  return m;
}

// Sums f(i) for i in [0, n) over 16-lane blocks (f returns the block at i) in four accumulators (two left fp32 /
// fp16 softmax bound by the add latency), then the scalar tail with g(i).
template <typename F, typename G>
inline float lane_reduce_sum(int64_t n, F&& f, G&& g) {
  v16sf a0 = {}, a1 = {}, a2 = {}, a3 = {};
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    a0 += f(i);
    a1 += f(i + 16);
    a2 += f(i + 32);
    a3 += f(i + 48);
  }
  for (; i + 16 <= n; i += 16) a0 += f(i);
  float t = hsum16((a0 + a1) + (a2 + a3));
  for (; i < n; ++i) t += g(i);
  return t;
}

template <>
inline float lane_sum<float>(const float* v, int64_t n) {
  return lane_reduce_sum(n, [v](int64_t i) { return load16(v + i); }, [v](int64_t i) { return v[i]; });
}
template <>
inline float lane_max<float>(const float* v, int64_t n) {
  const float ninf = -std::numeric_limits<float>::infinity();
  v16sf a = splat16(ninf), b = a;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a = max16(load16(v + i), a);
    b = max16(load16(v + i + 16), b);
  }
  for (; i + 16 <= n; i += 16) a = max16(load16(v + i), a);
#if defined(__AVX512F__)
  if (i < n) {  // the tail as one masked block, -inf in the lanes past the row
    const __m512 t = _mm512_mask_loadu_ps(_mm512_set1_ps(ninf), static_cast<__mmask16>((1u << (n - i)) - 1u), v + i);
    v16sf tv;
    std::memcpy(&tv, &t, sizeof(tv));
    b = max16(tv, b);
    i = n;
  }
#endif
  a = max16(b, a);
#if defined(__AVX512F__)
  return fold16<true>(a);  // no lane holds a NaN (max16 never takes one): the tree's max is lane_max's value
#else
  float m = a[0];
  for (int j = 1; j < 16; ++j) m = a[j] > m ? a[j] : m;
  for (; i < n; ++i) m = v[i] > m ? v[i] : m;
  return m;
#endif
}

// sum((v[i] - mean)^2) with the same lane layout as lane_sum.
template <typename A>
inline A lane_sqdev(const A* v, int64_t n, A mean) {
  A t = 0;
  for (int64_t i = 0; i < n; ++i) t += (v[i] - mean) * (v[i] - mean);
  return t;
}
template <>
inline float lane_sqdev<float>(const float* v, int64_t n, float mean) {
  return lane_reduce_sum(
      n,
      [v, mean](int64_t i) {
        const v16sf x = load16(v + i) - mean;
        return x * x;
      },
      [v, mean](int64_t i) { return (v[i] - mean) * (v[i] - mean); });
}

// sum(a[i] * b[i]).
inline float lane_dot(const float* a, const float* b, int64_t n) {
  return lane_reduce_sum(n, [a, b](int64_t i) { return load16(a + i) * load16(b + i); },
                         [a, b](int64_t i) { return a[i] * b[i]; });
}

// fast_exp on 16 lanes, the same value in every lane. With AVX-512 2^n is one vscalefps, on arguments clamped to
// [-87, 88.8] so that no result is subnormal: a subnormal (or underflowing) result costs a microcode assist of
// ~150 cycles per instruction (a softmax row with masked -inf keys ran 13x slower). Lanes below -87 are 0; the rare
// block with a lane in [-104, -87), where fast_exp's result is subnormal, takes fast_exp lane by lane. The clamps
// are vmaxps / vminps with the input second, so a NaN lane passes through them and the arithmetic (the maskz forms:
// GCC 12 warns about the plain ones merging into an undefined vector). ~17 vector ops where the compiler's form of
// fast_exp took ~30 (fused attention's exp pass was ~25% of its bf16 forward).
NPU_VEC_INLINE v16sf exp16(v16sf x) {
#if defined(__AVX512F__)
  __m512 x0;
  std::memcpy(&x0, &x, sizeof(x0));
  const __m512 lo = _mm512_set1_ps(-87.0f);
  const __mmask16 under = _mm512_cmp_ps_mask(x0, lo, _CMP_LT_OQ);
  __m512 z = _mm512_maskz_max_ps(0xffff, lo, x0);
  z = _mm512_maskz_min_ps(0xffff, _mm512_set1_ps(88.8f), z);
  const __m512 shifter = _mm512_set1_ps(12582912.0f);  // exp_parts' rounding: n = (z log2(e) + 1.5 2^23) - 1.5 2^23
  const __m512 fn = _mm512_sub_ps(_mm512_fmadd_ps(z, _mm512_set1_ps(1.44269504088896341f), shifter), shifter);
  __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(0.693359375f), z);
  r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
  const __m512 e = _mm512_maskz_scalef_ps(static_cast<__mmask16>(~under), y, fn);
  v16sf out;
  std::memcpy(&out, &e, sizeof(out));
  const __mmask16 sub = under & _mm512_cmp_ps_mask(x0, _mm512_set1_ps(-104.0f), _CMP_GE_OQ);
  if (__builtin_expect(sub != 0, 0)) {
    for (int j = 0; j < 16; ++j)
      if ((sub >> j) & 1) out[j] = fast_exp(x[j]);
  }
  return out;
#else
  float t[16];
  for (int j = 0; j < 16; ++j) t[j] = fast_exp(x[j]);
  v16sf out;
  std::memcpy(&out, t, sizeof(out));
  return out;
#endif
}

#if defined(__AVX512F__)
// sum over i in [0, n) of v_i = exp(x[i] * scale - m), each block of 16 handed to store(i, values, lane mask) first:
// lane_reduce_sum's four accumulators, with the tail as one masked block in the second (short rows, e.g. causal
// rows of a few dozen keys, are mostly tail). Out of line: inlined into a large caller, exp16's constants were
// spilled and reloaded from the stack in the loop (bf16 attention 6.1-7.4 -> 8.0 ms).
template <class Store>
__attribute__((noinline)) float exp_blocks(const float* x, int64_t n, float m, float scale, Store&& store) {
  const auto block = [&](int64_t i, __mmask16 k) {
    const __m512 z = _mm512_maskz_loadu_ps(k, x + i);
    v16sf v;
    std::memcpy(&v, &z, sizeof(v));
    v = exp16(v * scale - m);
    __m512 y;
    std::memcpy(&y, &v, sizeof(y));
    store(i, y, k);
    y = _mm512_maskz_mov_ps(k, y);
    std::memcpy(&v, &y, sizeof(v));
    return v;
  };
  v16sf a0 = {}, a1 = {}, a2 = {}, a3 = {};
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    a0 += block(i, 0xffff);
    a1 += block(i + 16, 0xffff);
    a2 += block(i + 32, 0xffff);
    a3 += block(i + 48, 0xffff);
  }
  for (; i + 16 <= n; i += 16) a0 += block(i, 0xffff);
  if (i < n) a1 += block(i, static_cast<__mmask16>((1u << (n - i)) - 1u));
  return hsum16((a0 + a1) + (a2 + a3));
}
#endif

// e[i] = exp(x[i] * scale - m) for i in [0, n), returning their sum in lane_sum's order; e may be x, or a 16-bit
// row (each exp rounded once on its way out; the sum is of the float32 values). One pass over the row. With
// scale 1 the argument is x - m exactly.
template <typename A, typename E>
inline A exp_sub_sum(const A* x, E* e, int64_t n, A m, A scale = A(1)) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<A, float> && std::is_same_v<E, float>) {
    return exp_blocks(x, n, m, scale, [e](int64_t i, __m512 y, __mmask16 k) { _mm512_mask_storeu_ps(e + i, k, y); });
  }
#endif
  if constexpr (std::is_same_v<A, float>) {
    return lane_reduce_sum(
        n,
        [x, e, m, scale](int64_t i) {
          const v16sf v = exp16(load16(x + i) * scale - m);
          store16(e + i, v);
          return v;
        },
        [x, e, m, scale](int64_t i) {
          const float v = fast_exp(x[i] * scale - m);
          e[i] = store_as<E>(v);
          return v;
        });
  } else {
    A t = 0;
    for (int64_t i = 0; i < n; ++i) {
      e[i] = fast_exp(x[i] * scale - m);
      t += e[i];
    }
    return t;
  }
}

// exp_sub_sum into a bf16 row rounded by vcvtneps2bf16 (round to nearest even, subnormal results to 0, as CPU's
// bf16 kernels on such CPUs): one instruction where the portable rounding takes seven. Only for CPUs with
// AVX512-BF16 (every AMX CPU has it); written as inline assembly so that no function needs that target.
inline float exp_sub_sum_cvtne(const float* x, BFloat16* e, int64_t n, float m, float scale) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__x86_64__)
  return exp_blocks(x, n, m, scale, [e](int64_t i, __m512 y, __mmask16 k) {
    __m256i h;
    asm("vcvtneps2bf16 %1, %0" : "=v"(h) : "v"(y));
    _mm256_mask_storeu_epi16(e + i, k, h);
  });
#else
  return exp_sub_sum(x, e, n, m, scale);
#endif
}

}  // namespace npu_kernels::detail

#pragma GCC diagnostic pop
