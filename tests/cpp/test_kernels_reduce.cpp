// gtests of the reduction engine (torch-free): every subset of reduced dims of a 3-D tensor for several
// dtypes against a double reference, the tiled (column) and two-phase (full, large) splits, argmax ties,
// var with correction, two streams reducing at once, two-phase all / any, scans, a device-side nll_loss error,
// and a reduction without a kernel refused at launch.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "npu_kernels/nn.h"
#include "npu_kernels/reduce.h"
#include "npu_sim/runtime.h"

namespace {

using npu_kernels::DType;
using npu_kernels::Half;
using npu_kernels::ReduceDesc;
using npu_kernels::ReduceOp;

#define ASSERT_OK(expr) ASSERT_EQ((expr), npu_sim::Status::kSuccess) << npu_sim::last_error_message()

template <typename T>
struct Buf {
  T* ptr = nullptr;
  size_t n;
  explicit Buf(const std::vector<T>& h) : n(h.size()) {
    void* p = nullptr;
    EXPECT_EQ(npu_sim::malloc_device(0, &p, std::max<size_t>(1, n) * sizeof(T)), npu_sim::Status::kSuccess);
    ptr = static_cast<T*>(p);
    if (n) EXPECT_EQ(npu_sim::memcpy(ptr, h.data(), n * sizeof(T), npu_sim::MemcpyKind::kHostToDevice), npu_sim::Status::kSuccess);
  }
  explicit Buf(size_t count) : Buf(std::vector<T>(count)) {}
  ~Buf() { npu_sim::free_device(ptr); }
  std::vector<T> read() const {
    std::vector<T> h(n);
    if (n) EXPECT_EQ(npu_sim::memcpy(h.data(), ptr, n * sizeof(T), npu_sim::MemcpyKind::kDeviceToHost), npu_sim::Status::kSuccess);
    return h;
  }
};

// A contiguous 3-D input reduced over the dims in `mask` (bit d = dim d); outputs contiguous over the
// kept dims.
ReduceDesc describe(const int64_t* sizes, unsigned mask, const void* in, DType t, void* out0, void* out1 = nullptr) {
  ReduceDesc d;
  d.in = in;
  d.dtype = t;
  const int64_t strides[3] = {sizes[1] * sizes[2], sizes[2], 1};
  int64_t out_stride = 1;
  int kept[3], nk = 0;
  for (int i = 0; i < 3; ++i) {
    if (mask & (1u << i)) {
      d.red_sizes[d.n_red] = sizes[i];
      d.red_strides[d.n_red++] = strides[i];
    } else {
      kept[nk++] = i;
    }
  }
  d.n_outer = nk;
  for (int k = nk - 1; k >= 0; --k) {
    d.outer_sizes[k] = sizes[kept[k]];
    d.in_outer_strides[k] = strides[kept[k]];
    d.out_strides[0][k] = d.out_strides[1][k] = out_stride;
    out_stride *= sizes[kept[k]];
  }
  d.out[0] = out0;
  d.out[1] = out1;
  return d;
}

// Reference: calls f(output_index, values in reduction order) for each output.
template <typename T, typename F>
void reference(const std::vector<T>& x, const int64_t* s, unsigned mask, F&& f) {
  std::vector<std::vector<double>> groups;
  std::vector<int64_t> out_of;
  int64_t nout = 1;
  for (int i = 0; i < 3; ++i) {
    if (!(mask & (1u << i))) nout *= s[i];
  }
  groups.resize(nout);
  for (int64_t a = 0; a < s[0]; ++a)
    for (int64_t b = 0; b < s[1]; ++b)
      for (int64_t c = 0; c < s[2]; ++c) {
        const int64_t idx[3] = {a, b, c};
        int64_t o = 0;
        for (int i = 0; i < 3; ++i) {
          if (!(mask & (1u << i))) o = o * s[i] + idx[i];
        }
        groups[o].push_back(static_cast<double>(static_cast<float>(x[(a * s[1] + b) * s[2] + c])));
      }
  for (int64_t o = 0; o < nout; ++o) f(o, groups[o]);
}

template <typename T>
void check_all_subsets(DType t, double tol) {
  const int64_t s[3] = {3, 4, 5};
  std::mt19937 gen(1);
  std::uniform_int_distribution<int> dist(-4, 4);
  std::vector<T> host(60);
  for (auto& v : host) v = static_cast<T>(static_cast<float>(dist(gen)) * 0.5f);
  Buf<T> in(host);
  for (unsigned mask = 0; mask < 8; ++mask) {
    Buf<T> out(60), out2(60);
    Buf<int64_t> idx(60);
    ASSERT_OK(npu_kernels::reduce(nullptr, ReduceOp::kSum, describe(s, mask, in.ptr, t, out.ptr)));
    ASSERT_OK(npu_kernels::reduce(nullptr, ReduceOp::kMaxIdx, describe(s, mask, in.ptr, t, out2.ptr, idx.ptr)));
    const auto sum = out.read();
    const auto mx = out2.read();
    const auto ix = idx.read();
    reference(host, s, mask, [&](int64_t o, const std::vector<double>& v) {
      double r = 0, m = v[0];
      int64_t mi = 0;
      for (size_t i = 0; i < v.size(); ++i) {
        r += v[i];
        if (v[i] > m) {
          m = v[i];
          mi = static_cast<int64_t>(i);
        }
      }
      EXPECT_NEAR(static_cast<double>(static_cast<float>(sum[o])), r, tol) << "mask " << mask << " out " << o;
      EXPECT_EQ(static_cast<double>(static_cast<float>(mx[o])), m) << "mask " << mask;
      EXPECT_EQ(ix[o], mi) << "mask " << mask << " out " << o;
    });
  }
}

TEST(KernelsReduce, AllDimSubsetsFloat) { check_all_subsets<float>(DType::kFloat32, 1e-5); }
TEST(KernelsReduce, AllDimSubsetsDouble) { check_all_subsets<double>(DType::kFloat64, 1e-12); }
TEST(KernelsReduce, AllDimSubsetsHalf) { check_all_subsets<Half>(DType::kFloat16, 1e-2); }
TEST(KernelsReduce, AllDimSubsetsInt32) { check_all_subsets<int32_t>(DType::kInt32, 0); }

TEST(KernelsReduce, VarWithCorrectionAndMean) {
  const int64_t s[3] = {1, 7, 9};
  std::vector<double> host(63);
  for (size_t i = 0; i < host.size(); ++i) host[i] = std::sin(static_cast<double>(i)) * 3 + 10;
  Buf<double> in(host), var(7), mean(7);
  npu_kernels::ReduceParams p;
  p.correction = 2;
  ASSERT_OK(npu_kernels::reduce(nullptr, ReduceOp::kVar, describe(s, 4u, in.ptr, DType::kFloat64, var.ptr, mean.ptr), p));
  const auto v = var.read(), m = mean.read();
  for (int r = 0; r < 7; ++r) {
    double mu = 0, m2 = 0;
    for (int c = 0; c < 9; ++c) mu += host[r * 9 + c] / 9;
    for (int c = 0; c < 9; ++c) m2 += (host[r * 9 + c] - mu) * (host[r * 9 + c] - mu);
    EXPECT_NEAR(m[r], mu, 1e-12);
    EXPECT_NEAR(v[r], m2 / 7, 1e-12);
  }
}

TEST(KernelsReduce, ColumnTilesAndLargeTwoPhase) {
  // column sums (tiled path): 300 x 130, reduce dim 0
  const int64_t s[3] = {1, 300, 130};
  std::vector<float> host(300 * 130);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>((i * 7919) % 13) - 6.0f;
  Buf<float> in(host), out(130);
  ASSERT_OK(npu_kernels::reduce(nullptr, ReduceOp::kSum, describe(s, 3u, in.ptr, DType::kFloat32, out.ptr)));
  const auto o = out.read();
  for (int c = 0; c < 130; ++c) {
    double r = 0;
    for (int i = 0; i < 300; ++i) r += host[i * 130 + c];
    EXPECT_NEAR(o[c], r, 1e-3);
  }
  // full reduction of 4M elements (two-phase path), argmax of a late maximum
  const int64_t n = 1 << 22;
  const int64_t sl[3] = {1, 1, n};
  std::vector<float> big(n);
  for (int64_t i = 0; i < n; ++i) big[i] = static_cast<float>(i % 1000) * 1e-3f;
  big[n - 5] = 7.0f;
  Buf<float> bin(big), bsum(1);
  Buf<int64_t> barg(1);
  ASSERT_OK(npu_kernels::reduce(nullptr, ReduceOp::kSum, describe(sl, 7u, bin.ptr, DType::kFloat32, bsum.ptr)));
  ASSERT_OK(npu_kernels::reduce(nullptr, ReduceOp::kArgmax, describe(sl, 7u, bin.ptr, DType::kFloat32, barg.ptr)));
  double ref = 0;
  for (float v : big) ref += v;
  EXPECT_NEAR(bsum.read()[0], ref, ref * 1e-6);
  EXPECT_EQ(barg.read()[0], n - 5);
}

TEST(KernelsReduce, WidenedOutputReadsTheInputAsItIs) {
  // int8 summed into int64 (sums far past int8's range; the column, row and two-phase splits), and float16's mean
  // into float32: the input is read in its own dtype, the output written in the accumulation type.
  const int64_t s[3] = {1, 300, 130};
  std::vector<int8_t> host(300 * 130);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<int8_t>(100 - static_cast<int>((i * 31) % 7));
  Buf<int8_t> in(host);
  for (unsigned mask : {2u, 4u, 6u}) {
    const int64_t outs = mask == 2u ? 130 : mask == 4u ? 300 : 1;
    Buf<int64_t> out(static_cast<size_t>(outs));
    ReduceDesc d = describe(s, mask, in.ptr, DType::kInt8, out.ptr);
    d.widened_out = true;
    ASSERT_OK(npu_kernels::reduce(nullptr, ReduceOp::kSum, d));
    const auto o = out.read();
    for (int64_t k = 0; k < outs; ++k) {
      int64_t r = 0;
      for (int i = 0; i < 300; ++i) {
        for (int c = 0; c < 130; ++c) {
          const bool hit = mask == 2u ? c == k : mask == 4u ? i == k : true;
          if (hit) r += host[static_cast<size_t>(i * 130 + c)];
        }
      }
      EXPECT_EQ(o[static_cast<size_t>(k)], r) << "mask " << mask << " output " << k;
    }
  }
  const int64_t n = 1 << 17;  // the two-phase split
  const int64_t sl[3] = {1, 1, n};
  std::vector<Half> h(static_cast<size_t>(n));
  double ref = 0;
  for (int64_t i = 0; i < n; ++i) {
    h[static_cast<size_t>(i)] = Half(static_cast<float>(i % 64) * 0.25f);
    ref += static_cast<float>(h[static_cast<size_t>(i)]);
  }
  Buf<Half> hin(h);
  Buf<float> mean(1);
  ReduceDesc d = describe(sl, 7u, hin.ptr, DType::kFloat16, mean.ptr);
  d.widened_out = true;
  ASSERT_OK(npu_kernels::reduce(nullptr, ReduceOp::kMean, d));
  EXPECT_NEAR(mean.read()[0], ref / static_cast<double>(n), 1e-5);
  // a widened output is for sum and mean only
  EXPECT_EQ(npu_kernels::reduce(nullptr, ReduceOp::kMax, d), npu_sim::Status::kInvalidValue);
}

TEST(KernelsReduce, TwoStreamsConcurrently) {
  const int64_t n = 1 << 20;
  const int64_t s[3] = {4, 1, n / 4};
  std::vector<double> host(n);
  for (int64_t i = 0; i < n; ++i) host[i] = static_cast<double>(i % 17);
  Buf<double> in(host);
  auto worker = [&](int which, std::vector<double>* result) {
    npu_sim::Stream st = nullptr;
    ASSERT_OK(npu_sim::stream_create(0, &st));
    Buf<double> out(4);
    for (int rep = 0; rep < 20; ++rep) {
      ASSERT_OK(npu_kernels::reduce(st, which ? ReduceOp::kMax : ReduceOp::kSum, describe(s, 4u, in.ptr, DType::kFloat64, out.ptr)));
    }
    ASSERT_OK(npu_sim::stream_synchronize(st));
    *result = out.read();
    ASSERT_OK(npu_sim::stream_destroy(st));
  };
  std::vector<double> r0, r1;
  std::thread t0(worker, 0, &r0), t1(worker, 1, &r1);
  t0.join();
  t1.join();
  for (int row = 0; row < 4; ++row) {
    double sum = 0;
    for (int64_t i = 0; i < n / 4; ++i) sum += host[row * (n / 4) + i];
    EXPECT_EQ(r0[row], sum);
    EXPECT_EQ(r1[row], 16.0);
  }
}

TEST(KernelsReduce, AllAnyTwoPhaseKeepEveryBlocksAnswer) {
  // all / any of one long bool row split over several blocks: each block's answer is its own slot (the blocks
  // once stored them as neighbouring bits of one std::vector<bool> and lost each other's stores now and then)
  const int64_t n = 1 << 17;
  const int64_t s[3] = {1, 1, n};
  std::vector<uint8_t> ones(static_cast<size_t>(n), 1), last(static_cast<size_t>(n), 0);
  last.back() = 1;
  Buf<uint8_t> all_in(ones), any_in(last);
  auto worker = [&](ReduceOp op, const Buf<uint8_t>* in, int* wrong) {
    npu_sim::Stream st = nullptr;
    ASSERT_OK(npu_sim::stream_create(0, &st));
    Buf<uint8_t> out(1);
    for (int rep = 0; rep < 1500; ++rep) {
      ReduceDesc d = describe(s, 7u, in->ptr, DType::kBool, out.ptr);
      ASSERT_OK(npu_kernels::reduce(st, op, d));
      ASSERT_OK(npu_sim::stream_synchronize(st));
      if (out.read()[0] != 1) ++*wrong;
    }
    ASSERT_OK(npu_sim::stream_destroy(st));
  };
  int wrong_all = 0, wrong_any = 0;
  std::thread t0(worker, ReduceOp::kAll, &all_in, &wrong_all), t1(worker, ReduceOp::kAny, &any_in, &wrong_any);
  t0.join();
  t1.join();
  EXPECT_EQ(wrong_all, 0);
  EXPECT_EQ(wrong_any, 0);
}

TEST(KernelsReduce, Cumsum) {
  std::vector<int64_t> host = {1, 2, 3, 4, 5, 6};
  Buf<int64_t> in(host), out(6);
  npu_kernels::ScanDesc d;
  d.in = in.ptr;
  d.out = out.ptr;
  d.dtype = DType::kInt64;
  d.outer = 2;
  d.n = 3;
  d.inner = 1;
  d.in_strides[0] = d.out_strides[0] = 3;
  d.in_strides[1] = d.out_strides[1] = 1;
  ASSERT_OK(npu_kernels::scan(nullptr, npu_kernels::ScanOp::kCumsum, d));
  EXPECT_EQ(out.read(), (std::vector<int64_t>{1, 3, 6, 4, 9, 15}));
}

TEST(KernelsReduce, NllLossTargetOutOfRangeIsAKernelError) {
  npu_sim::Stream st = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &st));
  Buf<float> x(std::vector<float>(6, -1.0f)), out(1), tw(1);
  Buf<int64_t> t(std::vector<int64_t>{0, 7});
  npu_kernels::NllLossDesc d;
  d.N = 2;
  d.C = 3;
  d.input = x.ptr;
  d.target = t.ptr;
  d.out = out.ptr;
  d.total_weight = tw.ptr;
  ASSERT_OK(npu_kernels::nll_loss_forward(st, d));
  EXPECT_EQ(npu_sim::stream_synchronize(st), npu_sim::Status::kKernelError);
  EXPECT_NE(npu_sim::last_error_message().find("nll_loss"), std::string::npos) << npu_sim::last_error_message();
  ASSERT_OK(npu_sim::device_restart(0));  // the error is sticky: acknowledge it for the tests after this one
  ASSERT_OK(npu_sim::stream_destroy(st));
}

}  // namespace

namespace {

TEST(KernelsReduce, AReductionWithoutAKernelIsRefusedAtLaunchWithItsReason) {
  // logsumexp of complex and of int32 have no kernel: kInvalidValue naming the op and the dtype (it was an empty
  // message), nothing enqueued, the output left as it was
  const int64_t sizes[3] = {2, 3, 4};
  Buf<float> in(std::vector<float>(2 * 2 * 3 * 4, 1.0f));  // 24 complex64 values
  Buf<float> out(std::vector<float>(2 * 2, -7.0f));
  EXPECT_EQ(npu_kernels::reduce(nullptr, ReduceOp::kLogsumexp, describe(sizes, 6u, in.ptr, DType::kComplex64, out.ptr),
                                {}),
            npu_sim::Status::kInvalidValue);
  EXPECT_NE(npu_sim::last_error_message().find("complex"), std::string::npos) << npu_sim::last_error_message();
  Buf<int32_t> ints(std::vector<int32_t>(24, 1));
  Buf<int32_t> iout(std::vector<int32_t>(2, -7));
  EXPECT_EQ(npu_kernels::reduce(nullptr, ReduceOp::kLogsumexp, describe(sizes, 6u, ints.ptr, DType::kInt32, iout.ptr),
                                {}),
            npu_sim::Status::kInvalidValue);
  EXPECT_NE(npu_sim::last_error_message().find("no kernel for dtype"), std::string::npos)
      << npu_sim::last_error_message();
  ASSERT_OK(npu_sim::stream_synchronize(nullptr));
  for (float v : out.read()) EXPECT_EQ(v, -7.0f);
  for (int32_t v : iout.read()) EXPECT_EQ(v, -7);
}

}  // namespace
