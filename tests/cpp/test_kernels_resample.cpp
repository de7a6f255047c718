// gtests of the separable resampling kernel (torch-free): nearest and padding gathers against hand-made
// expectations, and every backward mode as the exact adjoint of its forward (<A x, g> == <x, A^T g>).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "npu_kernels/resample.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::DType;
using npu_kernels::ResampleArgs;
using npu_kernels::ResampleMode;

ResampleArgs args(ResampleMode mode, int64_t planes, int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w) {
  ResampleArgs a;
  a.dtype = DType::kFloat64;
  a.mode = mode;
  a.planes = planes;
  a.h.in = in_h;
  a.h.out = out_h;
  a.w.in = in_w;
  a.w.out = out_w;
  return a;
}

std::vector<double> run(const ResampleArgs& a, const std::vector<double>& x) {
  DeviceBuf<double> in(x), out(std::vector<double>(a.planes * a.h.out * a.w.out));
  EXPECT_EQ(npu_kernels::resample2d(nullptr, a, in.ptr, out.ptr), npu_sim::Status::kSuccess);
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kSuccess);
  return out.read();
}

std::vector<double> run_backward(const ResampleArgs& a, const std::vector<double>& g) {
  DeviceBuf<double> go(g), gi(std::vector<double>(a.planes * a.h.in * a.w.in));
  EXPECT_EQ(npu_kernels::resample2d_backward(nullptr, a, go.ptr, gi.ptr), npu_sim::Status::kSuccess);
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kSuccess);
  return gi.read();
}

TEST(Resample, NearestDoublesAndReflectPadMirrors) {
  const std::vector<double> x = {1, 2, 3};
  EXPECT_EQ(run(args(ResampleMode::kNearest, 1, 1, 3, 1, 6), x), (std::vector<double>{1, 1, 2, 2, 3, 3}));
  ResampleArgs r = args(ResampleMode::kReflect, 1, 1, 3, 1, 7);
  r.w.pad_before = 2;
  EXPECT_EQ(run(r, x), (std::vector<double>{3, 2, 1, 2, 3, 2, 1}));
  r.mode = ResampleMode::kReplicate;
  EXPECT_EQ(run(r, x), (std::vector<double>{1, 1, 1, 2, 3, 3, 3}));
}

TEST(Resample, LinearAlignCornersHitsEndpoints) {
  ResampleArgs a = args(ResampleMode::kLinear, 1, 1, 2, 1, 5);
  a.w.align_corners = true;
  const auto y = run(a, {0.0, 4.0});
  EXPECT_EQ(y, (std::vector<double>{0, 1, 2, 3, 4}));
}

TEST(Resample, BackwardIsTheAdjointOfForward) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  for (ResampleMode mode : {ResampleMode::kNearest, ResampleMode::kNearestExact, ResampleMode::kLinear,
                            ResampleMode::kReflect, ResampleMode::kReplicate}) {
    for (bool align : {false, true}) {
      ResampleArgs a = args(mode, 3, 4, 5, 7, 9);
      a.w.align_corners = a.h.align_corners = align;
      if (mode == ResampleMode::kReflect || mode == ResampleMode::kReplicate) {
        a.h.pad_before = 2;
        a.w.pad_before = 3;
      }
      if (mode == ResampleMode::kNearestExact) a.w.scale = 1.9;  // a user scale factor instead of in/out
      std::vector<double> x(a.planes * a.h.in * a.w.in), g(a.planes * a.h.out * a.w.out);
      for (auto& v : x) v = u(rng);
      for (auto& v : g) v = u(rng);
      const auto y = run(a, x), gx = run_backward(a, g);
      double lhs = 0, rhs = 0;
      for (size_t i = 0; i < y.size(); ++i) lhs += y[i] * g[i];
      for (size_t i = 0; i < x.size(); ++i) rhs += x[i] * gx[i];
      EXPECT_NEAR(lhs, rhs, 1e-12) << npu_kernels::resample_name(mode, false) << " align=" << align;
    }
  }
}

TEST(Resample, LinearRejectsIntegerDtypes) {
  ResampleArgs a = args(ResampleMode::kLinear, 1, 1, 2, 1, 3);
  a.dtype = DType::kInt64;
  DeviceBuf<int64_t> in(std::vector<int64_t>{1, 2}), out(std::vector<int64_t>(3));
  EXPECT_EQ(npu_kernels::resample2d(nullptr, a, in.ptr, out.ptr), npu_sim::Status::kInvalidValue);
  EXPECT_EQ(npu_kernels::resample2d_backward(nullptr, a, out.ptr, in.ptr), npu_sim::Status::kInvalidValue);
}

}  // namespace
