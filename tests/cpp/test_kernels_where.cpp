// gtests of the where kernel (TernaryOp::kWhere, torch-free): a select on a 1-byte condition that moves elements
// of every width (1 to 16 bytes) whatever their dtype, with contiguous, host-scalar, broadcast and strided operands,
// uint8 conditions read as nonzero, in place over y, and two streams at once.
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "npu_kernels/pointwise.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::DType;
using npu_kernels::ElementwiseIter;
using npu_kernels::TernaryOp;

// out = where(cond, x, y) over n elements in one dimension; a null x or y is the host scalar xs / ys, and
// the strides (in elements) of cond, x and y are given.
template <typename T>
ElementwiseIter where_iter(DType dt, int64_t n, T* out, const uint8_t* cond, int64_t cs, const T* x, int64_t xs_stride,
                           const T* y, int64_t ys_stride, const T* xs, const T* ys) {
  ElementwiseIter it;
  it.ndim = 1;
  it.shape[0] = n;
  it.noutputs = 1;
  it.ninputs = 3;
  it.in_dtype = it.out_dtype = dt;
  it.data[0] = out;
  it.strides[0][0] = sizeof(T);
  it.data[1] = const_cast<uint8_t*>(cond);
  it.strides[1][0] = cs;
  const T* ops[2] = {x, y};
  const T* scalars[2] = {xs, ys};
  const int64_t strides[2] = {xs_stride, ys_stride};
  for (int k = 0; k < 2; ++k) {
    if (ops[k]) {
      it.data[2 + k] = const_cast<T*>(ops[k]);
      it.strides[2 + k][0] = strides[k] * static_cast<int64_t>(sizeof(T));
    } else {
      it.is_scalar[2 + k] = true;
      std::memcpy(it.scalar_bytes[2 + k], scalars[k], sizeof(T));
    }
  }
  return it;
}

template <typename T>
void check_where(DType dt, npu_sim::Stream s, unsigned seed) {
  std::mt19937 gen(seed);
  const int64_t n = 70001;  // more than one block, not a multiple of a vector
  std::vector<uint8_t> cond(2 * n);
  for (auto& c : cond) c = static_cast<uint8_t>(gen() % 3 == 0 ? 0 : gen() % 256);  // nonzero: any byte
  std::vector<T> x(2 * n), y(2 * n);
  for (int64_t i = 0; i < 2 * n; ++i) {
    x[i] = static_cast<T>(static_cast<int>(gen() % 1000));
    y[i] = static_cast<T>(-static_cast<int>(gen() % 1000) - 1);
  }
  const T xs = static_cast<T>(7), ys = static_cast<T>(-7);
  DeviceBuf<uint8_t> c_d(cond);
  DeviceBuf<T> x_d(x), y_d(y), out_d{std::vector<T>(n)};
  struct Case {
    bool x_scalar, y_scalar;
    int64_t step;  // stride of cond, x and y (elements)
  };
  for (const Case c : {Case{false, false, 1}, Case{true, false, 1}, Case{false, true, 1}, Case{true, true, 1},
                       Case{false, false, 2}, Case{true, false, 2}}) {
    ASSERT_OK(npu_kernels::ternary(s, TernaryOp::kWhere,
                                   where_iter<T>(dt, n, out_d.ptr, c_d.ptr, c.step, c.x_scalar ? nullptr : x_d.ptr,
                                                 c.step, c.y_scalar ? nullptr : y_d.ptr, c.step, &xs, &ys),
                                   {}));
    ASSERT_OK(npu_sim::stream_synchronize(s));
    const std::vector<T> got = out_d.read();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = i * c.step;
      const T want = cond[j] ? (c.x_scalar ? xs : x[j]) : (c.y_scalar ? ys : y[j]);
      ASSERT_TRUE(got[i] == want) << "element " << i << " x_scalar " << c.x_scalar << " y_scalar " << c.y_scalar
                                  << " step " << c.step;
    }
  }
  // in place over y (masked_fill_: self = where(mask, value, self)), y broadcast along a stride-0 x
  ASSERT_OK(npu_kernels::ternary(s, TernaryOp::kWhere, where_iter<T>(dt, n, y_d.ptr, c_d.ptr, 1, x_d.ptr, 0, y_d.ptr, 1,
                                                                    nullptr, nullptr),
                                 {}));
  ASSERT_OK(npu_sim::stream_synchronize(s));
  const std::vector<T> got = y_d.read();
  for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(got[i] == (cond[i] ? x[0] : y[i])) << i;
}

TEST(KernelsWhere, EveryElementWidth) {
  check_where<uint8_t>(DType::kUInt8, nullptr, 1);
  check_where<int16_t>(DType::kInt16, nullptr, 2);
  check_where<float>(DType::kFloat32, nullptr, 3);
  check_where<double>(DType::kFloat64, nullptr, 4);
  check_where<int64_t>(DType::kInt64, nullptr, 5);
  check_where<std::complex<double>>(DType::kComplex128, nullptr, 6);
}

TEST(KernelsWhere, AnOutputOfAnotherDtypeIsRefused) {
  std::vector<uint8_t> cond(4, 1);
  std::vector<float> x(4, 1.0f), out(4);
  DeviceBuf<uint8_t> c_d(cond);
  DeviceBuf<float> x_d(x), out_d(out);
  ElementwiseIter it = where_iter<float>(DType::kFloat32, 4, out_d.ptr, c_d.ptr, 1, x_d.ptr, 1, x_d.ptr, 1, nullptr,
                                         nullptr);
  it.out_dtype = DType::kFloat64;  // a select converts nothing
  EXPECT_EQ(npu_kernels::ternary(nullptr, TernaryOp::kWhere, it, {}), npu_sim::Status::kInvalidValue);
}

TEST(KernelsWhere, TwoStreamsConcurrently) {
  auto run = [](unsigned seed) {
    npu_sim::Stream s = nullptr;
    ASSERT_OK(npu_sim::stream_create(0, &s));
    check_where<float>(DType::kFloat32, s, seed);
    ASSERT_OK(npu_sim::stream_destroy(s));
  };
  std::thread t1(run, 11), t2(run, 12);
  t1.join();
  t2.join();
}

}  // namespace
