// gtests of the torch-free segment reduction kernels: forward and backward against host loops for every reduction
// (lengths int32/int64, offsets, batched rows, inner dims, initial given or not), literal values from CPU torch 2.13
// (empty segments, NaN, ties, zeros in prod, reduced-precision rounding), CPU's errors, bad arguments, two streams.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "npu_kernels/segment_reduce.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::BFloat16;
using npu_kernels::DType;
using npu_kernels::Half;
using npu_kernels::SegmentReduceArgs;
using npu_kernels::SegmentReduction;
using R = SegmentReduction;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
const std::vector<R> kAll{R::kSum, R::kMean, R::kMax, R::kMin, R::kProd};

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
template <typename T>
std::vector<double> widen(const std::vector<T>& v) {
  std::vector<double> r;
  for (const T& x : v) r.push_back(static_cast<double>(static_cast<float>(x)));
  return r;
}
template <>
std::vector<double> widen<double>(const std::vector<double>& v) {
  return v;
}

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, double>) return DType::kFloat64;
  if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  if constexpr (std::is_same_v<T, Half>) return DType::kFloat16;
  return DType::kBFloat16;
}

// The index tensor as int64; converted to the args' index dtype on upload.
struct Problem {
  SegmentReduceArgs a;
  std::vector<double> data;
  std::vector<int64_t> index;
};

SegmentReduceArgs make_args(R r, int64_t outer, int64_t axis, int64_t inner, int64_t segments, bool offsets = false,
                            DType t = DType::kFloat64, DType it = DType::kInt64) {
  SegmentReduceArgs a;
  a.dtype = t;
  a.index_dtype = it;
  a.reduce = r;
  a.outer = outer;
  a.axis_size = axis;
  a.inner = inner;
  a.segments = segments;
  a.offsets = offsets;
  return a;
}

struct IndexBuf {
  DeviceBuf<int64_t> i64;
  DeviceBuf<int32_t> i32;
  const void* ptr = nullptr;
  IndexBuf(const std::vector<int64_t>& v, DType t) : i64(v), i32(std::vector<int32_t>(v.begin(), v.end())) {
    ptr = t == DType::kInt32 ? static_cast<const void*>(i32.ptr) : static_cast<const void*>(i64.ptr);
  }
};

template <typename T>
std::vector<double> run_forward(const SegmentReduceArgs& a, const std::vector<double>& data,
                                const std::vector<int64_t>& index, npu_sim::Stream s = nullptr) {
  DeviceBuf<T> d(cast<T>(data)), out{std::vector<T>(static_cast<size_t>(a.outer * a.segments * a.inner), T(-7.0f))};
  IndexBuf ib(index, a.index_dtype);
  EXPECT_EQ(npu_kernels::segment_reduce_forward(s, a, d.ptr, ib.ptr, out.ptr), npu_sim::Status::kSuccess);
  sync(s);
  return widen(out.read());
}

template <typename T>
std::vector<double> run_backward(const SegmentReduceArgs& a, const std::vector<double>& grad,
                                 const std::vector<double>& data, const std::vector<int64_t>& index,
                                 npu_sim::Stream s = nullptr) {
  const auto out = run_forward<T>(a, data, index, s);
  DeviceBuf<T> g(cast<T>(grad)), o(cast<T>(out)), d(cast<T>(data)),
      gi{std::vector<T>(data.size(), T(-7.0f))};
  IndexBuf ib(index, a.index_dtype);
  EXPECT_EQ(npu_kernels::segment_reduce_backward(s, a, g.ptr, o.ptr, d.ptr, ib.ptr, gi.ptr),
            npu_sim::Status::kSuccess);
  sync(s);
  return widen(gi.read());
}

// [begin, end) of segment s of row r.
std::pair<int64_t, int64_t> host_segment(const SegmentReduceArgs& a, const std::vector<int64_t>& idx, int64_t r,
                                         int64_t s) {
  if (a.offsets) return {idx[r * (a.segments + 1) + s], idx[r * (a.segments + 1) + s + 1]};
  int64_t b = 0;
  for (int64_t k = 0; k < s; ++k) b += idx[r * a.segments + k];
  return {b, b + idx[r * a.segments + s]};
}

// The plain loops in double (the reference for kFloat64; the same rules as CPU's kernel).
std::vector<double> host_forward(const SegmentReduceArgs& a, const std::vector<double>& x,
                                 const std::vector<int64_t>& idx) {
  std::vector<double> out;
  for (int64_t r = 0; r < a.outer; ++r) {
    for (int64_t s = 0; s < a.segments; ++s) {
      const auto [b, e] = host_segment(a, idx, r, s);
      for (int64_t j = 0; j < a.inner; ++j) {
        double v = a.has_initial ? a.initial
                   : a.reduce == R::kMax ? -kInf
                   : a.reduce == R::kMin ? kInf
                   : a.reduce == R::kProd ? 1.0
                                          : 0.0;
        for (int64_t k = b; k < e; ++k) {
          const double d = x[(r * a.axis_size + k) * a.inner + j];
          if (a.reduce == R::kSum || a.reduce == R::kMean) v += d;
          if (a.reduce == R::kProd) v *= d;
          if (a.reduce == R::kMax) v = std::isnan(d) ? d : std::max(v, d);
          if (a.reduce == R::kMin) v = std::isnan(d) ? d : std::min(v, d);
        }
        if (a.reduce == R::kMean) {
          if (e == b && !a.has_initial) v = kNaN;
          else if (e > b && !std::isnan(v)) v /= static_cast<double>(e - b);
        }
        out.push_back(v);
      }
    }
  }
  return out;
}

std::vector<double> host_backward(const SegmentReduceArgs& a, const std::vector<double>& g,
                                  const std::vector<double>& out, const std::vector<double>& x,
                                  const std::vector<int64_t>& idx) {
  std::vector<double> gi(x.size(), 0.0);
  for (int64_t r = 0; r < a.outer; ++r) {
    for (int64_t s = 0; s < a.segments; ++s) {
      const auto [b, e] = host_segment(a, idx, r, s);
      for (int64_t j = 0; j < a.inner; ++j) {
        const size_t oi = static_cast<size_t>((r * a.segments + s) * a.inner + j);
        auto at = [&](int64_t k) { return static_cast<size_t>((r * a.axis_size + k) * a.inner + j); };
        if (a.reduce == R::kSum) {
          for (int64_t k = b; k < e; ++k) gi[at(k)] = g[oi];
        } else if (a.reduce == R::kMean) {
          for (int64_t k = b; k < e; ++k) gi[at(k)] = g[oi] / static_cast<double>(e - b);
        } else if (a.reduce == R::kProd) {
          for (int64_t k = b; k < e; ++k) {
            if (std::isnan(x[at(k)]) || x[at(k)] == 0) {
              double p = a.has_initial ? a.initial : 1.0;
              for (int64_t q = b; q < e; ++q) {
                if (q != k) p *= x[at(q)];
              }
              gi[at(k)] = g[oi] * p;
            } else {
              gi[at(k)] = g[oi] * out[oi] / x[at(k)];
            }
          }
        } else {
          int64_t c = 0;
          for (int64_t k = b; k < e; ++k) {
            if (std::isnan(x[at(k)]) || x[at(k)] == out[oi]) {
              gi[at(k)] = g[oi];
              ++c;
            }
          }
          for (int64_t k = b; k < e && c > 1; ++k) {
            if (gi[at(k)] > 0) gi[at(k)] /= static_cast<double>(c);
          }
        }
      }
    }
  }
  return gi;
}

void expect_same(const std::vector<double>& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " at " << i;
    }
  }
}

// A batched problem: outer rows of random lengths (some empty) summing to axis, small integer data (ties, zeros).
Problem random_problem(R r, int64_t outer, int64_t axis, int64_t inner, int64_t segments, bool offsets, unsigned seed) {
  std::mt19937 rng(seed);
  Problem p;
  p.a = make_args(r, outer, axis, inner, segments, offsets);
  for (int64_t row = 0; row < outer; ++row) {
    std::vector<int64_t> cuts{0, axis};
    std::uniform_int_distribution<int64_t> u(0, axis);
    for (int64_t s = 1; s < segments; ++s) cuts.push_back(u(rng));
    std::sort(cuts.begin(), cuts.end());
    if (offsets) {
      p.index.insert(p.index.end(), cuts.begin(), cuts.end());  // segments + 1 offsets from 0 to axis
    } else {
      for (int64_t s = 0; s < segments; ++s) p.index.push_back(cuts[s + 1] - cuts[s]);
    }
  }
  std::uniform_int_distribution<int> v(-3, 3);
  for (int64_t i = 0; i < outer * axis * inner; ++i) p.data.push_back(v(rng) * 0.5);
  return p;
}

TEST(SegmentReduce, ForwardAndBackwardMatchHostLoops) {
  for (R r : kAll) {
    for (bool offsets : {false, true}) {
      for (bool init : {false, true}) {
        for (DType it : {DType::kInt64, DType::kInt32}) {
          Problem p = random_problem(r, 3, 23, 4, 7, offsets, 40 + static_cast<unsigned>(r));
          p.a.index_dtype = it;
          p.a.has_initial = init;
          p.a.initial = 1.5;
          const std::string what = "reduce " + std::to_string(static_cast<int>(r)) + " offsets " +
                                   std::to_string(offsets) + " initial " + std::to_string(init);
          const auto want = host_forward(p.a, p.data, p.index);
          expect_same(run_forward<double>(p.a, p.data, p.index), want, 0, what);
          SegmentReduceArgs a32 = p.a;
          a32.dtype = DType::kFloat32;
          expect_same(run_forward<float>(a32, p.data, p.index), want, 1e-6, what + " f32");
          std::vector<double> g;
          std::mt19937 rng(7);
          std::normal_distribution<double> nd(0, 1);
          for (size_t i = 0; i < want.size(); ++i) g.push_back(nd(rng));
          expect_same(run_backward<double>(p.a, g, p.data, p.index), host_backward(p.a, g, want, p.data, p.index),
                      1e-15, what + " backward");
        }
      }
    }
  }
}

// Literal values from CPU torch 2.13 (float32): data [1, 5, 5, 2, nan, 3, 0, 4, 2, 2, 2], lengths [3, 0, 2, 3, 3]:
// torch._segment_reduce(d, r, lengths=L, initial=...) and _segment_reduce_backward(g, out, d, r, lengths=L,
// initial=...) with g = [1, 2, 3, 4, -6].
TEST(SegmentReduce, MatchesCpuLiterals) {
  const std::vector<double> d{1, 5, 5, 2, kNaN, 3, 0, 4, 2, 2, 2}, g{1, 2, 3, 4, -6};
  const std::vector<int64_t> L{3, 0, 2, 3, 3};
  struct Case {
    R r;
    bool init;
    double initial;
    std::vector<double> out, grad;
  };
  const std::vector<Case> cases{
      {R::kSum, false, 0, {11, 0, kNaN, 7, 6}, {1, 1, 1, 3, 3, 4, 4, 4, -6, -6, -6}},
      {R::kSum, true, 2, {13, 2, kNaN, 9, 8}, {1, 1, 1, 3, 3, 4, 4, 4, -6, -6, -6}},
      {R::kMean, false, 0, {3.6666667461395264, kNaN, kNaN, 2.3333332538604736, 2},
       {0.3333333432674408, 0.3333333432674408, 0.3333333432674408, 1.5, 1.5, 1.3333333730697632, 1.3333333730697632,
        1.3333333730697632, -2, -2, -2}},
      {R::kMean, true, 9, {6.666666507720947, 9, kNaN, 5.333333492279053, 5},
       {0.3333333432674408, 0.3333333432674408, 0.3333333432674408, 1.5, 1.5, 1.3333333730697632, 1.3333333730697632,
        1.3333333730697632, -2, -2, -2}},
      {R::kMax, false, 0, {5, -kInf, kNaN, 4, 2}, {0, 0.5, 0.5, 0, 3, 0, 0, 4, -6, -6, -6}},
      {R::kMax, true, 9, {9, 9, kNaN, 9, 9}, {0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0}},
      {R::kMin, false, 0, {1, kInf, kNaN, 0, 2}, {1, 0, 0, 0, 3, 0, 4, 0, -6, -6, -6}},
      {R::kMin, true, 2, {1, 2, kNaN, 0, 2}, {1, 0, 0, 0, 3, 0, 4, 0, -6, -6, -6}},
      {R::kProd, false, 0, {25, 1, kNaN, 0, 8}, {25, 5, 5, kNaN, 6, 0, 48, 0, -24, -24, -24}},
      {R::kProd, true, 2, {50, 2, kNaN, 0, 16}, {50, 10, 10, kNaN, 12, 0, 96, 0, -48, -48, -48}},
  };
  for (const Case& c : cases) {
    SegmentReduceArgs a = make_args(c.r, 1, 11, 1, 5, false, DType::kFloat32);
    a.has_initial = c.init;
    a.initial = c.initial;
    const std::string what = "reduce " + std::to_string(static_cast<int>(c.r)) + " initial " + std::to_string(c.init);
    expect_same(run_forward<float>(a, d, L), c.out, 0, what);
    expect_same(run_backward<float>(a, g, d, L), c.grad, 0, what + " backward");
  }
  // Zeros and NaN in prod (CPU torch 2.13): segments [0, 3], [0, 2], [0, 5], [nan, 2].
  const std::vector<double> z{0, 3, 0, 2, 0, 5, kNaN, 2};
  SegmentReduceArgs a = make_args(R::kProd, 1, 8, 1, 4, false, DType::kFloat32);
  expect_same(run_forward<float>(a, z, {2, 2, 2, 2}), {0, 0, 0, kNaN}, 0, "prod zeros");
  expect_same(run_backward<float>(a, {1, 1, 1, 1}, z, {2, 2, 2, 2}), {3, 0, 2, 0, 5, 0, 2, kNaN}, 0, "prod zeros bw");
  a.has_initial = true;
  a.initial = 3;
  expect_same(run_backward<float>(a, {1, 1, 1, 1}, z, {2, 2, 2, 2}), {9, 0, 6, 0, 15, 0, 6, kNaN}, 0,
              "prod zeros bw initial");
  // Ties with a negative gradient are not split; NaN elements all take the gradient (CPU's rule).
  a = make_args(R::kMax, 1, 3, 1, 1, false, DType::kFloat32);
  expect_same(run_backward<float>(a, {-3}, {3, 3, 3}, {3}), {-3, -3, -3}, 0, "negative ties");
  expect_same(run_backward<float>(a, {4}, {kNaN, 1, kNaN}, {3}), {2, 0, 2}, 0, "nan ties");
}

// Offsets starting past 0 and lengths short of the axis (unsafe): CPU torch 2.13 gives the uncovered gradient 0.
TEST(SegmentReduce, UncoveredElementsAndEmptyRows) {
  const std::vector<double> d{1, 2, 3, 4, 5, 6, 7};
  SegmentReduceArgs a = make_args(R::kSum, 1, 7, 1, 2, true, DType::kFloat32);
  expect_same(run_forward<float>(a, d, {1, 3, 5}), {5, 9}, 0, "offsets");
  expect_same(run_backward<float>(a, {1, 2}, d, {1, 3, 5}), {0, 1, 1, 2, 2, 0, 0}, 0, "offsets bw");
  a = make_args(R::kSum, 1, 7, 1, 2, false, DType::kFloat32);
  a.unsafe = true;
  expect_same(run_forward<float>(a, d, {2, 3}), {3, 12}, 0, "unsafe");
  expect_same(run_backward<float>(a, {1, 2}, d, {2, 3}), {1, 1, 2, 2, 2, 0, 0}, 0, "unsafe bw");
  // No segments (offsets of one element): backward zeros the data, forward writes nothing.
  a = make_args(R::kSum, 2, 3, 1, 0, true);
  expect_same(run_backward<double>(a, {}, {1, 2, 3, 4, 5, 6}, {0, 0}), std::vector<double>(6, 0.0), 0, "no segments");
  // Empty data axis: every segment empty, each the start value.
  a = make_args(R::kMin, 1, 0, 2, 2);
  expect_same(run_forward<double>(a, {}, {0, 0}), {kInf, kInf, kInf, kInf}, 0, "empty axis");
}

// Half / BFloat16 round every operation (CPU torch 2.13 values).
TEST(SegmentReduce, ReducedPrecisionRoundsEachStepAsCpu) {
  std::vector<double> d(16, 0.0039);
  d[0] = 1.0;
  d.insert(d.end(), {3, 3, 3});
  const std::vector<int64_t> L{16, 3};
  SegmentReduceArgs a = make_args(R::kSum, 1, 19, 1, 2, false, DType::kBFloat16);
  EXPECT_EQ(run_forward<BFloat16>(a, d, L), (std::vector<double>{1.0, 9.0}));
  a.reduce = R::kMean;
  EXPECT_EQ(run_forward<BFloat16>(a, d, L), (std::vector<double>{0.0625, 3.0}));
  a = make_args(R::kSum, 1, 19, 1, 2, false, DType::kFloat16);
  EXPECT_EQ(run_forward<Half>(a, d, L), (std::vector<double>{1.05859375, 9.0}));
  a.reduce = R::kMean;
  EXPECT_EQ(run_forward<Half>(a, d, L), (std::vector<double>{0.066162109375, 3.0}));
  // Mean of 2049 ones: the sum saturates (bf16 at 256, f16 at 2048) and the length rounds to 2048.
  a = make_args(R::kMean, 1, 2049, 1, 1, false, DType::kBFloat16);
  EXPECT_EQ(run_forward<BFloat16>(a, std::vector<double>(2049, 1.0), {2049}), (std::vector<double>{0.125}));
  a.dtype = DType::kFloat16;
  EXPECT_EQ(run_forward<Half>(a, std::vector<double>(2049, 1.0), {2049}), (std::vector<double>{1.0}));
  // Backward: mean of 3 halves, 300 tied maxima, initial 0.1 (converted to the dtype).
  a = make_args(R::kMean, 1, 3, 1, 1, false, DType::kBFloat16);
  EXPECT_EQ(run_backward<BFloat16>(a, {1.0}, {0.5, 0.5, 0.5}, {3}), (std::vector<double>(3, 0.333984375)));
  a.dtype = DType::kFloat16;
  EXPECT_EQ(run_backward<Half>(a, {1.0}, {0.5, 0.5, 0.5}, {3}), (std::vector<double>(3, 0.333251953125)));
  a = make_args(R::kMax, 1, 300, 1, 1, false, DType::kBFloat16);
  EXPECT_EQ(run_backward<BFloat16>(a, {1.0}, std::vector<double>(300, 0.25), {300})[0], 0.003326416015625);
  a.dtype = DType::kFloat16;
  EXPECT_EQ(run_backward<Half>(a, {1.0}, std::vector<double>(300, 0.25), {300})[0], 0.00333404541015625);
  a = make_args(R::kSum, 1, 1, 1, 1, false, DType::kBFloat16);
  a.has_initial = true;
  a.initial = 0.1;
  EXPECT_EQ(run_forward<BFloat16>(a, {1.0}, {1}), (std::vector<double>{1.1015625}));
  a.dtype = DType::kFloat16;
  EXPECT_EQ(run_forward<Half>(a, {1.0}, {1}), (std::vector<double>{1.099609375}));
}

// CPU's messages (torch 2.13) for bad lengths; our own for segments outside the axis.
TEST(SegmentReduce, BadSegmentsAreKernelErrors) {
  struct Bad {
    SegmentReduceArgs a;
    std::vector<int64_t> index;
    std::string msg;
  };
  SegmentReduceArgs unsafe = make_args(R::kSum, 1, 8, 1, 2);
  unsafe.unsafe = true;
  const std::vector<Bad> bad{
      {make_args(R::kSum, 1, 8, 1, 2), {9, -1}, "lengths contains negative value!"},
      {make_args(R::kSum, 1, 8, 1, 2), {3, 4},
       "segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) when !unsafe."},
      {make_args(R::kSum, 2, 4, 1, 2), {1, 3, 2, 1},
       "segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) when !unsafe."},
      {make_args(R::kSum, 1, 8, 1, 3, true), {0, 5, 3, 8}, "Expected segment_length >= 0 to be true, but got false."},
      {make_args(R::kSum, 1, 8, 1, 2, true), {0, 3, 9}, "segment_reduce(): segment 1 of row 0 spans [3, 9), outside "
                                                         "data.size(axis) = 8"},
      {unsafe, {5, 4}, "segment_reduce(): segment 1 of row 0 spans [5, 9), outside data.size(axis) = 8"},
  };
  for (const Bad& b : bad) {
    DeviceBuf<double> d{std::vector<double>(static_cast<size_t>(b.a.outer * b.a.axis_size), 1.0)},
        out{std::vector<double>(static_cast<size_t>(b.a.outer * b.a.segments))};
    DeviceBuf<int64_t> idx(b.index);
    ASSERT_OK(npu_kernels::segment_reduce_forward(nullptr, b.a, d.ptr, idx.ptr, out.ptr));
    EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError) << b.msg;
    const std::string msg = npu_sim::last_error_message();
    EXPECT_NE(msg.find(b.msg), std::string::npos) << msg;
    ASSERT_OK(npu_sim::device_restart(0));
  }
  // The backward checks only what memory safety needs: lengths short of the axis pass, past it fail.
  DeviceBuf<double> g{std::vector<double>(2, 1.0)}, d{std::vector<double>(8, 1.0)}, gi{std::vector<double>(8)};
  DeviceBuf<int64_t> idx{std::vector<int64_t>{5, 4}};
  ASSERT_OK(npu_kernels::segment_reduce_backward(nullptr, make_args(R::kSum, 1, 8, 1, 2), g.ptr, g.ptr, d.ptr,
                                                 idx.ptr, gi.ptr));
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
  ASSERT_OK(npu_sim::device_restart(0));
}

TEST(SegmentReduce, BadArgumentsAreRefused) {
  const auto bad = npu_sim::Status::kInvalidValue;
  DeviceBuf<double> d{std::vector<double>(8)}, out{std::vector<double>(2)};
  DeviceBuf<int64_t> idx{std::vector<int64_t>{4, 4}};
  auto fwd = [&](const SegmentReduceArgs& a) {
    return npu_kernels::segment_reduce_forward(nullptr, a, d.ptr, idx.ptr, out.ptr);
  };
  EXPECT_EQ(fwd(make_args(R::kSum, 1, 8, 1, 2, false, DType::kInt32)), bad);
  EXPECT_EQ(fwd(make_args(R::kSum, 1, 8, 1, 2, false, DType::kFloat64, DType::kInt16)), bad);
  EXPECT_EQ(fwd(make_args(R::kSum, 1, -8, 1, 2)), bad);
  EXPECT_EQ(npu_kernels::segment_reduce_forward(nullptr, make_args(R::kSum, 1, 8, 1, 2), d.ptr, nullptr, out.ptr), bad);
  EXPECT_EQ(npu_kernels::segment_reduce_backward(nullptr, make_args(R::kSum, 1, 8, 1, 2), out.ptr, out.ptr, d.ptr,
                                                 idx.ptr, nullptr),
            bad);
  ASSERT_OK(npu_sim::device_synchronize(0));
}

TEST(SegmentReduce, ConcurrentStreamsAgree) {
  Problem p = random_problem(R::kProd, 4, 301, 5, 37, false, 90);
  Problem q = random_problem(R::kMax, 3, 257, 7, 19, true, 91);
  std::vector<double> gp(static_cast<size_t>(4 * 37 * 5), 0.5), gq(static_cast<size_t>(3 * 19 * 7), -1.25);
  const auto want_p = run_backward<double>(p.a, gp, p.data, p.index);
  const auto want_q = run_backward<double>(q.a, gq, q.data, q.index);
  npu_sim::Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s1));
  ASSERT_OK(npu_sim::stream_create(0, &s2));
  std::vector<double> got_p, got_q;
  std::thread t1([&] { for (int i = 0; i < 10; ++i) got_p = run_backward<double>(p.a, gp, p.data, p.index, s1); });
  std::thread t2([&] { for (int i = 0; i < 10; ++i) got_q = run_backward<double>(q.a, gq, q.data, q.index, s2); });
  t1.join();
  t2.join();
  expect_same(got_p, want_p, 0, "prod");
  expect_same(got_q, want_q, 0, "max");
  ASSERT_OK(npu_sim::stream_destroy(s1));
  ASSERT_OK(npu_sim::stream_destroy(s2));
}

}  // namespace
