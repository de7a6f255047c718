// kernels: the launch records (GM bytes read / written, Vector FLOPs) of the kernels outside the
// elementwise engine and the tile layer, one representative launch per family on a small float32 case.
// Every expected byte count is derived in a comment from the sizes and the model stated at the kernel.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "npu_kernels/amp.h"
#include "npu_kernels/fold.h"
#include "npu_kernels/index.h"
#include "npu_kernels/nn.h"
#include "npu_kernels/optim.h"
#include "npu_kernels/pool.h"
#include "npu_kernels/random.h"
#include "npu_kernels/reduce.h"
#include "npu_kernels/resample.h"
#include "npu_kernels/rnn.h"
#include "test_kernels_util.h"

using namespace npu_kernels;

namespace {

constexpr uint64_t F = sizeof(float);  // 4
constexpr uint64_t I64 = 8;            // an int64 index

// The records of the launches `enqueue` makes (recording on only around them).
std::vector<npu_sim::LaunchRecord> records_of(const std::function<void()>& enqueue) {
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kSuccess);
  EXPECT_EQ(npu_sim::set_launch_recording(true), npu_sim::Status::kSuccess);
  npu_sim::clear_launch_records();
  enqueue();
  EXPECT_EQ(npu_sim::device_synchronize(0), npu_sim::Status::kSuccess);
  auto recs = npu_sim::get_launch_records();
  EXPECT_EQ(npu_sim::set_launch_recording(false), npu_sim::Status::kSuccess);
  npu_sim::clear_launch_records();
  for (const auto& r : recs) EXPECT_FALSE(r.failed) << r.kernel;
  return recs;
}

// The one record named `name` (a failure when there is not exactly one).
npu_sim::LaunchRecord only(const std::vector<npu_sim::LaunchRecord>& recs, const std::string& name) {
  const npu_sim::LaunchRecord* found = nullptr;
  int n = 0;
  for (const auto& r : recs) {
    if (r.kernel == name) {
      found = &r;
      ++n;
    }
  }
  EXPECT_EQ(n, 1) << name;
  return found ? *found : npu_sim::LaunchRecord{};
}

void expect_record(const npu_sim::LaunchRecord& r, uint64_t read, uint64_t write) {
  EXPECT_EQ(r.gm_read, read) << r.kernel;
  EXPECT_EQ(r.gm_write, write) << r.kernel;
  EXPECT_EQ(r.cube_flops, 0u) << r.kernel;
  EXPECT_GT(r.vector_flops, 0u) << r.kernel;
}

TensorDesc desc(void* data, DType t, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  TensorDesc d;
  d.data = data;
  d.dtype = t;
  d.ndim = static_cast<int>(sizes.size());
  for (int i = 0; i < d.ndim; ++i) {
    d.sizes[i] = sizes[i];
    d.strides[i] = strides[i];
  }
  return d;
}

std::vector<float> ramp(std::size_t n, float scale = 0.1f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i % 7) - 0.2f;
  return v;
}

// A contiguous (rows, cols) float input reduced over dim `red` into a contiguous output.
ReduceDesc reduce_2d(const void* in, void* out, int64_t rows, int64_t cols, int red) {
  ReduceDesc d;
  d.in = in;
  d.dtype = DType::kFloat32;
  d.n_outer = 1;
  d.n_red = 1;
  d.outer_sizes[0] = red == 1 ? rows : cols;
  d.in_outer_strides[0] = red == 1 ? cols : 1;
  d.out_strides[0][0] = 1;
  d.red_sizes[0] = red == 1 ? cols : rows;
  d.red_strides[0] = red == 1 ? 1 : cols;
  d.out[0] = out;
  return d;
}

}  // namespace

// sum over the last dim of a (4, 6) tensor: one output per row (the per-output split). Every input
// element read once: 4 x 6 x 4 B = 96; 4 outputs written: 16 B; 24 Vector ops (one per input element).
TEST(KernelsLaunchTraffic, SumOverLastDim) {
  DeviceBuf<float> x(ramp(24)), out{std::vector<float>(4)};
  const auto recs = records_of([&] { ASSERT_OK(reduce(nullptr, ReduceOp::kSum, reduce_2d(x.ptr, out.ptr, 4, 6, 1))); });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(only(recs, "sum"), 4 * 6 * F, 4 * F);
  EXPECT_EQ(recs[0].vector_flops, 24u);
}

// sum over the first dim of a (4, 6) tensor: 6 outputs along a contiguous kept dim (the tiled split).
// Reads 96 B as above; 6 outputs written: 24 B.
TEST(KernelsLaunchTraffic, SumOverFirstDimTiled) {
  DeviceBuf<float> x(ramp(24)), out{std::vector<float>(6)};
  const auto recs = records_of([&] { ASSERT_OK(reduce(nullptr, ReduceOp::kSum, reduce_2d(x.ptr, out.ptr, 4, 6, 0))); });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(recs[0], 4 * 6 * F, 6 * F);
}

// argmax's output is an int64 index: (4, 6) over the last dim reads 96 B and writes 4 x 8 = 32 B.
TEST(KernelsLaunchTraffic, ArgmaxWritesIndices) {
  DeviceBuf<float> x(ramp(24));
  DeviceBuf<int64_t> out{std::vector<int64_t>(4)};
  const auto recs = records_of([&] { ASSERT_OK(reduce(nullptr, ReduceOp::kArgmax, reduce_2d(x.ptr, out.ptr, 4, 6, 1))); });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(recs[0], 4 * 6 * F, 4 * I64);
}

// A full sum of 65536 elements: the two-phase split (Rn >= 2 x 32768 with one output) into
// parts = min(65536 / 32768, blocks + 1) = 2 partial states. Phase 1 reads the input once
// (65536 x 4 = 262144 B) and writes 2 float partials (8 B); phase 2 reads them (8 B) and writes the sum (4 B).
TEST(KernelsLaunchTraffic, FullSumTwoPhases) {
  constexpr int64_t n = 65536;
  DeviceBuf<float> x{std::vector<float>(n, 1.0f)}, out{std::vector<float>(1)};
  ReduceDesc d;
  d.in = x.ptr;
  d.n_red = 1;
  d.red_sizes[0] = n;
  d.red_strides[0] = 1;
  d.out[0] = out.ptr;
  const auto recs = records_of([&] { ASSERT_OK(reduce(nullptr, ReduceOp::kSum, d)); });
  ASSERT_EQ(recs.size(), 2u);
  expect_record(recs[0], n * F, 2 * F);
  expect_record(recs[1], 2 * F, F);
  EXPECT_EQ(recs[0].vector_flops, static_cast<uint64_t>(n));
  EXPECT_EQ(out.read()[0], 65536.0f);
}

// cumsum of (3, 5) along the last dim: 15 elements read (60 B) and written (60 B).
TEST(KernelsLaunchTraffic, Cumsum) {
  DeviceBuf<float> x(ramp(15)), out{std::vector<float>(15)};
  ScanDesc d;
  d.in = x.ptr;
  d.out = out.ptr;
  d.outer = 3;
  d.n = 5;
  d.inner = 1;
  d.in_strides[0] = d.out_strides[0] = 5;
  d.in_strides[1] = d.out_strides[1] = 1;
  d.in_strides[2] = d.out_strides[2] = 1;
  const auto recs = records_of([&] { ASSERT_OK(scan(nullptr, ScanOp::kCumsum, d)); });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(only(recs, "cumsum"), 15 * F, 15 * F);
}

// softmax over rows of a (3, 8) tensor: each line read once into the block's buffer (3 x 8 x 4 = 96 B),
// written once (96 B). Backward reads grad and output (2 x 96 = 192 B) and writes grad_in (96 B).
TEST(KernelsLaunchTraffic, SoftmaxForwardAndBackward) {
  DeviceBuf<float> x(ramp(24)), y{std::vector<float>(24)}, g(ramp(24, 0.05f)), gi{std::vector<float>(24)};
  SoftmaxDesc f;
  f.in = x.ptr;
  f.out = y.ptr;
  f.outer = 3;
  f.n = 8;
  SoftmaxBackwardDesc b;
  b.grad = g.ptr;
  b.output = y.ptr;
  b.grad_in = gi.ptr;
  b.outer = 3;
  b.n = 8;
  const auto recs = records_of([&] {
    ASSERT_OK(softmax(nullptr, f));
    ASSERT_OK(softmax_backward(nullptr, b));
  });
  ASSERT_EQ(recs.size(), 2u);
  expect_record(only(recs, "softmax"), 96, 96);
  expect_record(only(recs, "softmax_backward"), 192, 96);
  EXPECT_EQ(only(recs, "softmax").vector_flops, 5u * 24);
}

// layer_norm of a (3, 8) tensor with weight and bias, saving mean and rstd.
//   forward:  per row x read 3 times (sum, squared deviations, normalise) plus weight and bias (re-read per
//             row): (3 + 2) x 8 x 4 = 160 B; x 3 rows = 480 B. Written: y 8 x 4 + mean + rstd 2 x 4 = 40 B
//             per row = 120 B.
//   backward (float rows read in place, two passes: the sums with the parameter sums, then dx): per row x, dy
//             and weight in each pass, mean and rstd: (6 x 8 + 2) x 4 = 200 B;
//             x 3 rows = 600 B read; per block of one row (3 rows need no more) dx 8 x 4 and its workspace slot
//             (dweight and dbias sums) 2 x 8 x 4: 96 B, x 3 = 288 B written.
//   params:   one tile of the 8 columns adds the 3 blocks' slots: 3 x 2 x 8 x 4 = 192 B read; dweight and dbias
//             2 x 8 x 4 = 64 B written.
TEST(KernelsLaunchTraffic, LayerNormForwardAndBackward) {
  constexpr int64_t M = 3, N = 8;
  DeviceBuf<float> x(ramp(M * N)), w{std::vector<float>(N, 1.5f)}, bias{std::vector<float>(N, 0.25f)};
  DeviceBuf<float> y{std::vector<float>(M * N)}, mean{std::vector<float>(M)}, rstd{std::vector<float>(M)};
  DeviceBuf<float> dy(ramp(M * N, 0.3f)), dx{std::vector<float>(M * N)}, dw{std::vector<float>(N)},
      db{std::vector<float>(N)};
  LayerNormDesc d;
  d.M = M;
  d.N = N;
  d.x = x.ptr;
  d.weight = w.ptr;
  d.bias = bias.ptr;
  d.y = y.ptr;
  d.mean = mean.ptr;
  d.rstd = rstd.ptr;
  d.dy = dy.ptr;
  d.dx = dx.ptr;
  d.dweight = dw.ptr;
  d.dbias = db.ptr;
  const auto recs = records_of([&] {
    ASSERT_OK(layer_norm(nullptr, d));
    ASSERT_OK(layer_norm_backward(nullptr, d));
  });
  ASSERT_EQ(recs.size(), 3u);
  expect_record(only(recs, "layer_norm"), 480, 120);
  expect_record(only(recs, "layer_norm_backward"), 600, 288);
  expect_record(only(recs, "layer_norm_backward_params"), 192, 64);
}

// nll_loss (mean, class weights) over N = 4 samples of C = 5 classes, one target ignored.
//   forward:  4 int64 targets (32 B) + for the 3 samples not ignored one input element and one weight
//             (3 x 2 x 4 = 24 B) = 56 B read; the loss and the total weight written: 8 B.
//   backward: 4 targets (32 B) + per sample not ignored grad_out (the scalar) and its weight (24 B) +
//             total_weight once (4 B) = 60 B read; the (4, 5) grad_in zeroed (80 B) and 3 target elements
//             written again (12 B) = 92 B.
TEST(KernelsLaunchTraffic, NllLoss) {
  constexpr int64_t N = 4, C = 5;
  DeviceBuf<float> x(ramp(N * C)), w(std::vector<float>{1, 2, 3, 4, 5}), out{std::vector<float>(1)},
      tw{std::vector<float>(1)}, go(std::vector<float>{1.0f}), gi{std::vector<float>(N * C)};
  DeviceBuf<int64_t> t(std::vector<int64_t>{0, 4, -100, 2});
  NllLossDesc d;
  d.N = N;
  d.C = C;
  d.reduction = 1;
  d.input = x.ptr;
  d.target = t.ptr;
  d.weight = w.ptr;
  d.out = out.ptr;
  d.total_weight = tw.ptr;
  d.grad_out = go.ptr;
  d.total_weight_in = tw.ptr;
  d.grad_in = gi.ptr;
  const auto recs = records_of([&] {
    ASSERT_OK(nll_loss_forward(nullptr, d));
    ASSERT_OK(nll_loss_backward(nullptr, d));
  });
  ASSERT_EQ(recs.size(), 2u);
  expect_record(only(recs, "nll_loss_forward"), 4 * I64 + 3 * 2 * F, 2 * F);
  expect_record(only(recs, "nll_loss_backward"), 4 * I64 + 3 * 2 * F + F, (N * C + 3) * F);
}

// batch_norm (training) of N = 2, C = 3, HW = 4 (cnt = 8 per channel) with weight, bias, running stats and
// saved stats. Per channel: x read 3 times (3 x 8 x 4 = 96 B), weight, bias and the two running stats one
// value each (16 B): 112 B, x 3 = 336 B. Written per channel: y (32 B), the running stats and the saved
// stats (16 B): 48 B, x 3 = 144 B.
TEST(KernelsLaunchTraffic, BatchNormTraining) {
  constexpr int64_t N = 2, C = 3, HW = 4;
  DeviceBuf<float> x(ramp(N * C * HW)), y{std::vector<float>(N * C * HW)}, w{std::vector<float>(C, 1.0f)},
      b{std::vector<float>(C, 0.0f)}, rm{std::vector<float>(C, 0.0f)}, rv{std::vector<float>(C, 1.0f)},
      sm{std::vector<float>(C)}, si{std::vector<float>(C)};
  BatchNormDesc d;
  d.N = N;
  d.C = C;
  d.HW = HW;
  d.x = x.ptr;
  d.y = y.ptr;
  d.weight = w.ptr;
  d.bias = b.ptr;
  d.running_mean = rm.ptr;
  d.running_var = rv.ptr;
  d.save_mean = sm.ptr;
  d.save_invstd = si.ptr;
  const auto recs = records_of([&] { ASSERT_OK(batch_norm(nullptr, d)); });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(only(recs, "batch_norm"), 336, 144);
}

// max_pool2d 2x2 / stride 2 over 2 planes of 4 x 4: 2 x 2 outputs per plane, each window 4 in-bounds taps
// (16 per plane): 2 x 16 x 4 = 128 B read; per output a value and an int64 index: 2 x 4 x 12 = 96 B
// written. Vector ops: one compare per tap, 32.
TEST(KernelsLaunchTraffic, MaxPool2d) {
  DeviceBuf<float> x(ramp(32)), y{std::vector<float>(8)};
  DeviceBuf<int64_t> ix{std::vector<int64_t>(8)};
  Pool2dArgs a;
  a.planes = 2;
  a.in_h = a.in_w = 4;
  a.out_h = a.out_w = 2;
  a.kernel_h = a.kernel_w = a.stride_h = a.stride_w = 2;
  const auto recs = records_of([&] { ASSERT_OK(max_pool2d(nullptr, a, x.ptr, y.ptr, ix.ptr)); });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(only(recs, "max_pool2d"), 128, 96);
  EXPECT_EQ(recs[0].vector_flops, 32u);
}

// Bilinear upsampling of one 2 x 2 plane to 4 x 4. Per output row: its two int64 row taps and two float
// weights (2 x (8 + 4) = 24 B); per output element: the two column taps and weights (24 B, re-read every
// row) and four input elements (16 B). 4 rows x 24 + 16 x (24 + 16) = 96 + 640 = 736 B read; 16 x 4 = 64 B
// written.
TEST(KernelsLaunchTraffic, UpsampleBilinear) {
  DeviceBuf<float> x(std::vector<float>{1, 2, 3, 4}), y{std::vector<float>(16)};
  ResampleArgs a;
  a.mode = ResampleMode::kLinear;
  a.planes = 1;
  a.h.in = a.w.in = 2;
  a.h.out = a.w.out = 4;
  const auto recs = records_of([&] { ASSERT_OK(resample(nullptr, a, x.ptr, y.ptr)); });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(only(recs, "upsample_linear"), 736, 64);
}

// Antialiased bilinear, one 1 x 4 row to 1 x 2 (scale 2: the triangle widened to support 2, windows of up to 5).
// Output 0 (centre 1) reads inputs 0..2, output 1 (centre 3) inputs 1..3: 6 taps, each an element and a float
// weight (6 x 8 = 48 B), plus each window's int64 start and size (2 x 16 = 32 B): 80 B read; 2 x 4 = 8 B
// written; 2 Vector ops per tap. The h axis is unchanged, so its pass is skipped (ATen's order).
TEST(KernelsLaunchTraffic, UpsampleBilinearAntialiased) {
  DeviceBuf<float> x(std::vector<float>{1, 2, 3, 4}), y{std::vector<float>(2)};
  ResampleArgs a;
  a.mode = ResampleMode::kLinearAA;
  a.planes = 1;
  a.w.in = 4;
  a.w.out = 2;
  const auto recs = records_of([&] { ASSERT_OK(resample(nullptr, a, x.ptr, y.ptr)); });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(only(recs, "upsample_bilinear_aa"), 80, 8);
  EXPECT_EQ(recs[0].vector_flops, 12u);
}

// gather along dim 1 of a 3 x 4 source with a 3 x 2 index: per element its int64 index and one source
// element read (6 x 12 = 72 B), one element written (6 x 4 = 24 B).
TEST(KernelsLaunchTraffic, GatherAlongDim) {
  DeviceBuf<float> s(ramp(12)), out{std::vector<float>(6)};
  DeviceBuf<int64_t> ix(std::vector<int64_t>{3, 0, 1, 1, 2, 3});
  IndexAlongDim g;
  g.op = "gather";
  g.dim = 1;
  g.dst = desc(out.ptr, DType::kFloat32, {3, 2}, {2, 1});
  g.src = desc(s.ptr, DType::kFloat32, {3, 2}, {4, 0});
  g.index = desc(ix.ptr, DType::kInt64, {3, 2}, {2, 1});
  g.dim_size = 4;
  g.dim_stride = 1;
  const auto recs = records_of([&] { ASSERT_OK(index_along_dim(nullptr, g)); });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(only(recs, "gather"), 6 * (I64 + F), 6 * F);
}

// sort of 2 lines of 5: per line its 5 keys read into a buffer, then the 5 values read again by position
// (10 x 4 = 40 B); 5 values and 5 int64 indices written (5 x 12 = 60 B). Two lines: 80 B / 120 B.
TEST(KernelsLaunchTraffic, SortLines) {
  DeviceBuf<float> x(std::vector<float>{3, 1, 4, 1, 5, 9, 2, 6, 5, 3}), v{std::vector<float>(10)};
  DeviceBuf<int64_t> ix{std::vector<int64_t>(10)};
  const auto recs = records_of([&] {
    ASSERT_OK(sort_lines(nullptr, desc(x.ptr, DType::kFloat32, {2, 5}, {5, 1}), 1, false,
                         desc(v.ptr, DType::kFloat32, {2, 5}, {5, 1}), desc(ix.ptr, DType::kInt64, {2, 5}, {5, 1}), 5,
                         "sort"));
  });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(only(recs, "sort"), 80, 120);
  EXPECT_EQ(v.read(), (std::vector<float>{1, 1, 3, 4, 5, 2, 3, 5, 6, 9}));
}

// A uniform fill of 100 floats writes 400 B and reads nothing.
TEST(KernelsLaunchTraffic, RandomFillWritesOnly) {
  DeviceBuf<float> out{std::vector<float>(100)};
  RandomArgs args;
  const auto recs = records_of([&] {
    ASSERT_OK(random_fill(nullptr, desc(out.ptr, DType::kFloat32, {100}, {1}), args, {7, 8}));
  });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(only(recs, "random"), 0, 400);
}

// A fused AdamW step over two parameters of 3 and 5 elements (8 in one block; no amsgrad, grad_scale, lr
// tensor or found_inf). Per element param, grad, exp_avg, exp_avg_sq read (8 x 4 x 4 = 128 B) and param,
// exp_avg, exp_avg_sq written (8 x 3 x 4 = 96 B); per tensor its float32 step read (2 x 4 = 8 B): 136 B.
TEST(KernelsLaunchTraffic, FusedAdamW) {
  DeviceBuf<float> p0(ramp(3)), g0(ramp(3, 0.2f)), m0{std::vector<float>(3)}, v0{std::vector<float>(3)};
  DeviceBuf<float> p1(ramp(5)), g1(ramp(5, 0.2f)), m1{std::vector<float>(5)}, v1{std::vector<float>(5)};
  DeviceBuf<float> step(std::vector<float>{1.0f, 1.0f});
  OptimLists l;
  l.param = {p0.ptr, p1.ptr};
  l.grad = {g0.ptr, g1.ptr};
  l.state1 = {m0.ptr, m1.ptr};
  l.state2 = {v0.ptr, v1.ptr};
  l.step = {step.ptr, step.ptr + 1};
  l.numel = {3, 5};
  const AdamHyper h{1e-3, 0.9, 0.999, 0.01, 1e-8, false, false, true};
  const auto recs = records_of([&] { ASSERT_OK(fused_adam(nullptr, l, h, OptimScalars{})); });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(only(recs, "fused_adamw"), 8 * 4 * F + 2 * F, 8 * 3 * F);
}

// An LSTM cell, batch 2, H = 3, both biases: per (row, unit) 4 + 4 gate elements, 4 + 4 bias elements and
// the previous cell state read (17 x 4 = 68 B), cy, hy and the 4 saved gates written (6 x 4 = 24 B);
// 6 cells: 408 B / 144 B.
TEST(KernelsLaunchTraffic, LstmCell) {
  constexpr int64_t B = 2, H = 3;
  DeviceBuf<float> ig(ramp(B * 4 * H)), hg(ramp(B * 4 * H, 0.05f)), ib(ramp(4 * H)), hb(ramp(4 * H)), cx(ramp(B * H));
  DeviceBuf<float> hy{std::vector<float>(B * H)}, cy{std::vector<float>(B * H)}, ws{std::vector<float>(B * 4 * H)};
  RnnCellDesc d;
  d.batch = B;
  d.H = H;
  d.input_gates = ig.ptr;
  d.hidden_gates = hg.ptr;
  d.input_bias = ib.ptr;
  d.hidden_bias = hb.ptr;
  d.prev = cx.ptr;
  d.hy = hy.ptr;
  d.cy = cy.ptr;
  d.workspace = ws.ptr;
  const auto recs = records_of([&] { ASSERT_OK(lstm_cell(nullptr, d)); });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(only(recs, "lstm_cell"), 6 * 17 * F, 6 * 6 * F);
}

// AMP unscale of 10 finite float grads in one block: inv_scale read once (4 B) and every grad read and
// written back (40 B each); found_inf is not written (no inf/NaN): 44 B / 40 B.
TEST(KernelsLaunchTraffic, AmpUnscale) {
  DeviceBuf<float> g(ramp(10)), found(std::vector<float>{0.0f}), inv(std::vector<float>{0.5f});
  const auto recs = records_of([&] {
    ASSERT_OK(amp_unscale(nullptr, desc(g.ptr, DType::kFloat32, {10}, {1}), found.ptr, inv.ptr));
  });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(only(recs, "amp_unscale"), F + 10 * F, 10 * F);
  EXPECT_EQ(found.read()[0], 0.0f);
}

// mse_loss over 10 elements: input and target read (2 x 10 x 4 = 80 B), the losses written (40 B). Its
// backward with a broadcast scalar grad (grad_stride 0, re-read per element): grad, input and target
// (3 x 40 = 120 B) read, grad_in (40 B) written.
TEST(KernelsLaunchTraffic, MseLossForwardAndBackward) {
  DeviceBuf<float> x(ramp(10)), t(ramp(10, 0.3f)), out{std::vector<float>(10)}, g{std::vector<float>{1.0f}},
      gi{std::vector<float>(10)};
  PointLossDesc d;
  d.n = 10;
  d.input = x.ptr;
  d.target = t.ptr;
  d.out = out.ptr;
  d.grad = g.ptr;
  d.grad_stride = 0;
  d.grad_in = gi.ptr;
  const auto recs = records_of([&] {
    ASSERT_OK(pointwise_loss(nullptr, LossKind::kMse, d));
    ASSERT_OK(pointwise_loss_backward(nullptr, LossKind::kMse, d));
  });
  ASSERT_EQ(recs.size(), 2u);
  expect_record(only(recs, "mse_loss"), 80, 40);
  expect_record(only(recs, "mse_loss_backward"), 120, 40);
}

// im2col / col2im of one 3 x 3 plane, 2 x 2 kernel, padding 1, stride 1: 4 x 4 window positions, 4 taps
// each = 64 column elements. A tap is inside when its row and column are: per axis the kernel offsets 0
// and 1 over the 4 positions hit rows -1..2 and 0..3, 3 + 3 = 6 inside; 6 x 6 = 36 inside taps.
//   im2col: 36 x 4 = 144 B read (padding taps read nothing), 64 x 4 = 256 B written.
//   col2im: the 36 inside column elements read (144 B), the 3 x 3 plane written (36 B).
TEST(KernelsLaunchTraffic, Im2colAndCol2imWithPadding) {
  DeviceBuf<float> img(ramp(9)), cols{std::vector<float>(64)}, back{std::vector<float>(9)};
  FoldArgs a;
  a.planes = 1;
  a.in_h = a.in_w = 3;
  a.out_h = a.out_w = 4;
  a.kernel_h = a.kernel_w = 2;
  a.pad_h = a.pad_w = 1;
  const auto recs = records_of([&] {
    ASSERT_OK(im2col(nullptr, a, img.ptr, cols.ptr));
    ASSERT_OK(col2im(nullptr, a, cols.ptr, back.ptr));
  });
  ASSERT_EQ(recs.size(), 2u);
  expect_record(only(recs, "im2col"), 144, 256);
  expect_record(only(recs, "col2im"), 144, 36);
}

// dropout of 100 floats: the input read (400 B), the output (400 B) and the bool mask (100 B) written.
TEST(KernelsLaunchTraffic, Dropout) {
  DeviceBuf<float> x(ramp(100)), y{std::vector<float>(100)};
  DeviceBuf<uint8_t> mask{std::vector<uint8_t>(100)};
  const auto recs = records_of([&] {
    ASSERT_OK(dropout(nullptr, desc(y.ptr, DType::kFloat32, {100}, {1}), reinterpret_cast<bool*>(mask.ptr),
                      desc(x.ptr, DType::kFloat32, {100}, {1}), 0.5, 2.0, {3, 4}));
  });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(only(recs, "native_dropout"), 400, 500);
}

// A fused SGD step with momentum (not the first step) over 3 + 5 elements: param, grad and the momentum
// buffer read (8 x 3 x 4 = 96 B), param and buffer written (8 x 2 x 4 = 64 B); no device scalars.
TEST(KernelsLaunchTraffic, FusedSgdMomentum) {
  DeviceBuf<float> p0(ramp(3)), g0(ramp(3, 0.2f)), b0(ramp(3, 0.01f)), p1(ramp(5)), g1(ramp(5, 0.2f)),
      b1(ramp(5, 0.01f));
  OptimLists l;
  l.param = {p0.ptr, p1.ptr};
  l.grad = {g0.ptr, g1.ptr};
  l.state1 = {b0.ptr, b1.ptr};
  l.numel = {3, 5};
  const SgdHyper h{0.0, 0.9, 0.1, 0.0, false, false, false};
  const auto recs = records_of([&] { ASSERT_OK(fused_sgd(nullptr, l, h, OptimScalars{})); });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(only(recs, "fused_sgd"), 96, 64);
}

// topk (k = 2) of 2 lines of 5: per line 5 keys plus the 2 kept values read again (7 x 4 = 28 B), 2 values
// and 2 int64 indices written (2 x 12 = 24 B). Two lines: 56 B / 48 B.
TEST(KernelsLaunchTraffic, Topk) {
  DeviceBuf<float> x{std::vector<float>{3, 1, 4, 1, 5, 9, 2, 6, 5, 3}}, v{std::vector<float>(4)};
  DeviceBuf<int64_t> ix{std::vector<int64_t>(4)};
  const auto recs = records_of([&] {
    ASSERT_OK(sort_lines(nullptr, desc(x.ptr, DType::kFloat32, {2, 5}, {5, 1}), 1, true,
                         desc(v.ptr, DType::kFloat32, {2, 2}, {2, 1}), desc(ix.ptr, DType::kInt64, {2, 2}, {2, 1}), 2,
                         "topk"));
  });
  ASSERT_EQ(recs.size(), 1u);
  expect_record(only(recs, "topk"), 56, 48);
  EXPECT_EQ(v.read(), (std::vector<float>{5, 4, 9, 6}));
}

// Recording off: the same launches record nothing (the buffer stays empty).
TEST(KernelsLaunchTraffic, NothingRecordedWhenOff) {
  DeviceBuf<float> x(ramp(24)), out{std::vector<float>(4)};
  ASSERT_OK(npu_sim::device_synchronize(0));
  ASSERT_OK(npu_sim::set_launch_recording(false));
  npu_sim::clear_launch_records();
  ASSERT_OK(reduce(nullptr, ReduceOp::kSum, reduce_2d(x.ptr, out.ptr, 4, 6, 1)));
  ASSERT_OK(npu_sim::device_synchronize(0));
  EXPECT_TRUE(npu_sim::get_launch_records().empty());
}
