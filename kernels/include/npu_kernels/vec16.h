// 16-lane fp32 vectors with loads / stores from fp32, fp16 and bf16 memory that convert in registers
// (vcvtph2ps / vcvtps2ph for fp16 where the build has them): the Vector unit's row kernels read and write
// 16-bit rows without widening them into a buffer first.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "npu_kernels/dtype.h"

// Translation units built without AVX (the torch glue includes the engine's headers) would warn that these inline
// functions' vector returns change the ABI: they are always inlined into kernels built for the machine.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace npu_kernels::detail {

typedef float v8sf __attribute__((vector_size(32)));
typedef uint32_t v8su __attribute__((vector_size(32)));
typedef int32_t v8si __attribute__((vector_size(32)));
typedef uint16_t v8hu __attribute__((vector_size(16)));

#if defined(__AVX512F__)
// One zmm register: GCC vector extensions.
typedef float v16sf __attribute__((vector_size(64)));
#else
// Two 8-lane halves. Without AVX-512, GCC 12 keeps a 64-byte vector extension in memory between statements: a
// loop-carried sum went through the stack 8 bytes at a time and each load16 / store16 through 16-byte pieces,
// which left the 16-bit rows 2x slower than CPU eager on an AVX2 host. The halves stay in ymm registers. Lane j
// is lo[j] for j < 8, hi[j - 8] after: the same 16-lane order (and so the same sums) as the zmm form.
struct v16sf {
  v8sf lo, hi;
  float operator[](int j) const { return j < 8 ? lo[j] : hi[j - 8]; }
  v16sf& operator+=(v16sf o) {
    lo += o.lo;
    hi += o.hi;
    return *this;
  }
};
inline v16sf operator+(v16sf a, v16sf b) { return {a.lo + b.lo, a.hi + b.hi}; }
inline v16sf operator-(v16sf a, v16sf b) { return {a.lo - b.lo, a.hi - b.hi}; }
inline v16sf operator*(v16sf a, v16sf b) { return {a.lo * b.lo, a.hi * b.hi}; }
inline v16sf operator-(v16sf a, float s) { return {a.lo - s, a.hi - s}; }
inline v16sf operator*(v16sf a, float s) { return {a.lo * s, a.hi * s}; }
inline v16sf operator*(float s, v16sf a) { return {s * a.lo, s * a.hi}; }
#endif

inline v16sf splat16(float s) {
  const float lanes[16] = {s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s};
  v16sf x;
  std::memcpy(&x, lanes, sizeof(x));
  return x;
}
// Lane-wise |x| (the sign bit cleared, as std::fabs).
inline v16sf abs16(v16sf x) {
#if defined(__AVX512F__)
  typedef uint32_t v16u __attribute__((vector_size(64)));
  return (v16sf)((v16u)x & 0x7fffffffu);
#else
  return {(v8sf)((v8su)x.lo & 0x7fffffffu), (v8sf)((v8su)x.hi & 0x7fffffffu)};
#endif
}
// Lane-wise max(x, m) where a NaN lane of x never wins (x > m is false): the running max of lane_max.
inline v16sf max16(v16sf x, v16sf m) {
#if defined(__AVX512F__)
  return x > m ? x : m;
#else
  return {x.lo > m.lo ? x.lo : m.lo, x.hi > m.hi ? x.hi : m.hi};
#endif
}

#if defined(__AVX512F__)
inline v16sf load16(const float* p) {
  v16sf x;
  std::memcpy(&x, p, sizeof(x));
  return x;
}
inline void store16(float* p, v16sf x) { std::memcpy(p, &x, sizeof(x)); }
#else
// By halves: a memcpy of the whole struct went through 16-byte pieces on the stack.
inline v16sf load16(const float* p) {
  v16sf x;
  std::memcpy(&x.lo, p, sizeof(x.lo));
  std::memcpy(&x.hi, p + 8, sizeof(x.hi));
  return x;
}
inline void store16(float* p, v16sf x) {
  std::memcpy(p, &x.lo, sizeof(x.lo));
  std::memcpy(p + 8, &x.hi, sizeof(x.hi));
}
#endif

// Round to nearest even, NaN stays a quiet NaN: float_to_bf16_bits lane by lane, in 8-lane halves (GCC lowers a
// 16-lane compare without AVX-512 to one scalar compare per lane; AVX2 has no unsigned compare, so the NaN test
// is signed: both sides are below 2^31).
inline v8su bf16_round8(v8su u) {
  const v8su rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const v8su quiet = (u >> 16) | 0x40u;
  const v8su nan = (v8su)((v8si)(u & 0x7fffffffu) > 0x7f800000);
  return (nan & quiet) | (~nan & rounded);
}

#if defined(__AVX512F__)
// bf16: the widening and narrowing by AVX-512 instructions (GCC splits __builtin_convertvector's 16 -> 32-bit
// widening into 128-bit pieces, which cost 1.5x here). The maskz intrinsics: the plain ones merge into an
// undefined vector, which GCC 12 warns about.
typedef uint32_t v16su __attribute__((vector_size(64)));
inline v16sf load16(const BFloat16* p) {
  const __m512i w = _mm512_maskz_cvtepu16_epi32(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  v16su u;
  std::memcpy(&u, &w, sizeof(u));
  u <<= 16;
  v16sf x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
}
// Rounding as bf16_round8, in one zmm with a mask for the NaN lanes (by 8-lane halves GCC stored both halves to
// the stack and reloaded them as one zmm, a failed store forwarding per 16 elements: bf16 runs 1.2-1.5x fp16's).
inline void store16(BFloat16* p, v16sf x) {
  __m512i u;
  std::memcpy(&u, &x, sizeof(u));
  const __m512i high = _mm512_maskz_srli_epi32(0xffff, u, 16);
  const __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_maskz_srli_epi32(0xffff, _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  const __m512i w = _mm512_mask_or_epi32(rounded, nan, high, _mm512_set1_epi32(0x40));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(&p->bits), _mm512_maskz_cvtepi32_epi16(0xffff, w));
}
inline v16sf load16(const Half* p) {
  const __m512 v = _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  v16sf x;
  std::memcpy(&x, &v, sizeof(x));
  return x;
}
inline void store16(Half* p, v16sf x) {  // round to nearest even (float_to_half_bits' rounding)
  __m512 v;
  std::memcpy(&v, &x, sizeof(v));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_maskz_cvtps_ph(0xffff, v, _MM_FROUND_TO_NEAREST_INT));
}
#else
inline v8sf load8(const BFloat16* p) {
#if defined(__AVX2__)  // one vpmovzxwd from memory (__builtin_convertvector: two on xmm halves and an insert)
  return (v8sf)_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16);
#else
  v8hu h;
  std::memcpy(&h, p, sizeof(h));
  return (v8sf)(__builtin_convertvector(h, v8su) << 16);
#endif
}
inline void store8(BFloat16* p, v8sf x) {
  const v8hu h = __builtin_convertvector(bf16_round8((v8su)x), v8hu);
  std::memcpy(p, &h, sizeof(h));
}
inline v8sf load8(const Half* p) {
#if defined(__F16C__)
  return (v8sf)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#else
  v8sf x;
  for (int j = 0; j < 8; ++j) x[j] = half_bits_to_float(p[j].bits);
  return x;
#endif
}
inline void store8(Half* p, v8sf x) {  // round to nearest even (float_to_half_bits' rounding)
#if defined(__F16C__)
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph((__m256)x, _MM_FROUND_TO_NEAREST_INT));
#else
  for (int j = 0; j < 8; ++j) p[j].bits = float_to_half_bits(x[j]);
#endif
}
inline v16sf load16(const BFloat16* p) { return {load8(p), load8(p + 8)}; }
inline v16sf load16(const Half* p) { return {load8(p), load8(p + 8)}; }
inline void store16(BFloat16* p, v16sf x) {
  store8(p, x.lo);
  store8(p + 8, x.hi);
}
inline void store16(Half* p, v16sf x) {
  store8(p, x.lo);
  store8(p + 8, x.hi);
}
#endif

#if defined(__AVX512F__)
// The 16 lanes folded pairwise (8 + 8, 4 + 4, 2 + 2, 1 + 1) by add or max, in registers (through a stack array the
// lanes cost a store and 15 reloads: short softmax rows were bound by it).
template <bool kMax>
inline float fold16(v16sf a) {
  __m512 z;
  std::memcpy(&z, &a, sizeof(z));
  const auto op8 = [](__m256 x, __m256 y) { return kMax ? _mm256_max_ps(x, y) : _mm256_add_ps(x, y); };
  const auto op4 = [](__m128 x, __m128 y) { return kMax ? _mm_max_ps(x, y) : _mm_add_ps(x, y); };
  const __m256 h8 = op8(_mm512_maskz_extractf32x8_ps(0xff, z, 0), _mm512_maskz_extractf32x8_ps(0xff, z, 1));
  const __m128 h4 = op4(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
  const __m128 h2 = op4(h4, _mm_movehl_ps(h4, h4));
  return _mm_cvtss_f32(op4(h2, _mm_shuffle_ps(h2, h2, 1)));
}
#endif

// Pairwise sum of the 16 lanes (8 + 8, 4 + 4, ...): the same order as a 16-lane scalar-array reduction.
inline float hsum16(v16sf a) {
#if defined(__AVX512F__)
  return fold16<false>(a);
#else
  float t[8];
  const v8sf s = a.lo + a.hi;
  std::memcpy(t, &s, sizeof(t));
  for (int w = 4; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) t[j] += t[j + w];
  return t[0];
#endif
}

}  // namespace npu_kernels::detail

#pragma GCC diagnostic pop
