// Private to kernels/: the dtype layer's in-register conversions. Branch-free bf16 <-> fp32 by bits (fp16's
// are in npu_kernels/dtype.h, beside Half), row conversions chosen by
// CPU feature at run time, and load_as / store_as between a storage type and its accumulation type.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "npu_kernels/dtype.h"

namespace npu_kernels {
namespace detail {

// Accumulation type of a storage type: half types accumulate in float32.
template <typename T> struct AccOf { using type = T; };
template <> struct AccOf<Half> { using type = float; };
template <> struct AccOf<BFloat16> { using type = float; };
template <typename T> using acc_t = typename AccOf<T>::type;

// fp16 <-> fp32 by bits: half_bits_to_float / float_to_half_bits (npu_kernels/dtype.h).

// bf16 <-> fp32 by bit manipulation, the same rounding as BFloat16(float) (nearest even, NaN stays a quiet
// NaN) but branch-free, so loops over bf16 bits vectorise.
inline float bf16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }
inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t u = float_bits(f);
  const uint32_t is_nan = (u & 0x7fffffffu) > 0x7f800000u;
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet = (u >> 16) | 0x40u;
  return static_cast<uint16_t>(is_nan ? quiet : rounded);
}

// A contiguous run of fp16 values to float: the branch-free conversion in a loop the compiler
// vectorises (an AVX2 build of it is chosen at run time; the baseline build uses SSE2).
void half_row_to_float_avx2(float* dst, const uint16_t* src, int64_t n);
void half_row_to_float_f16c(float* dst, const uint16_t* src, int64_t n);  // the F16C instruction, 8 at a time
void float_row_to_half_f16c(uint16_t* dst, const float* src, int64_t n);  // round to nearest even
bool cpu_has_avx2();
bool cpu_has_f16c();
template <typename Acc>
inline void half_row_to_float(Acc* dst, const uint16_t* src, int64_t n) {
  if constexpr (std::is_same_v<Acc, float>) {
    if (cpu_has_f16c()) {
      half_row_to_float_f16c(dst, src, n);
      return;
    }
    if (cpu_has_avx2()) {
      half_row_to_float_avx2(dst, src, n);
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<Acc>(half_bits_to_float(src[i]));
}

// A contiguous row of float to fp16 (round to nearest even), F16C where the CPU has it.
inline void float_row_to_half(uint16_t* dst, const float* src, int64_t n) {
  if (cpu_has_f16c()) {
    float_row_to_half_f16c(dst, src, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
}
// Rows of fp16 / bf16 in registers, 16 lanes at a time: widen_row / narrow_row (npu_kernels/dtype.h).

template <typename Acc, typename T>
inline Acc load_as(const T& v) {
  if constexpr (std::is_same_v<T, Half>) {
    return static_cast<Acc>(half_bits_to_float(v.bits));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return static_cast<Acc>(static_cast<float>(v));
  } else {
    return static_cast<Acc>(v);
  }
}
template <typename T, typename Acc>
inline T store_as(Acc v) {
  if constexpr (std::is_same_v<T, Half>) {
    Half h;
    h.bits = float_to_half_bits(static_cast<float>(v));
    return h;
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(v));  // round to nearest even
  } else {
    return static_cast<T>(v);
  }
}

// p[i] widened to its accumulation type (fp16/bf16 -> float32), converted in registers.
template <typename T>
inline acc_t<T> load_acc(const T* p, int64_t i) {
  return load_as<acc_t<T>>(p[i]);
}

}  // namespace detail
}  // namespace npu_kernels
