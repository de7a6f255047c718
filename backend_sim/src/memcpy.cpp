// memcpy / memcpy_async / memset / memset_async: argument and direction checks from the pointer
// registry, staging of pageable sources, waiting for pageable destinations, the sticky-error checks of
// the calls that wait, byte counters.
#include <cstring>

#include "internal.h"

namespace npu_sim {
namespace detail {
namespace {

const char* kind_name(MemcpyKind k) {
  switch (k) {
    case MemcpyKind::kHostToHost: return "kHostToHost";
    case MemcpyKind::kHostToDevice: return "kHostToDevice";
    case MemcpyKind::kDeviceToHost: return "kDeviceToHost";
    case MemcpyKind::kDeviceToDevice: return "kDeviceToDevice";
    case MemcpyKind::kDefault: return "kDefault";
  }
  return "?";
}

const char* memory_name(const AllocInfo& a) {
  switch (a.type) {
    case MemoryType::kDevice: return "device memory";
    case MemoryType::kHost: return "pinned host memory";
    default: return "pageable host memory";
  }
}

// Looks `p` up and checks that [p, p+bytes) lies inside its allocation when it is a registered one.
Status check_range(const char* fn, const char* arg, const void* p, std::size_t bytes, AllocInfo* info) {
  NPU_SIM_CHECK(p != nullptr, Status::kInvalidValue, "%s: %s is null (expected a pointer to %zu bytes)", fn, arg,
                bytes);
  *info = AllocInfo{};
  if (!find_allocation(p, info)) return Status::kSuccess;  // pageable host memory: nothing to check
  const std::size_t offset = static_cast<std::size_t>(static_cast<const char*>(p) - info->base);
  NPU_SIM_CHECK(bytes <= info->size - offset, Status::kInvalidValue,
                "%s: %s range [%p, %p + %zu) runs past the end of its %s allocation (base %p, %zu bytes)", fn, arg, p,
                p, bytes, memory_name(*info), static_cast<void*>(info->base), info->size);
  return Status::kSuccess;
}

// A validated copy: resolved direction and both sides' attributes.
struct CopyPlan {
  MemcpyKind kind = MemcpyKind::kDefault;
  AllocInfo dst, src;
};

Status plan_copy(const char* fn, void* dst, const void* src, std::size_t bytes, MemcpyKind kind, CopyPlan* plan) {
  NPU_SIM_CHECK(static_cast<int>(kind) >= 0 && static_cast<int>(kind) <= static_cast<int>(MemcpyKind::kDefault),
                Status::kInvalidValue, "%s: kind %d is not a MemcpyKind (expected 0..4)", fn, static_cast<int>(kind));
  NPU_SIM_RETURN_IF_ERROR(check_range(fn, "dst", dst, bytes, &plan->dst));
  NPU_SIM_RETURN_IF_ERROR(check_range(fn, "src", src, bytes, &plan->src));
  const bool dst_dev = plan->dst.type == MemoryType::kDevice;
  const bool src_dev = plan->src.type == MemoryType::kDevice;
  const MemcpyKind actual = src_dev ? (dst_dev ? MemcpyKind::kDeviceToDevice : MemcpyKind::kDeviceToHost)
                                    : (dst_dev ? MemcpyKind::kHostToDevice : MemcpyKind::kHostToHost);
  if (kind != MemcpyKind::kDefault && kind != actual) {
    const bool want_src_dev = kind == MemcpyKind::kDeviceToHost || kind == MemcpyKind::kDeviceToDevice;
    const bool bad_src = want_src_dev != src_dev;
    return fail(Status::kInvalidValue, "%s: kind %s expects %s to be %s, but %s %p is %s", fn, kind_name(kind),
                bad_src ? "src" : "dst", (bad_src ? want_src_dev : !want_src_dev) ? "device memory" : "host memory",
                bad_src ? "src" : "dst", bad_src ? src : static_cast<const void*>(dst),
                memory_name(bad_src ? plan->src : plan->dst));
  }
  plan->kind = actual;
  return Status::kSuccess;
}

void count_bytes(MemcpyKind k, std::size_t bytes) {
  AtomicCounters& c = counters();
  std::atomic<std::uint64_t>* a = k == MemcpyKind::kHostToDevice   ? &c.bytes_h2d
                                  : k == MemcpyKind::kDeviceToHost ? &c.bytes_d2h
                                  : k == MemcpyKind::kDeviceToDevice ? &c.bytes_d2d
                                                                     : &c.bytes_h2h;
  a->fetch_add(bytes, std::memory_order_relaxed);
}

OpFn copy_op(void* dst, const void* src, std::size_t bytes, MemcpyKind kind) {
  return [dst, src, bytes, kind]() -> std::string {
    parallel_memcpy(dst, src, bytes);
    count_bytes(kind, bytes);
    return "";
  };
}

// The default stream a synchronous operation touching these attributes is ordered on.
Status sync_stream_for(const char* fn, const AllocInfo& device_side, std::shared_ptr<StreamImpl>* out) {
  int dev = device_side.type == MemoryType::kDevice ? device_side.device : current_device();
  NPU_SIM_RETURN_IF_ERROR(check_device(fn, dev));
  *out = default_stream(dev);
  return Status::kSuccess;
}

}  // namespace
}  // namespace detail

// Pageable host sources up to this size are staged so that the call does not wait for the stream.
constexpr std::size_t kMaxStagedBytes = std::size_t{1} << 20;

namespace {

// A copy op as launch recording sees it: its name and the device-memory (GM) bytes it reads and writes.
Status enqueue_copy_op(const char* fn, StreamImpl& s, detail::OpFn op, MemcpyKind kind, std::size_t bytes) {
  switch (kind) {
    case MemcpyKind::kHostToDevice: return detail::enqueue_copy(fn, s, std::move(op), "memcpy_h2d", 0, bytes);
    case MemcpyKind::kDeviceToHost: return detail::enqueue_copy(fn, s, std::move(op), "memcpy_d2h", bytes, 0);
    case MemcpyKind::kDeviceToDevice:
      return detail::enqueue_copy(fn, s, std::move(op), "memcpy_d2d", bytes, bytes);
    default: return detail::enqueue_copy(fn, s, std::move(op), "memcpy_h2h", 0, 0);
  }
}

}  // namespace

Status memcpy_async(void* dst, const void* src, std::size_t bytes, MemcpyKind kind, Stream stream) {
  constexpr const char* fn = "memcpy_async";
  if (bytes == 0) return Status::kSuccess;
  detail::CopyPlan plan;
  NPU_SIM_RETURN_IF_ERROR(detail::plan_copy(fn, dst, src, bytes, kind, &plan));
  Status st;
  auto s = detail::resolve_stream(fn, stream, &st);
  if (!s) return st;
  const bool dst_pageable = plan.dst.type == MemoryType::kUnregistered;
  const bool src_pageable = plan.src.type == MemoryType::kUnregistered;
  // Large pageable sources are not staged: like CUDA's driver, the call then synchronizes with the
  // stream (staging hundreds of MiB into fresh pages costs more than the copy itself).
  if (dst_pageable || (src_pageable && bytes > kMaxStagedBytes)) {
    // A failed device's bytes are not handed to the host as if they were good.
    if (dst_pageable) NPU_SIM_RETURN_IF_ERROR(detail::device_error(s->device));
    // The call returns once the copy is done, so the source stays valid: no staging needed.
    NPU_SIM_RETURN_IF_ERROR(enqueue_copy_op(fn, *s, detail::copy_op(dst, src, bytes, plan.kind), plan.kind, bytes));
    return detail::sync_stream(fn, *s);
  }
  if (src_pageable) {
    // The caller may reuse its pageable buffer on return: stage it into memory the op owns.
    std::shared_ptr<char[]> staged(new char[bytes]);
    detail::parallel_memcpy(staged.get(), src, bytes);
    const MemcpyKind k = plan.kind;
    NPU_SIM_RETURN_IF_ERROR(enqueue_copy_op(fn, *s, [dst, staged, bytes, k]() -> std::string {
      detail::parallel_memcpy(dst, staged.get(), bytes);
      detail::count_bytes(k, bytes);
      return "";
    }, k, bytes));
  } else {
    NPU_SIM_RETURN_IF_ERROR(enqueue_copy_op(fn, *s, detail::copy_op(dst, src, bytes, plan.kind), plan.kind, bytes));
  }
  return detail::maybe_block(fn, *s);
}

Status memcpy(void* dst, const void* src, std::size_t bytes, MemcpyKind kind) {
  constexpr const char* fn = "memcpy";
  if (bytes == 0) return Status::kSuccess;
  detail::CopyPlan plan;
  NPU_SIM_RETURN_IF_ERROR(detail::plan_copy(fn, dst, src, bytes, kind, &plan));
  std::shared_ptr<StreamImpl> s;
  if (plan.dst.type == MemoryType::kDevice) {
    s = detail::default_stream(plan.dst.device);
  } else if (plan.src.type == MemoryType::kDevice) {
    s = detail::default_stream(plan.src.device);
  } else {
    NPU_SIM_RETURN_IF_ERROR(detail::sync_stream_for(fn, plan.dst, &s));
  }
  // The devices involved: the copying stream's, and the source's of a peer copy.
  const int peer = plan.kind == MemcpyKind::kDeviceToDevice && plan.src.device != plan.dst.device
                       ? plan.src.device : -1;
  // A device already failed: copy nothing (its bytes are not good, and nothing is written to a failed one).
  if (peer >= 0) NPU_SIM_RETURN_IF_ERROR(detail::device_error(peer));
  NPU_SIM_RETURN_IF_ERROR(detail::device_error(s->device));
  // Peer copy: the source device's queued work must have produced the bytes first.
  if (peer >= 0) NPU_SIM_RETURN_IF_ERROR(detail::sync_stream(fn, *detail::default_stream(peer)));
  NPU_SIM_RETURN_IF_ERROR(enqueue_copy_op(fn, *s, detail::copy_op(dst, src, bytes, plan.kind), plan.kind, bytes));
  NPU_SIM_RETURN_IF_ERROR(detail::sync_stream(fn, *s));
  return peer >= 0 ? detail::device_error(peer) : Status::kSuccess;
}

namespace {
Status plan_memset(const char* fn, void* dst, std::size_t bytes, detail::AllocInfo* info) {
  NPU_SIM_RETURN_IF_ERROR(detail::check_range(fn, "dst", dst, bytes, info));
  NPU_SIM_CHECK(info->type != MemoryType::kUnregistered, Status::kInvalidValue,
                "%s: dst %p is pageable host memory (expected device or pinned host memory)", fn, dst);
  return Status::kSuccess;
}

detail::OpFn memset_op(void* dst, int value, std::size_t bytes) {
  return [dst, value, bytes]() -> std::string {
    detail::parallel_memset(dst, value, bytes);
    return "";
  };
}
}  // namespace

Status memset_async(void* dst, int value, std::size_t bytes, Stream stream) {
  constexpr const char* fn = "memset_async";
  if (bytes == 0) return Status::kSuccess;
  detail::AllocInfo info;
  NPU_SIM_RETURN_IF_ERROR(plan_memset(fn, dst, bytes, &info));
  Status st;
  auto s = detail::resolve_stream(fn, stream, &st);
  if (!s) return st;
  NPU_SIM_RETURN_IF_ERROR(detail::enqueue_copy(fn, *s, memset_op(dst, value, bytes), "memset", 0, bytes));
  return detail::maybe_block(fn, *s);
}

Status memset(void* dst, int value, std::size_t bytes) {
  constexpr const char* fn = "memset";
  if (bytes == 0) return Status::kSuccess;
  detail::AllocInfo info;
  NPU_SIM_RETURN_IF_ERROR(plan_memset(fn, dst, bytes, &info));
  std::shared_ptr<StreamImpl> s;
  NPU_SIM_RETURN_IF_ERROR(detail::sync_stream_for(fn, info, &s));
  NPU_SIM_RETURN_IF_ERROR(detail::device_error(s->device));  // a failed device: write nothing
  NPU_SIM_RETURN_IF_ERROR(detail::enqueue_copy(fn, *s, memset_op(dst, value, bytes), "memset", 0, bytes));
  return detail::sync_stream(fn, *s);
}

}  // namespace npu_sim
