// gtests of the torch-free margin-loss kernels (multi_margin_loss, multilabel_margin_loss, forward and backward):
// against host loops in CPU's order for float32 / float64, every reduction, p and weight; literal values from CPU
// torch 2.13; NaN, 1-row and empty batches; out-of-range targets and is_target as stream errors with CPU's text;
// bad arguments; two streams at once.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "npu_kernels/margin_loss.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::DType;
using npu_kernels::MultilabelMarginArgs;
using npu_kernels::MultiMarginArgs;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <typename T>
constexpr DType dtype_of() {
  return std::is_same_v<T, float> ? DType::kFloat32 : DType::kFloat64;
}

void sync(npu_sim::Stream s) {
  EXPECT_EQ(s ? npu_sim::stream_synchronize(s) : npu_sim::device_synchronize(0), npu_sim::Status::kSuccess)
      << npu_sim::last_error_message();
}

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

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// ---- host references: the definitions, looped in CPU's order ----

template <typename T>
std::vector<T> host_multi_margin(const std::vector<T>& x, const std::vector<int64_t>& t, const std::vector<T>* w,
                                 int64_t n, int64_t c, int p, double margin_d, int reduction) {
  const T margin = static_cast<T>(margin_d);
  std::vector<T> rows;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t y = t[r];
    T s = 0;
    for (int64_t d = 0; d < c; ++d) {
      if (d == y) continue;
      const T z = margin - x[r * c + y] + x[r * c + d];
      if (z > 0) s += (p == 1 ? z : z * z) * (w ? (*w)[y] : T(1));
    }
    rows.push_back(s / static_cast<T>(c));
  }
  if (reduction == 0) return rows;
  double acc = 0;
  for (T v : rows) acc += v;
  return {static_cast<T>(reduction == 1 ? acc / static_cast<double>(n) : acc)};
}

template <typename T>
std::vector<T> host_multi_margin_backward(const std::vector<T>& go, const std::vector<T>& x,
                                          const std::vector<int64_t>& t, const std::vector<T>* w, int64_t n,
                                          int64_t c, int p, double margin_d, int reduction) {
  const T margin = static_cast<T>(margin_d);
  const T g = static_cast<T>(reduction == 1 ? 1. / static_cast<double>(n * c) : 1. / static_cast<double>(c));
  std::vector<T> gi(static_cast<size_t>(n * c));
  for (int64_t r = 0; r < n; ++r) {
    const int64_t y = t[r];
    T gy = 0;
    for (int64_t d = 0; d < c; ++d) {
      if (d == y) continue;
      const T z = margin - x[r * c + y] + x[r * c + d];
      gi[r * c + d] = 0;
      if (z > 0) {
        const T h = (p == 1 ? g : T(2) * g * z) * (w ? (*w)[y] : T(1));
        gi[r * c + d] = h;
        gy -= h;
      }
    }
    gi[r * c + y] = gy;
    for (int64_t d = 0; d < c; ++d) gi[r * c + d] *= reduction == 0 ? go[r] : go[0];
  }
  return gi;
}

template <typename T>
std::vector<T> host_multilabel(const std::vector<T>& x, const std::vector<int64_t>& t, int64_t n, int64_t c,
                               int reduction, std::vector<T>* is_target) {
  is_target->assign(static_cast<size_t>(n * c), T(0));
  std::vector<T> rows;
  for (int64_t r = 0; r < n; ++r) {
    int64_t labels = 0;
    while (labels < c && t[r * c + labels] >= 0) ++labels;
    for (int64_t k = 0; k < labels; ++k) (*is_target)[r * c + t[r * c + k]] = 1;
    double s = 0;
    for (int64_t k = 0; k < labels; ++k) {
      for (int64_t d = 0; d < c; ++d) {
        if ((*is_target)[r * c + d] != 0) continue;
        const T z = T(1) - x[r * c + t[r * c + k]] + x[r * c + d];
        if (z > 0) s += z;
      }
    }
    rows.push_back(static_cast<T>(s));
  }
  if (reduction == 0) {
    for (T& v : rows) v /= static_cast<T>(c);
    return rows;
  }
  double acc = 0;
  for (T v : rows) acc += v;
  acc /= static_cast<double>(c);
  if (reduction == 1) acc /= static_cast<double>(n);
  return {static_cast<T>(acc)};
}

template <typename T>
std::vector<T> host_multilabel_backward(const std::vector<T>& go, const std::vector<T>& x,
                                        const std::vector<int64_t>& t, const std::vector<T>& is_target, int64_t n,
                                        int64_t c, int reduction) {
  const T g = static_cast<T>(reduction == 1 ? 1. / static_cast<double>(n * c) : 1. / static_cast<double>(c));
  std::vector<T> gi(static_cast<size_t>(n * c), T(0));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t k = 0; k < c && t[r * c + k] >= 0; ++k) {
      const int64_t y = t[r * c + k];
      for (int64_t d = 0; d < c; ++d) {
        if (is_target[r * c + d] != 0) continue;
        if (T(1) - x[r * c + y] + x[r * c + d] > 0) {
          gi[r * c + y] -= g;
          gi[r * c + d] += g;
        }
      }
    }
    for (int64_t d = 0; d < c; ++d) gi[r * c + d] *= reduction == 0 ? go[r] : go[0];
  }
  return gi;
}

// ---- device runs ----

template <typename T>
std::vector<T> run_mm(const MultiMarginArgs& a, const std::vector<T>& x, const std::vector<int64_t>& t,
                      const std::vector<T>* w, npu_sim::Stream s = nullptr) {
  DeviceBuf<T> dx(x), dw(w ? *w : std::vector<T>{}),
      out{std::vector<T>(a.reduction == 0 ? static_cast<size_t>(a.nframe) : 1, T(-7))};
  DeviceBuf<int64_t> dt(t);
  EXPECT_EQ(npu_kernels::multi_margin_loss(s, a, dx.ptr, dt.ptr, w ? dw.ptr : nullptr, out.ptr),
            npu_sim::Status::kSuccess);
  sync(s);
  return out.read();
}

template <typename T>
std::vector<T> run_mm_backward(const MultiMarginArgs& a, const std::vector<T>& go, const std::vector<T>& x,
                               const std::vector<int64_t>& t, const std::vector<T>* w, npu_sim::Stream s = nullptr) {
  DeviceBuf<T> dg(go), dx(x), dw(w ? *w : std::vector<T>{}), out{std::vector<T>(x.size(), T(-7))};
  DeviceBuf<int64_t> dt(t);
  EXPECT_EQ(npu_kernels::multi_margin_loss_backward(s, a, dg.ptr, dx.ptr, dt.ptr, w ? dw.ptr : nullptr, out.ptr),
            npu_sim::Status::kSuccess);
  sync(s);
  return out.read();
}

template <typename T>
std::pair<std::vector<T>, std::vector<T>> run_ml(const MultilabelMarginArgs& a, const std::vector<T>& x,
                                                 const std::vector<int64_t>& t, npu_sim::Stream s = nullptr) {
  DeviceBuf<T> dx(x), out{std::vector<T>(a.reduction == 0 ? static_cast<size_t>(a.nframe) : 1, T(-7))},
      it{std::vector<T>(x.size(), T(-7))};
  DeviceBuf<int64_t> dt(t);
  EXPECT_EQ(npu_kernels::multilabel_margin_loss_forward(s, a, dx.ptr, dt.ptr, out.ptr, it.ptr),
            npu_sim::Status::kSuccess);
  sync(s);
  return {out.read(), it.read()};
}

template <typename T>
std::vector<T> run_ml_backward(const MultilabelMarginArgs& a, const std::vector<T>& go, const std::vector<T>& x,
                               const std::vector<int64_t>& t, const std::vector<T>& is_target,
                               npu_sim::Stream s = nullptr) {
  DeviceBuf<T> dg(go), dx(x), it(is_target), out{std::vector<T>(x.size(), T(-7))};
  DeviceBuf<int64_t> dt(t);
  EXPECT_EQ(npu_kernels::multilabel_margin_loss_backward(s, a, dg.ptr, dx.ptr, dt.ptr, it.ptr, out.ptr),
            npu_sim::Status::kSuccess);
  sync(s);
  return out.read();
}

// Random multilabel targets: each row some labels (possibly repeated), -1, then arbitrary in-range filler.
std::vector<int64_t> multilabel_targets(int64_t n, int64_t c, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> cls(0, c - 1), cnt(0, c);
  std::vector<int64_t> t(static_cast<size_t>(n * c));
  for (int64_t r = 0; r < n; ++r) {
    const int64_t labels = cnt(rng);
    for (int64_t k = 0; k < c; ++k) t[r * c + k] = k < labels ? cls(rng) : (k == labels ? -1 : cls(rng) - 1);
  }
  return t;
}

// The 3 x 4 problem of the CPU literals below.
const std::vector<double> kX{0.1, 0.2, 0.4, 0.8, 0.5, -0.3, 0.9, 0.05, 1.5, 0.25, -0.75, 0.6};
const std::vector<int64_t> kT{3, 0, 1};
const std::vector<double> kW{0.5, 1.0, 2.0, 1.5};
const std::vector<int64_t> kTl{3, 0, -1, 1, 1, 2, 3, -1, -1, 0, 0, 0};

// The float32 problem of the bit-exact CPU literals: x[i] = float(sin(0.37 i) * 3), 7 x 37.
constexpr int64_t kN = 7, kC = 37;
std::vector<float> sin_input() {
  std::vector<float> x;
  for (int64_t i = 0; i < kN * kC; ++i) x.push_back(static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 3));
  return x;
}

template <typename T>
void multi_margin_matches_host() {
  const int64_t n = 9, c = 13;
  const std::vector<T> x = cast<T>(random_values(n * c, 1)), w = cast<T>(random_values(c, 2)),
                       go = cast<T>(random_values(n, 3));
  std::vector<int64_t> t;
  for (int64_t r = 0; r < n; ++r) t.push_back((r * 5 + 2) % c);
  for (int p : {1, 2}) {
    for (double margin : {1.0, 0.3, -0.5}) {
      for (const std::vector<T>* wp : {static_cast<const std::vector<T>*>(nullptr), &w}) {
        for (int red : {0, 1, 2}) {
          SCOPED_TRACE(::testing::Message() << "p " << p << " margin " << margin << " weight " << (wp != nullptr)
                                            << " reduction " << red);
          const MultiMarginArgs a{dtype_of<T>(), n, c, p, margin, red};
          EXPECT_EQ(run_mm<T>(a, x, t, wp), host_multi_margin<T>(x, t, wp, n, c, p, margin, red));
          const std::vector<T> g = red == 0 ? go : std::vector<T>{go[0]};
          EXPECT_EQ(run_mm_backward<T>(a, g, x, t, wp), host_multi_margin_backward<T>(g, x, t, wp, n, c, p, margin, red));
        }
      }
    }
  }
}

TEST(MultiMarginLoss, MatchesHostLoopsForEveryPWeightAndReduction) {
  multi_margin_matches_host<float>();
  multi_margin_matches_host<double>();
}

// Values from CPU torch 2.13 (F.multi_margin_loss on the float64 3 x 4 problem kX, kT, kW).
TEST(MultiMarginLoss, MatchesCpuLiterals) {
  auto fwd = [](int p, double margin, bool weighted, int red) {
    return run_mm<double>(MultiMarginArgs{DType::kFloat64, 3, 4, p, margin, red}, kX, kT, weighted ? &kW : nullptr);
  };
  EXPECT_EQ(fwd(1, 1.0, false, 0), (std::vector<double>{0.32499999999999996, 0.5375, 0.9}));
  EXPECT_EQ(fwd(1, 1.0, false, 1), (std::vector<double>{0.5875}));
  EXPECT_EQ(fwd(1, 1.0, false, 2), (std::vector<double>{1.7625}));
  EXPECT_EQ(fwd(1, 0.7, true, 0), (std::vector<double>{0.14999999999999994, 0.16875, 0.75}));
  EXPECT_EQ(fwd(2, 1.0, false, 0), (std::vector<double>{0.15249999999999997, 0.5756249999999999, 1.72125}));
  EXPECT_EQ(fwd(2, 1.0, false, 1), (std::vector<double>{0.8164583333333333}));
  EXPECT_EQ(fwd(2, 0.7, true, 0), (std::vector<double>{0.03749999999999998, 0.15906250000000002, 1.2262499999999998}));
  EXPECT_EQ(fwd(2, 0.7, true, 1), (std::vector<double>{0.47427083333333325}));
  EXPECT_EQ(fwd(2, 0.7, true, 2), (std::vector<double>{1.4228124999999998}));
  // backward of the p = 2, margin 0.7, weighted mean; and of the p = 1 unweighted none with grad (1, 2, -0.5)
  EXPECT_EQ(run_mm_backward<double>(MultiMarginArgs{DType::kFloat64, 3, 4, 2, 0.7, 1}, {1.0}, kX, kT, &kW),
            (std::vector<double>{0.0, 0.02499999999999998, 0.07499999999999998, -0.09999999999999996, -0.1125, 0.0,
                                 0.09166666666666667, 0.02083333333333333, 0.32499999999999996, -0.4999999999999999,
                                 0.0, 0.17499999999999996}));
  EXPECT_EQ(run_mm_backward<double>(MultiMarginArgs{DType::kFloat64, 3, 4, 1, 1.0, 0}, {1.0, 2.0, -0.5}, kX, kT,
                                    nullptr),
            (std::vector<double>{0.25, 0.25, 0.25, -0.75, -1.5, 0.5, 0.5, 0.5, -0.125, 0.25, -0.0, -0.125}));
}

// Bit patterns from CPU torch 2.13, float32: x = sin_input(), t[r] = (5r + 3) % 37, w[c] = 0.5 + (c % 5) / 4,
// p = 2, margin 1.3; grad_output 1.7 for the mean's backward (row 2 shown).
TEST(MultiMarginLoss, MatchesCpuBitsInFloat32) {
  const std::vector<float> x = sin_input();
  std::vector<int64_t> t;
  for (int64_t r = 0; r < kN; ++r) t.push_back((r * 5 + 3) % kC);
  std::vector<float> w;
  for (int64_t c = 0; c < kC; ++c) w.push_back(0.5f + static_cast<float>(c % 5) * 0.25f);
  auto bits = [](const std::vector<uint32_t>& b) {
    std::vector<float> v;
    for (uint32_t u : b) v.push_back(from_bits(u));
    return v;
  };
  MultiMarginArgs a{DType::kFloat32, kN, kC, 2, 1.3, 0};
  EXPECT_EQ(run_mm<float>(a, x, t, &w), bits({0x3efcf9bd, 0x41cbda81, 0x3f9c086d, 0x417bf123, 0x402543e3, 0x4124a9b3,
                                              0x40cae5fd}));
  a.reduction = 1;
  EXPECT_EQ(run_mm<float>(a, x, t, &w), bits({0x410e11cf}));
  const std::vector<float> g = run_mm_backward<float>(a, {1.7f}, x, t, &w);
  const std::vector<float> row2(g.begin() + 2 * kC, g.begin() + 3 * kC);
  EXPECT_EQ(row2, bits({0x3ccf4fd4, 0x3c3d7898, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3bcd9560, 0xbeb180be, 0x3d01fa00,
                        0x3d13bbd1, 0x3d0a3e7a, 0x3ccd9586, 0x3c38b428, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3bd7ad19,
                        0x3cb0b5ef, 0x3d028a80, 0x3d13ce91, 0x3d09d0ed, 0x3ccbd77e, 0x3c33eafb, 0}));
  a.reduction = 2;
  EXPECT_EQ(run_mm<float>(a, x, t, &w), bits({0x42789f2b}));
}

TEST(MultiMarginLoss, NanOneRowAndEmptyBatches) {
  // NaN never passes z > 0: a NaN class adds nothing; a NaN at the target makes every z NaN (loss 0, grad 0).
  const std::vector<double> x{kNaN, 1.0, 2.0, 0.5, kNaN, 0.0};
  const MultiMarginArgs a{DType::kFloat64, 2, 3, 1, 1.0, 0};
  EXPECT_EQ(run_mm<double>(a, x, {1, 1}, nullptr), (std::vector<double>{2.0 / 3.0, 0.0}));
  EXPECT_EQ(run_mm_backward<double>(a, {1.0, 1.0}, x, {1, 1}, nullptr),
            (std::vector<double>{0.0, -1.0 / 3.0, 1.0 / 3.0, 0.0, 0.0, 0.0}));
  // One row (CPU's 1-D input) and a single class (CPU's 0-dim input: nframe 1, dim 1, loss 0).
  EXPECT_EQ(run_mm<float>(MultiMarginArgs{DType::kFloat32, 1, 1, 2, 1.0, 1}, {3.0f}, {0}, nullptr),
            (std::vector<float>{0.0f}));
  EXPECT_EQ(run_mm_backward<float>(MultiMarginArgs{DType::kFloat32, 1, 1, 2, 1.0, 0}, {2.0f}, {3.0f}, {0}, nullptr),
            (std::vector<float>{0.0f}));
  // Empty batch: nothing for none and for the backward, the empty sum (0) and mean (NaN) otherwise.
  EXPECT_EQ(npu_kernels::multi_margin_loss(nullptr, MultiMarginArgs{DType::kFloat32, 0, 4, 1, 1.0, 0}, nullptr,
                                           nullptr, nullptr, nullptr),
            npu_sim::Status::kSuccess);
  EXPECT_EQ(npu_kernels::multi_margin_loss_backward(nullptr, MultiMarginArgs{DType::kFloat32, 0, 4, 1, 1.0, 1},
                                                    nullptr, nullptr, nullptr, nullptr, nullptr),
            npu_sim::Status::kSuccess);
  EXPECT_EQ(run_mm<float>(MultiMarginArgs{DType::kFloat32, 0, 4, 1, 1.0, 2}, {}, {}, nullptr),
            (std::vector<float>{0.0f}));
  EXPECT_TRUE(std::isnan(run_mm<float>(MultiMarginArgs{DType::kFloat32, 0, 4, 1, 1.0, 1}, {}, {}, nullptr)[0]));
}

// An out-of-range target fails the stream (CPU: RuntimeError "target out of range"), for every reduction.
TEST(MultiMarginLoss, OutOfRangeTargetsAreKernelErrors) {
  const std::vector<double> x(12, 0.5);
  for (const std::vector<int64_t>& t : {std::vector<int64_t>{0, 4, 1}, std::vector<int64_t>{0, -1, 1}}) {
    for (int red : {0, 1, 2}) {
      for (bool backward : {false, true}) {
        DeviceBuf<double> dx(x), out{std::vector<double>(12)}, go{std::vector<double>(3, 1.0)};
        DeviceBuf<int64_t> dt(t);
        const MultiMarginArgs a{DType::kFloat64, 3, 4, 1, 1.0, red};
        ASSERT_OK(backward ? npu_kernels::multi_margin_loss_backward(nullptr, a, go.ptr, dx.ptr, dt.ptr, nullptr, out.ptr)
                           : npu_kernels::multi_margin_loss(nullptr, a, dx.ptr, dt.ptr, nullptr, out.ptr));
        EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
        const std::string msg = npu_sim::last_error_message();
        EXPECT_NE(msg.find(backward ? "multi_margin_loss_backward: target out of range"
                                    : "multi_margin_loss: target out of range"),
                  std::string::npos)
            << msg;
        ASSERT_OK(npu_sim::device_restart(0));
      }
    }
  }
}

TEST(MultiMarginLoss, BadArgumentsAreRefusedBeforeLaunch) {
  DeviceBuf<float> x{std::vector<float>(12)}, out{std::vector<float>(12)};
  DeviceBuf<int64_t> t{std::vector<int64_t>(3)};
  auto refused = [&](MultiMarginArgs a) {
    return npu_kernels::multi_margin_loss(nullptr, a, x.ptr, t.ptr, nullptr, out.ptr) == npu_sim::Status::kInvalidValue &&
           npu_kernels::multi_margin_loss_backward(nullptr, a, out.ptr, x.ptr, t.ptr, nullptr, out.ptr) ==
               npu_sim::Status::kInvalidValue;
  };
  EXPECT_TRUE(refused({DType::kFloat32, 3, 4, 3, 1.0, 1}));   // p (CPU: "only p == 1 and p == 2 supported")
  EXPECT_TRUE(refused({DType::kFloat16, 3, 4, 1, 1.0, 1}));   // CPU: not implemented for 'Half'
  EXPECT_TRUE(refused({DType::kBFloat16, 3, 4, 1, 1.0, 1}));
  EXPECT_TRUE(refused({DType::kFloat32, 3, 0, 1, 1.0, 1}));   // dim 0
  EXPECT_TRUE(refused({DType::kFloat32, -1, 4, 1, 1.0, 1}));
  EXPECT_TRUE(refused({DType::kFloat32, 3, 4, 1, 1.0, 3}));   // reduction
  EXPECT_EQ(npu_kernels::multi_margin_loss(nullptr, {DType::kFloat32, 3, 4, 1, 1.0, 1}, x.ptr, nullptr, nullptr,
                                           out.ptr),
            npu_sim::Status::kInvalidValue);
  ASSERT_OK(npu_sim::device_synchronize(0));
}

template <typename T>
void multilabel_matches_host() {
  for (const auto& [n, c] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {1, 5}, {6, 9}, {40, 17}}) {
    const std::vector<T> x = cast<T>(random_values(static_cast<size_t>(n * c), 4)), go = cast<T>(random_values(n, 5));
    const std::vector<int64_t> t = multilabel_targets(n, c, 6);
    for (int red : {0, 1, 2}) {
      SCOPED_TRACE(::testing::Message() << n << "x" << c << " reduction " << red);
      const MultilabelMarginArgs a{dtype_of<T>(), n, c, red};
      std::vector<T> want_it;
      const std::vector<T> want = host_multilabel<T>(x, t, n, c, red, &want_it);
      const auto [out, it] = run_ml<T>(a, x, t);
      EXPECT_EQ(out, want);
      EXPECT_EQ(it, want_it);
      const std::vector<T> g = red == 0 ? go : std::vector<T>{go[0]};
      EXPECT_EQ(run_ml_backward<T>(a, g, x, t, it), host_multilabel_backward<T>(g, x, t, it, n, c, red));
    }
  }
}

TEST(MultilabelMarginLoss, MatchesHostLoopsForEveryReduction) {
  multilabel_matches_host<float>();
  multilabel_matches_host<double>();
}

// Values from CPU torch 2.13 (aten.multilabel_margin_loss_forward / F.multilabel_margin_loss on kX, kTl: row 2
// starts with -1, so it has no labels).
TEST(MultilabelMarginLoss, MatchesCpuLiterals) {
  const std::vector<double> it{1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 0};
  auto fwd = [](int red) { return run_ml<double>(MultilabelMarginArgs{DType::kFloat64, 3, 4, red}, kX, kTl); };
  EXPECT_EQ(fwd(0).first, (std::vector<double>{0.8500000000000001, 0.9624999999999999, 0.0}));
  EXPECT_EQ(fwd(0).second, it);
  EXPECT_EQ(fwd(1).first, (std::vector<double>{0.6041666666666666}));
  EXPECT_EQ(fwd(2).first, (std::vector<double>{1.8125}));
  EXPECT_EQ(fwd(2).second, it);
  EXPECT_EQ(run_ml_backward<double>(MultilabelMarginArgs{DType::kFloat64, 3, 4, 1}, {1.0}, kX, kTl, it),
            (std::vector<double>{-0.16666666666666666, 0.16666666666666666, 0.16666666666666666, -0.16666666666666666,
                                 0.25, -0.08333333333333333, -0.08333333333333333, -0.08333333333333333, 0, 0, 0, 0}));
  EXPECT_EQ(run_ml_backward<double>(MultilabelMarginArgs{DType::kFloat64, 3, 4, 0}, {1.0, 2.0, -0.5}, kX, kTl, it),
            (std::vector<double>{-0.5, 0.5, 0.5, -0.5, 1.5, -0.5, -0.5, -0.5, -0.0, -0.0, -0.0, -0.0}));
}

// Bit patterns from CPU torch 2.13, float32: x = sin_input(); row r's labels (3r + 7k) % 37 for k <= r % 4, then
// -1, then (r + k) % 37 filler; grad_output 1.7 for the mean's backward (row 3 shown).
TEST(MultilabelMarginLoss, MatchesCpuBitsInFloat32) {
  const std::vector<float> x = sin_input();
  std::vector<int64_t> t;
  for (int64_t r = 0; r < kN; ++r) {
    std::vector<int64_t> row;
    for (int64_t k = 0; k <= r % 4; ++k) row.push_back((r * 3 + k * 7) % kC);
    row.push_back(-1);
    for (int64_t k = 0; static_cast<int64_t>(row.size()) < kC; ++k) row.push_back((r + k) % kC);
    t.insert(t.end(), row.begin(), row.end());
  }
  auto bits = [](const std::vector<uint32_t>& b) {
    std::vector<float> v;
    for (uint32_t u : b) v.push_back(from_bits(u));
    return v;
  };
  MultilabelMarginArgs a{DType::kFloat32, kN, kC, 0};
  EXPECT_EQ(run_ml<float>(a, x, t).first,
            bits({0x3fc330be, 0x408e88a4, 0x40c31fbd, 0x4087b221, 0x3f2a3250, 0x4077e5b7, 0x408fbe2d}));
  a.reduction = 2;
  EXPECT_EQ(run_ml<float>(a, x, t).first, bits({0x41cac781}));
  a.reduction = 1;
  const auto [loss, it] = run_ml<float>(a, x, t);
  EXPECT_EQ(loss, bits({0x4067bf6f}));
  const std::vector<float> g = run_ml_backward<float>(a, {1.7f}, x, t, it);
  const std::vector<float> row3(g.begin() + 3 * kC, g.begin() + 4 * kC);
  const uint32_t s = 0x3bd7145d, s2 = 0x3c57145d, s4 = 0x3cd7145d, s3 = 0x3ca14f46;
  EXPECT_EQ(row3, bits({s, s, s, 0, 0, s, s, s, s2, 0xbdaec08a, s4, s4, s4, s4, s4, s3, 0xbdc9a315, s, s, s, 0, 0, s,
                        0xbe42ea72, s, s2, s3, s4, s4, s4, 0xbd71f6e9, s4, s3, s3, s, s, s}));
}

TEST(MultilabelMarginLoss, NanAndEmptyBatches) {
  // NaN at a non-label adds nothing; NaN at a label makes its z NaN everywhere.
  const std::vector<double> x{kNaN, 0.5, 0.25, 1.0, kNaN, 0.0};
  const std::vector<int64_t> t{1, -1, 0, 1, 0, -1};
  std::vector<double> want_it;
  const auto [out, it] = run_ml<double>(MultilabelMarginArgs{DType::kFloat64, 2, 3, 0}, x, t);
  EXPECT_EQ(out, host_multilabel<double>(x, t, 2, 3, 0, &want_it));
  EXPECT_EQ(out, (std::vector<double>{0.75 / 3, 0.0}));
  EXPECT_EQ(run_ml_backward<double>(MultilabelMarginArgs{DType::kFloat64, 2, 3, 0}, {1.0, 1.0}, x, t, it),
            (std::vector<double>{0.0, -1.0 / 3, 1.0 / 3, 0.0, 0.0, 0.0}));
  EXPECT_EQ(npu_kernels::multilabel_margin_loss_forward(nullptr, MultilabelMarginArgs{DType::kFloat32, 0, 4, 0},
                                                        nullptr, nullptr, nullptr, nullptr),
            npu_sim::Status::kSuccess);
  EXPECT_EQ(npu_kernels::multilabel_margin_loss_backward(nullptr, MultilabelMarginArgs{DType::kFloat32, 0, 4, 1},
                                                         nullptr, nullptr, nullptr, nullptr, nullptr),
            npu_sim::Status::kSuccess);
  EXPECT_EQ(run_ml<float>(MultilabelMarginArgs{DType::kFloat32, 0, 4, 2}, {}, {}).first, (std::vector<float>{0.0f}));
  EXPECT_TRUE(std::isnan(run_ml<float>(MultilabelMarginArgs{DType::kFloat32, 0, 4, 1}, {}, {}).first[0]));
}

std::string ml_error(bool backward, int red, const std::vector<int64_t>& t, const std::vector<double>& is_target) {
  DeviceBuf<double> dx{std::vector<double>(12, 0.5)}, out{std::vector<double>(12)}, it(is_target),
      go{std::vector<double>(3, 1.0)};
  DeviceBuf<int64_t> dt(t);
  const MultilabelMarginArgs a{DType::kFloat64, 3, 4, red};
  EXPECT_EQ(backward ? npu_kernels::multilabel_margin_loss_backward(nullptr, a, go.ptr, dx.ptr, dt.ptr, it.ptr, out.ptr)
                     : npu_kernels::multilabel_margin_loss_forward(nullptr, a, dx.ptr, dt.ptr, out.ptr, it.ptr),
            npu_sim::Status::kSuccess);
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
  std::string msg = npu_sim::last_error_message();
  EXPECT_EQ(npu_sim::device_restart(0), npu_sim::Status::kSuccess);
  return msg;
}

// Targets outside [-1, dim) anywhere in the tensor (also past a row's -1) fail the stream with CPU's text; the
// backward checks is_target in [0, 1] (NaN out) after the targets, as CPU.
TEST(MultilabelMarginLoss, OutOfRangeTargetsAndIsTargetAreKernelErrors) {
  const std::vector<double> ok_it(12, 0.0);
  std::vector<double> bad_it = ok_it;
  bad_it[7] = 2.0;
  const std::vector<int64_t> good{0, -1, 0, 0, 1, 2, -1, 0, 3, -1, 0, 0};
  const std::vector<std::vector<int64_t>> bad{{0, 4, -1, 1, 0, -1, 0, 0, 0, -1, 0, 0},   // >= dim
                                              {0, -1, 4, 1, 0, -1, 0, 0, 0, -1, 0, 0},   // past the -1
                                              {0, -1, 0, 0, 0, -2, 0, 0, 0, -1, 0, 0}};  // < -1
  for (const auto& t : bad) {
    for (int red : {0, 1, 2}) {
      std::string m = ml_error(false, red, t, ok_it);
      EXPECT_NE(m.find("multilabel_margin_loss: argument #2 'target' is out of range"), std::string::npos) << m;
      m = ml_error(true, red, t, bad_it);  // both bad: the target's error, CPU's first check
      EXPECT_NE(m.find("multilabel_margin_loss_backward: argument #3 'target' is out of range"), std::string::npos)
          << m;
    }
  }
  for (double v : {2.0, -1.0, kNaN}) {
    std::vector<double> it = ok_it;
    it[5] = v;
    const std::string m = ml_error(true, 1, good, it);
    EXPECT_NE(m.find("multilabel_margin_loss_backward: argument #5 'is_target' is out of range"), std::string::npos)
        << m;
  }
}

TEST(MultilabelMarginLoss, BadArgumentsAreRefusedBeforeLaunch) {
  DeviceBuf<float> x{std::vector<float>(12)}, out{std::vector<float>(12)};
  DeviceBuf<int64_t> t{std::vector<int64_t>(12)};
  auto refused = [&](MultilabelMarginArgs a) {
    return npu_kernels::multilabel_margin_loss_forward(nullptr, a, x.ptr, t.ptr, out.ptr, out.ptr) ==
               npu_sim::Status::kInvalidValue &&
           npu_kernels::multilabel_margin_loss_backward(nullptr, a, out.ptr, x.ptr, t.ptr, out.ptr, out.ptr) ==
               npu_sim::Status::kInvalidValue;
  };
  EXPECT_TRUE(refused({DType::kFloat16, 3, 4, 1}));
  EXPECT_TRUE(refused({DType::kBFloat16, 3, 4, 1}));
  EXPECT_TRUE(refused({DType::kInt64, 3, 4, 1}));
  EXPECT_TRUE(refused({DType::kFloat32, 3, 0, 1}));
  EXPECT_TRUE(refused({DType::kFloat32, -2, 4, 0}));
  EXPECT_TRUE(refused({DType::kFloat32, 3, 4, -1}));
  EXPECT_EQ(npu_kernels::multilabel_margin_loss_forward(nullptr, {DType::kFloat32, 3, 4, 0}, x.ptr, t.ptr, out.ptr,
                                                        nullptr),
            npu_sim::Status::kInvalidValue);
  ASSERT_OK(npu_sim::device_synchronize(0));
}

TEST(MarginLoss, ConcurrentStreamsAgree) {
  const int64_t n = 64, c = 33;
  const std::vector<double> x = random_values(n * c, 7), go = random_values(n, 8);
  const std::vector<int64_t> tl = multilabel_targets(n, c, 9);
  std::vector<int64_t> t;
  for (int64_t r = 0; r < n; ++r) t.push_back((r * 7) % c);
  const MultiMarginArgs mm{DType::kFloat64, n, c, 2, 0.9, 0};
  const MultilabelMarginArgs ml{DType::kFloat64, n, c, 0};
  auto work = [&](npu_sim::Stream s) {
    std::vector<double> r = run_mm<double>(mm, x, t, nullptr, s);
    const std::vector<double> g = run_mm_backward<double>(mm, go, x, t, nullptr, s);
    const auto [o, it] = run_ml<double>(ml, x, tl, s);
    const std::vector<double> gl = run_ml_backward<double>(ml, go, x, tl, it, s);
    r.insert(r.end(), g.begin(), g.end());
    r.insert(r.end(), o.begin(), o.end());
    r.insert(r.end(), gl.begin(), gl.end());
    return r;
  };
  const std::vector<double> want = work(nullptr);
  npu_sim::Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s1));
  ASSERT_OK(npu_sim::stream_create(0, &s2));
  std::vector<double> r1, r2;
  std::thread t1([&] { for (int i = 0; i < 10; ++i) r1 = work(s1); });
  std::thread t2([&] { for (int i = 0; i < 10; ++i) r2 = work(s2); });
  t1.join();
  t2.join();
  EXPECT_EQ(r1, want);
  EXPECT_EQ(r2, want);
  ASSERT_OK(npu_sim::stream_destroy(s1));
  ASSERT_OK(npu_sim::stream_destroy(s2));
}

}  // namespace
