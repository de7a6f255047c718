// gtests of the torch-free fractional max pooling kernels: 2-D and 3-D forward against host loops (float, double),
// literal values from CPU torch 2.13 (window placement in f32/f64/f16/bf16, ties, NaN), edge sizes, backward with
// repeated indices and bf16 rounding, kernel errors and bad arguments, two streams at once.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "npu_kernels/fractional_pool.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::BFloat16;
using npu_kernels::DType;
using npu_kernels::FractionalPoolArgs;
using npu_kernels::Half;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

void sync(npu_sim::Stream s) {
  EXPECT_EQ(s ? npu_sim::stream_synchronize(s) : npu_sim::device_synchronize(0), npu_sim::Status::kSuccess)
      << npu_sim::last_error_message();
}

template <typename T>
std::vector<T> cast(const std::vector<double>& v) {
  std::vector<T> r;
  for (double x : v) r.push_back(T(static_cast<float>(x)));
  return r;
}
template <>
std::vector<double> cast<double>(const std::vector<double>& v) {
  return v;
}

FractionalPoolArgs args2d(int64_t planes, int64_t ih, int64_t iw, int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                          DType t = DType::kFloat64) {
  FractionalPoolArgs a;
  a.dtype = t;
  a.planes = planes;
  a.in_h = ih;
  a.in_w = iw;
  a.out_h = oh;
  a.out_w = ow;
  a.kernel_h = kh;
  a.kernel_w = kw;
  return a;
}

FractionalPoolArgs args3d(int64_t planes, int64_t it, int64_t ih, int64_t iw, int64_t ot, int64_t oh, int64_t ow,
                          int64_t kt, int64_t kh, int64_t kw, DType t = DType::kFloat64) {
  FractionalPoolArgs a = args2d(planes, ih, iw, oh, ow, kh, kw, t);
  a.three_d = true;
  a.in_t = it;
  a.out_t = ot;
  a.kernel_t = kt;
  return a;
}

int64_t in_plane(const FractionalPoolArgs& a) { return a.in_t * a.in_h * a.in_w; }
int64_t out_plane(const FractionalPoolArgs& a) { return a.out_t * a.out_h * a.out_w; }

template <typename T>
struct Pooled {
  std::vector<T> out;
  std::vector<int64_t> idx;
};

template <typename T>
Pooled<T> run_forward(const FractionalPoolArgs& a, const std::vector<double>& x, const std::vector<double>& samples,
                      npu_sim::Stream s = nullptr) {
  DeviceBuf<T> dx(cast<T>(x)), ds(cast<T>(samples)),
      out{std::vector<T>(static_cast<size_t>(a.planes * out_plane(a)), T(-7.0f))};
  DeviceBuf<int64_t> idx{std::vector<int64_t>(static_cast<size_t>(a.planes * out_plane(a)), -7)};
  EXPECT_EQ(npu_kernels::fractional_max_pool_forward(s, a, dx.ptr, ds.ptr, out.ptr, idx.ptr),
            npu_sim::Status::kSuccess);
  sync(s);
  return {out.read(), idx.read()};
}

template <typename T>
std::vector<T> run_backward(const FractionalPoolArgs& a, const std::vector<double>& g, const std::vector<int64_t>& idx,
                            npu_sim::Stream s = nullptr) {
  DeviceBuf<T> dg(cast<T>(g)), gi{std::vector<T>(static_cast<size_t>(a.planes * in_plane(a)), T(-7.0f))};
  DeviceBuf<int64_t> di(idx);
  EXPECT_EQ(npu_kernels::fractional_max_pool_backward(s, a, dg.ptr, di.ptr, gi.ptr), npu_sim::Status::kSuccess);
  sync(s);
  return gi.read();
}

// CPU's window starts in native float / double arithmetic (the reference for kFloat32 / kFloat64).
template <typename T>
std::vector<int64_t> host_starts(T sample, int64_t in, int64_t out, int64_t k) {
  std::vector<int64_t> seq(static_cast<size_t>(out));
  if (out > 1) {
    const T alpha = static_cast<T>(in - k) / static_cast<T>(out - 1);
    for (int64_t i = 0; i < out - 1; ++i) {
      seq[i] = static_cast<int>((static_cast<T>(i) + sample) * alpha) - static_cast<int>(sample * alpha);
    }
  }
  seq[out - 1] = in - k;
  return seq;
}

// The plain loop: max over each window, first of ties, last NaN.
template <typename T>
Pooled<double> host_forward(const FractionalPoolArgs& a, const std::vector<double>& x,
                            const std::vector<double>& samples) {
  Pooled<double> r;
  const int ns = a.three_d ? 3 : 2;
  for (int64_t p = 0; p < a.planes; ++p) {
    auto smp = [&](int i) { return static_cast<T>(samples[p * ns + i]); };
    const auto st = a.three_d ? host_starts<T>(smp(0), a.in_t, a.out_t, a.kernel_t) : std::vector<int64_t>{0};
    const auto sh = host_starts<T>(smp(1), a.in_h, a.out_h, a.kernel_h);
    const auto sw = host_starts<T>(smp(a.three_d ? 2 : 0), a.in_w, a.out_w, a.kernel_w);
    for (int64_t t = 0; t < a.out_t; ++t) {
      for (int64_t h = 0; h < a.out_h; ++h) {
        for (int64_t w = 0; w < a.out_w; ++w) {
          double best = -kInf;
          int64_t arg = (st[t] * a.in_h + sh[h]) * a.in_w + sw[w];
          for (int64_t t2 = st[t]; t2 < st[t] + a.kernel_t; ++t2) {
            for (int64_t h2 = sh[h]; h2 < sh[h] + a.kernel_h; ++h2) {
              for (int64_t w2 = sw[w]; w2 < sw[w] + a.kernel_w; ++w2) {
                const int64_t i = (t2 * a.in_h + h2) * a.in_w + w2;
                const double v = static_cast<T>(x[p * in_plane(a) + i]);
                if (v > best || std::isnan(v)) {
                  best = v;
                  arg = i;
                }
              }
            }
          }
          r.out.push_back(best);
          r.idx.push_back(arg);
        }
      }
    }
  }
  return r;
}

std::vector<double> random_values(size_t n, unsigned seed, bool small_ints = false) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(0, 1);
  std::uniform_int_distribution<int> u(0, 5);
  std::vector<double> v(n);
  for (auto& x : v) x = small_ints ? u(rng) : d(rng);  // small integers: many ties
  return v;
}

std::vector<double> random_samples(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(0, 1);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

template <typename T>
void expect_matches_host(const FractionalPoolArgs& a, unsigned seed, bool ties) {
  const auto x = random_values(static_cast<size_t>(a.planes * in_plane(a)), seed, ties);
  const auto s = random_samples(static_cast<size_t>(a.planes * (a.three_d ? 3 : 2)), seed + 100);
  const auto got = run_forward<T>(a, x, s);
  const auto want = host_forward<T>(a, x, s);
  ASSERT_EQ(got.idx, want.idx);
  for (size_t i = 0; i < want.out.size(); ++i) EXPECT_EQ(static_cast<double>(got.out[i]), want.out[i]) << i;
}

TEST(FractionalMaxPool, Forward2dMatchesHostLoops) {
  for (bool ties : {false, true}) {
    expect_matches_host<double>(args2d(6, 13, 17, 5, 7, 3, 2), 1, ties);
    expect_matches_host<float>(args2d(6, 13, 17, 5, 7, 3, 2, DType::kFloat32), 2, ties);
    expect_matches_host<double>(args2d(3, 40, 31, 20, 29, 2, 3), 3, ties);
    expect_matches_host<float>(args2d(2, 9, 9, 9, 9, 1, 1, DType::kFloat32), 4, ties);  // every position once
  }
}

TEST(FractionalMaxPool, Forward3dMatchesHostLoops) {
  for (bool ties : {false, true}) {
    expect_matches_host<double>(args3d(4, 7, 8, 9, 3, 4, 5, 2, 3, 2), 5, ties);
    expect_matches_host<float>(args3d(4, 7, 8, 9, 3, 4, 5, 2, 3, 2, DType::kFloat32), 6, ties);
    expect_matches_host<float>(args3d(2, 11, 5, 13, 6, 2, 10, 3, 2, 1, DType::kFloat32), 7, ties);
  }
}

// Literal values from CPU torch 2.13: x = (i * 37) % 23 as (1, 2, 7, 9) float32, samples [[0.25, 0.8], [0.6, 0.1]],
// kernel (2, 3), output (3, 4): torch.ops.aten.fractional_max_pool2d(x, [2, 3], [3, 4], s).
TEST(FractionalMaxPool, Forward2dMatchesCpuLiterals) {
  std::vector<double> x;
  for (int i = 0; i < 2 * 7 * 9; ++i) x.push_back((i * 37) % 23);
  const auto got = run_forward<float>(args2d(2, 7, 9, 3, 4, 2, 3, DType::kFloat32), x, {0.25, 0.8, 0.6, 0.1});
  const std::vector<float> out{16, 21, 21, 20, 22, 20, 20, 19, 20, 19, 21, 17,
                               22, 18, 20, 16, 21, 17, 22, 22, 22, 22, 20, 20};
  const std::vector<int64_t> idx{11, 13, 13, 8, 18, 31, 31, 26, 54, 49, 59, 62,
                                 1, 4, 14, 17, 19, 22, 24, 24, 47, 47, 60, 60};
  EXPECT_EQ(got.out, out);
  EXPECT_EQ(got.idx, idx);
}

// CPU torch 2.13, float64: x = (i * 29) % 31 as (1, 1, 5, 6, 7), samples [0.9, 0.3, 0.55] (t, h, w), kernel
// (2, 2, 3), output (3, 4, 3); and the backward of grad = 1..36 at those indices (its non-zero entries).
TEST(FractionalMaxPool, Pool3dMatchesCpuLiterals) {
  std::vector<double> x;
  for (int i = 0; i < 5 * 6 * 7; ++i) x.push_back((i * 29) % 31);
  const auto a = args3d(1, 5, 6, 7, 3, 4, 3, 2, 2, 3);
  const auto got = run_forward<double>(a, x, {0.9, 0.3, 0.55});
  const std::vector<double> out{29, 27, 30, 30, 30, 26, 29, 29, 29, 30, 29, 29, 26, 29, 30, 26, 29, 27,
                                29, 30, 30, 30, 28, 29, 27, 30, 28, 30, 26, 29, 29, 29, 30, 29, 29, 30};
  const std::vector<int64_t> idx{1,   2,   47,  16,  16,  18,  63,  32,  32,  78,  32,  32,
                                 49,  94,  47,  49,  94,  95,  63,  109, 109, 78,  79,  125,
                                 126, 171, 172, 140, 142, 187, 156, 156, 202, 156, 156, 202};
  EXPECT_EQ(got.out, out);
  ASSERT_EQ(got.idx, idx);
  std::vector<double> g;
  for (int i = 1; i <= 36; ++i) g.push_back(i);
  const auto gi = run_backward<double>(a, g, got.idx);
  const std::vector<int64_t> nz{1, 2, 16, 18, 32, 47, 49, 63, 78, 79, 94, 95, 109, 125, 126, 140, 142, 156, 171, 172,
                                187, 202};
  const std::vector<double> vals{1,  2,  9,  6,  40, 18, 29, 26, 32, 23, 31,
                                 18, 41, 24, 25, 28, 29, 132, 26, 27, 30, 69};
  std::vector<double> want(gi.size(), 0.0);
  for (size_t i = 0; i < nz.size(); ++i) want[nz[i]] = vals[i];
  EXPECT_EQ(gi, want);
}

// CPU computes the window starts in the input dtype, each Half/BFloat16 operation rounded: literal starts from CPU
// torch 2.13 (zero input, so each index is its window's start) where float arithmetic would differ.
TEST(FractionalMaxPool, ReducedPrecisionWindowStartsMatchCpu) {
  {
    // bf16, W 42, kernel 2, output 24, sample 0.2421875: start 17 is 30 (29 in float).
    const auto a = args2d(1, 1, 42, 1, 24, 1, 2, DType::kBFloat16);
    const auto got = run_forward<BFloat16>(a, std::vector<double>(42, 0.0), {0.2421875, 0.5});
    const std::vector<int64_t> want{0,  2,  3,  5,  7,  9,  10, 12, 14, 16, 17, 19,
                                    21, 23, 24, 26, 28, 30, 31, 33, 35, 37, 38, 40};
    EXPECT_EQ(got.idx, want);
  }
  {
    // f16, W 140, kernel 1, output 95, sample 0.7060546875: start 50 is 74 (73 in float).
    const auto a = args2d(1, 1, 140, 1, 95, 1, 1, DType::kFloat16);
    const auto got = run_forward<Half>(a, std::vector<double>(140, 0.0), {0.7060546875, 0.0});
    EXPECT_EQ(got.idx[49], 72);
    EXPECT_EQ(got.idx[50], 74);
    EXPECT_EQ(got.idx[51], 75);
    EXPECT_EQ(got.idx[94], 139);
  }
}

// CPU torch 2.13 on a 2x2 window (kernel 2, output 1): ties keep the first, NaN the last NaN, all -inf the first.
TEST(FractionalMaxPool, TiesNanAndInfinityFollowCpu) {
  const auto a = args2d(6, 2, 2, 1, 1, 2, 2);
  const std::vector<double> x{1, 3, 3, 2, kNaN, 1, kNaN, 2, 1, kNaN, 5, 2, -kInf, -kInf, -kInf, -kInf,
                              kNaN, kNaN, kNaN, kNaN, 2, 2, 2, 2};
  const auto got = run_forward<double>(a, x, std::vector<double>(12, 0.3));
  EXPECT_EQ(got.idx, (std::vector<int64_t>{1, 2, 1, 0, 3, 0}));
  EXPECT_EQ(got.out[0], 3.0);
  EXPECT_TRUE(std::isnan(got.out[1]) && std::isnan(got.out[2]) && std::isnan(got.out[4]));
  EXPECT_EQ(got.out[3], -kInf);
  const auto got16 = run_forward<BFloat16>(args2d(6, 2, 2, 1, 1, 2, 2, DType::kBFloat16), x,
                                           std::vector<double>(12, 0.3));
  EXPECT_EQ(got16.idx, got.idx);
}

TEST(FractionalMaxPool, EdgeSizes) {
  // Output 1: the window at in - k whatever the sample; kernel = input: the whole plane.
  const std::vector<double> x = random_values(5 * 6, 9);
  auto a = args2d(1, 5, 6, 1, 1, 2, 3);
  const auto got = run_forward<double>(a, x, {0.9, 0.9});
  EXPECT_EQ(got.idx, host_forward<double>(a, x, {0.9, 0.9}).idx);
  EXPECT_EQ(got.idx[0] / 6 >= 3 && got.idx[0] % 6 >= 3, true);
  a = args2d(1, 5, 6, 1, 1, 5, 6);
  const auto whole = run_forward<double>(a, x, {0.1, 0.2});
  int64_t arg = 0;
  for (int64_t i = 1; i < 30; ++i) {
    if (x[i] > x[arg]) arg = i;
  }
  EXPECT_EQ(whole.idx[0], arg);
  // Output = input (kernel 1): the identity.
  a = args2d(1, 5, 6, 5, 6, 1, 1);
  const auto id = run_forward<double>(a, x, {0.4, 0.7});
  for (int64_t i = 0; i < 30; ++i) EXPECT_EQ(id.idx[i], i);
  // Zero outputs launch nothing.
  ASSERT_OK(npu_kernels::fractional_max_pool_forward(nullptr, args2d(1, 5, 6, 0, 3, 2, 2), nullptr, nullptr, nullptr,
                                                     nullptr));
  ASSERT_OK(npu_sim::device_synchronize(0));
}

TEST(FractionalMaxPool, BackwardScattersInOrderWithRepeatedIndices) {
  // A 3x3 plane with its maximum in the middle: every 2x2 window of output (2, 2) picks index 4 (CPU: grad 4 there).
  const auto a = args2d(1, 3, 3, 2, 2, 2, 2);
  const std::vector<double> x{0, 0, 0, 0, 9, 0, 0, 0, 0};
  const auto f = run_forward<double>(a, x, {0.37, 0.81});
  EXPECT_EQ(f.idx, (std::vector<int64_t>{4, 4, 4, 4}));
  EXPECT_EQ(run_backward<double>(a, {1, 1, 1, 1}, f.idx), (std::vector<double>{0, 0, 0, 0, 4, 0, 0, 0, 0}));
  // Host scatter over random pools, 2-D and 3-D.
  for (const auto& b : {args2d(5, 13, 11, 8, 7, 3, 3), args3d(3, 6, 7, 8, 4, 5, 5, 2, 2, 3)}) {
    const auto xs = random_values(static_cast<size_t>(b.planes * in_plane(b)), 10, true);
    const auto fs = run_forward<double>(b, xs, random_samples(static_cast<size_t>(b.planes * (b.three_d ? 3 : 2)), 11));
    const auto g = random_values(fs.idx.size(), 12);
    std::vector<double> want(static_cast<size_t>(b.planes * in_plane(b)), 0.0);
    for (size_t o = 0; o < fs.idx.size(); ++o) want[(o / out_plane(b)) * in_plane(b) + fs.idx[o]] += g[o];
    EXPECT_EQ(run_backward<double>(b, g, fs.idx), want);
  }
  // bf16 adds round at each step, in output order (CPU torch 2.13: 1 + 15 x 0.0039 stays 1 in bf16).
  const auto c = args2d(1, 8, 8, 4, 4, 2, 2, DType::kBFloat16);
  std::vector<double> g(16, 0.0039);
  g[0] = 1.0;
  const auto gi = run_backward<BFloat16>(c, g, std::vector<int64_t>(16, 0));
  EXPECT_EQ(static_cast<float>(gi[0]), 1.0f);
  for (size_t i = 1; i < gi.size(); ++i) EXPECT_EQ(static_cast<float>(gi[i]), 0.0f);
}

TEST(FractionalMaxPool, BadIndicesAndWindowsAreKernelErrors) {
  const auto a = args2d(1, 3, 3, 2, 2, 2, 2);
  DeviceBuf<double> g{std::vector<double>(4, 1.0)}, gi{std::vector<double>(9)};
  DeviceBuf<int64_t> idx{std::vector<int64_t>{0, 1, 2, 99}};
  ASSERT_OK(npu_kernels::fractional_max_pool_backward(nullptr, a, g.ptr, idx.ptr, gi.ptr));
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
  std::string msg = npu_sim::last_error_message();
  EXPECT_NE(msg.find("fractional_max_pool2d_backward(): index 99 of plane 0 is out of bounds"), std::string::npos)
      << msg;
  ASSERT_OK(npu_sim::device_restart(0));
  // A NaN sample places no window (CPU: undefined int conversion, then its internal assert).
  const auto b = args2d(1, 9, 9, 3, 3, 2, 2);
  DeviceBuf<double> x{random_values(81, 1)}, s{std::vector<double>{kNaN, 0.5}}, out{std::vector<double>(9)};
  DeviceBuf<int64_t> ix{std::vector<int64_t>(9)};
  ASSERT_OK(npu_kernels::fractional_max_pool_forward(nullptr, b, x.ptr, s.ptr, out.ptr, ix.ptr));
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
  msg = npu_sim::last_error_message();
  EXPECT_NE(msg.find("fractional_max_pool2d(): random sample nan gives no window start along width"), std::string::npos)
      << msg;
  ASSERT_OK(npu_sim::device_restart(0));
  // bf16 rounding pushes a width window past the input (CPU torch 2.13: "w2 >= 0 && w2 < inputW INTERNAL ASSERT
  // FAILED" for W 166, kernel 3, output 162, sample 0.5390625); float32 places it inside.
  const auto c = args2d(1, 1, 166, 1, 162, 1, 3, DType::kBFloat16);
  DeviceBuf<BFloat16> xb{std::vector<BFloat16>(166, BFloat16(0.0f))},
      sb{std::vector<BFloat16>{BFloat16(0.5390625f), BFloat16(0.0f)}}, ob{std::vector<BFloat16>(162)};
  DeviceBuf<int64_t> ib{std::vector<int64_t>(162)};
  ASSERT_OK(npu_kernels::fractional_max_pool_forward(nullptr, c, xb.ptr, sb.ptr, ob.ptr, ib.ptr));
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
  msg = npu_sim::last_error_message();
  EXPECT_NE(msg.find("fractional_max_pool2d(): random sample 0.539062 places window"), std::string::npos) << msg;
  ASSERT_OK(npu_sim::device_restart(0));
  auto c32 = c;
  c32.dtype = DType::kFloat32;
  run_forward<float>(c32, std::vector<double>(166, 0.0), {0.5390625, 0.0});
}

TEST(FractionalMaxPool, BadArgumentsAreRefused) {
  const auto bad = npu_sim::Status::kInvalidValue;
  DeviceBuf<double> x{std::vector<double>(81)}, s{std::vector<double>(2)}, out{std::vector<double>(9)};
  DeviceBuf<int64_t> ix{std::vector<int64_t>(9)};
  auto fwd = [&](const FractionalPoolArgs& a) {
    return npu_kernels::fractional_max_pool_forward(nullptr, a, x.ptr, s.ptr, out.ptr, ix.ptr);
  };
  EXPECT_EQ(fwd(args2d(1, 9, 9, 3, 3, 2, 2, DType::kInt32)), bad);
  EXPECT_EQ(fwd(args2d(1, 9, 9, 3, 3, 0, 2)), bad);       // kernel 0
  EXPECT_EQ(fwd(args2d(1, 9, 9, 9, 3, 2, 2)), bad);       // out + k - 1 > in
  EXPECT_EQ(fwd(args2d(-1, 9, 9, 3, 3, 2, 2)), bad);
  auto a = args2d(1, 9, 9, 3, 3, 2, 2);
  a.in_t = 2;  // depth without three_d
  EXPECT_EQ(fwd(a), bad);
  EXPECT_EQ(npu_kernels::fractional_max_pool_forward(nullptr, args2d(1, 9, 9, 3, 3, 2, 2), x.ptr, nullptr, out.ptr,
                                                     ix.ptr),
            bad);
  EXPECT_EQ(npu_kernels::fractional_max_pool_backward(nullptr, args2d(1, 9, 9, 3, 3, 2, 2), out.ptr, ix.ptr, nullptr),
            bad);
  EXPECT_EQ(npu_kernels::fractional_max_pool_backward(nullptr, args2d(1, 9, 9, 3, 3, 2, 2, DType::kInt64), out.ptr,
                                                      ix.ptr, x.ptr),
            bad);
  ASSERT_OK(npu_sim::device_synchronize(0));
}

TEST(FractionalMaxPool, ConcurrentStreamsAgree) {
  const auto a = args2d(12, 31, 29, 17, 15, 3, 3);
  const auto b = args3d(6, 9, 10, 11, 5, 6, 7, 2, 3, 3, DType::kFloat32);
  const auto xa = random_values(static_cast<size_t>(a.planes * in_plane(a)), 20, true);
  const auto xb = random_values(static_cast<size_t>(b.planes * in_plane(b)), 21);
  const auto sa = random_samples(24, 22), sb = random_samples(18, 23);
  const auto fa = run_forward<double>(a, xa, sa);
  const auto fb = run_forward<float>(b, xb, sb);
  const auto ga = random_values(fa.idx.size(), 24);
  const auto want_a = run_backward<double>(a, ga, fa.idx);
  npu_sim::Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s1));
  ASSERT_OK(npu_sim::stream_create(0, &s2));
  std::vector<double> got_a;
  Pooled<float> got_b;
  std::thread t1([&] {
    for (int i = 0; i < 10; ++i) got_a = run_backward<double>(a, ga, run_forward<double>(a, xa, sa, s1).idx, s1);
  });
  std::thread t2([&] {
    for (int i = 0; i < 10; ++i) got_b = run_forward<float>(b, xb, sb, s2);
  });
  t1.join();
  t2.join();
  EXPECT_EQ(got_a, want_a);
  EXPECT_EQ(got_b.out, fb.out);
  EXPECT_EQ(got_b.idx, fb.idx);
  ASSERT_OK(npu_sim::stream_destroy(s1));
  ASSERT_OK(npu_sim::stream_destroy(s2));
}

}  // namespace
