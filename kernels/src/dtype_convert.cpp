// The dtype layer's run-time-dispatched row conversions (see dtype_convert.h).
#include "dtype_convert.h"

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
  typedef _Float16 half8 __attribute__((vector_size(16)));
  typedef float float8 __attribute__((vector_size(32)));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {  // vcvtph2ps: exact, subnormals, inf and NaN included
    half8 h;
    std::memcpy(&h, src + i, sizeof(h));
    const float8 f = __builtin_convertvector(h, float8);
    std::memcpy(dst + i, &f, sizeof(f));
  }
  for (; i < n; ++i) dst[i] = half_bits_to_float(src[i]);
}

__attribute__((target("avx2,f16c"))) void float_row_to_half_f16c(uint16_t* dst, const float* src, int64_t n) {
  typedef _Float16 half8 __attribute__((vector_size(16)));
  typedef float float8 __attribute__((vector_size(32)));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    float8 f;
    std::memcpy(&f, src + i, sizeof(f));
    const half8 h = __builtin_convertvector(f, half8);
    std::memcpy(dst + i, &h, sizeof(h));
  }
  for (; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
}

}  // namespace detail
}  // namespace npu_kernels
