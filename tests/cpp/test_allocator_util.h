// Shared helpers for the caching-allocator gtests: streams, device capacity, random request sizes.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <random>

#include "npu_sim/runtime.h"

namespace npu_alloc_test {

constexpr std::size_t kMiB = 1024 * 1024;

inline npu_sim::Stream new_stream(int device) {
  npu_sim::Stream s = nullptr;
  EXPECT_EQ(npu_sim::stream_create(device, &s), npu_sim::Status::kSuccess);
  return s;
}

inline std::size_t capacity(int device) {
  npu_sim::DeviceProperties p{};
  EXPECT_EQ(npu_sim::get_device_properties(device, &p), npu_sim::Status::kSuccess);
  return p.hbm_bytes;
}

// A request size from each pool regime in turn: small pool, small-to-large, split large, oversize-ish.
inline std::size_t random_request_bytes(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0: return 1 + rng() % 4096;
    case 1: return 1 + rng() % kMiB;
    case 2: return kMiB + rng() % (9 * kMiB);
    default: return 10 * kMiB + rng() % (30 * kMiB);
  }
}

}  // namespace npu_alloc_test
