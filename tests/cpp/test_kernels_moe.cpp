// gtests of the MoE kernels (npu_kernels/moe.h) against plain references and of the chain as a MoE layer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "npu_kernels/gemm.h"
#include "npu_kernels/moe.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::BFloat16;
using npu_kernels::DType;
using npu_kernels::Half;

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::kFloat32; }
template <> constexpr DType dtype_of<double>() { return DType::kFloat64; }
template <> constexpr DType dtype_of<Half>() { return DType::kFloat16; }
template <> constexpr DType dtype_of<BFloat16>() { return DType::kBFloat16; }
// Relative tolerances: float32 near-exact, float16 a few ulps (2^-10), bfloat16 a few ulps (2^-7).
template <typename T>
constexpr double tol_of() {
  return std::is_same_v<T, float> || std::is_same_v<T, double> ? 1e-5 : std::is_same_v<T, Half> ? 2e-3 : 1.6e-2;
}

template <typename T>
std::vector<T> to(const std::vector<float>& v) {
  return std::vector<T>(v.begin(), v.end());
}
template <typename T>
std::vector<float> from(const std::vector<T>& v) {
  std::vector<float> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) r[i] = static_cast<float>(v[i]);
  return r;
}
std::vector<float> randn(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// --- gating --------------------------------------------------------------------------------------------
struct GatingRef {
  std::vector<float> y;
  std::vector<int32_t> expert, row;
};
// softmax in double, rounded to T (the stored probabilities), stable descending argsort, top k.
template <typename T>
GatingRef gating_ref(const std::vector<float>& x, int64_t rows, int64_t E, int64_t k,
                     const std::vector<char>& finished) {
  GatingRef r;
  for (int64_t i = 0; i < rows; ++i) {
    double m = -INFINITY, s = 0;
    for (int64_t e = 0; e < E; ++e) m = std::max<double>(m, x[i * E + e]);
    std::vector<float> p(E);
    for (int64_t e = 0; e < E; ++e) s += std::exp(double(x[i * E + e]) - m);
    for (int64_t e = 0; e < E; ++e) p[e] = float(T(float(std::exp(double(x[i * E + e]) - m) / s)));
    std::vector<int32_t> order(E);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p[a] > p[b]; });
    for (int64_t j = 0; j < k; ++j) {
      r.y.push_back(p[order[j]]);
      r.expert.push_back(!finished.empty() && finished[i] ? int32_t(E) : order[j]);
      r.row.push_back(int32_t(j * rows + i));
    }
  }
  return r;
}

template <typename T>
void run_gating(const std::vector<float>& xf, int64_t rows, int64_t E, int64_t k, const std::vector<char>& finished,
                std::vector<float>* y, std::vector<int32_t>* expert, std::vector<int32_t>* row) {
  DeviceBuf<T> x(to<T>(xf)), yb(std::vector<T>(rows * k));
  DeviceBuf<int32_t> eb(std::vector<int32_t>(rows * k)), rb(std::vector<int32_t>(rows * k));
  std::vector<char> fin_c(finished.begin(), finished.end());
  DeviceBuf<char> fb(fin_c);
  npu_kernels::MoeGatingTopKSoftmaxArgs a;
  a.dtype = dtype_of<T>();
  a.rows = rows, a.experts = E, a.k = k;
  a.x = x.ptr;
  a.finished = finished.empty() ? nullptr : reinterpret_cast<const bool*>(fb.ptr);
  a.y = yb.ptr, a.expert_idx = eb.ptr, a.row_idx = rb.ptr;
  ASSERT_OK(npu_kernels::moe_gating_top_k_softmax(nullptr, a));
  ASSERT_OK(npu_sim::device_synchronize(0));
  *y = from(yb.read());
  *expert = eb.read();
  *row = rb.read();
}

template <typename T>
void check_gating(int64_t rows, int64_t E, int64_t k, const std::vector<char>& finished, unsigned seed) {
  const auto x = randn(rows * E, seed, 2.0f);
  std::vector<float> y;
  std::vector<int32_t> expert, row;
  run_gating<T>(x, rows, E, k, finished, &y, &expert, &row);
  const GatingRef r = gating_ref<T>(x, rows, E, k, finished);
  const double tol = tol_of<T>();
  for (int64_t i = 0; i < rows * k; ++i) {
    EXPECT_NEAR(y[i], r.y[i], tol * std::max(1.0f, std::fabs(r.y[i]))) << "k " << k << " at " << i;
    if (std::is_same_v<T, float>) {
      EXPECT_EQ(expert[i], r.expert[i]) << "k " << k << " at " << i;
    } else {  // 16-bit: the softmax's last bit may differ from the double reference; the ranking must hold
      const bool done = !finished.empty() && finished[i / k];
      if (done) {
        EXPECT_EQ(expert[i], int32_t(E));
      } else {
        EXPECT_TRUE(expert[i] >= 0 && expert[i] < E) << expert[i];
      }
    }
    EXPECT_EQ(row[i], r.row[i]);
  }
  if (!std::is_same_v<T, float>) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 1; j < k; ++j) EXPECT_GE(y[i * k + j - 1], y[i * k + j]);
    }
  }
}

TEST(MoeGatingTopKSoftmax, Float32K1K2AndE) {
  for (int64_t k : {1, 2, 8}) check_gating<float>(13, 8, k, {}, 1 + unsigned(k));
}

TEST(MoeGatingTopKSoftmax, HalfAndBFloat16) {
  for (int64_t k : {1, 2, 8}) {
    check_gating<Half>(11, 8, k, {}, 7 + unsigned(k));
    check_gating<BFloat16>(11, 8, k, {}, 17 + unsigned(k));
  }
}

TEST(MoeGatingTopKSoftmax, TiesGoToTheLowerExpert) {
  const std::vector<float> x = {1, 3, 3, 0, 3,  // three-way tie for the top
                                2, 2, 2, 2, 2};  // all equal
  std::vector<float> y;
  std::vector<int32_t> expert, row;
  run_gating<float>(x, 2, 5, 2, {}, &y, &expert, &row);
  EXPECT_EQ(expert, (std::vector<int32_t>{1, 2, 0, 1}));
  EXPECT_FLOAT_EQ(y[0], y[1]);
  EXPECT_FLOAT_EQ(y[2], 0.2f);
  EXPECT_EQ(row, (std::vector<int32_t>{0, 2, 1, 3}));
  run_gating<float>(x, 2, 5, 5, {}, &y, &expert, &row);
  EXPECT_EQ(expert, (std::vector<int32_t>{1, 2, 4, 0, 3, 0, 1, 2, 3, 4}));
  run_gating<Half>(x, 2, 5, 5, {}, &y, &expert, &row);
  EXPECT_EQ(expert, (std::vector<int32_t>{1, 2, 4, 0, 3, 0, 1, 2, 3, 4}));
}

TEST(MoeGatingTopKSoftmax, FinishedRowsGetExpertE) {
  const std::vector<char> fin = {0, 1, 0, 0, 1, 1, 0};
  check_gating<float>(7, 6, 2, fin, 3);
  check_gating<BFloat16>(7, 6, 3, fin, 4);
}

// --- init_routing --------------------------------------------------------------------------------------
struct RoutingRef {
  std::vector<float> x;
  std::vector<int32_t> row, expert;
};
RoutingRef routing_ref(const std::vector<float>& x, int64_t rows, int64_t H, const std::vector<int32_t>& row_idx,
                       const std::vector<int32_t>& expert_idx, int64_t active_num) {
  const int64_t n = int64_t(expert_idx.size());
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return expert_idx[a] < expert_idx[b]; });
  RoutingRef r;
  r.row.assign(n, -1);
  const int64_t kept = std::min(rows, active_num) * (n / std::max<int64_t>(rows, 1));
  for (int64_t d = 0; d < n; ++d) {
    const int32_t src = row_idx[order[d]];
    r.expert.push_back(expert_idx[order[d]]);
    r.row[src] = int32_t(d);
    if (d < kept) r.x.insert(r.x.end(), x.begin() + (src % rows) * H, x.begin() + (src % rows + 1) * H);
  }
  return r;
}

template <typename T>
void check_routing(const std::vector<float>& xf, int64_t rows, int64_t H, int64_t k, int64_t E,
                   const std::vector<int32_t>& row_idx, const std::vector<int32_t>& expert_idx, int64_t active_num) {
  const RoutingRef r = routing_ref(from(to<T>(xf)), rows, H, row_idx, expert_idx, active_num);
  DeviceBuf<T> x(to<T>(xf)), ex(std::vector<T>(std::min(rows, active_num) * k * H));
  DeviceBuf<int32_t> ri(row_idx), ei(expert_idx);
  DeviceBuf<int32_t> er(std::vector<int32_t>(rows * k)), ee(std::vector<int32_t>(rows * k));
  npu_kernels::MoeInitRoutingArgs a;
  a.dtype = dtype_of<T>();
  a.rows = rows, a.hidden = H, a.k = k, a.num_experts = E, a.active_num = active_num;
  a.x = x.ptr, a.row_idx = ri.ptr, a.expert_idx = ei.ptr;
  a.expanded_x = ex.ptr, a.expanded_row_idx = er.ptr, a.expanded_expert_idx = ee.ptr;
  ASSERT_OK(npu_kernels::moe_init_routing(nullptr, a));
  ASSERT_OK(npu_sim::device_synchronize(0));
  EXPECT_EQ(from(ex.read()), r.x);  // a row copy: exact in every dtype
  EXPECT_EQ(er.read(), r.row);
  EXPECT_EQ(ee.read(), r.expert);
}

std::vector<int32_t> gating_row_idx(int64_t rows, int64_t k) {
  std::vector<int32_t> r(rows * k);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < k; ++j) r[i * k + j] = int32_t(j * rows + i);
  return r;
}

TEST(MoeInitRouting, TorchNpuDocExample) {
  const std::vector<float> x = {0.1f, 0.1f, 0.1f, 0.1f, 0.2f, 0.2f, 0.2f, 0.2f, 0.3f, 0.3f, 0.3f, 0.3f};
  DeviceBuf<float> xb(x), ex(std::vector<float>(24));
  DeviceBuf<int32_t> ri(std::vector<int32_t>{0, 3, 1, 4, 2, 5}), ei(std::vector<int32_t>{1, 2, 0, 1, 0, 2});
  DeviceBuf<int32_t> er(std::vector<int32_t>(6)), ee(std::vector<int32_t>(6));
  npu_kernels::MoeInitRoutingArgs a;
  a.rows = 3, a.hidden = 4, a.k = 2, a.active_num = 3;
  a.x = xb.ptr, a.row_idx = ri.ptr, a.expert_idx = ei.ptr;
  a.expanded_x = ex.ptr, a.expanded_row_idx = er.ptr, a.expanded_expert_idx = ee.ptr;
  for (int64_t E : {3, 0}) {  // explicit, and from the data
    a.num_experts = E;
    ASSERT_OK(npu_kernels::moe_init_routing(nullptr, a));
    ASSERT_OK(npu_sim::device_synchronize(0));
    EXPECT_EQ(ee.read(), (std::vector<int32_t>{0, 0, 1, 1, 2, 2}));
    EXPECT_EQ(er.read(), (std::vector<int32_t>{2, 0, 1, 4, 3, 5}));
    const auto got = ex.read();
    const float want[6] = {0.2f, 0.3f, 0.1f, 0.2f, 0.1f, 0.3f};
    for (int d = 0; d < 6; ++d) EXPECT_EQ(got[d * 4 + 3], want[d]) << d;
  }
}

TEST(MoeInitRouting, MatchesStableSortAllDtypesAndActiveNum) {
  const int64_t rows = 37, H = 9, k = 2, E = 5;
  std::mt19937 g(5);
  std::vector<int32_t> experts(rows * k);
  for (int64_t i = 0; i < rows; ++i) {  // distinct experts per row, as top-k gives; E marks finished rows
    const int32_t e0 = int32_t(g() % (E + 1));
    experts[i * k] = e0;
    experts[i * k + 1] = e0 == E ? E : int32_t((e0 + 1 + g() % (E - 1)) % E);
  }
  const auto x = randn(rows * H, 6);
  for (int64_t active : {rows, int64_t(10), int64_t(0), rows + 5}) {
    check_routing<float>(x, rows, H, k, E, gating_row_idx(rows, k), experts, active);
    check_routing<Half>(x, rows, H, k, E, gating_row_idx(rows, k), experts, active);
    check_routing<BFloat16>(x, rows, H, k, E, gating_row_idx(rows, k), experts, active);
    check_routing<float>(x, rows, H, k, 0, gating_row_idx(rows, k), experts, active);  // E from the data
  }
}

TEST(MoeInitRouting, NumExpertsZeroTakesTheBucketsFromTheData) {
  const int64_t rows = 29, H = 5, k = 3;
  const auto x = randn(rows * H, 8);
  std::mt19937 g(9);
  std::vector<int32_t> experts(rows * k);
  for (auto& e : experts) e = int32_t(g() % 6);  // max 5 (maybe lower): buckets [0, max]
  check_routing<float>(x, rows, H, k, 0, gating_row_idx(rows, k), experts, rows);
  check_routing<BFloat16>(x, rows, H, k, 0, gating_row_idx(rows, k), experts, 7);
  std::fill(experts.begin(), experts.end(), 0);  // all in expert 0: one bucket
  check_routing<float>(x, rows, H, k, 0, gating_row_idx(rows, k), experts, rows);
  for (std::size_t i = 0; i < experts.size(); ++i) experts[i] = i % 4 == 0 ? 1000000 : int32_t(i % 3);  // far more
  check_routing<Half>(x, rows, H, k, 0, gating_row_idx(rows, k), experts, rows);  // buckets than entries
}

TEST(MoeInitRouting, NegativeExpertWithDerivedCountIsAKernelErrorAtSync) {
  DeviceBuf<float> x(std::vector<float>(4, 1.0f)), ex(std::vector<float>(8));
  DeviceBuf<int32_t> ri(std::vector<int32_t>{0, 2, 1, 3}), ei(std::vector<int32_t>{0, 3, -1, 0});
  DeviceBuf<int32_t> er(std::vector<int32_t>(4)), ee(std::vector<int32_t>(4));
  npu_kernels::MoeInitRoutingArgs a;
  a.rows = 2, a.hidden = 2, a.k = 2, a.num_experts = 0, a.active_num = 2;
  a.x = x.ptr, a.row_idx = ri.ptr, a.expert_idx = ei.ptr;
  a.expanded_x = ex.ptr, a.expanded_row_idx = er.ptr, a.expanded_expert_idx = ee.ptr;
  ASSERT_OK(npu_kernels::moe_init_routing(nullptr, a));
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
  const std::string msg = npu_sim::last_error_message();
  EXPECT_NE(msg.find("moe_init_routing: expert_idx[2] = -1 is out of range [0, 3]"), std::string::npos) << msg;
  ASSERT_OK(npu_sim::device_restart(0));
  ASSERT_OK(npu_sim::device_synchronize(0));
}

TEST(MoeInitRouting, OutOfRangeExpertIsAKernelErrorAtSync) {
  DeviceBuf<float> x(std::vector<float>(4, 1.0f)), ex(std::vector<float>(4));
  DeviceBuf<int32_t> ri(std::vector<int32_t>{0, 2, 1, 3}), ei(std::vector<int32_t>{0, 1, 9, 0});
  DeviceBuf<int32_t> er(std::vector<int32_t>(4)), ee(std::vector<int32_t>(4));
  npu_kernels::MoeInitRoutingArgs a;
  a.rows = 2, a.hidden = 2, a.k = 2, a.num_experts = 4, a.active_num = 1;
  a.x = x.ptr, a.row_idx = ri.ptr, a.expert_idx = ei.ptr;
  a.expanded_x = ex.ptr, a.expanded_row_idx = er.ptr, a.expanded_expert_idx = ee.ptr;
  ASSERT_OK(npu_kernels::moe_init_routing(nullptr, a));
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
  const std::string msg = npu_sim::last_error_message();
  EXPECT_NE(msg.find("moe_init_routing: expert_idx[2] = 9 is out of range [0, 4]"), std::string::npos) << msg;
  ASSERT_OK(npu_sim::device_restart(0));
  ASSERT_OK(npu_sim::device_synchronize(0));
}

TEST(MoeInitRouting, RepeatedRowIdxIsAKernelErrorAtSync) {
  DeviceBuf<float> x(std::vector<float>(4, 1.0f)), ex(std::vector<float>(8));
  DeviceBuf<int32_t> ri(std::vector<int32_t>{0, 2, 2, 3}), ei(std::vector<int32_t>{0, 1, 1, 0});
  DeviceBuf<int32_t> er(std::vector<int32_t>(4)), ee(std::vector<int32_t>(4));
  npu_kernels::MoeInitRoutingArgs a;
  a.rows = 2, a.hidden = 2, a.k = 2, a.num_experts = 2, a.active_num = 2;
  a.x = x.ptr, a.row_idx = ri.ptr, a.expert_idx = ei.ptr;
  a.expanded_x = ex.ptr, a.expanded_row_idx = er.ptr, a.expanded_expert_idx = ee.ptr;
  ASSERT_OK(npu_kernels::moe_init_routing(nullptr, a));
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
  const std::string msg = npu_sim::last_error_message();
  EXPECT_NE(msg.find("moe_init_routing: row_idx[2] = 2 repeats"), std::string::npos) << msg;
  ASSERT_OK(npu_sim::device_restart(0));
  ASSERT_OK(npu_sim::device_synchronize(0));
}

// --- grouped_matmul ------------------------------------------------------------------------------------
// group_list goes to the device; x and y have x_rows >= group_list.back() rows (default: exactly), y starts
// as garbage so that the zero-filled tail is checked.
template <typename T>
void check_grouped(const std::vector<int64_t>& group_list, int64_t K, int64_t N, bool with_bias, unsigned seed,
                   int64_t x_rows = -1) {
  const int64_t G = int64_t(group_list.size()), rows = G > 0 ? group_list.back() : 0;
  if (x_rows < 0) x_rows = rows;
  const auto xf = from(to<T>(randn(x_rows * K, seed)));
  std::vector<std::vector<float>> wf(G), bf(G);
  std::vector<std::unique_ptr<DeviceBuf<T>>> wb, bb;
  std::vector<const void*> wp, bp;
  for (int64_t g = 0; g < G; ++g) {
    wf[g] = from(to<T>(randn(K * N, seed + 10 + unsigned(g), 0.3f)));
    wb.push_back(std::make_unique<DeviceBuf<T>>(to<T>(wf[g])));
    wp.push_back(wb.back()->ptr);
    bf[g] = from(to<T>(randn(N, seed + 50 + unsigned(g))));
    bb.push_back(std::make_unique<DeviceBuf<T>>(to<T>(bf[g])));
    bp.push_back(with_bias && g % 2 == 0 ? bb.back()->ptr : nullptr);  // a null entry: no bias for the group
  }
  DeviceBuf<T> x(to<T>(xf)), y(std::vector<T>(x_rows * N, T(7.0f)));
  DeviceBuf<int64_t> gl(group_list);
  npu_kernels::GroupedMatmulArgs a;
  a.dtype = dtype_of<T>();
  a.groups = G, a.k = K, a.n = N, a.x_rows = x_rows;
  a.group_list = gl.ptr;
  a.x = x.ptr, a.weight = wp.data(), a.bias = with_bias ? bp.data() : nullptr, a.y = y.ptr;
  ASSERT_OK(npu_kernels::grouped_matmul(nullptr, a));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto got = from(y.read());
  int64_t r0 = 0;
  for (int64_t g = 0; g < G; ++g) {
    for (int64_t i = r0; i < group_list[g]; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double s = with_bias && g % 2 == 0 ? bf[g][j] : 0.0;
        for (int64_t p = 0; p < K; ++p) s += double(xf[i * K + p]) * wf[g][p * N + j];
        ASSERT_NEAR(got[i * N + j], s, tol_of<T>() * 4 * std::max(1.0, std::fabs(s))) << "group " << g << " row " << i;
      }
    }
    r0 = group_list[g];
  }
  for (int64_t i = rows; i < x_rows; ++i) {
    for (int64_t j = 0; j < N; ++j) ASSERT_EQ(got[i * N + j], 0.0f) << "tail row " << i << " col " << j;
  }
}

TEST(MoeGroupedMatmul, EmptyGroupsBiasAndDtypes) {
  const std::vector<int64_t> gl = {3, 3, 7, 7, 12};  // groups of 3, 0, 4, 0, 5 rows
  check_grouped<float>(gl, 6, 5, false, 1);
  check_grouped<float>(gl, 6, 5, true, 2);
  check_grouped<double>(gl, 6, 5, true, 2);
  check_grouped<Half>(gl, 6, 5, true, 3);
  check_grouped<BFloat16>(gl, 6, 5, true, 4);
  check_grouped<float>({0, 0, 4}, 3, 2, true, 5);  // leading empty groups
  check_grouped<Half>({0, 0, 4}, 3, 2, true, 5);
}

TEST(MoeGroupedMatmul, GroupsSpanningSeveralTiles) {
  check_grouped<float>({150, 150, 420}, 96, 130, true, 6);
  check_grouped<double>({150, 150, 420}, 96, 130, true, 6);
  check_grouped<Half>({150, 150, 420}, 96, 130, true, 7);
  check_grouped<float>({70, 71, 200, 203, 330}, 40, 300, true, 8);  // BLAS: groups cut along rows and columns
}

TEST(MoeGroupedMatmul, RowsPastTheLastGroupAreZeroFilled) {
  check_grouped<float>({3, 3, 7}, 6, 5, true, 9, 12);
  check_grouped<float>({100, 130, 200}, 64, 48, true, 10, 333);
  check_grouped<double>({3, 3, 7}, 6, 5, true, 9, 12);
  check_grouped<Half>({3, 3, 7}, 6, 5, true, 11, 12);
  check_grouped<BFloat16>({100, 130, 200}, 64, 48, false, 12, 333);
  check_grouped<float>({0, 0}, 6, 5, true, 13, 9);    // every group empty: all of y is zeros
  check_grouped<Half>({0, 0}, 6, 5, true, 13, 9);
  check_grouped<float>({}, 6, 5, false, 14, 9);       // no groups at all: the same
  check_grouped<float>({2, 5}, 0, 5, true, 15, 8);    // K = 0: y = bias (or 0), then the zero tail
}

// group_list is read when the kernel runs: work queued before the launch may write it (no host sync).
TEST(MoeGroupedMatmul, GroupListIsReadWhenTheKernelRuns) {
  const int64_t K = 4, N = 3, rows = 6;
  DeviceBuf<float> x(randn(rows * K, 21)), w0(randn(K * N, 22)), w1(randn(K * N, 23));
  DeviceBuf<float> y(std::vector<float>(rows * N, 7.0f));
  DeviceBuf<int64_t> gl(std::vector<int64_t>{0, 0});  // as enqueued: every group empty
  npu_sim::Stream stream = nullptr;
  ASSERT_OK(npu_sim::get_default_stream(0, &stream));
  int64_t* glp = gl.ptr;
  ASSERT_OK(npu_sim::launch_host_func(stream, [glp] { glp[0] = 2, glp[1] = 5; }));
  const void* w[2] = {w0.ptr, w1.ptr};
  npu_kernels::GroupedMatmulArgs a;
  a.groups = 2, a.k = K, a.n = N, a.x_rows = rows, a.group_list = gl.ptr, a.x = x.ptr, a.weight = w, a.y = y.ptr;
  ASSERT_OK(npu_kernels::grouped_matmul(stream, a));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto xs = x.read(), ws0 = w0.read(), ws1 = w1.read(), got = y.read();
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      const auto& wg = i < 2 ? ws0 : ws1;
      for (int64_t p = 0; p < K && i < 5; ++p) s += double(xs[i * K + p]) * wg[p * N + j];
      EXPECT_NEAR(got[i * N + j], s, 1e-5 * std::max(1.0, std::fabs(s))) << i << "," << j;
    }
  }
}

template <typename T>
void expect_bad_group_list(const std::vector<int64_t>& list, int64_t x_rows, const std::string& want) {
  DeviceBuf<T> x(std::vector<T>(x_rows * 2)), w(std::vector<T>(4)), y(std::vector<T>(x_rows * 2));
  DeviceBuf<int64_t> gl(list);
  std::vector<const void*> wp(list.size(), w.ptr);
  npu_kernels::GroupedMatmulArgs a;
  a.dtype = dtype_of<T>();
  a.groups = int64_t(list.size()), a.k = 2, a.n = 2, a.x_rows = x_rows;
  a.group_list = gl.ptr, a.x = x.ptr, a.weight = wp.data(), a.y = y.ptr;
  ASSERT_OK(npu_kernels::grouped_matmul(nullptr, a));  // the counts are not known when it is enqueued
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
  const std::string msg = npu_sim::last_error_message();
  EXPECT_NE(msg.find("kernel 'grouped_matmul' failed: grouped_matmul: " + want), std::string::npos) << msg;
  ASSERT_OK(npu_sim::device_restart(0));
  ASSERT_OK(npu_sim::device_synchronize(0));
}

TEST(MoeGroupedMatmul, BadGroupListIsAKernelErrorAtSync) {
  for (int t = 0; t < 2; ++t) {  // the BLAS path (float32, when OpenBLAS is there) and the packed one
    auto check = t == 0 ? expect_bad_group_list<float> : expect_bad_group_list<Half>;
    check({4, 2}, 6, "group_list[1] = 2 is less than group_list[0] = 4");
    check({1, 3, 3, 1}, 6, "group_list[3] = 1 is less than group_list[2] = 3");
    check({-1, 2}, 6, "group_list[0] = -1 is negative");
    check({2, 9}, 6, "group_list[1] = 9 exceeds x_rows = 6");
    check({0, 1}, 0, "group_list[1] = 1 exceeds x_rows = 0");  // nothing to compute: still checked
  }
}

// --- compute_expert_tokens ------------------------------------------------------------------------------
std::vector<int32_t> expert_tokens(const std::vector<int32_t>& sorted, int64_t E) {
  DeviceBuf<int32_t> in(sorted.empty() ? std::vector<int32_t>{0} : sorted), out(std::vector<int32_t>(E + 1, -7));
  npu_kernels::MoeComputeExpertTokensArgs a;
  a.rows = int64_t(sorted.size()), a.num_experts = E, a.sorted_experts = in.ptr, a.expert_tokens = out.ptr;
  EXPECT_EQ(npu_kernels::moe_compute_expert_tokens(nullptr, a), npu_sim::Status::kSuccess);
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kSuccess);
  auto got = out.read();
  EXPECT_EQ(got[E], -7);  // nothing past num_experts is written
  got.resize(E);
  return got;
}

TEST(MoeComputeExpertTokens, CumulativeRowsPerExpert) {
  EXPECT_EQ(expert_tokens({3, 3, 4, 5, 6, 7}, 5), (std::vector<int32_t>{0, 0, 0, 2, 3}));  // torch_npu's example
  EXPECT_EQ(expert_tokens({}, 3), (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ(expert_tokens({-2, 0, 0}, 2), (std::vector<int32_t>{3, 3}));  // an upper bound: below 0 counts for 0
  std::mt19937 gen(5);
  std::vector<int32_t> v(5000);
  for (auto& e : v) e = int32_t(gen() % 16);
  std::sort(v.begin(), v.end());
  std::vector<int32_t> want(16, 0);
  for (int32_t e : v) ++want[e];
  for (int e = 1; e < 16; ++e) want[e] += want[e - 1];
  EXPECT_EQ(expert_tokens(v, 16), want);
}

TEST(MoeComputeExpertTokens, UnsortedInputIsAKernelErrorAtSync) {
  DeviceBuf<int32_t> in(std::vector<int32_t>{0, 1, 4, 2}), out(std::vector<int32_t>(4));
  npu_kernels::MoeComputeExpertTokensArgs a;
  a.rows = 4, a.num_experts = 4, a.sorted_experts = in.ptr, a.expert_tokens = out.ptr;
  ASSERT_OK(npu_kernels::moe_compute_expert_tokens(nullptr, a));
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
  const std::string msg = npu_sim::last_error_message();
  EXPECT_NE(msg.find("moe_compute_expert_tokens: sorted_expert_for_source_row[3] = 2 is below the entry before "
                     "it (4)"),
            std::string::npos)
      << msg;
  ASSERT_OK(npu_sim::device_restart(0));
  a.num_experts = -1;
  EXPECT_EQ(npu_kernels::moe_compute_expert_tokens(nullptr, a), npu_sim::Status::kInvalidValue);
  a.num_experts = 2, a.expert_tokens = nullptr;
  EXPECT_EQ(npu_kernels::moe_compute_expert_tokens(nullptr, a), npu_sim::Status::kInvalidValue);
}

// --- finalize_routing ----------------------------------------------------------------------------------
template <typename T>
void check_finalize(bool skip1, bool skip2, bool bias, bool scales, int64_t expanded_rows, unsigned seed) {
  const int64_t rows = 7, H = 6, k = 2, E = 3;
  std::mt19937 g(seed);
  std::vector<int32_t> dst(rows * k), expert(rows * k);
  std::iota(dst.begin(), dst.end(), 0);
  std::shuffle(dst.begin(), dst.end(), g);
  for (auto& e : expert) e = int32_t(g() % E);
  const auto epr = from(to<T>(randn(rows * k * H, seed + 1)));
  const auto s1 = from(to<T>(randn(rows * H, seed + 2))), s2 = from(to<T>(randn(rows * H, seed + 3)));
  const auto bi = from(to<T>(randn(E * H, seed + 4))), sc = from(to<T>(randn(rows * k, seed + 5)));
  DeviceBuf<T> eb(to<T>(epr)), s1b(to<T>(s1)), s2b(to<T>(s2)), bb(to<T>(bi)), scb(to<T>(sc));
  DeviceBuf<T> out(std::vector<T>(rows * H));
  DeviceBuf<int32_t> db(dst), xb(expert);
  npu_kernels::MoeFinalizeRoutingArgs a;
  a.dtype = dtype_of<T>();
  a.rows = rows, a.hidden = H, a.k = k, a.num_experts = E, a.expanded_rows = expanded_rows;
  a.expanded_permuted_rows = eb.ptr;
  a.skip1 = skip1 ? s1b.ptr : nullptr;
  a.skip2 = skip2 ? s2b.ptr : nullptr;
  a.bias = bias ? bb.ptr : nullptr;
  a.scales = scales ? scb.ptr : nullptr;
  a.expanded_src_to_dst_row = db.ptr;
  a.export_for_source_row = xb.ptr;
  a.out = out.ptr;
  ASSERT_OK(npu_kernels::moe_finalize_routing(nullptr, a));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto got = from(out.read());
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t h = 0; h < H; ++h) {
      double s = (skip1 ? s1[i * H + h] : 0.0) + (skip2 ? s2[i * H + h] : 0.0);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t d = dst[i + j * rows];
        if (d >= expanded_rows) continue;
        s += (scales ? sc[i * k + j] : 1.0) * (double(epr[d * H + h]) + (bias ? bi[expert[i * k + j] * H + h] : 0.0));
      }
      EXPECT_NEAR(got[i * H + h], s, tol_of<T>() * 4 * std::max(1.0, std::fabs(s))) << i << "," << h;
    }
  }
}

TEST(MoeFinalizeRouting, FormulaOptionalTermsAndDtypes) {
  check_finalize<float>(true, true, true, true, 14, 1);
  check_finalize<float>(true, false, true, true, 14, 2);
  check_finalize<float>(false, false, false, false, 14, 3);
  check_finalize<float>(true, true, true, true, 6, 4);  // rows cut by active_num contribute nothing
  check_finalize<Half>(true, true, true, true, 14, 5);
  check_finalize<BFloat16>(true, true, true, true, 14, 6);
}

TEST(MoeFinalizeRouting, OutOfRangeExpertIsAKernelErrorAtSync) {
  DeviceBuf<float> epr(std::vector<float>(4, 1.0f)), out(std::vector<float>(2)), bias(std::vector<float>(2));
  DeviceBuf<int32_t> dst(std::vector<int32_t>{0, 1}), expert(std::vector<int32_t>{5});
  npu_kernels::MoeFinalizeRoutingArgs a;
  a.rows = 1, a.hidden = 2, a.k = 1, a.num_experts = 1, a.expanded_rows = 1;
  a.expanded_permuted_rows = epr.ptr, a.bias = bias.ptr;
  a.expanded_src_to_dst_row = dst.ptr, a.export_for_source_row = expert.ptr, a.out = out.ptr;
  ASSERT_OK(npu_kernels::moe_finalize_routing(nullptr, a));
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
  const std::string msg = npu_sim::last_error_message();
  EXPECT_NE(msg.find("moe_finalize_routing: export_for_source_row[0] = 5 is out of range [0, 1)"), std::string::npos)
      << msg;
  ASSERT_OK(npu_sim::device_restart(0));
  ASSERT_OK(npu_sim::device_synchronize(0));
}

// --- the chain -----------------------------------------------------------------------------------------
// out = x + sum over the top-2 experts e of p_e * (x @ W_e + b_e), p = softmax(x @ Wg) (8 experts).
template <typename T>
void check_chain(unsigned seed) {
  const int64_t rows = 40, H = 16, E = 8, k = 2;
  const auto x = from(to<T>(randn(rows * H, seed)));
  const auto logits = randn(rows * E, seed + 1, 2.0f);
  std::vector<std::vector<float>> W(E);
  for (int64_t e = 0; e < E; ++e) W[e] = from(to<T>(randn(H * H, seed + 2 + unsigned(e), 0.25f)));
  const auto b = from(to<T>(randn(E * H, seed + 20)));

  DeviceBuf<T> xb(to<T>(x)), lg(to<T>(logits)), y(std::vector<T>(rows * k)), bb(to<T>(b));
  DeviceBuf<int32_t> expert(std::vector<int32_t>(rows * k)), row_idx(std::vector<int32_t>(rows * k));
  npu_kernels::MoeGatingTopKSoftmaxArgs ga;
  ga.dtype = dtype_of<T>();
  ga.rows = rows, ga.experts = E, ga.k = k, ga.x = lg.ptr;
  ga.y = y.ptr, ga.expert_idx = expert.ptr, ga.row_idx = row_idx.ptr;
  ASSERT_OK(npu_kernels::moe_gating_top_k_softmax(nullptr, ga));

  DeviceBuf<T> ex(std::vector<T>(rows * k * H)), eo(std::vector<T>(rows * k * H)), out(std::vector<T>(rows * H));
  DeviceBuf<int32_t> erow(std::vector<int32_t>(rows * k)), eexp(std::vector<int32_t>(rows * k));
  npu_kernels::MoeInitRoutingArgs ra;
  ra.dtype = dtype_of<T>();
  ra.rows = rows, ra.hidden = H, ra.k = k, ra.num_experts = 0, ra.active_num = rows;  // E from the data
  ra.x = xb.ptr, ra.row_idx = row_idx.ptr, ra.expert_idx = expert.ptr;
  ra.expanded_x = ex.ptr, ra.expanded_row_idx = erow.ptr, ra.expanded_expert_idx = eexp.ptr;
  ASSERT_OK(npu_kernels::moe_init_routing(nullptr, ra));

  // Tokens per expert (npu_moe_compute_expert_tokens' job), counted on the stream into the device's
  // cumulative group_list: the whole chain is enqueued without a host sync.
  DeviceBuf<int64_t> group_list(std::vector<int64_t>(E, 0));
  npu_sim::Stream stream = nullptr;
  ASSERT_OK(npu_sim::get_default_stream(0, &stream));
  ASSERT_OK(npu_sim::launch_host_func(stream, [sorted = eexp.ptr, gl = group_list.ptr, n = rows * k, E] {
    for (int64_t e = 0; e < E; ++e) gl[e] = 0;
    for (int64_t p = 0; p < n; ++p) ++gl[sorted[p]];
    for (int64_t e = 1; e < E; ++e) gl[e] += gl[e - 1];
  }));
  std::vector<std::unique_ptr<DeviceBuf<T>>> wb;
  std::vector<const void*> wp;
  for (int64_t e = 0; e < E; ++e) {
    wb.push_back(std::make_unique<DeviceBuf<T>>(to<T>(W[e])));
    wp.push_back(wb.back()->ptr);
  }
  npu_kernels::GroupedMatmulArgs mm;
  mm.dtype = dtype_of<T>();
  mm.groups = E, mm.k = H, mm.n = H, mm.x_rows = rows * k, mm.group_list = group_list.ptr;
  mm.x = ex.ptr, mm.weight = wp.data(), mm.y = eo.ptr;
  ASSERT_OK(npu_kernels::grouped_matmul(nullptr, mm));

  npu_kernels::MoeFinalizeRoutingArgs fa;
  fa.dtype = dtype_of<T>();
  fa.rows = rows, fa.hidden = H, fa.k = k, fa.num_experts = E, fa.expanded_rows = rows * k;
  fa.expanded_permuted_rows = eo.ptr, fa.skip1 = xb.ptr, fa.bias = bb.ptr, fa.scales = y.ptr;
  fa.expanded_src_to_dst_row = erow.ptr, fa.export_for_source_row = expert.ptr, fa.out = out.ptr;
  ASSERT_OK(npu_kernels::moe_finalize_routing(nullptr, fa));
  ASSERT_OK(npu_sim::device_synchronize(0));

  const GatingRef gr = gating_ref<T>(from(to<T>(logits)), rows, E, k, {});
  const auto got = from(out.read());
  const auto got_expert = expert.read();
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t h = 0; h < H; ++h) {
      double s = x[i * H + h];
      for (int64_t j = 0; j < k; ++j) {
        const int32_t e = got_expert[i * k + j];  // 16-bit near-ties may rank differently from the reference
        if (std::is_same_v<T, float>) {
          EXPECT_EQ(e, gr.expert[i * k + j]);
        }
        double p = 0;
        {
          double m = -INFINITY, z = 0;
          for (int64_t q = 0; q < E; ++q) m = std::max<double>(m, float(T(logits[i * E + q])));
          for (int64_t q = 0; q < E; ++q) z += std::exp(double(float(T(logits[i * E + q]))) - m);
          p = std::exp(double(float(T(logits[i * E + e]))) - m) / z;
        }
        double v = b[e * H + h];
        for (int64_t q = 0; q < H; ++q) v += double(x[i * H + q]) * W[e][q * H + h];
        s += p * v;
      }
      EXPECT_NEAR(got[i * H + h], s, tol_of<T>() * 10 * std::max(1.0, std::fabs(s))) << i << "," << h;
    }
  }
}

TEST(MoeChain, GatingInitRoutingGroupedMatmulFinalizeIsTheMoeLayer) {
  check_chain<float>(1);
  check_chain<Half>(2);
  check_chain<BFloat16>(3);
}

// --- arguments refused before launching ------------------------------------------------------------------
TEST(MoeInvalidArgs, RefusedWithInvalidValue) {
  DeviceBuf<float> buf(std::vector<float>(64));
  DeviceBuf<int32_t> ib(std::vector<int32_t>(64));
  const auto inv = npu_sim::Status::kInvalidValue;
  npu_kernels::MoeGatingTopKSoftmaxArgs g;
  g.rows = 2, g.experts = 4, g.k = 2, g.x = buf.ptr, g.y = buf.ptr, g.expert_idx = ib.ptr, g.row_idx = ib.ptr;
  auto gk = g;
  gk.k = 5;
  EXPECT_EQ(npu_kernels::moe_gating_top_k_softmax(nullptr, gk), inv);  // k > E
  gk.k = 0;
  EXPECT_EQ(npu_kernels::moe_gating_top_k_softmax(nullptr, gk), inv);  // k < 1
  gk = g, gk.rows = -1;
  EXPECT_EQ(npu_kernels::moe_gating_top_k_softmax(nullptr, gk), inv);
  gk = g, gk.x = nullptr;
  EXPECT_EQ(npu_kernels::moe_gating_top_k_softmax(nullptr, gk), inv);
  gk = g, gk.dtype = DType::kInt32;
  EXPECT_EQ(npu_kernels::moe_gating_top_k_softmax(nullptr, gk), inv);

  npu_kernels::MoeInitRoutingArgs r;
  r.rows = 2, r.hidden = 4, r.k = 2, r.num_experts = 4, r.active_num = 2;
  r.x = buf.ptr, r.row_idx = ib.ptr, r.expert_idx = ib.ptr, r.expanded_x = buf.ptr;
  r.expanded_row_idx = ib.ptr, r.expanded_expert_idx = ib.ptr;
  auto rr = r;
  rr.num_experts = -1;
  EXPECT_EQ(npu_kernels::moe_init_routing(nullptr, rr), inv);
  rr = r, rr.active_num = -1;
  EXPECT_EQ(npu_kernels::moe_init_routing(nullptr, rr), inv);
  rr = r, rr.expanded_x = nullptr;
  EXPECT_EQ(npu_kernels::moe_init_routing(nullptr, rr), inv);
  rr = r, rr.k = 0;
  EXPECT_EQ(npu_kernels::moe_init_routing(nullptr, rr), inv);

  // (group_list's values are on the device: checked by the kernel, BadGroupListIsAKernelErrorAtSync)
  DeviceBuf<int64_t> ok(std::vector<int64_t>{2, 4});
  const void* w[2] = {buf.ptr, buf.ptr};
  const void* wnull[2] = {buf.ptr, nullptr};
  npu_kernels::GroupedMatmulArgs m;
  m.groups = 2, m.k = 2, m.n = 2, m.x_rows = 4, m.group_list = ok.ptr, m.x = buf.ptr, m.weight = w, m.y = buf.ptr;
  auto mm = m;
  mm = m, mm.weight = wnull;
  EXPECT_EQ(npu_kernels::grouped_matmul(nullptr, mm), inv);
  mm = m, mm.group_list = nullptr;
  EXPECT_EQ(npu_kernels::grouped_matmul(nullptr, mm), inv);
  mm = m, mm.k = -1;
  EXPECT_EQ(npu_kernels::grouped_matmul(nullptr, mm), inv);
  mm = m, mm.x_rows = -1;
  EXPECT_EQ(npu_kernels::grouped_matmul(nullptr, mm), inv);
  mm = m, mm.y = nullptr;
  EXPECT_EQ(npu_kernels::grouped_matmul(nullptr, mm), inv);
  mm = m, mm.x = nullptr;
  EXPECT_EQ(npu_kernels::grouped_matmul(nullptr, mm), inv);
  mm = m, mm.groups = -1;
  EXPECT_EQ(npu_kernels::grouped_matmul(nullptr, mm), inv);
  mm = m, mm.dtype = DType::kInt32;
  EXPECT_EQ(npu_kernels::grouped_matmul(nullptr, mm), inv);

  npu_kernels::MoeFinalizeRoutingArgs f;
  f.rows = 2, f.hidden = 2, f.k = 2, f.num_experts = 2, f.expanded_rows = 4;
  f.expanded_permuted_rows = buf.ptr, f.expanded_src_to_dst_row = ib.ptr, f.out = buf.ptr;
  auto ff = f;
  ff.drop_pad_mode = 1;
  EXPECT_EQ(npu_kernels::moe_finalize_routing(nullptr, ff), inv);
  ff = f, ff.bias = buf.ptr;  // bias without export_for_source_row
  EXPECT_EQ(npu_kernels::moe_finalize_routing(nullptr, ff), inv);
  ff = f, ff.expanded_rows = 5;
  EXPECT_EQ(npu_kernels::moe_finalize_routing(nullptr, ff), inv);
  ff = f, ff.out = nullptr;
  EXPECT_EQ(npu_kernels::moe_finalize_routing(nullptr, ff), inv);
  ASSERT_OK(npu_sim::device_synchronize(0));
}

// --- launch records --------------------------------------------------------------------------------------
TEST(MoeLaunchRecords, GatingRecordsItsBytes) {
  const int64_t rows = 8, E = 4, k = 2;
  DeviceBuf<float> x(randn(rows * E, 9)), y(std::vector<float>(rows * k));
  DeviceBuf<int32_t> ei(std::vector<int32_t>(rows * k)), ri(std::vector<int32_t>(rows * k));
  ASSERT_OK(npu_sim::device_synchronize(0));
  ASSERT_OK(npu_sim::set_launch_recording(true));
  npu_sim::clear_launch_records();
  npu_kernels::MoeGatingTopKSoftmaxArgs g;
  g.rows = rows, g.experts = E, g.k = k, g.x = x.ptr, g.y = y.ptr, g.expert_idx = ei.ptr, g.row_idx = ri.ptr;
  ASSERT_OK(npu_kernels::moe_gating_top_k_softmax(nullptr, g));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto recs = npu_sim::get_launch_records();
  ASSERT_OK(npu_sim::set_launch_recording(false));
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].kernel, "moe_gating_top_k_softmax");
  EXPECT_EQ(recs[0].gm_read, uint64_t(rows * E * 4));
  EXPECT_EQ(recs[0].gm_write, uint64_t(rows * k * 12));
  EXPECT_GT(recs[0].vector_flops, 0u);
}

// One launch; the Cube FLOPs of every group and the writes of y (the zero tail included). Reads: the packed
// path (16-bit, or no BLAS) loads every A row and used weight at least once; the BLAS path records
// gemm_direct's model, 2 m n k / kCubeTile element reads per GEMM call (summed over its row slices).
template <typename T>
void check_grouped_records() {
  const std::vector<int64_t> gl = {40, 40, 100, 230};
  const int64_t K = 24, N = 36, rows = gl.back(), x_rows = rows + 10;
  DeviceBuf<T> x(to<T>(randn(x_rows * K, 1))), y(std::vector<T>(x_rows * N));
  DeviceBuf<int64_t> glb(gl);
  std::vector<std::unique_ptr<DeviceBuf<T>>> wb;
  std::vector<const void*> wp;
  for (std::size_t g = 0; g < gl.size(); ++g) {
    wb.push_back(std::make_unique<DeviceBuf<T>>(to<T>(randn(K * N, 2 + unsigned(g)))));
    wp.push_back(wb.back()->ptr);
  }
  ASSERT_OK(npu_sim::device_synchronize(0));
  ASSERT_OK(npu_sim::set_launch_recording(true));
  npu_sim::clear_launch_records();
  npu_kernels::GroupedMatmulArgs m;
  m.dtype = dtype_of<T>();
  m.groups = int64_t(gl.size()), m.k = K, m.n = N, m.x_rows = x_rows, m.group_list = glb.ptr, m.x = x.ptr;
  m.weight = wp.data(), m.y = y.ptr;
  ASSERT_OK(npu_kernels::grouped_matmul(nullptr, m));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto recs = npu_sim::get_launch_records();
  ASSERT_OK(npu_sim::set_launch_recording(false));
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].kernel, "grouped_matmul");
  EXPECT_EQ(recs[0].cube_flops, uint64_t(2 * rows * N * K));
  EXPECT_EQ(recs[0].gm_write, uint64_t(x_rows * N * sizeof(T)));
  const bool blas = std::string(npu_kernels::gemm_micro_kernel_name()).find("openblas") != std::string::npos;
  if (std::is_same_v<T, float> && blas) {
    const uint64_t model = sizeof(T) * (2 * rows * N * K / 128);
    EXPECT_LE(recs[0].gm_read, model);
    EXPECT_GE(recs[0].gm_read, model - sizeof(T) * 16);  // floor per call: at most a few calls
  } else {
    EXPECT_GE(recs[0].gm_read, uint64_t((rows * K + 3 * K * N) * sizeof(T)));  // every A row, used weight
  }
}

TEST(MoeLaunchRecords, GroupedMatmulIsOneLaunchOverAllGroups) {
  check_grouped_records<float>();
  check_grouped_records<Half>();
}

}  // namespace
