// Registration of _ctc_loss and _ctc_loss_backward, int[] and Tensor lengths (F.ctc_loss, nn.CTCLoss): CPU's
// argument checks and messages on the host (the lengths are host ints), then kernels/src/ctc.cpp on the stream.
#include <ATen/TensorUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <vector>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/ctc.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using at::IntArrayRef;
using at::Tensor;

// What CPU names its checks after (ATen/native/LossCTC.cpp), so the messages read the same.
constexpr const char* kCheckedFrom = "ctc_loss_allocate_outputs";

// float32 / float64, as CPU (its kernel is dispatched over the floating types without 16-bit ones).
void check_float(const Tensor& log_probs, const char* kernel) {
  const at::ScalarType st = log_probs.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(st == at::kFloat || st == at::kDouble, "\"", kernel, "\" not implemented for '",
                              c10::toString(st), "'");
}

// CPU's ctc_loss_allocate_outputs checks, in its order; fills the kernel's arguments (lengths point into the
// caller's arrays, which outlive the launch call: the kernel copies them).
npu_kernels::CtcArgs check_and_describe(const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths,
                                        IntArrayRef target_lengths, int64_t blank) {
  const at::TensorArg log_probs_arg(log_probs, "log_probs", 1), targets_arg(targets, "targets", 2);
  at::checkScalarType(kCheckedFrom, targets_arg, targets.scalar_type() == at::kLong ? at::kLong : at::kInt);
  at::checkDim(kCheckedFrom, log_probs_arg, 3);
  at::checkDimRange(kCheckedFrom, targets_arg, 1, 3);
  const int64_t batch = log_probs.size(1), num_labels = log_probs.size(2);
  TORCH_CHECK(0 <= blank && blank < num_labels, "blank must be in label range");
  TORCH_CHECK(static_cast<int64_t>(input_lengths.size()) == batch, "input_lengths must be of size batch_size");
  TORCH_CHECK(static_cast<int64_t>(target_lengths.size()) == batch, "target_lengths must be of size batch_size");
  int64_t sum = 0, longest = 0;
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK(target_lengths[b] >= 0, "Expected target_lengths to have value at least ", 0, ", but got value ",
                target_lengths[b], " (while checking arguments for ", kCheckedFrom, ")");
    sum += target_lengths[b];
    longest = std::max(longest, target_lengths[b]);
  }
  if (targets.dim() == 1) {
    at::checkSize(kCheckedFrom, targets_arg, 0, sum);
  } else {
    at::checkSize(kCheckedFrom, targets_arg, 0, batch);
    TORCH_CHECK(targets.size(1) >= longest, "Expected tensor to have size at least ", longest,
                " at dimension 1, but got size ", targets.size(1), " for ", targets_arg,
                " (while checking arguments for ", kCheckedFrom, ")");
  }
  const int64_t max_input_length = log_probs.size(0);
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK(input_lengths[b] >= 0, "Expected input_lengths to have value at least ", 0, ", but got value ",
                input_lengths[b], " (while checking arguments for ", kCheckedFrom, ")");
    TORCH_CHECK(input_lengths[b] <= max_input_length, "Expected input_lengths to have value at most ",
                max_input_length, ", but got value ", input_lengths[b], " (while checking arguments for ",
                kCheckedFrom, ")");
  }
  npu_kernels::CtcArgs a;
  a.dtype = kernel_dtype(log_probs.scalar_type(), "ctc_loss");
  a.max_input_length = max_input_length;
  a.batch = batch;
  a.num_labels = num_labels;
  a.lp_stride_t = log_probs.stride(0);
  a.lp_stride_n = log_probs.stride(1);
  a.lp_stride_c = log_probs.stride(2);
  a.targets_concatenated = targets.dim() == 1;
  a.num_targets = targets.dim() == 1 ? sum : targets.size(1);
  a.blank = blank;
  a.input_lengths = input_lengths.data();
  a.target_lengths = target_lengths.data();
  return a;
}

// int64 targets (CPU reads int32 ones as they are; the kernel reads int64), and their strides in the arguments.
Tensor long_targets(const Tensor& targets, npu_kernels::CtcArgs& a) {
  const Tensor t = targets.scalar_type() == at::kLong ? targets : targets.to(at::kLong);
  a.target_stride = t.dim() == 1 ? t.stride(0) : t.stride(1);
  a.target_stride_n = t.dim() == 1 ? 0 : t.stride(0);
  return t;
}

// Lengths given as tensors: CPU's check, then a host copy (ctc_loss_tensor in LossCTC.cpp).
std::vector<int64_t> host_lengths(const Tensor& lengths, const char* name) {
  TORCH_CHECK(at::isIntegralType(lengths.scalar_type(), /*includeBool=*/false), name, " must be integral");
  const Tensor h = lengths.to(at::Device(at::kCPU), at::kLong).contiguous();
  return std::vector<int64_t>(h.const_data_ptr<int64_t>(), h.const_data_ptr<int64_t>() + h.numel());
}

// One of the backward's saved tensors: log_probs' dtype and the expected shape.
void check_saved(const char* name, const Tensor& t, const Tensor& log_probs, IntArrayRef sizes) {
  constexpr const char* op = "_ctc_loss_backward";
  TORCH_CHECK(t.scalar_type() == log_probs.scalar_type(), op, ": expected ", name, " to have log_probs' dtype ",
              log_probs.scalar_type(), ", but got ", t.scalar_type());
  TORCH_CHECK(t.sizes() == sizes, op, ": expected ", name, " of shape ", sizes, ", but got ", t.sizes());
}

}  // namespace

std::tuple<Tensor, Tensor> NF::_ctc_loss(const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths,
                                         IntArrayRef target_lengths, int64_t blank, bool zero_infinity) {
  (void)zero_infinity;  // backward only
  c10::DeviceGuard guard(log_probs.device());
  check_float(log_probs, "ctc_loss_npu");
  TORCH_CHECK(log_probs.numel() > 0, "log_probs tensor must not be empty");  // CPU's first check after the dtype
  auto a = check_and_describe(log_probs, targets, input_lengths, target_lengths, blank);
  check_devices("_ctc_loss", {{"log_probs", &log_probs}, {"targets", &targets}});
  const int64_t width = npu_kernels::ctc_alpha_width(a);
  Tensor nll = at::empty({a.batch}, log_probs.options());
  Tensor log_alpha = at::empty({a.batch, a.max_input_length, width}, log_probs.options());
  if (a.batch > 0) {
    const Tensor tg = long_targets(targets, a);
    NPU_CHECK(npu_kernels::ctc_loss(stream_of(log_probs), a, log_probs.const_data_ptr(),
                                    tg.const_data_ptr<int64_t>(), nll.data_ptr(), log_alpha.data_ptr()));
  }
  return {nll, log_alpha};
}

std::tuple<Tensor, Tensor> NF::_ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                                         const Tensor& target_lengths, int64_t blank, bool zero_infinity) {
  const auto il = host_lengths(input_lengths, "input_lengths"), tl = host_lengths(target_lengths, "target_lengths");
  return NF::_ctc_loss(log_probs, targets, il, tl, blank, zero_infinity);
}

// CPU's backward assumes the forward's checks passed (it reads and writes out of bounds otherwise): here the same
// checks run again, with the forward's messages, and the saved tensors' dtypes and shapes are checked too.
Tensor NF::_ctc_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
                              IntArrayRef input_lengths, IntArrayRef target_lengths, const Tensor& neg_log_likelihood,
                              const Tensor& log_alpha, int64_t blank, bool zero_infinity) {
  c10::DeviceGuard guard(log_probs.device());
  check_float(log_probs, "ctc_loss_backward_npu");
  auto a = check_and_describe(log_probs, targets, input_lengths, target_lengths, blank);
  a.zero_infinity = zero_infinity;
  check_devices("_ctc_loss_backward", {{"grad", &grad}, {"log_probs", &log_probs}, {"targets", &targets},
                                       {"neg_log_likelihood", &neg_log_likelihood}, {"log_alpha", &log_alpha}});
  check_saved("grad", grad, log_probs, {a.batch});
  check_saved("neg_log_likelihood", neg_log_likelihood, log_probs, {a.batch});
  const int64_t width = npu_kernels::ctc_alpha_width(a);
  TORCH_CHECK(log_alpha.dim() == 3 && log_alpha.size(0) == a.batch && log_alpha.size(1) == a.max_input_length &&
              log_alpha.size(2) >= width, "_ctc_loss_backward: expected log_alpha of shape (", a.batch, ", ",
              a.max_input_length, ", at least ", width, "), but got ", log_alpha.sizes());
  check_saved("log_alpha", log_alpha, log_probs, log_alpha.sizes());
  Tensor out = at::empty(log_probs.sizes(), log_probs.options());  // contiguous (T, N, C), as CPU's
  if (out.numel() > 0) {
    const Tensor tg = long_targets(targets, a);
    const Tensor g = grad.contiguous(), nll = neg_log_likelihood.contiguous(), alpha = log_alpha.contiguous();
    NPU_CHECK(npu_kernels::ctc_loss_backward(stream_of(log_probs), a, g.const_data_ptr(), log_probs.const_data_ptr(),
                                             tg.const_data_ptr<int64_t>(), nll.const_data_ptr(),
                                             alpha.const_data_ptr(), alpha.size(2), out.data_ptr()));
  }
  return out;
}

Tensor NF::_ctc_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
                              const Tensor& input_lengths, const Tensor& target_lengths,
                              const Tensor& neg_log_likelihood, const Tensor& log_alpha, int64_t blank,
                              bool zero_infinity) {
  const auto il = host_lengths(input_lengths, "input_lengths"), tl = host_lengths(target_lengths, "target_lengths");
  return NF::_ctc_loss_backward(grad, log_probs, targets, il, tl, neg_log_likelihood, log_alpha, blank,
                                zero_infinity);
}

}  // namespace torch_npu_sim
