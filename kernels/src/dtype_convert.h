// Private to kernels/: the dtype layer's in-register conversions. Branch-free fp16/bf16 <-> fp32 by bits
// (the compiler's _Float16 conversions are library calls on baseline x86-64), row conversions chosen by
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

// fp16 <-> fp32 by bit manipulation (exact; round-to-nearest-even on the way down). The build targets
// baseline x86-64, where the compiler's _Float16 conversions are library calls, ~10x slower in packing.
inline float half_bits_to_float(uint16_t h) {
  // Branch-free (masks), so packing loops vectorise (GCC gives up on the equivalent ternaries).
  constexpr uint32_t kShiftedExp = 0x7c00u << 13;
  const uint32_t o = (static_cast<uint32_t>(h) & 0x7fffu) << 13;
  const uint32_t exp = kShiftedExp & o;
  const uint32_t normal = o + ((127u - 15u) << 23);
  const uint32_t inf_nan = normal + ((128u - 16u) << 23);
  uint32_t sub_bits = normal + (1u << 23);  // zero / subnormal: renormalise through a float subtraction
  float sub;
  std::memcpy(&sub, &sub_bits, 4);
  sub -= 6.103515625e-05f;  // 2^-14
  std::memcpy(&sub_bits, &sub, 4);
  const uint32_t m_inf = 0u - static_cast<uint32_t>(exp == kShiftedExp);  // masks, not branches
  const uint32_t m_zero = 0u - static_cast<uint32_t>(exp == 0);
  uint32_t r = (inf_nan & m_inf) | (sub_bits & m_zero) | (normal & ~(m_inf | m_zero));
  r |= (static_cast<uint32_t>(h) & 0x8000u) << 16;
  float f;
  std::memcpy(&f, &r, 4);
  return f;
}
inline uint16_t float_to_half_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint16_t o;
  if (u >= ((127u + 16u) << 23)) {  // beyond fp16 range: Inf, or NaN stays (quiet) NaN
    o = u > (255u << 23) ? 0x7e00 : 0x7c00;
  } else if (u < (113u << 23)) {  // result is subnormal or zero: let the FPU round
    constexpr uint32_t kMagic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    float magic, v;
    std::memcpy(&magic, &kMagic, 4);
    std::memcpy(&v, &u, 4);
    v += magic;
    uint32_t r;
    std::memcpy(&r, &v, 4);
    o = static_cast<uint16_t>(r - kMagic);
  } else {
    const uint32_t mant_odd = (u >> 13) & 1u;
    u += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu;
    u += mant_odd;
    o = static_cast<uint16_t>(u >> 13);
  }
  return static_cast<uint16_t>(o | (sign >> 16));
}

// bf16 <-> fp32 by bit manipulation, the same rounding as BFloat16(float) (nearest even, NaN stays a quiet
// NaN) but branch-free, so loops over bf16 bits vectorise.
inline float bf16_bits_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
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

// A contiguous row of fp16 / bf16 to float and back (round to nearest even), F16C for fp16 where the CPU
// has it: the copy-in / copy-out of the 16-bit vector kernels, converting in registers.
inline void float_row_to_half(uint16_t* dst, const float* src, int64_t n) {
  if (cpu_has_f16c()) {
    float_row_to_half_f16c(dst, src, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
}
template <typename T>  // Half or BFloat16
inline void row_to_float(float* dst, const T* src, int64_t n) {
  if constexpr (std::is_same_v<T, Half>) {
    half_row_to_float(dst, reinterpret_cast<const uint16_t*>(src), n);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_float(src[i].bits);
  }
}
template <typename T>  // Half or BFloat16
inline void float_row_to(T* dst, const float* src, int64_t n) {
  if constexpr (std::is_same_v<T, Half>) {
    float_row_to_half(reinterpret_cast<uint16_t*>(dst), src, n);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i].bits = float_to_bf16_bits(src[i]);
  }
}

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
