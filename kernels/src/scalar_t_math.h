// Arithmetic in a kernel's element type T as ATen's scalar_t does it: native for float / double, through float and
// rounded back to T after every operation for Half / BFloat16 (c10's operators), integers converted to T first.
// For kernels that reproduce CPU's results bit for bit where CPU computes in the 16-bit type.
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_kernels/float_dispatch.h"

namespace npu_kernels::detail::scalar_t_math {

template <typename T>
acc_t<T> wide(T v) {
  return static_cast<acc_t<T>>(v);
}
template <typename T>
T from_double(double v) {
  if constexpr (is_reduced_float_v<T>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}
template <typename T>
T from_int(int64_t v) {
  if constexpr (is_reduced_float_v<T>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}
template <typename T>
T add(T x, T y) {
  if constexpr (is_reduced_float_v<T>) return T(wide(x) + wide(y));
  else return x + y;
}
template <typename T>
T mul(T x, T y) {
  if constexpr (is_reduced_float_v<T>) return T(wide(x) * wide(y));
  else return x * y;
}
template <typename T>
T div(T x, T y) {
  if constexpr (is_reduced_float_v<T>) return T(wide(x) / wide(y));
  else return x / y;
}

}  // namespace npu_kernels::detail::scalar_t_math
