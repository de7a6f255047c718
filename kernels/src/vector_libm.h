// Marks glibc's libm functions as having SIMD variants (libmvec, glibc >= 2.35), so GCC vectorises the pointwise
// loops that call them: sin over 8 floats is one call of _ZGVdN8v_sinf instead of eight of sinf.
//
// glibc declares these variants itself only under -ffast-math, which the kernels cannot use (NaN, inf and signed
// zeros must stay as ATen has them). libmvec's functions keep those semantics and are accurate to 4 ulp (glibc's
// libm-test-ulps), as CPU PyTorch's Sleef u10 kernels are to 1 ulp; tests compare at dtype tolerances. Include this
// first in a translation unit whose vectorised loops call libm, and link mvec (kernels/CMakeLists.txt).
#pragma once

#include <math.h>

// NPU_SIM_NO_VECTOR_LIBM: CMake found no libmvec to link.
#if !defined(NPU_SIM_NO_VECTOR_LIBM) && defined(__x86_64__) && defined(__GLIBC__) && \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define NPU_SIM_SIMD_LIBM1(name)                                          \
  double name(double) noexcept __attribute__((simd("notinbranch")));     \
  float name##f(float) noexcept __attribute__((simd("notinbranch")));
#define NPU_SIM_SIMD_LIBM2(name)                                              \
  double name(double, double) noexcept __attribute__((simd("notinbranch"))); \
  float name##f(float, float) noexcept __attribute__((simd("notinbranch")));
extern "C" {
NPU_SIM_SIMD_LIBM1(sin)
NPU_SIM_SIMD_LIBM1(cos)
NPU_SIM_SIMD_LIBM1(tan)
NPU_SIM_SIMD_LIBM1(asin)
NPU_SIM_SIMD_LIBM1(acos)
NPU_SIM_SIMD_LIBM1(atan)
NPU_SIM_SIMD_LIBM1(sinh)
NPU_SIM_SIMD_LIBM1(cosh)
NPU_SIM_SIMD_LIBM1(tanh)
NPU_SIM_SIMD_LIBM1(asinh)
NPU_SIM_SIMD_LIBM1(acosh)
NPU_SIM_SIMD_LIBM1(atanh)
NPU_SIM_SIMD_LIBM1(exp)
NPU_SIM_SIMD_LIBM1(exp2)
NPU_SIM_SIMD_LIBM1(expm1)
NPU_SIM_SIMD_LIBM1(log)
NPU_SIM_SIMD_LIBM1(log2)
NPU_SIM_SIMD_LIBM1(log10)
NPU_SIM_SIMD_LIBM1(log1p)
NPU_SIM_SIMD_LIBM1(erf)
NPU_SIM_SIMD_LIBM1(erfc)
NPU_SIM_SIMD_LIBM1(cbrt)
NPU_SIM_SIMD_LIBM2(atan2)
NPU_SIM_SIMD_LIBM2(pow)
NPU_SIM_SIMD_LIBM2(hypot)
}
#undef NPU_SIM_SIMD_LIBM1
#undef NPU_SIM_SIMD_LIBM2
#endif
