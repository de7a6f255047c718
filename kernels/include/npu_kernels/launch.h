// Grid helpers shared by the kernels: split a 1-D range of elements over AI-core blocks and launch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include "npu_sim/runtime.h"

namespace npu_kernels {

// Blocks to use for `n` elements when each block should get at least `grain` of them: enough blocks
// for every core thread to take several (load balance), never more than the elements justify.
uint32_t grid_for(int64_t n, int64_t grain);

// Host threads that run AI-core blocks (the process-wide pool every device shares).
int core_threads();

// Launches fn(begin, end, ctx) over [0, n) on `stream`, split into contiguous chunks of whole blocks.
// Returns the runtime's status (errors inside fn surface at the next sync, as for any kernel). `fn` is
// captured by value straight into the launch's KernelFn (one object, inline storage when it fits: no
// std::function, no allocation per launch); `name` must be a static string (see launch_kernel).
template <typename F>
npu_sim::Status parallel_for(npu_sim::Stream stream, const char* name, int64_t n, int64_t grain, F&& fn) {
  const uint32_t blocks = grid_for(n, grain);
  if (blocks == 0) return npu_sim::Status::kSuccess;
  return npu_sim::launch_kernel(stream, name, blocks,
                                [n, blocks, fn = std::forward<F>(fn)](const npu_sim::BlockContext& ctx) {
                                  const int64_t begin = n * ctx.block_idx / blocks;
                                  const int64_t end = n * (ctx.block_idx + 1) / blocks;
                                  if (begin < end) fn(begin, end, ctx);
                                });
}

}  // namespace npu_kernels
