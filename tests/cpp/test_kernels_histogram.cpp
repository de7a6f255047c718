// gtests of the torch-free histogram kernel: the three bin selections against host loops, the closed last bin, NaN /
// inf / out-of-range elements skipped, weights, many blocks merged deterministically, float16, histogramdd's points
// (every coordinate binned on its own edges, a point outside in one coordinate skipped), bad arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "npu_kernels/histogram.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::BinSearch;
using npu_kernels::DType;
using npu_kernels::HistogramArgs;

template <typename T>
std::vector<T> run(BinSearch search, const std::vector<T>& x, const std::vector<T>& edges, const std::vector<T>* w,
                   DType dtype) {
  HistogramArgs a;
  a.dtype = dtype;
  a.numel = static_cast<int64_t>(x.size());
  a.dim_bins = {static_cast<int64_t>(edges.size()) - 1};
  a.search = search;
  const int64_t bins = a.total_bins();
  DeviceBuf<T> dx(x), de(edges), dh{std::vector<T>(static_cast<size_t>(bins), T(-1.0f))};
  DeviceBuf<T> dw(w ? *w : std::vector<T>{});
  DeviceBuf<double> scratch{std::vector<double>(static_cast<size_t>(npu_kernels::histogram_partials(a) * bins))};
  EXPECT_EQ(npu_kernels::histogram(nullptr, a, dx.ptr, w ? dw.ptr : nullptr, {de.ptr}, scratch.ptr, dh.ptr),
            npu_sim::Status::kSuccess);
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kSuccess) << npu_sim::last_error_message();
  return dh.read();
}

// Host reference by the definition: bin b holds edges[b] <= x < edges[b + 1], the last one edges[bins] too.
std::vector<double> host_histogram(const std::vector<double>& x, const std::vector<double>& edges,
                                   const std::vector<double>* w) {
  const size_t bins = edges.size() - 1;
  std::vector<double> h(bins, 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    for (size_t b = 0; b < bins; ++b) {
      const bool last = b + 1 == bins;
      if (x[i] >= edges[b] && (x[i] < edges[b + 1] || (last && x[i] == edges[b + 1]))) {
        h[b] += w ? (*w)[i] : 1.0;
        break;
      }
    }
  }
  return h;
}

std::vector<double> linspace(double lo, double hi, int64_t steps) {
  std::vector<double> e(static_cast<size_t>(steps));
  for (int64_t i = 0; i < steps; ++i) e[i] = lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(steps - 1);
  e.back() = hi;
  return e;
}

const double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();

TEST(Histogram, EverySearchMatchesTheDefinitionAwayFromEdges) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> u(-1.5, 2.5);
  std::vector<double> x(20000);
  for (auto& v : x) v = u(rng);
  x[0] = kNaN;
  x[1] = kInf;
  x[2] = -kInf;
  x[3] = 2.0;   // the right edge: the last bin
  x[4] = -1.0;  // the left edge: the first bin
  const auto edges = linspace(-1.0, 2.0, 8);  // 7 bins of width 3/7
  const auto want = host_histogram(x, edges, nullptr);
  EXPECT_EQ(run<double>(BinSearch::kLinear, x, edges, nullptr, DType::kFloat64), want);
  EXPECT_EQ(run<double>(BinSearch::kLinearLocalSearch, x, edges, nullptr, DType::kFloat64), want);
  EXPECT_EQ(run<double>(BinSearch::kBinarySearch, x, edges, nullptr, DType::kFloat64), want);
  // uneven edges: only the binary search reads them all
  const std::vector<double> uneven{-1.0, -0.9, 0.0, 0.05, 1.0, 2.5};
  EXPECT_EQ(run<double>(BinSearch::kBinarySearch, x, uneven, nullptr, DType::kFloat64),
            host_histogram(x, uneven, nullptr));
}

TEST(Histogram, WeightsAreSummedPerBinAcrossManyBlocks) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> x(50000), w(50000);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = u(rng);
    w[i] = u(rng) - 0.25;
  }
  const auto edges = linspace(0.0, 1.0, 11);
  const auto want = host_histogram(x, edges, &w);
  const auto got = run<double>(BinSearch::kLinearLocalSearch, x, edges, &w, DType::kFloat64);
  for (size_t b = 0; b < want.size(); ++b) EXPECT_NEAR(got[b], want[b], 1e-9) << "bin " << b;
  // the same call twice: the same bits (partials merged in block order)
  EXPECT_EQ(run<double>(BinSearch::kLinearLocalSearch, x, edges, &w, DType::kFloat64), got);
}

TEST(Histogram, Float32AndFloat16CountExactly) {
  std::vector<double> x;
  for (int i = 0; i < 9000; ++i) x.push_back((i % 97) / 96.0);  // in [0, 1], 1.0 included
  const auto edges = linspace(0.0, 1.0, 5);
  const auto want = host_histogram(x, edges, nullptr);
  const auto f32 = run<float>(BinSearch::kLinear, std::vector<float>(x.begin(), x.end()),
                              std::vector<float>(edges.begin(), edges.end()), nullptr, DType::kFloat32);
  double total = 0;
  for (size_t b = 0; b < want.size(); ++b) {
    EXPECT_EQ(f32[b], want[b]) << "bin " << b;
    total += want[b];
  }
  EXPECT_EQ(total, 9000.0);
  std::vector<npu_kernels::Half> xh, eh;
  for (double v : x) xh.emplace_back(static_cast<float>(v));
  for (double v : edges) eh.emplace_back(static_cast<float>(v));
  const auto f16 = run<npu_kernels::Half>(BinSearch::kLinear, xh, eh, nullptr, DType::kFloat16);
  double total16 = 0;
  for (auto v : f16) total16 += static_cast<float>(v);
  EXPECT_EQ(total16, 9000.0);  // every element counted once (counts rounded to float16 once: all below 2048 here)
}

// Three coordinates with 3, 4 and 2 bins (two searches, uneven edges on one): the row-major 24-bin histogram of the
// per-coordinate definition, a point counted only when all three coordinates fall inside.
TEST(Histogram, PointsFallInTheBinsOfAllTheirCoordinates) {
  const std::vector<std::vector<double>> edges = {linspace(-1.0, 2.0, 4), {-2.0, -0.5, 0.0, 0.1, 3.0},
                                                  linspace(0, 1, 3)};
  const std::vector<int64_t> strides = {8, 2, 1};
  std::mt19937 rng(4);
  std::uniform_real_distribution<double> u(-2.5, 3.5);
  const int64_t n = 30000;
  std::vector<double> x(static_cast<size_t>(n * 3)), w(static_cast<size_t>(n));
  for (auto& v : x) v = u(rng);
  for (auto& v : w) v = u(rng);
  x[1] = kNaN;
  x[3] = 2.0;  // a right edge
  std::vector<double> want(24, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t at = 0;
    bool inside = true;
    for (int d = 0; d < 3 && inside; ++d) {
      const auto h = host_histogram({x[i * 3 + d]}, edges[d], nullptr);
      const auto bin = std::find(h.begin(), h.end(), 1.0);
      inside = bin != h.end();
      if (inside) at += (bin - h.begin()) * strides[d];
    }
    if (inside) want[at] += w[i];
  }
  for (BinSearch search : {BinSearch::kLinearLocalSearch, BinSearch::kBinarySearch}) {
    HistogramArgs a;
    a.dtype = DType::kFloat64;
    a.numel = n;
    a.dim_bins = {3, 4, 2};
    a.search = search;
    EXPECT_EQ(a.total_bins(), 24);
    DeviceBuf<double> dx(x), dw(w), e0(edges[0]), e1(edges[1]), e2(edges[2]), dh{std::vector<double>(24, -1.0)};
    DeviceBuf<double> scratch{std::vector<double>(static_cast<size_t>(npu_kernels::histogram_partials(a) * 24))};
    ASSERT_OK(npu_kernels::histogram(nullptr, a, dx.ptr, dw.ptr, {e0.ptr, e1.ptr, e2.ptr}, scratch.ptr, dh.ptr));
    ASSERT_OK(npu_sim::device_synchronize(0));
    const auto got = dh.read();
    // the linear search's bin arithmetic is exact on these edges except coordinate 1's uneven ones
    if (search == BinSearch::kBinarySearch) {
      for (size_t b = 0; b < 24; ++b) EXPECT_NEAR(got[b], want[b], 1e-9) << "bin " << b;
    }
    double total = 0, want_total = 0;
    for (size_t b = 0; b < 24; ++b) total += got[b], want_total += want[b];
    EXPECT_NEAR(total, want_total, 1e-8);  // the same points counted, whatever the search
  }
}

TEST(Histogram, BadArgumentsAreRefused) {
  DeviceBuf<double> buf{std::vector<double>(8, 0.0)};
  const auto refused = [&](const HistogramArgs& a, const void* input, const std::vector<const void*>& edges) {
    return npu_kernels::histogram(nullptr, a, input, nullptr, edges, buf.ptr, buf.ptr) == npu_sim::Status::kInvalidValue;
  };
  HistogramArgs a;
  a.dtype = DType::kFloat64;
  a.numel = 4;
  a.dim_bins = {0};
  EXPECT_TRUE(refused(a, buf.ptr, {buf.ptr}));  // no bins
  a.dim_bins = {2};
  a.dtype = DType::kInt64;
  EXPECT_TRUE(refused(a, buf.ptr, {buf.ptr}));  // not a floating dtype
  a.dtype = DType::kFloat64;
  EXPECT_TRUE(refused(a, nullptr, {buf.ptr}));  // no input
  a.dim_bins = {};
  EXPECT_TRUE(refused(a, buf.ptr, {}));  // no coordinates
  a.dim_bins = {2, 2};
  EXPECT_TRUE(refused(a, buf.ptr, {buf.ptr}));  // edges for one coordinate of two
  EXPECT_TRUE(refused(a, buf.ptr, {buf.ptr, nullptr}));
  a.dim_bins = {2, 0};
  EXPECT_TRUE(refused(a, buf.ptr, {buf.ptr, buf.ptr}));
  ASSERT_OK(npu_sim::device_synchronize(0));
}

}  // namespace
