// Tile-layer benchmark (torch-free), fp32, best of several interleaved runs each:
//   tile     LinearAddGelu written with the tile layer (npu_kernels::linear_add_gelu)
//   direct   the same kernel and tiling written directly on the runtime (linear_add_gelu_direct)
//   gemm     npu_kernels::gemm alone on the same shape (row-major, the matmul speed reference)
//   unfused  gemm, then a bias add (binary kAdd, bias broadcast over rows), then an erf GELU (unary kGelu):
//            three launches of the kernel library, as eager torch would run x @ w + b, gelu
// and the ratios: tile/direct (the layer's goal: <= 1.15x), tile/gemm (the fused kernel's matmul speed),
// unfused/tile (the fusion's speed-up). Asserts nothing.
// Usage: bench_tile [tile_m tile_n tile_k]  (LinearAddGelu's tiles; default: its own plan). Bigger tiles may
// need bigger Cube buffers: NPU_SIM_L1_KB, NPU_SIM_L0C_KB (and NPU_SIM_UB_KB for the epilogue).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "npu_kernels/fused.h"
#include "npu_kernels/gemm.h"
#include "npu_kernels/pointwise.h"

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

npu_kernels::GemmArgs gemm_args(const float* x, const float* w, float* c, int64_t m, int64_t n, int64_t k) {
  npu_kernels::GemmArgs g;
  g.dtype = npu_kernels::DType::kFloat32;
  g.m = m, g.n = n, g.k = k;
  g.a = x, g.a_batch_stride = m * k, g.a_row_stride = k, g.a_col_stride = 1;
  g.b = w, g.b_batch_stride = k * n, g.b_row_stride = n, g.b_col_stride = 1;
  g.c = c, g.c_batch_stride = m * n, g.c_row_stride = n, g.c_col_stride = 1;
  return g;
}

// c[m, n] += bias[n] (in place), then c = gelu(c): two elementwise launches.
void bias_add_gelu(float* c, const float* bias, int64_t m, int64_t n) {
  npu_kernels::ElementwiseIter add;
  add.ndim = 2, add.shape[0] = n, add.shape[1] = m;  // dim 0 fastest
  add.noutputs = 1, add.ninputs = 2;
  add.data[0] = c, add.data[1] = c, add.data[2] = const_cast<float*>(bias);
  for (int op = 0; op < 2; ++op) add.strides[op][0] = 4, add.strides[op][1] = 4 * n;
  add.strides[2][0] = 4, add.strides[2][1] = 0;
  npu_kernels::PointwiseParams p;
  p.a = 1.0, p.has_a = true;  // alpha
  npu_kernels::binary(nullptr, npu_kernels::BinaryOp::kAdd, add, p);
  npu_kernels::ElementwiseIter gelu;
  gelu.ndim = 1, gelu.shape[0] = m * n;
  gelu.noutputs = 1, gelu.ninputs = 1;
  gelu.data[0] = c, gelu.data[1] = c;
  gelu.strides[0][0] = 4, gelu.strides[1][0] = 4;
  npu_kernels::unary(nullptr, npu_kernels::UnaryOp::kGelu, gelu, npu_kernels::PointwiseParams{});
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t tm = argc > 3 ? std::atoll(argv[1]) : 0, tn = argc > 3 ? std::atoll(argv[2]) : 0,
                tk = argc > 3 ? std::atoll(argv[3]) : 0;
  std::printf("micro-kernel: %s\n", npu_kernels::gemm_micro_kernel_name());
  std::printf("%-16s %9s %9s %9s %9s %11s %10s %10s %11s\n", "MxKxN (fp32)", "tile ms", "direct ms", "gemm ms",
              "unfused", "tile/direct", "tile/gemm", "gemm/unf", "unf/tile");
  const int64_t shapes[][3] = {{1024, 1024, 1024}, {2048, 2048, 2048}, {512, 4096, 1024}};  // M, K, N
  for (const auto& s : shapes) {
    const int64_t m = s[0], k = s[1], n = s[2];
    float* x = device_filled(m * k, 0.01f);
    float* w = device_filled(k * n, 0.02f);
    float* b = device_filled(n, 0.1f);
    float* out = device_filled(m * n, 0.0f);
    float* c = device_filled(m * n, 0.0f);
    const npu_kernels::LinearAddGeluArgs args{x, w, b, out, m, n, k, tm, tn, tk};
    const npu_kernels::GemmArgs g = gemm_args(x, w, c, m, n, k);
    // Interleaved rounds so that all see the same machine state; the best of each.
    const int reps = m * n * k > (int64_t{1} << 31) ? 3 : 5;
    double tile = 1e30, direct = 1e30, gemm = 1e30, unfused = 1e30;
    for (int round = 0; round < 3; ++round) {
      tile = std::min(tile, best_ms([&] { npu_kernels::linear_add_gelu(nullptr, args); }, reps));
      direct = std::min(direct, best_ms([&] { npu_kernels::linear_add_gelu_direct(nullptr, args); }, reps));
      gemm = std::min(gemm, best_ms([&] { npu_kernels::gemm(nullptr, g); }, reps));
      unfused = std::min(unfused, best_ms(
                                      [&] {
                                        npu_kernels::gemm(nullptr, g);
                                        bias_add_gelu(c, b, m, n);
                                      },
                                      reps));
    }
    if (npu_sim::device_synchronize(0) != npu_sim::Status::kSuccess) {  // e.g. tiles over a buffer's budget
      std::printf("%lldx%lldx%lld: %s\n", static_cast<long long>(m), static_cast<long long>(k),
                  static_cast<long long>(n), npu_sim::last_error_message().c_str());
      npu_sim::device_restart(0);
    }
    char label[64];
    std::snprintf(label, sizeof(label), "%lldx%lldx%lld", static_cast<long long>(m), static_cast<long long>(k),
                  static_cast<long long>(n));
    std::printf("%-16s %9.2f %9.2f %9.2f %9.2f %10.3fx %9.3fx %9.3fx %10.3fx\n", label, tile, direct, gemm, unfused,
                tile / direct, tile / gemm, gemm / unfused, unfused / tile);
    for (float* p : {x, w, b, out, c}) npu_sim::free_device(p);
  }
  return 0;
}
