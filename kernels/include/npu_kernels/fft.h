// Discrete Fourier transforms on device memory (torch-free): pocketfft over strided N-d operands, one launch per
// transformed axis, the lines of each axis split over AI-core blocks on the device stream.
#pragma once

#include <cstdint>
#include <vector>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels::fft {

enum class Kind : int8_t {
  kC2C,  // complex -> complex, any axes
  kR2C,  // real -> complex, one-sided along the last axis (n -> n/2 + 1), then complex along the others
  kC2R,  // complex (Hermitian, one-sided along the last axis) -> real of `out_shape`
};

// One transform. Shapes are in elements (a complex element counts once), strides in elements of the operand's
// own type, both of the same rank; `axes` are distinct dims in [0, rank). `in` and `out` may not overlap,
// except that a C2C with identical shapes and strides may run in place.
struct Transform {
  Kind kind = Kind::kC2C;
  DType dtype = DType::kComplex64;  // the complex dtype: kComplex64 or kComplex128 (the real side is float/double)
  std::vector<int64_t> in_shape, in_strides, out_shape, out_strides;
  std::vector<int64_t> axes;
  bool forward = true;  // exp(-2 pi i jk/n) when true (C2R is always backward)
  double scale = 1.0;   // multiplies the result (normalization)
};

// Enqueues the transform on stream `s`. Returns kInvalidValue for a malformed transform (ranks, dtype, shapes that
// do not match the kind) without launching; the launches' errors surface at the next sync like any kernel's.
// A C2R over several axes needs `scratch`: in_shape's element count of the complex dtype, contiguous (the
// complex passes run there so that `in` is not modified); nullptr otherwise.
npu_sim::Status execute(npu_sim::Stream s, const Transform& t, const void* in, void* out, void* scratch = nullptr);

}  // namespace npu_kernels::fft
