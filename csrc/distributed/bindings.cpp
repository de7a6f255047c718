// torch_npu_sim._C._distributed: HcclBackend as a subclass of torch's c10d Backend binding (imported
// first so the base type is registered in the shared pybind11 internals).
#include "distributed/bindings.h"

#include <pybind11/chrono.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "distributed/hccl_backend.h"

namespace py = pybind11;

namespace torch_npu_sim {

void init_distributed_bindings(py::module& m) {
  auto sub = m.def_submodule("_distributed", "hccl collective backend");
  // Registering the subclass needs c10d's Backend type; import lazily-safe at module init.
  py::module::import("torch.distributed");
  py::class_<HcclBackend, c10d::Backend, c10::intrusive_ptr<HcclBackend>>(sub, "HcclBackend")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout, int device_index) {
             return c10::make_intrusive<HcclBackend>(store, rank, size, timeout, device_index);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"), py::arg("device_index"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("transport", &HcclBackend::transport_name)
      .def_property_readonly("device_index", &HcclBackend::device_index);
}

}  // namespace torch_npu_sim
