// gtests of the Cube-unit kernels: npu_kernels::gemm against a naive double-precision reference for
// odd sizes, strides, transposes, batches, alpha/beta, fp16/bf16, and two streams launching at once;
// conv2d forward/backward against direct-loop references; the dtype layer's fp16/bf16 bit conversions
// and scalar_as.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "npu_kernels/conv.h"
#include "npu_kernels/elementwise.h"
#include "npu_kernels/gemm.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"
#include "../../kernels/src/gemm_tiling.h"  // the private fp16 conversions of the packing path

namespace {

using npu_kernels::BFloat16;
using npu_kernels::DType;
using npu_kernels::GemmArgs;
using npu_kernels::Half;

template <typename T> DType dtype_of();
template <> DType dtype_of<float>() { return DType::kFloat32; }
template <> DType dtype_of<double>() { return DType::kFloat64; }
template <> DType dtype_of<Half>() { return DType::kFloat16; }
template <> DType dtype_of<BFloat16>() { return DType::kBFloat16; }
template <typename T> double val(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return static_cast<float>(v); else return static_cast<double>(v);
}
template <typename T> double tol() { return std::is_same_v<T, double> ? 1e-12 : std::is_same_v<T, float> ? 1e-5 : std::is_same_v<T, Half> ? 2e-3 : 1.6e-2; }

// Device buffer holding host values.

template <typename T>
std::vector<T> random_values(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<T> v(n);
  for (auto& x : v) x = T(dist(gen));
  return v;
}

struct Case {
  int64_t batch, m, n, k;
  bool trans_a, trans_b;
  double alpha, beta;
  int64_t pad;  // extra elements per row (non-contiguous leading dimension)
};

// Lays A/B out transposed or padded as asked, runs gemm, compares with the reference.
template <typename T>
void run_case(const Case& cs, npu_sim::Stream stream = nullptr, unsigned seed = 1) {
  const int64_t B = cs.batch, M = cs.m, N = cs.n, K = cs.k;
  // Storage: A is [B][M][K] (or [B][K][M] if trans_a) with padded rows.
  const int64_t a_rows = cs.trans_a ? K : M, a_cols = (cs.trans_a ? M : K) + cs.pad;
  const int64_t b_rows = cs.trans_b ? N : K, b_cols = (cs.trans_b ? K : N) + cs.pad;
  const int64_t c_cols = N + cs.pad;
  auto ha = random_values<T>(B * a_rows * a_cols, seed);
  auto hb = random_values<T>(B * b_rows * b_cols, seed + 1);
  auto hc = random_values<T>(B * M * c_cols, seed + 2);
  if (cs.beta == 0.0) for (auto& x : hc) x = T(std::numeric_limits<float>::quiet_NaN());
  DeviceBuf<T> da(ha), db(hb), dc(hc);
  GemmArgs g;
  g.dtype = dtype_of<T>();
  g.batch = B; g.m = M; g.n = N; g.k = K;
  g.a = da.ptr; g.a_batch_stride = a_rows * a_cols;
  g.a_row_stride = cs.trans_a ? 1 : a_cols; g.a_col_stride = cs.trans_a ? a_cols : 1;
  g.b = db.ptr; g.b_batch_stride = b_rows * b_cols;
  g.b_row_stride = cs.trans_b ? 1 : b_cols; g.b_col_stride = cs.trans_b ? b_cols : 1;
  g.c = dc.ptr; g.c_batch_stride = M * c_cols; g.c_row_stride = c_cols; g.c_col_stride = 1;
  g.alpha = cs.alpha; g.beta = cs.beta;
  ASSERT_OK(npu_kernels::gemm(stream, g));
  ASSERT_OK(stream ? npu_sim::stream_synchronize(stream) : npu_sim::device_synchronize(0));
  auto out = dc.read();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0, mag = 0;
        for (int64_t p = 0; p < K; ++p) {
          const double av = val(ha[b * a_rows * a_cols + (cs.trans_a ? p * a_cols + i : i * a_cols + p)]);
          const double bv = val(hb[b * b_rows * b_cols + (cs.trans_b ? j * b_cols + p : p * b_cols + j)]);
          s += av * bv;
          mag += std::fabs(av * bv);
        }
        double expect = cs.alpha * s;
        if (cs.beta != 0.0) expect += cs.beta * val(hc[b * M * c_cols + i * c_cols + j]);
        const double got = val(out[b * M * c_cols + i * c_cols + j]);
        ASSERT_NEAR(got, expect, tol<T>() * (1.0 + std::fabs(cs.alpha) * mag + std::fabs(expect)))
            << "b=" << b << " i=" << i << " j=" << j << " case " << M << "x" << N << "x" << K;
      }
  // Padding columns of C are untouched.
  for (int64_t r = 0; r < B * M; ++r)
    for (int64_t j = N; j < c_cols; ++j) {
      const float before = val(hc[r * c_cols + j]), after = val(out[r * c_cols + j]);
      ASSERT_TRUE((std::isnan(before) && std::isnan(after)) || before == after);
    }
}

const std::vector<Case> kCases = {
    {1, 1, 1, 1, false, false, 1.0, 0.0, 0},       {1, 7, 5, 3, false, false, 1.0, 0.0, 0},
    {1, 130, 67, 200, false, false, 1.0, 0.0, 3},  {1, 130, 67, 200, true, false, 0.5, 0.0, 0},
    {1, 65, 129, 300, false, true, 1.0, 2.0, 1},   {3, 33, 45, 71, true, true, -1.5, 0.25, 2},
    {2, 257, 3, 513, false, false, 1.0, 1.0, 0},   {4, 1, 300, 17, false, true, 2.0, 0.0, 0},
    {1, 9, 11, 0, false, false, 1.0, 0.5, 0},      {1, 300, 290, 5, true, false, 1.0, 0.0, 0},
};

TEST(KernelsGemm, Float32) { for (const auto& c : kCases) run_case<float>(c); }
TEST(KernelsGemm, Float64) { for (const auto& c : kCases) run_case<double>(c); }
TEST(KernelsGemm, Float16) { for (const auto& c : kCases) run_case<Half>(c); }
TEST(KernelsGemm, BFloat16) { for (const auto& c : kCases) run_case<BFloat16>(c); }

TEST(KernelsGemm, MicroKernelIsNamed) {
  const std::string name = npu_kernels::gemm_micro_kernel_name();
  EXPECT_FALSE(name.empty());
  std::printf("micro-kernel: %s\ndirect fp32: %s\ndirect bf16: %s\n", name.c_str(),
              npu_kernels::gemm_library_name(npu_kernels::DType::kFloat32),
              npu_kernels::gemm_library_name(npu_kernels::DType::kBFloat16));
}

// oneDNN 3.2's brgemm kernels take only dense operands; a core thread's slice of a wider matrix (a transposed
// A split along M, C split along N) went to gemm:jit (bf16 without AMX) or, for fp16, to the reference loop,
// which made a GPT-mini fp16 training step 360x slower. Such slices are copied into dense rows instead.
TEST(KernelsGemm, PaddedSlicesStayOnTheLibrarysMatrixKernels) {
  for (const DType dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    if (std::string(npu_kernels::gemm_library_name(dt)).find("brg") == std::string::npos) continue;
    for (const bool ta : {false, true})
      for (const bool tb : {false, true}) {
        const int64_t m = 256, n = 128, k = 512;
        const int64_t lda = (ta ? m : k) + 64, ldb = (tb ? k : n) + 64, ldc = n + 64;
        const std::string padded = npu_kernels::detail::dnnl_gemm_impl(dt, ta, tb, m, n, k, lda, ldb, ldc);
        EXPECT_NE(padded.find("brg"), std::string::npos) << padded << " ta=" << ta << " tb=" << tb;
        EXPECT_NE(padded.find("dense copies"), std::string::npos) << padded;
        const std::string dense = npu_kernels::detail::dnnl_gemm_impl(dt, ta, tb, m, n, k, ta ? m : k, tb ? k : n, n);
        EXPECT_NE(dense.find("brg"), std::string::npos) << dense;
        EXPECT_EQ(dense.find("dense copies"), std::string::npos) << dense;
      }
  }
}

TEST(KernelsGemm, BroadcastCinAndStrideZero) {
  // C = A @ B + bias broadcast along rows (Cin row stride 0), A read with a zero batch stride.
  const int64_t B = 2, M = 5, N = 6, K = 4;
  auto ha = random_values<float>(M * K, 3), hb = random_values<float>(B * K * N, 4), hbias = random_values<float>(N, 5);
  DeviceBuf<float> da(ha), db(hb), dbias(hbias), dc(std::vector<float>(B * M * N, 0.0f));
  GemmArgs g;
  g.batch = B; g.m = M; g.n = N; g.k = K;
  g.a = da.ptr; g.a_batch_stride = 0; g.a_row_stride = K; g.a_col_stride = 1;
  g.b = db.ptr; g.b_batch_stride = K * N; g.b_row_stride = N; g.b_col_stride = 1;
  g.c = dc.ptr; g.c_batch_stride = M * N; g.c_row_stride = N; g.c_col_stride = 1;
  g.cin = dbias.ptr; g.cin_batch_stride = 0; g.cin_row_stride = 0; g.cin_col_stride = 1;
  g.beta = 1.0;
  ASSERT_OK(npu_kernels::gemm(nullptr, g));
  ASSERT_OK(npu_sim::device_synchronize(0));
  auto out = dc.read();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = hbias[j];
        for (int64_t p = 0; p < K; ++p) s += double(ha[i * K + p]) * hb[b * K * N + p * N + j];
        ASSERT_NEAR(out[b * M * N + i * N + j], s, 1e-5);
      }
}

TEST(KernelsGemm, RejectsBadArguments) {
  GemmArgs g;
  g.m = -1;
  EXPECT_EQ(npu_kernels::gemm(nullptr, g), npu_sim::Status::kInvalidValue);
  g.m = 2; g.n = 2; g.k = 2; g.dtype = DType::kInt32;
  float dummy[4];
  g.a = g.b = g.c = dummy;
  EXPECT_EQ(npu_kernels::gemm(nullptr, g), npu_sim::Status::kInvalidValue);
}

TEST(KernelsGemm, TwoStreamsConcurrently) {
  npu_sim::Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s1));
  ASSERT_OK(npu_sim::stream_create(0, &s2));
  std::thread t1([&] { for (int r = 0; r < 3; ++r) run_case<float>({2, 150, 140, 170, false, true, 1.0, 0.5, 1}, s1, 10 + r); });
  std::thread t2([&] { for (int r = 0; r < 3; ++r) run_case<double>({3, 90, 131, 77, true, false, 2.0, 0.0, 0}, s2, 20 + r); });
  // bf16 from a third thread on both streams: oneDNN primitives executing on both core threads at once.
  std::thread t3([&] {
    for (int r = 0; r < 3; ++r) run_case<BFloat16>({2, 140, 96, 130, r == 1, r != 1, 1.0, r * 0.5, 1}, r % 2 ? s1 : s2, 30 + r);
  });
  t1.join();
  t2.join();
  t3.join();
  ASSERT_OK(npu_sim::stream_destroy(s1));
  ASSERT_OK(npu_sim::stream_destroy(s2));
}

// ---- conv2d -----------------------------------------------------------------------------------------
struct ConvCase {
  int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, g;
  bool bias;
};

npu_kernels::Conv2dArgs conv_geometry(const ConvCase& k, DType dt) {
  npu_kernels::Conv2dArgs a;
  a.dtype = dt;
  a.batch = k.n; a.in_channels = k.c; a.in_h = k.h; a.in_w = k.w; a.out_channels = k.o;
  a.kernel_h = k.kh; a.kernel_w = k.kw; a.stride_h = k.sh; a.stride_w = k.sw; a.pad_h = k.ph; a.pad_w = k.pw;
  a.dilation_h = k.dh; a.dilation_w = k.dw; a.groups = k.g;
  a.out_h = (k.h + 2 * k.ph - k.dh * (k.kh - 1) - 1) / k.sh + 1;
  a.out_w = (k.w + 2 * k.pw - k.dw * (k.kw - 1) - 1) / k.sw + 1;
  const int64_t xs[4] = {k.c * k.h * k.w, k.h * k.w, k.w, 1};
  const int64_t ws[4] = {(k.c / k.g) * k.kh * k.kw, k.kh * k.kw, k.kw, 1};
  const int64_t ys[4] = {k.o * a.out_h * a.out_w, a.out_h * a.out_w, a.out_w, 1};
  std::copy(xs, xs + 4, a.x_strides); std::copy(ws, ws + 4, a.w_strides); std::copy(ys, ys + 4, a.y_strides);
  return a;
}

// Direct-loop reference in double: visits every (n, o, oh, ow, c, ki, kj) term.
template <typename F>
void for_each_term(const npu_kernels::Conv2dArgs& a, F&& f) {
  const int64_t Cg = a.in_channels / a.groups, Og = a.out_channels / a.groups;
  for (int64_t n = 0; n < a.batch; ++n)
    for (int64_t o = 0; o < a.out_channels; ++o)
      for (int64_t oh = 0; oh < a.out_h; ++oh)
        for (int64_t ow = 0; ow < a.out_w; ++ow)
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t ki = 0; ki < a.kernel_h; ++ki)
              for (int64_t kj = 0; kj < a.kernel_w; ++kj) {
                const int64_t ih = oh * a.stride_h - a.pad_h + ki * a.dilation_h;
                const int64_t iw = ow * a.stride_w - a.pad_w + kj * a.dilation_w;
                if (ih < 0 || ih >= a.in_h || iw < 0 || iw >= a.in_w) continue;
                const int64_t xi = ((n * a.in_channels + (o / Og) * Cg + c) * a.in_h + ih) * a.in_w + iw;
                const int64_t wi = ((o * Cg + c) * a.kernel_h + ki) * a.kernel_w + kj;
                const int64_t yi = ((n * a.out_channels + o) * a.out_h + oh) * a.out_w + ow;
                f(xi, wi, yi);
              }
}

template <typename T>
void run_conv_case(const ConvCase& k) {
  auto a = conv_geometry(k, dtype_of<T>());
  const int64_t xn = k.n * k.c * k.h * k.w, wn = k.o * (k.c / k.g) * k.kh * k.kw;
  const int64_t yn = k.n * k.o * a.out_h * a.out_w;
  auto hx = random_values<T>(xn, 7), hw = random_values<T>(wn, 8), hb = random_values<T>(k.o, 9);
  auto hgy = random_values<T>(yn, 10);
  std::vector<T> nan_y(yn, T(std::numeric_limits<float>::quiet_NaN()));
  DeviceBuf<T> dx(hx), dw(hw), db(hb), dy(nan_y), dgy(hgy);
  DeviceBuf<T> dgx(std::vector<T>(xn, T(0.f))), dgw(std::vector<T>(wn, T(0.f))), dgb(std::vector<T>(k.o, T(0.f)));
  std::vector<float> scratch_host(npu_kernels::conv2d_backward_input_scratch_bytes(a, 2) / sizeof(float) + 1);
  DeviceBuf<float> scratch(scratch_host);
  // forward
  auto f = a;
  f.x = dx.ptr; f.w = dw.ptr; f.y = dy.ptr; f.bias = k.bias ? db.ptr : nullptr;
  ASSERT_OK(npu_kernels::conv2d_forward(nullptr, f));
  // backward input (2 images per pass at most: exercises the chunk loop), weight, bias
  auto bi = a;
  bi.x = dgx.ptr; bi.w = dw.ptr; bi.y = dgy.ptr;
  ASSERT_OK(npu_kernels::conv2d_backward_input(nullptr, bi, scratch.ptr, scratch_host.size() * sizeof(float)));
  auto bw = a;
  bw.x = dx.ptr; bw.w = dgw.ptr; bw.y = dgy.ptr;
  ASSERT_OK(npu_kernels::conv2d_backward_weight(nullptr, bw));
  ASSERT_OK(npu_kernels::conv2d_backward_bias(nullptr, bw, dgb.ptr, 1));
  ASSERT_OK(npu_sim::device_synchronize(0));

  std::vector<double> ry(yn, 0.0), rgx(xn, 0.0), rgw(wn, 0.0), mag_y(yn, 0.0), mag_x(xn, 0.0), mag_w(wn, 0.0);
  for_each_term(a, [&](int64_t xi, int64_t wi, int64_t yi) {
    const double xv = val(hx[xi]), wv = val(hw[wi]), gv = val(hgy[yi]);
    ry[yi] += xv * wv; mag_y[yi] += std::fabs(xv * wv);
    rgx[xi] += wv * gv; mag_x[xi] += std::fabs(wv * gv);
    rgw[wi] += xv * gv; mag_w[wi] += std::fabs(xv * gv);
  });
  const double t = tol<T>();
  auto y = dy.read(), gx = dgx.read(), gw = dgw.read(), gb = dgb.read();
  for (int64_t i = 0; i < yn; ++i) {
    const double expect = ry[i] + (k.bias ? val(hb[(i / (a.out_h * a.out_w)) % k.o]) : 0.0);
    ASSERT_NEAR(val(y[i]), expect, t * (2 + mag_y[i])) << "forward y[" << i << "]";
  }
  for (int64_t i = 0; i < xn; ++i) ASSERT_NEAR(val(gx[i]), rgx[i], t * (1 + mag_x[i])) << "grad_input[" << i << "]";
  for (int64_t i = 0; i < wn; ++i) ASSERT_NEAR(val(gw[i]), rgw[i], t * (1 + mag_w[i])) << "grad_weight[" << i << "]";
  for (int64_t o = 0; o < k.o; ++o) {
    double s = 0, m = 0;
    for (int64_t n = 0; n < k.n; ++n)
      for (int64_t p = 0; p < a.out_h * a.out_w; ++p) {
        s += val(hgy[(n * k.o + o) * a.out_h * a.out_w + p]);
        m += std::fabs(val(hgy[(n * k.o + o) * a.out_h * a.out_w + p]));
      }
    ASSERT_NEAR(val(gb[o]), s, t * (1 + m)) << "grad_bias[" << o << "]";
  }
}

const std::vector<ConvCase> kConvCases = {
    {2, 3, 9, 11, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},   {3, 4, 10, 7, 6, 3, 2, 2, 1, 0, 1, 1, 1, 2, false},
    {1, 6, 12, 12, 6, 3, 3, 2, 2, 2, 2, 2, 2, 6, true},  {5, 2, 1, 17, 3, 1, 5, 1, 3, 0, 2, 1, 2, 1, true},
    {2, 8, 20, 20, 16, 1, 1, 1, 1, 0, 0, 1, 1, 1, false}, {1, 5, 40, 38, 130, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},
    // stride 1: depthwise (flipped-weight forward path), grouped and over-padded (col2im path)
    {2, 6, 9, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6, true},      {2, 4, 8, 9, 6, 3, 3, 1, 1, 2, 1, 2, 1, 2, false},
    {1, 3, 8, 8, 2, 3, 3, 1, 1, 3, 3, 1, 1, 1, false},
};

TEST(KernelsConv, Float32) { for (const auto& c : kConvCases) run_conv_case<float>(c); }
TEST(KernelsConv, Float64) { for (const auto& c : kConvCases) run_conv_case<double>(c); }
TEST(KernelsConv, HalfTypes) {
  for (const auto& c : kConvCases) run_conv_case<Half>(c);
  for (const auto& c : kConvCases) run_conv_case<BFloat16>(c);
}

TEST(KernelsConv, ValidateNamesTheProblem) {
  auto a = conv_geometry({1, 4, 8, 8, 4, 3, 3, 1, 1, 0, 0, 1, 1, 3, false}, DType::kFloat32);
  const char* why = nullptr;
  EXPECT_EQ(npu_kernels::conv2d_validate(a, &why), npu_sim::Status::kInvalidValue);
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("groups"), std::string::npos);
  a.groups = 1;
  a.out_h += 1;
  EXPECT_EQ(npu_kernels::conv2d_forward(nullptr, a), npu_sim::Status::kInvalidValue);
}

// The compiler's own conversions (F16C / software): the reference Half's branch-free ones must equal bit for bit.
float ref_half_to_float(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}
uint16_t ref_float_to_half(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

// `edges`, then 200k floats of uniformly random bit patterns (NaNs, infinities and subnormals among them).
std::vector<float> with_random_floats(std::vector<float> edges, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 200000; ++i) {
    const uint32_t u = any(gen);
    float f;
    std::memcpy(&f, &u, 4);
    edges.push_back(f);
  }
  return edges;
}

TEST(KernelsGemm, FastHalfConversionsMatchHalf) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    Half h;
    h.bits = static_cast<uint16_t>(bits);
    const float ref = ref_half_to_float(h.bits), got = static_cast<float>(h);
    ASSERT_TRUE((std::isnan(ref) && std::isnan(got)) || std::memcmp(&ref, &got, 4) == 0) << std::hex << bits;
  }
  std::vector<uint16_t> all(65536);
  for (uint32_t bits = 0; bits < 65536; ++bits) all[bits] = static_cast<uint16_t>(bits);
  std::vector<float> row(65536);
  npu_kernels::detail::half_row_to_float(row.data(), all.data(), 65536);  // the vectorised row path
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    Half h;
    h.bits = static_cast<uint16_t>(bits);
    const float ref = ref_half_to_float(h.bits);
    ASSERT_TRUE((std::isnan(ref) && std::isnan(row[bits])) || std::memcmp(&ref, &row[bits], 4) == 0) << bits;
  }
  std::vector<float> values = with_random_floats({0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, 1e-8f, 5.96e-8f, 2.98e-8f,
                                                  6.1e-5f, std::numeric_limits<float>::infinity(), -1e30f,
                                                  1.0f + 1.0f / 2048}, 5);
  for (float f : values) {
    if (std::isnan(f)) {  // any NaN narrows to a quiet NaN of its sign
      ASSERT_EQ(Half(f).bits & 0x7e00, 0x7e00) << f;
      continue;
    }
    ASSERT_EQ(Half(f).bits, ref_float_to_half(f)) << f;
  }
  // the row copy-out (F16C where the CPU has it), NaN included: it must stay a NaN
  values.push_back(std::numeric_limits<float>::quiet_NaN());
  std::vector<uint16_t> narrowed(values.size());
  npu_kernels::detail::float_row_to_half(narrowed.data(), values.data(), static_cast<int64_t>(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) {
      ASSERT_TRUE(std::isnan(npu_kernels::detail::half_bits_to_float(narrowed[i]))) << i;
    } else {
      ASSERT_EQ(narrowed[i], ref_float_to_half(values[i])) << values[i];
    }
  }
  EXPECT_TRUE(std::isnan(npu_kernels::detail::half_bits_to_float(
      npu_kernels::detail::float_to_half_bits(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(KernelsGemm, FastBf16ConversionsMatchBFloat16) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    BFloat16 b;
    b.bits = static_cast<uint16_t>(bits);
    const float ref = static_cast<float>(b), got = npu_kernels::detail::bf16_bits_to_float(b.bits);
    ASSERT_EQ(std::memcmp(&ref, &got, 4), 0) << std::hex << bits;
  }
  std::vector<uint32_t> words = {0x7f800001u, 0xffc00000u, 0x7f7fffffu, 0x3f808000u, 0x3f818000u};  // NaNs, ties
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 200000; ++i) words.push_back(any(gen));
  for (uint32_t u : words) {
    float f;
    std::memcpy(&f, &u, 4);
    ASSERT_EQ(npu_kernels::detail::float_to_bf16_bits(f), BFloat16(f).bits) << std::hex << u;
  }
}

// The elementwise engine's 16-bit copy-in / copy-out (16 lanes in registers, vec16.h, then a scalar tail):
// every fp16 / bf16 pattern widens exactly, and 200k random floats (NaNs, ties, overflow) narrow as Half(f) /
// BFloat16(f) do, NaN staying NaN.
template <typename T>
void check_engine_rows() {
  std::vector<T> all(65536 + 7);
  for (std::size_t i = 0; i < all.size(); ++i) all[i].bits = static_cast<uint16_t>(i);
  std::vector<float> wide(all.size());
  npu_kernels::detail::widen_row(wide.data(), all.data(), static_cast<int64_t>(all.size()));
  for (std::size_t i = 0; i < all.size(); ++i) {
    const float ref = static_cast<float>(all[i]);
    ASSERT_TRUE((std::isnan(ref) && std::isnan(wide[i])) || std::memcmp(&ref, &wide[i], 4) == 0) << i;
  }
  const std::vector<float> values =
      with_random_floats({0.0f, -0.0f, 65504.0f, 65520.0f, 5.96e-8f, 2.98e-8f, 1e-40f, 3.4e38f,
                          std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}, 11);
  std::vector<T> narrow(values.size());
  npu_kernels::detail::narrow_row(narrow.data(), values.data(), static_cast<int64_t>(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) {
      ASSERT_TRUE(std::isnan(static_cast<float>(narrow[i]))) << i;
    } else {
      ASSERT_EQ(narrow[i].bits, T(values[i]).bits) << values[i];
    }
  }
}

TEST(KernelsGemm, EngineRowConversionsMatchScalar) {
  check_engine_rows<Half>();
  check_engine_rows<BFloat16>();
}

TEST(KernelsGemm, ScalarAsFollowsConvert) {
  npu_kernels::ScalarValue v;
  v.kind = npu_kernels::ScalarValue::kComplex;
  v.d = 0.0;
  v.imag = 2.5;
  EXPECT_TRUE(npu_kernels::scalar_as<bool>(v));  // complex -> bool is "!= 0" on both parts
  EXPECT_EQ(npu_kernels::scalar_as<int32_t>(v), 0);
  EXPECT_EQ(npu_kernels::scalar_as<std::complex<float>>(v), std::complex<float>(0.0f, 2.5f));
  v.kind = npu_kernels::ScalarValue::kDouble;
  v.d = 1.5;
  EXPECT_EQ(static_cast<float>(npu_kernels::scalar_as<Half>(v)), 1.5f);
  v.kind = npu_kernels::ScalarValue::kInt;
  v.i = -3;
  EXPECT_EQ(npu_kernels::scalar_as<int8_t>(v), -3);
}

TEST(KernelsGemm, Float16StoreRoundsToNearestEven) {
  // C = alpha * (A @ B) with K = 1 and A = 1: the only rounding is the fp16 store of alpha * b.
  const int64_t N = 1000;
  auto hb = random_values<Half>(N, 42);
  DeviceBuf<Half> da(std::vector<Half>{Half(1.0f)}), db(hb), dc(std::vector<Half>(N, Half(0.0f)));
  GemmArgs g;
  g.dtype = DType::kFloat16;
  g.m = 1; g.n = N; g.k = 1;
  g.a = da.ptr; g.a_row_stride = 1; g.a_col_stride = 1;
  g.b = db.ptr; g.b_row_stride = N; g.b_col_stride = 1;
  g.c = dc.ptr; g.c_row_stride = N; g.c_col_stride = 1;
  g.alpha = 1.0 / 3.0;
  ASSERT_OK(npu_kernels::gemm(nullptr, g));
  ASSERT_OK(npu_sim::device_synchronize(0));
  auto out = dc.read();
  for (int64_t j = 0; j < N; ++j) {
    ASSERT_EQ(out[j].bits, Half(static_cast<float>(g.alpha) * static_cast<float>(hb[j])).bits) << j;
  }
}

}  // namespace
