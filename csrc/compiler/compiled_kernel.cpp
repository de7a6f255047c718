// Launches a kernel that torch.compile's npu backend generated and compiled (torch_npu_sim/compiler) on
// the current npu stream: the arguments are packed into 8-byte slots at launch time and the kernel's
// `npu_entry(const int64_t* slots)` trampoline runs on an AI-core thread, in stream order with eager ops, on
// the current stream of the device its tensors are on.
#include "compiler/compiled_kernel.h"

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/npu_error.h"
#include "core/npu_stream.h"

namespace py = pybind11;

namespace torch_npu_sim {

namespace {

using EntryFn = void (*)(const std::int64_t* slots);

// Launch names must outlive the launch (npu_sim::launch_kernel keeps the pointer): generated kernels'
// names are interned for the life of the process (one per distinct kernel, a few hundred at most).
const char* intern_name(const std::string& name) {
  static std::mutex mu;
  static std::set<std::string> names;  // guarded by mu; nodes are never erased, so c_str() stays valid
  std::lock_guard<std::mutex> lock(mu);
  return names.insert(name).first->c_str();
}

// The bytes a host tensor's elements span from its data pointer (any strides).
std::vector<std::uint8_t> host_snapshot(const at::Tensor& t) {
  std::int64_t last = 0;  // the offset of the last element, in elements
  for (std::int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  const std::size_t bytes = t.numel() == 0 ? 0 : static_cast<std::size_t>(last + 1) * t.element_size();
  const auto* p = static_cast<const std::uint8_t*>(t.const_data_ptr());
  return std::vector<std::uint8_t>(p, p + bytes);
}

// kinds[i] says how argument i is passed: 'r' a tensor the kernel reads, 'w' one it writes, 'b' one it
// reads and writes, 'i' an int64, 'f' a floating-point scalar (passed as a double), 'p' a raw address.
void launch_compiled_kernel(std::uintptr_t entry, const std::string& name, const std::string& kinds,
                            const py::tuple& args, std::uint64_t vector_flops) {
  TORCH_CHECK(entry != 0, "npu compiled kernel '", name, "': no entry point");
  TORCH_CHECK(kinds.size() == args.size(), "npu compiled kernel '", name, "' takes ", kinds.size(),
              " arguments, got ", args.size());
  std::vector<std::int64_t> slots(kinds.size());
  std::vector<std::vector<std::uint8_t>> host_copies;  // moved into the launch: outer growth moves, not copies
  host_copies.reserve(kinds.size());
  std::uint64_t gm_read = 0, gm_write = 0;
  c10::DeviceIndex device = -1;  // the tensors' device (one for all), else the current one
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const py::handle a = args[i];
    switch (kinds[i]) {
      case 'r':
      case 'w':
      case 'b': {
        TORCH_CHECK(THPVariable_Check(a.ptr()), "npu compiled kernel '", name, "': argument ", i,
                    " must be a tensor, got ", py::str(py::type::of(a)).cast<std::string>());
        const at::Tensor& t = THPVariable_Unpack(a.ptr());
        if (t.device().is_cpu()) {
          // A host tensor the kernel reads (Inductor passes 0-dim CPU tensors, e.g. an optimizer's step count,
          // by pointer) is read as it is now, as an eager op reads it at dispatch: its bytes are copied into the
          // launch, which owns them. Writing one from the stream would race with the host: refused.
          TORCH_CHECK(kinds[i] == 'r', "npu compiled kernel '", name, "': argument ", i,
                      " is a CPU tensor the kernel writes, expected an npu tensor");
          host_copies.push_back(host_snapshot(t));
          slots[i] = reinterpret_cast<std::int64_t>(host_copies.back().data());
          break;
        }
        TORCH_CHECK(t.device().is_privateuseone(), "npu compiled kernel '", name, "': argument ", i, " is on ",
                    t.device(), ", expected an npu tensor");
        TORCH_CHECK(device < 0 || t.device().index() == device, "npu compiled kernel '", name, "': argument ", i,
                    " is on ", t.device(), ", the others on npu:", static_cast<int>(device));
        device = t.device().index();
        slots[i] = reinterpret_cast<std::int64_t>(t.data_ptr());
        const std::uint64_t bytes = static_cast<std::uint64_t>(t.numel()) * t.element_size();
        if (kinds[i] != 'w') gm_read += bytes;
        if (kinds[i] != 'r') gm_write += bytes;
        break;
      }
      case 'i':
      case 'p':
        slots[i] = a.cast<std::int64_t>();
        break;
      case 'f': {
        const double v = a.cast<double>();
        std::memcpy(&slots[i], &v, sizeof v);
        break;
      }
      default:
        TORCH_CHECK(false, "npu compiled kernel '", name, "': unknown argument kind '", kinds[i], "'");
    }
  }
  const auto fn = reinterpret_cast<EntryFn>(entry);
  // One block: the generated kernel parallelises its own loops (OpenMP, as Inductor's CPU kernels do).
  NPU_CHECK(npu_sim::launch_kernel(
      current_native_stream(device), intern_name(name), 1,
      [fn, slots = std::move(slots), host_copies = std::move(host_copies), gm_read, gm_write,
       vector_flops](const npu_sim::BlockContext& ctx) {
        fn(slots.data());
        npu_sim::record_traffic(ctx, gm_read, gm_write, 0, vector_flops);
      }));
}

}  // namespace

void init_compiled_kernel_bindings(py::module& m) {
  m.def("_launch_compiled_kernel", &launch_compiled_kernel, py::arg("entry"), py::arg("name"), py::arg("kinds"),
        py::arg("args"), py::arg("vector_flops") = 0);
}

}  // namespace torch_npu_sim
