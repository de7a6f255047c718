// Kernel and host-function launch onto streams, launch-blocking mode and the process-wide counters.
#include "internal.h"

namespace npu_sim {
namespace detail {
AtomicCounters& counters() {
  static AtomicCounters* c = new AtomicCounters();  // process lifetime
  return *c;
}
}  // namespace detail

using detail::fail;

bool launch_blocking() { return detail::config().launch_blocking; }

Status launch_kernel(Stream stream, const char* name, std::uint32_t block_dim, KernelFn&& fn) {
  NPU_SIM_CHECK(name != nullptr, Status::kInvalidValue, "launch_kernel: name is null (expected the kernel's name)");
  NPU_SIM_CHECK(block_dim > 0, Status::kInvalidValue,
                "launch_kernel: kernel '%s': block_dim is 0 (expected at least one block)", name);
  NPU_SIM_CHECK(static_cast<bool>(fn), Status::kInvalidValue,
                "launch_kernel: kernel '%s': fn is empty (expected a callable)", name);
  // The per-op host cost matters (a chain of small kernels is issue-bound): a cached stream lookup, the
  // body moved into a recycled queue entry, no copy of the name, one relaxed counter update.
  Status st;
  StreamImpl* s = detail::resolve_stream_cached("launch_kernel", stream, &st);
  if (s == nullptr) return st;
  NPU_SIM_RETURN_IF_ERROR(detail::enqueue_kernel("launch_kernel", *s, name, block_dim, std::move(fn)));
  detail::counters().kernels_launched.fetch_add(1, std::memory_order_relaxed);
  return detail::maybe_block("launch_kernel", *s);
}

Status launch_host_func(Stream stream, std::function<void()> fn) {
  NPU_SIM_CHECK(static_cast<bool>(fn), Status::kInvalidValue, "launch_host_func: fn is empty (expected a callable)");
  Status st;
  auto s = detail::resolve_stream("launch_host_func", stream, &st);
  if (!s) return st;
  NPU_SIM_RETURN_IF_ERROR(detail::enqueue("launch_host_func", *s, [fn = std::move(fn)]() -> std::string {
    try {
      fn();
    } catch (const AsyncError&) {
      throw;  // the worker records its status and message as they are
    } catch (const std::exception& e) {
      return std::string("host function failed: ") + e.what();
    } catch (...) {
      return "host function failed: unknown exception";
    }
    return "";
  }));
  return detail::maybe_block("launch_host_func", *s);
}

Counters get_counters() {
  const detail::AtomicCounters& c = detail::counters();
  constexpr auto r = std::memory_order_relaxed;
  return Counters{c.bytes_h2d.load(r),        c.bytes_d2h.load(r),       c.bytes_d2d.load(r),
                  c.bytes_h2h.load(r),        c.kernels_launched.load(r), c.kernels_failed.load(r),
                  c.device_mallocs.load(r),   c.device_frees.load(r)};
}

void reset_counters() {
  detail::AtomicCounters& c = detail::counters();
  for (auto* a : {&c.bytes_h2d, &c.bytes_d2h, &c.bytes_d2d, &c.bytes_h2h, &c.kernels_launched, &c.kernels_failed,
                  &c.device_mallocs, &c.device_frees}) {
    a->store(0, std::memory_order_relaxed);
  }
}

}  // namespace npu_sim
