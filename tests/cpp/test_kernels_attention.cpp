// gtests of the fused attention kernel (npu_kernels::attention_forward/backward) against a naive
// double-precision reference: causal and not, a broadcast bias with a fully masked row, more queries than
// the UB's tile, float64, two streams at once, and the arguments it refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "npu_kernels/attention.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::AttentionArgs;
using npu_kernels::AttentionGradArgs;
using npu_kernels::DType;

struct Case {
  int64_t B, H, L, S, E, Ev;
  bool causal, bias;
};

struct Ref {  // reference output and gradients, [B][H][rows][cols] dense
  std::vector<double> out, dq, dk, dv;
};

template <typename T>
Ref reference(const Case& c, const std::vector<T>& q, const std::vector<T>& k, const std::vector<T>& v,
              const std::vector<T>& bias, const std::vector<T>& dout, double scale) {
  Ref r;
  r.out.assign(c.B * c.H * c.L * c.Ev, 0);
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
      std::vector<double> dp(c.S, 0.0);
      double dsum = 0;
      for (int64_t e = 0; e < c.Ev; ++e) {
        double o = 0;
        for (int64_t j = 0; j < c.S; ++j) o += p[j] * double(v[(bh * c.S + j) * c.Ev + e]);
        r.out[(bh * c.L + i) * c.Ev + e] = o;
        dsum += o * double(dout[(bh * c.L + i) * c.Ev + e]);
      }
      for (int64_t j = 0; j < c.S; ++j) {
        for (int64_t e = 0; e < c.Ev; ++e) {
          const double d = double(dout[(bh * c.L + i) * c.Ev + e]);
          dp[j] += d * double(v[(bh * c.S + j) * c.Ev + e]);
          r.dv[(bh * c.S + j) * c.Ev + e] += p[j] * d;
        }
      }
      for (int64_t j = 0; j < c.S; ++j) {
        const double ds = p[j] * (dp[j] - dsum) * scale;
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

template <typename T>
void run(const Case& c, npu_sim::Stream stream = nullptr, unsigned seed = 1) {
  const double scale = 1.0 / std::sqrt(double(c.E));
  auto hq = randoms<T>(c.B * c.H * c.L * c.E, seed), hk = randoms<T>(c.B * c.H * c.S * c.E, seed + 1);
  auto hv = randoms<T>(c.B * c.H * c.S * c.Ev, seed + 2), hdo = randoms<T>(c.B * c.H * c.L * c.Ev, seed + 3);
  auto hbias = randoms<T>(c.L * c.S, seed + 4);
  if (c.bias && c.L > 1)
    for (int64_t j = 0; j < c.S; ++j) hbias[1 * c.S + j] = -std::numeric_limits<T>::infinity();  // row 1 fully masked
  const Ref ref = reference(c, hq, hk, hv, hbias, hdo, scale);
  DeviceBuf<T> q(hq), k(hk), v(hv), dout(hdo), bias(hbias);
  DeviceBuf<T> out(std::vector<T>(ref.out.size(), T(NAN))), lse(std::vector<T>(c.B * c.H * c.L));
  DeviceBuf<T> dq(std::vector<T>(ref.dq.size(), T(NAN))), dk(std::vector<T>(ref.dk.size(), T(NAN)));
  DeviceBuf<T> dv(std::vector<T>(ref.dv.size(), T(NAN)));
  AttentionArgs a;
  a.dtype = std::is_same_v<T, float> ? DType::kFloat32 : DType::kFloat64;
  a.batch = c.B; a.heads = c.H; a.q_len = c.L; a.kv_len = c.S; a.head_dim = c.E; a.v_dim = c.Ev;
  a.q = dense(q.ptr, c.H, c.L, c.E);
  a.k = dense(k.ptr, c.H, c.S, c.E);
  a.v = dense(v.ptr, c.H, c.S, c.Ev);
  a.out = dense(out.ptr, c.H, c.L, c.Ev);
  if (c.bias) {
    a.bias = bias.ptr;
    a.bias_row_stride = c.S;
    a.bias_col_stride = 1;
  }
  a.causal = c.causal;
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
  const double tol = std::is_same_v<T, float> ? 2e-4 : 1e-10;
  auto expect = [&](const std::vector<double>& want, const std::vector<T>& got, const char* what) {
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(double(got[i]), want[i], tol * (1 + std::fabs(want[i]))) << what << "[" << i << "]";
  };
  expect(ref.out, out.read(), "out");
  expect(ref.dq, dq.read(), "dq");
  expect(ref.dk, dk.read(), "dk");
  expect(ref.dv, dv.read(), "dv");
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
  a.dtype = DType::kFloat16;
  EXPECT_EQ(npu_kernels::attention_forward(nullptr, a), npu_sim::Status::kInvalidValue);
  a.dtype = DType::kFloat32;
  a.kv_len = npu_kernels::attention_max_kv_len(nullptr, DType::kFloat32) + 1;
  EXPECT_EQ(npu_kernels::attention_forward(nullptr, a), npu_sim::Status::kInvalidValue);
  a.kv_len = -1;
  EXPECT_EQ(npu_kernels::attention_forward(nullptr, a), npu_sim::Status::kInvalidValue);
  EXPECT_EQ(npu_kernels::attention_max_kv_len(nullptr, DType::kInt32), -1);
}

}  // namespace
