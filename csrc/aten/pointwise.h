// Runs a pointwise kernel on a built TensorIteratorBase: converts it to the kernels' ElementwiseIter
// (promoting inputs to the common dtype, host scalars inline, a temporary when the output dtype differs)
// and enqueues the launch on the current stream of the iterator's device.
#pragma once

#include <ATen/TensorIterator.h>

#include <functional>

#include "npu_kernels/pointwise.h"

namespace torch_npu_sim {

using PointwiseLaunch = std::function<npu_sim::Status(npu_sim::Stream, const npu_kernels::ElementwiseIter&)>;

// `predicate`: the kernel writes bool. `compute_dtype` overrides the iterator's common dtype (e.g. an
// integer input of a float-only op is computed in the default float type).
void run_pointwise(at::TensorIteratorBase& iter, const char* op, bool predicate, const PointwiseLaunch& launch,
                   std::optional<at::ScalarType> compute_dtype = std::nullopt);

}  // namespace torch_npu_sim
