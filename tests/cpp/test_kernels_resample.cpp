// gtests of the separable resampling kernel (torch-free): nearest and padding gathers against hand-made
// expectations, trilinear exact on linear functions, bicubic interpolating, every backward mode (2-D and 3-D, and the
// antialiased window modes) as the exact adjoint of its forward (<A x, g> == <x, A^T g>), antialiased filters and the
// uint8 fixed-point path keeping constants, and the window engine's scratch contract.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
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

// The forward, with the scratch the window modes ask for (none for the tap modes).
std::vector<double> run(const ResampleArgs& a, const std::vector<double>& x) {
  DeviceBuf<double> in(x), out(std::vector<double>(a.planes * a.d.out * a.h.out * a.w.out));
  DeviceBuf<double> scratch(std::vector<double>(npu_kernels::resample_scratch_bytes(a) / sizeof(double) + 1));
  EXPECT_EQ(npu_kernels::resample(nullptr, a, in.ptr, out.ptr, scratch.ptr), npu_sim::Status::kSuccess);
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kSuccess);
  return out.read();
}

std::vector<double> run_backward(const ResampleArgs& a, const std::vector<double>& g) {
  DeviceBuf<double> go(g), gi(std::vector<double>(a.planes * a.d.in * a.h.in * a.w.in));
  EXPECT_EQ(npu_kernels::resample_backward(nullptr, a, go.ptr, gi.ptr), npu_sim::Status::kSuccess);
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kSuccess);
  return gi.read();
}

// <A x, g> == <x, A^T g>: y = A x from the forward, gx = A^T g from the backward.
void expect_adjoint(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& g,
                    const std::vector<double>& gx, const std::string& what) {
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < y.size(); ++i) lhs += y[i] * g[i];
  for (size_t i = 0; i < x.size(); ++i) rhs += x[i] * gx[i];
  EXPECT_NEAR(lhs, rhs, 1e-12) << what;
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

// 3-D gathers: nearest doubles every axis; replicate padding of depth 1 before and 2 after (and a crop of w) repeats
// the border planes.
TEST(Resample, ThreeDimensionalGathers) {
  ResampleArgs a = args(ResampleMode::kNearest, 1, 1, 2, 2, 4);
  a.d.in = 2, a.d.out = 4;
  const auto y = run(a, {1, 2, 3, 4});  // (d, h=1, w) = [[1, 2]], [[3, 4]]
  EXPECT_EQ(y, (std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2,
                                    3, 3, 4, 4, 3, 3, 4, 4, 3, 3, 4, 4, 3, 3, 4, 4}));
  ResampleArgs r = args(ResampleMode::kReplicate, 1, 1, 2, 1, 1);
  r.d.in = 2, r.d.out = 5, r.d.pad_before = 1;
  r.w.pad_before = -1;  // keep the second column only
  EXPECT_EQ(run(r, {1, 2, 3, 4}), (std::vector<double>{2, 2, 4, 4, 4}));
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
                            ResampleMode::kReflect, ResampleMode::kReplicate, ResampleMode::kCubic}) {
    for (int variant = 0; variant < 4; ++variant) {
      const bool align = variant % 2 == 1, three_d = variant >= 2 || mode == ResampleMode::kLinear;
      if (three_d && mode == ResampleMode::kCubic) continue;  // bicubic is 2-D only
      ResampleArgs a = args(mode, 3, 4, 5, 7, 9);
      a.w.align_corners = a.h.align_corners = a.d.align_corners = align;
      if (three_d) a.d.in = 3, a.d.out = 5, a.d.pad_before = 1;  // trilinear, 3-D nearest and padding
      if (mode == ResampleMode::kReflect || mode == ResampleMode::kReplicate) {
        a.h.pad_before = 2;
        a.w.pad_before = 3;
      }
      if (mode == ResampleMode::kNearestExact) a.w.scale = 1.9;  // a user scale factor instead of in/out
      std::vector<double> x(a.planes * a.d.in * a.h.in * a.w.in), g(a.planes * a.d.out * a.h.out * a.w.out);
      for (auto& v : x) v = u(rng);
      for (auto& v : g) v = u(rng);
      expect_adjoint(x, run(a, x), g, run_backward(a, g), std::string(npu_kernels::resample_name(mode, false)) +
                     " variant " + std::to_string(variant));
    }
  }
}

// Trilinear reproduces a linear function exactly (align_corners: no clamping). Bicubic (Keys, A = -0.75) is an
// interpolation, reproducing the samples where the source position is an integer, and its weights sum to 1
// (constants are kept, clamped border taps included).
TEST(Resample, TrilinearIsExactOnLinearFunctionsAndBicubicInterpolates) {
  ResampleArgs a = args(ResampleMode::kLinear, 2, 4, 5, 7, 9);
  a.d.in = 3, a.d.out = 6;
  a.d.align_corners = a.h.align_corners = a.w.align_corners = true;
  auto f = [](double d, double h, double w) { return 2 * d + 3 * h - w + 0.5; };
  std::vector<double> x;
  for (int p = 0; p < 2; ++p)
    for (int d = 0; d < 3; ++d)
      for (int h = 0; h < 4; ++h)
        for (int w = 0; w < 5; ++w) x.push_back(f(d, h, w) + p);
  const auto y = run(a, x);
  size_t i = 0;
  for (int p = 0; p < 2; ++p)
    for (int d = 0; d < 6; ++d)
      for (int h = 0; h < 7; ++h)
        for (int w = 0; w < 9; ++w, ++i) ASSERT_NEAR(y[i], f(d * 2.0 / 5, h * 3.0 / 6, w * 4.0 / 8) + p, 1e-12);
  ResampleArgs c = args(ResampleMode::kCubic, 1, 3, 5, 5, 9);  // align_corners: source = o / 2 on both axes
  c.h.align_corners = c.w.align_corners = true;
  std::vector<double> img(15);
  for (int k = 0; k < 15; ++k) img[k] = std::sin(1.0 + k * k);
  const auto r = run(c, img);
  for (int oh = 0; oh < 5; oh += 2)
    for (int ow = 0; ow < 9; ow += 2) EXPECT_NEAR(r[oh * 9 + ow], img[oh / 2 * 5 + ow / 2], 1e-12) << oh << "," << ow;
  c.h.align_corners = c.w.align_corners = false;  // any source positions, border clamping included
  for (double v : run(c, std::vector<double>(15, 2.5))) EXPECT_NEAR(v, 2.5, 1e-12);
}

// Downsampling (windows widened by the scale), upsampling, and one axis unchanged (its pass skipped).
const int64_t kWindowShapes[][4] = {{11, 13, 4, 5}, {3, 4, 7, 10}, {6, 13, 6, 4}, {9, 2, 3, 2}};

TEST(Resample, AntialiasedBackwardIsTheAdjointOfTheTwoPasses) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (ResampleMode mode : {ResampleMode::kLinearAA, ResampleMode::kCubicAA, ResampleMode::kLanczosAA}) {
    for (const auto& sh : kWindowShapes) {
      ResampleArgs a = args(mode, 2, sh[0], sh[1], sh[2], sh[3]);
      std::vector<double> x(a.planes * a.h.in * a.w.in), g(a.planes * a.h.out * a.w.out);
      for (auto& v : x) v = u(rng);
      for (auto& v : g) v = u(rng);
      expect_adjoint(x, run(a, x), g, run_backward(a, g), std::string(npu_kernels::resample_name(mode, false)) +
                     " " + std::to_string(sh[0]) + "x" + std::to_string(sh[1]));
    }
  }
}

// Each window's weights sum to 1, so a constant image stays constant; in uint8 too, where the int16 weights'
// rounding error (at most half a unit each, with 14+ fractional bits) stays below half a pixel level.
TEST(Resample, WindowModesKeepConstants) {
  for (ResampleMode mode : {ResampleMode::kLinearAA, ResampleMode::kCubicAA, ResampleMode::kLanczosAA,
                            ResampleMode::kLinear, ResampleMode::kCubic}) {
    for (const auto& sh : kWindowShapes) {
      ResampleArgs a = args(mode, 3, sh[0], sh[1], sh[2], sh[3]);
      if (mode == ResampleMode::kLinearAA || mode == ResampleMode::kCubicAA || mode == ResampleMode::kLanczosAA) {
        for (double v : run(a, std::vector<double>(a.planes * a.h.in * a.w.in, -1.25))) EXPECT_NEAR(v, -1.25, 1e-12);
      }
      a.dtype = DType::kUInt8;
      ASSERT_TRUE(npu_kernels::is_window_mode(a.mode, a.dtype));
      DeviceBuf<uint8_t> in(std::vector<uint8_t>(a.planes * a.h.in * a.w.in, 201));
      DeviceBuf<uint8_t> out(std::vector<uint8_t>(a.planes * a.h.out * a.w.out));
      DeviceBuf<uint8_t> scratch(std::vector<uint8_t>(npu_kernels::resample_scratch_bytes(a) + 1));
      ASSERT_EQ(npu_kernels::resample(nullptr, a, in.ptr, out.ptr, scratch.ptr), npu_sim::Status::kSuccess);
      ASSERT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kSuccess);
      for (uint8_t v : out.read()) EXPECT_EQ(v, 201) << npu_kernels::resample_name(mode, false);
    }
  }
}

// Both axes changing need the scratch for the w pass (planes x in_h x out_w elements): without it the launch is
// refused, never run into a null buffer. One axis needs none. 3-D and integer backward are not served.
TEST(Resample, WindowModesScratchContract) {
  ResampleArgs a = args(ResampleMode::kCubicAA, 2, 6, 8, 3, 5);
  EXPECT_EQ(npu_kernels::resample_scratch_bytes(a), 2u * 6 * 5 * sizeof(double));
  DeviceBuf<double> in(std::vector<double>(2 * 6 * 8, 1.0)), out(std::vector<double>(2 * 3 * 5));
  EXPECT_EQ(npu_kernels::resample(nullptr, a, in.ptr, out.ptr), npu_sim::Status::kInvalidValue);
  a.h.out = 6;
  EXPECT_EQ(npu_kernels::resample_scratch_bytes(a), 0u);
  EXPECT_EQ(npu_kernels::resample_scratch_bytes(args(ResampleMode::kLinear, 2, 6, 8, 3, 5)), 0u);  // tap engine
  ResampleArgs v = args(ResampleMode::kLinearAA, 1, 2, 2, 3, 3);
  v.d.in = 2;
  EXPECT_EQ(npu_kernels::resample(nullptr, v, in.ptr, out.ptr), npu_sim::Status::kInvalidValue);
  ResampleArgs u = args(ResampleMode::kLinear, 1, 2, 2, 3, 3);
  u.dtype = DType::kUInt8;
  EXPECT_EQ(npu_kernels::resample_backward(nullptr, u, in.ptr, out.ptr), npu_sim::Status::kInvalidValue);
}

TEST(Resample, LinearRejectsIntegerDtypes) {
  ResampleArgs a = args(ResampleMode::kLinear, 1, 1, 2, 1, 3);
  a.dtype = DType::kInt64;
  DeviceBuf<int64_t> in(std::vector<int64_t>{1, 2}), out(std::vector<int64_t>(3));
  EXPECT_EQ(npu_kernels::resample(nullptr, a, in.ptr, out.ptr), npu_sim::Status::kInvalidValue);
  EXPECT_EQ(npu_kernels::resample_backward(nullptr, a, out.ptr, in.ptr), npu_sim::Status::kInvalidValue);
}

}  // namespace
