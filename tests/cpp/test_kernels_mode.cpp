// gtests of the torch-free mode kernel: values against a host frequency count for every dtype and layout, indices
// against CPU torch 2.13's (literal values, including the unstable-sort cases above 16 elements), ties, NaN,
// signed zeros, size 1, all-equal, empty shapes, bad arguments, two streams at once.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "npu_kernels/mode.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::BFloat16;
using npu_kernels::DType;
using npu_kernels::Half;
using npu_kernels::ModeArgs;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <typename T>
struct Result {
  std::vector<T> values;
  std::vector<int64_t> indices;
};

template <typename T>
Result<T> run_mode(DType dt, int64_t outer, int64_t size, int64_t inner, const std::vector<T>& x,
                   npu_sim::Stream s = nullptr) {
  const ModeArgs a{dt, outer, size, inner};
  DeviceBuf<T> in(x), vals{std::vector<T>(static_cast<size_t>(outer * inner))};
  DeviceBuf<int64_t> idx{std::vector<int64_t>(static_cast<size_t>(outer * inner), -7)};
  EXPECT_EQ(npu_kernels::mode(s, a, in.ptr, vals.ptr, idx.ptr), npu_sim::Status::kSuccess);
  EXPECT_EQ(s ? npu_sim::stream_synchronize(s) : npu_sim::device_synchronize(0), npu_sim::Status::kSuccess)
      << npu_sim::last_error_message();
  return {vals.read(), idx.read()};
}

std::vector<float> floats(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

// The slice's values as doubles, in order.
template <typename T>
std::vector<double> slice(const std::vector<T>& x, int64_t size, int64_t inner, int64_t s) {
  std::vector<double> r;
  for (int64_t k = 0; k < size; ++k) r.push_back(static_cast<double>(x[(s / inner) * size * inner + k * inner + s % inner]));
  return r;
}

// Host reference for NaN-free data: the smallest of the most frequent values, and its last occurrence.
struct HostMode {
  double value;
  int64_t last;
};
HostMode host_mode(const std::vector<double>& v) {
  std::map<double, int64_t> count;
  for (double e : v) ++count[e];
  double best = 0;
  int64_t best_n = 0;
  for (const auto& [val, n] : count) {
    if (n > best_n) {
      best = val;
      best_n = n;
    }
  }
  int64_t last = -1;
  for (int64_t k = 0; k < static_cast<int64_t>(v.size()); ++k) {
    if (v[static_cast<size_t>(k)] == best) last = k;
  }
  return {best, last};
}

template <typename T>
void check_against_host(DType dt, int64_t outer, int64_t size, int64_t inner, unsigned seed, int range) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, range - 1);
  std::vector<T> x(static_cast<size_t>(outer * size * inner));
  for (auto& e : x) e = static_cast<T>(static_cast<float>(d(rng)));
  const Result<T> r = run_mode<T>(dt, outer, size, inner, x);
  for (int64_t s = 0; s < outer * inner; ++s) {
    const std::vector<double> v = slice(x, size, inner, s);
    const HostMode want = host_mode(v);
    EXPECT_EQ(static_cast<double>(r.values[static_cast<size_t>(s)]), want.value) << "slice " << s;
    const int64_t i = r.indices[static_cast<size_t>(s)];
    ASSERT_TRUE(i >= 0 && i < size) << "slice " << s;
    EXPECT_EQ(v[static_cast<size_t>(i)], want.value) << "slice " << s;  // an occurrence of the mode
    if (size <= 16) EXPECT_EQ(i, want.last) << "slice " << s;           // insertion sort: the last one
  }
}

TEST(Mode, ValuesMatchAHostCountForEveryDtypeAndLayout) {
  for (const auto& [outer, size, inner] : std::vector<std::array<int64_t, 3>>{
           {1, 1, 1}, {3, 5, 1}, {2, 16, 3}, {4, 17, 2}, {1, 100, 5}, {6, 257, 1}, {1, 1000, 1}}) {
    SCOPED_TRACE(::testing::Message() << outer << "x" << size << "x" << inner);
    check_against_host<float>(DType::kFloat32, outer, size, inner, 1, 5);
    check_against_host<double>(DType::kFloat64, outer, size, inner, 2, 7);
    check_against_host<Half>(DType::kFloat16, outer, size, inner, 3, 4);
    check_against_host<BFloat16>(DType::kBFloat16, outer, size, inner, 4, 6);
    check_against_host<int8_t>(DType::kInt8, outer, size, inner, 5, 9);
    check_against_host<int16_t>(DType::kInt16, outer, size, inner, 6, 3);
    check_against_host<int32_t>(DType::kInt32, outer, size, inner, 7, 5);
    check_against_host<int64_t>(DType::kInt64, outer, size, inner, 8, 11);
    check_against_host<uint8_t>(DType::kUInt8, outer, size, inner, 9, 4);
    check_against_host<uint8_t>(DType::kBool, outer, size, inner, 10, 2);  // bool as 0 / 1 bytes
  }
}

// Literal (value, index) pairs from CPU torch 2.13 (torch.mode(torch.tensor(v))).
TEST(Mode, MatchesCpuOnTiesNanAndSignedZeros) {
  struct Case {
    std::vector<double> v;
    double value;
    int64_t index;
  };
  const std::vector<Case> cases{
      {{3, 1, 1, 3, 2}, 1, 2},              // tie: the smaller value, its last occurrence
      {{2, 1, 3, 1, 2, 3}, 1, 3},           // three-way tie
      {{5, 5, 1, 1, 0, 5, 1}, 1, 6},
      {{kNaN, 1, kNaN, 1, kNaN}, kNaN, 0},  // NaN never forms a run: all runs 1 long, the first wins
      {{kNaN, 1, 1}, 1, 2},
      {{kNaN, kNaN, 1}, kNaN, 0},
      {{1, kNaN}, 1, 0},
      {{kNaN, kNaN, kNaN, 1, 1}, 1, 4},
      {{1, kNaN, 1, kNaN, kNaN}, 1, 0},     // NaN blocks the sort: the two 1s never meet
      {{-0.0, 0.0, 1}, 0.0, 1},
      {{0.0, -0.0, 1}, -0.0, 1},
      {{0.0, 1, -0.0, 1}, -0.0, 2},         // 0 == -0: one run, the value at the reported index
      {{4}, 4, 0},
  };
  for (const Case& c : cases) {
    const auto r = run_mode<float>(DType::kFloat32, 1, static_cast<int64_t>(c.v.size()), 1, floats(c.v));
    const auto rd = run_mode<double>(DType::kFloat64, 1, static_cast<int64_t>(c.v.size()), 1, c.v);
    for (double got : {static_cast<double>(r.values[0]), rd.values[0]}) {
      if (std::isnan(c.value)) {
        EXPECT_TRUE(std::isnan(got));
      } else {
        EXPECT_EQ(got, c.value);
        EXPECT_EQ(std::signbit(got), std::signbit(c.value));
      }
    }
    EXPECT_EQ(r.indices[0], c.index);
    EXPECT_EQ(rd.indices[0], c.index);
  }
}

// Above 16 elements CPU's std::sort is an (unstable) introsort: the index is neither the first nor the last
// occurrence in general. Literal values from CPU torch 2.13.
TEST(Mode, MatchesCpuIndicesOfLongSlices) {
  {  // torch.mode(torch.tensor([(i*7+3)%5 for i in range(40)], dtype=float32)) -> (0., 16); zeros at 1, 6, .., 36
    std::vector<float> x;
    for (int i = 0; i < 40; ++i) x.push_back(static_cast<float>((i * 7 + 3) % 5));
    const auto r = run_mode<float>(DType::kFloat32, 1, 40, 1, x);
    EXPECT_EQ(r.values[0], 0.0f);
    EXPECT_EQ(r.indices[0], 16);
  }
  {  // all equal: torch.mode(torch.zeros(n)) -> index 19 (n = 40), 15 (n = 16), 1 (n = 17)
    for (const auto& [n, want] : std::vector<std::pair<int64_t, int64_t>>{{40, 19}, {16, 15}, {17, 1}}) {
      const auto r = run_mode<float>(DType::kFloat32, 1, n, 1, std::vector<float>(static_cast<size_t>(n), 0.0f));
      EXPECT_EQ(r.indices[0], want) << n;
    }
  }
  {  // v = torch.tensor([(i*i+i//3)%4 for i in range(120)], dtype=int32).view(2, 20, 3); torch.mode(v, 1)
    std::vector<int32_t> x;
    for (int i = 0; i < 120; ++i) x.push_back((i * i + i / 3) % 4);
    const auto r = run_mode<int32_t>(DType::kInt32, 2, 20, 3, x);
    EXPECT_EQ(r.values, (std::vector<int32_t>{0, 1, 0, 0, 1, 0}));
    EXPECT_EQ(r.indices, (std::vector<int64_t>{12, 13, 12, 12, 13, 12}));
  }
  {  // [nan if i%6==0 else float((i*5)%3) for i in range(30)] -> (2., 22)
    std::vector<float> x;
    for (int i = 0; i < 30; ++i) x.push_back(i % 6 == 0 ? NAN : static_cast<float>((i * 5) % 3));
    const auto r = run_mode<float>(DType::kFloat32, 1, 30, 1, x);
    EXPECT_EQ(r.values[0], 2.0f);
    EXPECT_EQ(r.indices[0], 22);
  }
  {  // torch.tensor([(i*3)%7<3 for i in range(25)]) -> (False, 1)
    std::vector<uint8_t> bytes;
    for (int i = 0; i < 25; ++i) bytes.push_back((i * 3) % 7 < 3 ? 1 : 0);
    DeviceBuf<uint8_t> in(bytes), vals{std::vector<uint8_t>(1, 7)};
    DeviceBuf<int64_t> idx{std::vector<int64_t>(1, -7)};
    ASSERT_OK(npu_kernels::mode(nullptr, ModeArgs{DType::kBool, 1, 25, 1}, in.ptr, vals.ptr, idx.ptr));
    ASSERT_OK(npu_sim::device_synchronize(0));
    EXPECT_EQ(vals.read()[0], 0);
    EXPECT_EQ(idx.read()[0], 1);
  }
  {  // [((i*11)%9)*0.1 for i in range(50)] as float16 and as bfloat16 -> (0., 18) both
    std::vector<Half> h;
    std::vector<BFloat16> bf;
    for (int i = 0; i < 50; ++i) {
      h.emplace_back(static_cast<float>(((i * 11) % 9) * 0.1));
      bf.emplace_back(static_cast<float>(((i * 11) % 9) * 0.1));
    }
    const auto rh = run_mode<Half>(DType::kFloat16, 1, 50, 1, h);
    const auto rb = run_mode<BFloat16>(DType::kBFloat16, 1, 50, 1, bf);
    EXPECT_EQ(static_cast<float>(rh.values[0]), 0.0f);
    EXPECT_EQ(rh.indices[0], 18);
    EXPECT_EQ(static_cast<float>(rb.values[0]), 0.0f);
    EXPECT_EQ(rb.indices[0], 18);
  }
}

TEST(Mode, SizeOneAndEmptyShapes) {
  const auto r = run_mode<int64_t>(DType::kInt64, 3, 1, 2, {5, -1, 7, 7, 0, 9});
  EXPECT_EQ(r.values, (std::vector<int64_t>{5, -1, 7, 7, 0, 9}));
  EXPECT_EQ(r.indices, (std::vector<int64_t>(6, 0)));
  // No slices: nothing launched, whatever size is (CPU: mode of a (0, 3) tensor along dim 1 is empty).
  EXPECT_EQ(npu_kernels::mode(nullptr, ModeArgs{DType::kFloat32, 0, 3, 1}, nullptr, nullptr, nullptr),
            npu_sim::Status::kSuccess);
  EXPECT_EQ(npu_kernels::mode(nullptr, ModeArgs{DType::kFloat32, 2, 0, 0}, nullptr, nullptr, nullptr),
            npu_sim::Status::kSuccess);
  ASSERT_OK(npu_sim::device_synchronize(0));
}

TEST(Mode, BadArgumentsAreRefusedBeforeLaunch) {
  DeviceBuf<float> in{std::vector<float>(8)}, vals{std::vector<float>(8)};
  DeviceBuf<int64_t> idx{std::vector<int64_t>(8)};
  auto st = [&](ModeArgs a, const void* i, void* v, int64_t* x) { return npu_kernels::mode(nullptr, a, i, v, x); };
  // An empty reduced dim with slices to fill (CPU: IndexError "mode(): Expected reduction dim 0 to have non-zero
  // size.").
  EXPECT_EQ(st({DType::kFloat32, 2, 0, 1}, in.ptr, vals.ptr, idx.ptr), npu_sim::Status::kInvalidValue);
  EXPECT_EQ(st({DType::kFloat32, -1, 2, 1}, in.ptr, vals.ptr, idx.ptr), npu_sim::Status::kInvalidValue);
  EXPECT_EQ(st({DType::kComplex64, 1, 2, 1}, in.ptr, vals.ptr, idx.ptr), npu_sim::Status::kInvalidValue);
  EXPECT_EQ(st({DType::kFloat32, 1, 2, 1}, nullptr, vals.ptr, idx.ptr), npu_sim::Status::kInvalidValue);
  EXPECT_EQ(st({DType::kFloat32, 1, 2, 1}, in.ptr, nullptr, idx.ptr), npu_sim::Status::kInvalidValue);
  EXPECT_EQ(st({DType::kFloat32, 1, 2, 1}, in.ptr, vals.ptr, nullptr), npu_sim::Status::kInvalidValue);
  ASSERT_OK(npu_sim::device_synchronize(0));
}

TEST(Mode, ConcurrentStreamsAgree) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> d(0, 9);
  std::vector<double> x(static_cast<size_t>(8 * 300 * 3));
  for (auto& e : x) e = d(rng) * 0.5;
  const auto want = run_mode<double>(DType::kFloat64, 8, 300, 3, x);
  npu_sim::Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s1));
  ASSERT_OK(npu_sim::stream_create(0, &s2));
  Result<double> r1, r2;
  std::thread t1([&] { for (int i = 0; i < 10; ++i) r1 = run_mode<double>(DType::kFloat64, 8, 300, 3, x, s1); });
  std::thread t2([&] { for (int i = 0; i < 10; ++i) r2 = run_mode<double>(DType::kFloat64, 8, 300, 3, x, s2); });
  t1.join();
  t2.join();
  EXPECT_EQ(r1.values, want.values);
  EXPECT_EQ(r1.indices, want.indices);
  EXPECT_EQ(r2.values, want.values);
  EXPECT_EQ(r2.indices, want.indices);
  ASSERT_OK(npu_sim::stream_destroy(s1));
  ASSERT_OK(npu_sim::stream_destroy(s2));
}

}  // namespace
