// Sharing npu tensors between processes: the _C bindings torch_npu_sim/ipc.py pickles tensors with.
#pragma once

#include <pybind11/pybind11.h>

namespace torch_npu_sim {

// _ipc_share(device, data_ptr, refcount_path) -> (pid, fd, offset); _ipc_refcount(path) -> int;
// _ipc_open(device, path, offset, nbytes, refcount_path) -> uint8 npu tensor over the shared memory.
void bind_ipc(pybind11::module_& m);

}  // namespace torch_npu_sim
