// gtests of im2col / col2im (torch-free): a hand-checked patch layout, and col2im as the exact adjoint
// of im2col (<im2col(x), c> == <x, col2im(c)>) over padding, stride and dilation.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "npu_kernels/fold.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::DType;
using npu_kernels::FoldArgs;

FoldArgs geometry(int64_t k, int64_t d, int64_t p, int64_t s) {
  FoldArgs a;
  a.dtype = DType::kFloat64;
  a.planes = 2;
  a.in_h = 5;
  a.in_w = 4;
  a.kernel_h = a.kernel_w = k;
  a.dilation_h = a.dilation_w = d;
  a.pad_h = a.pad_w = p;
  a.stride_h = a.stride_w = s;
  a.out_h = (a.in_h + 2 * p - d * (k - 1) - 1) / s + 1;
  a.out_w = (a.in_w + 2 * p - d * (k - 1) - 1) / s + 1;
  return a;
}

TEST(Fold, Im2colLaysOutPatchesTapMajor) {
  FoldArgs a = geometry(2, 1, 0, 1);
  a.planes = 1;
  a.in_h = a.in_w = 2;
  a.out_h = a.out_w = 1;
  DeviceBuf<double> x(std::vector<double>{1, 2, 3, 4}), c(std::vector<double>(4));
  ASSERT_OK(npu_kernels::im2col(nullptr, a, x.ptr, c.ptr));
  ASSERT_OK(npu_sim::device_synchronize(0));
  EXPECT_EQ(c.read(), (std::vector<double>{1, 2, 3, 4}));
}

TEST(Fold, Col2imIsTheAdjointOfIm2col) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  for (const auto& a : {geometry(2, 1, 0, 1), geometry(3, 1, 1, 2), geometry(2, 2, 1, 1), geometry(3, 1, 2, 3)}) {
    const int64_t n_img = a.planes * a.in_h * a.in_w, n_col = a.planes * a.kernel_h * a.kernel_w * a.out_h * a.out_w;
    std::vector<double> x(n_img), c(n_col);
    for (auto& v : x) v = u(rng);
    for (auto& v : c) v = u(rng);
    DeviceBuf<double> dx(x), dc(c), cols{std::vector<double>(n_col)}, img{std::vector<double>(n_img)};
    ASSERT_OK(npu_kernels::im2col(nullptr, a, dx.ptr, cols.ptr));
    ASSERT_OK(npu_kernels::col2im(nullptr, a, dc.ptr, img.ptr));
    ASSERT_OK(npu_sim::device_synchronize(0));
    const auto ax = cols.read(), atc = img.read();
    double lhs = 0, rhs = 0;
    for (int64_t i = 0; i < n_col; ++i) lhs += ax[i] * c[i];
    for (int64_t i = 0; i < n_img; ++i) rhs += x[i] * atc[i];
    EXPECT_NEAR(lhs, rhs, 1e-12);
  }
}

}  // namespace
