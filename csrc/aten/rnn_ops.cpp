// Registration of the fused RNN cells for npu (_thnn_fused_lstm_cell / _thnn_fused_gru_cell and their
// backward), which ATen's lstm_cell/gru_cell (nn.LSTM, nn.GRU, LSTMCell, GRUCell) call on accelerators.
// Argument checks here; the math is in kernels/src/rnn.cpp.
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/sum.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <tuple>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/rnn.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using T = at::Tensor;
using OptT = std::optional<T>;

const void* ptr_or_null(const T& t) { return t.defined() ? t.const_data_ptr() : nullptr; }

// Checks one argument against the reference (dtype, device, shape) and returns it contiguous.
T arg(const char* op, const char* name, const T& t, const T& ref, c10::IntArrayRef shape) {
  TORCH_CHECK(is_npu(t) && t.device() == ref.device(), op, ": expected ", name, " on ", ref.device(), ", got ",
              t.device());
  TORCH_CHECK(t.scalar_type() == ref.scalar_type(), op, ": expected ", name, " of dtype ", ref.scalar_type(),
              ", got ", t.scalar_type());
  TORCH_CHECK(t.sizes() == shape, op, ": expected ", name, " of shape ", shape, ", got ", t.sizes());
  return t.contiguous();
}

T opt_arg(const char* op, const char* name, const OptT& t, const T& ref, int64_t n) {
  return t.has_value() && t->defined() ? arg(op, name, *t, ref, {n}) : T();
}

struct Cell {
  int64_t batch, H;
  T ig, hg, prev, ib, hb;
};

Cell check_cell(const char* op, int gates, const T& input_gates, const T& hidden_gates, const T& prev,
                const OptT& input_bias, const OptT& hidden_bias) {
  TORCH_CHECK(is_npu(input_gates), op, ": expected input_gates on npu, got ", input_gates.device());
  TORCH_CHECK(at::isFloatingType(input_gates.scalar_type()), op, ": expected floating input_gates, got ",
              input_gates.scalar_type());
  TORCH_CHECK(input_gates.dim() == 2 && input_gates.size(1) % gates == 0, op, ": expected input_gates of shape (batch, ",
              gates, " * hidden_size), got ", input_gates.sizes());
  const int64_t batch = input_gates.size(0), H = input_gates.size(1) / gates;
  Cell c{batch, H, input_gates.contiguous(), arg(op, "hidden_gates", hidden_gates, input_gates, input_gates.sizes()),
         arg(op, gates == 4 ? "cx" : "hx", prev, input_gates, {batch, H}),
         opt_arg(op, "input_bias", input_bias, input_gates, gates * H),
         opt_arg(op, "hidden_bias", hidden_bias, input_gates, gates * H)};
  TORCH_CHECK(c.ib.defined() == c.hb.defined(), op, ": input_bias and hidden_bias must both be given or both be None");
  return c;
}

npu_kernels::RnnCellDesc cell_desc(const Cell& c, const char* op) {
  npu_kernels::RnnCellDesc d;
  d.dtype = kernel_dtype(c.ig.scalar_type(), op);
  d.batch = c.batch;
  d.H = c.H;
  d.input_gates = c.ig.const_data_ptr();
  d.hidden_gates = c.hg.const_data_ptr();
  d.input_bias = ptr_or_null(c.ib);
  d.hidden_bias = ptr_or_null(c.hb);
  d.prev = c.prev.const_data_ptr();
  return d;
}

T grad_or_undefined(const char* op, const char* name, const OptT& g, const T& ref) {
  return g.has_value() && g->defined() ? arg(op, name, *g, ref, ref.sizes()) : T();
}

}  // namespace

std::tuple<T, T, T> NF::_thnn_fused_lstm_cell(const T& input_gates, const T& hidden_gates, const T& cx,
                                              const OptT& input_bias, const OptT& hidden_bias) {
  constexpr const char* op = "_thnn_fused_lstm_cell";
  const Cell c = check_cell(op, 4, input_gates, hidden_gates, cx, input_bias, hidden_bias);
  c10::DeviceGuard guard(input_gates.device());
  T hy = at::empty({c.batch, c.H}, input_gates.options()), cy = at::empty_like(hy);
  T workspace = at::empty({c.batch, 4 * c.H}, input_gates.options());
  auto d = cell_desc(c, op);
  d.hy = hy.data_ptr();
  d.cy = cy.data_ptr();
  d.workspace = workspace.data_ptr();
  NPU_CHECK(npu_kernels::lstm_cell(current_native_stream(input_gates.device().index()), d));
  return std::make_tuple(hy, cy, workspace);
}

std::tuple<T, T, T> NF::_thnn_fused_lstm_cell_backward_impl(const OptT& grad_hy, const OptT& grad_cy, const T& cx,
                                                            const T& cy, const T& workspace, bool has_bias) {
  constexpr const char* op = "_thnn_fused_lstm_cell_backward";
  TORCH_CHECK(is_npu(cy) && cy.dim() == 2, op, ": expected cy of shape (batch, hidden_size) on npu, got ", cy.sizes(),
              " on ", cy.device());
  const int64_t batch = cy.size(0), H = cy.size(1);
  const T ghy = grad_or_undefined(op, "grad_hy", grad_hy, cy), gcy = grad_or_undefined(op, "grad_cy", grad_cy, cy);
  if (!ghy.defined() && !gcy.defined()) return std::make_tuple(T(), T(), T());
  const T cx_c = arg(op, "cx", cx, cy, cy.sizes()), cy_c = cy.contiguous();
  const T ws = arg(op, "workspace", workspace, cy, {batch, 4 * H});
  c10::DeviceGuard guard(cy.device());
  T grad_gates = at::empty({batch, 4 * H}, cy.options()), grad_cx = at::empty({batch, H}, cy.options());
  npu_kernels::RnnCellBackwardDesc d;
  d.dtype = kernel_dtype(cy.scalar_type(), op);
  d.batch = batch;
  d.H = H;
  d.grad_hy = ptr_or_null(ghy);
  d.grad_cy = ptr_or_null(gcy);
  d.cx = cx_c.const_data_ptr();
  d.cy = cy_c.const_data_ptr();
  d.workspace = ws.const_data_ptr();
  d.grad_gates = grad_gates.data_ptr();
  d.grad_prev = grad_cx.data_ptr();
  NPU_CHECK(npu_kernels::lstm_cell_backward(current_native_stream(cy.device().index()), d));
  T grad_bias = has_bias ? grad_gates.sum(0) : T();
  return std::make_tuple(grad_gates, grad_cx, grad_bias);
}

std::tuple<T, T> NF::_thnn_fused_gru_cell(const T& input_gates, const T& hidden_gates, const T& hx,
                                          const OptT& input_bias, const OptT& hidden_bias) {
  constexpr const char* op = "_thnn_fused_gru_cell";
  const Cell c = check_cell(op, 3, input_gates, hidden_gates, hx, input_bias, hidden_bias);
  c10::DeviceGuard guard(input_gates.device());
  T hy = at::empty({c.batch, c.H}, input_gates.options());
  T workspace = at::empty({c.batch, 5 * c.H}, input_gates.options());
  auto d = cell_desc(c, op);
  d.hy = hy.data_ptr();
  d.workspace = workspace.data_ptr();
  NPU_CHECK(npu_kernels::gru_cell(current_native_stream(input_gates.device().index()), d));
  return std::make_tuple(hy, workspace);
}

std::tuple<T, T, T, T, T> NF::_thnn_fused_gru_cell_backward(const T& grad_hy, const T& workspace, bool has_bias) {
  constexpr const char* op = "_thnn_fused_gru_cell_backward";
  TORCH_CHECK(is_npu(grad_hy) && grad_hy.dim() == 2, op, ": expected grad_hy of shape (batch, hidden_size) on npu, got ",
              grad_hy.sizes(), " on ", grad_hy.device());
  const int64_t batch = grad_hy.size(0), H = grad_hy.size(1);
  const T ws = arg(op, "workspace", workspace, grad_hy, {batch, 5 * H}), g = grad_hy.contiguous();
  c10::DeviceGuard guard(grad_hy.device());
  T grad_ig = at::empty({batch, 3 * H}, grad_hy.options()), grad_hg = at::empty_like(grad_ig);
  T grad_hx = at::empty({batch, H}, grad_hy.options());
  npu_kernels::RnnCellBackwardDesc d;
  d.dtype = kernel_dtype(grad_hy.scalar_type(), op);
  d.batch = batch;
  d.H = H;
  d.grad_hy = g.const_data_ptr();
  d.workspace = ws.const_data_ptr();
  d.grad_gates = grad_ig.data_ptr();
  d.grad_hidden_gates = grad_hg.data_ptr();
  d.grad_prev = grad_hx.data_ptr();
  NPU_CHECK(npu_kernels::gru_cell_backward(current_native_stream(grad_hy.device().index()), d));
  T gib = has_bias ? grad_ig.sum(0) : T(), ghb = has_bias ? grad_hg.sum(0) : T();
  return std::make_tuple(grad_ig, grad_hg, grad_hx, gib, ghb);
}

}  // namespace torch_npu_sim
