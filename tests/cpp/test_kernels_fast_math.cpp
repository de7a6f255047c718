// gtests of the vectorisable float math (kernels/src/fast_math.h) against double-precision libm: error
// bounds in ulp over dense sweeps, the special values, overflow/underflow edges, subnormal results.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "../../kernels/src/fast_math.h"

namespace {

using npu_kernels::detail::fast_erf;
using npu_kernels::detail::fast_exp;
using npu_kernels::detail::fast_log;
using npu_kernels::detail::fast_log1p;
using npu_kernels::detail::fast_sigmoid;
using npu_kernels::detail::fast_sincos_turns;
using npu_kernels::detail::fast_tanh;
using npu_kernels::detail::gelu_erf;
using npu_kernels::detail::softplus_exact;

// Distance in float ulps between a float result and the double reference rounded to float.
double ulps(float got, double want) {
  const float w = static_cast<float>(want);
  if (got == w) return 0;
  const double ulp = std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity()) - std::fabs(w);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

template <class F, class R>
double max_ulps(F f, R ref, float lo, float hi, int steps) {
  double worst = 0;
  for (int i = 0; i <= steps; ++i) {
    const float x = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(steps);
    const double want = ref(static_cast<double>(x));
    if (std::fabs(want) < std::numeric_limits<float>::min()) continue;  // subnormal results checked apart
    worst = std::max(worst, ulps(f(x), want));
  }
  return worst;
}

TEST(FastMath, ExpWithinThreeUlpsOverTheNormalRange) {
  EXPECT_LE(max_ulps([](float x) { return fast_exp(x); }, [](double x) { return std::exp(x); }, -87.f, 88.7f, 2000000), 3.0);
  EXPECT_LE(max_ulps([](float x) { return fast_exp(x); }, [](double x) { return std::exp(x); }, -1.f, 1.f, 200000), 3.0);
}

TEST(FastMath, ExpEdges) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fast_exp(0.0f), 1.0f);
  EXPECT_EQ(fast_exp(-inf), 0.0f);
  EXPECT_EQ(fast_exp(inf), inf);
  EXPECT_TRUE(std::isnan(fast_exp(std::nanf(""))));
  EXPECT_EQ(fast_exp(89.0f), inf);                     // above ln(FLT_MAX)
  EXPECT_TRUE(std::isfinite(fast_exp(88.72f)));         // 2^128 range must not overflow early
  EXPECT_LE(ulps(fast_exp(88.72f), std::exp(static_cast<double>(88.72f))), 3.0);
  const float sub = fast_exp(-100.0f);                  // a subnormal result, as libm gives
  EXPECT_GT(sub, 0.0f);
  EXPECT_LT(sub, std::numeric_limits<float>::min());
  EXPECT_LE(std::fabs(sub - static_cast<float>(std::exp(-100.0))), std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(fast_exp(-110.0f), 0.0f);
}

TEST(FastMath, SigmoidWithinThreeUlpsIncludingTheSubnormalTail) {
  const auto ref = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  EXPECT_LE(max_ulps([](float x) { return fast_sigmoid(x); }, ref, -87.f, 30.f, 2000000), 3.0);
  EXPECT_LE(max_ulps([](float x) { return fast_sigmoid(x); }, ref, -1e-3f, 1e-3f, 20000), 3.0);
  // x < -87.3: exp(-x) overflows float, the result is subnormal; it must still be correctly rounded-ish.
  for (float x = -103.0f; x < -87.0f; x += 0.01f) {
    const float want = static_cast<float>(ref(x));
    EXPECT_LE(std::fabs(fast_sigmoid(x) - want), std::numeric_limits<float>::denorm_min()) << x;
  }
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fast_sigmoid(-105.0f), 0.0f);
  EXPECT_EQ(fast_sigmoid(-inf), 0.0f);
  EXPECT_EQ(fast_sigmoid(inf), 1.0f);
  EXPECT_EQ(fast_sigmoid(20.0f), 1.0f);
  EXPECT_EQ(fast_sigmoid(0.0f), 0.5f);
  EXPECT_EQ(fast_sigmoid(-0.0f), 0.5f);
  EXPECT_TRUE(std::isnan(fast_sigmoid(std::nanf(""))));
}

TEST(FastMath, TanhWithinThreeUlps) {
  EXPECT_LE(max_ulps([](float x) { return fast_tanh(x); }, [](double x) { return std::tanh(x); }, -10.f, 10.f, 2000000), 3.0);
  EXPECT_LE(max_ulps([](float x) { return fast_tanh(x); }, [](double x) { return std::tanh(x); }, -1e-3f, 1e-3f, 20000), 3.0);
  EXPECT_EQ(fast_tanh(100.0f), 1.0f);
  EXPECT_EQ(fast_tanh(-100.0f), -1.0f);
  EXPECT_EQ(fast_tanh(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_TRUE(std::isnan(fast_tanh(std::nanf(""))));
  EXPECT_TRUE(std::signbit(fast_tanh(-0.0f)));
}

TEST(FastMath, ErfWithinTwoAndAHalfUlps) {
  EXPECT_LE(max_ulps([](float x) { return fast_erf(x); }, [](double x) { return std::erf(x); }, -6.f, 6.f, 2000000), 2.5);
  EXPECT_LE(max_ulps([](float x) { return fast_erf(x); }, [](double x) { return std::erf(x); }, -1e-3f, 1e-3f, 20000), 2.5);
  // both sides of the seam between the two polynomials and of the saturation point, densely
  EXPECT_LE(max_ulps([](float x) { return fast_erf(x); }, [](double x) { return std::erf(x); }, 0.99f, 1.01f, 20000), 2.5);
  EXPECT_LE(max_ulps([](float x) { return fast_erf(x); }, [](double x) { return std::erf(x); }, 3.9f, 3.95f, 20000), 2.5);
  EXPECT_EQ(fast_erf(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(fast_erf(-std::numeric_limits<float>::infinity()), -1.0f);
  EXPECT_TRUE(std::isnan(fast_erf(std::nanf(""))));
  EXPECT_TRUE(std::signbit(fast_erf(-0.0f)));
  for (float x = 0; x < 8; x += 1e-4f) {  // a CDF built from it must not leave [0, 1]
    ASSERT_LE(fast_erf(x), 1.0f) << x;
    ASSERT_GE(fast_erf(-x), -1.0f) << x;
  }
}

// gelu(x) = (x + |x| erf(|x|/sqrt2)) / 2: the error is erf's absolute error scaled by |x|/2 (the cancellation
// for x < 0 is inherent, CPU PyTorch's 1 + erf(x/sqrt2) has it too) plus the rounding of the result.
TEST(FastMath, GeluErfMatchesTheDoubleFormula) {
  double worst = 0;
  for (int i = 0; i <= 2000000; ++i) {
    const float x = -8.f + 16.f * static_cast<float>(i) / 2000000.f;
    const double want = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    const double bound = 0.5 * std::fabs(x) * 2e-7 + 2 * std::fabs(want) * 6e-8 + 1e-30;  // erf: < 2.4 ulp of 1
    worst = std::max(worst, std::fabs(gelu_erf(x) - want) / bound);
  }
  EXPECT_LE(worst, 1.0);
  EXPECT_EQ(gelu_erf(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(gelu_erf(std::nanf(""))));
  EXPECT_EQ(gelu_erf(-20.0f), 0.0f);
  EXPECT_EQ(gelu_erf(0.0f), 0.0f);
}

}  // namespace

TEST(FastMath, LogWithinTwoUlpsIncludingSubnormalInputs) {
  auto f = [](float x) { return fast_log(x); };
  auto ref = [](double x) { return std::log(x); };
  EXPECT_LE(max_ulps(f, ref, 1e-3f, 10.f, 2000000), 2.0);
  EXPECT_LE(max_ulps(f, ref, 0.5f, 2.0f, 2000000), 2.0);  // around 1, where the result is small
  EXPECT_LE(max_ulps(f, ref, 1e30f, 3e38f, 200000), 2.0);
  double worst = 0;  // every binade from the smallest subnormal up
  for (float x = std::numeric_limits<float>::denorm_min(); x < 1e38f;
       x = std::max(x * 1.37f, std::nextafter(x, 1e38f)))  // (x * 1.37 rounds back to x at the bottom)
    worst = std::max(worst, ulps(fast_log(x), std::log(static_cast<double>(x))));
  EXPECT_LE(worst, 2.0);
  EXPECT_EQ(fast_log(1.0f), 0.0f);
  EXPECT_EQ(fast_log(0.0f), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(fast_log(-0.0f), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(fast_log(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fast_log(-1.0f)));
  EXPECT_TRUE(std::isnan(fast_log(-std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isnan(fast_log(std::nanf(""))));
}

TEST(FastMath, SinCosOfTurnsWithinTwoUlpsOfOneOverTheGridBoxMullerUses) {
  // u = k / 2^24 for k in [0, 2^24] (randn's angles; every 5th): sin and cos of 2 pi u within 2 ulps of 1 (the
  // error that matters where the result passes through 0), and each quadrant's signs exact
  double worst = 0;
  for (int64_t k = 0; k <= (int64_t{1} << 24); k += 5) {
    const float u = static_cast<float>(k) * 0x1.0p-24f;
    float sn, cs;
    fast_sincos_turns(u, sn, cs);
    const double th = 2.0 * M_PI * static_cast<double>(u);
    worst = std::max({worst, std::fabs(sn - std::sin(th)), std::fabs(cs - std::cos(th))});
  }
  EXPECT_LE(worst, 2 * 0x1.0p-24);
  for (float q : {0.f, 0.25f, 0.5f, 0.75f, 1.f}) {
    float sn, cs;
    fast_sincos_turns(q, sn, cs);
    EXPECT_NEAR(sn, std::sin(2 * M_PI * q), 1e-7) << q;
    EXPECT_NEAR(cs, std::cos(2 * M_PI * q), 1e-7) << q;
  }
  float sn, cs;
  fast_sincos_turns(0.125f, sn, cs);  // 45 degrees: both positive, equal
  EXPECT_NEAR(sn, cs, 1e-7);
  EXPECT_GT(sn, 0.f);
  fast_sincos_turns(0.625f, sn, cs);  // 225 degrees: both negative
  EXPECT_LT(sn, 0.f);
  EXPECT_LT(cs, 0.f);
}

TEST(FastMath, Log1pWithinThreeUlps) {
  auto f = [](float x) { return fast_log1p(x); };
  auto ref = [](double x) { return std::log1p(x); };
  EXPECT_LE(max_ulps(f, ref, -0.999f, 10.f, 2000000), 3.0);
  EXPECT_LE(max_ulps(f, ref, -1e-4f, 1e-4f, 200000), 3.0);  // tiny arguments: log1p(u) ~ u
  EXPECT_LE(max_ulps(f, ref, 1e10f, 1e38f, 200000), 3.0);
  EXPECT_EQ(fast_log1p(1e-30f), 1e-30f);
  EXPECT_EQ(fast_log1p(-1.0f), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(fast_log1p(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fast_log1p(-2.0f)));
  EXPECT_TRUE(std::isnan(fast_log1p(std::nanf(""))));
}

TEST(FastMath, SoftplusNeitherOverflowsNorLosesTheTail) {
  auto f = [](float x) { return softplus_exact(x); };
  auto ref = [](double x) { return std::log1p(std::exp(x)); };
  EXPECT_LE(max_ulps(f, ref, -80.f, 80.f, 2000000), 4.0);
  EXPECT_EQ(softplus_exact(200.0f), 200.0f);  // no exp overflow
  EXPECT_GT(softplus_exact(-100.0f), 0.0f);    // e^-100 = 3.7e-44, subnormal, not 0
  EXPECT_EQ(softplus_exact(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(softplus_exact(-std::numeric_limits<float>::infinity()), 0.0f);
}
