// Tile-layer overhead benchmark (torch-free): LinearAddGelu written with the tile layer versus the same
// kernel and tiling written directly on the runtime, fp32, best of several runs each. Prints the times and
// the ratio (the layer's goal: <= 1.15x the direct kernel). Asserts nothing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "npu_kernels/fused.h"

namespace {

float* device_filled(std::size_t n, float v) {
  void* p = nullptr;
  npu_sim::malloc_device(0, &p, n * sizeof(float));
  std::vector<float> h(n, v);
  npu_sim::memcpy(p, h.data(), n * sizeof(float), npu_sim::MemcpyKind::kHostToDevice);
  return static_cast<float*>(p);
}

template <typename Fn>
double best_ms(Fn launch, int reps) {
  launch();  // warm-up (UB pages, the BLAS load)
  npu_sim::device_synchronize(0);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    launch();
    npu_sim::device_synchronize(0);
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

}  // namespace

int main() {
  std::printf("%-18s %12s %12s %8s\n", "M x K x N (fp32)", "tile ms", "direct ms", "ratio");
  const int64_t shapes[][3] = {{1024, 1024, 1024}, {512, 4096, 1024}};  // M, K, N
  for (const auto& s : shapes) {
    const int64_t m = s[0], k = s[1], n = s[2];
    float* x = device_filled(m * k, 0.01f);
    float* w = device_filled(k * n, 0.02f);
    float* b = device_filled(n, 0.1f);
    float* out = device_filled(m * n, 0.0f);
    const npu_kernels::LinearAddGeluArgs args{x, w, b, out, m, n, k};
    // Interleaved rounds so that both see the same machine state; the best of each.
    double tile = 1e30, direct = 1e30;
    for (int round = 0; round < 3; ++round) {
      tile = std::min(tile, best_ms([&] { npu_kernels::linear_add_gelu(nullptr, args); }, 5));
      direct = std::min(direct, best_ms([&] { npu_kernels::linear_add_gelu_direct(nullptr, args); }, 5));
    }
    char label[64];
    std::snprintf(label, sizeof(label), "%lldx%lldx%lld", static_cast<long long>(m), static_cast<long long>(k),
                  static_cast<long long>(n));
    std::printf("%-18s %12.2f %12.2f %7.3fx\n", label, tile, direct, tile / direct);
    for (float* p : {x, w, b, out}) npu_sim::free_device(p);
  }
  return 0;
}
