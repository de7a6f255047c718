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

// IEEE half stored as bits; conversions go through the compiler's _Float16 (F16C/AVX512-FP16 when the
// target has them, exact software conversion otherwise).
struct Half {
  uint16_t bits;
  Half() = default;
  Half(float f) {  // NOLINT(google-explicit-constructor): behaves like an arithmetic type
    _Float16 h = static_cast<_Float16>(f);
    std::memcpy(&bits, &h, 2);
  }
  operator float() const {  // NOLINT
    _Float16 h;
    std::memcpy(&h, &bits, 2);
    return static_cast<float>(h);
  }
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
