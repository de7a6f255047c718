// The machine's per-core peak for the Cube's two precisions: fp32 FMA (vfmadd231ps) and bf16 dot products
// (vdpbf16ps, AVX512-BF16: 2 bf16 products accumulated into each fp32 lane), measured with 12 independent
// accumulators on one thread, and AMX-BF16 tile products (tdpbf16ps, 16x16 fp32 += 16x32 bf16 x 32x16 bf16) on
// four independent accumulator tiles where the CPU has AMX. Prints GFLOP/s per core; benchmarks/bench_matmul.py
// quotes GEMM against it.
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace {

constexpr long kIters = 20'000'000;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// 12 independent accumulators per loop (distinct start values, so the compiler cannot merge the chains):
// enough to cover the FMA latency on both units.
#define NPU_SIM_PEAK_LOOP(STEP)                                                                             \
  __m512 a0 = _mm512_set1_ps(0), a1 = _mm512_set1_ps(1), a2 = _mm512_set1_ps(2), a3 = _mm512_set1_ps(3),      \
         a4 = _mm512_set1_ps(4), a5 = _mm512_set1_ps(5), a6 = _mm512_set1_ps(6), a7 = _mm512_set1_ps(7),      \
         a8 = _mm512_set1_ps(8), a9 = _mm512_set1_ps(9), a10 = _mm512_set1_ps(10), a11 = _mm512_set1_ps(11);  \
  const auto t0 = std::chrono::steady_clock::now();                                                          \
  for (long i = 0; i < kIters; ++i) {                                                                        \
    a0 = STEP(a0); a1 = STEP(a1); a2 = STEP(a2); a3 = STEP(a3); a4 = STEP(a4); a5 = STEP(a5);                \
    a6 = STEP(a6); a7 = STEP(a7); a8 = STEP(a8); a9 = STEP(a9); a10 = STEP(a10); a11 = STEP(a11);            \
  }                                                                                                          \
  const double s = seconds_since(t0);                                                                        \
  volatile float sink = _mm512_reduce_add_ps(_mm512_add_ps(                                                  \
      _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),                                           \
      _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)),                             \
                    _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)))));                        \
  (void)sink;

__attribute__((target("avx512f"))) double fp32_peak() {
  const __m512 x = _mm512_set1_ps(1e-7f), y = _mm512_set1_ps(1.0f);
#define FMA_STEP(a) _mm512_fmadd_ps(x, y, a)
  NPU_SIM_PEAK_LOOP(FMA_STEP)
  return 32.0 * kIters * 12 / s / 1e9;  // 16 lanes x (multiply + add)
}

__attribute__((target("avx512f,avx512bf16"))) double bf16_peak() {
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3380), y = (__m512bh)_mm512_set1_epi16(0x3f80);
#define DP_STEP(a) _mm512_dpbf16_ps(a, x, y)
  NPU_SIM_PEAK_LOOP(DP_STEP)
  return 64.0 * kIters * 12 / s / 1e9;  // 16 lanes x 2 products x (multiply + add)
}

// AMX: CPUID.(7,0):EDX bits 22 (AMX-BF16) and 24 (AMX-TILE), and Linux's permission for the tile state.
bool amx_bf16_usable() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  if (!((d >> 22) & 1u) || !((d >> 24) & 1u)) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

struct alignas(64) TileConfig {
  unsigned char palette = 1, start_row = 0, reserved[14] = {};
  unsigned short colsb[16] = {};
  unsigned char rows[16] = {};
};

__attribute__((target("amx-tile,amx-bf16"))) double amx_bf16_peak() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {  // tiles 0-3: fp32 accumulators, 4-7: bf16 operands; 16 rows of 64 bytes each
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
  alignas(64) static unsigned short operand[16 * 32];
  for (auto& v : operand) v = 0x3380;  // small bf16 values: the accumulators stay finite
  _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
  _tile_loadd(4, operand, 64); _tile_loadd(5, operand, 64); _tile_loadd(6, operand, 64); _tile_loadd(7, operand, 64);
  constexpr long kTileIters = kIters / 4;
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < kTileIters; ++i) {
    _tile_dpbf16ps(0, 4, 5); _tile_dpbf16ps(1, 4, 6); _tile_dpbf16ps(2, 7, 5); _tile_dpbf16ps(3, 7, 6);
  }
  const double s = seconds_since(t0);
  alignas(64) static float sink[16 * 16];
  _tile_stored(0, sink, 64);
  _tile_release();
  volatile float keep = sink[0];
  (void)keep;
  return 4.0 * 16 * 16 * 32 * 2 * kTileIters / s / 1e9;  // 16x16 outputs x 32 products x (multiply + add) per tile op
}

}  // namespace

int main() {
  if (!__builtin_cpu_supports("avx512f")) {
    std::printf("fp32 0\nbf16 0\n");
    return 0;
  }
  std::printf("fp32 %.1f\n", fp32_peak());
  std::printf("bf16 %.1f\n", __builtin_cpu_supports("avx512bf16") ? bf16_peak() : 0.0);
  std::printf("amx_bf16 %.1f\n", amx_bf16_usable() ? amx_bf16_peak() : 0.0);
}
