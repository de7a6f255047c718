// The torch_npu_sim._C Python module: thin bindings over the runtime, the allocator core, the
// generator and the fallback record. Python-side logic (formatting, flattening) lives in torch_npu_sim/.
#include <ATen/Context.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/device_lazy_init.h>
#include <torch/csrc/utils/pybind.h>

#include <map>
#include <optional>
#include <string>

#include "core/npu_allocator.h"
#include "compiler/compiled_kernel.h"
#include "distributed/bindings.h"
#include "core/npu_error.h"
#include "core/npu_ipc.h"
#include "core/npu_memory_history.h"
#include "core/npu_generator.h"
#include "core/npu_stream.h"
#include "fallback/cpu_fallback.h"
#include "npu_kernels/attention.h"
#include "npu_kernels/gemm.h"
#include "npu_kernels/quantize.h"

namespace py = pybind11;

namespace torch_npu_sim {

namespace {

py::dict stat_dict(const npu_alloc::Stat& s) {
  py::dict d;
  d["current"] = s.current;
  d["peak"] = s.peak;
  d["allocated"] = s.allocated;
  d["freed"] = s.freed;
  return d;
}

py::dict stat_array_dict(const npu_alloc::StatArray& a) {
  py::dict d;
  d["all"] = stat_dict(a[npu_alloc::kAggregate]);
  d["small_pool"] = stat_dict(a[npu_alloc::kSmallPool]);
  d["large_pool"] = stat_dict(a[npu_alloc::kLargePool]);
  return d;
}

// Same nesting as torch._C._cuda_memoryStats, so the Python side flattens it like torch.cuda does.
py::dict memory_stats(c10::DeviceIndex device) {
  check_device(device, "memory_stats");
  const auto s = caching_allocator().get_stats(device);
  py::dict d;
  d["num_alloc_retries"] = s.num_alloc_retries;
  d["num_ooms"] = s.num_ooms;
  d["max_split_size"] = s.max_split_size;
  d["num_sync_all_streams"] = s.num_sync_all_streams;
  d["num_device_alloc"] = s.num_device_alloc;
  d["num_device_free"] = s.num_device_free;
  d["allocation"] = stat_array_dict(s.allocation);
  d["segment"] = stat_array_dict(s.segment);
  d["active"] = stat_array_dict(s.active);
  d["inactive_split"] = stat_array_dict(s.inactive_split);
  d["allocated_bytes"] = stat_array_dict(s.allocated_bytes);
  d["reserved_bytes"] = stat_array_dict(s.reserved_bytes);
  d["active_bytes"] = stat_array_dict(s.active_bytes);
  d["inactive_split_bytes"] = stat_array_dict(s.inactive_split_bytes);
  d["requested_bytes"] = stat_array_dict(s.requested_bytes);
  d["oversize_allocations"] = stat_dict(s.oversize_allocations);
  d["oversize_segments"] = stat_dict(s.oversize_segments);
  return d;
}

py::dict device_properties(c10::DeviceIndex device) {
  check_device(device, "get_device_properties");
  npu_sim::DeviceProperties p{};
  NPU_CHECK(npu_sim::get_device_properties(device, &p));
  py::dict d;
  d["name"] = std::string(p.name);
  d["physical_id"] = p.physical_id;
  d["total_memory"] = p.hbm_bytes;
  d["ai_core_count"] = p.ai_core_count;
  d["ub_size"] = p.ub_bytes;
  d["core_threads"] = p.core_threads;
  return d;
}

py::dict runtime_counters() {
  const auto c = npu_sim::get_counters();
  py::dict d;
  d["bytes_h2d"] = c.bytes_h2d;
  d["bytes_d2h"] = c.bytes_d2h;
  d["bytes_d2d"] = c.bytes_d2d;
  d["bytes_h2h"] = c.bytes_h2h;
  d["kernels_launched"] = c.kernels_launched;
  d["kernels_failed"] = c.kernels_failed;
  d["device_mallocs"] = c.device_mallocs;
  d["device_frees"] = c.device_frees;
  return d;
}

// A launch record (npu_sim::LaunchRecord) as the dict torch_npu_sim.launch_records returns.
py::dict launch_record_dict(const npu_sim::LaunchRecord& r) {
  py::dict d;
  d["kernel"] = r.kernel;
  d["device"] = r.device;
  d["stream_id"] = r.stream_id;
  d["launch_seq"] = r.launch_seq;
  d["block_dim"] = r.block_dim;
  d["gm_read"] = r.gm_read;
  d["gm_write"] = r.gm_write;
  d["cube_flops"] = r.cube_flops;
  d["vector_flops"] = r.vector_flops;
  d["failed"] = r.failed;
  d["start_ns"] = r.start_ns;
  d["end_ns"] = r.end_ns;
  d["modeled_us"] = npu_sim::modeled_time_ns(r) / 1e3;
  return d;
}

py::dict launch_totals() {
  const auto t = npu_sim::get_launch_totals();
  py::dict d;
  d["launches"] = t.launches;
  d["failed"] = t.failed;
  d["gm_read"] = t.gm_read;
  d["gm_write"] = t.gm_write;
  d["cube_flops"] = t.cube_flops;
  d["vector_flops"] = t.vector_flops;
  d["dropped"] = t.dropped;
  return d;
}

void synchronize(c10::DeviceIndex device) {
  device = resolve_device(device, "synchronize");
  py::gil_scoped_release no_gil;
  NPU_CHECK(npu_sim::device_synchronize(device));
}

// The device's sticky error (see npu_sim::device_get_error), or None.
std::optional<std::string> device_error(c10::DeviceIndex device) {
  device = resolve_device(device, "device_error");
  if (npu_sim::device_get_error(device) == npu_sim::Status::kSuccess) return std::nullopt;
  return npu_sim::last_error_message();
}

void restart_device(c10::DeviceIndex device) {
  device = resolve_device(device, "restart_device");
  py::gil_scoped_release no_gil;
  NPU_CHECK(npu_sim::device_restart(device));
}

}  // namespace
}  // namespace torch_npu_sim

PYBIND11_MODULE(_C, m) {
  using namespace torch_npu_sim;
  m.doc() = "torch_npu_sim native module: simulated NPU runtime bindings";
  init_distributed_bindings(m);
  init_compiled_kernel_bindings(m);

  m.def("_init", [] {
    torch::utils::register_fork_handler_for_device_init(at::kPrivateUse1);
    at::globalContext().lazyInitDevice(c10::DeviceType::PrivateUse1);
  });
  m.def("_is_in_bad_fork", [] { return torch::utils::is_device_in_bad_fork(at::kPrivateUse1); });
  m.def("_lazy_init", [] { torch::utils::device_lazy_init(at::kPrivateUse1); });
  m.def("_get_device_count", [] { return static_cast<int>(device_count()); });
  m.def("_get_device", [] {
    torch::utils::device_lazy_init(at::kPrivateUse1);
    return static_cast<int>(current_device());
  });
  m.def("_set_device", [](c10::DeviceIndex d) {
    torch::utils::device_lazy_init(at::kPrivateUse1);
    set_device(d);
  });
  m.def("_exchange_device", [](c10::DeviceIndex d) {
    if (d < 0) return -1;
    torch::utils::device_lazy_init(at::kPrivateUse1);
    const int old = current_device();
    if (d != old) set_device(d);
    return old;
  });
  m.def("_get_device_properties", &device_properties);
  m.def("_synchronize", &synchronize);
  // (busy ns, now ns) of the device's kernel time, for torch.npu.utilization
  m.def("_device_busy_time", [](int64_t device) {
    torch_npu_sim::check_device(static_cast<c10::DeviceIndex>(device), "utilization");
    std::uint64_t busy = 0, now = 0;
    NPU_CHECK(npu_sim::device_busy_time(static_cast<int>(device), &busy, &now));
    return std::make_pair(busy, now);
  });
  m.def("_device_error", &device_error);
  m.def("_restart_device", &restart_device);
  // torch.Event.elapsed_time only accepts the exact torch.Event type; torch.npu.Event goes through here.
  m.def("_event_elapsed_time", [](uintptr_t start, uintptr_t end) {
    TORCH_CHECK(start != 0 && end != 0,
                "elapsed_time: both events must have been recorded before calculating elapsed time");
    float ms = 0;
    NPU_CHECK(npu_sim::event_elapsed_time(&ms, reinterpret_cast<npu_sim::Event>(start),
                                          reinterpret_cast<npu_sim::Event>(end)));
    return static_cast<double>(ms);
  });
  m.def("_launch_blocking", [] { return npu_sim::launch_blocking(); });

  m.def("_memory_stats", &memory_stats);
  memory_history::bind(m);
  bind_ipc(m);
  m.def("_empty_cache", [] { caching_allocator().empty_cache(); });
  m.def("_reset_peak_stats", [](c10::DeviceIndex d) {
    check_device(d, "reset_peak_memory_stats");
    caching_allocator().reset_peak_stats(d);
  });
  m.def("_reset_accumulated_stats", [](c10::DeviceIndex d) {
    check_device(d, "reset_accumulated_memory_stats");
    caching_allocator().reset_accumulated_stats(d);
  });
  m.def("_set_memory_fraction", [](double fraction, c10::DeviceIndex d) {
    check_device(d, "set_per_process_memory_fraction");
    TORCH_CHECK_VALUE(fraction > 0.0 && fraction <= 1.0,
                      "set_per_process_memory_fraction: fraction must be in (0, 1], got ", fraction);
    caching_allocator().set_memory_fraction(fraction, d);
  });
  m.def("_get_memory_fraction", [](c10::DeviceIndex d) {
    check_device(d, "get_per_process_memory_fraction");
    return caching_allocator().get_memory_fraction(d);
  });
  m.def("_mem_get_info", [](c10::DeviceIndex d) { return device_allocator()->getMemoryInfo(d); });
  m.def("_alloc_config", [] {
    const auto& c = caching_allocator().config();
    py::dict d;
    d["max_split_size"] = c.max_split_size;
    d["garbage_collection_threshold"] = c.garbage_collection_threshold;
    d["roundup_power2_divisions"] = c.roundup_power2_divisions;
    d["expandable_segments"] = c.expandable_segments;
    d["caching_enabled"] = c.caching_enabled;
    return d;
  });
  m.def("_host_empty_cache", [] { host_allocator()->empty_cache(); });

  m.def("_get_default_generator", [](c10::DeviceIndex d) {
    torch::utils::register_fork_handler_for_device_init(at::kPrivateUse1);
    return py::reinterpret_steal<py::object>(THPGenerator_initDefaultGenerator(default_generator(d)));
  });

  m.def("_fallback_ops", &fallback_ops);
  m.def("_reset_fallback_ops", &reset_fallback_ops);
  m.def("_runtime_counters", &runtime_counters);
  // Which library multiplies on the Cube unit: the direct GEMM path's per dtype, convolution's, the micro-kernel
  // of the UB panels (float64, staged 16-bit, the tile layer) and bf16 attention's products.
  m.def("_cube_kernels", [] {
    using npu_kernels::DType;
    return std::map<std::string, std::string>{{"float32", npu_kernels::gemm_library_name(DType::kFloat32)},
                                              {"bfloat16", npu_kernels::gemm_library_name(DType::kBFloat16)},
                                              {"float16", npu_kernels::gemm_library_name(DType::kFloat16)},
                                              {"int8", npu_kernels::quant_matmul_library_name()},
                                              {"conv", npu_kernels::conv_library_name()},
                                              {"panels", npu_kernels::gemm_micro_kernel_name()},
                                              {"attention_bf16", npu_kernels::attention_bf16_kernel_name()}};
  });
  m.def("_reset_runtime_counters", [] { npu_sim::reset_counters(); });
  m.def("_set_launch_recording", [](bool on, std::size_t capacity) {
    TORCH_CHECK_VALUE(capacity >= 1, "set_launch_recording: capacity must be at least 1, got ", capacity);
    NPU_CHECK(npu_sim::set_launch_recording(on, capacity));
  });
  m.def("_launch_recording", [] { return npu_sim::launch_recording(); });
  m.def("_launch_records", [] {
    py::list out;
    for (const auto& r : npu_sim::get_launch_records()) out.append(launch_record_dict(r));
    return out;
  });
  m.def("_launch_totals", &launch_totals);
  m.def("_clear_launch_records", [] { npu_sim::clear_launch_records(); });
}
