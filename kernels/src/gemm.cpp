// The batched, strided GEMM kernel (npu_kernels::gemm) and the tile planning shared with conv.cpp.
#include "npu_kernels/gemm.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "gemm_tiling.h"
#include "npu_kernels/launch.h"

namespace npu_kernels {
namespace detail {

TilePlan plan_tiles(std::size_t ub_bytes, std::size_t elem_bytes, int64_t batch, int64_t m, int64_t n, int64_t k,
                    int64_t min_units) {
  // Square-ish tiles fill a third of the UB each; a thin side (matrix-vector, small K) gives its share
  // to the other panels so that few, long micro-kernel calls remain. Too few tiles to keep every core
  // thread busy (a small GEMM, a conv weight gradient) halve the wider tile side, down to 32.
  const int64_t budget = static_cast<int64_t>(ub_bytes / elem_bytes);
  int64_t t = static_cast<int64_t>(std::sqrt(static_cast<double>(budget) / 3.0));
  t = std::max<int64_t>(8, t / 8 * 8);
  TilePlan p;
  p.mc = std::max<int64_t>(1, std::min(m, t));
  p.nc = std::max<int64_t>(1, std::min(n, t));
  auto units = [&] { return batch * ((m + p.mc - 1) / p.mc) * ((n + p.nc - 1) / p.nc); };
  while (units() < min_units && std::max(p.mc, p.nc) > 32) {
    if (p.nc >= p.mc) {
      p.nc = (p.nc + 1) / 2;
    } else {
      p.mc = (p.mc + 1) / 2;
    }
  }
  int64_t kc = (budget - p.mc * p.nc) / (p.mc + p.nc);
  if (kc < k) kc = std::max<int64_t>(8, kc / 8 * 8);
  p.kc = std::max<int64_t>(1, std::min(std::max<int64_t>(k, 1), kc));
  return p;
}

bool device_limits(npu_sim::Stream stream, std::size_t* ub_bytes, int* ai_cores, int* core_threads) {
  int device = 0;
  if (stream == nullptr) {
    if (npu_sim::get_device(&device) != npu_sim::Status::kSuccess) return false;
  } else if (npu_sim::stream_get_device(stream, &device) != npu_sim::Status::kSuccess) {
    return false;
  }
  npu_sim::DeviceProperties props{};
  if (npu_sim::get_device_properties(device, &props) != npu_sim::Status::kSuccess) return false;
  *ub_bytes = props.ub_bytes;
  *ai_cores = std::max(props.ai_core_count, props.core_threads);
  *core_threads = std::max(props.core_threads, 1);
  return true;
}

namespace {

// fp16 on a CPU without an fp16 matrix unit (oneDNN has no JIT fp16 matmul there): a unit's operand slices are
// widened to fp32 (exact), multiplied by the fp32 library, and the fp32 result rounded once to fp16: the Cube's
// arithmetic (fp16 products are exact in fp32, fp32 accumulation), at the fp32 GEMM's speed. The staged path it
// replaces widened UB panels for the micro-kernel and ran the GPT-mini's fp16 GEMMs at 2.6x their fp32 time.
// Buffers are the core thread's own, grown and kept.
void widen_matrix(std::vector<float>& buf, const Half* p, int64_t rows, int64_t cols, BlasLayout l, int64_t* ld) {
  // as stored: `rows` x `cols` row-major (ld l.ld), or its transpose column-major; packed densely
  const int64_t lines = l.trans ? cols : rows, len = l.trans ? rows : cols;
  buf.resize(static_cast<std::size_t>(std::max<int64_t>(1, lines * len)));
  for (int64_t i = 0; i < lines; ++i) widen_row(buf.data() + i * len, p + i * l.ld, len);
  *ld = std::max<int64_t>(1, len);
}

void gemm_half_via_fp32(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const Half* a, BlasLayout la,
                        const Half* b, BlasLayout lb, float beta, Half* c, int64_t ldc) {
  thread_local std::vector<float> fa, fb, fc;
  int64_t lda = 0, ldb = 0;
  widen_matrix(fa, a, m, k, la, &lda);
  widen_matrix(fb, b, k, n, lb, &ldb);
  fc.resize(static_cast<std::size_t>(std::max<int64_t>(1, m * n)));
  if (beta != 0.0f) {
    for (int64_t i = 0; i < m; ++i) widen_row(fc.data() + i * n, c + i * ldc, n);
  }
  if (dnnl_f32_name() != nullptr) {
    dnnl_gemm_f32(ta, tb, m, n, k, alpha, fa.data(), lda, fb.data(), ldb, beta, fc.data(), n);
  } else {
    blas_gemm(ta, tb, m, n, k, alpha, fa.data(), lda, fb.data(), ldb, beta, fc.data(), n);
  }
  for (int64_t i = 0; i < m; ++i) narrow_row(c + i * ldc, fc.data() + i * n, n);
}

// A GEMM whose operands the library can address in place (fp32, bf16 and fp16: oneDNN, 16-bit accumulating in
// fp32 and rounding once; fp16 without oneDNN's fp16 kernel: widened to fp32 per unit, gemm_half_via_fp32; fp64,
// and fp32 without oneDNN: OpenBLAS): no UB staging. Each unit is one library call on a (batch, M or N slice) of
// C, two slices per core thread for OpenBLAS (so a thread that starts late still finds work; four made the
// GPT-mini's small GEMMs repack B too often: its step 26.8-29 -> 25.4-25.8 ms), one for oneDNN (its B
// reorder costs more: 512^3 bf16 0.84 -> 0.61 ms; fp32 on oneDNN beat OpenBLAS by 5-13% at 256-2048 and on the
// GPT-mini's shapes), none narrower than 32; the libraries pack their own
// panels (the Cube's L0 loads), so staging them in the UB first would only copy them twice.
template <typename T>
npu_sim::Status gemm_direct(npu_sim::Stream stream, const GemmArgs& g, BlasLayout la, BlasLayout lb,
                            BlasLayout lc) {
  const bool split_m = g.m >= g.n;
  const int64_t len = split_m ? g.m : g.n;
  constexpr int64_t kMinSlice = 32;
  // oneDNN reorders its B panel into the VNNI layout per call: one slice per core thread for bf16.
  // (fp16 runs on oneDNN's fp16 kernel, or widened on its fp32 one.)
  const bool onednn = std::is_same_v<T, BFloat16> || (std::is_same_v<T, Half> && dnnl_f16_name() != nullptr) ||
                      ((std::is_same_v<T, float> || std::is_same_v<T, Half>) && dnnl_f32_name() != nullptr);
  const int64_t kSlicesPerThread = onednn ? 1 : 2;
  const int64_t parts = std::max<int64_t>(
      1, std::min((kSlicesPerThread * int64_t{core_threads()} + g.batch - 1) / g.batch,
                  (len + kMinSlice - 1) / kMinSlice));
  const int64_t units = g.batch * parts;
  const T* a = static_cast<const T*>(g.a);
  const T* b = static_cast<const T*>(g.b);
  T* c = static_cast<T*>(g.c);
  // The beta term: C itself (in place) goes to BLAS as is; another Cin is copied into C first.
  const T* cin = g.beta == 0.0 || g.cin == nullptr || (g.cin == g.c && g.cin_batch_stride == g.c_batch_stride &&
                                                      g.cin_row_stride == g.c_row_stride && g.cin_col_stride == 1)
                     ? nullptr
                     : static_cast<const T*>(g.cin);
  const bool reads_c = g.beta != 0.0;
  return parallel_for(stream, "gemm", units, 1, [=](int64_t begin, int64_t end, const npu_sim::BlockContext& ctx) {
    for (int64_t u = begin; u < end; ++u) {
      const int64_t bi = u / parts, part = u % parts;
      const int64_t lo = len * part / parts, hi = len * (part + 1) / parts;
      const int64_t i0 = split_m ? lo : 0, mc = split_m ? hi - lo : g.m;
      const int64_t j0 = split_m ? 0 : lo, nc = split_m ? g.n : hi - lo;
      T* ct = c + bi * g.c_batch_stride + i0 * g.c_row_stride + j0;
      if (cin != nullptr) {
        for (int64_t i = 0; i < mc; ++i) {
          const T* in = cin + bi * g.cin_batch_stride + (i0 + i) * g.cin_row_stride + j0 * g.cin_col_stride;
          T* out = ct + i * lc.ld;
          if (g.cin_col_stride == 1) {  // rows of Cin, or a linear layer's bias broadcast down C: a row copy
            std::memcpy(out, in, sizeof(T) * static_cast<std::size_t>(nc));
          } else {  // (the strided element loop ran scalar: half of oneDNN's time on a 512x128x384 bf16 linear)
            for (int64_t j = 0; j < nc; ++j) out[j] = in[j * g.cin_col_stride];
          }
        }
      }
      const T* at = a + bi * g.a_batch_stride + i0 * g.a_row_stride;
      const T* bt = b + bi * g.b_batch_stride + j0 * g.b_col_stride;
      if constexpr (std::is_same_v<T, float>) {
        if (onednn) {
          dnnl_gemm_f32(la.trans, lb.trans, mc, nc, g.k, static_cast<float>(g.alpha), at, la.ld, bt, lb.ld,
                        static_cast<float>(g.beta), ct, lc.ld);
        } else {
          blas_gemm(la.trans, lb.trans, mc, nc, g.k, static_cast<float>(g.alpha), at, la.ld, bt, lb.ld,
                    static_cast<float>(g.beta), ct, lc.ld);
        }
      } else if constexpr (std::is_same_v<T, BFloat16>) {
        dnnl_gemm_bf16(la.trans, lb.trans, mc, nc, g.k, static_cast<float>(g.alpha), at, la.ld, bt, lb.ld,
                       static_cast<float>(g.beta), ct, lc.ld);
      } else if constexpr (std::is_same_v<T, Half>) {
        if (dnnl_f16_name() != nullptr) {
          dnnl_gemm_f16(la.trans, lb.trans, mc, nc, g.k, static_cast<float>(g.alpha), at, la.ld, bt, lb.ld,
                        static_cast<float>(g.beta), ct, lc.ld);
        } else {
          gemm_half_via_fp32(la.trans, lb.trans, mc, nc, g.k, static_cast<float>(g.alpha), at, la, bt, lb,
                             static_cast<float>(g.beta), ct, lc.ld);
        }
      } else {
        blas_gemm(la.trans, lb.trans, mc, nc, g.k, static_cast<T>(g.alpha), at, la.ld, bt, lb.ld,
                  static_cast<T>(g.beta), ct, lc.ld);
      }
      // Launch records, as the Cube would move it: C in output tiles of kCubeTile x kCubeTile, each loading
      // its A rows and B columns over all of k (BLAS's own cache blocking is not what an NPU's GM sees), so a
      // C element costs 2 k / kCubeTile element reads; C read for the beta term, written once.
      const auto mn = static_cast<std::uint64_t>(mc * nc), k = static_cast<std::uint64_t>(g.k);
      npu_sim::record_traffic(ctx, sizeof(T) * (2 * mn * k / kCubeTile + (reads_c ? mn : 0)), sizeof(T) * mn,
                              2 * mn * k, 0);
    }
  });
}

template <typename T>
npu_sim::Status gemm_typed(npu_sim::Stream stream, const GemmArgs& g) {
  using Acc = acc_t<T>;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, BFloat16> ||
                std::is_same_v<T, Half>) {
    constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
    const bool library = std::is_same_v<T, double>     ? blas_loaded()
                         : std::is_same_v<T, float>    ? dnnl_f32_name() != nullptr || blas_loaded()
                         // bf16 without oneDNN's kernel: the staged panels, which beat widening to fp32 for
                         // OpenBLAS (as fp16 does) on a Zen 3: 512x128x384 0.53 vs 0.57-0.91 ms, 8x4096x4096
                         // 8.3-8.6 vs 14.1-14.6 ms, squares level or better
                         : std::is_same_v<T, BFloat16> ? dnnl_bf16_name() != nullptr
                                                       : dnnl_f16_name() != nullptr || dnnl_f32_name() != nullptr ||
                                                             blas_loaded();
    BlasLayout la, lb, lc;
    if (g.k > 0 && g.m <= kMaxInt && g.n <= kMaxInt && g.k <= kMaxInt && library &&
        blas_layout(g.m, g.k, g.a_row_stride, g.a_col_stride, &la) &&
        blas_layout(g.k, g.n, g.b_row_stride, g.b_col_stride, &lb) &&
        blas_layout(g.m, g.n, g.c_row_stride, g.c_col_stride, &lc) && !lc.trans) {
      return gemm_direct<T>(stream, g, la, lb, lc);
    }
  }
  const T* a = static_cast<const T*>(g.a);
  const T* b = static_cast<const T*>(g.b);
  T* c = static_cast<T*>(g.c);
  const bool use_beta = g.beta != 0.0;
  const T* cin = use_beta ? static_cast<const T*>(g.cin != nullptr ? g.cin : g.c) : nullptr;
  const int64_t cin_bs = g.cin != nullptr ? g.cin_batch_stride : g.c_batch_stride;
  const int64_t cin_rs = g.cin != nullptr ? g.cin_row_stride : g.c_row_stride;
  const int64_t cin_cs = g.cin != nullptr ? g.cin_col_stride : g.c_col_stride;
  const Acc alpha = static_cast<Acc>(g.alpha), beta = static_cast<Acc>(g.beta);
  auto pack_a = [=](int64_t bi, int64_t i0, int64_t mc, int64_t k0, int64_t kc, Acc* dst) {
    pack_strided(dst, a + bi * g.a_batch_stride + i0 * g.a_row_stride + k0 * g.a_col_stride, mc, kc,
                 g.a_row_stride, g.a_col_stride);
  };
  auto pack_b = [=](int64_t bi, int64_t k0, int64_t kc, int64_t j0, int64_t nc, Acc* dst) {
    pack_strided(dst, b + bi * g.b_batch_stride + k0 * g.b_row_stride + j0 * g.b_col_stride, kc, nc,
                 g.b_row_stride, g.b_col_stride);
  };
  auto store = [=](int64_t bi, int64_t i0, int64_t mc, int64_t j0, int64_t nc, const Acc* acc) {
    for (int64_t i = 0; i < mc; ++i) {
      T* out = c + bi * g.c_batch_stride + (i0 + i) * g.c_row_stride + j0 * g.c_col_stride;
      const Acc* row = acc + i * nc;
      if (cin != nullptr) {
        const T* in = cin + bi * cin_bs + (i0 + i) * cin_rs + j0 * cin_cs;
        for (int64_t j = 0; j < nc; ++j) {
          out[j * g.c_col_stride] = store_as<T>(alpha * row[j] + beta * load_as<Acc>(in[j * cin_cs]));
        }
      } else if (g.c_col_stride == 1) {
        if constexpr (std::is_same_v<T, Half>) {
          if (cpu_has_f16c()) {  // vectorised round-to-nearest-even, in chunks scaled on the stack
            float scaled[64];
            for (int64_t j = 0; j < nc; j += 64) {
              const int64_t len = std::min<int64_t>(64, nc - j);
              for (int64_t t = 0; t < len; ++t) scaled[t] = alpha * row[j + t];
              float_row_to_half_f16c(reinterpret_cast<uint16_t*>(out + j), scaled, len);
            }
            continue;
          }
        }
        for (int64_t j = 0; j < nc; ++j) out[j] = store_as<T>(alpha * row[j]);
      } else {
        for (int64_t j = 0; j < nc; ++j) out[j * g.c_col_stride] = store_as<T>(alpha * row[j]);
      }
    }
  };
  return tiled_gemm<Acc>(stream, "gemm", g.batch, g.m, g.n, g.k, pack_a, pack_b, store, sizeof(T));
}

npu_sim::Status invalid(const std::string& what) { return npu_sim::invalid_value("gemm: " + what); }

}  // namespace
}  // namespace detail

npu_sim::Status gemm(npu_sim::Stream stream, const GemmArgs& g) {
  if (g.batch < 0 || g.m < 0 || g.n < 0 || g.k < 0) return detail::invalid("negative size");
  if (g.batch == 0 || g.m == 0 || g.n == 0) return npu_sim::Status::kSuccess;
  if (g.c == nullptr || (g.k > 0 && (g.a == nullptr || g.b == nullptr))) return detail::invalid("null operand");
  switch (g.dtype) {
    case DType::kFloat32: return detail::gemm_typed<float>(stream, g);
    case DType::kFloat64: return detail::gemm_typed<double>(stream, g);
    case DType::kFloat16: return detail::gemm_typed<Half>(stream, g);
    case DType::kBFloat16: return detail::gemm_typed<BFloat16>(stream, g);
    case DType::kComplex64:
    case DType::kComplex128: return detail::gemm_complex(stream, g);
    default: return detail::invalid("dtype");
  }
}

}  // namespace npu_kernels
