// gtests of the batched LAPACK kernels (torch-free): residuals of solve / Cholesky / QR / SVD / eigh / lstsq on
// random batches (float and double, a broadcast operand), info for singular input, bad pivots refused on the
// device, two streams at once, and the dtypes it refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <thread>
#include <vector>

#include "npu_kernels/linalg.h"
#include "test_kernels_util.h"

namespace {

namespace la = npu_kernels::linalg;
using npu_kernels::DType;

template <class T>
constexpr DType dtype_of() {
  return std::is_same_v<T, float> ? DType::kFloat32 : DType::kFloat64;
}
template <class T>
double tolerance() {
  return std::is_same_v<T, float> ? 2e-4 : 1e-10;
}

// `count` column-major n x n matrices, diagonally dominant (well conditioned).
template <class T>
std::vector<T> matrices(int64_t count, int64_t rows, int64_t cols, unsigned seed, double diag = 0) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> d;
  std::vector<T> m(static_cast<std::size_t>(count * rows * cols));
  for (auto& v : m) v = static_cast<T>(d(gen));
  for (int64_t b = 0; b < count; ++b)
    for (int64_t i = 0; i < std::min(rows, cols); ++i) m[b * rows * cols + i + i * rows] += static_cast<T>(diag);
  return m;
}

la::Batch dense(void* base, int64_t count, int64_t item, int64_t ld = 1) {
  la::Batch b;
  b.base = base;
  b.ld = ld;
  for (int64_t i = 0; i < count; ++i) b.offsets.push_back(i * item);
  return b;
}

// max |A X - B| over the batch, column-major.
template <class T>
double residual(const std::vector<T>& a, const std::vector<T>& x, const std::vector<T>& b, int64_t count, int64_t n,
                int64_t nrhs, bool broadcast_a = false) {
  double worst = 0;
  for (int64_t m = 0; m < count; ++m) {
    const T* am = a.data() + (broadcast_a ? 0 : m * n * n);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < nrhs; ++c) {
        double s = 0;
        for (int64_t k = 0; k < n; ++k) s += double(am[r + k * n]) * double(x[m * n * nrhs + k + c * n]);
        worst = std::max(worst, std::abs(s - double(b[m * n * nrhs + r + c * n])));
      }
  }
  return worst;
}

template <class T>
void lu_solve_case(npu_sim::Stream s, unsigned seed, bool broadcast_a) {
  const int64_t count = 5, n = 7, nrhs = 3;
  const auto a_host = matrices<T>(broadcast_a ? 1 : count, n, n, seed, n);
  const auto b_host = matrices<T>(count, n, nrhs, seed + 1);
  DeviceBuf<T> a(a_host), b(b_host);
  DeviceBuf<int32_t> piv(std::vector<int32_t>((broadcast_a ? 1 : count) * n)), info(std::vector<int32_t>(count, -7));
  const int64_t fac = broadcast_a ? 1 : count;
  ASSERT_OK(la::lu_factor(s, dtype_of<T>(), n, n, dense(a.ptr, fac, n * n, n), dense(piv.ptr, fac, n),
                          dense(info.ptr, fac, 1)));
  la::Batch lu = dense(a.ptr, count, broadcast_a ? 0 : n * n, n), p = dense(piv.ptr, count, broadcast_a ? 0 : n);
  ASSERT_OK(la::lu_solve(s, dtype_of<T>(), 'N', n, nrhs, lu, p, dense(b.ptr, count, n * nrhs, n)));
  ASSERT_OK(npu_sim::stream_synchronize(s));
  const auto infos = info.read();
  for (int64_t i = 0; i < fac; ++i) EXPECT_EQ(infos[i], 0);
  EXPECT_LT(residual(a_host, b.read(), b_host, count, n, nrhs, broadcast_a), tolerance<T>() * 10);
}

TEST(KernelsLinalg, LuFactorAndSolveFloatAndDouble) {
  lu_solve_case<float>(nullptr, 1, false);
  lu_solve_case<double>(nullptr, 2, false);
  lu_solve_case<double>(nullptr, 3, true);  // one LU for every right-hand side: repeated offsets
}

TEST(KernelsLinalg, SingularMatrixReportsInfoAndRefusesNothing) {
  std::vector<double> a = {1, 2, 2, 4};  // rank 1
  DeviceBuf<double> d(a);
  DeviceBuf<int32_t> piv(std::vector<int32_t>(2)), info(std::vector<int32_t>(1));
  ASSERT_OK(la::lu_factor(nullptr, DType::kFloat64, 2, 2, dense(d.ptr, 1, 4, 2), dense(piv.ptr, 1, 2),
                          dense(info.ptr, 1, 1)));
  ASSERT_OK(npu_sim::device_synchronize(0));
  EXPECT_EQ(info.read()[0], 2);  // U(2,2) is exactly zero
  std::vector<double> npd = {1, 0, 0, -1};
  DeviceBuf<double> c(npd);
  ASSERT_OK(la::cholesky(nullptr, DType::kFloat64, 'L', 2, dense(c.ptr, 1, 4, 2), dense(info.ptr, 1, 1)));
  ASSERT_OK(npu_sim::device_synchronize(0));
  EXPECT_EQ(info.read()[0], 2);  // the leading minor of order 2 is not positive
}

TEST(KernelsLinalg, BadPivotsFailTheKernelBeforeLapackWrites) {
  std::vector<double> lu = {4, 1, 1, 3}, b = {1, 2};
  DeviceBuf<double> a(lu), x(b);
  DeviceBuf<int32_t> piv(std::vector<int32_t>{1, 9});
  ASSERT_OK(la::lu_solve(nullptr, DType::kFloat64, 'N', 2, 1, dense(a.ptr, 1, 4, 2), dense(piv.ptr, 1, 2),
                         dense(x.ptr, 1, 2, 2)));
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
  EXPECT_NE(npu_sim::last_error_message().find("Pivots given to lu_solve"), std::string::npos)
      << npu_sim::last_error_message();
  ASSERT_OK(npu_sim::device_restart(0));
}

template <class T>
void spectral_case(npu_sim::Stream s, unsigned seed) {
  const int64_t count = 4, n = 6;
  // Symmetric positive definite: M M^T + n I.
  const auto m = matrices<T>(count, n, n, seed);
  std::vector<T> spd(m.size());
  for (int64_t b = 0; b < count; ++b)
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double v = r == c ? double(n) : 0.0;
        for (int64_t k = 0; k < n; ++k) v += double(m[b * n * n + r + k * n]) * double(m[b * n * n + c + k * n]);
        spd[b * n * n + r + c * n] = static_cast<T>(v);
      }
  // eigh: sum of eigenvalues == trace; Cholesky: L L^T == A; SVD of an SPD matrix: singular values == eigenvalues.
  DeviceBuf<T> e(spd), ch(spd), sv_in(spd);
  DeviceBuf<T> w(std::vector<T>(count * n)), sv(std::vector<T>(count * n));
  DeviceBuf<int32_t> info(std::vector<int32_t>(count, -1));
  ASSERT_OK(la::eigh(s, dtype_of<T>(), 'L', true, n, dense(e.ptr, count, n * n, n), dense(w.ptr, count, n),
                     dense(info.ptr, count, 1)));
  ASSERT_OK(la::cholesky(s, dtype_of<T>(), 'L', n, dense(ch.ptr, count, n * n, n), dense(info.ptr, count, 1)));
  ASSERT_OK(la::svd(s, dtype_of<T>(), 'N', n, n, dense(sv_in.ptr, count, n * n, n), dense(sv.ptr, count, n), la::Batch{},
                    la::Batch{}, dense(info.ptr, count, 1)));
  ASSERT_OK(npu_sim::stream_synchronize(s));
  const auto ws = w.read(), svs = sv.read(), l = ch.read();
  for (int64_t b = 0; b < count; ++b) {
    double trace = 0, sum = 0;
    for (int64_t i = 0; i < n; ++i) trace += double(spd[b * n * n + i + i * n]), sum += double(ws[b * n + i]);
    EXPECT_NEAR(sum, trace, tolerance<T>() * trace);
    for (int64_t i = 0; i < n; ++i) {  // ascending eigenvalues, descending singular values
      EXPECT_NEAR(double(svs[b * n + i]), double(ws[b * n + n - 1 - i]), tolerance<T>() * trace);
    }
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c <= r; ++c) {
        double v = 0;
        for (int64_t k = 0; k <= c; ++k) v += double(l[b * n * n + r + k * n]) * double(l[b * n * n + c + k * n]);
        EXPECT_NEAR(v, double(spd[b * n * n + r + c * n]), tolerance<T>() * trace);
      }
  }
  for (int32_t i : info.read()) EXPECT_EQ(i, 0);
}

TEST(KernelsLinalg, EighCholeskySvdAgree) {
  spectral_case<float>(nullptr, 5);
  spectral_case<double>(nullptr, 6);
}

TEST(KernelsLinalg, QrAndLeastSquares) {
  const int64_t m = 8, n = 3, nrhs = 2;
  const auto a_host = matrices<double>(1, m, n, 9);
  // b = A x0 exactly: least squares returns x0 (gels), whatever the driver.
  const std::vector<double> x0 = {1, -2, 3, 0.5, 0.25, -1};
  std::vector<double> b_host(m * nrhs, 0.0);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < nrhs; ++c)
      for (int64_t k = 0; k < n; ++k) b_host[r + c * m] += a_host[r + k * m] * x0[k + c * n];
  for (auto driver : {la::LstsqDriver::kGels, la::LstsqDriver::kGelsy, la::LstsqDriver::kGelsd, la::LstsqDriver::kGelss}) {
    DeviceBuf<double> a(a_host), b(b_host), sv(std::vector<double>(static_cast<std::size_t>(n)));
    DeviceBuf<int64_t> rank(std::vector<int64_t>{-1});
    DeviceBuf<int32_t> info(std::vector<int32_t>{-1});
    ASSERT_OK(la::lstsq(nullptr, DType::kFloat64, driver, m, n, nrhs, 1e-12, dense(a.ptr, 1, m * n, m),
                        dense(b.ptr, 1, m * nrhs, m), dense(rank.ptr, 1, 1), dense(sv.ptr, 1, n), dense(info.ptr, 1, 1)));
    ASSERT_OK(npu_sim::device_synchronize(0));
    const auto x = b.read();
    for (int64_t k = 0; k < n; ++k)
      for (int64_t c = 0; c < nrhs; ++c) EXPECT_NEAR(x[k + c * m], x0[k + c * n], 1e-10) << int(driver);
    if (driver != la::LstsqDriver::kGels) EXPECT_EQ(rank.read()[0], n);
  }
  // QR: geqrf + orgqr give an orthonormal Q.
  DeviceBuf<double> q(a_host), tau(std::vector<double>(static_cast<std::size_t>(n)));
  ASSERT_OK(la::geqrf(nullptr, DType::kFloat64, m, n, dense(q.ptr, 1, m * n, m), dense(tau.ptr, 1, n)));
  ASSERT_OK(la::orgqr(nullptr, DType::kFloat64, m, n, n, dense(q.ptr, 1, m * n, m), dense(tau.ptr, 1, n)));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto qs = q.read();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t r = 0; r < m; ++r) dot += qs[r + i * m] * qs[r + j * m];
      EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, 1e-12);
    }
}

TEST(KernelsLinalg, TwoStreamsConcurrently) {
  npu_sim::Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s1));
  ASSERT_OK(npu_sim::stream_create(0, &s2));
  std::thread t1([&] { for (unsigned r = 0; r < 3; ++r) lu_solve_case<double>(s1, 10 + r, r == 1); });
  std::thread t2([&] { for (unsigned r = 0; r < 3; ++r) spectral_case<float>(s2, 20 + r); });
  t1.join();
  t2.join();
  ASSERT_OK(npu_sim::stream_destroy(s1));
  ASSERT_OK(npu_sim::stream_destroy(s2));
}

TEST(KernelsLinalg, RefusesOtherDtypes) {
  EXPECT_EQ(la::cholesky(nullptr, DType::kFloat16, 'L', 1, la::Batch{}, la::Batch{}), npu_sim::Status::kInvalidValue);
  EXPECT_EQ(la::cholesky(nullptr, DType::kInt32, 'L', 1, la::Batch{}, la::Batch{}), npu_sim::Status::kInvalidValue);
}

}  // namespace
