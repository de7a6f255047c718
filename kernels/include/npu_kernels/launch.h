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

// Launches fn(begin, end, ctx) over [0, n) on `stream`, split into contiguous chunks of whole blocks.
// Returns the runtime's status (errors inside fn surface at the next sync, as for any kernel).
npu_sim::Status parallel_for(npu_sim::Stream stream, const char* name, int64_t n, int64_t grain,
                             std::function<void(int64_t, int64_t, const npu_sim::BlockContext&)> fn);

}  // namespace npu_kernels
