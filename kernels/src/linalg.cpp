// Batched LAPACK on device memory: resolves OpenBLAS's LAPACK routines for the four dtypes, and runs one
// routine per matrix over the batch on AI-core blocks (workspace queried once per block, kept per thread).
#include "npu_kernels/linalg.h"

#include <algorithm>
#include <complex>
#include <string>
#include <type_traits>
#include <vector>

#include "gemm_tiling.h"
#include "npu_kernels/launch.h"

namespace npu_kernels::linalg {
namespace {

template <class T>
struct RealOf {
  using type = T;
};
template <class T>
struct RealOf<std::complex<T>> {
  using type = T;
};

// Fortran LAPACK/BLAS entry points (every argument by pointer; the hidden string lengths of gfortran are not
// needed for one-character arguments).
using I = int;
using C = const char;
template <class T, class R = typename RealOf<T>::type>
struct Lapack {
  using Scalar = T;
  using Real = R;
  static constexpr bool kComplex = is_complex_v<T>;
  void (*getrf)(const I*, const I*, T*, const I*, I*, I*) = nullptr;
  void (*getrs)(C*, const I*, const I*, const T*, const I*, const I*, T*, const I*, I*) = nullptr;
  void (*trsm)(C*, C*, C*, C*, const I*, const I*, const T*, const T*, const I*, T*, const I*) = nullptr;
  void (*potrf)(C*, const I*, T*, const I*, I*) = nullptr;
  void (*potri)(C*, const I*, T*, const I*, I*) = nullptr;
  void (*potrs)(C*, const I*, const I*, const T*, const I*, T*, const I*, I*) = nullptr;
  void (*geqrf)(const I*, const I*, T*, const I*, T*, T*, const I*, I*) = nullptr;
  void (*orgqr)(const I*, const I*, const I*, T*, const I*, const T*, T*, const I*, I*) = nullptr;
  void (*ormqr)(C*, C*, const I*, const I*, const I*, const T*, const I*, const T*, T*, const I*, T*, const I*,
                I*) = nullptr;
  // Real and complex variants where the signatures differ (the complex ones take a real workspace, rwork).
  void (*syevd)(C*, C*, const I*, T*, const I*, R*, T*, const I*, I*, const I*, I*) = nullptr;
  void (*heevd)(C*, C*, const I*, T*, const I*, R*, T*, const I*, R*, const I*, I*, const I*, I*) = nullptr;
  void (*gesdd_r)(C*, const I*, const I*, T*, const I*, R*, T*, const I*, T*, const I*, T*, const I*, I*,
                  I*) = nullptr;
  void (*gesdd_c)(C*, const I*, const I*, T*, const I*, R*, T*, const I*, T*, const I*, T*, const I*, R*, I*,
                  I*) = nullptr;
  void (*gels)(C*, const I*, const I*, const I*, T*, const I*, T*, const I*, T*, const I*, I*) = nullptr;
  void (*gelsy_r)(const I*, const I*, const I*, T*, const I*, T*, const I*, I*, const R*, I*, T*, const I*,
                  I*) = nullptr;
  void (*gelsy_c)(const I*, const I*, const I*, T*, const I*, T*, const I*, I*, const R*, I*, T*, const I*, R*,
                  I*) = nullptr;
  void (*gelsd_r)(const I*, const I*, const I*, T*, const I*, T*, const I*, R*, const R*, I*, T*, const I*, I*,
                  I*) = nullptr;
  void (*gelsd_c)(const I*, const I*, const I*, T*, const I*, T*, const I*, R*, const R*, I*, T*, const I*, R*,
                  I*, I*) = nullptr;
  void (*gelss_r)(const I*, const I*, const I*, T*, const I*, T*, const I*, R*, const R*, I*, T*, const I*,
                  I*) = nullptr;
  void (*gelss_c)(const I*, const I*, const I*, T*, const I*, T*, const I*, R*, const R*, I*, T*, const I*, R*,
                  I*) = nullptr;
  void (*sytrf)(C*, const I*, T*, const I*, I*, T*, const I*, I*) = nullptr;
  void (*sytrs)(C*, const I*, const I*, const T*, const I*, const I*, T*, const I*, I*) = nullptr;
  void (*hetrf)(C*, const I*, T*, const I*, I*, T*, const I*, I*) = nullptr;
  void (*hetrs)(C*, const I*, const I*, const T*, const I*, const I*, T*, const I*, I*) = nullptr;
  bool ready = false;

  static const Lapack& get() {
    static const Lapack instance = [] {
      Lapack l;
      const char p = std::is_same_v<T, float> ? 's' : std::is_same_v<T, double> ? 'd'
                                                    : std::is_same_v<T, std::complex<float>> ? 'c' : 'z';
      bool ok = true;
      auto bind = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(detail::blas_symbol((p + std::string(name)).c_str()));
        ok = ok && fn != nullptr;
      };
      bind(l.getrf, "getrf_"), bind(l.getrs, "getrs_"), bind(l.trsm, "trsm_"), bind(l.potrf, "potrf_");
      bind(l.potri, "potri_"), bind(l.potrs, "potrs_"), bind(l.geqrf, "geqrf_"), bind(l.gels, "gels_");
      bind(l.sytrf, "sytrf_"), bind(l.sytrs, "sytrs_");
      if constexpr (kComplex) {
        bind(l.orgqr, "ungqr_"), bind(l.ormqr, "unmqr_"), bind(l.heevd, "heevd_"), bind(l.gesdd_c, "gesdd_");
        bind(l.gelsy_c, "gelsy_"), bind(l.gelsd_c, "gelsd_"), bind(l.gelss_c, "gelss_");
        bind(l.hetrf, "hetrf_"), bind(l.hetrs, "hetrs_");
      } else {
        bind(l.orgqr, "orgqr_"), bind(l.ormqr, "ormqr_"), bind(l.syevd, "syevd_"), bind(l.gesdd_r, "gesdd_");
        bind(l.gelsy_r, "gelsy_"), bind(l.gelsd_r, "gelsd_"), bind(l.gelss_r, "gelss_");
      }
      l.ready = ok;
      return l;
    }();
    return instance;
  }
};

template <class T>
T* at(const Batch& b, int64_t i) {
  return static_cast<T*>(b.base) + b.offsets[static_cast<std::size_t>(i)];
}
// An optional operand (an output LAPACK does not write for this job): a dummy element when absent.
template <class T>
T* maybe_at(const Batch& b, int64_t i) {
  static thread_local T dummy[1];
  return b.base == nullptr || b.offsets.empty() ? dummy : at<T>(b, i);
}
template <class T>
T conj_of(const T& x) {
  if constexpr (is_complex_v<T>) return std::conj(x); else return x;
}
template <class T>
int64_t work_size(const T& w) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::real(w)));
}
int ld_of(const Batch& b) { return static_cast<int>(std::max<int64_t>(1, b.ld)); }

// The engine: the batch split over the blocks of one launch; each block calls body(lapack routines of the
// dtype, begin, end), which runs one routine per matrix (after its workspace query). A routine reporting an
// illegal argument (info < 0, a bug of ours) fails the kernel through check(), never silently. Launch records:
// each matrix's operands read and written once, and the routine's textbook flop count on the Cube.
template <class Body>
Status run(Stream s, DType dt, const char* name, int64_t batch, uint64_t bytes_per_matrix, uint64_t flops_per_matrix,
           Body body) {
  if (dt != DType::kFloat32 && dt != DType::kFloat64 && dt != DType::kComplex64 && dt != DType::kComplex128) {
    return Status::kInvalidValue;
  }
  if (!available()) return Status::kNotSupported;
  if (batch <= 0) return Status::kSuccess;
  detail::ensure_micro_kernel_loaded();
  return parallel_for(s, name, batch, 1, [=](int64_t begin, int64_t end, const npu_sim::BlockContext& ctx) {
    dispatch_dtype(dt, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (is_complex_v<T> || std::is_same_v<T, float> || std::is_same_v<T, double>) {
        const Lapack<T>& l = Lapack<T>::get();
        body(l, begin, end);
      } else {
        throw npu_sim::KernelError(std::string(name) + ": LAPACK has no routine for dtype " + dtype_name(dt));
      }
    });
    const auto n = static_cast<uint64_t>(end - begin);
    npu_sim::record_traffic(ctx, n * bytes_per_matrix, n * bytes_per_matrix, n * flops_per_matrix, 0);
  });
}

void check(int info, const char* routine) {
  if (info < 0) throw npu_sim::KernelError(std::string(routine) + ": argument " + std::to_string(-info) + " is illegal");
}

std::size_t elem_size(DType dt) {
  switch (dt) {
    case DType::kFloat32: return 4;
    case DType::kFloat64: case DType::kComplex64: return 8;
    default: return 16;
  }
}

template <class T>
using Vec = std::vector<T>;

// Per-thread workspace that only grows.
template <class T>
T* scratch(Vec<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<std::size_t>(n));
  return v.data();
}

}  // namespace

bool available() { return Lapack<float>::get().ready && Lapack<std::complex<double>>::get().ready; }

// The scalar (T) and real (R) types of a body's routine table.
#define NPU_LAPACK_TYPES(l)                 \
  using L = std::decay_t<decltype(l)>;      \
  using T = typename L::Scalar;             \
  using R = typename L::Real;               \
  (void)sizeof(R)

Status lu_factor(Stream s, DType dt, int64_t m, int64_t n, const Batch& a, const Batch& pivots, const Batch& info) {
  const uint64_t k = static_cast<uint64_t>(std::min(m, n));
  return run(s, dt, "linalg_lu_factor", static_cast<int64_t>(a.offsets.size()), elem_size(dt) * m * n,
             static_cast<uint64_t>(m * n) * k, [=](const auto& l, int64_t begin, int64_t end) {
               NPU_LAPACK_TYPES(l);
               const I mi = I(m), ni = I(n), lda = ld_of(a);
               for (int64_t i = begin; i < end; ++i) {
                 l.getrf(&mi, &ni, at<T>(a, i), &lda, at<I>(pivots, i), at<I>(info, i));
                 check(*at<I>(info, i), "getrf");
               }
             });
}

Status lu_solve(Stream s, DType dt, char trans, int64_t n, int64_t nrhs, const Batch& lu, const Batch& pivots,
                const Batch& b) {
  return run(s, dt, "linalg_lu_solve", static_cast<int64_t>(b.offsets.size()), elem_size(dt) * n * (n + nrhs),
             static_cast<uint64_t>(2 * n * n * nrhs), [=](const auto& l, int64_t begin, int64_t end) {
               NPU_LAPACK_TYPES(l);
               const char t = (!L::kComplex && trans == 'C') ? 'T' : trans;
               const I ni = I(n), ri = I(nrhs), lda = ld_of(lu), ldb = ld_of(b);
               for (int64_t i = begin; i < end; ++i) {
                 const I* p = at<I>(pivots, i);
                 if (std::any_of(p, p + n, [&](I v) { return v < 1; })) {
                   throw npu_sim::KernelError("Pivots given to lu_solve must all be greater or equal to 1. Did you "
                                              "properly pass the result of lu_factor?");
                 }
                 if (std::any_of(p, p + n, [&](I v) { return v > n; })) {
                   throw npu_sim::KernelError("Pivots given to lu_solve must all be smaller or equal to LU.size(-2). "
                                              "Did you properly pass the result of lu_factor?");
                 }
                 I info = 0;
                 l.getrs(&t, &ni, &ri, at<T>(lu, i), &lda, at<I>(pivots, i), at<T>(b, i), &ldb, &info);
                 check(info, "getrs");
               }
             });
}

Status triangular_solve(Stream s, DType dt, char side, char uplo, char trans, char diag, int64_t m, int64_t n,
                        const Batch& a, const Batch& b) {
  const int64_t k = side == 'L' ? m : n;
  return run(s, dt, "linalg_triangular_solve", static_cast<int64_t>(b.offsets.size()),
             elem_size(dt) * (k * k + m * n), static_cast<uint64_t>(k * m * n),
             [=](const auto& l, int64_t begin, int64_t end) {
               NPU_LAPACK_TYPES(l);
               const char t = (!L::kComplex && trans == 'C') ? 'T' : trans;
               const I mi = I(m), ni = I(n), lda = ld_of(a), ldb = ld_of(b);
               const T one(1);
               for (int64_t i = begin; i < end; ++i) l.trsm(&side, &uplo, &t, &diag, &mi, &ni, &one, at<T>(a, i), &lda, at<T>(b, i), &ldb);
             });
}

Status cholesky(Stream s, DType dt, char uplo, int64_t n, const Batch& a, const Batch& info) {
  return run(s, dt, "linalg_cholesky", static_cast<int64_t>(a.offsets.size()), elem_size(dt) * n * n,
             static_cast<uint64_t>(n * n * n / 3), [=](const auto& l, int64_t begin, int64_t end) {
               NPU_LAPACK_TYPES(l);
               const I ni = I(n), lda = ld_of(a);
               for (int64_t i = begin; i < end; ++i) {
                 l.potrf(&uplo, &ni, at<T>(a, i), &lda, at<I>(info, i));
                 check(*at<I>(info, i), "potrf");
               }
             });
}

Status cholesky_inverse(Stream s, DType dt, char uplo, int64_t n, const Batch& a, const Batch& info) {
  return run(s, dt, "cholesky_inverse", static_cast<int64_t>(a.offsets.size()), elem_size(dt) * n * n,
             static_cast<uint64_t>(2 * n * n * n / 3), [=](const auto& l, int64_t begin, int64_t end) {
               NPU_LAPACK_TYPES(l);
               const I ni = I(n), lda = ld_of(a);
               for (int64_t i = begin; i < end; ++i) {
                 T* x = at<T>(a, i);
                 l.potri(&uplo, &ni, x, &lda, at<I>(info, i));
                 check(*at<I>(info, i), "potri");
                 // potri writes one triangle: the other is its conjugate transpose.
                 for (int64_t c = 0; c < n; ++c) {
                   for (int64_t r = c + 1; r < n; ++r) {
                     T& lower = x[r + c * lda];
                     T& upper = x[c + r * lda];
                     if (uplo == 'U') lower = conj_of(upper); else upper = conj_of(lower);
                   }
                 }
               }
             });
}

Status cholesky_solve(Stream s, DType dt, char uplo, int64_t n, int64_t nrhs, const Batch& a, const Batch& b,
                      const Batch& info) {
  return run(s, dt, "cholesky_solve", static_cast<int64_t>(b.offsets.size()), elem_size(dt) * n * (n + nrhs),
             static_cast<uint64_t>(2 * n * n * nrhs), [=](const auto& l, int64_t begin, int64_t end) {
               NPU_LAPACK_TYPES(l);
               const I ni = I(n), ri = I(nrhs), lda = ld_of(a), ldb = ld_of(b);
               for (int64_t i = begin; i < end; ++i) {
                 l.potrs(&uplo, &ni, &ri, at<T>(a, i), &lda, at<T>(b, i), &ldb, at<I>(info, i));
                 check(*at<I>(info, i), "potrs");
               }
             });
}

Status geqrf(Stream s, DType dt, int64_t m, int64_t n, const Batch& a, const Batch& tau) {
  return run(s, dt, "geqrf", static_cast<int64_t>(a.offsets.size()), elem_size(dt) * m * n,
             static_cast<uint64_t>(2 * m * n * std::min(m, n)), [=](const auto& l, int64_t begin, int64_t end) {
               NPU_LAPACK_TYPES(l);
               static thread_local Vec<T> work;
               const I mi = I(m), ni = I(n), lda = ld_of(a);
               I info = 0, query = -1;
               T size{};
               l.geqrf(&mi, &ni, at<T>(a, begin), &lda, at<T>(tau, begin), &size, &query, &info);
               const I lwork = I(work_size(size));
               for (int64_t i = begin; i < end; ++i) {
                 l.geqrf(&mi, &ni, at<T>(a, i), &lda, at<T>(tau, i), scratch(work, lwork), &lwork, &info);
                 check(info, "geqrf");
               }
             });
}

Status orgqr(Stream s, DType dt, int64_t m, int64_t n, int64_t k, const Batch& a, const Batch& tau) {
  return run(s, dt, "linalg_householder_product", static_cast<int64_t>(a.offsets.size()), elem_size(dt) * m * n,
             static_cast<uint64_t>(4 * m * n * k), [=](const auto& l, int64_t begin, int64_t end) {
               NPU_LAPACK_TYPES(l);
               static thread_local Vec<T> work;
               const I mi = I(m), ni = I(n), ki = I(k), lda = ld_of(a);
               I info = 0, query = -1;
               T size{};
               l.orgqr(&mi, &ni, &ki, at<T>(a, begin), &lda, at<T>(tau, begin), &size, &query, &info);
               const I lwork = I(work_size(size));
               for (int64_t i = begin; i < end; ++i) {
                 l.orgqr(&mi, &ni, &ki, at<T>(a, i), &lda, at<T>(tau, i), scratch(work, lwork), &lwork, &info);
                 check(info, "orgqr");
               }
             });
}

Status ormqr(Stream s, DType dt, char side, char trans, int64_t m, int64_t n, int64_t k, const Batch& a,
             const Batch& tau, const Batch& c) {
  return run(s, dt, "ormqr", static_cast<int64_t>(c.offsets.size()), elem_size(dt) * m * n * 2,
             static_cast<uint64_t>(4 * m * n * k), [=](const auto& l, int64_t begin, int64_t end) {
               NPU_LAPACK_TYPES(l);
               static thread_local Vec<T> work;
               const char t = (!L::kComplex && trans == 'C') ? 'T' : trans;
               const I mi = I(m), ni = I(n), ki = I(k), lda = ld_of(a), ldc = ld_of(c);
               I info = 0, query = -1;
               T size{};
               l.ormqr(&side, &t, &mi, &ni, &ki, at<T>(a, begin), &lda, at<T>(tau, begin), at<T>(c, begin), &ldc,
                       &size, &query, &info);
               const I lwork = I(work_size(size));
               for (int64_t i = begin; i < end; ++i) {
                 l.ormqr(&side, &t, &mi, &ni, &ki, at<T>(a, i), &lda, at<T>(tau, i), at<T>(c, i), &ldc,
                         scratch(work, lwork), &lwork, &info);
                 check(info, "ormqr");
               }
             });
}

Status eigh(Stream s, DType dt, char uplo, bool vectors, int64_t n, const Batch& a, const Batch& w,
            const Batch& info) {
  return run(s, dt, "linalg_eigh", static_cast<int64_t>(a.offsets.size()), elem_size(dt) * n * n,
             static_cast<uint64_t>(9 * n * n * n), [=](const auto& l, int64_t begin, int64_t end) {
               NPU_LAPACK_TYPES(l);
               static thread_local Vec<T> work;
               static thread_local Vec<R> rwork;
               static thread_local Vec<I> iwork;
               const char jobz = vectors ? 'V' : 'N';
               const I ni = I(n), lda = ld_of(a), query = -1;
               T size{};
               R rsize{};
               I isize = 0, q = 0;
               if constexpr (L::kComplex) {
                 l.heevd(&jobz, &uplo, &ni, at<T>(a, begin), &lda, at<R>(w, begin), &size, &query, &rsize, &query,
                         &isize, &query, &q);
               } else {
                 l.syevd(&jobz, &uplo, &ni, at<T>(a, begin), &lda, at<R>(w, begin), &size, &query, &isize, &query, &q);
               }
               const I lwork = I(work_size(size)), lrwork = I(work_size(rsize)), liwork = std::max<I>(1, isize);
               for (int64_t i = begin; i < end; ++i) {
                 if constexpr (L::kComplex) {
                   l.heevd(&jobz, &uplo, &ni, at<T>(a, i), &lda, at<R>(w, i), scratch(work, lwork), &lwork,
                           scratch(rwork, lrwork), &lrwork, scratch(iwork, liwork), &liwork, at<I>(info, i));
                 } else {
                   l.syevd(&jobz, &uplo, &ni, at<T>(a, i), &lda, at<R>(w, i), scratch(work, lwork), &lwork,
                           scratch(iwork, liwork), &liwork, at<I>(info, i));
                 }
                 check(*at<I>(info, i), "syevd");
               }
             });
}

Status svd(Stream s, DType dt, char jobz, int64_t m, int64_t n, const Batch& a, const Batch& sv, const Batch& u,
           const Batch& vt, const Batch& info) {
  return run(s, dt, "linalg_svd", static_cast<int64_t>(a.offsets.size()), elem_size(dt) * m * n * 3,
             static_cast<uint64_t>(14 * m * n * std::min(m, n)), [=](const auto& l, int64_t begin, int64_t end) {
               NPU_LAPACK_TYPES(l);
               static thread_local Vec<T> work;
               static thread_local Vec<R> rwork;
               static thread_local Vec<I> iwork;
               const int64_t mn = std::min(m, n), mx = std::max(m, n);
               const I mi = I(m), ni = I(n), lda = ld_of(a), ldu = ld_of(u), ldvt = ld_of(vt), query = -1;
               // LAPACK's rwork bound for complex gesdd (as its documentation gives it).
               const int64_t lrwork = jobz == 'N' ? 7 * mn
                                      : mx > 10 * mn ? 5 * mn * mn + 5 * mn
                                                     : std::max(5 * mn * mn + 5 * mn, 2 * mx * mn + 2 * mn * mn + mn);
               I* iw = scratch(iwork, 8 * std::max<int64_t>(1, mn));
               R* rw = scratch(rwork, std::max<int64_t>(1, lrwork));
               T size{};
               I q = 0;
               if constexpr (L::kComplex) {
                 l.gesdd_c(&jobz, &mi, &ni, at<T>(a, begin), &lda, at<R>(sv, begin), maybe_at<T>(u, begin), &ldu,
                           maybe_at<T>(vt, begin), &ldvt, &size, &query, rw, iw, &q);
               } else {
                 l.gesdd_r(&jobz, &mi, &ni, at<T>(a, begin), &lda, at<R>(sv, begin), maybe_at<T>(u, begin), &ldu,
                           maybe_at<T>(vt, begin), &ldvt, &size, &query, iw, &q);
               }
               const I lwork = I(work_size(size));
               T* wk = scratch(work, lwork);
               for (int64_t i = begin; i < end; ++i) {
                 if constexpr (L::kComplex) {
                   l.gesdd_c(&jobz, &mi, &ni, at<T>(a, i), &lda, at<R>(sv, i), maybe_at<T>(u, i), &ldu,
                             maybe_at<T>(vt, i), &ldvt, wk, &lwork, rw, iw, at<I>(info, i));
                 } else {
                   l.gesdd_r(&jobz, &mi, &ni, at<T>(a, i), &lda, at<R>(sv, i), maybe_at<T>(u, i), &ldu,
                             maybe_at<T>(vt, i), &ldvt, wk, &lwork, iw, at<I>(info, i));
                 }
                 check(*at<I>(info, i), "gesdd");
               }
             });
}

Status lstsq(Stream s, DType dt, LstsqDriver driver, int64_t m, int64_t n, int64_t nrhs, double rcond,
             const Batch& a, const Batch& b, const Batch& rank, const Batch& sv, const Batch& info) {
  return run(s, dt, "linalg_lstsq", static_cast<int64_t>(a.offsets.size()),
             elem_size(dt) * (m * n + std::max(m, n) * nrhs), static_cast<uint64_t>(2 * m * n * (std::min(m, n) + nrhs)),
             [=](const auto& l, int64_t begin, int64_t end) {
               NPU_LAPACK_TYPES(l);
               static thread_local Vec<T> work;
               static thread_local Vec<R> rwork;
               static thread_local Vec<I> iwork;
               const int64_t mn = std::max<int64_t>(1, std::min(m, n));
               const I mi = I(m), ni = I(n), ri = I(nrhs), lda = ld_of(a), ldb = ld_of(b), query = -1;
               const R rc = static_cast<R>(rcond);
               const char trans = 'N';
               // One call per matrix, `lwork` -1 for the query (done on the first matrix, the work sizes of the
               // others are the same).
               auto call = [&](int64_t i, T* wk, I lwork, R* rw, I* iw, I* rank_out, I* inf) {
                 T* ai = at<T>(a, i);
                 T* bi = at<T>(b, i);
                 switch (driver) {
                   case LstsqDriver::kGels: l.gels(&trans, &mi, &ni, &ri, ai, &lda, bi, &ldb, wk, &lwork, inf); break;
                   case LstsqDriver::kGelsy: {
                     I* jpvt = iw;
                     std::fill(jpvt, jpvt + n, 0);
                     if constexpr (L::kComplex) {
                       l.gelsy_c(&mi, &ni, &ri, ai, &lda, bi, &ldb, jpvt, &rc, rank_out, wk, &lwork, rw, inf);
                     } else {
                       l.gelsy_r(&mi, &ni, &ri, ai, &lda, bi, &ldb, jpvt, &rc, rank_out, wk, &lwork, inf);
                     }
                     break;
                   }
                   case LstsqDriver::kGelsd:
                     if constexpr (L::kComplex) {
                       l.gelsd_c(&mi, &ni, &ri, ai, &lda, bi, &ldb, maybe_at<R>(sv, i), &rc, rank_out, wk, &lwork, rw,
                                 iw, inf);
                     } else {
                       l.gelsd_r(&mi, &ni, &ri, ai, &lda, bi, &ldb, maybe_at<R>(sv, i), &rc, rank_out, wk, &lwork, iw,
                                 inf);
                     }
                     break;
                   case LstsqDriver::kGelss:
                     if constexpr (L::kComplex) {
                       l.gelss_c(&mi, &ni, &ri, ai, &lda, bi, &ldb, maybe_at<R>(sv, i), &rc, rank_out, wk, &lwork, rw,
                                 inf);
                     } else {
                       l.gelss_r(&mi, &ni, &ri, ai, &lda, bi, &ldb, maybe_at<R>(sv, i), &rc, rank_out, wk, &lwork, inf);
                     }
                     break;
                 }
               };
               // Workspace query; gelsd also reports its rwork and iwork sizes in their first element. The integer
               // buffer is gelsy's column pivots (n entries) even while querying.
               T size{};
               R rsize{};
               I r = 0, q = 0;
               I* iq = scratch(iwork, std::max<int64_t>(n, 1));
               call(begin, &size, query, &rsize, iq, &r, &q);
               const I lwork = I(work_size(size));
               const int64_t lrwork = std::max<int64_t>({work_size(rsize), 5 * mn, 2 * n});
               const int64_t liwork = std::max<int64_t>({driver == LstsqDriver::kGelsd ? int64_t{iq[0]} : 0, n, 1});
               for (int64_t i = begin; i < end; ++i) {
                 I rank_i = 0;
                 call(i, scratch(work, lwork), lwork, scratch(rwork, lrwork), scratch(iwork, liwork), &rank_i,
                      at<I>(info, i));
                 check(*at<I>(info, i), "gels");
                 if (rank.base != nullptr && !rank.offsets.empty() && driver != LstsqDriver::kGels) {
                   *at<int64_t>(rank, i) = rank_i;
                 }
               }
             });
}

Status ldl_factor(Stream s, DType dt, char uplo, bool hermitian, int64_t n, const Batch& a, const Batch& pivots,
                  const Batch& info) {
  return run(s, dt, "linalg_ldl_factor", static_cast<int64_t>(a.offsets.size()), elem_size(dt) * n * n,
             static_cast<uint64_t>(n * n * n / 3), [=](const auto& l, int64_t begin, int64_t end) {
               NPU_LAPACK_TYPES(l);
               static thread_local Vec<T> work;
               auto fn = (L::kComplex && hermitian) ? l.hetrf : l.sytrf;
               const I ni = I(n), lda = ld_of(a), query = -1;
               T size{};
               I q = 0;
               fn(&uplo, &ni, at<T>(a, begin), &lda, at<I>(pivots, begin), &size, &query, &q);
               const I lwork = I(work_size(size));
               for (int64_t i = begin; i < end; ++i) {
                 fn(&uplo, &ni, at<T>(a, i), &lda, at<I>(pivots, i), scratch(work, lwork), &lwork, at<I>(info, i));
                 check(*at<I>(info, i), "sytrf");
               }
             });
}

// sytrs trusts its pivots: a positive p swaps with row p, a negative one opens a 2x2 block with the next row
// (lower) or the previous one (upper). Anything else would read outside the matrix: a kernel error instead.
template <typename I>
void check_ldl_pivots(const I* p, int64_t n, char uplo) {
  if (std::any_of(p, p + n, [&](I v) { return v > n || v < -n; })) {
    throw npu_sim::KernelError("Pivots given to ldl_solve must all satisfy |pivot| <= LD.size(-2). Did you properly "
                               "pass the result of ldl_factor?");
  }
  for (int64_t k = 0; k < n; ++k) {
    const int64_t at_k = uplo == 'L' ? k : n - 1 - k;
    if (p[at_k] > 0) continue;
    if (p[at_k] == 0 || k + 1 == n) {
      throw npu_sim::KernelError("Pivots given to ldl_solve must be non-zero and pair the rows of each 2x2 block. Did "
                                 "you properly pass the result of ldl_factor?");
    }
    ++k;  // the block's second row
  }
}

Status ldl_solve(Stream s, DType dt, char uplo, bool hermitian, int64_t n, int64_t nrhs, const Batch& a,
                 const Batch& pivots, const Batch& b) {
  return run(s, dt, "linalg_ldl_solve", static_cast<int64_t>(b.offsets.size()), elem_size(dt) * n * (n + nrhs),
             static_cast<uint64_t>(2 * n * n * nrhs), [=](const auto& l, int64_t begin, int64_t end) {
               NPU_LAPACK_TYPES(l);
               auto fn = (L::kComplex && hermitian) ? l.hetrs : l.sytrs;
               const I ni = I(n), ri = I(nrhs), lda = ld_of(a), ldb = ld_of(b);
               for (int64_t i = begin; i < end; ++i) {
                 check_ldl_pivots(at<I>(pivots, i), n, uplo);
                 I info = 0;
                 fn(&uplo, &ni, &ri, at<T>(a, i), &lda, at<I>(pivots, i), at<T>(b, i), &ldb, &info);
                 check(info, "sytrs");
               }
             });
}

#undef NPU_LAPACK_TYPES

Status unpack_pivots(Stream s, int64_t dim_size, int64_t max_pivot, const Batch& perm, const Batch& pivots) {
  const auto count = static_cast<int64_t>(perm.offsets.size());
  if (count == 0) return Status::kSuccess;
  return parallel_for(s, "lu_unpack_pivots", count, 64, [=](int64_t begin, int64_t end, const npu_sim::BlockContext&) {
    for (int64_t i = begin; i < end; ++i) {
      const int32_t* p = at<int32_t>(pivots, i);
      if (std::any_of(p, p + dim_size, [&](int32_t v) { return v < 1 || v > max_pivot; })) {
        throw npu_sim::KernelError("pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive. Did you "
                                   "use the pivots returned by linalg.lu_factor?");
      }
      int64_t* q = at<int64_t>(perm, i);
      for (int64_t j = 0; j < dim_size; ++j) std::swap(q[j], q[p[j] - 1]);
    }
  });
}

}  // namespace npu_kernels::linalg
