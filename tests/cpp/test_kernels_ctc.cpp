// gtests of the torch-free CTC loss kernels: the forward against a host dynamic program in probability space
// (double), the backward against central differences of the forward, both target layouts, strided log_probs,
// impossible alignments and zero_infinity, bad arguments and targets, float32, two streams at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "npu_kernels/ctc.h"
#include "npu_sim/runtime.h"
#include "test_kernels_util.h"

namespace {

using npu_kernels::CtcArgs;
using npu_kernels::DType;

constexpr double kInf = std::numeric_limits<double>::infinity();

// A batch: log_probs stored (N, T, C) and read as (T, N, C) through strides (as log_softmax(x).transpose(0, 1)).
struct Problem {
  int64_t T = 7, N = 5, C = 4, blank = 0;
  std::vector<int64_t> input_lengths{7, 6, 7, 3, 0};
  // item 1 repeats a label (needs a blank between); item 2 is empty; item 3 cannot fit its input (impossible);
  // item 4 has no input and a target (impossible)
  std::vector<std::vector<int64_t>> targets{{1, 2, 3}, {2, 2}, {}, {1, 1, 3}, {3}};
  std::vector<double> lp;  // (N, T, C) log-softmaxed rows

  explicit Problem(unsigned seed = 1) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> n(0, 1.5);
    lp.resize(static_cast<size_t>(N * T * C));
    for (int64_t r = 0; r < N * T; ++r) {
      double* row = &lp[r * C];
      double sum = 0;
      for (int64_t c = 0; c < C; ++c) sum += std::exp(row[c] = n(rng));
      for (int64_t c = 0; c < C; ++c) row[c] -= std::log(sum);
    }
  }
  double at(int64_t t, int64_t b, int64_t c) const { return lp[(b * T + t) * C + c]; }
  std::vector<int64_t> target_lengths() const {
    std::vector<int64_t> v;
    for (const auto& t : targets) v.push_back(static_cast<int64_t>(t.size()));
    return v;
  }
  int64_t longest() const {
    int64_t m = 0;
    for (const auto& t : targets) m = std::max<int64_t>(m, static_cast<int64_t>(t.size()));
    return m;
  }
};

// Host reference: alpha in probability space (no logs in the recursion), nll = -log(alpha_T(S') + alpha_T(S'-1)).
struct Reference {
  std::vector<double> nll;
  std::vector<std::vector<std::vector<double>>> alpha;  // [b][t][s]
};

Reference reference(const Problem& p) {
  Reference r;
  for (int64_t b = 0; b < p.N; ++b) {
    std::vector<int64_t> lab{p.blank};
    for (int64_t v : p.targets[b]) lab.insert(lab.end(), {v, p.blank});
    const int64_t S = static_cast<int64_t>(lab.size()), il = p.input_lengths[b];
    std::vector<std::vector<double>> a(static_cast<size_t>(il), std::vector<double>(static_cast<size_t>(S), 0.0));
    for (int64_t t = 0; t < il; ++t) {
      for (int64_t s = 0; s < S; ++s) {
        double sum;
        if (t == 0) {
          sum = s < 2 ? 1.0 : 0.0;
        } else {
          sum = a[t - 1][s] + (s > 0 ? a[t - 1][s - 1] : 0.0) +
                (s > 1 && lab[s] != lab[s - 2] ? a[t - 1][s - 2] : 0.0);
        }
        a[t][s] = sum * std::exp(p.at(t, b, lab[s]));
      }
    }
    double like = il == 0 ? (S == 1 ? 1.0 : 0.0) : a[il - 1][S - 1] + (S > 1 ? a[il - 1][S - 2] : 0.0);
    r.nll.push_back(-std::log(like));
    r.alpha.push_back(a);
  }
  return r;
}

template <typename T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// The kernels' arguments and targets for one layout: padded (N x S with junk past each length, read through
// strides) or concatenated (every other element of a buffer twice as long: stride 2).
struct Layout {
  CtcArgs a;
  std::vector<int64_t> targets, il, tl;
};

Layout layout(const Problem& p, DType dtype, bool concatenated) {
  Layout l;
  l.il = p.input_lengths;
  l.tl = p.target_lengths();
  CtcArgs& a = l.a;
  a.dtype = dtype;
  a.max_input_length = p.T;
  a.batch = p.N;
  a.num_labels = p.C;
  a.lp_stride_t = p.C;
  a.lp_stride_n = p.T * p.C;
  a.lp_stride_c = 1;
  a.blank = p.blank;
  a.targets_concatenated = concatenated;
  if (concatenated) {
    for (const auto& t : p.targets) {
      for (int64_t v : t) l.targets.insert(l.targets.end(), {v, -7});
    }
    a.num_targets = static_cast<int64_t>(l.targets.size()) / 2;
    a.target_stride = 2;
  } else {
    const int64_t S = p.longest() + 1;  // one column more than needed, never read
    l.targets.assign(static_cast<size_t>(p.N * S), 99);  // junk outside [0, C): the kernel must not read it
    for (int64_t b = 0; b < p.N; ++b) {
      for (size_t i = 0; i < p.targets[b].size(); ++i) l.targets[b * S + i] = p.targets[b][i];
    }
    a.num_targets = S;
    a.target_stride_n = S;
    a.target_stride = 1;
  }
  a.input_lengths = l.il.data();
  a.target_lengths = l.tl.data();
  return l;
}

template <typename T>
struct Forward {
  std::vector<T> nll, alpha;
  int64_t width;
};

template <typename T>
Forward<T> run_forward(const Layout& l, const std::vector<double>& lp, npu_sim::Stream s = nullptr) {
  const int64_t width = npu_kernels::ctc_alpha_width(l.a);
  DeviceBuf<T> lpd(cast<T>(lp)), nll{std::vector<T>(l.a.batch)},
      alpha{std::vector<T>(static_cast<size_t>(l.a.batch * l.a.max_input_length * width))};
  DeviceBuf<int64_t> tg(l.targets);
  EXPECT_EQ(npu_kernels::ctc_loss(s, l.a, lpd.ptr, tg.ptr, nll.ptr, alpha.ptr), npu_sim::Status::kSuccess);
  EXPECT_EQ(s ? npu_sim::stream_synchronize(s) : npu_sim::device_synchronize(0), npu_sim::Status::kSuccess)
      << npu_sim::last_error_message();
  return {nll.read(), alpha.read(), width};
}

template <typename T>
std::vector<T> run_backward(const Layout& l, const std::vector<double>& lp, const std::vector<double>& grad_out,
                            bool zero_infinity, npu_sim::Stream s = nullptr) {
  const Forward<T> f = run_forward<T>(l, lp, s);
  CtcArgs a = l.a;
  a.zero_infinity = zero_infinity;
  DeviceBuf<T> lpd(cast<T>(lp)), go(cast<T>(grad_out)), nll(f.nll), alpha(f.alpha),
      grad{std::vector<T>(lp.size(), T(123))};
  DeviceBuf<int64_t> tg(l.targets);
  EXPECT_EQ(npu_kernels::ctc_loss_backward(s, a, go.ptr, lpd.ptr, tg.ptr, nll.ptr, alpha.ptr, f.width, grad.ptr),
            npu_sim::Status::kSuccess);
  EXPECT_EQ(s ? npu_sim::stream_synchronize(s) : npu_sim::device_synchronize(0), npu_sim::Status::kSuccess)
      << npu_sim::last_error_message();
  return grad.read();
}

template <typename T>
void expect_forward_matches(const Problem& p, const Forward<T>& f, double tol) {
  const Reference r = reference(p);
  for (int64_t b = 0; b < p.N; ++b) {
    if (std::isinf(r.nll[b])) {
      EXPECT_EQ(f.nll[b], std::numeric_limits<T>::infinity()) << "item " << b;
    } else {
      EXPECT_NEAR(f.nll[b], r.nll[b], tol * std::max(1.0, std::abs(r.nll[b]))) << "item " << b;
    }
    const int64_t states = 2 * static_cast<int64_t>(p.targets[b].size()) + 1;
    for (int64_t t = 0; t < p.T; ++t) {
      for (int64_t s = 0; s < f.width; ++s) {
        const double got = f.alpha[(b * p.T + t) * f.width + s];
        const bool live = t < p.input_lengths[b] && s < states;
        const double want = live ? std::log(r.alpha[b][t][s]) : -kInf;  // -inf outside CPU's defined region
        if (std::isinf(want)) {
          EXPECT_EQ(got, want) << "item " << b << " t " << t << " s " << s;
        } else {
          EXPECT_NEAR(got, want, tol * std::max(1.0, std::abs(want))) << "item " << b << " t " << t << " s " << s;
        }
      }
    }
  }
}

TEST(CtcLoss, ForwardMatchesAHostDynamicProgramInBothLayouts) {
  const Problem p;
  for (bool concatenated : {false, true}) {
    const Layout l = layout(p, DType::kFloat64, concatenated);
    ASSERT_EQ(npu_kernels::ctc_alpha_width(l.a), 7);
    expect_forward_matches(p, run_forward<double>(l, p.lp), 1e-12);
  }
  const Reference r = reference(p);
  EXPECT_EQ(r.nll[3], kInf);  // 1 1 3 needs 4 steps, it has 3
  EXPECT_EQ(r.nll[4], kInf);  // no input, a target
}

TEST(CtcLoss, Float32AccumulatesInFloat32CloseToTheDoubleReference) {
  const Problem p(2);
  expect_forward_matches(p, run_forward<float>(layout(p, DType::kFloat32, true), p.lp), 2e-5);
}

// d(sum_b g_b nll_b) / d log_probs by central differences, against the kernel's gradient minus exp(log_probs) * g_b
// (PyTorch's formula carries that term, which log_softmax's backward cancels since each row of the rest sums to
// g_b); rows past an item's input length are 0.
TEST(CtcLoss, BackwardMatchesCentralDifferencesOfTheForward) {
  Problem p(3);
  p.input_lengths = {7, 6, 7, 5, 2};
  p.targets = {{1, 2, 3}, {2, 2}, {}, {1, 3, 3}, {3}};
  const std::vector<double> g{1.0, -0.5, 2.0, 0.25, 1.5};
  for (bool concatenated : {false, true}) {
    const Layout l = layout(p, DType::kFloat64, concatenated);
    const auto grad = run_backward<double>(l, p.lp, g, false);
    const double h = 1e-6;
    for (int64_t t = 0; t < p.T; ++t) {
      for (int64_t b = 0; b < p.N; ++b) {
        for (int64_t c = 0; c < p.C; ++c) {
          const size_t i = static_cast<size_t>((b * p.T + t) * p.C + c);  // lp is stored (N, T, C)
          auto loss = [&](double delta) {
            std::vector<double> lp = p.lp;
            lp[i] += delta;
            return run_forward<double>(l, lp).nll[b] * g[b];
          };
          const double fd = (loss(h) - loss(-h)) / (2 * h);
          const double got = grad[(t * p.N + b) * p.C + c];  // grad is (T, N, C) contiguous
          if (t >= p.input_lengths[b]) {
            EXPECT_EQ(got, 0.0) << "t " << t << " b " << b << " c " << c;
          } else {
            EXPECT_NEAR(got - std::exp(p.at(t, b, c)) * g[b], fd, 1e-7) << "t " << t << " b " << b << " c " << c;
          }
        }
      }
    }
  }
}

TEST(CtcLoss, ZeroInfinityZeroesImpossibleItemsOnly) {
  const Problem p(4);  // items 3 and 4 are impossible
  const std::vector<double> g(static_cast<size_t>(p.N), 1.0);
  const Layout l = layout(p, DType::kFloat64, false);
  const auto plain = run_backward<double>(l, p.lp, g, false);
  const auto zeroed = run_backward<double>(l, p.lp, g, true);
  for (int64_t b = 0; b < p.N; ++b) {
    bool finite = true;
    for (int64_t t = 0; t < p.T; ++t) {
      for (int64_t c = 0; c < p.C; ++c) {
        const size_t i = static_cast<size_t>((t * p.N + b) * p.C + c);
        finite = finite && std::isfinite(plain[i]);
        if (b >= 3) {
          EXPECT_EQ(zeroed[i], 0.0) << "t " << t << " b " << b;
        } else {
          EXPECT_EQ(zeroed[i], plain[i]) << "t " << t << " b " << b;
        }
      }
    }
    // CPU's formula without zero_infinity: exp(alpha * beta + inf) is not finite for an item that has input
    EXPECT_EQ(finite, b != 3) << "item " << b;
  }
}

TEST(CtcLoss, TargetsOutsideTheClassesAreKernelErrors) {
  Problem p;
  p.targets[1] = {2, 4};  // C = 4
  const Layout l = layout(p, DType::kFloat64, false);
  DeviceBuf<double> lpd(p.lp), nll{std::vector<double>(p.N)},
      alpha{std::vector<double>(static_cast<size_t>(p.N * p.T * npu_kernels::ctc_alpha_width(l.a)))};
  DeviceBuf<int64_t> tg(l.targets);
  ASSERT_OK(npu_kernels::ctc_loss(nullptr, l.a, lpd.ptr, tg.ptr, nll.ptr, alpha.ptr));
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kKernelError);
  const std::string msg = npu_sim::last_error_message();
  EXPECT_NE(msg.find("ctc_loss: target 1 of batch item 1 is 4, expected a class index in [0, 4)"), std::string::npos)
      << msg;
  ASSERT_OK(npu_sim::device_restart(0));
}

TEST(CtcLoss, BadArgumentsAreRefusedBeforeLaunch) {
  const Problem p;
  DeviceBuf<double> lpd(p.lp), nll{std::vector<double>(p.N)}, alpha{std::vector<double>(p.N * p.T * 7)};
  auto refused = [&](auto&& edit) {
    Layout l = layout(p, DType::kFloat64, false);
    edit(l);
    l.a.input_lengths = l.il.data();
    l.a.target_lengths = l.tl.data();
    DeviceBuf<int64_t> tg(l.targets);
    return npu_kernels::ctc_loss(nullptr, l.a, lpd.ptr, tg.ptr, nll.ptr, alpha.ptr) == npu_sim::Status::kInvalidValue;
  };
  EXPECT_TRUE(refused([](Layout& l) { l.a.blank = 4; }));
  EXPECT_TRUE(refused([](Layout& l) { l.a.blank = -1; }));
  EXPECT_TRUE(refused([](Layout& l) { l.il[0] = 8; }));
  EXPECT_TRUE(refused([](Layout& l) { l.il[0] = -1; }));
  EXPECT_TRUE(refused([](Layout& l) { l.tl[0] = -1; }));
  EXPECT_TRUE(refused([](Layout& l) { l.tl[0] = 5; }));  // padded S is 4
  EXPECT_TRUE(refused([](Layout& l) { l.a.dtype = DType::kFloat16; }));
  EXPECT_TRUE(refused([](Layout& l) {
    l.a.targets_concatenated = true;
    l.a.num_targets = 8;  // the lengths sum to 9
  }));
  ASSERT_OK(npu_sim::device_synchronize(0));
}

TEST(CtcLoss, ConcurrentStreamsAgree) {
  const Problem p(5);
  const std::vector<double> g{1.0, 2.0, 0.5, 1.0, 1.0};
  const Layout l = layout(p, DType::kFloat64, true);
  const auto want = run_backward<double>(l, p.lp, g, true);
  npu_sim::Stream s1 = nullptr, s2 = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s1));
  ASSERT_OK(npu_sim::stream_create(0, &s2));
  std::vector<double> r1, r2;
  std::thread t1([&] { for (int i = 0; i < 10; ++i) r1 = run_backward<double>(l, p.lp, g, true, s1); });
  std::thread t2([&] { for (int i = 0; i < 10; ++i) r2 = run_backward<double>(l, p.lp, g, true, s2); });
  t1.join();
  t2.join();
  EXPECT_EQ(r1, want);
  EXPECT_EQ(r2, want);
  ASSERT_OK(npu_sim::stream_destroy(s1));
  ASSERT_OK(npu_sim::stream_destroy(s2));
}

}  // namespace
