// The Cube GEMM on complex64 / complex128: OpenBLAS's cblas_cgemm / cblas_zgemm on operands it can address in
// place (a unit stride in one dim), the conjugate flags folded into its transpose codes; a strided loop for
// the rest (broadcast operands, column-major outputs) and without OpenBLAS.
#include <complex>
#include <type_traits>

#include "gemm_tiling.h"
#include "npu_kernels/launch.h"

namespace npu_kernels::detail {
namespace {

// CBLAS: row-major order; transpose codes, with OpenBLAS's CblasConjNoTrans extension (conjugate, no transpose).
constexpr int kRowMajor = 101;
int trans_code(bool trans, bool conj) { return trans ? (conj ? 113 : 112) : (conj ? 114 : 111); }
using ZgemmFn = void (*)(int, int, int, int, int, int, const void*, const void*, int, const void*, int, const void*,
                         void*, int);

template <typename T>
ZgemmFn cblas_fn() {
  static const ZgemmFn fn = reinterpret_cast<ZgemmFn>(
      blas_symbol(std::is_same_v<T, std::complex<float>> ? "cblas_cgemm" : "cblas_zgemm"));
  return fn;
}

template <typename T>
T maybe_conj(T x, bool conj) {
  return conj ? std::conj(x) : x;
}

template <typename T>
npu_sim::Status gemm_complex_typed(npu_sim::Stream stream, const GemmArgs& g) {
  using Real = typename T::value_type;
  const T alpha(static_cast<Real>(g.alpha), static_cast<Real>(g.alpha_imag));
  const T beta(static_cast<Real>(g.beta), static_cast<Real>(g.beta_imag));
  const T zero(0);
  const bool use_beta = g.beta != 0.0 || g.beta_imag != 0.0;
  const T* a = static_cast<const T*>(g.a);
  const T* b = static_cast<const T*>(g.b);
  T* c = static_cast<T*>(g.c);
  // Cin other than C itself: copied into C first on the BLAS path, read directly by the loop.
  const bool cin_is_c = g.cin == nullptr || (g.cin == g.c && g.cin_batch_stride == g.c_batch_stride &&
                                             g.cin_row_stride == g.c_row_stride && g.cin_col_stride == g.c_col_stride);
  const T* cin = !use_beta ? nullptr : static_cast<const T*>(cin_is_c ? g.c : g.cin);
  const int64_t cin_bs = cin_is_c ? g.c_batch_stride : g.cin_batch_stride;
  const int64_t cin_rs = cin_is_c ? g.c_row_stride : g.cin_row_stride;
  const int64_t cin_cs = cin_is_c ? g.c_col_stride : g.cin_col_stride;

  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  const ZgemmFn fn = cblas_fn<T>();
  BlasLayout la, lb, lc;
  const bool direct = fn != nullptr && g.k > 0 && g.m <= kMaxInt && g.n <= kMaxInt && g.k <= kMaxInt &&
                      blas_layout(g.m, g.k, g.a_row_stride, g.a_col_stride, &la) &&
                      blas_layout(g.k, g.n, g.b_row_stride, g.b_col_stride, &lb) &&
                      blas_layout(g.m, g.n, g.c_row_stride, g.c_col_stride, &lc) && !lc.trans;

  // Units: (batch, slice of M); two per core thread so a late thread still finds work.
  const int64_t parts = std::max<int64_t>(
      1, std::min((2 * int64_t{core_threads()} + g.batch - 1) / g.batch, (g.m + 15) / 16));
  return parallel_for(stream, "gemm", g.batch * parts, 1, [=](int64_t begin, int64_t end, const npu_sim::BlockContext& ctx) {
    for (int64_t u = begin; u < end; ++u) {
      const int64_t bi = u / parts, part = u % parts;
      const int64_t i0 = g.m * part / parts, mc = g.m * (part + 1) / parts - i0;
      T* ct = c + bi * g.c_batch_stride + i0 * g.c_row_stride;
      const T* at = a + bi * g.a_batch_stride + i0 * g.a_row_stride;
      const T* bt = b + bi * g.b_batch_stride;
      const T* cint = cin == nullptr ? nullptr : cin + bi * cin_bs + i0 * cin_rs;
      if (direct) {
        if (cint != nullptr && !cin_is_c) {
          for (int64_t i = 0; i < mc; ++i)
            for (int64_t j = 0; j < g.n; ++j) ct[i * lc.ld + j] = cint[i * cin_rs + j * cin_cs];
        }
        fn(kRowMajor, trans_code(la.trans, g.conj_a), trans_code(lb.trans, g.conj_b), static_cast<int>(mc),
           static_cast<int>(g.n), static_cast<int>(g.k), &alpha, at, static_cast<int>(la.ld), bt,
           static_cast<int>(lb.ld), cint != nullptr ? &beta : &zero, ct, static_cast<int>(lc.ld));
      } else {
        for (int64_t i = 0; i < mc; ++i) {
          for (int64_t j = 0; j < g.n; ++j) {
            T acc(0);
            for (int64_t p = 0; p < g.k; ++p) {
              acc += maybe_conj(at[i * g.a_row_stride + p * g.a_col_stride], g.conj_a) *
                     maybe_conj(bt[p * g.b_row_stride + j * g.b_col_stride], g.conj_b);
            }
            T r = alpha * acc;
            if (cint != nullptr) r += beta * cint[i * cin_rs + j * cin_cs];
            ct[i * g.c_row_stride + j * g.c_col_stride] = r;
          }
        }
      }
      // Launch records as gemm_direct's: Cube tiles of C loading their A rows and B columns over all of k; a
      // complex multiply-add is 8 real FLOPs.
      const auto mn = static_cast<std::uint64_t>(mc * g.n), k = static_cast<std::uint64_t>(g.k);
      npu_sim::record_traffic(ctx, sizeof(T) * (2 * mn * k / kCubeTile + (cint != nullptr ? mn : 0)),
                              sizeof(T) * mn, 8 * mn * k, 0);
    }
  });
}

}  // namespace

npu_sim::Status gemm_complex(npu_sim::Stream stream, const GemmArgs& g) {
  if (g.dtype == DType::kComplex64) return gemm_complex_typed<std::complex<float>>(stream, g);
  return gemm_complex_typed<std::complex<double>>(stream, g);
}

}  // namespace npu_kernels::detail
