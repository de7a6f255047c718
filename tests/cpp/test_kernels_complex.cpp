// gtests of the complex kernels (torch-free): the complex GEMM against a host loop for every transpose / conjugate
// combination, on OpenBLAS and on the strided loop, with complex alpha and beta; complex pointwise ops and their
// real-typed abs; complex sum / prod and cumprod; two streams running complex GEMMs at once.
#include <gtest/gtest.h>

#include <complex>
#include <random>
#include <thread>
#include <vector>

#include "npu_kernels/gemm.h"
#include "npu_kernels/pointwise.h"
#include "npu_kernels/reduce.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::DType;
using Z = std::complex<double>;

std::vector<Z> random_z(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d;
  std::vector<Z> v(n);
  for (auto& z : v) z = Z(d(rng), d(rng));
  return v;
}

struct GemmCase {
  int64_t m, n, k;
  bool trans_a, trans_b, conj_a, conj_b;
  bool strided;  // no unit stride on A: the loop path
};

// C = alpha * op(A) @ op(B) + beta * C0 on the device against a host loop.
void run_case(const GemmCase& c, npu_sim::Stream s = nullptr) {
  const int64_t pitch = c.strided ? 2 : 1;
  const auto a = random_z(static_cast<size_t>(c.m * c.k * pitch), 1), b = random_z(static_cast<size_t>(c.k * c.n), 2);
  const auto c0 = random_z(static_cast<size_t>(c.m * c.n), 3);
  const Z alpha(0.5, -1.5), beta(2.0, 0.25);
  DeviceBuf<Z> da(a), db(b), dc(c0);
  npu_kernels::GemmArgs g;
  g.dtype = DType::kComplex128;
  g.m = c.m, g.n = c.n, g.k = c.k;
  g.a = da.ptr;
  // A stored m x k (row-major) or k x m (transposed); `pitch` spreads its elements apart
  g.a_row_stride = (c.trans_a ? 1 : c.k) * pitch, g.a_col_stride = (c.trans_a ? c.m : 1) * pitch;
  g.b = db.ptr;
  g.b_row_stride = c.trans_b ? 1 : c.n, g.b_col_stride = c.trans_b ? c.k : 1;
  g.c = dc.ptr;
  g.c_row_stride = c.n, g.c_col_stride = 1;
  g.alpha = alpha.real(), g.alpha_imag = alpha.imag(), g.beta = beta.real(), g.beta_imag = beta.imag();
  g.conj_a = c.conj_a, g.conj_b = c.conj_b;
  ASSERT_OK(npu_kernels::gemm(s, g));
  ASSERT_OK(s == nullptr ? npu_sim::device_synchronize(0) : npu_sim::stream_synchronize(s));
  const auto got = dc.read();
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      Z acc = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        Z x = a[static_cast<size_t>(i * g.a_row_stride + p * g.a_col_stride)];
        Z y = b[static_cast<size_t>(p * g.b_row_stride + j * g.b_col_stride)];
        acc += (c.conj_a ? std::conj(x) : x) * (c.conj_b ? std::conj(y) : y);
      }
      const Z want = alpha * acc + beta * c0[static_cast<size_t>(i * c.n + j)];
      ASSERT_NEAR(std::abs(got[static_cast<size_t>(i * c.n + j)] - want), 0.0, 1e-10 * (1 + std::abs(want)))
          << "i=" << i << " j=" << j << " trans " << c.trans_a << c.trans_b << " conj " << c.conj_a << c.conj_b;
    }
  }
}

TEST(KernelsComplex, GemmEveryTransposeAndConjugate) {
  for (int mask = 0; mask < 16; ++mask) {
    run_case({37, 19, 23, (mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0, (mask & 8) != 0, false});
  }
}

TEST(KernelsComplex, GemmStridedOperandTakesTheLoop) {
  run_case({9, 7, 5, false, false, true, false, true});
  run_case({9, 7, 5, true, true, false, true, true});
}

TEST(KernelsComplex, TwoStreamsConcurrently) {
  npu_sim::Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s1));
  ASSERT_OK(npu_sim::stream_create(0, &s2));
  std::thread t1([&] { for (int i = 0; i < 4; ++i) run_case({64, 48, 40, false, true, true, false, false}, s1); });
  std::thread t2([&] { for (int i = 0; i < 4; ++i) run_case({33, 65, 17, true, false, false, true, false}, s2); });
  t1.join();
  t2.join();
  ASSERT_OK(npu_sim::stream_destroy(s1));
  ASSERT_OK(npu_sim::stream_destroy(s2));
}

TEST(KernelsComplex, UnaryOpsAndRealAbs) {
  const auto x = random_z(257, 4);
  DeviceBuf<Z> dx(x), dy{std::vector<Z>(x.size())};
  DeviceBuf<double> dabs{std::vector<double>(x.size())};
  using npu_kernels::UnaryOp;
  const std::pair<UnaryOp, Z (*)(const Z&)> ops[] = {
      {UnaryOp::kExp, [](const Z& z) { return std::exp(z); }},
      {UnaryOp::kLog, [](const Z& z) { return std::log(z); }},
      {UnaryOp::kTanh, [](const Z& z) { return std::tanh(z); }},
      {UnaryOp::kSqrt, [](const Z& z) { return std::sqrt(z); }},
      {UnaryOp::kSign, [](const Z& z) { return z / std::abs(z); }},
  };
  for (const auto& [op, ref] : ops) {
    ASSERT_OK(npu_kernels::unary(nullptr, op, flat_iter(257, DType::kComplex128, DType::kComplex128, dy.ptr, dx.ptr,
                                                        sizeof(Z), sizeof(Z)), {}));
    ASSERT_OK(npu_sim::device_synchronize(0));
    const auto got = dy.read();
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(std::abs(got[i] - ref(x[i])), 0.0, 1e-12) << npu_kernels::op_name(op);
  }
  ASSERT_OK(npu_kernels::unary(nullptr, UnaryOp::kAbs, flat_iter(257, DType::kComplex128, DType::kFloat64, dabs.ptr,
                                                                 dx.ptr, sizeof(double), sizeof(Z)), {}));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto mags = dabs.read();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_DOUBLE_EQ(mags[i], std::abs(x[i]));
  // no complex form: refused, nothing written
  EXPECT_EQ(npu_kernels::unary(nullptr, UnaryOp::kFloor, flat_iter(257, DType::kComplex128, DType::kComplex128, dy.ptr,
                                                                   dx.ptr, sizeof(Z), sizeof(Z)), {}),
            npu_sim::Status::kInvalidValue);
}

TEST(KernelsComplex, SumProdAndCumprod) {
  const int64_t rows = 3, cols = 1000;
  auto x = random_z(static_cast<size_t>(rows * cols), 5);
  for (auto& z : x) z = z * 0.05 + Z(1.0, 0.0);  // products stay finite
  DeviceBuf<Z> dx(x), dsum{std::vector<Z>(rows)}, dprod{std::vector<Z>(rows)}, dscan{std::vector<Z>(x.size())};
  npu_kernels::ReduceDesc d;
  d.in = dx.ptr;
  d.dtype = DType::kComplex128;
  d.n_outer = 1;
  d.outer_sizes[0] = rows;
  d.in_outer_strides[0] = cols;
  d.out_strides[0][0] = 1;
  d.n_red = 1;
  d.red_sizes[0] = cols;
  d.red_strides[0] = 1;
  d.out[0] = dsum.ptr;
  ASSERT_OK(npu_kernels::reduce(nullptr, npu_kernels::ReduceOp::kSum, d));
  d.out[0] = dprod.ptr;
  ASSERT_OK(npu_kernels::reduce(nullptr, npu_kernels::ReduceOp::kProd, d));
  EXPECT_EQ(npu_kernels::reduce(nullptr, npu_kernels::ReduceOp::kMax, d), npu_sim::Status::kInvalidValue);
  npu_kernels::ScanDesc sd;
  sd.in = dx.ptr;
  sd.out = dscan.ptr;
  sd.dtype = DType::kComplex128;
  sd.outer = rows, sd.n = cols, sd.inner = 1;
  sd.in_strides[0] = sd.out_strides[0] = cols;
  sd.in_strides[1] = sd.out_strides[1] = 1;
  sd.in_strides[2] = sd.out_strides[2] = 1;
  ASSERT_OK(npu_kernels::scan(nullptr, npu_kernels::ScanOp::kCumprod, sd));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto sums = dsum.read(), prods = dprod.read(), scans = dscan.read();
  for (int64_t r = 0; r < rows; ++r) {
    Z s = 0, p = 1;
    for (int64_t i = 0; i < cols; ++i) {
      s += x[static_cast<size_t>(r * cols + i)];
      p *= x[static_cast<size_t>(r * cols + i)];
      ASSERT_NEAR(std::abs(scans[static_cast<size_t>(r * cols + i)] - p), 0.0, 1e-9 * std::abs(p));
    }
    EXPECT_NEAR(std::abs(sums[static_cast<size_t>(r)] - s), 0.0, 1e-10 * std::abs(s));
    EXPECT_NEAR(std::abs(prods[static_cast<size_t>(r)] - p), 0.0, 1e-9 * std::abs(p));
  }
}

}  // namespace
