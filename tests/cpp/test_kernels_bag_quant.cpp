// gtests of the torch-free embedding_bag and quantization kernels: embedding_bag's forward against a host loop in
// every mode, its table gradient as the exact adjoint of the forward, bad offsets and indices as kernel errors;
// quantize / dequantize's rounding and saturation; the int8 GEMM against a host int32 loop (oneDNN and the portable
// loop agree), its raw int32 output exact past 2^24 and wrapping past 2^31; two streams at once; fake quantization's
// values and masks per tensor (device qparams, the enable flag) and per channel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "npu_kernels/embedding_bag.h"
#include "npu_kernels/fake_quantize.h"
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

// The int32 output (torch._int_mm) is the accumulator: exact beyond float32's 2^24 (oneDNN's kernel stores its
// sums through float32, so k is split) and wrapping past 2^31 as an int32 adder does.
TEST(QuantMatmul, Int32OutputIsExactAndWraps) {
  for (int64_t k : {1000, 70000, 140000}) {
    const int64_t m = 2, n = 3;
    std::vector<int8_t> x1(static_cast<size_t>(m * k), 127), x2(static_cast<size_t>(k * n), 127);
    for (int64_t p = 0; p < k / 3; ++p) x1[p] = -128;  // row 0: a third negative
    DeviceBuf<int8_t> a(x1), b(x2);
    DeviceBuf<int32_t> out{std::vector<int32_t>(static_cast<size_t>(m * n))};
    npu_kernels::QuantMatmulArgs q;
    q.m = m, q.n = n, q.k = k, q.x1 = a.ptr, q.x1_row_stride = k, q.x2 = b.ptr, q.x2_row_stride = n;
    q.out = out.ptr, q.out_dtype = DType::kInt32, q.name = "int_mm";
    ASSERT_OK(npu_kernels::quant_matmul(nullptr, q));
    ASSERT_OK(npu_sim::device_synchronize(0));
    const int64_t neg = k / 3;
    const auto wrap = [](int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); };
    const int32_t row0 = wrap((neg * -128 + (k - neg) * 127) * 127), row1 = wrap(k * 127 * 127);
    EXPECT_EQ(out.read(), (std::vector<int32_t>{row0, row0, row0, row1, row1, row1})) << "k = " << k;
    q.out_dtype = DType::kFloat32;  // an epilogue without its scale: refused, nothing launched
    EXPECT_EQ(npu_kernels::quant_matmul(nullptr, q), npu_sim::Status::kInvalidValue);
  }
}

// Per tensor: scale 0.5, zero point 2, codes in [0, 7]. 1.25 / 0.5 = 2.5 rounds to 2 (half to even): code 4, back to
// 1.0; -3 gives code -4, clamped to 0 (-1.0, masked out); 100 clamps to 7 (2.5, masked out). Disabled, the input
// passes with a full mask. Per channel with an int32 zero point, channel 1 at scale 0.25 and zero point -1.
TEST(FakeQuantize, ValuesAndMasksPerTensorAndPerChannel) {
  DeviceBuf<float> x{std::vector<float>{1.25f, -3.0f, 100.0f, 0.0f}}, y{std::vector<float>(4)};
  DeviceBuf<uint8_t> mask_buf{std::vector<uint8_t>(4, 7)};  // bool storage
  bool* mask = reinterpret_cast<bool*>(mask_buf.ptr);
  npu_kernels::FakeQuantArgs a;
  a.n = 4, a.quant_min = 0, a.quant_max = 7, a.scale = 0.5f, a.zero_point = 2;
  ASSERT_OK(npu_kernels::fake_quantize(nullptr, a, x.ptr, y.ptr, mask));
  ASSERT_OK(npu_sim::device_synchronize(0));
  EXPECT_EQ(y.read(), (std::vector<float>{1.0f, -1.0f, 2.5f, 0.0f}));
  EXPECT_EQ(mask_buf.read(), (std::vector<uint8_t>{1, 0, 0, 1}));
  DeviceBuf<float> s{std::vector<float>{0.5f}};
  DeviceBuf<int64_t> z{std::vector<int64_t>{2}}, off{std::vector<int64_t>{0}};
  a.scale = 99.0f;  // ignored: the device qparams win
  a.scale_ptr = s.ptr, a.zero_point_ptr = z.ptr, a.enabled_ptr = off.ptr;
  ASSERT_OK(npu_kernels::fake_quantize(nullptr, a, x.ptr, y.ptr, mask));
  ASSERT_OK(npu_sim::device_synchronize(0));
  EXPECT_EQ(y.read(), (std::vector<float>{1.25f, -3.0f, 100.0f, 0.0f}));
  EXPECT_EQ(mask_buf.read(), (std::vector<uint8_t>(4, 1)));
  DeviceBuf<float> scales{std::vector<float>{0.5f, 0.25f}};
  DeviceBuf<int32_t> zps{std::vector<int32_t>{2, -1}};
  npu_kernels::FakeQuantArgs c;
  c.n = 4, c.quant_min = -8, c.quant_max = 7, c.scales = scales.ptr, c.zero_points = zps.ptr;
  c.channels = 2, c.inner = 1;
  ASSERT_OK(npu_kernels::fake_quantize(nullptr, c, x.ptr, y.ptr, mask));
  ASSERT_OK(npu_sim::device_synchronize(0));
  // channel 0: 1.25 -> code 4 -> 1.0; channel 1: -3 / 0.25 - 1 = -13 -> -8 -> -1.75 (out); channel 0: 100 -> 202
  // -> 7 -> 2.5 (out); channel 1: 0 -> -1 -> 0.0
  EXPECT_EQ(y.read(), (std::vector<float>{1.0f, -1.75f, 2.5f, 0.0f}));
  EXPECT_EQ(mask_buf.read(), (std::vector<uint8_t>{1, 0, 0, 1}));
  c.zp_dtype = DType::kInt64;  // not a zero point type
  EXPECT_EQ(npu_kernels::fake_quantize(nullptr, c, x.ptr, y.ptr, mask), npu_sim::Status::kInvalidValue);
  a.dtype = DType::kInt32;
  EXPECT_EQ(npu_kernels::fake_quantize(nullptr, a, x.ptr, y.ptr, mask), npu_sim::Status::kInvalidValue);
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
