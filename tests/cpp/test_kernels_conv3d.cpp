// conv3d on the kernels' oneDNN path (float32) and on the 2-D depth slices (float64): forward against a direct
// loop, the two backward passes by the adjoint identities <conv(x, w), gy> = <x, backward_input(gy, w)> =
// <w, backward_weight(x, gy)>, strided operands (a channel slice), cropped trailing rows, two streams at once,
// and what the paths refuse.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>
#include <type_traits>
#include <vector>

#include "npu_kernels/conv.h"
#include "npu_kernels/gemm.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::Conv3dArgs;
using npu_kernels::DType;

struct Case3d {
  int64_t n, c, o, d, h, w, k, stride, pad, dil;
};

template <typename T = float>
std::vector<T> randoms(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<T> dist(-1, 1);
  std::vector<T> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

int64_t out_size(int64_t in, const Case3d& k) { return (in + 2 * k.pad - k.dil * (k.k - 1) - 1) / k.stride + 1; }

// Dense NCDHW tensors, except x, which is a channel slice [1, c + 1) of a (c + 2)-channel buffer.
template <typename T = float>
struct Problem {
  Case3d k;
  int64_t od, oh, ow;
  std::vector<T> x, w, y;
  Problem(const Case3d& cs, unsigned seed) : k(cs) {
    od = out_size(k.d, k), oh = out_size(k.h, k), ow = out_size(k.w, k);
    x = randoms<T>(k.n * (k.c + 2) * k.d * k.h * k.w, seed);
    w = randoms<T>(k.o * k.c * k.k * k.k * k.k, seed + 1);
    y = randoms<T>(k.n * k.o * od * oh * ow, seed + 2);
  }
  Conv3dArgs args(T* dx, T* dw, T* dy) const {
    Conv3dArgs a;
    a.dtype = std::is_same_v<T, double> ? DType::kFloat64 : DType::kFloat32;
    a.batch = k.n, a.in_channels = k.c, a.out_channels = k.o;
    const int64_t in[] = {k.d, k.h, k.w}, out[] = {od, oh, ow};
    for (int i = 0; i < 3; ++i) {
      a.in[i] = in[i], a.out[i] = out[i], a.kernel[i] = k.k, a.stride[i] = k.stride, a.pad[i] = k.pad;
      a.dilation[i] = k.dil;
    }
    const int64_t vol = k.d * k.h * k.w;
    a.x = dx + vol;  // channel 1 of c + 2
    const int64_t xs[] = {(k.c + 2) * vol, vol, k.h * k.w, k.w, 1};
    const int64_t kv = k.k * k.k * k.k, ws[] = {k.c * kv, kv, k.k * k.k, k.k, 1};
    const int64_t ys[] = {k.o * od * oh * ow, od * oh * ow, oh * ow, ow, 1};
    std::copy(xs, xs + 5, a.x_strides);
    std::copy(ws, ws + 5, a.w_strides);
    std::copy(ys, ys + 5, a.y_strides);
    a.w = dw, a.y = dy;
    return a;
  }
  T xv(int64_t n, int64_t c, int64_t z, int64_t i, int64_t j) const {
    return x[(((n * (k.c + 2) + c + 1) * k.d + z) * k.h + i) * k.w + j];
  }
  double reference(int64_t n, int64_t o, int64_t z, int64_t i, int64_t j) const {
    double s = 0;
    for (int64_t c = 0; c < k.c; ++c)
      for (int64_t a = 0; a < k.k; ++a)
        for (int64_t b = 0; b < k.k; ++b)
          for (int64_t e = 0; e < k.k; ++e) {
            const int64_t zz = z * k.stride - k.pad + a * k.dil, ii = i * k.stride - k.pad + b * k.dil,
                          jj = j * k.stride - k.pad + e * k.dil;
            if (zz < 0 || zz >= k.d || ii < 0 || ii >= k.h || jj < 0 || jj >= k.w) continue;
            s += double(xv(n, c, zz, ii, jj)) * w[(((o * k.c + c) * k.k + a) * k.k + b) * k.k + e];
          }
    return s;
  }
};

template <typename T>
double dot(const std::vector<T>& a, const std::vector<T>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

template <typename T = float>
void run_case(const Case3d& cs, npu_sim::Stream stream, unsigned seed) {
  const double tol = std::is_same_v<T, double> ? 1e-10 : 1e-4;
  const Problem<T> p(cs, seed);
  // forward against the loop
  DeviceBuf<T> dx(p.x), dw(p.w), dy(std::vector<T>(p.y.size(), NAN));
  ASSERT_OK(npu_kernels::conv3d_forward(stream, p.args(dx.ptr, dw.ptr, dy.ptr)));
  ASSERT_OK(npu_sim::stream_synchronize(stream));
  const auto y = dy.read();
  for (int64_t n = 0; n < cs.n; ++n)
    for (int64_t o = 0; o < cs.o; ++o)
      for (int64_t z = 0; z < p.od; ++z)
        for (int64_t i = 0; i < p.oh; ++i)
          for (int64_t j = 0; j < p.ow; ++j) {
            const T got = y[(((n * cs.o + o) * p.od + z) * p.oh + i) * p.ow + j];
            ASSERT_NEAR(got, p.reference(n, o, z, i, j), tol) << n << " " << o << " " << z << " " << i << " " << j;
          }
  // <conv(x, w), gy> = <x, backward_input(gy, w)>, over the slice (the other channels must stay untouched)
  std::vector<T> poison(p.x.size(), T(7));
  DeviceBuf<T> dgx(poison), dgy(p.y), dgw(std::vector<T>(p.w.size(), NAN));
  Conv3dArgs bi = p.args(dgx.ptr, dw.ptr, dgy.ptr);
  DeviceBuf<char> scratch(std::vector<char>(npu_kernels::conv3d_backward_input_scratch_bytes(bi)));
  bi.scratch = scratch.ptr;
  bi.scratch_bytes = scratch.n;
  ASSERT_OK(npu_kernels::conv3d_backward_input(stream, bi));
  ASSERT_OK(npu_kernels::conv3d_backward_weight(stream, p.args(dx.ptr, dgw.ptr, dgy.ptr)));
  ASSERT_OK(npu_sim::stream_synchronize(stream));
  const auto gx = dgx.read(), gw = dgw.read();
  const double lhs = dot(y, p.y);
  double rhs_x = 0;
  const int64_t vol = cs.d * cs.h * cs.w;
  for (int64_t n = 0; n < cs.n; ++n)
    for (int64_t c = 0; c < cs.c + 2; ++c)
      for (int64_t v = 0; v < vol; ++v) {
        const std::size_t at = (n * (cs.c + 2) + c) * vol + v;
        if (c == 0 || c == cs.c + 1) {
          ASSERT_EQ(gx[at], T(7)) << "channel outside the slice written";
        } else {
          rhs_x += double(gx[at]) * p.x[at];
        }
      }
  EXPECT_NEAR(rhs_x, lhs, tol * (1 + std::fabs(lhs)));
  EXPECT_NEAR(dot(gw, p.w), lhs, tol * (1 + std::fabs(lhs)));
}

bool onednn() { return std::string(npu_kernels::conv_library_name()).rfind("onednn", 0) == 0; }

}  // namespace

TEST(KernelsConv3d, ForwardAndAdjointBackward) {
  if (!onednn()) GTEST_FAIL() << "built without oneDNN (scripts/install.sh installs libdnnl-dev)";
  run_case({2, 3, 4, 5, 6, 7, 3, 1, 1, 1}, nullptr, 1);
  run_case({1, 5, 6, 6, 5, 5, 3, 2, 1, 1}, nullptr, 2);   // one image: channel slices
  run_case({3, 2, 3, 7, 7, 6, 3, 1, 2, 2}, nullptr, 3);   // dilated
  run_case({2, 4, 3, 6, 6, 6, 1, 2, 0, 1}, nullptr, 4);   // 1x1x1 stride 2: the last row of each dim is cropped
}

TEST(KernelsConv3d, GroupedSlicedByWholeGroups) {
  // o = 6, c = 4 in 2 groups: one image, so every pass slices whole groups (the weight gradient always)
  const Case3d cs{1, 4, 6, 5, 5, 5, 3, 1, 1, 1};
  const Problem<float> p(cs, 9);
  std::vector<float> wg(6 * 2 * 27);  // (O, C / groups, 3, 3, 3)
  for (std::size_t i = 0; i < wg.size(); ++i) wg[i] = p.w[i];
  DeviceBuf<float> dx(p.x), dw(wg), dy(std::vector<float>(p.y.size(), NAN)), dgw(std::vector<float>(wg.size(), NAN));
  Conv3dArgs a = p.args(dx.ptr, dw.ptr, dy.ptr);
  a.groups = 2;
  for (int i = 0; i < 5; ++i) a.w_strides[i] = i == 0 ? 2 * 27 : i == 1 ? 27 : a.w_strides[i];
  ASSERT_OK(npu_kernels::conv3d_forward(nullptr, a));
  Conv3dArgs b = a;
  b.w = dgw.ptr;
  b.y = dy.ptr;
  ASSERT_OK(npu_kernels::conv3d_backward_weight(nullptr, b));  // with gy = y: <w, dW> = <y, y>
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto y = dy.read(), gw = dgw.read();
  // forward: output channel o sees input channels of its group only
  for (int64_t o = 0; o < 6; ++o) {
    const int64_t g = o / 3;
    double s = 0;
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t k = 0; k < 27; ++k) {
        const int64_t kd = k / 9, kh = k / 3 % 3, kw = k % 3, z = 2 + kd - 1, i = 2 + kh - 1, j = 2 + kw - 1;
        s += double(p.xv(0, g * 2 + c, z, i, j)) * wg[(o * 2 + c) * 27 + k];
      }
    ASSERT_NEAR(y[((o * 5 + 2) * 5 + 2) * 5 + 2], s, 1e-4) << o;
  }
  EXPECT_NEAR(dot(gw, wg), dot(y, y), 1e-4 * (1 + dot(y, y)));
}

TEST(KernelsConv3d, TwoStreamsConcurrently) {
  npu_sim::Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s1));
  ASSERT_OK(npu_sim::stream_create(0, &s2));
  std::thread t1([&] { for (unsigned r = 0; r < 3; ++r) run_case({2, 3, 4, 5, 6, 7, 3, 1, 1, 1}, s1, 10 + r); });
  std::thread t2([&] { for (unsigned r = 0; r < 3; ++r) run_case({1, 5, 6, 6, 5, 5, 3, 2, 1, 1}, s2, 20 + r); });
  t1.join();
  t2.join();
  ASSERT_OK(npu_sim::stream_destroy(s1));
  ASSERT_OK(npu_sim::stream_destroy(s2));
}

// float64, which oneDNN does not serve, as sums of the 2-D passes over depth slices: the same cases as float32
// (strides, padding, dilation, cropped rows), batched along depth or along the images, at 1e-10.
TEST(KernelsConv3d, Float64OnTheTwoDimensionalSlices) {
  run_case<double>({2, 3, 4, 5, 6, 7, 3, 1, 1, 1}, nullptr, 1);
  run_case<double>({1, 5, 6, 6, 5, 5, 3, 2, 1, 1}, nullptr, 2);
  run_case<double>({3, 2, 3, 7, 7, 6, 3, 1, 2, 2}, nullptr, 3);  // dilated; more images than valid depths
  run_case<double>({2, 4, 3, 6, 6, 6, 1, 2, 0, 1}, nullptr, 4);
  run_case<double>({1, 2, 2, 3, 4, 4, 3, 1, 2, 1}, nullptr, 5);  // padding wider than the depth reaches
}

TEST(KernelsConv3d, RefusesWhatOnlyTheCpuServes) {
  const Problem<float> p({1, 2, 2, 4, 4, 4, 3, 1, 1, 1}, 5);
  DeviceBuf<float> dx(p.x), dw(p.w), dy(p.y);
  Conv3dArgs a = p.args(dx.ptr, dw.ptr, dy.ptr);
  // a 16-bit transposed convolution with a bias: oneDNN would round it twice and the slices are float64 only,
  // so nothing is enqueued and the caller falls back
  a.dtype = DType::kBFloat16;
  a.bias = dw.ptr;
  EXPECT_EQ(npu_kernels::conv3d_backward_input_scratch_bytes(a), 0u);
  EXPECT_EQ(npu_kernels::conv3d_backward_input(nullptr, a), npu_sim::Status::kNotSupported);
  a.bias = nullptr;
  a.dtype = DType::kFloat64;  // the slices' backward-input without its scratch
  EXPECT_GT(npu_kernels::conv3d_backward_input_scratch_bytes(a), 0u);
  EXPECT_EQ(npu_kernels::conv3d_backward_input(nullptr, a), npu_sim::Status::kInvalidValue);
  a.dtype = DType::kFloat32;
  a.groups = 3;  // does not divide the channels
  const char* why = nullptr;
  EXPECT_EQ(npu_kernels::conv3d_validate(a, &why), npu_sim::Status::kInvalidValue);
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("groups"), std::string::npos);
  EXPECT_EQ(npu_kernels::conv3d_forward(nullptr, a), npu_sim::Status::kInvalidValue);
}
