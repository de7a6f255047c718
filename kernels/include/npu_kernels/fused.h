// Fused kernels written with the tile layer (npu_kernels/tile.h, DESIGN.md §10): LinearAddGelu, and its
// direct twin (same tiling, no tile layer) that measures what the layer costs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "npu_sim/runtime.h"

namespace npu_kernels {

// out[M,N] = GELU(x[M,K] @ w[K,N] + bias[N]), float32, row-major, GELU in its erf form.
struct LinearAddGeluArgs {
  const float* x = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;
  float* out = nullptr;
  int64_t m = 0, n = 0, k = 0;
  // Tile sizes; 0 takes the default 128 x 128 x 32. The Cube side: x tile 16 KiB and w tile 16 KiB in L1,
  // both double-buffered (64 KiB of the 910B's 512 KiB), the fp32 accumulator in L0C (64 KiB of 128 KiB).
  // The Vector side, in the UB: the bias row and two chunks of 32 output rows that the epilogue streams
  // the accumulator through (32.5 KiB of 192 KiB; 64.5 KiB for tile_n 256).
  // A plan that needs more than a buffer fails the launch with the tile layer's overflow error for that
  // buffer (L1, L0C or Unified Buffer; NPU_SIM_L1_KB / NPU_SIM_L0C_KB / NPU_SIM_UB_KB size them).
  int64_t tile_m = 0, tile_n = 0, tile_k = 0;
};

// The tiling struct: output tiles of tile_m x tile_n (tails at the bottom / right edge), each reduced over
// tiles_k steps of tile_k; a block takes a contiguous run of output tiles in row-major order.
struct LinearAddGeluTiling {
  int64_t m, n, k;
  int64_t tile_m, tile_n, tile_k;
  int64_t tiles_m, tiles_n, tiles_k;  // tiles_k >= 1 (k == 0 still zero-fills the accumulator)
  uint32_t block_dim;
  std::size_t l1_bytes;   // what one block allocates from L1 (x / w tiles, double-buffered; 64-byte aligned)
  std::size_t l0c_bytes;  // ... from L0C (the accumulator)
  std::size_t ub_bytes;   // ... from the UB (the bias row, two chunks of min(tile_m, 32) output rows)
};
// Launch records (both kernels, exactly): every output tile (mc x nc) reads its mc rows of x and nc columns
// of w over all of K and its nc bias values, and writes its outputs once; 2 mc nc K Cube FLOPs; two Vector
// FLOPs per output (bias add, GELU). So read = 4 (tiles_n M K + tiles_m K N + tiles_m N) bytes, write =
// 4 M N, independent of tile_k. The CO1 -> UB move of the accumulator moves no GM bytes.
LinearAddGeluTiling linear_add_gelu_tiling(const LinearAddGeluArgs& args, int ai_cores);

// kInvalidValue for null pointers (with nonzero sizes) or negative sizes; else the launch's status.
npu_sim::Status linear_add_gelu(npu_sim::Stream stream, const LinearAddGeluArgs& args);
// The same computation and tiling written straight on BlockContext (no tile layer): the benchmark's
// baseline. Records the same GM bytes and FLOPs.
npu_sim::Status linear_add_gelu_direct(npu_sim::Stream stream, const LinearAddGeluArgs& args);

}  // namespace npu_kernels
