// Registration of multi_margin_loss and multilabel_margin_loss (forward, backward, out= flavours): CPU's shape checks,
// output shapes and messages (ATen/native/LossMultiMargin.cpp, LossMultiLabelMargin.cpp), then
// kernels/src/margin_loss.cpp on contiguous (nframe, dim) inputs. Targets are range-checked on the host first, with
// CPU's messages (a sync, as CPU's own .item() checks): a kernel that finds one fails the device.
#include <ATen/core/Reduction.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

#include <optional>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "npu_kernels/margin_loss.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using at::Tensor;

struct Frames {
  int64_t nframe = 1, dim = 1;
};

Frames frames_of(const Tensor& input) {
  const int64_t ndims = input.dim();
  TORCH_CHECK((ndims == 2 && input.size(1) != 0) || (ndims == 1 && input.size(0) != 0) || ndims == 0,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ", input.sizes());
  if (ndims <= 1) return {1, ndims == 0 ? 1 : input.size(0)};
  return {input.size(0), input.size(1)};
}

// CPU dispatches these kernels over float32 / float64 only.
npu_kernels::DType loss_dtype(const Tensor& input, const char* kernel) {
  const at::ScalarType st = input.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(st == at::kFloat || st == at::kDouble, "\"", kernel, "\" not implemented for '",
                              c10::toString(st), "'");
  return kernel_dtype(st, kernel);
}

void check_target_dtype(const Tensor& target, const char* op) {
  TORCH_CHECK(target.scalar_type() == at::kLong, op, ": expected target of dtype Long, but got ", target.scalar_type());
}

// ---- multi_margin_loss ----

Frames multi_margin_check(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                          const at::Scalar& p, const char* op) {
  TORCH_CHECK(p.toLong() == 1 || p.toLong() == 2, "only p == 1 and p == 2 supported");
  const Frames f = frames_of(input);
  TORCH_CHECK(target.dim() <= 1 && target.numel() == f.nframe,
              "multi_margin_loss: target tensor should be 1-D with size equal to the number of input samples (batch "
              "size). Expected target size [", f.nframe, "], but got ", target.sizes(), ". Input has shape ",
              input.sizes(), ".");
  if (weight && weight->defined()) {
    TORCH_CHECK(weight->dim() <= 1 && weight->numel() == f.dim, "inconsistent weight size, expected ", f.dim,
                " but got ", weight->sizes());
    check_device_arg(op, "weight", *weight, input.device());
  }
  check_device_arg(op, "target", target, input.device());
  check_target_dtype(target, op);
  if (input.numel() > 0) {
    TORCH_CHECK(!target.lt(0).logical_or(target.ge(f.dim)).any().item<bool>(), "target out of range");
  }
  return f;
}

npu_kernels::MultiMarginArgs multi_margin_args(const Tensor& input, const Frames& f, const at::Scalar& p,
                                               const at::Scalar& margin, int64_t reduction, const char* kernel) {
  npu_kernels::MultiMarginArgs a;
  a.dtype = loss_dtype(input, kernel);
  a.nframe = f.nframe;
  a.dim = f.dim;
  a.p = p.toLong();
  a.margin = margin.toDouble();
  a.reduction = reduction;
  return a;
}

// weight as the kernel reads it: contiguous, of the input's dtype, or absent.
Tensor weight_of(const std::optional<Tensor>& weight, const Tensor& input) {
  if (!weight || !weight->defined()) return Tensor();
  return weight->to(input.scalar_type()).contiguous();
}

// ---- multilabel_margin_loss ----

Frames multilabel_check(const Tensor& input, const Tensor& target, const char* op) {
  const Frames f = frames_of(input);
  if (input.dim() <= 1) {
    TORCH_CHECK(target.dim() <= 1 && target.numel() == f.dim, "inconsistent target size: ", target.sizes(),
                " for input of size: ", input.sizes());
  } else {
    TORCH_CHECK(target.dim() == 2 && target.size(0) == f.nframe && target.size(1) == f.dim,
                "inconsistent target size: ", target.sizes(), " for input of size: ", input.sizes());
  }
  check_device_arg(op, "target", target, input.device());
  check_target_dtype(target, op);
  return f;
}

void check_labels(const Tensor& target, int64_t dim, const char* arg) {
  TORCH_CHECK(!target.lt(-1).logical_or(target.ge(dim)).any().item<bool>(), "argument #", arg, " 'target' is out of range");
}

npu_kernels::MultilabelMarginArgs multilabel_args(const Tensor& input, const Frames& f, int64_t reduction,
                                                  const char* kernel) {
  npu_kernels::MultilabelMarginArgs a;
  a.dtype = loss_dtype(input, kernel);
  a.nframe = f.nframe;
  a.dim = f.dim;
  a.reduction = reduction;
  return a;
}

bool half(const Tensor& t) { return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16; }
std::optional<Tensor> widened(const std::optional<Tensor>& w) {
  return w && w->defined() ? std::optional<Tensor>(w->to(at::kFloat)) : w;
}
Tensor& into(Tensor& out, const Tensor& r) {
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

}  // namespace

// float16 / bfloat16 (which CPU refuses): computed in float32 and rounded once, as CUDA does.
Tensor& NF::multi_margin_loss_out(const Tensor& input, const Tensor& target, const at::Scalar& p,
                                  const at::Scalar& margin, const std::optional<Tensor>& weight, int64_t reduction,
                                  Tensor& out) {
  if (half(input)) return into(out, NF::multi_margin_loss(input.to(at::kFloat), target, p, margin, widened(weight), reduction));
  c10::DeviceGuard guard(input.device());
  const char* op = "multi_margin_loss";
  const Frames f = multi_margin_check(input, target, weight, p, op);
  const auto a = multi_margin_args(input, f, p, margin, reduction, "multi_margin_loss_npu_kernel");
  // a scalar for 1-D input even with reduction none, as CPU
  at::native::resize_output(out, reduction == at::Reduction::None && target.dim() > 0 ? at::IntArrayRef{f.nframe}
                                                                                     : at::IntArrayRef{});
  TORCH_CHECK(out.scalar_type() == input.scalar_type(), op, ": expected out of dtype ", input.scalar_type(),
              ", got ", out.scalar_type());
  const Tensor x = input.contiguous(), t = target.contiguous(), w = weight_of(weight, input);
  into_contiguous(out, [&](const Tensor& o) {
    NPU_CHECK(npu_kernels::multi_margin_loss(stream_of(input), a, x.const_data_ptr(), t.const_data_ptr<int64_t>(),
                                             w.defined() ? w.const_data_ptr() : nullptr, o.data_ptr()));
  });
  return out;
}

Tensor NF::multi_margin_loss(const Tensor& input, const Tensor& target, const at::Scalar& p, const at::Scalar& margin,
                             const std::optional<Tensor>& weight, int64_t reduction) {
  Tensor out = at::empty({0}, input.options());
  return NF::multi_margin_loss_out(input, target, p, margin, weight, reduction, out);
}

Tensor& NF::multi_margin_loss_backward_out(const Tensor& grad_output, const Tensor& input, const Tensor& target,
                                           const at::Scalar& p, const at::Scalar& margin,
                                           const std::optional<Tensor>& weight, int64_t reduction,
                                           Tensor& grad_input) {
  if (half(input)) {
    return into(grad_input, NF::multi_margin_loss_backward(grad_output.to(at::kFloat), input.to(at::kFloat), target, p, margin,
                                                           widened(weight), reduction));
  }
  c10::DeviceGuard guard(input.device());
  const char* op = "multi_margin_loss_backward";
  const Frames f = multi_margin_check(input, target, weight, p, op);
  const auto a = multi_margin_args(input, f, p, margin, reduction, "multi_margin_loss_backward_npu_kernel");
  check_device_arg(op, "grad_output", grad_output, input.device());
  const int64_t want = reduction == at::Reduction::None && target.dim() > 0 ? f.nframe : 1;
  TORCH_CHECK(grad_output.numel() == want, op, ": expected grad_output with ", want, " elements, but got ",
              grad_output.sizes());
  at::native::resize_output(grad_input, input.sizes());
  if (input.numel() == 0) return grad_input;
  const Tensor g = grad_output.to(input.scalar_type()).contiguous(), x = input.contiguous(),
               t = target.contiguous(), w = weight_of(weight, input);
  into_contiguous(grad_input, [&](const Tensor& gi) {
    NPU_CHECK(npu_kernels::multi_margin_loss_backward(stream_of(input), a, g.const_data_ptr(), x.const_data_ptr(),
                                                      t.const_data_ptr<int64_t>(),
                                                      w.defined() ? w.const_data_ptr() : nullptr, gi.data_ptr()));
  });
  return grad_input;
}

Tensor NF::multi_margin_loss_backward(const Tensor& grad_output, const Tensor& input, const Tensor& target,
                                      const at::Scalar& p, const at::Scalar& margin,
                                      const std::optional<Tensor>& weight, int64_t reduction) {
  Tensor grad_input = at::empty({0}, input.options());
  return NF::multi_margin_loss_backward_out(grad_output, input, target, p, margin, weight, reduction, grad_input);
}

std::tuple<Tensor&, Tensor&> NF::multilabel_margin_loss_forward_out(const Tensor& input, const Tensor& target,
                                                                    int64_t reduction, Tensor& out, Tensor& is_target) {
  if (half(input)) {
    auto [o, t] = NF::multilabel_margin_loss_forward(input.to(at::kFloat), target, reduction);
    into(out, o);
    into(is_target, t);
    return {out, is_target};
  }
  c10::DeviceGuard guard(input.device());
  const char* op = "multilabel_margin_loss_forward";
  const Frames f = multilabel_check(input, target, op);
  const auto a = multilabel_args(input, f, reduction, "multilabel_margin_loss_forward_out_frame");
  // a scalar for 1-D input even with reduction none, as CPU
  at::native::resize_output(out, reduction != at::Reduction::None || target.dim() <= 1 ? at::IntArrayRef{}
                                                                                      : at::IntArrayRef{f.nframe});
  at::native::resize_output(is_target, target.sizes());
  TORCH_CHECK(is_target.is_contiguous(), "is_target must be contiguous");
  if (input.numel() > 0) check_labels(target, f.dim, "2");
  const Tensor x = input.contiguous(), t = target.contiguous();
  into_contiguous(out, [&](const Tensor& o) {
    NPU_CHECK(npu_kernels::multilabel_margin_loss_forward(stream_of(input), a, x.const_data_ptr(),
                                                          t.const_data_ptr<int64_t>(), o.data_ptr(),
                                                          is_target.data_ptr()));
  });
  return {out, is_target};
}

std::tuple<Tensor, Tensor> NF::multilabel_margin_loss_forward(const Tensor& input, const Tensor& target,
                                                              int64_t reduction) {
  Tensor out = at::empty({0}, input.options()), is_target = at::empty({0}, input.options());
  NF::multilabel_margin_loss_forward_out(input, target, reduction, out, is_target);
  return {out, is_target};
}

Tensor& NF::multilabel_margin_loss_backward_out(const Tensor& grad_output, const Tensor& input, const Tensor& target,
                                                int64_t reduction, const Tensor& is_target, Tensor& grad_input) {
  if (half(input)) {
    return into(grad_input, NF::multilabel_margin_loss_backward(grad_output.to(at::kFloat), input.to(at::kFloat), target, reduction,
                                                                is_target.to(at::kFloat)));
  }
  c10::DeviceGuard guard(input.device());
  const char* op = "multilabel_margin_loss_backward";
  const Frames f = multilabel_check(input, target, op);
  const auto a = multilabel_args(input, f, reduction, "multilabel_margin_loss_backward_out_frame");
  TORCH_CHECK(is_target.sizes() == target.sizes(), "inconsistent is_target size: ", is_target.sizes(),
              " for target of size: ", target.sizes());
  check_device_arg(op, "grad_output", grad_output, input.device());
  check_device_arg(op, "is_target", is_target, input.device());
  const int64_t want = reduction == at::Reduction::None && target.dim() > 1 ? f.nframe : 1;
  TORCH_CHECK(grad_output.numel() == want, op, ": expected grad_output with ", want, " elements, but got ",
              grad_output.sizes());
  at::native::resize_output(grad_input, input.sizes());
  if (input.numel() == 0) return grad_input;
  check_labels(target, f.dim, "3");
  TORCH_CHECK(!is_target.lt(0).logical_or(is_target.gt(1)).logical_or(is_target.isnan()).any().item<bool>(),
              "argument #5 'is_target' is out of range");
  const Tensor g = grad_output.to(input.scalar_type()).contiguous(), x = input.contiguous(), t = target.contiguous(),
               it = is_target.to(input.scalar_type()).contiguous();
  into_contiguous(grad_input, [&](const Tensor& gi) {
    NPU_CHECK(npu_kernels::multilabel_margin_loss_backward(stream_of(input), a, g.const_data_ptr(), x.const_data_ptr(),
                                                           t.const_data_ptr<int64_t>(), it.const_data_ptr(),
                                                           gi.data_ptr()));
  });
  return grad_input;
}

Tensor NF::multilabel_margin_loss_backward(const Tensor& grad_output, const Tensor& input, const Tensor& target,
                                           int64_t reduction, const Tensor& is_target) {
  Tensor grad_input = at::empty({0}, input.options());
  return NF::multilabel_margin_loss_backward_out(grad_output, input, target, reduction, is_target, grad_input);
}

}  // namespace torch_npu_sim
