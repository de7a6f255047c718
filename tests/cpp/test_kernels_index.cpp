// gtests of the indexing/RNG kernels (torch-free): Philox-4x32-10 against the Random123 known-answer
// vectors and its counter layout; the rejection samplers (replay, two streams, moments); the along-dim gather/scatter kernel against loops, including the
// device-side bounds check surfacing as kKernelError at the sync.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "npu_kernels/index.h"
#include "npu_kernels/random.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::DType;
using npu_kernels::TensorDesc;

TensorDesc desc(void* data, DType t, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  TensorDesc d;
  d.data = data;
  d.dtype = t;
  d.ndim = static_cast<int>(sizes.size());
  for (int i = 0; i < d.ndim; ++i) {
    d.sizes[i] = sizes[i];
    d.strides[i] = strides[i];
  }
  return d;
}

TEST(Philox, KnownAnswerVectors) {
  using A4 = std::array<uint32_t, 4>;
  EXPECT_EQ(npu_kernels::philox4x32_10({0, 0, 0, 0}, {0, 0}), (A4{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(npu_kernels::philox4x32_10({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}),
            (A4{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(npu_kernels::philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}),
            (A4{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(Philox, CountersAreDistinctAcrossElementsAndOffsets) {
  std::set<std::array<uint32_t, 4>> seen;
  for (uint64_t off : {0ull, 4ull, 1ull << 40}) {
    for (uint64_t i = 0; i < 1000; ++i) seen.insert(npu_kernels::philox_draw({42, off}, i));
  }
  EXPECT_EQ(seen.size(), 3000u);
  EXPECT_NE(npu_kernels::philox_draw({1, 0}, 0), npu_kernels::philox_draw({2, 0}, 0));
}

TEST(Random, UniformFillIsReproducibleAndInRange) {
  const int64_t n = 100000;
  DeviceBuf<float> a{std::vector<float>(n)}, b{std::vector<float>(n)};
  npu_kernels::RandomArgs args;
  args.a = -1.0;
  args.b = 1.0;
  ASSERT_OK(npu_kernels::random_fill(nullptr, desc(a.ptr, DType::kFloat32, {n}, {1}), args, {7, 8}));
  ASSERT_OK(npu_kernels::random_fill(nullptr, desc(b.ptr, DType::kFloat32, {n}, {1}), args, {7, 8}));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto ha = a.read(), hb = b.read();
  EXPECT_EQ(ha, hb);
  double sum = 0;
  for (float v : ha) {
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    sum += v;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.02);
}

// The rejection samplers draw a variable number of words per element from the element's own sequence: the same
// (seed, offset) replays them whatever the grid, two streams sampling at once do not disturb each other, and
// the moments are Gamma's / Poisson's.
TEST(Random, RejectionSamplersReplayAcrossStreamsWithTheirMoments) {
  const int64_t n = 200000;
  DeviceBuf<double> alpha{std::vector<double>(n, 2.5)}, rate{std::vector<double>(n, 12.0)};
  DeviceBuf<double> g1{std::vector<double>(n)}, g2{std::vector<double>(n)}, p1{std::vector<double>(n)},
      p2{std::vector<double>(n)};
  npu_sim::Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s1));
  ASSERT_OK(npu_sim::stream_create(0, &s2));
  auto d = [&](double* p) { return desc(p, DType::kFloat64, {n}, {1}); };
  ASSERT_OK(npu_kernels::standard_gamma(s1, d(g1.ptr), d(alpha.ptr), {3, 16}));
  ASSERT_OK(npu_kernels::poisson(s2, d(p1.ptr), d(rate.ptr), {3, 20}));
  ASSERT_OK(npu_kernels::standard_gamma(s2, d(g2.ptr), d(alpha.ptr), {3, 16}));
  ASSERT_OK(npu_kernels::poisson(s1, d(p2.ptr), d(rate.ptr), {3, 20}));
  ASSERT_OK(npu_sim::device_synchronize(0));
  EXPECT_EQ(g1.read(), g2.read());
  EXPECT_EQ(p1.read(), p2.read());
  auto moments = [](const std::vector<double>& v) {
    double m = 0, q = 0;
    for (double x : v) m += x;
    m /= static_cast<double>(v.size());
    for (double x : v) q += (x - m) * (x - m);
    return std::pair<double, double>{m, q / static_cast<double>(v.size() - 1)};
  };
  const auto [gm, gv] = moments(g1.read());
  EXPECT_NEAR(gm, 2.5, 6 * std::sqrt(2.5 / n));
  EXPECT_NEAR(gv, 2.5, 0.05 * 2.5);
  const auto [pm, pv] = moments(p1.read());
  EXPECT_NEAR(pm, 12.0, 6 * std::sqrt(12.0 / n));
  EXPECT_NEAR(pv, 12.0, 0.05 * 12.0);
  for (double x : p1.read()) ASSERT_EQ(x, std::floor(x));
  ASSERT_OK(npu_sim::stream_destroy(s1));
  ASSERT_OK(npu_sim::stream_destroy(s2));
}

TEST(IndexAlongDim, GatherAndScatterAddMatchLoops) {
  // self 3x4 (row-major), index 3x2 along dim 1
  std::vector<float> self = {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};
  std::vector<int64_t> index = {3, 0, 1, 1, 2, 3};
  DeviceBuf<float> s(self), out(std::vector<float>(6));
  DeviceBuf<int64_t> ix(index);
  npu_kernels::IndexAlongDim g;
  g.op = "gather";
  g.dim = 1;
  g.dst = desc(out.ptr, DType::kFloat32, {3, 2}, {2, 1});
  g.src = desc(s.ptr, DType::kFloat32, {3, 2}, {4, 0});
  g.index = desc(ix.ptr, DType::kInt64, {3, 2}, {2, 1});
  g.dim_size = 4;
  g.dim_stride = 1;
  ASSERT_OK(npu_kernels::index_along_dim(nullptr, g));
  ASSERT_OK(npu_sim::device_synchronize(0));
  EXPECT_EQ(out.read(), (std::vector<float>{3, 0, 11, 11, 22, 23}));

  // scatter_add of ones with a duplicate index (row 1 hits column 1 twice): no lost updates
  DeviceBuf<float> dst(std::vector<float>(12, 0.0f)), ones(std::vector<float>(6, 1.0f));
  npu_kernels::IndexAlongDim sa = g;
  sa.op = "scatter_add";
  sa.scatter = true;
  sa.reduce = npu_kernels::IndexReduce::kAdd;
  sa.dst = desc(dst.ptr, DType::kFloat32, {3, 2}, {4, 0});
  sa.src = desc(ones.ptr, DType::kFloat32, {3, 2}, {2, 1});
  ASSERT_OK(npu_kernels::index_along_dim(nullptr, sa));
  ASSERT_OK(npu_sim::device_synchronize(0));
  EXPECT_EQ(dst.read(), (std::vector<float>{1, 0, 0, 1, 0, 2, 0, 0, 0, 0, 1, 1}));
}

TEST(IndexAlongDim, OutOfRangeIndexIsAKernelErrorAtSync) {
  DeviceBuf<float> s(std::vector<float>(5, 1.0f)), out(std::vector<float>(2));
  DeviceBuf<int64_t> ix(std::vector<int64_t>{1, 7});
  npu_kernels::IndexAlongDim g;
  g.op = "index_select";
  g.dst = desc(out.ptr, DType::kFloat32, {2}, {1});
  g.src = desc(s.ptr, DType::kFloat32, {2}, {0});
  g.index = desc(ix.ptr, DType::kInt64, {2}, {1});
  g.dim_size = 5;
  g.dim_stride = 1;
  ASSERT_OK(npu_kernels::index_along_dim(nullptr, g));
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
  const std::string msg = npu_sim::last_error_message();
  EXPECT_NE(msg.find("index_select(): index 7 is out of bounds for dimension 0 with size 5"), std::string::npos) << msg;
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);  // sticky until acknowledged
  ASSERT_OK(npu_sim::device_restart(0));
  ASSERT_OK(npu_sim::device_synchronize(0));
}

}  // namespace
