// Gradient-scaling kernels (torch-free) behind torch.amp.GradScaler: unscale with a non-finite check,
// and the scale update. Both read and write their scalars in device memory, so no host sync is needed.
#pragma once

#include <cstdint>

#include "npu_kernels/tensor_desc.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// grad *= *inv_scale; *found_inf = 1 if any element of grad is NaN or infinite (never reset to 0).
npu_sim::Status amp_unscale(npu_sim::Stream stream, const TensorDesc& grad, float* found_inf, const float* inv_scale);

// CUDA's _amp_update_scale_ rule: back off on found_inf, grow after growth_interval clean steps.
npu_sim::Status amp_update_scale(npu_sim::Stream stream, float* scale, int32_t* growth_tracker, const float* found_inf,
                                 double growth_factor, double backoff_factor, int64_t growth_interval);

}  // namespace npu_kernels
