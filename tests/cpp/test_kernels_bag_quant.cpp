// gtests of the torch-free embedding_bag and quantization kernels: embedding_bag's forward against a host loop in
// every mode, its table gradient as the exact adjoint of the forward, bad offsets and indices as kernel errors;
// quantize / dequantize's rounding and saturation; the int8 GEMM against a host int32 loop (oneDNN and the portable
// loop agree); two streams at once.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "npu_kernels/embedding_bag.h"
#include "npu_kernels/quantize.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::BagMode;
using npu_kernels::DType;

std::vector<double> uniform(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (auto& e : v) e = u(rng);
  return v;
}

struct Bags {
  int64_t num_weights = 7, dim = 3;
  std::vector<int64_t> indices{1, 2, 2, 6, 0, 5, 3, 2, 4, 4};
  std::vector<int64_t> offsets{0, 3, 3, 4, 8};  // bags of 3, 0, 1, 4 and 2 indices
  int64_t padding_idx = -1;

  npu_kernels::EmbeddingBagArgs args(BagMode mode) const {
    npu_kernels::EmbeddingBagArgs a;
    a.dtype = DType::kFloat64;
    a.num_weights = num_weights;
    a.dim = dim;
    a.weight_stride0 = dim;
    a.num_indices = static_cast<int64_t>(indices.size());
    a.num_bags = static_cast<int64_t>(offsets.size());
    a.mode = mode;
    a.padding_idx = padding_idx;
    return a;
  }
  int64_t end(size_t b) const { return b + 1 < offsets.size() ? offsets[b + 1] : static_cast<int64_t>(indices.size()); }
};

struct BagRun {
  std::vector<double> out;
  std::vector<int64_t> offset2bag, bag_size, max_indices;
};

BagRun run_bag(const Bags& bags, BagMode mode, const std::vector<double>& w, const std::vector<double>* psw,
               npu_sim::Stream s = nullptr) {
  const auto a = bags.args(mode);
  DeviceBuf<double> wd(w), pd(psw ? *psw : std::vector<double>{}), out{std::vector<double>(a.num_bags * a.dim)};
  DeviceBuf<int64_t> idx(bags.indices), off(bags.offsets), o2b{std::vector<int64_t>(a.num_indices)},
      size{std::vector<int64_t>(a.num_bags)},
      maxi{std::vector<int64_t>(mode == BagMode::kMax ? a.num_bags * a.dim : a.num_bags)};
  EXPECT_EQ(npu_kernels::embedding_bag(s, a, wd.ptr, idx.ptr, off.ptr, psw ? pd.ptr : nullptr, out.ptr, o2b.ptr,
                                       size.ptr, maxi.ptr),
            npu_sim::Status::kSuccess);
  EXPECT_EQ(s ? npu_sim::stream_synchronize(s) : npu_sim::device_synchronize(0), npu_sim::Status::kSuccess);
  return {out.read(), o2b.read(), size.read(), maxi.read()};
}

TEST(EmbeddingBag, ForwardMatchesAHostLoopInEveryMode) {
  Bags bags;
  bags.padding_idx = 2;
  const auto w = uniform(static_cast<size_t>(bags.num_weights * bags.dim), 1);
  const auto psw = uniform(bags.indices.size(), 2);
  for (BagMode mode : {BagMode::kSum, BagMode::kMean, BagMode::kMax}) {
    const BagRun r = run_bag(bags, mode, w, mode == BagMode::kSum ? &psw : nullptr);
    for (size_t b = 0; b < bags.offsets.size(); ++b) {
      int64_t count = 0;
      for (int64_t c = 0; c < bags.dim; ++c) {
        double want = mode == BagMode::kMax ? -INFINITY : 0.0;
        int64_t arg = -1;
        count = 0;
        for (int64_t i = bags.offsets[b]; i < bags.end(b); ++i) {
          const int64_t row = bags.indices[i];
          EXPECT_EQ(r.offset2bag[i], static_cast<int64_t>(b));
          if (row == bags.padding_idx) continue;
          ++count;
          const double v = w[row * bags.dim + c];
          if (mode == BagMode::kMax) {
            if (v > want) want = v, arg = row;
          } else {
            want += (mode == BagMode::kSum ? psw[i] : 1.0) * v;
          }
        }
        if (count == 0) want = 0;
        if (mode == BagMode::kMean && count > 0) want /= static_cast<double>(count);
        EXPECT_NEAR(r.out[b * bags.dim + c], want, 1e-15) << "bag " << b;
        if (mode == BagMode::kMax) EXPECT_EQ(r.max_indices[b * bags.dim + c], arg);
      }
      EXPECT_EQ(r.bag_size[b], count);
    }
  }
}

// <embedding_bag(w), g> == <w, grad_weight(g)> for sum (weighted) and mean; max routes each gradient to its row.
TEST(EmbeddingBag, TableGradientIsTheAdjointOfTheForward) {
  Bags bags;
  bags.padding_idx = 4;
  const auto w = uniform(static_cast<size_t>(bags.num_weights * bags.dim), 3);
  const auto psw = uniform(bags.indices.size(), 4);
  const auto g = uniform(bags.offsets.size() * static_cast<size_t>(bags.dim), 5);
  for (BagMode mode : {BagMode::kSum, BagMode::kMean, BagMode::kMax}) {
    const auto a = bags.args(mode);
    const std::vector<double>* weights = mode == BagMode::kSum ? &psw : nullptr;
    const BagRun r = run_bag(bags, mode, w, weights);
    DeviceBuf<double> gd(g), pd(weights ? *weights : std::vector<double>{}), gw{std::vector<double>(w.size(), 7.0)};
    DeviceBuf<int64_t> idx(bags.indices), o2b(r.offset2bag), size(r.bag_size), maxi(r.max_indices);
    ASSERT_OK(npu_kernels::embedding_bag_backward(nullptr, a, gd.ptr, idx.ptr, o2b.ptr, size.ptr,
                                                  mode == BagMode::kMax ? maxi.ptr : nullptr,
                                                  weights ? pd.ptr : nullptr, nullptr, gw.ptr));
    ASSERT_OK(npu_sim::device_synchronize(0));
    const auto grad_w = gw.read();
    if (mode == BagMode::kMax) {
      std::vector<double> want(w.size(), 0.0);
      for (size_t b = 0; b < bags.offsets.size(); ++b) {
        if (r.bag_size[b] == 0) continue;
        for (int64_t c = 0; c < bags.dim; ++c) want[r.max_indices[b * bags.dim + c] * bags.dim + c] += g[b * bags.dim + c];
      }
      EXPECT_EQ(grad_w, want);
    } else {
      double lhs = 0, rhs = 0;
      for (size_t i = 0; i < g.size(); ++i) lhs += r.out[i] * g[i];
      for (size_t i = 0; i < w.size(); ++i) rhs += w[i] * grad_w[i];
      EXPECT_NEAR(lhs, rhs, 1e-13);
      for (int64_t c = 0; c < bags.dim; ++c) EXPECT_EQ(grad_w[bags.padding_idx * bags.dim + c], 0.0);
    }
  }
}

TEST(EmbeddingBag, BadOffsetsAndIndicesAreKernelErrors) {
  const auto w = uniform(21, 6);
  const struct {
    std::vector<int64_t> indices, offsets;
    std::string message;
  } cases[] = {
      {{1, 2, 9}, {0, 1}, "Index 2 of input takes value 9 which is not in the valid range [0, 7)"},
      {{1, 2, 3}, {1, 2}, "offsets[0] has to be 0"},
      {{1, 2, 3}, {0, 4}, "offsets[-1] can not be greater than input's length 3 but got offsets[-1] of 4"},
      {{1, 2, 3}, {0, 2, 1}, "offsets have to be non-decreasing, but got offsets[1] = 2 > offsets[2] = 1"},
  };
  for (const auto& c : cases) {
    Bags bags;
    bags.indices = c.indices;
    bags.offsets = c.offsets;
    const auto a = bags.args(BagMode::kSum);
    DeviceBuf<double> wd(w), out{std::vector<double>(a.num_bags * a.dim)};
    DeviceBuf<int64_t> idx(bags.indices), off(bags.offsets), o2b{std::vector<int64_t>(a.num_indices)},
        size{std::vector<int64_t>(a.num_bags)};
    ASSERT_OK(npu_kernels::embedding_bag(nullptr, a, wd.ptr, idx.ptr, off.ptr, nullptr, out.ptr, o2b.ptr, size.ptr,
                                         nullptr));
    EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
    const std::string msg = npu_sim::last_error_message();
    EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
    ASSERT_OK(npu_sim::device_restart(0));
  }
}

TEST(Quantize, RoundsHalfToEvenSaturatesAndDequantizes) {
  DeviceBuf<float> x{std::vector<float>{0.25f, 0.35f, -0.25f, 1e10f, -1e10f, NAN, 1.0f, -0.05f}};
  npu_kernels::QuantParams q;
  q.scale = 0.1;
  q.zero_point = 2;
  DeviceBuf<int8_t> codes{std::vector<int8_t>(8)};
  DeviceBuf<float> back{std::vector<float>(8)};
  ASSERT_OK(npu_kernels::quantize(nullptr, x.ptr, codes.ptr, 8, q));
  ASSERT_OK(npu_kernels::dequantize(nullptr, codes.ptr, back.ptr, 8, q));
  ASSERT_OK(npu_sim::device_synchronize(0));
  // 2.5 -> 2, 3.5 -> 4, -2.5 -> -2 (half to even), then + 2; saturated; NaN -> the minimum; -0.5 -> -0 (even)
  EXPECT_EQ(codes.read(), (std::vector<int8_t>{4, 6, 0, 127, -128, -128, 12, 2}));
  const auto b = back.read();
  EXPECT_FLOAT_EQ(b[0], 0.2f);
  EXPECT_FLOAT_EQ(b[3], 12.5f);
  // per channel: a (2, 3) tensor on axis 1 (inner 1)
  DeviceBuf<double> scales{std::vector<double>{1.0, 0.5, 0.25}};
  DeviceBuf<int64_t> zps{std::vector<int64_t>{0, 10, 250}};
  DeviceBuf<float> y{std::vector<float>{1, 1, 1, -1, -1, 2}};
  DeviceBuf<uint8_t> ucodes{std::vector<uint8_t>(6)};
  npu_kernels::QuantParams pc;
  pc.code = DType::kUInt8;
  pc.scales = scales.ptr;
  pc.zero_points = zps.ptr;
  pc.channels = 3;
  pc.inner = 1;
  ASSERT_OK(npu_kernels::quantize(nullptr, y.ptr, ucodes.ptr, 6, pc));
  ASSERT_OK(npu_sim::device_synchronize(0));
  EXPECT_EQ(ucodes.read(), (std::vector<uint8_t>{1, 12, 254, 0, 8, 255}));
}

std::vector<int8_t> random_int8(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(-128, 127);
  std::vector<int8_t> v(n);
  for (auto& e : v) e = static_cast<int8_t>(u(rng));
  return v;
}

// x2 stored transposed (n x k, used as k x n) when trans_b.
std::vector<float> run_quant(int64_t m, int64_t k, int64_t n, const std::vector<int8_t>& x1,
                             const std::vector<int8_t>& x2, bool trans_b, npu_sim::Stream s = nullptr) {
  DeviceBuf<int8_t> a(x1), b(x2);
  DeviceBuf<float> scale{std::vector<float>{0.5f}}, out{std::vector<float>(static_cast<size_t>(m * n))};
  DeviceBuf<int32_t> bias{std::vector<int32_t>(static_cast<size_t>(n), 3)};
  npu_kernels::QuantMatmulArgs q;
  q.m = m;
  q.n = n;
  q.k = k;
  q.x1 = a.ptr;
  q.x1_row_stride = k;
  q.x2 = b.ptr;
  q.x2_row_stride = trans_b ? 1 : n;
  q.x2_col_stride = trans_b ? k : 1;
  q.scale = scale.ptr;
  q.bias = bias.ptr;
  q.out = out.ptr;
  q.out_dtype = DType::kFloat32;
  EXPECT_EQ(npu_kernels::quant_matmul(s, q), npu_sim::Status::kSuccess);
  EXPECT_EQ(s ? npu_sim::stream_synchronize(s) : npu_sim::device_synchronize(0), npu_sim::Status::kSuccess);
  return out.read();
}

TEST(QuantMatmul, Int8GemmIsExactInInt32) {
  const int64_t m = 70, k = 300, n = 33;
  const auto x1 = random_int8(static_cast<size_t>(m * k), 1), x2 = random_int8(static_cast<size_t>(k * n), 2);
  std::vector<float> want(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int32_t acc = 3;
      for (int64_t p = 0; p < k; ++p) acc += int32_t{x1[i * k + p]} * int32_t{x2[p * n + j]};
      want[i * n + j] = static_cast<float>(acc) * 0.5f;  // exact: |acc| < 2^24
    }
  }
  EXPECT_EQ(run_quant(m, k, n, x1, x2, false), want);
  std::vector<int8_t> x2t(x2.size());
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t j = 0; j < n; ++j) x2t[j * k + p] = x2[p * n + j];
  }
  EXPECT_EQ(run_quant(m, k, n, x1, x2t, true), want);
  // the portable loop (a stride oneDNN cannot take) agrees
  std::vector<int8_t> x2_wide(x2.size() * 2);
  for (size_t i = 0; i < x2.size(); ++i) x2_wide[2 * i] = x2[i];
  DeviceBuf<int8_t> a(x1), b(x2_wide);
  DeviceBuf<float> scale{std::vector<float>{0.5f}}, out{std::vector<float>(want.size())};
  DeviceBuf<int32_t> bias{std::vector<int32_t>(static_cast<size_t>(n), 3)};
  npu_kernels::QuantMatmulArgs q;
  q.m = m, q.n = n, q.k = k, q.x1 = a.ptr, q.x1_row_stride = k, q.x2 = b.ptr, q.x2_row_stride = 2 * n;
  q.x2_col_stride = 2, q.scale = scale.ptr, q.bias = bias.ptr, q.out = out.ptr, q.out_dtype = DType::kFloat32;
  ASSERT_OK(npu_kernels::quant_matmul(nullptr, q));
  ASSERT_OK(npu_sim::device_synchronize(0));
  EXPECT_EQ(out.read(), want);
}

TEST(QuantMatmul, ConcurrentStreamsAgree) {
  const int64_t m = 130, k = 64, n = 48;
  const auto x1 = random_int8(static_cast<size_t>(m * k), 3), x2 = random_int8(static_cast<size_t>(k * n), 4);
  const auto want = run_quant(m, k, n, x1, x2, false);
  npu_sim::Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s1));
  ASSERT_OK(npu_sim::stream_create(0, &s2));
  std::vector<float> r1, r2;
  std::thread t1([&] { for (int i = 0; i < 10; ++i) r1 = run_quant(m, k, n, x1, x2, false, s1); });
  std::thread t2([&] { for (int i = 0; i < 10; ++i) r2 = run_quant(m, k, n, x1, x2, false, s2); });
  t1.join();
  t2.join();
  EXPECT_EQ(r1, want);
  EXPECT_EQ(r2, want);
  ASSERT_OK(npu_sim::stream_destroy(s1));
  ASSERT_OK(npu_sim::stream_destroy(s2));
}

}  // namespace
