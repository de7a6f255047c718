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
  // Tile sizes; 0 takes the default 128 x 128 x 32 (x tile 16 KiB, w tile 16 KiB, both double-buffered,
  // the fp32 accumulator 64 KiB and the bias row: 128.5 KiB of the 192 KiB UB). A plan that needs more
  // than the UB fails the launch with the tile layer's overflow error.
  int64_t tile_m = 0, tile_n = 0, tile_k = 0;
};

// The tiling struct: output tiles of tile_m x tile_n (tails at the bottom / right edge), each reduced over
// tiles_k steps of tile_k; a block takes a contiguous run of output tiles in row-major order.
struct LinearAddGeluTiling {
  int64_t m, n, k;
  int64_t tile_m, tile_n, tile_k;
  int64_t tiles_m, tiles_n, tiles_k;  // tiles_k >= 1 (k == 0 still zero-fills the accumulator)
  uint32_t block_dim;
  std::size_t ub_bytes;  // what one block allocates from the UB (64-byte aligned tiles)
};
LinearAddGeluTiling linear_add_gelu_tiling(const LinearAddGeluArgs& args, int ai_cores);

// kInvalidValue for null pointers (with nonzero sizes) or negative sizes; else the launch's status.
npu_sim::Status linear_add_gelu(npu_sim::Stream stream, const LinearAddGeluArgs& args);
// The same computation and tiling written straight on BlockContext (no tile layer): the benchmark's
// baseline. Records the same GM bytes and FLOPs.
npu_sim::Status linear_add_gelu_direct(npu_sim::Stream stream, const LinearAddGeluArgs& args);

}  // namespace npu_kernels
