// The tile layer's out-of-line half (kernels/include/npu_kernels/tile.h): UB overflow and range errors,
// the GM<->UB row copies, the vector-unit loops, Cast and the Cube's Mmad on tiles.
#include "npu_kernels/tile.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "dtype_convert.h"
#include "fast_math.h"
#include "gemm_tiling.h"

namespace npu_kernels::tile {

namespace {

std::size_t budget_kb(const char* env, int fallback) {
  const char* v = std::getenv(env);
  if (v == nullptr || *v == '\0') return static_cast<std::size_t>(fallback) << 10;
  char* end = nullptr;
  const long kb = std::strtol(v, &end, 10);
  if (*end != '\0' || kb < 16 || kb > 16384) return static_cast<std::size_t>(fallback) << 10;
  return static_cast<std::size_t>(kb) << 10;
}

// The executing core thread's L1 and L0C: host memory kept per thread (a core thread runs one block at a
// time), allocated on the thread's first block, like the runtime's UB.
struct CubeMemory {
  void* l1 = nullptr;
  void* l0c = nullptr;
  CubeMemory() {
    l1 = std::aligned_alloc(4096, (L1Bytes() + 4095) / 4096 * 4096);
    l0c = std::aligned_alloc(4096, (L0CBytes() + 4095) / 4096 * 4096);
    if (l1 == nullptr || l0c == nullptr) throw npu_sim::KernelError("cannot allocate the Cube buffers");
  }
  ~CubeMemory() { std::free(l1), std::free(l0c); }
};

}  // namespace

std::size_t L1Bytes() {
  static const std::size_t bytes = budget_kb("NPU_SIM_L1_KB", 512);
  return bytes;
}
std::size_t L0CBytes() {
  static const std::size_t bytes = budget_kb("NPU_SIM_L0C_KB", 128);
  return bytes;
}

TPipe::TPipe(const npu_sim::BlockContext& ctx, const char* kernel) : ctx_(ctx), kernel_(kernel) {
  thread_local CubeMemory cube;
  base_[0] = ctx.ub, budget_[0] = ctx.ub_bytes;
  base_[1] = cube.l1, budget_[1] = L1Bytes();
  base_[2] = cube.l0c, budget_[2] = L0CBytes();
}

void TPipe::fail(const std::string& what) const { throw npu_sim::KernelError(what); }

void TPipe::overflow(Buffer b, std::size_t bytes) const {
  static const char* const kName[] = {"Unified Buffer", "L1 buffer", "L0C buffer"};
  static const char* const kEnv[] = {"NPU_SIM_UB_KB", "NPU_SIM_L1_KB", "NPU_SIM_L0C_KB"};
  const int i = static_cast<int>(b);
  fail(std::string(kName[i]) + " overflow in kernel '" + kernel_ + "': asked for " + std::to_string(bytes) +
       " bytes with " + std::to_string(used_[i]) + " in use, over the budget of " + std::to_string(budget_[i]) +
       " bytes per AI core (" + kEnv[i] + " sets it)");
}

void PrepareCube() { npu_kernels::detail::ensure_micro_kernel_loaded(); }

namespace detail {

void check_copy(const TPipe& pipe, int64_t rows, int64_t cols, int64_t gm_stride, int64_t gm_size, int64_t ub_stride,
                int64_t ub_size) {
  if (rows < 0 || cols < 0) pipe.fail("DataCopy of a negative extent");
  if (rows == 0 || cols == 0) return;
  if (gm_stride < cols || ub_stride < cols) pipe.fail("DataCopy: a row stride is shorter than a row");
  const int64_t gm_need = (rows - 1) * gm_stride + cols, ub_need = (rows - 1) * ub_stride + cols;
  if (gm_need > gm_size || ub_need > ub_size) {
    pipe.fail("DataCopy of " + std::to_string(rows) + " x " + std::to_string(cols) + " elements needs " +
              std::to_string(gm_need) + " of the global tensor (has " + std::to_string(gm_size) + ") and " +
              std::to_string(ub_need) + " of the tile (has " + std::to_string(ub_size) + ")");
  }
}

void copy_rows(void* dst, int64_t dst_stride, const void* src, int64_t src_stride, int64_t rows,
               std::size_t row_bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  for (int64_t r = 0; r < rows; ++r) std::memcpy(d + r * dst_stride, s + r * src_stride, row_bytes);
}

void check_ub(const TPipe& pipe, const char* op, TPosition dst, TPosition src) {
  if (buffer_of(dst) != Buffer::kUB || buffer_of(src) != Buffer::kUB) {
    pipe.fail(std::string(op) + ": the Vector unit works on UB tiles only (copy a CO1 tile to the UB first)");
  }
}

void check_fixpipe(const TPipe& pipe, int64_t n, TPosition dst, int64_t dst_size, TPosition src, int64_t src_size) {
  if (src != TPosition::CO1 || buffer_of(dst) != Buffer::kUB) pipe.fail("DataCopy between tiles goes from CO1 to the UB");
  if (n < 0 || n > dst_size || n > src_size) {
    pipe.fail("DataCopy CO1 -> UB of " + std::to_string(n) + " elements on tiles of " + std::to_string(dst_size) +
              " (dst) and " + std::to_string(src_size) + " (src) elements");
  }
}

void check_vec(const TPipe& pipe, const char* op, int64_t n, int64_t dst_size, int64_t src_size) {
  if (n < 0 || n > dst_size || n > src_size) {
    pipe.fail(std::string(op) + " of " + std::to_string(n) + " elements on tiles of " + std::to_string(dst_size) +
              " (dst) and " + std::to_string(src_size) + " (src) elements");
  }
}

void vec_binary(VecOp op, float* dst, const float* a, const float* b, int64_t n) {
  if (op == VecOp::kAdd) {
    for (int64_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = a[i] * b[i];
  }
}

void vec_scalar(VecOp op, float* dst, const float* a, float s, int64_t n) {
  if (op == VecOp::kAdds) {
    for (int64_t i = 0; i < n; ++i) dst[i] = a[i] + s;
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = a[i] * s;
  }
}

void vec_unary(VecOp op, float* dst, const float* a, int64_t n) {
  using npu_kernels::detail::fast_exp;
  switch (op) {
    case VecOp::kExp:
      for (int64_t i = 0; i < n; ++i) dst[i] = fast_exp(a[i]);
      break;
    case VecOp::kRelu:  // NaN stays NaN, as torch.relu
      for (int64_t i = 0; i < n; ++i) dst[i] = a[i] < 0.0f ? 0.0f : a[i];
      break;
    case VecOp::kGeluErf:
      for (int64_t i = 0; i < n; ++i) dst[i] = npu_kernels::detail::gelu_erf(a[i]);
      break;
    case VecOp::kGeluTanh:  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      for (int64_t i = 0; i < n; ++i) dst[i] = npu_kernels::detail::gelu_tanh(a[i]);
      break;
    default:
      break;
  }
}

float vec_reduce_sum(const float* a, int64_t n) {
  float lanes[16] = {};  // independent partial sums: vectorisable, and less rounding than one chain
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) lanes[j] += a[i + j];
  float s = 0.0f;
  for (; i < n; ++i) s += a[i];
  for (float l : lanes) s += l;
  return s;
}

float vec_reduce_max(const float* a, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(a[i])) return a[i];  // NaN propagates, as torch.max
    m = a[i] > m ? a[i] : m;
  }
  return m;
}

template <typename To, typename From>
void vec_cast(To* dst, const From* src, int64_t n) {
  using npu_kernels::detail::load_as;
  using npu_kernels::detail::store_as;
  if constexpr (std::is_same_v<To, float> && std::is_same_v<From, Half>) {
    npu_kernels::detail::half_row_to_float(dst, reinterpret_cast<const uint16_t*>(src), n);
  } else if constexpr (std::is_same_v<To, float>) {
    for (int64_t i = 0; i < n; ++i) dst[i] = load_as<float>(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = store_as<To>(src[i]);
  }
}
template void vec_cast<float, Half>(float*, const Half*, int64_t);
template void vec_cast<float, BFloat16>(float*, const BFloat16*, int64_t);
template void vec_cast<Half, float>(Half*, const float*, int64_t);
template void vec_cast<BFloat16, float>(BFloat16*, const float*, int64_t);

template <typename T>
void mmad(float* c, const T* a, const T* b, int64_t m, int64_t n, int64_t k, bool accumulate) {
  if (m == 0 || n == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    // The first K step overwrites the L0C tile (never reads it), later ones add to it.
    npu_kernels::detail::micro_gemm(m, n, k, a, b, c, accumulate);
  } else {
    // fp16 / bf16 operands widened in registers, products summed in float32: row p of b is converted once
    // (a chunk of columns at a time), then every row of c takes a[i][p] times it.
    if (!accumulate) std::fill(c, c + m * n, 0.0f);
    constexpr int64_t kChunk = 256;
    float brow[kChunk];
    for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
      const int64_t nj = std::min(kChunk, n - j0);
      for (int64_t p = 0; p < k; ++p) {
        for (int64_t j = 0; j < nj; ++j) brow[j] = npu_kernels::detail::load_as<float>(b[p * n + j0 + j]);
        for (int64_t i = 0; i < m; ++i) {
          const float av = npu_kernels::detail::load_as<float>(a[i * k + p]);
          float* cr = c + i * n + j0;
          for (int64_t j = 0; j < nj; ++j) cr[j] += av * brow[j];
        }
      }
    }
  }
}
template void mmad<float>(float*, const float*, const float*, int64_t, int64_t, int64_t, bool);
template void mmad<Half>(float*, const Half*, const Half*, int64_t, int64_t, int64_t, bool);
template void mmad<BFloat16>(float*, const BFloat16*, const BFloat16*, int64_t, int64_t, int64_t, bool);

}  // namespace detail
}  // namespace npu_kernels::tile
