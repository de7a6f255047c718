// Element types of the device kernels (torch-free): the dtype enum, element sizes, fp16/bf16 storage
// types with round-to-nearest-even conversion, value conversion between them and from a host scalar.
#pragma once

#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace npu_kernels {

// Values match c10::ScalarType so the adapter's mapping is a checked cast.
enum class DType : int8_t {
  kUInt8 = 0,
  kInt8 = 1,
  kInt16 = 2,
  kInt32 = 3,
  kInt64 = 4,
  kFloat16 = 5,
  kFloat32 = 6,
  kFloat64 = 7,
  kComplex64 = 9,
  kComplex128 = 10,
  kBool = 11,
  kBFloat16 = 15,
};

const char* dtype_name(DType t);
std::size_t dtype_size(DType t);
bool dtype_supported(int raw_scalar_type);

namespace detail {
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// fp16 <-> fp32 by bit manipulation: exact, round to nearest even on the way down, NaN stays a quiet NaN (the
// results of the F16C instructions, checked bit for bit in test_kernels_gemm.cpp). Branch-free (masks, not
// ternaries), so loops over them vectorise: GCC 12 does not vectorise _Float16 conversions without
// AVX512-FP16, which left every fp16 elementwise kernel scalar (fp16 exp 40x fp32's time, gelu 13x). Always
// inlined: an out-of-line copy (GCC's inline budget in the big dispatch TUs) is a call per element.
__attribute__((always_inline)) inline float half_bits_to_float(uint16_t h) {
  constexpr uint32_t kShiftedExp = 0x7c00u << 13;
  const uint32_t o = (static_cast<uint32_t>(h) & 0x7fffu) << 13;
  const uint32_t exp = kShiftedExp & o;
  const uint32_t normal = o + ((127u - 15u) << 23);
  const uint32_t inf_nan = normal + ((128u - 16u) << 23);
  // zero / subnormal: renormalise through a float subtraction of 2^-14
  const uint32_t sub = float_bits(bits_float(normal + (1u << 23)) - 6.103515625e-05f);
  const uint32_t m_inf = 0u - static_cast<uint32_t>(exp == kShiftedExp);
  const uint32_t m_zero = 0u - static_cast<uint32_t>(exp == 0);
  const uint32_t r = (inf_nan & m_inf) | (sub & m_zero) | (normal & ~(m_inf | m_zero));
  return bits_float(r | ((static_cast<uint32_t>(h) & 0x8000u) << 16));
}
__attribute__((always_inline)) inline uint16_t float_to_half_bits(float f) {
  uint32_t u = float_bits(f);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  // normal results: rebias and round the 13 dropped bits to nearest even
  const uint32_t normal = (u + (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + ((u >> 13) & 1u)) >> 13;
  // subnormal or zero results: the FPU rounds when the value is added to 2^-14's magic
  constexpr uint32_t kMagic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  const uint32_t sub = float_bits(bits_float(u) + bits_float(kMagic)) - kMagic;
  // beyond the range: Inf, or a quiet NaN
  const uint32_t inf_nan = 0x7c00u | (0x0200u & (0u - static_cast<uint32_t>(u > 0x7f800000u)));
  const uint32_t m_big = 0u - static_cast<uint32_t>(u >= ((127u + 16u) << 23));
  const uint32_t m_small = 0u - static_cast<uint32_t>(u < (113u << 23));
  const uint32_t r = (inf_nan & m_big) | (sub & m_small) | (normal & ~(m_big | m_small));
  return static_cast<uint16_t>(r | (sign >> 16));
}
}  // namespace detail

// IEEE half stored as bits, converted by the branch-free functions above.
struct Half {
  uint16_t bits;
  Half() = default;
  __attribute__((always_inline)) Half(float f) : bits(detail::float_to_half_bits(f)) {}  // NOLINT: arithmetic-like
  __attribute__((always_inline)) operator float() const { return detail::half_bits_to_float(bits); }  // NOLINT
};

// bfloat16: the upper half of a float32, rounded to nearest even; NaN stays a quiet NaN.
struct BFloat16 {
  uint16_t bits;
  BFloat16() = default;
  BFloat16(float f) {  // NOLINT
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if (std::isnan(f)) {
      bits = static_cast<uint16_t>((u >> 16) | 0x40);
    } else {
      u += 0x7fffu + ((u >> 16) & 1u);
      bits = static_cast<uint16_t>(u >> 16);
    }
  }
  operator float() const {  // NOLINT
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

template <typename T>
constexpr bool is_complex_v = std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;
template <typename T>
constexpr bool is_reduced_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;  // fp16, bf16

namespace detail {
// Contiguous fp16 / bf16 rows to float and back, rounding to nearest even, 16 lanes at a time in registers
// (defined in kernels/src/dtype_convert.cpp): the copy-in / copy-out of every 16-bit row kernel.
void widen_row(float* dst, const Half* src, int64_t n);
void widen_row(float* dst, const BFloat16* src, int64_t n);
void narrow_row(Half* dst, const float* src, int64_t n);
void narrow_row(BFloat16* dst, const float* src, int64_t n);
}  // namespace detail

// Value conversion between element types with PyTorch's rules (complex -> real keeps the real part,
// anything -> bool is "!= 0").
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_complex_v<From>) {
      return v.real() != 0 || v.imag() != 0;
    } else if constexpr (is_reduced_float_v<From>) {
      return static_cast<float>(v) != 0.0f;
    } else {
      return v != From(0);
    }
  } else if constexpr (is_complex_v<From> && is_complex_v<To>) {
    // complex64 <-> complex128 keeps the imaginary part
    return To(static_cast<typename To::value_type>(v.real()), static_cast<typename To::value_type>(v.imag()));
  } else if constexpr (is_complex_v<From>) {
    return convert<To>(v.real());
  } else if constexpr (is_reduced_float_v<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (is_reduced_float_v<From>) {
    return static_cast<To>(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

// A host scalar (fill value, masked_fill value), carried in the widest type of its kind.
struct ScalarValue {
  enum Kind { kBool, kInt, kDouble, kComplex } kind = kDouble;
  bool b = false;
  int64_t i = 0;
  double d = 0.0;
  double imag = 0.0;
};

// The scalar converted to element type T by convert()'s rules.
template <typename T>
inline T scalar_as(const ScalarValue& v) {
  switch (v.kind) {
    case ScalarValue::kBool: return convert<T>(v.b);
    case ScalarValue::kInt: return convert<T>(v.i);
    case ScalarValue::kDouble: return convert<T>(v.d);
    case ScalarValue::kComplex: return convert<T>(std::complex<double>(v.d, v.imag));
  }
  return T{};
}

// Calls f(T{}) with T the C++ element type of `t`. Returns false for an unsupported dtype.
template <typename F>
inline bool dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kUInt8: f(uint8_t{}); return true;
    case DType::kInt8: f(int8_t{}); return true;
    case DType::kInt16: f(int16_t{}); return true;
    case DType::kInt32: f(int32_t{}); return true;
    case DType::kInt64: f(int64_t{}); return true;
    case DType::kFloat16: f(Half{}); return true;
    case DType::kFloat32: f(float{}); return true;
    case DType::kFloat64: f(double{}); return true;
    case DType::kComplex64: f(std::complex<float>{}); return true;
    case DType::kComplex128: f(std::complex<double>{}); return true;
    case DType::kBool: f(bool{}); return true;
    case DType::kBFloat16: f(BFloat16{}); return true;
  }
  return false;
}

}  // namespace npu_kernels
