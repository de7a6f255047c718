// Sharing npu tensors between processes of the host (torch.multiprocessing; torch_npu_sim/ipc.py pickles them):
// the producer's storage is named by its place in the device's shareable HBM file plus a reference-count
// file; a consumer maps that memory (npu_sim::ipc_open_memory) as a tensor whose deleter unmaps it and
// drops its reference, so the producer can tell when its storage is free to go.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include <ATen/ATen.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/utils/pybind.h>

#include "core/npu_ipc.h"

#include "core/npu_error.h"
#include "core/npu_stream.h"

namespace torch_npu_sim {
namespace {

namespace py = pybind11;

// The reference count shared by a producer and its consumers: one int64 in a small file.
struct RefCount {
  std::atomic<int64_t>* count = nullptr;
  void* map = nullptr;
};

RefCount map_refcount(const std::string& path, bool create) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0), 0600);
  TORCH_CHECK(fd >= 0, "npu IPC: cannot open the reference count ", path, ": ", std::strerror(errno));
  if (create && ::ftruncate(fd, sizeof(int64_t)) != 0) {
    const int err = errno;
    ::close(fd);
    TORCH_CHECK(false, "npu IPC: cannot size ", path, ": ", std::strerror(err));
  }
  void* m = ::mmap(nullptr, sizeof(int64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  TORCH_CHECK(m != MAP_FAILED, "npu IPC: cannot map ", path);
  return {static_cast<std::atomic<int64_t>*>(m), m};
}

void unmap_refcount(RefCount& r) {
  if (r.map != nullptr) ::munmap(r.map, sizeof(int64_t));
  r = {};
}

// (pid, fd, offset) of the storage at `data_ptr` on `device`: where a consumer finds it. The count file
// is created with one reference, the consumer's.
py::tuple share(int64_t device, uintptr_t data_ptr, const std::string& refcount_path) {
  check_device(static_cast<c10::DeviceIndex>(device), "npu IPC");
  npu_sim::SharedRegion region{};
  NPU_CHECK(npu_sim::device_memory_region(static_cast<int>(device), &region));
  const auto base = reinterpret_cast<uintptr_t>(region.base);
  TORCH_CHECK(data_ptr >= base && data_ptr < base + region.size,
              "npu IPC: the storage at 0x", std::hex, data_ptr, " is not in device ", std::dec, device,
              "'s shareable memory");
  RefCount r = map_refcount(refcount_path, /*create=*/true);
  r.count->store(1);
  unmap_refcount(r);
  return py::make_tuple(static_cast<int64_t>(::getpid()), region.fd, static_cast<uint64_t>(data_ptr - base));
}

int64_t refcount(const std::string& path) {
  RefCount r = map_refcount(path, false);
  const int64_t v = r.count->load();
  unmap_refcount(r);
  return v;
}

// A uint8 npu tensor of `nbytes` over the producer's storage; freeing it unmaps the memory and drops the
// reference in `refcount_path`. The memory is opened first: if the producer is gone that is the error to
// report. A count file gone with an exited producer leaves nobody to tell, and the mapping stays valid.
at::Tensor open(int64_t device, const std::string& path, uint64_t offset, int64_t nbytes,
                const std::string& refcount_path) {
  check_device(static_cast<c10::DeviceIndex>(device), "npu IPC");
  void* ptr = nullptr;
  NPU_CHECK(npu_sim::ipc_open_memory(static_cast<int>(device), path.c_str(), offset,
                                     static_cast<std::size_t>(nbytes), &ptr));
  auto* ctx = new RefCount();
  try {
    *ctx = map_refcount(refcount_path, false);
  } catch (const c10::Error&) {
  }
  auto deleter = [ctx, ptr](void*) {
    (void)npu_sim::ipc_close_memory(ptr);
    if (ctx->count != nullptr) ctx->count->fetch_sub(1);
    unmap_refcount(*ctx);
    delete ctx;
  };
  return at::from_blob(ptr, {nbytes}, deleter,
                       at::TensorOptions().dtype(at::kByte).device(c10::Device(c10::DeviceType::PrivateUse1,
                                                                               static_cast<c10::DeviceIndex>(device))));
}

}  // namespace

void bind_ipc(py::module_& m) {
  m.def("_ipc_share", &share);
  m.def("_ipc_refcount", &refcount);
  m.def("_ipc_open", &open);
}

}  // namespace torch_npu_sim
