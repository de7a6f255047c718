// Private to kernels/: float32 C2C and R2C lines 16 (AVX-512) or 8 (AVX2) at a time in the SIMD lanes of
// pocketfft's plans, the lanes filled and emptied by register transposes (contiguous lines) or straight vector loads
// (lines that are neighbouring columns), where pocketfft's own copies move one element per instruction (they cost
// 2-3x the transforms themselves: fft2 1024^2 ran at 1.9x CPU eager's MKL on AVX-512, 1.5x on AVX2).
#pragma once

#include <cstdint>

#include "fft_long.h"

namespace npu_kernels::fft::detail {

// Lines a block should hold at least: 64 neighbouring columns run together (fft_lanes.cpp).
constexpr int64_t kLanesPerBlock = 64;

// True where run_lanes serves a pass: an AVX-512 or AVX2 build, float32, C2C or R2C, lines of at least 2 points.
bool lanes_apply(DType dt, Kind kind, int64_t n);

// Lines [begin, end) of `l` (its offsets in elements of each side's type).
void run_lanes(const LongLines& l, int64_t begin, int64_t end);

// complex64 C2C over `count` lines of n points on a grid: line j starts at in + j * in_step and out + j * out_step
// (complex elements), its points in_stride / out_stride apart; results times fct (the four-step's sub-transforms).
void run_lanes_grid(bool forward, float fct, int64_t n, int64_t count, const void* in, int64_t in_step,
                    int64_t in_stride, void* out, int64_t out_step, int64_t out_stride);

}  // namespace npu_kernels::fft::detail
