// Python bindings of the hccl backend: adds torch_npu_sim._C._distributed (HcclBackend).
#pragma once

#include <torch/csrc/utils/pybind.h>

namespace torch_npu_sim {
void init_distributed_bindings(pybind11::module& m);
}  // namespace torch_npu_sim
