// Allocator micro-benchmark (torch-free): cost of one allocate+free pair through the caching allocator
// core versus the uncached path (PYTORCH_NO_NPU_MEMORY_CACHING=1 semantics: device malloc/free each time),
// measured in the same process. Prints a table; asserts nothing.
#include <chrono>
#include <cstdio>
#include <vector>

#include "allocator/caching_allocator.h"

namespace {

double ns_per_pair(npu_alloc::CachingAllocator& alloc, std::size_t bytes, int iters) {
  npu_sim::Stream stream = nullptr;
  npu_sim::get_default_stream(0, &stream);
  void* ctx = nullptr;
  alloc.allocate(0, bytes, stream, &ctx);  // warm the cache
  alloc.free_ctx(ctx);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    alloc.allocate(0, bytes, stream, &ctx);  // the path the torch adapter takes
    alloc.free_ctx(ctx);
  }
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / iters;
}

}  // namespace

int main() {
  npu_alloc::AllocConfig cached_cfg;
  npu_alloc::AllocConfig uncached_cfg;
  uncached_cfg.caching_enabled = false;
  npu_alloc::CachingAllocator cached(cached_cfg);
  npu_alloc::CachingAllocator uncached(uncached_cfg);
  std::printf("%-12s %16s %16s %10s\n", "size", "uncached ns/pair", "cached ns/pair", "speed-up");
  for (std::size_t bytes : {std::size_t{512}, std::size_t{64} << 10, std::size_t{1} << 20, std::size_t{16} << 20,
                            std::size_t{256} << 20}) {
    const double base = ns_per_pair(uncached, bytes, bytes >= (16u << 20) ? 200 : 2000);
    const double ours = ns_per_pair(cached, bytes, 200000);
    std::printf("%-12s %16.0f %16.1f %9.1fx\n", npu_alloc::format_size(bytes).c_str(), base, ours, base / ours);
  }
  return 0;
}
