// Fused LSTM / GRU cell kernels (torch-free): the gate nonlinearities and state update of one time step
// after the two gate GEMMs, forward and backward, as the fused cells of cuDNN-less CUDA PyTorch define them.
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// Every tensor is contiguous, rows of `batch`; H = hidden size. Gate blocks are laid out along a row as
// LSTM (i, f, g, o) and GRU (r, z, n), each of H elements. Biases (gates-wide, one row) may be null.
struct RnnCellDesc {
  DType dtype = DType::kFloat32;
  int64_t batch = 0, H = 0;
  const void* input_gates = nullptr;   // (batch, G*H)
  const void* hidden_gates = nullptr;  // (batch, G*H)
  const void* input_bias = nullptr;    // (G*H) or null
  const void* hidden_bias = nullptr;   // (G*H) or null
  const void* prev = nullptr;          // LSTM: cx, GRU: hx  (batch, H)
  void* hy = nullptr;                  // (batch, H)
  void* cy = nullptr;                  // LSTM only (batch, H)
  void* workspace = nullptr;           // LSTM (batch, 4H): activated i,f,g,o; GRU (batch, 5H): r,z,n,hx,hn
};
npu_sim::Status lstm_cell(npu_sim::Stream stream, const RnnCellDesc& d);
npu_sim::Status gru_cell(npu_sim::Stream stream, const RnnCellDesc& d);

struct RnnCellBackwardDesc {
  DType dtype = DType::kFloat32;
  int64_t batch = 0, H = 0;
  const void* grad_hy = nullptr;    // (batch, H) or null (zero)
  const void* grad_cy = nullptr;    // LSTM (batch, H) or null (zero)
  const void* cx = nullptr;         // LSTM
  const void* cy = nullptr;         // LSTM
  const void* workspace = nullptr;  // as written by the forward
  void* grad_gates = nullptr;       // LSTM (batch, 4H); GRU: grad of input_gates (batch, 3H)
  void* grad_hidden_gates = nullptr;  // GRU (batch, 3H)
  void* grad_prev = nullptr;        // LSTM grad_cx, GRU grad_hx (batch, H)
};
npu_sim::Status lstm_cell_backward(npu_sim::Stream stream, const RnnCellBackwardDesc& d);
npu_sim::Status gru_cell_backward(npu_sim::Stream stream, const RnnCellBackwardDesc& d);

}  // namespace npu_kernels
