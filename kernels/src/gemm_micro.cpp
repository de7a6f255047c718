// The Cube unit's micro-kernel: multiplies the packed A/B panels that sit in a core's Unified Buffer.
// It calls Debian's OpenBLAS (runtime-dispatched AVX-512 kernels, ~10x our portable loop on this
// machine; see benchmarks/bench_matmul.py), loaded with dlopen so that we can pick its CPU kernel:
// OpenBLAS 0.3.21 does not know newer AVX-512 cores and falls back to its generic "Prescott" kernels
// unless OPENBLAS_CORETYPE names one, which must happen before the library initialises (we set it while
// loading, see NPU_SIM_BLAS_CORETYPE). It is the
// *threaded* build limited to one thread: the AI-core pool provides the parallelism, and only the
// threaded build locks its buffer allocator, so AI-core threads may call it at once (Debian's serial
// build gives silently wrong results under concurrent calls). Without OpenBLAS (or with
// NPU_SIM_GEMM_BLAS=0) the portable loop below is used. The fp32 micro-kernel on dense tiles asks libxsmm
// first (src/xsmm_micro.cpp): JIT kernels for small products, 1.06-2x OpenBLAS on the tiles (docs/benchmarks.md).
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <type_traits>

#include "gemm_tiling.h"
#include "npu_kernels/gemm.h"

#ifndef NPU_SIM_OPENBLAS_PATH
#define NPU_SIM_OPENBLAS_PATH ""
#endif

namespace npu_kernels {
namespace detail {
namespace {

// CBLAS constants (cblas.h): row-major order, (no) transpose.
constexpr int kRowMajor = 101;
constexpr int kNoTrans = 111;
constexpr int kTrans = 112;
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                         float*, int);
using DgemmFn = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double,
                         double*, int);

struct Blas {
  SgemmFn sgemm = nullptr;
  DgemmFn dgemm = nullptr;
  void* lib = nullptr;  // the dlopen handle, for the LAPACK routines (linalg.cpp)
  std::string name = "own";
};

const Blas& blas() {
  static const Blas instance = [] {
    Blas b;
    const char* off = std::getenv("NPU_SIM_GEMM_BLAS");
    if (off != nullptr && std::string(off) == "0") return b;
    // Choose the kernel family of our private OpenBLAS copy ourselves: NPU_SIM_BLAS_CORETYPE if set, else
    // SkylakeX (the AVX-512 kernels) on AVX-512 cores, which OpenBLAS 0.3.21 may not recognise. A user's
    // OPENBLAS_CORETYPE (often set for numpy's copy, e.g. "Haswell") is restored right after loading.
    const char* user_core = std::getenv("NPU_SIM_BLAS_CORETYPE");
    std::string core = user_core != nullptr ? user_core : "";
    if (user_core == nullptr && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl")) {
      core = "SkylakeX";
    }
    const char* prev = std::getenv("OPENBLAS_CORETYPE");
    const std::string prev_core = prev != nullptr ? prev : "";
    const bool set_core = !core.empty();
    if (set_core) setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
    bool set_threads_env = false;
    // The threaded build must not start its own pool under ours: one thread from its initialisation on.
    if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) {
      setenv("OPENBLAS_NUM_THREADS", "1", 0);
      set_threads_env = true;
    }
    void* lib = nullptr;
    for (const char* path : {NPU_SIM_OPENBLAS_PATH, "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0"}) {
      if (path[0] == '\0') continue;
      lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (lib != nullptr) break;
    }
    if (set_core && prev != nullptr) setenv("OPENBLAS_CORETYPE", prev_core.c_str(), 1);
    if (set_core && prev == nullptr) unsetenv("OPENBLAS_CORETYPE");
    if (set_threads_env) unsetenv("OPENBLAS_NUM_THREADS");
    if (lib == nullptr) return b;
    auto sgemm = reinterpret_cast<SgemmFn>(dlsym(lib, "cblas_sgemm"));
    auto dgemm = reinterpret_cast<DgemmFn>(dlsym(lib, "cblas_dgemm"));
    if (sgemm == nullptr || dgemm == nullptr) return b;
    if (auto set_threads = reinterpret_cast<void (*)(int)>(dlsym(lib, "openblas_set_num_threads"))) set_threads(1);
    auto parallel = reinterpret_cast<int (*)()>(dlsym(lib, "openblas_get_parallel"));
    auto corename = reinterpret_cast<char* (*)()>(dlsym(lib, "openblas_get_corename"));
    b.sgemm = sgemm;
    b.dgemm = dgemm;
    b.lib = lib;
    b.name = std::string(parallel != nullptr && parallel() != 0 ? "openblas-threaded(1)" : "openblas-serial") +
             " (" + (corename != nullptr ? corename() : "?") + ")";
    return b;
  }();
  return instance;
}

}  // namespace

void ensure_micro_kernel_loaded() { (void)blas(); }

template <typename T>
bool blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
               const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  const Blas& lib = blas();
  const auto fn = [&] {
    if constexpr (std::is_same_v<T, float>) return lib.sgemm; else return lib.dgemm;
  }();
  if (fn == nullptr) return false;
  fn(kRowMajor, trans_a ? kTrans : kNoTrans, trans_b ? kTrans : kNoTrans, int(m), int(n), int(k), alpha, a, int(lda),
     b, int(ldb), beta, c, int(ldc));
  return true;
}
template bool blas_gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                               int64_t, float, float*, int64_t);
template bool blas_gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                                const double*, int64_t, double, double*, int64_t);

bool blas_loaded() { return blas().sgemm != nullptr; }

void* blas_symbol(const char* name) {
  const Blas& b = blas();
  return b.lib == nullptr ? nullptr : dlsym(b.lib, name);
}

template <typename T>
void gemm_rowmajor(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
                   const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (blas_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
  // Portable: row-times-panel updates the compiler vectorises.
  for (int64_t i = 0; i < m; ++i) {
    T* cr = c + i * ldc;
    if (beta != T(1))
      for (int64_t j = 0; j < n; ++j) cr[j] = beta == T(0) ? T(0) : beta * cr[j];
    for (int64_t p = 0; p < k; ++p) {
      const T av = alpha * (trans_a ? a[p * lda + i] : a[i * lda + p]);
      if (trans_b) {
        for (int64_t j = 0; j < n; ++j) cr[j] += av * b[j * ldb + p];
      } else {
        const T* br = b + p * ldb;
        for (int64_t j = 0; j < n; ++j) cr[j] += av * br[j];
      }
    }
  }
}
template void gemm_rowmajor<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                                   int64_t, float, float*, int64_t);
template void gemm_rowmajor<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                                    const double*, int64_t, double, double*, int64_t);

// The packed panels: a is m x k, b is k x n, c is m x n, all dense.
template <typename T>
void micro_gemm_dense(int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c, bool accumulate) {
  if (m == 0 || n == 0) return;
  // BLAS with beta 0 overwrites c; the portable loop needs it zeroed first (the UB holds stale data, maybe NaN).
  if (k > 0 && blas_gemm<T>(false, false, m, n, k, T(1), a, k, b, n, accumulate ? T(1) : T(0), c, n)) return;
  if (!accumulate) std::fill(c, c + m * n, T(0));
  gemm_rowmajor<T>(false, false, m, n, k, T(1), a, k, b, n, T(1), c, n);
}

void micro_gemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c, bool accumulate) {
  if (m > 0 && n > 0 && xsmm_gemm(m, n, k, a, k, b, n, c, n, accumulate)) return;
  micro_gemm_dense(m, n, k, a, b, c, accumulate);
}

void micro_gemm(int64_t m, int64_t n, int64_t k, const double* a, const double* b, double* c, bool accumulate) {
  micro_gemm_dense(m, n, k, a, b, c, accumulate);
}

}  // namespace detail

const char* gemm_micro_kernel_name() {
  static const std::string name = detail::xsmm_name() != nullptr
                                      ? std::string(detail::xsmm_name()) + ", else " + detail::blas().name
                                      : detail::blas().name;
  return name.c_str();
}

}  // namespace npu_kernels
