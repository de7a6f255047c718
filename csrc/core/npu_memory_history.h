// Memory history (torch.npu.memory._record_memory_history / _snapshot): the device allocator adapter's trace
// of allocations and frees with their stack contexts, and the snapshot in the format PyTorch's memory
// visualiser (torch.cuda._memory_viz) reads.
#pragma once

#include <cstddef>
#include <cstdint>

#include <pybind11/pybind11.h>

#include "npu_sim/runtime.h"

namespace torch_npu_sim::memory_history {

// One relaxed load: whether the adapter should call record_* at all.
bool enabled() noexcept;
// A block of `size` bytes at `address` on `device` was handed out / given back (the adapter's calls).
void record_alloc(int device, uintptr_t address, std::size_t size, npu_sim::Stream stream);
void record_free(int device, uintptr_t address, std::size_t size, npu_sim::Stream stream);

// _record_memory_history(enabled, context, stacks, max_entries) and _memory_history_snapshot().
void bind(pybind11::module_& m);

}  // namespace torch_npu_sim::memory_history
