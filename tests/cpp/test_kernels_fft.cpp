// gtests of the FFT kernels (torch-free): c2c / r2c / c2r against a naive DFT over strided multi-axis operands in
// float and double, the C2R scratch leaving its input intact, two streams at once, and malformed transforms refused.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <thread>
#include <vector>

#include "npu_kernels/fft.h"
#include "test_kernels_util.h"

namespace {

namespace fft = npu_kernels::fft;
using npu_kernels::DType;
using cd = std::complex<double>;

constexpr double kPi = 3.14159265358979323846;

// A dense row-major [b][n0][n1] complex array as doubles.
std::vector<cd> random_complex(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> d;
  std::vector<cd> v(n);
  for (auto& x : v) x = cd(d(gen), d(gen));
  return v;
}

// Naive DFT of x ([rows][n], row-major) along its last dim, or along its first (`along_rows`).
std::vector<cd> dft(const std::vector<cd>& x, int64_t rows, int64_t n, bool forward, bool along_rows) {
  std::vector<cd> y(x.size());
  const double sign = forward ? -1 : 1;
  const int64_t len = along_rows ? rows : n, count = along_rows ? n : rows;
  for (int64_t c = 0; c < count; ++c)
    for (int64_t k = 0; k < len; ++k) {
      cd s = 0;
      for (int64_t j = 0; j < len; ++j) {
        const cd v = along_rows ? x[j * n + c] : x[c * n + j];
        s += v * std::polar(1.0, sign * 2 * kPi * double(j * k) / double(len));
      }
      (along_rows ? y[k * n + c] : y[c * n + k]) = s;
    }
  return y;
}

template <class R>
double tolerance() {
  return std::is_same_v<R, float> ? 1e-4 : 1e-10;
}
template <class R>
constexpr DType complex_dtype() {
  return std::is_same_v<R, float> ? DType::kComplex64 : DType::kComplex128;
}

// A 2-D c2c over both axes of a transposed view (strides {1, rows}) into a dense output, scaled by 1/(rows*n).
template <class R>
void c2c_case(npu_sim::Stream s, unsigned seed, bool forward) {
  using C = std::complex<R>;
  const int64_t rows = 6, n = 10;  // the logical array is [rows][n]; memory holds its transpose [n][rows]
  const auto x = random_complex(static_cast<std::size_t>(rows * n), seed);
  std::vector<C> mem(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) mem[c * rows + r] = C(x[r * n + c]);
  DeviceBuf<C> in(mem), out(std::vector<C>(x.size()));
  fft::Transform t;
  t.kind = fft::Kind::kC2C;
  t.dtype = complex_dtype<R>();
  t.in_shape = t.out_shape = {rows, n};
  t.in_strides = {1, rows};
  t.out_strides = {n, 1};
  t.axes = {0, 1};
  t.forward = forward;
  t.scale = 1.0 / double(rows * n);
  ASSERT_OK(fft::execute(s, t, in.ptr, out.ptr));
  ASSERT_OK(npu_sim::stream_synchronize(s));
  const auto want = dft(dft(x, rows, n, forward, false), rows, n, forward, true);
  const auto got = out.read();
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(std::abs(cd(got[i]) - want[i] / double(rows * n)), 0.0, tolerance<R>()) << i;
  }
}

TEST(KernelsFft, ComplexTwoAxesStridedFloatAndDouble) {
  c2c_case<float>(nullptr, 1, true);
  c2c_case<double>(nullptr, 2, true);
  c2c_case<double>(nullptr, 3, false);
}

// R2C along the last axis of dense [rows][n] reals into dense [rows][n / 2 + 1] complex values.
fft::Transform r2c_rows(int64_t rows, int64_t n, DType dtype) {
  fft::Transform t;
  t.kind = fft::Kind::kR2C;
  t.dtype = dtype;
  t.in_shape = {rows, n}, t.in_strides = {n, 1};
  t.out_shape = {rows, n / 2 + 1}, t.out_strides = {n / 2 + 1, 1};
  t.axes = {1};
  return t;
}

// r2c along the last axis of [rows][n] reals, then c2r back: the round trip (scaled 1/n) is the identity, and the
// one-sided spectrum matches the DFT's first n/2 + 1 bins.
template <class R>
void real_round_trip(unsigned seed, int64_t n) {
  using C = std::complex<R>;
  const int64_t rows = 5, half = n / 2 + 1;
  const auto x = random_complex(static_cast<std::size_t>(rows * n), seed);
  std::vector<R> real(x.size());
  std::vector<cd> as_complex(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) real[i] = R(x[i].real()), as_complex[i] = cd(real[i], 0);
  DeviceBuf<R> in(real), back(std::vector<R>(real.size()));
  DeviceBuf<C> spec(std::vector<C>(static_cast<std::size_t>(rows * half)));
  fft::Transform t = r2c_rows(rows, n, complex_dtype<R>());
  ASSERT_OK(fft::execute(nullptr, t, in.ptr, spec.ptr));
  fft::Transform inv;
  inv.kind = fft::Kind::kC2R;
  inv.dtype = t.dtype;
  inv.in_shape = t.out_shape, inv.in_strides = t.out_strides;
  inv.out_shape = t.in_shape, inv.out_strides = t.in_strides;
  inv.axes = {1};
  inv.forward = false;
  inv.scale = 1.0 / double(n);
  ASSERT_OK(fft::execute(nullptr, inv, spec.ptr, back.ptr));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto want = dft(as_complex, rows, n, true, false);
  const auto got = spec.read();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < half; ++k) {
      ASSERT_NEAR(std::abs(cd(got[r * half + k]) - want[r * n + k]), 0.0, tolerance<R>() * n) << r << "," << k;
    }
  const auto round = back.read();
  for (std::size_t i = 0; i < real.size(); ++i) ASSERT_NEAR(double(round[i]), double(real[i]), tolerance<R>() * 10);
}

TEST(KernelsFft, RealRoundTripEvenAndOddLengths) {
  real_round_trip<float>(4, 16);
  real_round_trip<double>(5, 15);
  real_round_trip<double>(6, 1);
}

// R2C with forward = false (the exp(+i) DFT's first n/2 + 1 bins, as pocketfft's r2c gives them): 20 rows run in the
// SIMD lanes (a group of 16 and a spare-lane group of 4 one by one), even and odd lengths, float and double.
template <class R>
void r2c_backward(unsigned seed, int64_t rows, int64_t n) {
  using C = std::complex<R>;
  const int64_t half = n / 2 + 1;
  const auto x = random_complex(static_cast<std::size_t>(rows * n), seed);
  std::vector<R> real(x.size());
  std::vector<cd> as_complex(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) real[i] = R(x[i].real()), as_complex[i] = cd(real[i], 0);
  DeviceBuf<R> in(real);
  DeviceBuf<C> spec(std::vector<C>(static_cast<std::size_t>(rows * half)));
  fft::Transform t = r2c_rows(rows, n, complex_dtype<R>());
  t.forward = false;
  ASSERT_OK(fft::execute(nullptr, t, in.ptr, spec.ptr));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto want = dft(as_complex, rows, n, false, false);
  const auto got = spec.read();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < half; ++k) {
      ASSERT_NEAR(std::abs(cd(got[r * half + k]) - want[r * n + k]), 0.0, tolerance<R>() * n) << r << "," << k;
    }
}

TEST(KernelsFft, RealToComplexBackward) {
  r2c_backward<float>(8, 20, 24);
  r2c_backward<float>(9, 20, 15);
  r2c_backward<float>(10, 3, 64);
  r2c_backward<double>(11, 20, 24);
}

// A two-axis C2R runs its complex pass in the scratch buffer: the input stays as it was.
TEST(KernelsFft, TwoAxisC2RLeavesItsInputIntact) {
  const int64_t rows = 4, n = 8, half = n / 2 + 1;
  const auto x = random_complex(static_cast<std::size_t>(rows * half), 7);
  DeviceBuf<cd> in(x), scratch(std::vector<cd>(x.size()));
  DeviceBuf<double> out(std::vector<double>(static_cast<std::size_t>(rows * n)));
  fft::Transform t;
  t.kind = fft::Kind::kC2R;
  t.dtype = DType::kComplex128;
  t.in_shape = {rows, half}, t.in_strides = {half, 1};
  t.out_shape = {rows, n}, t.out_strides = {n, 1};
  t.axes = {0, 1};
  t.forward = false;
  EXPECT_EQ(fft::execute(nullptr, t, in.ptr, out.ptr), npu_sim::Status::kInvalidValue);  // no scratch given
  ASSERT_OK(fft::execute(nullptr, t, in.ptr, out.ptr, scratch.ptr));
  ASSERT_OK(npu_sim::device_synchronize(0));
  EXPECT_EQ(in.read(), x);
}

TEST(KernelsFft, TwoStreamsConcurrently) {
  npu_sim::Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s1));
  ASSERT_OK(npu_sim::stream_create(0, &s2));
  std::thread t1([&] { for (unsigned r = 0; r < 4; ++r) c2c_case<float>(s1, 10 + r, true); });
  std::thread t2([&] { for (unsigned r = 0; r < 4; ++r) c2c_case<double>(s2, 20 + r, false); });
  t1.join();
  t2.join();
  ASSERT_OK(npu_sim::stream_destroy(s1));
  ASSERT_OK(npu_sim::stream_destroy(s2));
}

TEST(KernelsFft, RefusesMalformedTransforms) {
  fft::Transform t;
  t.in_shape = t.out_shape = {4};
  t.in_strides = t.out_strides = {1};
  t.axes = {0};
  float dummy[16] = {};
  t.dtype = DType::kFloat32;  // the complex dtype is named
  EXPECT_EQ(fft::execute(nullptr, t, dummy, dummy), npu_sim::Status::kInvalidValue);
  t.dtype = DType::kComplex64;
  t.axes = {1};  // out of range
  EXPECT_EQ(fft::execute(nullptr, t, dummy, dummy), npu_sim::Status::kInvalidValue);
  t.axes = {};
  EXPECT_EQ(fft::execute(nullptr, t, dummy, dummy), npu_sim::Status::kInvalidValue);
  t.axes = {0};
  t.kind = fft::Kind::kR2C;  // the one-sided output must be n/2 + 1 long
  EXPECT_EQ(fft::execute(nullptr, t, dummy, dummy), npu_sim::Status::kInvalidValue);
  t.out_shape = {3};
  EXPECT_EQ(fft::execute(nullptr, t, dummy, dummy + 4), npu_sim::Status::kSuccess);
  ASSERT_OK(npu_sim::device_synchronize(0));
}

}  // namespace
