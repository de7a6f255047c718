// gtests of the torch-free cdist / pdist kernels: forward against host loops for every p (0, 1, 2, inf, general,
// p < 1), batched cdist, NaN rules, backward against central differences (double) and CPU's subgradients at zero
// distances and ties, float32, bad arguments, two streams at once.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "npu_kernels/distance.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::CdistArgs;
using npu_kernels::DType;
using npu_kernels::PdistArgs;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const std::vector<double> kPs{0.0, 1.0, 2.0, kInf, 3.0, 1.5, 0.5};

std::vector<double> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(0, 1);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

template <typename T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// The p-norm of a - b as the definition says it (no shared code with the kernel).
double host_distance(const double* a, const double* b, int64_t m, double p) {
  double s = 0;
  for (int64_t x = 0; x < m; ++x) {
    const double d = std::fabs(a[x] - b[x]);
    if (p == 0) s += d != 0 ? 1 : 0;
    else if (std::isinf(p)) s = std::max(s, d);
    else s += std::pow(d, p);
  }
  return p == 0 || std::isinf(p) ? s : std::pow(s, 1 / p);
}

void sync(npu_sim::Stream s) {
  EXPECT_EQ(s ? npu_sim::stream_synchronize(s) : npu_sim::device_synchronize(0), npu_sim::Status::kSuccess)
      << npu_sim::last_error_message();
}

template <typename T>
std::vector<T> run_cdist(const CdistArgs& a, const std::vector<double>& x1, const std::vector<double>& x2,
                         npu_sim::Stream s = nullptr) {
  DeviceBuf<T> d1(cast<T>(x1)), d2(cast<T>(x2)), out{std::vector<T>(static_cast<size_t>(a.batch * a.r1 * a.r2), T(-7))};
  EXPECT_EQ(npu_kernels::cdist_forward(s, a, d1.ptr, d2.ptr, out.ptr), npu_sim::Status::kSuccess);
  sync(s);
  return out.read();
}

template <typename T>
std::vector<T> run_cdist_backward(const CdistArgs& a, const std::vector<double>& grad, const std::vector<double>& x1,
                                  const std::vector<double>& x2, npu_sim::Stream s = nullptr) {
  const std::vector<T> dist = run_cdist<T>(a, x1, x2, s);
  DeviceBuf<T> g(cast<T>(grad)), d1(cast<T>(x1)), d2(cast<T>(x2)), dd(dist),
      out{std::vector<T>(static_cast<size_t>(a.batch * a.r1 * a.m), T(-7))};
  EXPECT_EQ(npu_kernels::cdist_backward(s, a, g.ptr, d1.ptr, d2.ptr, dd.ptr, out.ptr), npu_sim::Status::kSuccess);
  sync(s);
  return out.read();
}

template <typename T>
std::vector<T> run_pdist(const PdistArgs& a, const std::vector<double>& x, npu_sim::Stream s = nullptr) {
  DeviceBuf<T> dx(cast<T>(x)), out{std::vector<T>(static_cast<size_t>(npu_kernels::pdist_pairs(a.n)), T(-7))};
  EXPECT_EQ(npu_kernels::pdist_forward(s, a, dx.ptr, out.ptr), npu_sim::Status::kSuccess);
  sync(s);
  return out.read();
}

template <typename T>
std::vector<T> run_pdist_backward(const PdistArgs& a, const std::vector<double>& grad, const std::vector<double>& x,
                                  npu_sim::Stream s = nullptr) {
  const std::vector<T> dist = run_pdist<T>(a, x, s);
  DeviceBuf<T> g(cast<T>(grad)), dx(cast<T>(x)), dd(dist), out{std::vector<T>(x.size(), T(-7))};
  EXPECT_EQ(npu_kernels::pdist_backward(s, a, g.ptr, dx.ptr, dd.ptr, out.ptr), npu_sim::Status::kSuccess);
  sync(s);
  return out.read();
}

CdistArgs cdist_args(int64_t batch, int64_t r1, int64_t r2, int64_t m, double p, DType t = DType::kFloat64) {
  CdistArgs a;
  a.dtype = t;
  a.batch = batch;
  a.r1 = r1;
  a.r2 = r2;
  a.m = m;
  a.p = p;
  return a;
}

PdistArgs pdist_args(int64_t n, int64_t m, double p, DType t = DType::kFloat64) {
  PdistArgs a;
  a.dtype = t;
  a.n = n;
  a.m = m;
  a.p = p;
  return a;
}

TEST(Distance, CdistMatchesHostLoopsForEveryP) {
  const int64_t B = 3, r1 = 5, r2 = 7, m = 6;
  auto x1 = random_values(B * r1 * m, 1), x2 = random_values(B * r2 * m, 2);
  x2[3] = x1[3];  // one equal coordinate: counts 0 for p = 0
  for (double p : kPs) {
    const auto got = run_cdist<double>(cdist_args(B, r1, r2, m, p), x1, x2);
    const auto got32 = run_cdist<float>(cdist_args(B, r1, r2, m, p, DType::kFloat32), x1, x2);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < r1; ++i) {
        for (int64_t j = 0; j < r2; ++j) {
          const double want = host_distance(&x1[(b * r1 + i) * m], &x2[(b * r2 + j) * m], m, p);
          const size_t o = static_cast<size_t>((b * r1 + i) * r2 + j);
          EXPECT_NEAR(got[o], want, 1e-12 * (1 + want)) << "p " << p << " b " << b << " i " << i << " j " << j;
          EXPECT_NEAR(got32[o], want, 2e-5 * (1 + want)) << "p " << p;
        }
      }
    }
  }
}

TEST(Distance, PdistMatchesHostLoopsForEveryPAndEveryRowCount) {
  for (int64_t n : {2, 3, 5, 17, 64}) {
    const int64_t m = 5;
    const auto x = random_values(n * m, static_cast<unsigned>(n));
    for (double p : kPs) {
      const auto got = run_pdist<double>(pdist_args(n, m, p), x);
      ASSERT_EQ(static_cast<int64_t>(got.size()), n * (n - 1) / 2);
      size_t k = 0;
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = i + 1; j < n; ++j, ++k) {
          const double want = host_distance(&x[i * m], &x[j * m], m, p);
          EXPECT_NEAR(got[k], want, 1e-12 * (1 + want)) << "n " << n << " p " << p << " i " << i << " j " << j;
        }
      }
    }
  }
}

TEST(Distance, EmptyCoordinatesGiveZerosAndEmptyShapesLaunchNothing) {
  EXPECT_EQ(run_cdist<double>(cdist_args(2, 3, 4, 0, 1.5), {}, {}), std::vector<double>(24, 0.0));
  EXPECT_EQ(run_pdist<double>(pdist_args(4, 0, 2.0), {}), std::vector<double>(6, 0.0));
  ASSERT_OK(npu_kernels::cdist_forward(nullptr, cdist_args(2, 0, 4, 3, 2.0), nullptr, nullptr, nullptr));
  ASSERT_OK(npu_kernels::pdist_forward(nullptr, pdist_args(1, 3, 2.0), nullptr, nullptr));
  ASSERT_OK(npu_sim::device_synchronize(0));
}

// CPU's NaN rules: cdist's inf norm keeps the max of the other coordinates (std::max skips NaN); pdist's
// vectorised max and every sum propagate it.
TEST(Distance, NanDifferencesFollowCpusRules) {
  const std::vector<double> x1{kNaN, 1.0, 0.0}, x2{0.0, 3.0, 0.0};
  EXPECT_EQ(run_cdist<double>(cdist_args(1, 1, 1, 3, kInf), x1, x2)[0], 2.0);
  EXPECT_TRUE(std::isnan(run_cdist<double>(cdist_args(1, 1, 1, 3, 2.0), x1, x2)[0]));
  EXPECT_TRUE(std::isnan(run_cdist<double>(cdist_args(1, 1, 1, 3, 0.0), x1, x2)[0]));
  std::vector<double> x = x1;
  x.insert(x.end(), x2.begin(), x2.end());
  EXPECT_TRUE(std::isnan(run_pdist<double>(pdist_args(2, 3, kInf), x)[0]));
}

// Gradient of L = sum_k g_k d_k by central differences, where every d is differentiable (no ties, no zero diffs).
TEST(Distance, CdistBackwardMatchesCentralDifferences) {
  const int64_t B = 2, r1 = 3, r2 = 4, m = 5;
  const auto x1 = random_values(B * r1 * m, 3), x2 = random_values(B * r2 * m, 4), g = random_values(B * r1 * r2, 5);
  for (double p : kPs) {
    if (p == 0) continue;
    const CdistArgs a = cdist_args(B, r1, r2, m, p);
    const auto grad = run_cdist_backward<double>(a, g, x1, x2);
    const double h = 1e-6;
    for (size_t e = 0; e < x1.size(); ++e) {
      auto loss = [&](double delta) {
        auto x = x1;
        x[e] += delta;
        const auto d = run_cdist<double>(a, x, x2);
        double s = 0;
        for (size_t k = 0; k < d.size(); ++k) s += g[k] * d[k];
        return s;
      };
      EXPECT_NEAR(grad[e], (loss(h) - loss(-h)) / (2 * h), 1e-6) << "p " << p << " element " << e;
    }
  }
  EXPECT_EQ(run_cdist_backward<double>(cdist_args(B, r1, r2, m, 0.0), g, x1, x2), std::vector<double>(x1.size(), 0.0));
}

TEST(Distance, PdistBackwardMatchesCentralDifferences) {
  const int64_t n = 6, m = 4;
  const auto x = random_values(n * m, 6), g = random_values(n * (n - 1) / 2, 7);
  for (double p : kPs) {
    if (p == 0) continue;
    const PdistArgs a = pdist_args(n, m, p);
    const auto grad = run_pdist_backward<double>(a, g, x);
    const double h = 1e-6;
    for (size_t e = 0; e < x.size(); ++e) {
      auto loss = [&](double delta) {
        auto xs = x;
        xs[e] += delta;
        const auto d = run_pdist<double>(a, xs);
        double s = 0;
        for (size_t k = 0; k < d.size(); ++k) s += g[k] * d[k];
        return s;
      };
      EXPECT_NEAR(grad[e], (loss(h) - loss(-h)) / (2 * h), 1e-6) << "p " << p << " element " << e;
    }
  }
}

// CPU's subgradients: a zero distance gives 0 for every p; for p < 1 a zero coordinate gives 0 (|0|^(p-1) is
// inf); the inf norm gives grad * sign to every coordinate tied at the max.
TEST(Distance, BackwardSubgradientsAtZeroDistanceAndTies) {
  const std::vector<double> same{1.0, -2.0, 3.0}, other{1.0, 0.0, 0.5};
  std::vector<double> x = same;
  x.insert(x.end(), same.begin(), same.end());
  x.insert(x.end(), other.begin(), other.end());  // rows 0 and 1 equal; row 2 shares coordinate 0 with them
  for (double p : kPs) {
    const auto got = run_pdist_backward<double>(pdist_args(3, 3, p), {5.0, 1.0, 1.0}, x);
    for (double v : got) EXPECT_TRUE(std::isfinite(v)) << "p " << p;
    // coordinate 0: every pair's difference is 0 there
    for (int r = 0; r < 3; ++r) EXPECT_EQ(got[r * 3], 0.0) << "p " << p << " row " << r;
  }
  // CPU PyTorch 2.13's _pdist_backward on this input (grad 5, 1, 1), row-major (3, 3)
  const std::vector<std::vector<double>> cpu{
      {0, 0, 0, 0, 0, 0, 0, 0, 0},
      {0, -1, 1, 0, -1, 1, 0, 2, -2},
      {0, -0.6246950475544243, 0.7808688094430304, 0, -0.6246950475544243, 0.7808688094430304, 0,
       1.2493900951088486, -1.5617376188860608},
      {0, 0, 1, 0, 0, 1, 0, 0, -2},
      {0, -0.4858237924501307, 0.7590996757033291, 0, -0.4858237924501307, 0.7590996757033291, 0,
       0.9716475849002614, -1.5181993514066583},
      {0, -0.7471558984817807, 0.8353456893975967, 0, -0.7471558984817807, 0.8353456893975967, 0,
       1.4943117969635613, -1.6706913787951934},
      {0, -2.118033988749895, 1.8944271909999162, 0, -2.118033988749895, 1.8944271909999162, 0, 4.23606797749979,
       -3.7888543819998324}};
  for (size_t k = 0; k < kPs.size(); ++k) {
    const auto got = run_pdist_backward<double>(pdist_args(3, 3, kPs[k]), {5.0, 1.0, 1.0}, x);
    for (size_t e = 0; e < got.size(); ++e) EXPECT_NEAR(got[e], cpu[k][e], 1e-14) << "p " << kPs[k] << " e " << e;
  }
  // inf norm with a tie: |d| = 2 in coordinates 0 and 2 of x1 - x2 = (2, 1, -2): both get grad * sign
  const auto tie = run_cdist_backward<double>(cdist_args(1, 1, 1, 3, kInf), {3.0}, {2.0, 1.0, -2.0}, {0.0, 0.0, 0.0});
  EXPECT_EQ(tie, (std::vector<double>{3.0, 0.0, -3.0}));
  // p = 1 at a zero difference: sign(0) = 0
  const auto l1 = run_cdist_backward<double>(cdist_args(1, 1, 1, 2, 1.0), {2.0}, {1.0, 4.0}, {1.0, 3.0});
  EXPECT_EQ(l1, (std::vector<double>{0.0, 2.0}));
}

TEST(Distance, Float32BackwardIsCloseToDouble) {
  const int64_t B = 2, r1 = 9, r2 = 11, m = 7;
  const auto x1 = random_values(B * r1 * m, 8), x2 = random_values(B * r2 * m, 9), g = random_values(B * r1 * r2, 10);
  for (double p : kPs) {
    const auto d64 = run_cdist_backward<double>(cdist_args(B, r1, r2, m, p), g, x1, x2);
    const auto d32 = run_cdist_backward<float>(cdist_args(B, r1, r2, m, p, DType::kFloat32), g, x1, x2);
    for (size_t e = 0; e < d64.size(); ++e) EXPECT_NEAR(d32[e], d64[e], 1e-4 * (1 + std::fabs(d64[e]))) << "p " << p;
  }
}

TEST(Distance, BadArgumentsAreRefusedBeforeLaunch) {
  DeviceBuf<double> buf{std::vector<double>(64, 1.0)};
  const auto bad = npu_sim::Status::kInvalidValue;
  EXPECT_EQ(npu_kernels::cdist_forward(nullptr, cdist_args(1, 2, 2, 2, 2.0, DType::kFloat16), buf.ptr, buf.ptr, buf.ptr),
            bad);
  EXPECT_EQ(npu_kernels::cdist_forward(nullptr, cdist_args(1, -1, 2, 2, 2.0), buf.ptr, buf.ptr, buf.ptr), bad);
  EXPECT_EQ(npu_kernels::cdist_forward(nullptr, cdist_args(1, 2, 2, 2, kNaN), buf.ptr, buf.ptr, buf.ptr), bad);
  EXPECT_EQ(npu_kernels::cdist_forward(nullptr, cdist_args(1, 2, 2, 2, 2.0), nullptr, buf.ptr, buf.ptr), bad);
  EXPECT_EQ(npu_kernels::cdist_backward(nullptr, cdist_args(1, 2, 2, 2, 2.0), buf.ptr, buf.ptr, buf.ptr, nullptr,
                                        buf.ptr), bad);
  EXPECT_EQ(npu_kernels::pdist_forward(nullptr, pdist_args(3, 2, 2.0, DType::kInt64), buf.ptr, buf.ptr), bad);
  EXPECT_EQ(npu_kernels::pdist_backward(nullptr, pdist_args(3, 2, 2.0), nullptr, buf.ptr, buf.ptr, buf.ptr), bad);
  ASSERT_OK(npu_sim::device_synchronize(0));
}

TEST(Distance, ConcurrentStreamsAgree) {
  const int64_t B = 2, r1 = 13, r2 = 17, m = 9, n = 23;
  const auto x1 = random_values(B * r1 * m, 11), x2 = random_values(B * r2 * m, 12), g = random_values(B * r1 * r2, 13);
  const auto x = random_values(n * m, 14), gp = random_values(n * (n - 1) / 2, 15);
  const CdistArgs ca = cdist_args(B, r1, r2, m, 1.5);
  const PdistArgs pa = pdist_args(n, m, 3.0);
  const auto want_c = run_cdist_backward<double>(ca, g, x1, x2);
  const auto want_p = run_pdist_backward<double>(pa, gp, x);
  npu_sim::Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s1));
  ASSERT_OK(npu_sim::stream_create(0, &s2));
  std::vector<double> got_c, got_p;
  std::thread t1([&] { for (int i = 0; i < 10; ++i) got_c = run_cdist_backward<double>(ca, g, x1, x2, s1); });
  std::thread t2([&] { for (int i = 0; i < 10; ++i) got_p = run_pdist_backward<double>(pa, gp, x, s2); });
  t1.join();
  t2.join();
  EXPECT_EQ(got_c, want_c);
  EXPECT_EQ(got_p, want_p);
  ASSERT_OK(npu_sim::stream_destroy(s1));
  ASSERT_OK(npu_sim::stream_destroy(s2));
}

}  // namespace
