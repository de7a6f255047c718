// 16-lane fp32 vectors (GCC vector extensions) with loads / stores from fp32, fp16 and bf16 memory that
// convert in registers (vcvtph2ps / vcvtps2ph for fp16 where the build has them): the Vector unit's
// row kernels read and write 16-bit rows without widening them into a buffer first.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || defined(__F16C__)
#include <immintrin.h>
#endif

#include "dtype_convert.h"

namespace npu_kernels::detail {

typedef float v16sf __attribute__((vector_size(64)));
typedef uint32_t v16su __attribute__((vector_size(64)));
typedef uint32_t v8su __attribute__((vector_size(32)));
typedef int32_t v8si __attribute__((vector_size(32)));
typedef uint16_t v16hu __attribute__((vector_size(32)));

inline v16sf load16(const float* p) {
  v16sf x;
  std::memcpy(&x, p, sizeof(x));
  return x;
}
inline void store16(float* p, v16sf x) { std::memcpy(p, &x, sizeof(x)); }

// bf16: the widening and narrowing by AVX-512 instructions where the build has them (GCC splits
// __builtin_convertvector's 16 -> 32-bit widening into 128-bit pieces, which cost 1.5x here), the arithmetic in
// vector extensions. The maskz intrinsics: the plain ones merge into an undefined vector, which GCC 12 warns about.
inline v16su widen_u16(const uint16_t* p) {
#if defined(__AVX512F__)
  const __m512i w = _mm512_maskz_cvtepu16_epi32(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  v16su u;
  std::memcpy(&u, &w, sizeof(u));
  return u;
#else
  v16hu h;
  std::memcpy(&h, p, sizeof(h));
  return __builtin_convertvector(h, v16su);
#endif
}
inline void narrow_u32(uint16_t* p, v16su u) {
#if defined(__AVX512F__)
  __m512i w;
  std::memcpy(&w, &u, sizeof(w));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_maskz_cvtepi32_epi16(0xffff, w));
#else
  const v16hu h = __builtin_convertvector(u, v16hu);
  std::memcpy(p, &h, sizeof(h));
#endif
}

inline v16sf load16(const BFloat16* p) {
  const v16su u = widen_u16(&p->bits) << 16;
  v16sf x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
}
// Round to nearest even, NaN stays a quiet NaN: float_to_bf16_bits lane by lane, in 8-lane halves: GCC lowers a
// 16-lane compare without AVX-512 to one scalar compare per lane (bf16 stores ran 4x slower on an AVX2 CPU), and
// AVX2 has no unsigned compare (the NaN test is signed: both sides are below 2^31).
inline v8su bf16_round8(v8su u) {
  const v8su rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const v8su quiet = (u >> 16) | 0x40u;
  const v8su nan = (v8su)((v8si)(u & 0x7fffffffu) > 0x7f800000);
  return (nan & quiet) | (~nan & rounded);
}
inline void store16(BFloat16* p, v16sf x) {
  v8su half[2];
  std::memcpy(half, &x, sizeof(half));
  half[0] = bf16_round8(half[0]);
  half[1] = bf16_round8(half[1]);
  v16su u;
  std::memcpy(&u, half, sizeof(u));
  narrow_u32(&p->bits, u);
}

inline v16sf load16(const Half* p) {
  v16sf x;
#if defined(__AVX512F__)
  // the maskz forms: the plain intrinsics merge into an undefined vector, which GCC 12 warns about
  const __m512 v = _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  std::memcpy(&x, &v, sizeof(x));
#elif defined(__F16C__)
  const __m256 lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m256 hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
  std::memcpy(&x, &lo, sizeof(lo));
  std::memcpy(reinterpret_cast<char*>(&x) + sizeof(lo), &hi, sizeof(hi));
#else
  for (int j = 0; j < 16; ++j) x[j] = half_bits_to_float(p[j].bits);
#endif
  return x;
}
// Round to nearest even (vcvtps2ph's and float_to_half_bits' rounding).
inline void store16(Half* p, v16sf x) {
#if defined(__AVX512F__)
  __m512 v;
  std::memcpy(&v, &x, sizeof(v));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_maskz_cvtps_ph(0xffff, v, _MM_FROUND_TO_NEAREST_INT));
#elif defined(__F16C__)
  __m256 lo, hi;
  std::memcpy(&lo, &x, sizeof(lo));
  std::memcpy(&hi, reinterpret_cast<const char*>(&x) + sizeof(lo), sizeof(hi));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(lo, _MM_FROUND_TO_NEAREST_INT));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 8), _mm256_cvtps_ph(hi, _MM_FROUND_TO_NEAREST_INT));
#else
  for (int j = 0; j < 16; ++j) p[j].bits = float_to_half_bits(x[j]);
#endif
}

// Pairwise sum of the 16 lanes (8 + 8, 4 + 4, ...): the same order as a 16-lane scalar-array reduction.
inline float hsum16(v16sf a) {
  float t[16];
  std::memcpy(t, &a, sizeof(t));
  for (int w = 8; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) t[j] += t[j + w];
  return t[0];
}

}  // namespace npu_kernels::detail
