// gtests of the torch-free special-function (double and the vectorised float kernels, with the elementwise
// engine's exceptional elements), grid_sample, max_unpool and logcumsumexp kernels: special functions
// at known values (mpmath / closed forms), grid_sample's input gradient as the exact adjoint of its forward and its
// grid gradient against central differences, concurrent streams, and the kernel errors of bad unpool indices.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "../../kernels/src/special_functions.h"
#include "npu_kernels/elementwise.h"
#include "npu_kernels/grid_sample.h"
#include "npu_kernels/pointwise.h"
#include "npu_kernels/pool.h"
#include "npu_kernels/reduce.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::DType;
namespace sf = npu_kernels::detail;

constexpr double kPi = 3.14159265358979323846;

TEST(SpecialFunctions, KnownValues) {
  EXPECT_NEAR(sf::bessel_j0(1.0), 0.76519768655796655, 1e-15);
  EXPECT_NEAR(sf::bessel_j1(-2.0), -0.57672480775687339, 1e-15);
  EXPECT_NEAR(sf::bessel_y1(2.0), -0.10703243154093754, 1e-15);
  EXPECT_NEAR(sf::modified_bessel_k0(1.0), 0.42102443824070834, 1e-15);
  EXPECT_NEAR(sf::modified_bessel_i0e(800.0), 0.014106945005869183, 1e-16);  // Hankel's series
  EXPECT_NEAR(sf::scaled_modified_bessel_k1(600.0), 0.05119829772547244, 1e-15);
  EXPECT_NEAR(sf::airy_ai(-1000.0), 0.05597189577301992, 1e-12);  // the asymptotic branch
  EXPECT_NEAR(sf::airy_ai(1e-300), 0.35502805388781724, 1e-16);  // libstdc++'s form overflows here
  EXPECT_NEAR(sf::erfcx(30.0), 0.018795888861416754, 1e-17);
  EXPECT_NEAR(sf::ndtri(1e-300), -37.047096299361195, 1e-12);
  EXPECT_NEAR(sf::ndtri(0.975), 1.959963984540054, 1e-14);
  EXPECT_NEAR(sf::hurwitz_zeta(2.0, 1.0), kPi * kPi / 6, 1e-15);
  EXPECT_NEAR(sf::polygamma(3, 0.5), std::pow(kPi, 4), 1e-12);
  EXPECT_NEAR(sf::igamma(1.0, 2.5), 1 - std::exp(-2.5), 1e-15);
  EXPECT_NEAR(sf::igammac(1.0, 40.0), std::exp(-40.0), 1e-30);
  const double theta = 0.7;
  EXPECT_NEAR(sf::orthogonal_polynomial(sf::Polynomial::kChebyshevT, std::cos(theta), 11, false), std::cos(11 * theta),
              1e-13);
  EXPECT_EQ(sf::orthogonal_polynomial(sf::Polynomial::kLegendreP, -1.0, 7, false), -1.0);
  EXPECT_EQ(sf::orthogonal_polynomial(sf::Polynomial::kHermiteH, 0.5, -0.5, false), 1.0);  // degree truncates to 0
  EXPECT_TRUE(std::isnan(sf::bessel_y0(-1.0)));
  EXPECT_EQ(sf::modified_bessel_k1(0.0), std::numeric_limits<double>::infinity());
}

npu_kernels::GridSampleArgs grid_args(bool three_d, npu_kernels::GridInterpolation mode, npu_kernels::GridPadding pad,
                                      bool align, int64_t n, int64_t c) {
  npu_kernels::GridSampleArgs a;
  a.dtype = DType::kFloat64;
  a.n = n;
  a.c = c;
  a.three_d = three_d;
  a.in_d = three_d ? 4 : 1;
  a.in_h = 5;
  a.in_w = 6;
  a.out_d = three_d ? 2 : 1;
  a.out_h = 3;
  a.out_w = 4;
  a.interpolation = mode;
  a.padding = pad;
  a.align_corners = align;
  return a;
}

struct GridRun {
  std::vector<double> out, grad_input, grad_grid;
};

GridRun run_grid(const npu_kernels::GridSampleArgs& a, const std::vector<double>& x, const std::vector<double>& g,
                 const std::vector<double>& go, npu_sim::Stream s = nullptr) {
  const size_t n_out = static_cast<size_t>(a.n * a.c * a.out_d * a.out_h * a.out_w);
  DeviceBuf<double> xd(x), gd(g), god(go);
  DeviceBuf<double> out{std::vector<double>(n_out)}, gi{std::vector<double>(x.size())}, gg{std::vector<double>(g.size())};
  EXPECT_EQ(npu_kernels::grid_sample(s, a, xd.ptr, gd.ptr, out.ptr), npu_sim::Status::kSuccess);
  EXPECT_EQ(npu_kernels::grid_sample_backward(s, a, god.ptr, xd.ptr, gd.ptr, gi.ptr, gg.ptr), npu_sim::Status::kSuccess);
  EXPECT_EQ(s ? npu_sim::stream_synchronize(s) : npu_sim::device_synchronize(0), npu_sim::Status::kSuccess);
  return {out.read(), gi.read(), gg.read()};
}

std::vector<double> randn(size_t n, unsigned seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (auto& e : v) e = u(rng);
  return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// <grid_sample(x), g> == <x, grad_input(g)>: the input's gradient is the exact adjoint of the forward, for every
// mode and padding, 2-D and 3-D, and chunked backward blocks (batch 1: several channel chunks per sample).
// A functor whose fast form is wrong for negative x names them exceptional: the engine evaluates them first
// (the output may alias the input) and writes them over each vectorised chunk.
struct TwiceOrExact {
  float operator()(float x) const { return 2 * x; }
  bool exceptional(float x) const { return x < 0; }
  float exact(float x) const { return x - 1000; }
};

TEST(ElementwiseEngine, ExceptionalElementsInPlaceAcrossChunksFromTwoStreams) {
  constexpr int64_t n = 70000;  // above the 64K-element grain: two blocks, each many 1024-element chunks
  auto run = [](bool in_place, int seed) {
    std::mt19937 gen(seed);
    std::vector<float> x(n);
    for (auto& v : x) v = std::uniform_real_distribution<float>(0, 10)(gen);
    for (int64_t i : {int64_t{0}, int64_t{1023}, int64_t{1024}, int64_t{2047}, int64_t{65535}, int64_t{65536}, n - 1})
      x[i] = -static_cast<float>(i) - 1;
    for (int k = 0; k < 300; ++k) x[gen() % n] = -7.0f;
    npu_sim::Stream s = nullptr;
    ASSERT_OK(npu_sim::stream_create(0, &s));
    DeviceBuf<float> in(x), out(std::vector<float>(n, 0.0f));
    float* dst = in_place ? in.ptr : out.ptr;
    const npu_kernels::ElementwiseIter it = flat_iter(n, DType::kFloat32, DType::kFloat32, dst, in.ptr, 4, 4);
    ASSERT_OK((npu_kernels::launch_elementwise<float, float, 1>(s, "test_exceptional", it, TwiceOrExact{})));
    ASSERT_OK(npu_sim::stream_synchronize(s));
    const std::vector<float> y = in_place ? in.read() : out.read();
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], x[i] < 0 ? x[i] - 1000 : 2 * x[i]) << i;
    ASSERT_OK(npu_sim::stream_destroy(s));
  };
  std::thread t1([&] { run(true, 1); });
  std::thread t2([&] { run(false, 2); });
  t1.join();
  t2.join();
}

// The float J / Y kernels: exact up to 2^40 by their double reduction, and beyond by bessel_jy_far.
TEST(SpecialFunctions, FloatBesselHugeArguments) {
  const std::vector<float> x = {1.0f, 7.5f, 1e9f, 1.0995116e12f, 1099511627776.0f, 3e15f, 1e20f, -1e30f, 3.4e38f};
  DeviceBuf<float> in(x), out(std::vector<float>(x.size()));
  ASSERT_OK(npu_kernels::unary(nullptr, npu_kernels::UnaryOp::kBesselJ1,
                               flat_iter(static_cast<int64_t>(x.size()), DType::kFloat32, DType::kFloat32, out.ptr,
                                         in.ptr, 4, 4),
                               {}));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const std::vector<float> y = out.read();
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = sf::bessel_j1(x[i]);  // Hankel's expansion from 2^27 on
    const double amplitude = std::min(1.0, std::sqrt(2 / (kPi * std::fabs(x[i]))));
    EXPECT_NEAR(y[i], want, 2e-6 * (std::fabs(want) + amplitude)) << x[i];
  }
}

TEST(GridSample, InputGradientIsTheAdjointOfTheForward) {
  using M = npu_kernels::GridInterpolation;
  using P = npu_kernels::GridPadding;
  for (bool three_d : {false, true}) {
    for (M mode : {M::kBilinear, M::kNearest, M::kBicubic}) {
      if (three_d && mode == M::kBicubic) continue;
      for (P pad : {P::kZeros, P::kBorder, P::kReflection}) {
        for (int64_t n : {1, 3}) {
          const auto a = grid_args(three_d, mode, pad, n == 1, n, 5);
          const int dims = three_d ? 3 : 2;
          const auto x = randn(static_cast<size_t>(n * 5 * a.in_d * a.in_h * a.in_w), 1);
          const auto g = randn(static_cast<size_t>(n * a.out_d * a.out_h * a.out_w * dims), 2, -1.3, 1.3);
          const auto go = randn(static_cast<size_t>(n * 5 * a.out_d * a.out_h * a.out_w), 3);
          const GridRun r = run_grid(a, x, g, go);
          EXPECT_NEAR(dot(r.out, go), dot(x, r.grad_input), 1e-10) << three_d << int(mode) << int(pad) << n;
        }
      }
    }
  }
}

// d <out, go> / d grid by central differences, for bilinear and bicubic (smooth away from pixel boundaries).
TEST(GridSample, GridGradientMatchesCentralDifferences) {
  using M = npu_kernels::GridInterpolation;
  for (bool three_d : {false, true}) {
    for (M mode : {M::kBilinear, M::kBicubic}) {
      if (three_d && mode == M::kBicubic) continue;
      const auto a = grid_args(three_d, mode, npu_kernels::GridPadding::kZeros, false, 1, 3);
      const int dims = three_d ? 3 : 2;
      const auto x = randn(static_cast<size_t>(3 * a.in_d * a.in_h * a.in_w), 4);
      const auto g = randn(static_cast<size_t>(a.out_d * a.out_h * a.out_w * dims), 5, -0.9, 0.9);
      const auto go = randn(static_cast<size_t>(3 * a.out_d * a.out_h * a.out_w), 6);
      const GridRun r = run_grid(a, x, g, go);
      const double h = 1e-6;
      for (size_t i = 0; i < g.size(); ++i) {
        auto gp = g, gm = g;
        gp[i] += h;
        gm[i] -= h;
        const double numeric = (dot(run_grid(a, x, gp, go).out, go) - dot(run_grid(a, x, gm, go).out, go)) / (2 * h);
        EXPECT_NEAR(r.grad_grid[i], numeric, 1e-6) << "coordinate " << i << " mode " << int(mode);
      }
    }
  }
}

// Two streams running the chunked backward (with its second, partial-sum launch) at once agree with one stream.
TEST(GridSample, ConcurrentStreamsAgree) {
  const auto a = grid_args(false, npu_kernels::GridInterpolation::kBilinear, npu_kernels::GridPadding::kBorder, false,
                           1, 8);
  const auto x = randn(static_cast<size_t>(8 * a.in_h * a.in_w), 7);
  const auto g = randn(static_cast<size_t>(a.out_h * a.out_w * 2), 8);
  const auto go = randn(static_cast<size_t>(8 * a.out_h * a.out_w), 9);
  const GridRun want = run_grid(a, x, g, go);
  npu_sim::Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s1));
  ASSERT_OK(npu_sim::stream_create(0, &s2));
  GridRun r1, r2;
  std::thread t1([&] { for (int i = 0; i < 20; ++i) r1 = run_grid(a, x, g, go, s1); });
  std::thread t2([&] { for (int i = 0; i < 20; ++i) r2 = run_grid(a, x, g, go, s2); });
  t1.join();
  t2.join();
  for (const GridRun* r : {&r1, &r2}) {
    EXPECT_EQ(r->out, want.out);
    EXPECT_EQ(r->grad_input, want.grad_input);
    EXPECT_EQ(r->grad_grid, want.grad_grid);
  }
  ASSERT_OK(npu_sim::stream_destroy(s1));
  ASSERT_OK(npu_sim::stream_destroy(s2));
}

TEST(MaxUnpool, ScattersAndAnOutOfPlaneIndexIsAKernelError) {
  npu_kernels::PoolArgs a;
  a.dtype = DType::kFloat32;
  a.planes = 2;
  a.in_h = 2;
  a.in_w = 3;  // the unpooled plane
  a.out_h = 1;
  a.out_w = 2;  // the pooled values
  DeviceBuf<float> vals{std::vector<float>{1, 2, 3, 4}}, out{std::vector<float>(12, -1.0f)};
  DeviceBuf<int64_t> idx(std::vector<int64_t>{5, 0, 2, 3});
  ASSERT_OK(npu_kernels::max_unpool(nullptr, a, vals.ptr, idx.ptr, out.ptr));
  ASSERT_OK(npu_sim::device_synchronize(0));
  EXPECT_EQ(out.read(), (std::vector<float>{2, 0, 0, 0, 0, 1, 0, 0, 3, 4, 0, 0}));
  DeviceBuf<int64_t> bad(std::vector<int64_t>{5, 6, 0, 1});
  ASSERT_OK(npu_kernels::max_unpool(nullptr, a, vals.ptr, bad.ptr, out.ptr));
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
  const std::string msg = npu_sim::last_error_message();
  EXPECT_NE(msg.find("Found an invalid max index: 6 (output volumes are of size 2x3)"), std::string::npos) << msg;
  ASSERT_OK(npu_sim::device_restart(0));
}

TEST(Scan, LogcumsumexpKeepsInfinitiesAndNaN) {
  const double inf = std::numeric_limits<double>::infinity();
  DeviceBuf<double> in{std::vector<double>{-inf, -inf, 0.0, std::log(3.0), inf, 1.0, std::nan("")}};
  DeviceBuf<double> out{std::vector<double>(7)};
  npu_kernels::ScanDesc d;
  d.in = in.ptr;
  d.out = out.ptr;
  d.dtype = DType::kFloat64;
  d.n = 7;
  d.in_strides[0] = d.out_strides[0] = 7;
  d.in_strides[1] = d.out_strides[1] = 1;
  d.in_strides[2] = d.out_strides[2] = 1;
  ASSERT_OK(npu_kernels::scan(nullptr, npu_kernels::ScanOp::kLogcumsumexp, d));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto y = out.read();
  EXPECT_EQ(y[0], -inf);
  EXPECT_EQ(y[1], -inf);
  EXPECT_DOUBLE_EQ(y[2], 0.0);
  EXPECT_DOUBLE_EQ(y[3], std::log(4.0));
  EXPECT_EQ(y[4], inf);
  EXPECT_EQ(y[5], inf);
  EXPECT_TRUE(std::isnan(y[6]));
}

}  // namespace
