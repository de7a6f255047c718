// Private to kernels/: the tiled GEMM driver shared by gemm.cpp and conv.cpp. Tiles of C are spread
// over AI-core blocks; inside a block the A and B panels are packed into the core's Unified Buffer
// (together with the C accumulator tile) and multiplied by the micro-kernel. Operand access is
// abstracted by pack/store callbacks, so convolution reuses the driver with implicit im2col panels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "dtype_convert.h"
#include "npu_kernels/dtype.h"
#include "npu_kernels/gemm.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {
namespace detail {

// Panel sizes: A is mc x kc, B is kc x nc, the accumulator mc x nc, all inside ub_bytes.
// The Cube's output tile (fp32 128 x 128 x 32 panels, double-buffered, fit the 192 KiB UB): the launch
// records of GEMMs that BLAS blocks for the CPU's caches count GM traffic as if C were tiled so.
inline constexpr std::uint64_t kCubeTile = 128;

struct TilePlan {
  int64_t mc = 0, nc = 0, kc = 0;
};
TilePlan plan_tiles(std::size_t ub_bytes, std::size_t elem_bytes, int64_t batch, int64_t m, int64_t n, int64_t k,
                    int64_t min_units);
// Unified Buffer size, AI-core count and core threads of the stream's device (what a kernel plans with).
bool device_limits(npu_sim::Stream stream, std::size_t* ub_bytes, int* ai_cores, int* core_threads);

// c (m x n, ld n) = [c +] a (m x k, ld k) @ b (k x n, ld n). Dense, packed panels.
// Loads the BLAS (once). Called on the launching host thread, before any block runs, so the one-time
// OPENBLAS_CORETYPE setenv happens outside the core threads.
void ensure_micro_kernel_loaded();
// fp32 takes libxsmm first (src/xsmm_micro.cpp), then OpenBLAS, then a portable loop; accumulate false never
// reads c (the buffers hold stale data, possibly NaN).
void micro_gemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c, bool accumulate);
void micro_gemm(int64_t m, int64_t n, int64_t k, const double* a, const double* b, double* c, bool accumulate);
// c (m x n, ld ldc) = [c +] a (m x k, ld lda) @ b (k x n, ld ldb), row-major fp32, on libxsmm's JIT kernels.
// False, doing nothing, when libxsmm is not built in, is turned off (NPU_SIM_GEMM_XSMM=0), k == 0, or the
// shape is past its limits. xsmm_name() is null when it is not in use.
bool xsmm_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
               int64_t ldc, bool accumulate);
const char* xsmm_name();
// c = alpha * op(a) @ op(b) + beta * c on row-major operands with leading dimensions (CBLAS semantics;
// beta == 0 never reads c). False, doing nothing, when OpenBLAS is not loaded.
template <typename T>  // float, double
bool blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
               const T* b, int64_t ldb, T beta, T* c, int64_t ldc);
bool blas_loaded();
// A symbol of the loaded OpenBLAS (its LAPACK routines: "dgetrf_", ...), null without OpenBLAS.
void* blas_symbol(const char* name);
// oneDNN (src/dnnl_matmul.cpp) built and not turned off (NPU_SIM_GEMM_DNNL=0); convolution checks each shape's
// implementation itself.
bool dnnl_enabled();
// "onednn <version> <implementation>" where oneDNN has a JIT matmul for the type on this CPU, else null (its
// reference loop is slower than our paths); call the dnnl_gemm_* of a type only when its name is not null.
const char* dnnl_f32_name();
const char* dnnl_bf16_name();
// fp32 and bf16 on oneDNN: c = alpha * op(a) @ op(b) + beta * c, bf16 accumulating in fp32 and rounding once,
// same operand conventions as blas_gemm; runs on the calling thread.
void dnnl_gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const BFloat16* a,
                    int64_t lda, const BFloat16* b, int64_t ldb, float beta, BFloat16* c, int64_t ldc);
void dnnl_gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// bf16 operands into an fp32 c (the Cube's L0C accumulator: no rounding), c = alpha * op(a) @ op(b) + beta * c.
void dnnl_gemm_bf16_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const BFloat16* a,
                        int64_t lda, const BFloat16* b, int64_t ldb, float beta, float* c, int64_t ldc);
// fp16 the same way (fp32 accumulation, one rounding): a JIT fp16 kernel exists on AVX512-FP16 / AMX-FP16.
void dnnl_gemm_f16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const Half* a,
                   int64_t lda, const Half* b, int64_t ldb, float beta, Half* c, int64_t ldc);
const char* dnnl_f16_name();
// int8 x int8 -> int32 on oneDNN, named only where exact (VNNI / AMX-INT8; AVX2's kernel saturates).
void dnnl_gemm_s8(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda,
                  const int8_t* b, int64_t ldb, int32_t* c, int64_t ldc);
const char* dnnl_s8_name();
// The oneDNN implementation a dnnl_gemm_* call of this type (kInt8: s8 x s8 -> s32) and layout runs ("brg:...",
// "gemm:jit:...", "ref:any"), with " (dense copies)" appended when it copies padded operands into dense rows
// first (oneDNN 3.2's brgemm takes only dense ones); empty without oneDNN.
std::string dnnl_gemm_impl(DType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, int64_t lda,
                           int64_t ldb, int64_t ldc);
// The same, always done: BLAS when loaded, else a plain loop (for kernels whose panels are not packed).
template <typename T>
void gemm_rowmajor(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
                   const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// How BLAS addresses a rows x cols operand with element strides (rs, cs): row-major, transposed or not,
// with leading dimension ld. False for what it cannot take: no unit stride, broadcasts, lds beyond int.
struct BlasLayout {
  bool trans = false;
  int64_t ld = 0;
};

inline bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, BlasLayout* l) {
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  if (cs == 1 && (rows == 1 || (rs >= std::max<int64_t>(cols, 1) && rs <= kMaxInt))) {
    *l = {false, rows == 1 ? std::max<int64_t>(cols, 1) : rs};
    return true;
  }
  if (rs == 1 && (cols == 1 || (cs >= std::max<int64_t>(rows, 1) && cs <= kMaxInt))) {
    *l = {true, cols == 1 ? std::max<int64_t>(rows, 1) : cs};
    return true;
  }
  return false;
}

// complex64 / complex128 (gemm_complex.cpp): OpenBLAS's cgemm / zgemm on operands it can address, honouring
// the conjugate flags; a strided loop otherwise.
npu_sim::Status gemm_complex(npu_sim::Stream stream, const GemmArgs& g);

// Runs batch x ceil(m/mc) x ceil(n/nc) C tiles over a grid sized by the core count. The callbacks
// (copied into the kernel, so they must own what they read):
//   pack_a(b, i0, mc, k0, kc, Acc* dst)  dst[i * kc + p] = op(A)[b][i0 + i][k0 + p]
//   pack_b(b, k0, kc, j0, nc, Acc* dst)  dst[p * nc + j] = op(B)[b][k0 + p][j0 + j]
//   store(b, i0, mc, j0, nc, const Acc* acc)  acc[i * nc + j] = (A @ B)[b][i0 + i][j0 + j]
// Launch records: each tile reads its A and B panels (elem_bytes per element, as stored in GM) at every
// k step and writes its C tile once; the Cube does 2 * mc * nc * k FLOPs for it.
template <typename Acc, typename PackA, typename PackB, typename Store>
npu_sim::Status tiled_gemm(npu_sim::Stream stream, const char* name, int64_t batch, int64_t m, int64_t n,
                           int64_t k, PackA pack_a, PackB pack_b, Store store, std::size_t elem_bytes) {
  if (batch <= 0 || m <= 0 || n <= 0) return npu_sim::Status::kSuccess;
  ensure_micro_kernel_loaded();
  std::size_t ub_bytes = 0;
  int ai_cores = 1, core_threads = 1;
  if (!device_limits(stream, &ub_bytes, &ai_cores, &core_threads)) return npu_sim::Status::kInvalidHandle;
  const TilePlan plan = plan_tiles(ub_bytes, sizeof(Acc), batch, m, n, k, 2 * int64_t{core_threads});
  const int64_t mt = (m + plan.mc - 1) / plan.mc, nt = (n + plan.nc - 1) / plan.nc;
  const int64_t units = batch * mt * nt;
  const uint32_t grid = static_cast<uint32_t>(std::min<int64_t>(units, std::max(ai_cores, 1)));
  const std::string kernel_name(name);
  return npu_sim::launch_kernel(
      stream, name, grid,
      [=](const npu_sim::BlockContext& ctx) {
        const std::size_t need = sizeof(Acc) * (plan.mc * plan.kc + plan.kc * plan.nc + plan.mc * plan.nc);
        if (need > ctx.ub_bytes) {
          throw npu_sim::KernelError(kernel_name + ": tile plan needs " + std::to_string(need) +
                                     " bytes of Unified Buffer, the core has " + std::to_string(ctx.ub_bytes));
        }
        Acc* pa = static_cast<Acc*>(ctx.ub);
        Acc* pb = pa + plan.mc * plan.kc;
        Acc* pc = pb + plan.kc * plan.nc;
        // Contiguous runs of tiles per block: neighbours share the A panel rows (cache reuse).
        const int64_t begin = units * ctx.block_idx / ctx.block_dim;
        const int64_t end = units * (ctx.block_idx + 1) / ctx.block_dim;
        for (int64_t u = begin; u < end; ++u) {
          const int64_t bi = u / (mt * nt);
          const int64_t r = u % (mt * nt);
          const int64_t i0 = (r / nt) * plan.mc, j0 = (r % nt) * plan.nc;
          const int64_t mc = std::min(plan.mc, m - i0), nc = std::min(plan.nc, n - j0);
          if (k == 0) std::fill(pc, pc + mc * nc, Acc(0));
          for (int64_t k0 = 0; k0 < k; k0 += plan.kc) {
            const int64_t kc = std::min(plan.kc, k - k0);
            pack_a(bi, i0, mc, k0, kc, pa);
            pack_b(bi, k0, kc, j0, nc, pb);
            micro_gemm(mc, nc, kc, pa, pb, pc, k0 > 0);
          }
          store(bi, i0, mc, j0, nc, static_cast<const Acc*>(pc));
          const auto mn = static_cast<std::uint64_t>(mc * nc);
          npu_sim::record_traffic(ctx, elem_bytes * static_cast<std::uint64_t>((mc + nc) * k), elem_bytes * mn, 2 * mn * k, 0);
        }
      });
}

// A row stride of at least n floats (whole 64-byte lines) under which a panel's rows do not alias in the L1
// cache: rows a multiple of 1 KiB apart fall into a few of its sets (libxsmm's Q K^T read K^T rows 8 KiB apart at
// 26 GFLOP/s on a Zen 3 core, 64 with 16 floats more per row).
inline int64_t unaliased_ld(int64_t n) {
  const int64_t ld = (n + 15) / 16 * 16;
  return ld % 256 == 0 ? ld + 16 : ld;
}

// Strided 2-D panel gather: dst[r * ldd + c] = src[r * rs + c * cs] (converted; ldd defaults to cols), walking
// memory in the order of the smaller stride so transposed sources are read contiguously.
template <typename Acc, typename T>
inline void pack_strided(Acc* dst, const T* src, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                         int64_t ldd = -1) {
  if (ldd < 0) ldd = cols;
  if (cs == 1) {
    for (int64_t r = 0; r < rows; ++r) {
      const T* s = src + r * rs;
      Acc* d = dst + r * ldd;
      if constexpr (std::is_same_v<T, Acc>) {
        std::memcpy(d, s, sizeof(Acc) * cols);
      } else if constexpr (std::is_same_v<T, Half>) {
        half_row_to_float(d, reinterpret_cast<const uint16_t*>(s), cols);
      } else {
        for (int64_t c = 0; c < cols; ++c) d[c] = load_as<Acc>(s[c]);
      }
    }
  } else if (rs == 1 || std::abs(rs) < std::abs(cs)) {
    for (int64_t c = 0; c < cols; ++c) {
      const T* s = src + c * cs;
      for (int64_t r = 0; r < rows; ++r) dst[r * ldd + c] = load_as<Acc>(s[r * rs]);
    }
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      const T* s = src + r * rs;
      for (int64_t c = 0; c < cols; ++c) dst[r * ldd + c] = load_as<Acc>(s[c * cs]);
    }
  }
}

}  // namespace detail
}  // namespace npu_kernels
