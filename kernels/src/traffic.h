// Launch records for the kernels that are not built on the elementwise engine or the tile layer: a block
// adds its GM bytes and Vector FLOPs once, from sizes it already knows (npu_sim::record_traffic is a
// no-op when recording is off). Counts are int64 products of sizes; negative never happens.
#pragma once

#include <cstdint>

#include "npu_sim/runtime.h"

namespace npu_kernels::detail {

inline void record_vec(const npu_sim::BlockContext& ctx, int64_t gm_read, int64_t gm_write, int64_t vector_flops) {
  npu_sim::record_traffic(ctx, static_cast<std::uint64_t>(gm_read), static_cast<std::uint64_t>(gm_write), 0,
                          static_cast<std::uint64_t>(vector_flops));
}

}  // namespace npu_kernels::detail
