// The boxed CPU fallback for ops without a native npu kernel, and the record of which ops used it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace torch_npu_sim {

// Op name ("aten::addmm") -> number of calls that fell back since start (or the last reset).
std::map<std::string, int64_t> fallback_ops();
void reset_fallback_ops();

// For adapters that run part of an op on the CPU themselves (e.g. 3-D convolution): refuses under
// TORCH_NPU_FALLBACK_CPU_DISABLE=1, warns once per op in torch_npu's wording and records the call.
void note_cpu_fallback(const std::string& op_name);

}  // namespace torch_npu_sim
