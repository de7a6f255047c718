// gtests of the fused vector kernels (npu_kernels/fused_nn.h) against double references and finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <type_traits>
#include <vector>

#include "npu_kernels/fused_nn.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::BFloat16;
using npu_kernels::DType;
using npu_kernels::Half;
using npu_kernels::RotaryMode;
using Vec = std::vector<double>;

template <typename T>
DType dt() {
  if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  else if constexpr (std::is_same_v<T, Half>) return DType::kFloat16;
  else return DType::kBFloat16;
}

template <typename T>
double D(T v) {
  return static_cast<double>(static_cast<float>(v));
}

template <typename T>
std::vector<T> rnd(std::size_t n, unsigned seed, double sd = 1.0) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> d(0.0, sd);
  std::vector<T> v(n);
  for (auto& x : v) x = T(static_cast<float>(d(gen)));
  return v;
}

template <typename T>
std::vector<T> filled(std::size_t n) {
  return std::vector<T>(n, T(NAN));
}

// Tolerance relative to |want| + max|want|: fp32 math (fast exp/sigmoid ~2 ulp, fp32 sums) and, for 16-bit, the
// output's rounding (fp16: 2^-11, bf16: 2^-8 relative).
template <typename T>
double tol() {
  if constexpr (std::is_same_v<T, float>) return 2e-5;
  else if constexpr (std::is_same_v<T, Half>) return 2e-3;
  else return 1.6e-2;
}

template <typename T>
void expect_close(const std::vector<T>& got, const Vec& want, double tl, const char* what, double mx = 0) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (double w : want) mx = std::max(mx, std::fabs(w));
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(D(got[i]), want[i], tl * (std::fabs(want[i]) + mx) + 1e-30) << what << "[" << i << "]";
}

npu_sim::Status sync() { return npu_sim::device_synchronize(0); }

// ---- RMSNorm ----

struct RmsRef {
  Vec s, y, rstd, dx, dgamma;
  double dx_scale = 0;  // max rstd * |dy * gamma|: dx cancels down to ~eps (n = 1), its error does not
};

// Forward and the analytic backward in double, from the (rounded) inputs; s is x + x2 rounded to T.
template <typename T>
RmsRef rms_reference(int64_t rows, int64_t n, const std::vector<T>& x, const std::vector<T>* x2,
                     const std::vector<T>& g,
                     const std::vector<T>& dy, double eps) {
  RmsRef r;
  r.s.resize(rows * n);
  r.y.resize(rows * n);
  r.dx.resize(rows * n);
  r.rstd.resize(rows);
  r.dgamma.assign(n, 0.0);
  for (int64_t i = 0; i < rows * n; ++i)
    r.s[i] = x2 ? D(T(static_cast<float>(x[i]) + static_cast<float>((*x2)[i]))) : D(x[i]);
  for (int64_t k = 0; k < rows; ++k) {
    const double* s = &r.s[k * n];
    double ss = 0, gs = 0;
    for (int64_t i = 0; i < n; ++i) ss += s[i] * s[i];
    const double rs = 1.0 / std::sqrt(ss / n + eps);
    r.rstd[k] = rs;
    for (int64_t i = 0; i < n; ++i) {
      r.y[k * n + i] = s[i] * rs * D(g[i]);
      gs += D(dy[k * n + i]) * D(g[i]) * s[i];
      r.dgamma[i] += D(dy[k * n + i]) * s[i] * rs;
    }
    for (int64_t i = 0; i < n; ++i) {
      r.dx[k * n + i] = rs * (D(dy[k * n + i]) * D(g[i]) - s[i] * rs * rs * gs / n);
      r.dx_scale = std::max(r.dx_scale, rs * std::fabs(D(dy[k * n + i]) * D(g[i])));
    }
  }
  return r;
}

template <typename T>
void check_rms(int64_t rows, int64_t n, bool add, unsigned seed) {
  SCOPED_TRACE(::testing::Message() << "rows " << rows << " n " << n << " add " << add << " dtype " << int(dt<T>()));
  const double eps = 1e-6;
  auto hx = rnd<T>(rows * n, seed), hx2 = rnd<T>(rows * n, seed + 1), hg = rnd<T>(n, seed + 2);
  auto hdy = rnd<T>(rows * n, seed + 3);
  const RmsRef ref = rms_reference(rows, n, hx, add ? &hx2 : nullptr, hg, hdy, eps);
  DeviceBuf<T> x(hx), x2(hx2), g(hg), y(filled<T>(rows * n)), xs(filled<T>(rows * n)), dy(hdy);
  DeviceBuf<float> rstd(std::vector<float>(rows, NAN));
  npu_kernels::RmsNormArgs a;
  a.dtype = dt<T>();
  a.rows = rows;
  a.n = n;
  a.eps = eps;
  a.x = x.ptr;
  a.x2 = add ? x2.ptr : nullptr;
  a.gamma = g.ptr;
  a.y = y.ptr;
  a.rstd = rstd.ptr;
  a.x_sum = add ? xs.ptr : nullptr;
  ASSERT_OK(npu_kernels::rms_norm(nullptr, a));
  ASSERT_OK(sync());
  expect_close(y.read(), ref.y, tol<T>(), "y");
  expect_close(rstd.read(), ref.rstd, 2e-6, "rstd");
  if (add) expect_close(xs.read(), ref.s, 0.0, "x_sum");  // exactly the sum rounded to T

  // backward from s (x_sum for add_rms_norm) and the forward's rstd: dx and dgamma, then each alone
  DeviceBuf<T> dx(filled<T>(rows * n)), dgamma(filled<T>(n));
  npu_kernels::RmsNormGradArgs b;
  b.dtype = dt<T>();
  b.rows = rows;
  b.n = n;
  b.dy = dy.ptr;
  b.x = add ? xs.ptr : x.ptr;
  b.rstd = rstd.ptr;
  b.gamma = g.ptr;
  b.dx = dx.ptr;
  b.dgamma = dgamma.ptr;
  ASSERT_OK(npu_kernels::rms_norm_backward(nullptr, b));
  ASSERT_OK(sync());
  const auto dx_all = dx.read(), dg_all = dgamma.read();
  expect_close(dx_all, ref.dx, 2 * tol<T>(), "dx", ref.dx_scale);
  expect_close(dg_all, ref.dgamma, 2 * tol<T>(), "dgamma");
  DeviceBuf<T> dx2(filled<T>(rows * n)), dgamma2(filled<T>(n));
  b.dx = nullptr;
  b.dgamma = dgamma2.ptr;
  b.gamma = nullptr;  // not read without dx
  ASSERT_OK(npu_kernels::rms_norm_backward(nullptr, b));
  b.dx = dx2.ptr;
  b.dgamma = nullptr;
  b.gamma = g.ptr;
  ASSERT_OK(npu_kernels::rms_norm_backward(nullptr, b));
  ASSERT_OK(sync());
  const auto dx_only = dx2.read(), dg_only = dgamma2.read();  // the same bits as together
  ASSERT_EQ(std::memcmp(dx_only.data(), dx_all.data(), sizeof(T) * dx_all.size()), 0);
  ASSERT_EQ(std::memcmp(dg_only.data(), dg_all.data(), sizeof(T) * dg_all.size()), 0);
}

template <typename T>
void rms_suite() {
  for (bool add : {false, true}) {
    check_rms<T>(1, 1, add, 1);
    check_rms<T>(3, 33, add, 2);
    check_rms<T>(5, 4097, add, 3);
    check_rms<T>(200, 33, add, 4);   // several dgamma chunks with a ragged last one
    check_rms<T>(67, 128, add, 5);
  }
}

TEST(KernelsFusedNn, RmsNormFloat32) { rms_suite<float>(); }
TEST(KernelsFusedNn, RmsNormFloat16) { rms_suite<Half>(); }
TEST(KernelsFusedNn, RmsNormBFloat16) { rms_suite<BFloat16>(); }

// ---- rotary_mul ----

// Broadcast r: its dims are (e0, e1, e2, d), each e either 1 or x's.
template <typename T>
void check_rotary(RotaryMode mode, int64_t d0, int64_t d1, int64_t d2, int64_t d, int64_t e0, int64_t e1, int64_t e2,
                  unsigned seed, bool in_place = false) {
  SCOPED_TRACE(::testing::Message() << "mode " << int(mode) << " [" << d0 << "," << d1 << "," << d2 << "," << d
                                    << "] r [" << e0 << "," << e1 << "," << e2 << "] dtype " << int(dt<T>()));
  const int64_t rows = d0 * d1 * d2, rn = e0 * e1 * e2 * d, h = d / 2;
  auto hx = rnd<T>(rows * d, seed), hr1 = rnd<T>(rn, seed + 1), hr2 = rnd<T>(rn, seed + 2);
  auto hdy = rnd<T>(rows * d, seed + 3);
  const int64_t st[3] = {e0 == 1 ? 0 : e1 * e2 * d, e1 == 1 ? 0 : e2 * d, e2 == 1 ? 0 : d};
  Vec out(rows * d), dx(rows * d);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i0 = r / (d1 * d2), i1 = r / d2 % d1, i2 = r % d2, ro = i0 * st[0] + i1 * st[1] + i2 * st[2];
    auto X = [&](int64_t j) { return D(hx[r * d + j]); };
    auto G = [&](int64_t j) { return D(hdy[r * d + j]); };
    auto C = [&](int64_t j) { return D(hr1[ro + j]); };
    auto S = [&](int64_t j) { return D(hr2[ro + j]); };
    for (int64_t j = 0; j < d; ++j) {
      double rot, rot_t;  // rotate(x)[j] and rotate^T(dy * r2)[j]
      if (mode == RotaryMode::kHalf) {
        rot = j < h ? -X(j + h) : X(j - h);
        rot_t = j < h ? G(j + h) * S(j + h) : -G(j - h) * S(j - h);
      } else {
        rot = j % 2 == 0 ? -X(j + 1) : X(j - 1);
        rot_t = j % 2 == 0 ? G(j + 1) * S(j + 1) : -G(j - 1) * S(j - 1);
      }
      out[r * d + j] = X(j) * C(j) + rot * S(j);
      dx[r * d + j] = G(j) * C(j) + rot_t;
    }
  }
  DeviceBuf<T> x(hx), r1(hr1), r2(hr2), o(filled<T>(rows * d)), dy(hdy), g(filled<T>(rows * d));
  npu_kernels::RotaryArgs a;
  a.dtype = dt<T>();
  a.mode = mode;
  a.d0 = d0; a.d1 = d1; a.d2 = d2; a.d = d;
  a.x = x.ptr;
  a.r1 = r1.ptr;
  a.r2 = r2.ptr;
  for (int k = 0; k < 3; ++k) a.r1_strides[k] = a.r2_strides[k] = st[k];
  a.out = in_place ? x.ptr : o.ptr;
  ASSERT_OK(npu_kernels::rotary_mul(nullptr, a));
  a.x = dy.ptr;
  a.out = in_place ? dy.ptr : g.ptr;
  ASSERT_OK(npu_kernels::rotary_mul_backward(nullptr, a));
  ASSERT_OK(sync());
  expect_close(in_place ? x.read() : o.read(), out, tol<T>(), "out");
  expect_close(in_place ? dy.read() : g.read(), dx, tol<T>(), "dx");
}

template <typename T>
void rotary_suite() {
  for (RotaryMode m : {RotaryMode::kHalf, RotaryMode::kInterleave}) {
    check_rotary<T>(m, 1, 1, 1, 2, 1, 1, 1, 1);
    check_rotary<T>(m, 2, 3, 5, 34, 2, 3, 5, 2);     // full r
    check_rotary<T>(m, 2, 7, 3, 128, 1, 7, 1, 3);    // r [1, S, 1, D] for x [B, S, H, D]
    check_rotary<T>(m, 2, 3, 9, 66, 1, 1, 9, 4);     // r [1, 1, S, D] for x [B, H, S, D]
    check_rotary<T>(m, 3, 1, 2, 4098, 3, 1, 1, 5);
  }
}

TEST(KernelsFusedNn, RotaryMulFloat32) {
  rotary_suite<float>();
  check_rotary<float>(RotaryMode::kHalf, 2, 3, 5, 34, 1, 3, 1, 6, /*in_place=*/true);
  check_rotary<float>(RotaryMode::kInterleave, 2, 3, 5, 34, 1, 3, 1, 7, /*in_place=*/true);
}
TEST(KernelsFusedNn, RotaryMulFloat16) { rotary_suite<Half>(); }
TEST(KernelsFusedNn, RotaryMulBFloat16) { rotary_suite<BFloat16>(); }

// ---- SwiGLU, fast GELU ----

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

template <typename T>
void check_swiglu(int64_t outer, int64_t inner, unsigned seed) {
  SCOPED_TRACE(::testing::Message() << "outer " << outer << " inner " << inner << " dtype " << int(dt<T>()));
  auto hx = rnd<T>(outer * 2 * inner, seed, 3.0), hdy = rnd<T>(outer * inner, seed + 1);
  Vec out(outer * inner), dx(outer * 2 * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const double av = D(hx[(2 * o) * inner + i]), bv = D(hx[(2 * o + 1) * inner + i]), g = D(hdy[o * inner + i]);
      const double sg = sigmoid(av);
      out[o * inner + i] = av * sg * bv;
      dx[(2 * o) * inner + i] = g * bv * (sg + av * sg * (1 - sg));
      dx[(2 * o + 1) * inner + i] = g * av * sg;
    }
  DeviceBuf<T> x(hx), y(filled<T>(outer * inner)), dy(hdy), g(filled<T>(outer * 2 * inner));
  npu_kernels::SwiGluArgs a;
  a.dtype = dt<T>();
  a.outer = outer;
  a.inner = inner;
  a.x = x.ptr;
  a.out = y.ptr;
  a.dy = dy.ptr;
  a.dx = g.ptr;
  ASSERT_OK(npu_kernels::swiglu(nullptr, a));
  ASSERT_OK(npu_kernels::swiglu_backward(nullptr, a));
  ASSERT_OK(sync());
  expect_close(y.read(), out, tol<T>(), "out");
  expect_close(g.read(), dx, tol<T>(), "dx");
}

template <typename T>
void check_gelu(int64_t n, unsigned seed) {
  SCOPED_TRACE(::testing::Message() << "n " << n << " dtype " << int(dt<T>()));
  auto hx = rnd<T>(n, seed, 4.0), hdy = rnd<T>(n, seed + 1);
  const float big[] = {-100.f, -20.f, 20.f, 100.f, 0.f};
  for (int k = 0; k < 5 && k < n; ++k) hx[k * 7 % n] = T(big[k]);
  Vec y(n), dx(n);
  for (int64_t i = 0; i < n; ++i) {
    const double v = D(hx[i]), sg = sigmoid(1.702 * v);
    y[i] = v * sg;
    dx[i] = D(hdy[i]) * (sg + 1.702 * v * sg * (1 - sg));
  }
  DeviceBuf<T> x(hx), yb(filled<T>(n)), dy(hdy), g(filled<T>(n));
  npu_kernels::FastGeluArgs a;
  a.dtype = dt<T>();
  a.n = n;
  a.x = x.ptr;
  a.y = yb.ptr;
  a.dy = dy.ptr;
  a.dx = g.ptr;
  ASSERT_OK(npu_kernels::fast_gelu(nullptr, a));
  ASSERT_OK(npu_kernels::fast_gelu_backward(nullptr, a));
  ASSERT_OK(sync());
  expect_close(yb.read(), y, tol<T>(), "y");
  expect_close(g.read(), dx, tol<T>(), "dx");
}

template <typename T>
void elementwise_suite() {
  check_swiglu<T>(1, 1, 1);
  check_swiglu<T>(3, 33, 2);
  check_swiglu<T>(2, 4097, 3);
  check_swiglu<T>(1001, 3, 4);  // tiles cross many rows
  check_gelu<T>(1, 5);
  check_gelu<T>(33, 6);
  check_gelu<T>(4097, 7);
  check_gelu<T>(50001, 8);
}

TEST(KernelsFusedNn, SwiGluAndFastGeluFloat32) { elementwise_suite<float>(); }
TEST(KernelsFusedNn, SwiGluAndFastGeluFloat16) { elementwise_suite<Half>(); }
TEST(KernelsFusedNn, SwiGluAndFastGeluBFloat16) { elementwise_suite<BFloat16>(); }

// ---- scaled masked softmax ----

enum class MaskKind { kNone, kPerBatch, kShared, kTriu };  // mask [b,1,s,n] / [1,1,s,n] / fixed_triu_mask

template <typename T>
void check_softmax(int64_t B, int64_t H, int64_t S, int64_t n, MaskKind mk, unsigned seed) {
  SCOPED_TRACE(::testing::Message() << "[" << B << "," << H << "," << S << "," << n << "] mask " << int(mk) << " dtype "
                                    << int(dt<T>()));
  const int64_t rows = B * H * S;
  const double scale = 0.37;
  auto hx = rnd<T>(rows * n, seed, 3.0), hdy = rnd<T>(rows * n, seed + 1);
  const int64_t mb = mk == MaskKind::kPerBatch ? B : 1;
  std::vector<uint8_t> hm(mb * S * n);
  std::mt19937 gen(seed + 2);
  for (auto& m : hm) m = gen() % 4 == 0;
  if (S > 1) std::fill(hm.begin() + n, hm.begin() + 2 * n, 1);  // row s = 1 fully masked (in batch 0)
  const int64_t ms[3] = {mk == MaskKind::kPerBatch ? S * n : 0, 0, n};
  auto masked = [&](int64_t r, int64_t j) {
    const int64_t is = r % S, ib = r / (S * H);
    if (mk == MaskKind::kTriu) return j > is;
    if (mk == MaskKind::kNone) return false;
    return hm[ib * ms[0] + is * ms[2] + j] != 0;
  };
  Vec y(rows * n), dx(rows * n);
  std::vector<T> hy(rows * n);  // the reference y rounded to T: the backward's input
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -INFINITY, sum = 0, dot = 0;
    for (int64_t j = 0; j < n; ++j)
      mx = std::max(mx, y[r * n + j] = masked(r, j) ? -10000.0 : D(hx[r * n + j]) * scale);
    for (int64_t j = 0; j < n; ++j) sum += (y[r * n + j] = std::exp(y[r * n + j] - mx));
    for (int64_t j = 0; j < n; ++j) {
      y[r * n + j] /= sum;
      hy[r * n + j] = T(static_cast<float>(y[r * n + j]));
      dot += D(hdy[r * n + j]) * D(hy[r * n + j]);
    }
    for (int64_t j = 0; j < n; ++j)
      dx[r * n + j] = masked(r, j) ? 0.0 : scale * D(hy[r * n + j]) * (D(hdy[r * n + j]) - dot);
  }
  DeviceBuf<T> x(hx), yb(filled<T>(rows * n)), yin(hy), dy(hdy), g(filled<T>(rows * n));
  DeviceBuf<uint8_t> mask(hm);
  npu_kernels::ScaledMaskedSoftmaxArgs a;
  a.dtype = dt<T>();
  a.b = B; a.h = H; a.s = S; a.n = n;
  a.scale = scale;
  a.x = x.ptr;
  if (mk == MaskKind::kPerBatch || mk == MaskKind::kShared) {
    a.mask = reinterpret_cast<const bool*>(mask.ptr);
    for (int k = 0; k < 3; ++k) a.mask_strides[k] = ms[k];
  }
  a.fixed_triu_mask = mk == MaskKind::kTriu;
  a.y = yb.ptr;
  ASSERT_OK(npu_kernels::scaled_masked_softmax(nullptr, a));
  a.y = yin.ptr;
  a.dy = dy.ptr;
  a.dx = g.ptr;
  ASSERT_OK(npu_kernels::scaled_masked_softmax_backward(nullptr, a));
  ASSERT_OK(sync());
  const auto got = yb.read();
  expect_close(got, y, tol<T>(), "y");
  expect_close(g.read(), dx, tol<T>(), "dx");
  if (S > 1 && mk != MaskKind::kNone && mk != MaskKind::kTriu) {  // the fully masked row: uniform 1/n
    for (int64_t j = 0; j < n; ++j) ASSERT_NEAR(D(got[n + j]), 1.0 / n, tol<T>() / n);
  }
}

template <typename T>
void softmax_suite() {
  for (MaskKind mk : {MaskKind::kNone, MaskKind::kPerBatch, MaskKind::kShared, MaskKind::kTriu}) {
    check_softmax<T>(1, 1, 1, 1, mk, 1);
    check_softmax<T>(2, 3, 5, 33, mk, 2);
    check_softmax<T>(2, 2, 7, 7, mk, 3);
    check_softmax<T>(1, 2, 3, 4097, mk, 4);
  }
}

TEST(KernelsFusedNn, ScaledMaskedSoftmaxFloat32) { softmax_suite<float>(); }
TEST(KernelsFusedNn, ScaledMaskedSoftmaxFloat16) { softmax_suite<Half>(); }
TEST(KernelsFusedNn, ScaledMaskedSoftmaxBFloat16) { softmax_suite<BFloat16>(); }

// Outputs of 16 MiB and more are written with streaming stores: the same results.
TEST(KernelsFusedNn, LargeOutputsWithStreamingStores) {
  check_rms<float>(1024, 4097, false, 40);
  check_rms<BFloat16>(2048, 4097, true, 41);
  check_rotary<float>(RotaryMode::kInterleave, 1, 1024, 1, 4098, 1, 1024, 1, 42);
  check_swiglu<Half>(2049, 4097, 43);
  check_gelu<float>(4200000, 44);
  check_softmax<float>(1, 1, 1024, 4097, MaskKind::kShared, 45);
}

// ---- finite differences (float32): each backward against its forward run on the device ----

using Fwd = std::function<std::vector<float>(const std::vector<float>&)>;

// grad[i] against (L(v + h e_i) - L(v - h e_i)) / 2h, L(v) = sum(w * f(v)) summed in double.
void fd_check(const Fwd& f, std::vector<float> v, const std::vector<float>& w, const std::vector<float>& grad,
              const char* what,
              double h = 1e-2, double tl = 2e-3) {
  auto L = [&](const std::vector<float>& p) {
    const auto y = f(p);
    double t = 0;
    for (std::size_t i = 0; i < y.size(); ++i) t += double(w[i]) * y[i];
    return t;
  };
  for (std::size_t i = 0; i < v.size(); i += std::max<std::size_t>(1, v.size() / 7)) {
    const float v0 = v[i];
    v[i] = v0 + float(h);
    const double lp = L(v);
    v[i] = v0 - float(h);
    const double lm = L(v);
    v[i] = v0;
    const double num = (lp - lm) / (double(v0 + float(h)) - double(v0 - float(h)));
    EXPECT_NEAR(grad[i], num, tl * (1 + std::fabs(num))) << what << "[" << i << "]";
  }
}

TEST(KernelsFusedNn, BackwardsMatchFiniteDifferences) {
  // RMSNorm: dx and dgamma
  const int64_t rows = 3, n = 33;
  auto x = rnd<float>(rows * n, 1), gm = rnd<float>(n, 2), w = rnd<float>(rows * n, 3);
  auto rms = [&](const std::vector<float>& hx, const std::vector<float>& hg, std::vector<float>* rstd_out) {
    DeviceBuf<float> bx(hx), bg(hg), y(filled<float>(rows * n)), rstd(filled<float>(rows));
    npu_kernels::RmsNormArgs a;
    a.rows = rows; a.n = n; a.x = bx.ptr; a.gamma = bg.ptr; a.y = y.ptr; a.rstd = rstd.ptr;
    EXPECT_EQ(npu_kernels::rms_norm(nullptr, a), npu_sim::Status::kSuccess);
    EXPECT_EQ(sync(), npu_sim::Status::kSuccess);
    if (rstd_out) *rstd_out = rstd.read();
    return y.read();
  };
  std::vector<float> rstd;
  rms(x, gm, &rstd);
  DeviceBuf<float> bx(x), bg(gm), bw(w), brs(rstd), dx(filled<float>(rows * n)), dg(filled<float>(n));
  npu_kernels::RmsNormGradArgs b;
  b.rows = rows; b.n = n; b.dy = bw.ptr; b.x = bx.ptr; b.rstd = brs.ptr; b.gamma = bg.ptr;
  b.dx = dx.ptr; b.dgamma = dg.ptr;
  ASSERT_OK(npu_kernels::rms_norm_backward(nullptr, b));
  ASSERT_OK(sync());
  fd_check([&](const std::vector<float>& v) { return rms(v, gm, nullptr); }, x, w, dx.read(), "rms dx");
  fd_check([&](const std::vector<float>& v) { return rms(x, v, nullptr); }, gm, w, dg.read(), "rms dgamma");

  // rotary_mul (linear in x), both modes, broadcast r
  for (RotaryMode mode : {RotaryMode::kHalf, RotaryMode::kInterleave}) {
    const int64_t d1 = 3, d = 10;
    auto rx = rnd<float>(2 * d1 * d, 4), r1 = rnd<float>(d1 * d, 5), r2 = rnd<float>(d1 * d, 6);
    auto rw = rnd<float>(2 * d1 * d, 7);
    DeviceBuf<float> br1(r1), br2(r2);
    npu_kernels::RotaryArgs a;
    a.mode = mode;
    a.d0 = 2; a.d1 = d1; a.d = d;
    a.r1 = br1.ptr; a.r2 = br2.ptr;
    a.r1_strides[1] = a.r2_strides[1] = d;
    auto run = [&](const std::vector<float>& in, bool fwd) {
      DeviceBuf<float> bi(in), bo(filled<float>(in.size()));
      npu_kernels::RotaryArgs c = a;
      c.x = bi.ptr;
      c.out = bo.ptr;
      EXPECT_EQ(fwd ? npu_kernels::rotary_mul(nullptr, c) : npu_kernels::rotary_mul_backward(nullptr, c),
                npu_sim::Status::kSuccess);
      EXPECT_EQ(sync(), npu_sim::Status::kSuccess);
      return bo.read();
    };
    fd_check([&](const std::vector<float>& v) { return run(v, true); }, rx, rw, run(rw, false), "rotary dx");
  }

  // SwiGLU and fast GELU
  auto sx = rnd<float>(2 * 2 * 9, 8, 2.0), sw = rnd<float>(2 * 9, 9);
  auto swiglu = [&](const std::vector<float>& in, const std::vector<float>* dy) {
    DeviceBuf<float> bi(in), bo(filled<float>(dy ? in.size() : in.size() / 2)), bd(dy ? *dy : in);
    npu_kernels::SwiGluArgs a;
    a.outer = 2; a.inner = 9; a.x = bi.ptr; a.out = bo.ptr; a.dy = bd.ptr; a.dx = bo.ptr;
    EXPECT_EQ(dy ? npu_kernels::swiglu_backward(nullptr, a) : npu_kernels::swiglu(nullptr, a),
              npu_sim::Status::kSuccess);
    EXPECT_EQ(sync(), npu_sim::Status::kSuccess);
    return bo.read();
  };
  fd_check([&](const std::vector<float>& v) { return swiglu(v, nullptr); }, sx, sw, swiglu(sx, &sw), "swiglu dx");
  auto gx = rnd<float>(40, 10, 3.0), gw = rnd<float>(40, 11);
  auto gelu = [&](const std::vector<float>& in, const std::vector<float>* dy) {
    DeviceBuf<float> bi(in), bo(filled<float>(in.size())), bd(dy ? *dy : in);
    npu_kernels::FastGeluArgs a;
    a.n = int64_t(in.size()); a.x = bi.ptr; a.y = bo.ptr; a.dy = bd.ptr; a.dx = bo.ptr;
    EXPECT_EQ(dy ? npu_kernels::fast_gelu_backward(nullptr, a) : npu_kernels::fast_gelu(nullptr, a),
              npu_sim::Status::kSuccess);
    EXPECT_EQ(sync(), npu_sim::Status::kSuccess);
    return bo.read();
  };
  fd_check([&](const std::vector<float>& v) { return gelu(v, nullptr); }, gx, gw, gelu(gx, &gw), "fast_gelu dx");

  // scaled masked softmax with a triangular mask (masked positions: zero gradient)
  auto mx = rnd<float>(2 * 6 * 6, 12, 2.0), mw = rnd<float>(2 * 6 * 6, 13);
  npu_kernels::ScaledMaskedSoftmaxArgs sa;
  sa.h = 2; sa.s = 6; sa.n = 6; sa.scale = 0.8; sa.fixed_triu_mask = true;
  auto smx = [&](const std::vector<float>& in) {
    DeviceBuf<float> bi(in), bo(filled<float>(in.size()));
    npu_kernels::ScaledMaskedSoftmaxArgs c = sa;
    c.x = bi.ptr; c.y = bo.ptr;
    EXPECT_EQ(npu_kernels::scaled_masked_softmax(nullptr, c), npu_sim::Status::kSuccess);
    EXPECT_EQ(sync(), npu_sim::Status::kSuccess);
    return bo.read();
  };
  DeviceBuf<float> sy(smx(mx)), sdy(mw), sdx(filled<float>(mx.size()));
  sa.y = sy.ptr; sa.dy = sdy.ptr; sa.dx = sdx.ptr;
  ASSERT_OK(npu_kernels::scaled_masked_softmax_backward(nullptr, sa));
  ASSERT_OK(sync());
  sa.y = nullptr;
  fd_check(smx, mx, mw, sdx.read(), "softmax dx");
}

// ---- arguments ----

TEST(KernelsFusedNn, RefusesInvalidArguments) {
  float buf[64] = {};
  bool m[64] = {};
  const auto bad = npu_sim::Status::kInvalidValue;
  npu_kernels::RmsNormArgs r;
  r.rows = 2; r.n = 4; r.x = buf; r.gamma = buf; r.y = buf; r.rstd = buf;
  ASSERT_OK(npu_kernels::rms_norm(nullptr, r));
  { auto c = r; c.x = nullptr; EXPECT_EQ(npu_kernels::rms_norm(nullptr, c), bad); }
  { auto c = r; c.gamma = nullptr; EXPECT_EQ(npu_kernels::rms_norm(nullptr, c), bad); }
  { auto c = r; c.x2 = buf; EXPECT_EQ(npu_kernels::rms_norm(nullptr, c), bad); }  // x2 without x_sum
  { auto c = r; c.n = -1; EXPECT_EQ(npu_kernels::rms_norm(nullptr, c), bad); }
  { auto c = r; c.dtype = DType::kFloat64; EXPECT_EQ(npu_kernels::rms_norm(nullptr, c), bad); }
  { auto c = r; c.dtype = DType::kInt32; EXPECT_EQ(npu_kernels::rms_norm(nullptr, c), bad); }
  npu_kernels::RmsNormGradArgs g;
  g.rows = 2; g.n = 4; g.dy = buf; g.x = buf; g.rstd = buf; g.gamma = buf; g.dx = buf + 16; g.dgamma = buf + 32;
  ASSERT_OK(npu_kernels::rms_norm_backward(nullptr, g));
  { auto c = g; c.rstd = nullptr; EXPECT_EQ(npu_kernels::rms_norm_backward(nullptr, c), bad); }
  { auto c = g; c.gamma = nullptr; EXPECT_EQ(npu_kernels::rms_norm_backward(nullptr, c), bad); }
  { auto c = g; c.rows = -2; EXPECT_EQ(npu_kernels::rms_norm_backward(nullptr, c), bad); }
  { auto c = g; c.dtype = DType::kFloat64; EXPECT_EQ(npu_kernels::rms_norm_backward(nullptr, c), bad); }
  npu_kernels::RotaryArgs ro;
  ro.d0 = 2; ro.d = 4; ro.x = buf; ro.r1 = buf; ro.r2 = buf; ro.out = buf + 32;
  ASSERT_OK(npu_kernels::rotary_mul(nullptr, ro));
  {
    auto c = ro;
    c.d = 5;
    EXPECT_EQ(npu_kernels::rotary_mul(nullptr, c), bad);
    EXPECT_EQ(npu_kernels::rotary_mul_backward(nullptr, c), bad);
  }
  { auto c = ro; c.d1 = -1; EXPECT_EQ(npu_kernels::rotary_mul(nullptr, c), bad); }
  { auto c = ro; c.r2 = nullptr; EXPECT_EQ(npu_kernels::rotary_mul_backward(nullptr, c), bad); }
  { auto c = ro; c.dtype = DType::kInt64; EXPECT_EQ(npu_kernels::rotary_mul(nullptr, c), bad); }
  npu_kernels::SwiGluArgs sw;
  sw.outer = 2; sw.inner = 3; sw.x = buf; sw.out = buf + 32; sw.dy = buf; sw.dx = buf + 32;
  ASSERT_OK(npu_kernels::swiglu(nullptr, sw));
  { auto c = sw; c.out = nullptr; EXPECT_EQ(npu_kernels::swiglu(nullptr, c), bad); }
  { auto c = sw; c.dy = nullptr; EXPECT_EQ(npu_kernels::swiglu_backward(nullptr, c), bad); }
  { auto c = sw; c.inner = -3; EXPECT_EQ(npu_kernels::swiglu(nullptr, c), bad); }
  npu_kernels::FastGeluArgs ge;
  ge.n = 8; ge.x = buf; ge.y = buf + 32; ge.dy = buf; ge.dx = buf + 32;
  ASSERT_OK(npu_kernels::fast_gelu(nullptr, ge));
  { auto c = ge; c.y = nullptr; EXPECT_EQ(npu_kernels::fast_gelu(nullptr, c), bad); }
  { auto c = ge; c.dx = nullptr; EXPECT_EQ(npu_kernels::fast_gelu_backward(nullptr, c), bad); }
  { auto c = ge; c.n = -8; EXPECT_EQ(npu_kernels::fast_gelu(nullptr, c), bad); }
  npu_kernels::ScaledMaskedSoftmaxArgs sm;
  sm.s = 2; sm.n = 4; sm.x = buf; sm.y = buf + 32; sm.dy = buf; sm.dx = buf + 16; sm.mask = m;
  ASSERT_OK(npu_kernels::scaled_masked_softmax(nullptr, sm));
  { auto c = sm; c.fixed_triu_mask = true; EXPECT_EQ(npu_kernels::scaled_masked_softmax(nullptr, c), bad); }
  { auto c = sm; c.x = nullptr; EXPECT_EQ(npu_kernels::scaled_masked_softmax(nullptr, c), bad); }
  { auto c = sm; c.dy = nullptr; EXPECT_EQ(npu_kernels::scaled_masked_softmax_backward(nullptr, c), bad); }
  { auto c = sm; c.h = -1; EXPECT_EQ(npu_kernels::scaled_masked_softmax(nullptr, c), bad); }
  { auto c = sm; c.dtype = DType::kBool; EXPECT_EQ(npu_kernels::scaled_masked_softmax(nullptr, c), bad); }
  ASSERT_OK(sync());
}

TEST(KernelsFusedNn, EmptySizesLaunchNothing) {
  ASSERT_OK(sync());
  const auto before = npu_sim::get_counters().kernels_launched;
  npu_kernels::RmsNormArgs r;  // all pointers null
  r.rows = 5;
  ASSERT_OK(npu_kernels::rms_norm(nullptr, r));
  npu_kernels::RmsNormGradArgs g;
  g.n = 7;
  ASSERT_OK(npu_kernels::rms_norm_backward(nullptr, g));
  npu_kernels::RotaryArgs ro;
  ro.d = 8; ro.d1 = 0;
  ASSERT_OK(npu_kernels::rotary_mul(nullptr, ro));
  ASSERT_OK(npu_kernels::rotary_mul_backward(nullptr, ro));
  npu_kernels::SwiGluArgs sw;
  sw.outer = 3;
  ASSERT_OK(npu_kernels::swiglu(nullptr, sw));
  ASSERT_OK(npu_kernels::swiglu_backward(nullptr, sw));
  npu_kernels::FastGeluArgs ge;
  ASSERT_OK(npu_kernels::fast_gelu(nullptr, ge));
  ASSERT_OK(npu_kernels::fast_gelu_backward(nullptr, ge));
  npu_kernels::ScaledMaskedSoftmaxArgs sm;
  sm.s = 4;
  ASSERT_OK(npu_kernels::scaled_masked_softmax(nullptr, sm));
  ASSERT_OK(npu_kernels::scaled_masked_softmax_backward(nullptr, sm));
  ASSERT_OK(sync());
  EXPECT_EQ(npu_sim::get_counters().kernels_launched, before);
}

// ---- launch records ----

TEST(KernelsFusedNn, LaunchRecordsShowTheGmBytes) {
  ASSERT_OK(sync());
  ASSERT_OK(npu_sim::set_launch_recording(true));
  npu_sim::clear_launch_records();
  const int64_t rows = 6, n = 40, outer = 3, inner = 50;
  DeviceBuf<float> x(rnd<float>(rows * n, 1)), g(rnd<float>(n, 2)), y(filled<float>(rows * n));
  DeviceBuf<float> rstd(filled<float>(rows));
  DeviceBuf<float> sx(rnd<float>(outer * 2 * inner, 3)), sy(filled<float>(outer * inner));
  npu_kernels::RmsNormArgs a;
  a.rows = rows; a.n = n; a.x = x.ptr; a.gamma = g.ptr; a.y = y.ptr; a.rstd = rstd.ptr;
  ASSERT_OK(npu_kernels::rms_norm(nullptr, a));
  npu_kernels::SwiGluArgs s;
  s.outer = outer; s.inner = inner; s.x = sx.ptr; s.out = sy.ptr;
  ASSERT_OK(npu_kernels::swiglu(nullptr, s));
  ASSERT_OK(sync());
  std::vector<npu_sim::LaunchRecord> recs;
  uint64_t uploaded = 0;
  for (const auto& r : npu_sim::get_launch_records()) {
    if (r.kernel == "memcpy_h2d") uploaded += r.gm_write;  // the buffers' uploads are recorded as copies
    else recs.push_back(r);
  }
  EXPECT_EQ(npu_sim::set_launch_recording(false), npu_sim::Status::kSuccess);
  npu_sim::clear_launch_records();
  EXPECT_EQ(uploaded, uint64_t(4 * (2 * rows * n + n + rows + outer * 2 * inner + outer * inner)));
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].kernel, "rms_norm");
  EXPECT_EQ(recs[0].block_dim, 1u);  // 240 elements: one block
  EXPECT_EQ(recs[0].gm_read, uint64_t(4 * (rows * n + n)));  // x, gamma once per block
  EXPECT_EQ(recs[0].gm_write, uint64_t(4 * (rows * n + rows)));  // y, rstd
  EXPECT_EQ(recs[0].vector_flops, uint64_t(4 * rows * n));
  EXPECT_EQ(recs[1].kernel, "swiglu");
  EXPECT_EQ(recs[1].gm_read, uint64_t(4 * outer * 2 * inner));
  EXPECT_EQ(recs[1].gm_write, uint64_t(4 * outer * inner));
}

// ---- two streams at once ----

TEST(KernelsFusedNn, TwoStreamsRunRmsNormConcurrently) {
  const int64_t rows = 300, n = 4097;
  struct Job {
    std::vector<float> x, g, dy, y, dgamma;
  };
  auto run = [&](npu_sim::Stream st, Job& j) {
    DeviceBuf<float> x(j.x), g(j.g), dy(j.dy), y(filled<float>(rows * n)), rstd(filled<float>(rows));
    DeviceBuf<float> dg(filled<float>(n));
    npu_kernels::RmsNormArgs a;
    a.rows = rows; a.n = n; a.x = x.ptr; a.gamma = g.ptr; a.y = y.ptr; a.rstd = rstd.ptr;
    ASSERT_OK(npu_kernels::rms_norm(st, a));
    npu_kernels::RmsNormGradArgs b;
    b.rows = rows; b.n = n; b.dy = dy.ptr; b.x = x.ptr; b.rstd = rstd.ptr; b.dgamma = dg.ptr;
    ASSERT_OK(npu_kernels::rms_norm_backward(st, b));
    ASSERT_OK(st ? npu_sim::stream_synchronize(st) : sync());
    j.y = y.read();
    j.dgamma = dg.read();
  };
  Job want[2], got[2];
  for (int k = 0; k < 2; ++k) {
    want[k].x = rnd<float>(rows * n, 10 + k);
    want[k].g = rnd<float>(n, 20 + k);
    want[k].dy = rnd<float>(rows * n, 30 + k);
    got[k] = want[k];
    run(nullptr, want[k]);
  }
  npu_sim::Stream s[2] = {nullptr, nullptr};
  ASSERT_OK(npu_sim::stream_create(0, &s[0]));
  ASSERT_OK(npu_sim::stream_create(0, &s[1]));
  std::thread t0([&] { for (int r = 0; r < 3; ++r) run(s[0], got[0]); });
  std::thread t1([&] { for (int r = 0; r < 3; ++r) run(s[1], got[1]); });
  t0.join();
  t1.join();
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(got[k].y, want[k].y);  // bitwise: rows are independent, dgamma's order is fixed
    EXPECT_EQ(got[k].dgamma, want[k].dgamma);
  }
  ASSERT_OK(npu_sim::stream_destroy(s[0]));
  ASSERT_OK(npu_sim::stream_destroy(s[1]));
}

}  // namespace
