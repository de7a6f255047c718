// gtests of the line-ordering kernels (torch-free): sort_lines (radix sort of long lines, std::sort of short
// ones, counting sort of 1-byte lines), its topk form (bounded selection) and kth_lines / median_lines (a radix
// select on long lines), against std::stable_sort in PyTorch's order (NaN largest, -0.0 equal to +0.0, ties by
// position); and two streams sorting at once; dtypes the kernels refuse (values of another dtype, complex
// bincount weights).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "npu_kernels/index.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::DType;
using npu_kernels::TensorDesc;

TensorDesc line_desc(void* data, DType t, int64_t lines, int64_t len) {
  TensorDesc d;
  d.data = data;
  d.dtype = t;
  d.ndim = 2;
  d.sizes[0] = lines;
  d.sizes[1] = len;
  d.strides[0] = len;
  d.strides[1] = 1;
  return d;
}

// Lines of keys with many ties; floats also with NaNs, signed zeros and infinities.
template <typename T>
std::vector<T> keys(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> small(-40, 40);
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>(std::is_unsigned_v<T> ? small(gen) + 40 : small(gen));
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_int_distribution<int64_t> at(0, n - 1);
    for (int i = 0; i < n / 50 + 1; ++i) x[at(gen)] = std::numeric_limits<T>::quiet_NaN();
    for (int i = 0; i < n / 50 + 1; ++i) x[at(gen)] = T(-0.0);
    x[at(gen)] = -std::numeric_limits<T>::infinity();
    x[at(gen)] = std::numeric_limits<T>::infinity();
  }
  return x;
}

// The positions of one line in PyTorch's stable order.
template <typename T>
std::vector<int64_t> stable_order(const T* line, int64_t len, bool descending) {
  auto less = [](T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a)) return false;
      if (std::isnan(b)) return true;
    }
    return a < b;
  };
  std::vector<int64_t> p(len);
  std::iota(p.begin(), p.end(), 0);
  std::stable_sort(p.begin(), p.end(), [&](int64_t a, int64_t b) {
    return descending ? less(line[b], line[a]) : less(line[a], line[b]);
  });
  return p;
}

template <typename T>
void check_sort_of(const std::vector<T>& host, DType dt, int64_t lines, int64_t len, int64_t k, bool descending,
                   npu_sim::Stream s) {
  DeviceBuf<T> x(host), v{std::vector<T>(lines * k)};
  DeviceBuf<int64_t> ix{std::vector<int64_t>(lines * k)};
  ASSERT_OK(npu_kernels::sort_lines(s, line_desc(x.ptr, dt, lines, len), 1, descending,
                                    line_desc(v.ptr, dt, lines, k), line_desc(ix.ptr, DType::kInt64, lines, k), k,
                                    "sort"));
  ASSERT_OK(npu_sim::stream_synchronize(s));
  const std::vector<int64_t> got = ix.read();
  const std::vector<T> vals = v.read();
  for (int64_t l = 0; l < lines; ++l) {
    const std::vector<int64_t> want = stable_order(host.data() + l * len, len, descending);
    for (int64_t j = 0; j < k; ++j) {
      ASSERT_EQ(got[l * k + j], want[j]) << "line " << l << " rank " << j << " of " << len << ", k " << k;
      const T w = host[l * len + want[j]];
      ASSERT_TRUE(vals[l * k + j] == w || (vals[l * k + j] != vals[l * k + j] && w != w));
    }
  }
}

template <typename T>
void check_sort(DType dt, int64_t lines, int64_t len, int64_t k, bool descending, npu_sim::Stream s, unsigned seed) {
  check_sort_of<T>(keys<T>(lines * len, seed), dt, lines, len, k, descending, s);
}

TEST(KernelsSort, LongLinesByRadixMatchAStableSort) {
  for (bool desc : {false, true}) {
    check_sort<float>(DType::kFloat32, 2, 20000, 20000, desc, nullptr, 1);
    check_sort<double>(DType::kFloat64, 1, 9000, 9000, desc, nullptr, 2);
    check_sort<int64_t>(DType::kInt64, 2, 5000, 5000, desc, nullptr, 3);
    check_sort<int32_t>(DType::kInt32, 1, 5000, 5000, desc, nullptr, 4);
    check_sort<int16_t>(DType::kInt16, 1, 5000, 5000, desc, nullptr, 5);
  }
}

TEST(KernelsSort, LongLinesVaryingInFewBytes) {
  // keys whose images differ in one byte (counted straight from the input), in none (a constant line), and in two
  const int64_t len = 9000;
  std::mt19937 gen(13);
  std::vector<int64_t> labels(len), constant(len, -7), wide(len);
  for (auto& v : labels) v = static_cast<int64_t>(gen() % 200);
  for (auto& v : wide) v = 1000 + static_cast<int64_t>(gen() % 3000);
  std::vector<float> halves(len);
  for (auto& v : halves) v = 1.0f + static_cast<float>(gen() % 2) * 0.5f;  // 1.0 and 1.5: one byte of the image
  for (bool desc : {false, true}) {
    check_sort_of<int64_t>(labels, DType::kInt64, 1, len, len, desc, nullptr);
    check_sort_of<int64_t>(constant, DType::kInt64, 1, len, len, desc, nullptr);
    check_sort_of<int64_t>(wide, DType::kInt64, 1, len, len, desc, nullptr);
    check_sort_of<float>(halves, DType::kFloat32, 1, len, len, desc, nullptr);
  }
}

TEST(KernelsSort, ShortAndOneByteLinesMatchAStableSort) {
  for (bool desc : {false, true}) {
    check_sort<float>(DType::kFloat32, 64, 100, 100, desc, nullptr, 6);   // std::sort over (key, position)
    check_sort<float>(DType::kFloat32, 64, 64, 64, desc, nullptr, 16);    // ranks counted
    check_sort<float>(DType::kFloat32, 64, 40, 20, desc, nullptr, 17);
    check_sort<double>(DType::kFloat64, 64, 13, 13, desc, nullptr, 18);
    check_sort<int64_t>(DType::kInt64, 64, 16, 5, desc, nullptr, 19);
    check_sort<int64_t>(DType::kInt64, 64, 50, 3, desc, nullptr, 20);     // insertion into k sorted slots
    check_sort<float>(DType::kFloat32, 64, 200, 16, desc, nullptr, 24);
    check_sort<int8_t>(DType::kInt8, 3, 7000, 7000, desc, nullptr, 7);    // counting sort
    check_sort<uint8_t>(DType::kUInt8, 3, 7000, 7000, desc, nullptr, 8);
  }
}

TEST(KernelsSort, TopkSelectionMatchesTheSortedPrefix) {
  for (bool desc : {false, true}) {
    for (int64_t k : {1, 5, 300, 4999, 20000}) check_sort<float>(DType::kFloat32, 2, 20000, k, desc, nullptr, 9);
    for (int64_t k : {1, 256, 257}) check_sort<uint8_t>(DType::kUInt8, 2, 3000, k, desc, nullptr, 10);
  }
}

// Lines of 10001 (a radix select), 45 (a radix select over fewer buckets) and 21 (ranks counted).
class KthAndMedian : public ::testing::TestWithParam<int64_t> {};

TEST_P(KthAndMedian, Lines) {
  const int64_t lines = 3, len = GetParam();
  std::vector<float> host = keys<float>(lines * len, 11);
  for (int64_t j = 0; j < len; ++j) host[len + j] = std::isnan(host[len + j]) ? 0.5f : host[len + j];  // no NaN
  for (int64_t j = 0; j < len; ++j) host[2 * len + j] = j == 7 ? 3.0f : std::numeric_limits<float>::quiet_NaN();
  DeviceBuf<float> x(host), v{std::vector<float>(lines)};
  DeviceBuf<int64_t> ix{std::vector<int64_t>(lines)};
  const TensorDesc in = line_desc(x.ptr, DType::kFloat32, lines, len);
  const TensorDesc vd = line_desc(v.ptr, DType::kFloat32, lines, 1), xd = line_desc(ix.ptr, DType::kInt64, lines, 1);
  for (int64_t k : {int64_t(1), int64_t(2), len / 2, len}) {
    ASSERT_OK(npu_kernels::kth_lines(nullptr, in, 1, vd, xd, k, "kthvalue"));
    const std::vector<int64_t> got = ix.read();
    for (int64_t l = 0; l < lines; ++l) EXPECT_EQ(got[l], stable_order(&host[l * len], len, false)[k - 1]) << k;
  }
  for (bool ignore_nan : {false, true}) {
    ASSERT_OK(npu_kernels::median_lines(nullptr, in, 1, vd, xd, ignore_nan, "median"));
    const std::vector<int64_t> got = ix.read();
    for (int64_t l = 0; l < lines; ++l) {
      const float* line = &host[l * len];
      int64_t nans = 0, first_nan = -1;
      for (int64_t j = 0; j < len; ++j) {
        if (std::isnan(line[j]) && nans++ == 0) first_nan = j;
      }
      const int64_t valid = len - nans;
      const int64_t want = (!ignore_nan && nans) || valid == 0 ? first_nan
                                                               : stable_order(line, len, false)[(valid - 1) / 2];
      EXPECT_EQ(got[l], want) << "line " << l << " ignore_nan " << ignore_nan;
    }
  }
}
INSTANTIATE_TEST_SUITE_P(KernelsSort, KthAndMedian, ::testing::Values(10001, 45, 21));

// kth_lines on one line, with and without indices, against the stable order's element of each rank.
template <typename T>
void check_kth_of(const std::vector<T>& host, DType dt, std::initializer_list<int64_t> ks) {
  const int64_t len = static_cast<int64_t>(host.size());
  const std::vector<int64_t> order = stable_order(host.data(), len, false);
  DeviceBuf<T> x(host), v{std::vector<T>(1)};
  DeviceBuf<int64_t> ix{std::vector<int64_t>(1)};
  const TensorDesc in = line_desc(x.ptr, dt, 1, len), vd = line_desc(v.ptr, dt, 1, 1);
  TensorDesc xd = line_desc(ix.ptr, DType::kInt64, 1, 1), none = xd;
  none.data = nullptr;
  for (int64_t k : ks) {
    const T want = host[order[k - 1]];
    ASSERT_OK(npu_kernels::kth_lines(nullptr, in, 1, vd, xd, k, "kthvalue"));
    EXPECT_EQ(ix.read()[0], order[k - 1]) << "k " << k << " of " << len;
    ASSERT_OK(npu_kernels::kth_lines(nullptr, in, 1, vd, none, k, "kthvalue"));
    const T got = v.read()[0];
    EXPECT_TRUE(got == want || (got != got && want != want)) << "k " << k << " of " << len;
  }
}

TEST(KernelsSort, KthOfLongLinesByRadixSelect) {
  std::mt19937 gen(21);
  const int64_t len = 70001;
  std::normal_distribution<double> normal;
  std::vector<float> wide(len);  // distinct keys spread over the exponents: the rank's bucket is small
  for (auto& v : wide) v = static_cast<float>(normal(gen));
  std::vector<float> crowded(len);  // keys in [1, 1 + 2^-10): one top digit, gathered and selected
  for (auto& v : crowded) v = 1.0f + static_cast<float>(gen() % 4096) * 0x1p-22f;
  std::vector<int64_t> labels(len), spread(len), equal(len, -3);  // one varying digit, low bits only; a wide range
  for (auto& v : labels) v = static_cast<int64_t>(gen() % 100);
  for (auto& v : spread) v = static_cast<int64_t>(gen()) * 4099 - (int64_t(1) << 40);
  std::vector<double> doubles(len);
  for (auto& v : doubles) v = normal(gen);
  std::vector<int16_t> shorts(len);
  for (auto& v : shorts) v = static_cast<int16_t>(gen());
  std::vector<uint8_t> bytes(len);
  for (auto& v : bytes) v = static_cast<uint8_t>(gen() % 7);
  for (auto* line : {&wide, &crowded}) check_kth_of<float>(*line, DType::kFloat32, {1, 2, 35000, len - 1, len});
  for (auto* line : {&labels, &spread, &equal}) check_kth_of<int64_t>(*line, DType::kInt64, {1, 35001, len});
  check_kth_of<double>(doubles, DType::kFloat64, {1, 17, 35001, len});
  check_kth_of<int16_t>(shorts, DType::kInt16, {1, 35001, len});
  check_kth_of<uint8_t>(bytes, DType::kUInt8, {1, 35001, len});
  check_kth_of<float>(keys<float>(len, 22), DType::kFloat32, {1, 3000, 35001, len});  // ties, NaNs, signed zeros
  check_kth_of<float>(keys<float>(30, 23), DType::kFloat32, {1, 15, 30});  // a short line: ranks counted
}

TEST(KernelsSort, ValuesOfAnotherDtypeAreRefusedAtLaunch) {
  // float32 keys into a float64 values buffer: an invalid argument naming both dtypes, with nothing written
  // (before, the kernel wrote float32 bits that read back as float64 garbage)
  DeviceBuf<float> x(keys<float>(8, 12));
  DeviceBuf<double> v{std::vector<double>(8, -1.0)};
  DeviceBuf<int64_t> ix{std::vector<int64_t>(8, -1)};
  EXPECT_EQ(npu_kernels::sort_lines(nullptr, line_desc(x.ptr, DType::kFloat32, 1, 8), 1, false,
                                    line_desc(v.ptr, DType::kFloat64, 1, 8), line_desc(ix.ptr, DType::kInt64, 1, 8), 8,
                                    "sort"),
            npu_sim::Status::kInvalidValue);
  const std::string msg = npu_sim::last_error_message();
  EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float64"), std::string::npos) << msg;
  ASSERT_OK(npu_sim::stream_synchronize(nullptr));
  for (double d : v.read()) EXPECT_EQ(d, -1.0);
  for (int64_t i : ix.read()) EXPECT_EQ(i, -1);
}

TEST(KernelsSort, BincountWithComplexWeightsFailsInsteadOfCountingZero) {
  // complex weights have no kernel: the launch fails (sticky, as a device-side error) where it wrote zero counts
  DeviceBuf<int64_t> in{std::vector<int64_t>{0, 2, 2}};
  DeviceBuf<float> w{std::vector<float>(6, 1.0f)};  // 3 complex64 values
  DeviceBuf<double> out{std::vector<double>(3, 0.0)};
  TensorDesc wd = line_desc(w.ptr, DType::kComplex64, 1, 3);
  ASSERT_OK(npu_kernels::bincount(nullptr, line_desc(in.ptr, DType::kInt64, 1, 3), wd,
                                  line_desc(out.ptr, DType::kFloat64, 1, 3)));
  EXPECT_EQ(npu_sim::stream_synchronize(nullptr), npu_sim::Status::kKernelError);
  EXPECT_NE(npu_sim::last_error_message().find("complex weights"), std::string::npos) << npu_sim::last_error_message();
  ASSERT_OK(npu_sim::device_restart(0));
}

TEST(KernelsSort, TwoStreamsConcurrently) {
  npu_sim::Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s1));
  ASSERT_OK(npu_sim::stream_create(0, &s2));
  std::thread t1([&] { for (unsigned r = 0; r < 3; ++r) check_sort<float>(DType::kFloat32, 4, 6000, 6000, r, s1, r); });
  std::thread t2([&] { for (unsigned r = 0; r < 3; ++r) check_sort<int64_t>(DType::kInt64, 8, 3000, 17, r, s2, r); });
  t1.join();
  t2.join();
  ASSERT_OK(npu_sim::stream_destroy(s1));
  ASSERT_OK(npu_sim::stream_destroy(s2));
}

}  // namespace
