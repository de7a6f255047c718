// The boxed CPU fallback for ops without a native npu kernel, and the record of which ops used it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace torch_npu_sim {

// Op name ("aten::addmm") -> number of calls that fell back since start (or the last reset).
std::map<std::string, int64_t> fallback_ops();
void reset_fallback_ops();

}  // namespace torch_npu_sim
