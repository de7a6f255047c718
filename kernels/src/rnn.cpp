// Fused LSTM / GRU cell kernels: gate activations and state update per row, float accumulation for
// float16/bfloat16, rows split over the AI cores.
#include <algorithm>
#include <cmath>

#include "fast_math.h"
#include "npu_kernels/float_dispatch.h"
#include "npu_kernels/launch.h"
#include "traffic.h"
#include "npu_kernels/rnn.h"

namespace npu_kernels {
namespace {

template <typename T>
inline acc_t<T> ld(const void* p, int64_t i) {
  return static_cast<acc_t<T>>(static_cast<const T*>(p)[i]);
}
template <typename T>
inline acc_t<T> ld_or0(const void* p, int64_t i) {
  return p ? ld<T>(p, i) : acc_t<T>(0);
}
template <typename T>
inline void st(void* p, int64_t i, acc_t<T> v) {
  static_cast<T*>(p)[i] = convert<T>(v);
}
using detail::fast_sigmoid;
using detail::fast_tanh;

// What one (row, hidden unit) cell costs in the launch records: elements (of the cell's dtype) read and
// written in GM, and Vector ops (an activation counts as 4: exp, add, divide or the tanh equivalent).
struct CellCost {
  int64_t rd, wr, ops;
};
inline int64_t opt(const void* p, int64_t n) { return p != nullptr ? n : 0; }

// Runs cell(T{}, d, row, j) for every (row, hidden unit) of the batch, rows split over the AI cores.
template <class Desc, class Cell>
npu_sim::Status over_cells(npu_sim::Stream stream, const char* name, const Desc& d, CellCost cost, Cell cell) {
  if (d.batch == 0 || d.H == 0) return npu_sim::Status::kSuccess;
  const int64_t grain = std::max<int64_t>(1, (1 << 13) / d.H);
  return dispatch_fp(d.dtype, [&](auto tag) {
    return parallel_for(stream, name, d.batch, grain, [d, cell, tag, cost](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
      const int64_t cells = (e - b) * d.H, es = sizeof(decltype(tag));
      detail::record_vec(ctx, cells * cost.rd * es, cells * cost.wr * es, cells * cost.ops);
      for (int64_t r = b; r < e; ++r) {
        for (int64_t j = 0; j < d.H; ++j) cell(tag, d, r, j);
      }
    });
  });
}

}  // namespace

npu_sim::Status lstm_cell(npu_sim::Stream stream, const RnnCellDesc& d) {
  // Per cell: 4 input-gate and 4 hidden-gate elements, the 4 biases of each kind when given, and the
  // previous cell state read; cy, hy and the 4 saved gates written. 36 Vector ops (12 adds, 5 activations,
  // the state update's 3 and hy's multiply).
  const CellCost cost{9 + opt(d.input_bias, 4) + opt(d.hidden_bias, 4), 6, 36};
  return over_cells(stream, "lstm_cell", d, cost, [](auto tag, const RnnCellDesc& d, int64_t r, int64_t j) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const int64_t H = d.H, G = 4 * H;
    A gate[4];
    for (int k = 0; k < 4; ++k) {
      const int64_t c = k * H + j;
      gate[k] = ld<T>(d.input_gates, r * G + c) + ld<T>(d.hidden_gates, r * G + c) +
                ld_or0<T>(d.input_bias, c) + ld_or0<T>(d.hidden_bias, c);
    }
    const A i = fast_sigmoid(gate[0]), f = fast_sigmoid(gate[1]), g = fast_tanh(gate[2]), o = fast_sigmoid(gate[3]);
    const A c = f * ld<T>(d.prev, r * H + j) + i * g;
    st<T>(d.cy, r * H + j, c);
    st<T>(d.hy, r * H + j, o * fast_tanh(c));
    st<T>(d.workspace, r * G + j, i);
    st<T>(d.workspace, r * G + H + j, f);
    st<T>(d.workspace, r * G + 2 * H + j, g);
    st<T>(d.workspace, r * G + 3 * H + j, o);
  });
}

npu_sim::Status lstm_cell_backward(npu_sim::Stream stream, const RnnCellBackwardDesc& d) {
  // Per cell: the 4 saved gates, cy and cx, grad_hy and grad_cy when given read; the 4 gate grads and
  // grad_prev written. 30 Vector ops (one tanh, ~25 multiplies and subtracts).
  const CellCost cost{6 + opt(d.grad_hy, 1) + opt(d.grad_cy, 1), 5, 30};
  return over_cells(stream, "lstm_cell_backward", d, cost, [](auto tag, const RnnCellBackwardDesc& d, int64_t r, int64_t j) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const int64_t H = d.H, G = 4 * H;
    const int64_t s = r * H + j, w = r * G + j;
    const A i = ld<T>(d.workspace, w), f = ld<T>(d.workspace, w + H), g = ld<T>(d.workspace, w + 2 * H),
            o = ld<T>(d.workspace, w + 3 * H);
    const A gh = ld_or0<T>(d.grad_hy, s), tc = fast_tanh(ld<T>(d.cy, s));
    const A gc = gh * o * (A(1) - tc * tc) + ld_or0<T>(d.grad_cy, s);
    st<T>(d.grad_gates, w, gc * g * i * (A(1) - i));
    st<T>(d.grad_gates, w + H, gc * ld<T>(d.cx, s) * f * (A(1) - f));
    st<T>(d.grad_gates, w + 2 * H, gc * i * (A(1) - g * g));
    st<T>(d.grad_gates, w + 3 * H, gh * tc * o * (A(1) - o));
    st<T>(d.grad_prev, s, gc * f);
  });
}

npu_sim::Status gru_cell(npu_sim::Stream stream, const RnnCellDesc& d) {
  // Per cell: 3 input-gate and 3 hidden-gate elements, the 3 biases of each kind when given, and the
  // previous hidden state read; hy and the 5 saved values written. 30 Vector ops (10 adds, 3 activations,
  // the candidate's and the output's 8).
  const CellCost cost{7 + opt(d.input_bias, 3) + opt(d.hidden_bias, 3), 6, 30};
  return over_cells(stream, "gru_cell", d, cost, [](auto tag, const RnnCellDesc& d, int64_t r, int64_t j) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const int64_t H = d.H, G = 3 * H, W = 5 * H;
    auto in = [&](int k) { return ld<T>(d.input_gates, r * G + k * H + j) + ld_or0<T>(d.input_bias, k * H + j); };
    auto hid = [&](int k) { return ld<T>(d.hidden_gates, r * G + k * H + j) + ld_or0<T>(d.hidden_bias, k * H + j); };
    const A rg = fast_sigmoid(in(0) + hid(0)), z = fast_sigmoid(in(1) + hid(1));
    const A hn = hid(2), n = fast_tanh(in(2) + rg * hn);
    const A hx = ld<T>(d.prev, r * H + j);
    st<T>(d.hy, r * H + j, n + z * (hx - n));
    const int64_t w = r * W + j;
    st<T>(d.workspace, w, rg);
    st<T>(d.workspace, w + H, z);
    st<T>(d.workspace, w + 2 * H, n);
    st<T>(d.workspace, w + 3 * H, hx);
    st<T>(d.workspace, w + 4 * H, hn);
  });
}

npu_sim::Status gru_cell_backward(npu_sim::Stream stream, const RnnCellBackwardDesc& d) {
  // Per cell: the 5 saved values and grad_hy (when given) read; 3 input-gate grads, 3 hidden-gate grads and
  // grad_prev written. 20 Vector ops.
  const CellCost cost{5 + opt(d.grad_hy, 1), 7, 20};
  return over_cells(stream, "gru_cell_backward", d, cost, [](auto tag, const RnnCellBackwardDesc& d, int64_t r, int64_t j) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const int64_t H = d.H, G = 3 * H, W = 5 * H;
    const int64_t w = r * W + j, g = r * G + j;
    const A rg = ld<T>(d.workspace, w), z = ld<T>(d.workspace, w + H), n = ld<T>(d.workspace, w + 2 * H),
            hx = ld<T>(d.workspace, w + 3 * H), hn = ld<T>(d.workspace, w + 4 * H);
    const A gh = ld_or0<T>(d.grad_hy, r * H + j);
    const A gn = gh * (A(1) - z) * (A(1) - n * n);  // through tanh
    const A gz = gh * (hx - n) * z * (A(1) - z);
    const A gr = gn * hn * rg * (A(1) - rg);
    st<T>(d.grad_gates, g, gr);
    st<T>(d.grad_gates, g + H, gz);
    st<T>(d.grad_gates, g + 2 * H, gn);
    st<T>(d.grad_hidden_gates, g, gr);
    st<T>(d.grad_hidden_gates, g + H, gz);
    st<T>(d.grad_hidden_gates, g + 2 * H, gn * rg);
    st<T>(d.grad_prev, r * H + j, gh * z);
  });
}

}  // namespace npu_kernels
