// Private to kernels/: long FFT lines by the four-step (Bailey) split, M = M1 x M2 points as M2
// transforms of M1 points down the columns, a twiddle, M1 transforms of M2 points along the rows written
// transposed. Every sub-transform is short enough for pocketfft's across-lines SIMD to stay in cache, and the
// steps of one line split over the AI cores (pocketfft alone runs a line on one core, out of cache).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "npu_kernels/fft.h"

namespace npu_kernels::fft::detail {

// Bytes of one element on each side of a pass over real type R: R2C reads reals, C2R writes them.
template <class R>
constexpr int64_t in_size(Kind k) { return static_cast<int64_t>(k == Kind::kR2C ? sizeof(R) : 2 * sizeof(R)); }
template <class R>
constexpr int64_t out_size(Kind k) { return static_cast<int64_t>(k == Kind::kC2R ? sizeof(R) : 2 * sizeof(R)); }

// A core thread's FFT buffers (its UB stand-in) are kept across launches up to this size and given back above.
constexpr std::size_t kKeptThreadBufferBytes = std::size_t{8} << 20;

// The lines of one pass along its axis: n points each (the real length for R2C / C2R), the axis strides in
// elements of each side's own type, and every line's first element (also in elements).
struct LongLines {
  Kind kind = Kind::kC2C;
  bool forward = true;
  double scale = 1.0;
  int64_t n = 0;
  const void* in = nullptr;
  void* out = nullptr;
  int64_t in_stride = 1, out_stride = 1;
  std::vector<int64_t> in_offsets, out_offsets;
};

// True if a pass of n-point lines takes the four-step path: the complex length (n, or n / 2 for the
// real transforms) has a factor pair M1 x M2 near its square root, and is long enough to pay for it. R2C needs
// a contiguous real input (read as complex pairs) and runs forward only.
bool four_step_applies(DType dt, Kind kind, bool forward, int64_t n, int64_t in_stride);

// Enqueues the lines on `s`: one line as three or four launches that each split it over the cores, several
// lines as one launch whose blocks run whole lines.
npu_sim::Status launch_four_step(npu_sim::Stream s, DType dt, LongLines lines);

}  // namespace npu_kernels::fft::detail
