// Python bindings of the launcher for kernels torch.compile generates: adds _launch_compiled_kernel.
#pragma once

#include <torch/csrc/utils/pybind.h>

namespace torch_npu_sim {
void init_compiled_kernel_bindings(pybind11::module& m);
}  // namespace torch_npu_sim
