// kernels: the tile layer (tile.h) op by op, the LinearAddGelu kernel written with it against a plain loop
// (tails included), the UB-overflow error, and the GM bytes / FLOPs its launches record.
#include <cmath>
#include <random>
#include <string>

#include "npu_kernels/fused.h"
#include "npu_kernels/tile.h"
#include "test_kernels_util.h"

using namespace npu_kernels;
using namespace npu_kernels::tile;

namespace {

std::vector<float> random_vec(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

double gelu_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

std::vector<float> linear_add_gelu_ref(const std::vector<float>& x, const std::vector<float>& w,
                                       const std::vector<float>& b, int64_t m, int64_t n, int64_t k) {
  std::vector<float> out(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = b[j];
      for (int64_t p = 0; p < k; ++p) s += double(x[i * k + p]) * w[p * n + j];
      out[i * n + j] = static_cast<float>(gelu_ref(s));
    }
  return out;
}

std::string sync_error() {
  const npu_sim::Status st = npu_sim::device_synchronize(0);
  if (st == npu_sim::Status::kSuccess) return "";
  std::string msg = npu_sim::last_error_message();
  EXPECT_EQ(npu_sim::device_restart(0), npu_sim::Status::kSuccess);
  return msg;
}

struct LinearCase {
  int64_t m, n, k, tile_m, tile_n, tile_k;
};

class LinearAddGeluTest : public ::testing::TestWithParam<LinearCase> {};

}  // namespace

TEST_P(LinearAddGeluTest, MatchesThePlainLoopWithTails) {
  const LinearCase c = GetParam();
  const auto hx = random_vec(c.m * c.k, 1), hw = random_vec(c.k * c.n, 2), hb = random_vec(c.n, 3);
  DeviceBuf<float> x(hx), w(hw), b(hb), out(std::vector<float>(c.m * c.n, NAN)),
      out_direct(std::vector<float>(c.m * c.n, NAN));
  LinearAddGeluArgs args{x.ptr, w.ptr, b.ptr, out.ptr, c.m, c.n, c.k, c.tile_m, c.tile_n, c.tile_k};
  ASSERT_OK(linear_add_gelu(nullptr, args));
  args.out = out_direct.ptr;
  ASSERT_OK(linear_add_gelu_direct(nullptr, args));
  ASSERT_EQ(sync_error(), "");
  const auto ref = linear_add_gelu_ref(hx, hw, hb, c.m, c.n, c.k);
  const auto got = out.read(), direct = out_direct.read();
  for (int64_t i = 0; i < c.m * c.n; ++i) {
    ASSERT_NEAR(got[i], ref[i], 1e-5 * (1 + std::sqrt(double(c.k))) * (1 + std::fabs(ref[i]))) << "at " << i;
    ASSERT_NEAR(direct[i], got[i], 1e-6 * (1 + std::fabs(got[i]))) << "at " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, LinearAddGeluTest,
                         ::testing::Values(LinearCase{1, 1, 1, 0, 0, 0},          // one element
                                           LinearCase{130, 200, 70, 0, 0, 0},     // default tiles, all tails
                                           LinearCase{257, 129, 33, 32, 48, 16},  // many blocks, tails
                                           LinearCase{64, 96, 0, 0, 0, 0},        // K = 0: GELU(bias)
                                           LinearCase{128, 256, 64, 0, 0, 0},     // exact multiples
                                           LinearCase{100, 130, 600, 0, 0, 0}));  // default K steps, K tail

TEST(KernelsTile, LinearAddGeluUbOverflowNamesTheKernelAndTheBytes) {
  DeviceBuf<float> x(std::vector<float>(256 * 64)), w(std::vector<float>(64 * 1024)), b(std::vector<float>(1024)),
      out(std::vector<float>(256 * 1024));
  // 32 x 1024 x 16 tiles: the Cube side fits (L1 2 x (2 + 64) KiB, L0C 128 KiB), but the Vector side's bias
  // row (4 KiB) and two chunks of 32 output rows (128 KiB each) do not fit the 192 KiB UB.
  ASSERT_OK(linear_add_gelu(nullptr, LinearAddGeluArgs{x.ptr, w.ptr, b.ptr, out.ptr, 256, 1024, 64, 32, 1024, 16}));
  std::string msg = sync_error();
  EXPECT_EQ(msg.rfind("kernel 'linear_add_gelu' failed: Unified Buffer overflow in kernel 'linear_add_gelu': "
                      "asked for 131072 bytes with 135168 in use, over the budget of 196608 bytes per AI core "
                      "(NPU_SIM_UB_KB sets it)",
                      0),
            0u)
      << msg;
  // 256 x 256 x 16 tiles: the 256 KiB accumulator does not fit the 128 KiB L0C.
  ASSERT_OK(linear_add_gelu(nullptr, LinearAddGeluArgs{x.ptr, w.ptr, b.ptr, out.ptr, 256, 256, 64, 256, 256, 16}));
  msg = sync_error();
  EXPECT_EQ(msg.rfind("kernel 'linear_add_gelu' failed: L0C buffer overflow in kernel 'linear_add_gelu': "
                      "asked for 262144 bytes with 0 in use, over the budget of 131072 bytes per AI core "
                      "(NPU_SIM_L0C_KB sets it)",
                      0),
            0u)
      << msg;
  // 128 x 128 x 512 tiles: one x / w slot takes 2 x 256 KiB, the whole 512 KiB L1; the second does not fit.
  ASSERT_OK(linear_add_gelu(nullptr, LinearAddGeluArgs{x.ptr, w.ptr, b.ptr, out.ptr, 256, 256, 64, 128, 128, 512}));
  msg = sync_error();
  EXPECT_EQ(msg.rfind("kernel 'linear_add_gelu' failed: L1 buffer overflow in kernel 'linear_add_gelu': "
                      "asked for 262144 bytes with 524288 in use, over the budget of 524288 bytes per AI core "
                      "(NPU_SIM_L1_KB sets it)",
                      0),
            0u)
      << msg;
  EXPECT_EQ(linear_add_gelu(nullptr, LinearAddGeluArgs{nullptr, w.ptr, b.ptr, out.ptr, 4, 4, 4}),
            npu_sim::Status::kInvalidValue);
}

// The record of one 1024 x 1024 x 1024 launch, exactly. Tiles 128 x 128 x 256: 8 x 8 = 64 output tiles,
// each reduced over 4 K steps (the record does not depend on tile_k). Per output tile the kernel reads its
// 128 rows of x in full (128 x 1024 x 4 B = 512 KiB), its 128 columns of w in full (512 KiB) and its 128
// bias values (512 B), and writes its 128 x 128 outputs once (64 KiB). So x is read once per tile column
// (8 times), w once per tile row (8 times), bias 8 times:
//   read  = 64 x (512 KiB + 512 KiB + 512 B) = 67,108,864 + 32,768 = 67,141,632 B  (64.03 MiB)
//   write = 1024 x 1024 x 4 B                                      =  4,194,304 B  (4 MiB)
// against the textbook 12 MiB (8 MiB read once + 4 MiB written): the 8x re-reads of x and w are the price
// of 128 x 128 output tiles (a 64 KiB fp32 accumulator in the 128 KiB L0C). Cube FLOPs 2 x 1024^3 =
// 2,147,483,648; Vector FLOPs: the bias add and the GELU, one per output element each: 2 x 1024^2 = 2,097,152.
TEST(KernelsTile, LinearAddGeluRecordsItsGmBytesAndFlops) {
  constexpr int64_t kDim = 1024;
  const auto hx = random_vec(kDim * kDim, 4), hw = random_vec(kDim * kDim, 5), hb = random_vec(kDim, 6);
  DeviceBuf<float> x(hx), w(hw), b(hb), out(std::vector<float>(kDim * kDim));
  ASSERT_OK(npu_sim::device_synchronize(0));
  ASSERT_OK(npu_sim::set_launch_recording(true));
  npu_sim::clear_launch_records();
  const LinearAddGeluArgs args{x.ptr, w.ptr, b.ptr, out.ptr, kDim, kDim, kDim};
  ASSERT_OK(linear_add_gelu(nullptr, args));
  ASSERT_OK(linear_add_gelu_direct(nullptr, args));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto recs = npu_sim::get_launch_records();
  ASSERT_OK(npu_sim::set_launch_recording(false));
  npu_sim::clear_launch_records();
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].kernel, "linear_add_gelu");
  EXPECT_EQ(recs[1].kernel, "linear_add_gelu_direct");
  for (const auto& r : recs) {
    EXPECT_FALSE(r.failed);
    EXPECT_EQ(r.gm_read, 67141632u) << r.kernel;
    EXPECT_EQ(r.gm_write, 4194304u) << r.kernel;
    EXPECT_EQ(r.cube_flops, 2147483648u) << r.kernel;
    EXPECT_EQ(r.vector_flops, 2097152u) << r.kernel;
  }
  // Spot check the values (the full comparison is the tail test's).
  const auto got = out.read();
  for (int64_t i : {int64_t{0}, int64_t{777 * kDim + 5}, kDim * kDim - 1}) {
    const int64_t r = i / kDim, c = i % kDim;
    double s = hb[c];
    for (int64_t p = 0; p < kDim; ++p) s += double(hx[r * kDim + p]) * hw[p * kDim + c];
    EXPECT_NEAR(got[i], gelu_ref(s), 1e-3) << i;
  }
}

// A tail shape's record follows the same formula: read = 4 (tiles_n M K + tiles_m K N + tiles_m N).
TEST(KernelsTile, LinearAddGeluRecordWithTails) {
  const int64_t m = 130, n = 200, k = 70;  // 2 x 2 output tiles of 128 x 128, 3 K steps (32, 32, 6)
  DeviceBuf<float> x(random_vec(m * k, 7)), w(random_vec(k * n, 8)), b(random_vec(n, 9)),
      out(std::vector<float>(m * n));
  ASSERT_OK(npu_sim::device_synchronize(0));
  ASSERT_OK(npu_sim::set_launch_recording(true));
  npu_sim::clear_launch_records();
  ASSERT_OK(linear_add_gelu(nullptr, LinearAddGeluArgs{x.ptr, w.ptr, b.ptr, out.ptr, m, n, k}));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto recs = npu_sim::get_launch_records();
  ASSERT_OK(npu_sim::set_launch_recording(false));
  npu_sim::clear_launch_records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].gm_read, 4u * (2 * 130 * 70 + 2 * 70 * 200 + 2 * 200));  // 186,400
  EXPECT_EQ(recs[0].gm_write, 4u * 130 * 200);
  EXPECT_EQ(recs[0].cube_flops, 2u * 130 * 200 * 70);
  EXPECT_EQ(recs[0].vector_flops, 2u * 130 * 200);
}

// Every vector op and Cast on one tile, against plain loops; their Vector FLOPs and the DataCopy bytes.
TEST(KernelsTile, VectorOpsAndCasts) {
  constexpr int64_t kN = 1000;
  const auto ha = random_vec(kN, 10, -4, 4), hb = random_vec(kN, 11, -4, 4);
  DeviceBuf<float> a(ha), b(hb), out(std::vector<float>(kN * 12));
  ASSERT_OK(npu_sim::device_synchronize(0));
  ASSERT_OK(npu_sim::set_launch_recording(true));
  npu_sim::clear_launch_records();
  float* pa = a.ptr;
  float* pb = b.ptr;
  float* po = out.ptr;
  ASSERT_OK(Launch(nullptr, "tile_vector_ops", 1, [=](TPipe& pipe) {
    GlobalTensor<float> ga(pa, kN), gb(pb, kN), go(po, kN * 12);
    auto ta = pipe.AllocTensor<float>(kN), tb = pipe.AllocTensor<float>(kN), t = pipe.AllocTensor<float>(kN);
    DataCopy(ta, ga, kN);
    DataCopy(tb, gb, kN);
    int slot = 0;
    auto put = [&](const LocalTensor<float>& r) { DataCopy(go[kN * slot++], r, kN); };
    Add(t, ta, tb, kN), put(t);
    Mul(t, ta, tb, kN), put(t);
    Adds(t, ta, 2.5f, kN), put(t);
    Muls(t, ta, -3.0f, kN), put(t);
    Exp(t, ta, kN), put(t);
    Relu(t, ta, kN), put(t);
    Gelu(t, ta, kN), put(t);
    Gelu(t, ta, kN, GeluForm::kTanh), put(t);
    ReduceSum(t, ta, kN);
    ReduceMax(t[1], ta, kN);
    put(t);
    auto h = pipe.AllocTensor<Half>(kN);
    auto bf = pipe.AllocTensor<BFloat16>(kN);
    Cast(h, ta, kN), Cast(t, h, kN), put(t);
    Cast(bf, ta, kN), Cast(t, bf, kN), put(t);
  }));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto recs = npu_sim::get_launch_records();
  ASSERT_OK(npu_sim::set_launch_recording(false));
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].gm_read, 2u * kN * 4);
  EXPECT_EQ(recs[0].gm_write, 11u * kN * 4);
  EXPECT_EQ(recs[0].vector_flops, 14u * kN);  // 8 elementwise ops, 2 reductions, 4 casts
  EXPECT_EQ(recs[0].cube_flops, 0u);
  const auto o = out.read();
  double sum = 0, mx = -1e30;
  for (int64_t i = 0; i < kN; ++i) {
    const float x = ha[i], y = hb[i];
    sum += x, mx = std::max<double>(mx, x);
    EXPECT_FLOAT_EQ(o[0 * kN + i], x + y);
    EXPECT_FLOAT_EQ(o[1 * kN + i], x * y);
    EXPECT_FLOAT_EQ(o[2 * kN + i], x + 2.5f);
    EXPECT_FLOAT_EQ(o[3 * kN + i], x * -3.0f);
    EXPECT_NEAR(o[4 * kN + i], std::exp(x), 2e-6 * std::exp(x));
    EXPECT_EQ(o[5 * kN + i], x < 0 ? 0.0f : x);
    EXPECT_NEAR(o[6 * kN + i], gelu_ref(x), 1e-6 * (1 + std::fabs(x)));
    const double tanh_ref = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    EXPECT_NEAR(o[7 * kN + i], tanh_ref, 1e-6 * (1 + std::fabs(x)));
    EXPECT_EQ(o[9 * kN + i], static_cast<float>(Half(x)));
    EXPECT_EQ(o[10 * kN + i], static_cast<float>(BFloat16(x)));
  }
  EXPECT_NEAR(o[8 * kN], sum, 1e-3);
  EXPECT_EQ(o[8 * kN + 1], mx);
}

// Mmad with fp16 / bf16 operands accumulates in float32; 2*M*N*K Cube FLOPs.
template <typename T>
void check_low_precision_mmad() {
  constexpr int64_t m = 17, n = 300, k = 45;  // n > the 256-column conversion chunk
  const auto ha = random_vec(m * k, 12), hb = random_vec(k * n, 13);
  std::vector<T> la(ha.begin(), ha.end()), lb(hb.begin(), hb.end());
  DeviceBuf<T> a(la), b(lb);
  DeviceBuf<float> c(std::vector<float>(m * n));
  T* pa = a.ptr;
  T* pb = b.ptr;
  float* pc = c.ptr;
  ASSERT_OK(npu_sim::device_synchronize(0));
  ASSERT_OK(npu_sim::set_launch_recording(true));
  npu_sim::clear_launch_records();
  ASSERT_OK(Launch(nullptr, "tile_mmad_low", 1, [=](TPipe& pipe) {
    auto ta = pipe.AllocTensor<T>(m * k, TPosition::A1), tb = pipe.AllocTensor<T>(k * n, TPosition::B1);
    auto tc = pipe.AllocTensor<float>(m * n, TPosition::CO1);
    auto tu = pipe.AllocTensor<float>(m * n, TPosition::VECOUT);
    DataCopy(ta, GlobalTensor<T>(pa, m * k), m * k);
    DataCopy(tb, GlobalTensor<T>(pb, k * n), k * n);
    Mmad(tc, ta, tb, MmadParams{m, n, 20, false});  // K in two steps: 20, then 25 accumulated
    Mmad(tc, ta[20], tb[20 * n], MmadParams{m, n, 25, true});
    DataCopy(tu, tc, m * n);  // CO1 -> UB, then out
    DataCopy(GlobalTensor<float>(pc, m * n), tu, m * n);
  }));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto recs = npu_sim::get_launch_records();
  ASSERT_OK(npu_sim::set_launch_recording(false));
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].cube_flops, 2u * m * n * k);
  // ta[20] as an m x 25 tile is not x's column block, so the reference is built the same way: rows of
  // a read from offset 20 with row length 25 (a view is a pointer shift; Mmad tiles are dense).
  const auto got = c.read();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < 20; ++p) s += double(float(la[i * 20 + p])) * float(lb[p * n + j]);
      for (int64_t p = 0; p < 25; ++p) s += double(float(la[20 + i * 25 + p])) * float(lb[(20 + p) * n + j]);
      ASSERT_NEAR(got[i * n + j], s, 1e-4) << i << "," << j;
    }
}
TEST(KernelsTile, MmadHalfAccumulatesInFloat) { check_low_precision_mmad<Half>(); }
TEST(KernelsTile, MmadBFloat16AccumulatesInFloat) { check_low_precision_mmad<BFloat16>(); }

// The vector template: double-buffered copy-in / compute / copy-out over a long vector with a tail. The
// two slots are distinct UB tiles, used alternately.
TEST(KernelsTile, DoubleBufferPipelinePingPongs) {
  constexpr int64_t kN = 10007, kTile = 1024;
  const auto h = random_vec(kN, 14);
  DeviceBuf<float> in(h), out{std::vector<float>(kN)};
  DeviceBuf<int64_t> slots(std::vector<int64_t>(2 * 10, -1));
  float* pi = in.ptr;
  float* po = out.ptr;
  int64_t* ps = slots.ptr;
  ASSERT_OK(Launch(nullptr, "tile_pipeline", 1, [=](TPipe& pipe) {
    GlobalTensor<float> gi(pi, kN), go(po, kN);
    DoubleBuffer<LocalTensor<float>> buf([&](int) { return pipe.AllocTensor<float>(kTile); });
    const int64_t steps = (kN + kTile - 1) / kTile;
    int64_t order = 0;
    buf.Run(
        steps, [&](int64_t k, LocalTensor<float>& t) { DataCopy(t, gi[k * kTile], std::min(kTile, kN - k * kTile)); },
        [&](int64_t k, LocalTensor<float>& t) {
          Muls(t, t, 2.0f, std::min(kTile, kN - k * kTile));
          ps[2 * k] = static_cast<int64_t>(t.data - static_cast<float*>(pipe.context().ub));
          ps[2 * k + 1] = order++;
        },
        [&](int64_t k, LocalTensor<float>& t) { DataCopy(go[k * kTile], t, std::min(kTile, kN - k * kTile)); });
  }));
  ASSERT_OK(npu_sim::device_synchronize(0));
  const auto o = out.read();
  for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(o[i], 2.0f * h[i]) << i;
  const auto s = slots.read();
  for (int64_t k = 0; k < 10; ++k) {  // 10007 elements: 9 full tiles and a tail
    EXPECT_EQ(s[2 * k], k % 2 == 0 ? 0 : kTile) << "step " << k << " uses slot " << k % 2;
    EXPECT_EQ(s[2 * k + 1], k);
  }
}

// The Cube buffers: L1 and L0C budgets (910B defaults), each its own allocator; Mmad wants A1 / B1 / CO1
// tiles, the Vector ops UB tiles.
TEST(KernelsTile, CubeBuffersAndPositions) {
  EXPECT_EQ(L1Bytes(), std::size_t{512} << 10);
  EXPECT_EQ(L0CBytes(), std::size_t{128} << 10);
  ASSERT_OK(Launch(nullptr, "tile_cube_budget", 2, [](TPipe& pipe) {
    if (pipe.budget(Buffer::kL1) != L1Bytes() || pipe.budget(Buffer::kL0C) != L0CBytes()) pipe.fail("budgets");
    auto a = pipe.AllocTensor<float>(L1Bytes() / 8, TPosition::A1);
    auto b = pipe.AllocTensor<float>(L1Bytes() / 8, TPosition::B1);  // A1 and B1 share L1: now full
    auto c = pipe.AllocTensor<float>(L0CBytes() / 4, TPosition::CO1);
    if (pipe.used(Buffer::kL1) != L1Bytes() || pipe.used(Buffer::kL0C) != L0CBytes() || pipe.used() != 0) {
      pipe.fail("used");
    }
    if (a.pos != TPosition::A1 || b.pos != TPosition::B1 || c.pos != TPosition::CO1) pipe.fail("positions");
    pipe.Reset();
    if (pipe.used(Buffer::kL1) != 0 || pipe.used(Buffer::kL0C) != 0) pipe.fail("reset");
  }));
  EXPECT_EQ(sync_error(), "");
  ASSERT_OK(Launch(nullptr, "tile_mmad_in_ub", 1, [](TPipe& pipe) {
    auto a = pipe.AllocTensor<float>(4), b = pipe.AllocTensor<float>(4), c = pipe.AllocTensor<float>(4);
    Mmad(c, a, b, MmadParams{2, 2, 2, false});
  }));
  std::string msg = sync_error();
  EXPECT_EQ(msg.rfind("kernel 'tile_mmad_in_ub' failed: Mmad takes its operands from L1 (A1 / B1) and accumulates "
                      "in L0C (CO1)",
                      0),
            0u)
      << msg;
  ASSERT_OK(Launch(nullptr, "tile_gelu_in_l0c", 1, [](TPipe& pipe) {
    auto c = pipe.AllocTensor<float>(4, TPosition::CO1);
    Gelu(c, c, 4);
  }));
  msg = sync_error();
  EXPECT_EQ(msg.rfind("kernel 'tile_gelu_in_l0c' failed: Gelu: the Vector unit works on UB tiles only (copy a CO1 "
                      "tile to the UB first)",
                      0),
            0u)
      << msg;
}

// The budget is the block's UB size; DataCopy ranges are checked.
TEST(KernelsTile, BudgetAndRangeChecks) {
  npu_sim::DeviceProperties props{};
  ASSERT_OK(npu_sim::get_device_properties(0, &props));
  EXPECT_EQ(props.ub_bytes, std::size_t{192} << 10);
  ASSERT_OK(Launch(nullptr, "tile_budget", 2, [ub = props.ub_bytes](TPipe& pipe) {
    if (pipe.budget() != ub) pipe.fail("budget " + std::to_string(pipe.budget()));
    auto t = pipe.AllocTensor<float>(ub / sizeof(float));  // the whole UB fits exactly
    if (pipe.used() != ub || t.size != int64_t(ub / 4)) pipe.fail("used " + std::to_string(pipe.used()));
    pipe.Reset();
    TBuf buf;
    pipe.InitBuffer(buf, 100);
    if (buf.Get<float>().size != 25) pipe.fail("TBuf");
  }));
  EXPECT_EQ(sync_error(), "");
  DeviceBuf<float> g(std::vector<float>(100));
  float* pg = g.ptr;
  ASSERT_OK(Launch(nullptr, "tile_bad_copy", 1, [=](TPipe& pipe) {
    auto t = pipe.AllocTensor<float>(64);
    DataCopy(t, GlobalTensor<float>(pg, 100), DataCopyParams2D{4, 16, 30, 16});  // needs 3 * 30 + 16 = 106
  }));
  const std::string msg = sync_error();
  EXPECT_EQ(msg.rfind("kernel 'tile_bad_copy' failed: DataCopy of 4 x 16 elements needs 106 of the global tensor "
                      "(has 100)",
                      0),
            0u)
      << msg;
}
