// gtests of the Vector unit's 16-lane row math (kernels/src/row_math.h), compiled for the kernels' ISA: exp16 is
// fast_exp's arithmetic (within an ulp: the compiler may contract fast_exp's scalar form into other FMAs; subnormal
// results, the edges and NaN exactly), exp_sub_sum and lane_max read exactly the row (short rows and masked
// tails), skip what they must (a NaN never wins the max) and sum as a double would.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "../../kernels/src/row_math.h"

namespace {

using npu_kernels::detail::exp16;
using npu_kernels::detail::exp_sub_sum;
using npu_kernels::detail::fast_exp;
using npu_kernels::detail::lane_max;
using npu_kernels::detail::v16sf;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Within an ulp (exactly where the result is 0, subnormal or not finite), or both NaN.
::testing::AssertionResult same(float got, float want, float x) {
  if (bits(got) == bits(want) || (std::isnan(got) && std::isnan(want))) return ::testing::AssertionSuccess();
  const bool exact = !std::isnormal(want) || !std::isnormal(got);
  const int64_t d = static_cast<int64_t>(bits(got)) - static_cast<int64_t>(bits(want));
  if (!exact && (d == 1 || d == -1)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "x = " << x << ": " << got << " against fast_exp's " << want;
}

void check_block(const float (&xs)[16]) {
  v16sf v;
  std::memcpy(&v, xs, sizeof(v));
  const v16sf r = exp16(v);
  for (int j = 0; j < 16; ++j) ASSERT_TRUE(same(r[j], fast_exp(xs[j]), xs[j]));
}

TEST(RowMath, Exp16IsFastExp) {
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[16] = {-inf, inf, std::nanf(""), -104.0f, -103.97f, -87.0f, -87.0001f, -86.9999f,
                              88.7f, 88.8f, 88.9f, 0.0f, -0.0f, 1e-30f, -1e-30f, -150.0f};
  check_block(specials);
  // a dense sweep over the whole range, the subnormal results' range [-104, -87) in every other block
  std::mt19937 g(3);
  std::uniform_real_distribution<float> wide(-120.0f, 100.0f), tail(-104.5f, -86.5f);
  for (int it = 0; it < 20000; ++it) {
    float xs[16];
    for (float& x : xs) x = it % 2 ? tail(g) : wide(g);
    check_block(xs);
  }
}

TEST(RowMath, ExpSubSumReadsAndWritesExactlyTheRow) {
  std::mt19937 g(5);
  std::normal_distribution<float> d(0.0f, 3.0f);
  const float sentinel = 12345.0f;
  for (int64_t n = 0; n <= 70; ++n) {
    for (bool masked : {false, true}) {
      std::vector<float> x(n + 16, sentinel), e(n + 16, sentinel);
      for (int64_t i = 0; i < n; ++i) x[i] = masked && i % 3 == 0 ? -std::numeric_limits<float>::infinity() : d(g);
      const float m = 1.5f, scale = 0.7f;
      const float sum = exp_sub_sum(x.data(), e.data(), n, m, scale);
      double want = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float v = fast_exp(x[i] * scale - m);
        EXPECT_NEAR(e[i], v, 1e-6f * v) << "n " << n << " i " << i;
        want += v;
      }
      for (int64_t i = n; i < n + 16; ++i) EXPECT_EQ(e[i], sentinel) << "n " << n << ": wrote past the row";
      EXPECT_NEAR(sum, want, 1e-6 * want + 1e-30) << "n " << n;
      // in place, scale 1: the argument is x - m exactly
      std::vector<float> y(x);
      exp_sub_sum(y.data(), y.data(), n, m);
      for (int64_t i = 0; i < n; ++i) EXPECT_TRUE(same(y[i], fast_exp(x[i] - m), x[i]));
    }
  }
}

TEST(RowMath, LaneMaxSkipsNaNAndStopsAtTheRowEnd) {
  std::mt19937 g(7);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (int64_t n = 0; n <= 70; ++n) {
    std::vector<float> x(n + 16, std::numeric_limits<float>::infinity());  // past the row: must not be read
    float want = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < n; ++i) {
      x[i] = i % 5 == 2 ? std::nanf("") : d(g);
      if (!std::isnan(x[i])) want = std::max(want, x[i]);
    }
    EXPECT_EQ(lane_max(x.data(), n), want) << "n " << n;
  }
}

}  // namespace
