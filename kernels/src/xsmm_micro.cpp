// The Cube's small-GEMM micro-kernel on libxsmm: JIT-generated AVX-512 / AVX2 code for the small dense
// products of a core's tiles (fp32, row-major, leading dimensions), without BLAS's per-call packing.
// NPU_SIM_GEMM_XSMM=0 turns it off (the caller then takes OpenBLAS or the portable loop).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "gemm_tiling.h"

#ifdef NPU_SIM_HAVE_XSMM
#include <libxsmm.h>
#endif

namespace npu_kernels {
namespace detail {

#ifdef NPU_SIM_HAVE_XSMM
namespace {

bool xsmm_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("NPU_SIM_GEMM_XSMM");
    if (v != nullptr && std::string(v) == "0") return false;
    libxsmm_init();  // idempotent; here once, on the first caller, before any kernel is dispatched
    return true;
  }();
  return on;
}

}  // namespace

bool xsmm_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
               int64_t ldc, bool accumulate) {
  // libxsmm's dispatch takes int sizes; its JIT targets small products (it returns null past its limits).
  constexpr int64_t kMax = 1 << 20;
  if (!xsmm_enabled() || m > kMax || n > kMax || k > kMax || lda > kMax || ldb > kMax || ldc > kMax || k == 0) {
    return false;
  }
  // b's rows a multiple of 4 KiB apart all fall into the same few L1 sets, and libxsmm's kernels walk down them:
  // 2-2.5x slower (Zen 3: 4 x 1024 x 512 at 14 against 31 GFLOP/s with 16 floats more per row, OpenBLAS 25). The
  // caller's other micro-kernel packs b's panels first. (Operands of our own, e.g. attention's K^T, are laid out
  // with detail::unaliased_ld.)
  if (k > 8 && ldb % 1024 == 0) return false;
  // libxsmm is column-major: the row-major C = A B is the column-major C^T = B^T A^T, i.e. (n x k) (k x m).
  // Wider outputs go in panels of kPanel columns: measured fastest on 16-128 rows (1.1-1.3x whole-width
  // kernels: a's rows stay in the core's caches across panels), the width of one AVX-512 register block.
  constexpr int64_t kPanel = 64;
  const libxsmm_blasint N = static_cast<libxsmm_blasint>(m), K = static_cast<libxsmm_blasint>(k),
                        LDA = static_cast<libxsmm_blasint>(ldb), LDB = static_cast<libxsmm_blasint>(lda),
                        LDC = static_cast<libxsmm_blasint>(ldc);
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  // beta 0 never reads c (the L0C / UB may hold stale data, even NaN). Dispatch is a lookup in libxsmm's
  // thread-safe registry once the shape's kernel exists; a full panel and the tail panel at most.
  libxsmm_smmfunction full = nullptr;
  for (int64_t j0 = 0; j0 < n; j0 += kPanel) {
    const int64_t w = std::min(kPanel, n - j0);
    const libxsmm_blasint M = static_cast<libxsmm_blasint>(w);
    libxsmm_smmfunction fn = w == kPanel ? full : nullptr;
    if (fn == nullptr) fn = libxsmm_smmdispatch(M, N, K, &LDA, &LDB, &LDC, &alpha, &beta, nullptr, nullptr);
    if (fn == nullptr) {
      if (j0 == 0) return false;  // nothing done yet: the caller takes another micro-kernel
      // the tail panel alone has no kernel: BLAS (or the portable loop) finishes it
      gemm_rowmajor<float>(false, false, m, w, k, 1.0f, a, lda, b + j0, ldb, beta, c + j0, ldc);
      continue;
    }
    if (w == kPanel) full = fn;
    fn(b + j0, a, c + j0);
  }
  return true;
}

const char* xsmm_name() { return xsmm_enabled() ? "libxsmm " LIBXSMM_VERSION : nullptr; }
#else
bool xsmm_gemm(int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t, bool) {
  return false;
}
const char* xsmm_name() { return nullptr; }
#endif

}  // namespace detail
}  // namespace npu_kernels
