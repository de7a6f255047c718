// The dtype layer's run-time-dispatched row conversions (see dtype_convert.h).
#include "dtype_convert.h"

#include "npu_kernels/vec16.h"

#include <immintrin.h>

namespace npu_kernels {
namespace detail {

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

bool cpu_has_f16c() {
  static const bool has = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2");
  return has;
}

__attribute__((target("avx2"))) void half_row_to_float_avx2(float* dst, const uint16_t* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = half_bits_to_float(src[i]);
}

__attribute__((target("avx2,f16c"))) void half_row_to_float_f16c(float* dst, const uint16_t* src, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {  // vcvtph2ps: exact, subnormals, inf and NaN included
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = half_bits_to_float(src[i]);
}

__attribute__((target("avx2,f16c"))) void float_row_to_half_f16c(uint16_t* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {  // vcvtps2ph, round to nearest even
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
}

// The engine's 16-bit copy-in / copy-out: 16 lanes at a time in registers (vec16.h), the tail by element.
template <typename T>
void widen_row16(float* dst, const T* src, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) store16(dst + i, load16(src + i));
  for (; i < n; ++i) dst[i] = load_as<float>(src[i]);
}
template <typename T>
void narrow_row16(T* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) store16(dst + i, load16(src + i));
  for (; i < n; ++i) dst[i] = store_as<T>(src[i]);
}
void widen_row(float* dst, const Half* src, int64_t n) { widen_row16(dst, src, n); }
void widen_row(float* dst, const BFloat16* src, int64_t n) { widen_row16(dst, src, n); }
void narrow_row(Half* dst, const float* src, int64_t n) { narrow_row16(dst, src, n); }
void narrow_row(BFloat16* dst, const float* src, int64_t n) { narrow_row16(dst, src, n); }

}  // namespace detail
}  // namespace npu_kernels
