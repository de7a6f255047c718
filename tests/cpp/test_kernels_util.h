// Shared by the kernel gtests: a device buffer filled from / read back to a host vector, a flat unary
// elementwise iterator, and ASSERT_OK.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "npu_kernels/elementwise.h"
#include "npu_sim/runtime.h"

#define ASSERT_OK(expr) ASSERT_EQ((expr), npu_sim::Status::kSuccess) << npu_sim::last_error_message()

template <typename T>
struct DeviceBuf {
  T* ptr = nullptr;
  std::size_t n = 0;
  explicit DeviceBuf(const std::vector<T>& host) : n(host.size()) {
    void* p = nullptr;
    EXPECT_EQ(npu_sim::malloc_device(0, &p, std::max<std::size_t>(1, n) * sizeof(T)), npu_sim::Status::kSuccess);
    ptr = static_cast<T*>(p);
    if (n) EXPECT_EQ(npu_sim::memcpy(ptr, host.data(), n * sizeof(T), npu_sim::MemcpyKind::kHostToDevice), npu_sim::Status::kSuccess);
  }
  ~DeviceBuf() { npu_sim::free_device(ptr); }
  DeviceBuf(const DeviceBuf&) = delete;
  DeviceBuf& operator=(const DeviceBuf&) = delete;
  std::vector<T> read() const {
    std::vector<T> h(n);
    if (n) EXPECT_EQ(npu_sim::memcpy(h.data(), ptr, n * sizeof(T), npu_sim::MemcpyKind::kDeviceToHost), npu_sim::Status::kSuccess);
    return h;
  }
};

// out[i] = op(in[i]) over n contiguous elements
inline npu_kernels::ElementwiseIter flat_iter(int64_t n, npu_kernels::DType in, npu_kernels::DType out, void* dst,
                                              const void* src, size_t out_size, size_t in_size) {
  npu_kernels::ElementwiseIter it;
  it.ndim = 1;
  it.shape[0] = n;
  it.noutputs = 1;
  it.ninputs = 1;
  it.in_dtype = in;
  it.out_dtype = out;
  it.data[0] = dst;
  it.data[1] = const_cast<void*>(src);
  it.strides[0][0] = static_cast<int64_t>(out_size);
  it.strides[1][0] = static_cast<int64_t>(in_size);
  return it;
}
