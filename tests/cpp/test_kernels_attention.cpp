// gtests of the fused attention kernel (npu_kernels::attention_forward/backward) against a naive
// double-precision reference: causal and not, a broadcast bias with a fully masked row, more queries than
// the UB's tile, float64, float16 and bfloat16 (odd lengths, several key chunks), dropout against the
// explicit mask of attention_dropout_mask, two streams at once, the launch record, and the arguments it
// refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "npu_kernels/attention.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::AttentionArgs;
using npu_kernels::AttentionGradArgs;
using npu_kernels::BFloat16;
using npu_kernels::DType;
using npu_kernels::Half;

struct Case {
  int64_t B, H, L, S, E, Ev;
  bool causal, bias;
  double keep = 1.0;  // dropout keep probability
  uint64_t seed = 0, offset = 0;
};

struct Ref {  // reference output, lse and gradients, [B][H][rows][cols] dense
  std::vector<double> out, lse, dq, dk, dv;
};

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  else if constexpr (std::is_same_v<T, double>) return DType::kFloat64;
  else if constexpr (std::is_same_v<T, Half>) return DType::kFloat16;
  else return DType::kBFloat16;
}

// lse is float32 for the 16-bit dtypes, else the input dtype.
template <typename T>
using LseT = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Tolerances, as |got - want| <= tol * (1 + |want|). float32/float64: accumulation order only. 16-bit: the
// inputs are the same rounded values in kernel and reference, so what remains is one rounding of each
// output (half an ulp: 2^-12 fp16, 2^-9 bf16, relative; the out tolerance is one ulp), float32
// accumulation, and in the backward the rounded O (rowsum(dO * O) uses the stored O) propagating into dS.
// Measured worst cases over these tests: fp16 out 2.5e-4, grads 4.4e-4; bf16 out 2.0e-3, grads 5.4e-3;
// lse (float32 for both) 1.5e-7.
struct Tol {
  double out, grad, lse;
};
template <typename T>
constexpr Tol tol_of() {
  if constexpr (std::is_same_v<T, float>) return {2e-4, 2e-4, 2e-5};
  else if constexpr (std::is_same_v<T, double>) return {1e-10, 1e-10, 1e-12};
  else if constexpr (std::is_same_v<T, Half>) return {5e-4, 2e-3, 1e-5};
  else return {4e-3, 2e-2, 1e-5};
}

// `mask` ([B, H, L, S], 1 kept) is applied when c.keep < 1: the output is softmax -> mask / keep -> times V.
template <typename T>
Ref reference(const Case& c, const std::vector<T>& q, const std::vector<T>& k, const std::vector<T>& v,
              const std::vector<T>& bias, const std::vector<T>& dout, double scale,
              const std::vector<uint8_t>& mask = {}) {
  Ref r;
  r.out.assign(c.B * c.H * c.L * c.Ev, 0);
  r.lse.assign(c.B * c.H * c.L, 0);
  r.dq.assign(c.B * c.H * c.L * c.E, 0);
  r.dk.assign(c.B * c.H * c.S * c.E, 0);
  r.dv.assign(c.B * c.H * c.S * c.Ev, 0);
  for (int64_t bh = 0; bh < c.B * c.H; ++bh) {
    for (int64_t i = 0; i < c.L; ++i) {
      std::vector<double> p(c.S, 0.0);
      double m = -INFINITY;
      for (int64_t j = 0; j < c.S; ++j) {
        double s = 0;
        for (int64_t e = 0; e < c.E; ++e)
          s += double(q[(bh * c.L + i) * c.E + e]) * double(k[(bh * c.S + j) * c.E + e]);
        s *= scale;
        if (c.bias) s += double(bias[i * c.S + j]);  // bias is [L, S], broadcast over batch and heads
        if (c.causal && j > i) s = -INFINITY;
        p[j] = s;
        m = std::max(m, s);
      }
      double sum = 0;
      for (int64_t j = 0; j < c.S; ++j) sum += (p[j] = m == -INFINITY ? 0.0 : std::exp(p[j] - m));
      for (int64_t j = 0; j < c.S; ++j) p[j] = sum == 0 ? 0.0 : p[j] / sum;
      r.lse[bh * c.L + i] = sum == 0 ? -INFINITY : m + std::log(sum);
      std::vector<double> f(c.S, 1.0), pd(p);  // dropout factor (mask / keep) and the dropped probabilities
      if (c.keep < 1.0) {
        for (int64_t j = 0; j < c.S; ++j) pd[j] = p[j] * (f[j] = mask[(bh * c.L + i) * c.S + j] / c.keep);
      }
      std::vector<double> dp(c.S, 0.0);
      double dsum = 0;
      for (int64_t e = 0; e < c.Ev; ++e) {
        double o = 0;
        for (int64_t j = 0; j < c.S; ++j) o += pd[j] * double(v[(bh * c.S + j) * c.Ev + e]);
        r.out[(bh * c.L + i) * c.Ev + e] = o;
        dsum += o * double(dout[(bh * c.L + i) * c.Ev + e]);
      }
      for (int64_t j = 0; j < c.S; ++j) {
        for (int64_t e = 0; e < c.Ev; ++e) {
          const double d = double(dout[(bh * c.L + i) * c.Ev + e]);
          dp[j] += d * double(v[(bh * c.S + j) * c.Ev + e]);
          r.dv[(bh * c.S + j) * c.Ev + e] += pd[j] * d;
        }
      }
      for (int64_t j = 0; j < c.S; ++j) {
        const double ds = p[j] * (dp[j] * f[j] - dsum) * scale;
        for (int64_t e = 0; e < c.E; ++e) {
          r.dq[(bh * c.L + i) * c.E + e] += ds * double(k[(bh * c.S + j) * c.E + e]);
          r.dk[(bh * c.S + j) * c.E + e] += ds * double(q[(bh * c.L + i) * c.E + e]);
        }
      }
    }
  }
  return r;
}

template <typename T>
std::vector<T> randoms(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> d;
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(gen));
  return v;
}

npu_kernels::AttnOperand dense(const void* p, int64_t H, int64_t rows, int64_t cols) {
  return {p, H * rows * cols, rows * cols, cols};
}

AttentionArgs args_for(const Case& c, DType dtype) {
  AttentionArgs a;
  a.dtype = dtype;
  a.batch = c.B; a.heads = c.H; a.q_len = c.L; a.kv_len = c.S; a.head_dim = c.E; a.v_dim = c.Ev;
  a.causal = c.causal;
  a.keep_prob = c.keep;
  a.seed = c.seed;
  a.offset = c.offset;
  return a;
}

// The [B, H, L, S] keep mask of c's dropout arguments.
std::vector<uint8_t> dropout_mask(const Case& c, npu_sim::Stream stream = nullptr) {
  DeviceBuf<uint8_t> m(std::vector<uint8_t>(c.B * c.H * c.L * c.S, 7));
  EXPECT_EQ(npu_kernels::attention_dropout_mask(stream, args_for(c, DType::kFloat32), m.ptr),
            npu_sim::Status::kSuccess) << npu_sim::last_error_message();
  EXPECT_EQ(stream ? npu_sim::stream_synchronize(stream) : npu_sim::device_synchronize(0), npu_sim::Status::kSuccess);
  return m.read();
}

template <typename T>
void run(const Case& c, npu_sim::Stream stream = nullptr, unsigned seed = 1) {
  const double scale = 1.0 / std::sqrt(double(c.E));
  auto hq = randoms<T>(c.B * c.H * c.L * c.E, seed), hk = randoms<T>(c.B * c.H * c.S * c.E, seed + 1);
  auto hv = randoms<T>(c.B * c.H * c.S * c.Ev, seed + 2), hdo = randoms<T>(c.B * c.H * c.L * c.Ev, seed + 3);
  auto hbias = randoms<T>(c.L * c.S, seed + 4);
  if (c.bias && c.L > 1)
    for (int64_t j = 0; j < c.S; ++j) hbias[1 * c.S + j] = T(-std::numeric_limits<float>::infinity());  // row 1 fully masked
  const std::vector<uint8_t> mask = c.keep < 1.0 ? dropout_mask(c, stream) : std::vector<uint8_t>{};
  const Ref ref = reference(c, hq, hk, hv, hbias, hdo, scale, mask);
  DeviceBuf<T> q(hq), k(hk), v(hv), dout(hdo), bias(hbias);
  DeviceBuf<T> out(std::vector<T>(ref.out.size(), T(NAN)));
  DeviceBuf<LseT<T>> lse(std::vector<LseT<T>>(c.B * c.H * c.L, LseT<T>(NAN)));
  DeviceBuf<T> dq(std::vector<T>(ref.dq.size(), T(NAN))), dk(std::vector<T>(ref.dk.size(), T(NAN)));
  DeviceBuf<T> dv(std::vector<T>(ref.dv.size(), T(NAN)));
  AttentionArgs a = args_for(c, dtype_of<T>());
  a.q = dense(q.ptr, c.H, c.L, c.E);
  a.k = dense(k.ptr, c.H, c.S, c.E);
  a.v = dense(v.ptr, c.H, c.S, c.Ev);
  a.out = dense(out.ptr, c.H, c.L, c.Ev);
  if (c.bias) {
    a.bias = bias.ptr;
    a.bias_row_stride = c.S;
    a.bias_col_stride = 1;
  }
  a.scale = scale;
  a.lse = lse.ptr;
  ASSERT_OK(npu_kernels::attention_forward(stream, a));
  AttentionGradArgs g;
  g.fwd = a;
  g.dout = dense(dout.ptr, c.H, c.L, c.Ev);
  g.dq = dense(dq.ptr, c.H, c.L, c.E);
  g.dk = dense(dk.ptr, c.H, c.S, c.E);
  g.dv = dense(dv.ptr, c.H, c.S, c.Ev);
  ASSERT_OK(npu_kernels::attention_backward(stream, g));
  ASSERT_OK(stream ? npu_sim::stream_synchronize(stream) : npu_sim::device_synchronize(0));
  constexpr Tol tol = tol_of<T>();
  auto expect = [&](const std::vector<double>& want, const auto& got, double t, const char* what) {
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (std::isinf(want[i])) {
        ASSERT_EQ(double(got[i]), want[i]) << what << "[" << i << "]";
        continue;
      }
      ASSERT_NEAR(double(got[i]), want[i], t * (1 + std::fabs(want[i]))) << what << "[" << i << "]";
    }
  };
  expect(ref.out, out.read(), tol.out, "out");
  expect(ref.lse, lse.read(), tol.lse, "lse");
  expect(ref.dq, dq.read(), tol.grad, "dq");
  expect(ref.dk, dk.read(), tol.grad, "dk");
  expect(ref.dv, dv.read(), tol.grad, "dv");
}

TEST(KernelsAttention, MatchesTheReference) {
  run<float>({2, 3, 9, 9, 8, 8, false, false});
  run<float>({2, 3, 9, 9, 8, 8, true, false});
  run<float>({1, 2, 7, 13, 5, 3, true, true});  // fewer queries than keys, broadcast bias, a masked row
  run<float>({1, 1, 13, 7, 5, 3, true, false});
  run<double>({2, 2, 6, 11, 4, 6, false, true});
}

TEST(KernelsAttention, ManyQueryTilesPerHead) {
  // 192 KiB UB / (2 * 900 + 1) floats per row: 27 query rows per tile, so 600 rows take 23 tiles.
  run<float>({1, 1, 600, 900, 4, 4, true, false});
}

TEST(KernelsAttention, SeveralKeyBlocksPerTile) {
  // Keys in blocks of 512 with the online softmax: 1100 keys take three blocks; a bias with a fully masked row
  // (row 1: -inf in every block), rows whose max grows in a later block, causal rows that stop mid-block,
  // dropout across blocks, 16-bit operands.
  run<float>({1, 2, 70, 1100, 8, 8, false, true});
  run<float>({1, 1, 700, 1100, 8, 4, true, true});
  run<double>({1, 1, 30, 1030, 4, 4, false, true, 0.8, 12, 3});
  run<BFloat16>({1, 1, 600, 1030, 8, 8, true, true, 0.7, 11, 5});
  run<Half>({1, 1, 33, 1100, 16, 8, false, false});
}

TEST(KernelsAttention, NoKeysWithHeadDimsFillingTheUb) {
  // bf16 head dims of 768: the widened K / V chunk alone fills the 192 KiB UB, so only kv_len 0 is accepted;
  // it gives zero outputs, -inf lse and zero gradients (no score block is needed, none may be asked for)
  run<BFloat16>({1, 1, 3, 0, 768, 768, false, false});
  run<float>({1, 2, 4, 0, 8, 8, true, false});
}

TEST(KernelsAttention, TwoStreamsConcurrently) {
  npu_sim::Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s1));
  ASSERT_OK(npu_sim::stream_create(0, &s2));
  std::thread t1([&] { for (unsigned r = 0; r < 3; ++r) run<float>({2, 4, 20, 20, 8, 8, true, false}, s1, 10 + r); });
  std::thread t2([&] { for (unsigned r = 0; r < 3; ++r) run<double>({3, 2, 9, 15, 4, 4, false, true}, s2, 20 + r); });
  t1.join();
  t2.join();
  ASSERT_OK(npu_sim::stream_destroy(s1));
  ASSERT_OK(npu_sim::stream_destroy(s2));
}

TEST(KernelsAttention, RefusesWhatItDoesNotTake) {
  float x[16] = {};
  AttentionArgs a;
  a.batch = a.heads = 1; a.q_len = 2; a.kv_len = 2; a.head_dim = a.v_dim = 2;
  a.q = a.k = a.v = a.out = dense(x, 1, 2, 2);
  a.lse = x;
  a.dtype = DType::kInt32;
  EXPECT_EQ(npu_kernels::attention_forward(nullptr, a), npu_sim::Status::kInvalidValue);
  a.dtype = DType::kComplex64;
  EXPECT_EQ(npu_kernels::attention_forward(nullptr, a), npu_sim::Status::kInvalidValue);
  a.dtype = DType::kFloat32;
  a.kv_len = npu_kernels::attention_max_kv_len(nullptr, DType::kFloat32) + 1;
  EXPECT_EQ(npu_kernels::attention_forward(nullptr, a), npu_sim::Status::kInvalidValue);
  a.kv_len = -1;
  EXPECT_EQ(npu_kernels::attention_forward(nullptr, a), npu_sim::Status::kInvalidValue);
  EXPECT_EQ(npu_kernels::attention_max_kv_len(nullptr, DType::kInt32), -1);
}

// The 16-bit limit is real: positive, below float32's (the widened rows share the UB), shrinking with
// the head dims, and enforced with the actual dims.
TEST(KernelsAttention, SixteenBitKvLimit) {
  const int64_t f32 = npu_kernels::attention_max_kv_len(nullptr, DType::kFloat32);
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    const int64_t lim = npu_kernels::attention_max_kv_len(nullptr, d);
    EXPECT_GT(lim, 1000);
    EXPECT_LT(lim, f32);
    EXPECT_EQ(lim, npu_kernels::attention_max_kv_len(nullptr, d, 256, 256));
    EXPECT_GT(npu_kernels::attention_max_kv_len(nullptr, d, 64, 64), lim);
    Half x[16] = {};
    AttentionArgs a;
    a.dtype = d;
    a.batch = a.heads = 1; a.q_len = 2; a.head_dim = a.v_dim = 2;
    a.q = a.k = a.v = a.out = dense(x, 1, 2, 2);
    a.kv_len = npu_kernels::attention_max_kv_len(nullptr, d, 2, 2) + 1;
    EXPECT_EQ(npu_kernels::attention_forward(nullptr, a), npu_sim::Status::kInvalidValue);
  }
  EXPECT_EQ(npu_kernels::attention_max_kv_len(nullptr, DType::kFloat32, 4096, 4096), f32);
}

// float16 / bfloat16 against the double reference of the rounded inputs: odd lengths (1, 37, 130: partial
// key chunks of 64), causal, the broadcast bias with its fully masked row, more queries than keys and the
// reverse, an empty value dim, and a head of many query tiles.
template <typename T>
void sixteen_bit_cases() {
  run<T>({2, 3, 9, 9, 8, 8, false, false});
  run<T>({1, 2, 37, 130, 16, 8, true, true});
  run<T>({2, 1, 130, 37, 8, 16, true, false});
  run<T>({1, 2, 130, 130, 12, 12, false, true});
  run<T>({1, 1, 1, 130, 16, 16, false, false});
  run<T>({1, 1, 130, 1, 16, 16, true, false});
  run<T>({1, 1, 37, 37, 5, 3, true, true});
  run<T>({1, 1, 5, 7, 4, 0, true, false});  // no value columns: dQ, dK are 0
}
TEST(KernelsAttention, Float16MatchesTheReference) { sixteen_bit_cases<Half>(); }
TEST(KernelsAttention, BFloat16MatchesTheReference) { sixteen_bit_cases<BFloat16>(); }
TEST(KernelsAttention, Float16ManyQueryTilesPerHead) { run<Half>({1, 1, 600, 900, 4, 4, true, false}); }

// The keep mask: a pure function of (seed, offset, index), its keep fraction within 5 sigma of keep_prob.
TEST(KernelsAttention, DropoutMaskIsDeterministic) {
  const Case c{2, 3, 37, 130, 8, 8, false, false, 0.8, 42, 7};
  const auto m1 = dropout_mask(c), m2 = dropout_mask(c);
  EXPECT_EQ(m1, m2);
  Case c2 = c;
  c2.offset = 8;
  const auto m3 = dropout_mask(c2);
  Case c3 = c;
  c3.seed = 43;
  const auto m4 = dropout_mask(c3);
  std::size_t diff_offset = 0, diff_seed = 0;
  for (std::size_t i = 0; i < m1.size(); ++i) {
    ASSERT_TRUE(m1[i] == 0 || m1[i] == 1) << i;
    diff_offset += m1[i] != m3[i];
    diff_seed += m1[i] != m4[i];
  }
  // Independent masks differ in 2 p (1 - p) = 32% of the places.
  EXPECT_GT(diff_offset, m1.size() / 5);
  EXPECT_GT(diff_seed, m1.size() / 5);
  // A mask does not depend on the stream it is made on either.
  npu_sim::Stream s = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s));
  EXPECT_EQ(dropout_mask(c, s), m1);
  ASSERT_OK(npu_sim::stream_destroy(s));
  for (double keep : {0.8, 0.5, 0.1, 0.999}) {
    Case k = c;
    k.keep = keep;
    k.seed = 1234;
    const auto m = dropout_mask(k);
    double kept = 0;
    for (uint8_t b : m) kept += b;
    const double n = double(m.size()), sigma = std::sqrt(keep * (1 - keep) / n);
    EXPECT_NEAR(kept / n, keep, 5 * sigma) << keep;
  }
  Case all = c;
  all.keep = 1.0;
  for (uint8_t b : dropout_mask(all)) ASSERT_EQ(b, 1);
}

// Forward and backward with dropout equal the reference applying the explicit mask, every dtype.
TEST(KernelsAttention, DropoutMatchesTheExplicitMask) {
  run<float>({2, 3, 9, 9, 8, 8, false, false, 0.7, 5, 0});
  run<float>({1, 2, 37, 130, 16, 8, true, true, 0.5, 6, 1000});
  run<double>({2, 2, 6, 11, 4, 6, false, true, 0.8, 7, 3});
  run<float>({1, 1, 600, 900, 4, 4, true, false, 0.9, 8, 0});  // many query tiles
  run<Half>({1, 2, 37, 130, 16, 8, true, true, 0.7, 9, 2});
  run<BFloat16>({2, 1, 130, 37, 8, 16, false, true, 0.6, 10, 4});
}

TEST(KernelsAttention, RefusesKeepProbOutsideZeroOne) {
  float x[64] = {};
  uint8_t m[16] = {};
  AttentionArgs a;
  a.batch = a.heads = 1; a.q_len = 2; a.kv_len = 2; a.head_dim = a.v_dim = 2;
  a.q = a.k = a.v = a.out = dense(x, 1, 2, 2);
  a.lse = x + 32;
  AttentionGradArgs g;
  g.dout = g.dq = g.dk = g.dv = dense(x + 16, 1, 2, 2);
  for (double keep : {0.0, -0.5, 1.0000001, 2.0, double(NAN)}) {
    a.keep_prob = keep;
    g.fwd = a;
    EXPECT_EQ(npu_kernels::attention_forward(nullptr, a), npu_sim::Status::kInvalidValue) << keep;
    EXPECT_EQ(npu_kernels::attention_backward(nullptr, g), npu_sim::Status::kInvalidValue) << keep;
    EXPECT_EQ(npu_kernels::attention_dropout_mask(nullptr, a, m), npu_sim::Status::kInvalidValue) << keep;
  }
}

// One float32 forward of B = 1, H = 2, L = 5, S = 7, E = 4, Ev = 3 (one query tile per head), exactly.
// Per head the kernel reads Q (5 x 4), K (7 x 4) and V (7 x 3) once and writes O (5 x 3) and lse (5), and first
// packs K transposed into its workspace (K read, K^T written: 28 values each way; the tile reads K^T instead of K):
//   read  = 2 heads x 4 B x (20 + 28 + 21 + 28) = 776 B,  write = 2 x 4 B x (15 + 5 + 28) = 384 B;
// Cube FLOPs 2 L S E + 2 L S Ev per head = 2 x (280 + 210) = 980; Vector FLOPs 5 per score (max,
// subtract, exp, sum, normalise) = 2 x 5 x 35 = 350.
TEST(KernelsAttention, ForwardRecordsItsGmBytesAndFlops) {
  const Case c{1, 2, 5, 7, 4, 3, false, false};
  DeviceBuf<float> q(randoms<float>(40, 1)), k(randoms<float>(56, 2)), v(randoms<float>(42, 3));
  DeviceBuf<float> out(std::vector<float>(30)), lse(std::vector<float>(10));
  AttentionArgs a = args_for(c, DType::kFloat32);
  a.q = dense(q.ptr, c.H, c.L, c.E);
  a.k = dense(k.ptr, c.H, c.S, c.E);
  a.v = dense(v.ptr, c.H, c.S, c.Ev);
  a.out = dense(out.ptr, c.H, c.L, c.Ev);
  a.lse = lse.ptr;
  ASSERT_OK(npu_sim::device_synchronize(0));
  ASSERT_OK(npu_sim::set_launch_recording(true));
  npu_sim::clear_launch_records();
  ASSERT_OK(npu_kernels::attention_forward(nullptr, a));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto recs = npu_sim::get_launch_records();
  ASSERT_OK(npu_sim::set_launch_recording(false));
  npu_sim::clear_launch_records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].kernel, "attention_forward");
  EXPECT_FALSE(recs[0].failed);
  EXPECT_EQ(recs[0].gm_read, 776u);
  EXPECT_EQ(recs[0].gm_write, 384u);
  EXPECT_EQ(recs[0].cube_flops, 980u);
  EXPECT_EQ(recs[0].vector_flops, 350u);
}

// The same shape in bfloat16: 2-byte operands, the float32 lse: read 2 x 2 B x 69 = 276 B, write
// 2 x (2 B x 15 + 4 B x 5) = 100 B; the FLOPs are the dtype's business no more than the shape's. On the AMX tile
// kernels each head also reads K and V once (2 B x 7 x (4 + 3)) and writes them packed into whole tiles
// (2 B x (16 keys x 32 dims + 32 keys x 16 dims)).
TEST(KernelsAttention, BFloat16ForwardRecordsItsGmBytes) {
  const Case c{1, 2, 5, 7, 4, 3, false, false};
  DeviceBuf<BFloat16> q(randoms<BFloat16>(40, 1)), k(randoms<BFloat16>(56, 2)), v(randoms<BFloat16>(42, 3));
  DeviceBuf<BFloat16> out(std::vector<BFloat16>(30));
  DeviceBuf<float> lse(std::vector<float>(10));
  AttentionArgs a = args_for(c, DType::kBFloat16);
  a.q = dense(q.ptr, c.H, c.L, c.E);
  a.k = dense(k.ptr, c.H, c.S, c.E);
  a.v = dense(v.ptr, c.H, c.S, c.Ev);
  a.out = dense(out.ptr, c.H, c.L, c.Ev);
  a.lse = lse.ptr;
  ASSERT_OK(npu_sim::device_synchronize(0));
  ASSERT_OK(npu_sim::set_launch_recording(true));
  npu_sim::clear_launch_records();
  ASSERT_OK(npu_kernels::attention_forward(nullptr, a));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto recs = npu_sim::get_launch_records();
  ASSERT_OK(npu_sim::set_launch_recording(false));
  npu_sim::clear_launch_records();
  ASSERT_EQ(recs.size(), 1u);
  const bool amx = std::string(npu_kernels::attention_bf16_kernel_name()) == "amx_bf16";
  EXPECT_EQ(recs[0].gm_read, 276u + (amx ? 2u * 98u : 0u));
  EXPECT_EQ(recs[0].gm_write, 100u + (amx ? 2u * 2048u : 0u));
  EXPECT_EQ(recs[0].cube_flops, 980u);
  EXPECT_EQ(recs[0].vector_flops, 350u);
}

}  // namespace
