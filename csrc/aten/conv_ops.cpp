// Convolution on npu (registration + adapters, no math): convolution_overrideable and
// convolution_backward_overrideable, which is how aten::_convolution / convolution_backward reach a
// PrivateUse1 backend. conv1d arrives as 3-D tensors and runs as conv2d with H = 1; conv3d (5-D tensors)
// runs on the kernels' oneDNN path where it serves the case, in float64 as sums of the 2-D passes over depth
// slices, else as a recorded CPU fallback; transposed
// convolution runs the backward-input kernel (and its backward the forward / weight kernels with roles
// swapped). Kernels read any strides, so inputs are not made contiguous.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/sum.h>
#include <c10/core/DeviceGuard.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <torch/library.h>

#include <array>
#include <tuple>
#include <vector>

#include "aten/npu_tensor.h"
#include "fallback/cpu_fallback.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/conv.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

// Column-buffer scratch the backward-input kernel may use per pass (at least one image).
constexpr std::size_t kScratchBudget = 64u << 20;

struct Params {
  std::array<int64_t, 2> stride, padding, dilation, output_padding;
  int64_t groups;
};

std::array<int64_t, 2> two(at::IntArrayRef v, int64_t fill, bool one_d, const char* what) {
  const size_t want = one_d ? 1 : 2;
  TORCH_CHECK(v.size() == want || v.size() == 1, "convolution: expected ", what, " to have ", want,
              " element(s), got ", v);
  if (one_d) return {fill, v[0]};
  return v.size() == 1 ? std::array<int64_t, 2>{v[0], v[0]} : std::array<int64_t, 2>{v[0], v[1]};
}

Params make_params(at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                   at::IntArrayRef output_padding, int64_t groups, bool one_d) {
  Params p;
  p.stride = two(stride, 1, one_d, "stride");
  p.padding = two(padding, 0, one_d, "padding");
  p.dilation = two(dilation, 1, one_d, "dilation");
  p.output_padding = output_padding.empty() ? std::array<int64_t, 2>{0, 0} : two(output_padding, 0, one_d, "output_padding");
  p.groups = groups;
  return p;
}

at::Tensor as4d(const at::Tensor& t) { return t.dim() == 3 ? t.unsqueeze(2) : t; }

void check_inputs(const char* op, std::initializer_list<NamedTensor> args) {
  check_devices(op, args);
  const at::Tensor* first = nullptr;
  for (const auto& [name, t] : args) {
    if (!t->defined()) continue;
    if (first == nullptr) first = t;
    TORCH_CHECK(t->scalar_type() == first->scalar_type(), op, ": expected ", name, " to have dtype ",
                first->scalar_type(), ", but got ", t->scalar_type());
  }
  const auto type = first->scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16,
                              op, ": the npu Cube unit has no kernel for dtype ", type,
                              " (supported: float32, float64, float16, bfloat16)");
}

void set_strides(int64_t* dst, const at::Tensor& t) {
  for (int i = 0; i < 4; ++i) dst[i] = t.stride(i);
}

// Forward-sense geometry: x (N, C, H, W) * w (O, C/g, KH, KW) -> y (N, O, OH, OW).
npu_kernels::Conv2dArgs geometry(const at::Tensor& x, const at::Tensor& w, const at::Tensor& y, const Params& p) {
  npu_kernels::Conv2dArgs a;
  a.dtype = static_cast<npu_kernels::DType>(x.scalar_type());
  a.batch = x.size(0); a.in_channels = x.size(1); a.in_h = x.size(2); a.in_w = x.size(3);
  a.out_channels = y.size(1); a.out_h = y.size(2); a.out_w = y.size(3);
  a.kernel_h = w.size(2); a.kernel_w = w.size(3);
  a.stride_h = p.stride[0]; a.stride_w = p.stride[1];
  a.pad_h = p.padding[0]; a.pad_w = p.padding[1];
  a.dilation_h = p.dilation[0]; a.dilation_w = p.dilation[1];
  a.groups = p.groups;
  a.x = const_cast<void*>(x.const_data_ptr()); set_strides(a.x_strides, x);
  a.w = const_cast<void*>(w.const_data_ptr()); set_strides(a.w_strides, w);
  a.y = const_cast<void*>(y.const_data_ptr()); set_strides(a.y_strides, y);
  const char* why = nullptr;
  TORCH_CHECK(npu_kernels::conv2d_validate(a, &why) == npu_sim::Status::kSuccess, "convolution on npu: ", why,
              " (input ", x.sizes(), ", weight ", w.sizes(), ", output ", y.sizes(), ")");
  return a;
}

// x = conv_transpose(y, w) + bias, i.e. the backward-input kernel, with a scratch column buffer.
void backward_input_into(const npu_kernels::Conv2dArgs& a, const at::Tensor& like) {
  const std::size_t per_image = npu_kernels::conv2d_backward_input_scratch_bytes(a, 1);
  const int64_t images = std::max<int64_t>(1, std::min<int64_t>(a.batch, kScratchBudget / std::max<std::size_t>(per_image, 1)));
  const std::size_t bytes = npu_kernels::conv2d_backward_input_scratch_bytes(a, images);
  at::Tensor scratch = at::empty({static_cast<int64_t>(bytes)}, like.options().dtype(at::kByte));
  NPU_CHECK(npu_kernels::conv2d_backward_input(stream_of(like), a, scratch.data_ptr(), bytes));
}

void bias_grad_into(const at::Tensor& grad_bias, const at::Tensor& gy) {
  // A 1x1, stride-1 geometry over gy alone: the kernel sums gy per channel.
  npu_kernels::Conv2dArgs a;
  a.dtype = static_cast<npu_kernels::DType>(gy.scalar_type());
  a.batch = gy.size(0); a.in_channels = a.out_channels = gy.size(1);
  a.in_h = a.out_h = gy.size(2); a.in_w = a.out_w = gy.size(3);
  a.kernel_h = a.kernel_w = 1;
  a.y = const_cast<void*>(gy.const_data_ptr()); set_strides(a.y_strides, gy);
  NPU_CHECK(npu_kernels::conv2d_backward_bias(stream_of(gy), a, grad_bias.data_ptr(), grad_bias.stride(0)));
}

bool is_16bit(const at::Tensor& t) { return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16; }

// 3-D convolution the kernels do not serve (float32 without oneDNN, or in a geometry oneDNN has only its
// reference kernel for) runs on the CPU like any fallback op (warned and recorded).
at::Tensor convolution_3d_on_cpu(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                                 at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                                 bool transposed, at::IntArrayRef output_padding, int64_t groups) {
  note_cpu_fallback("aten::convolution_overrideable (3-D)");
  return at::convolution(input.cpu(), weight.cpu(), bias.defined() ? bias.cpu() : at::Tensor(), stride, padding,
                         dilation, transposed, output_padding, groups)
      .to(input.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_3d_on_cpu(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> mask) {
  note_cpu_fallback("aten::convolution_backward_overrideable (3-D)");
  const std::vector<int64_t> bias_sizes{transposed ? weight.size(1) * groups : weight.size(0)};
  auto [gx, gw, gb] = at::convolution_backward(grad_output.cpu(), input.cpu(), weight.cpu(), bias_sizes, stride,
                                               padding, dilation, transposed, output_padding, groups, mask);
  auto back = [&](const at::Tensor& t) { return t.defined() ? t.to(input.device()) : t; };
  return {back(gx), back(gw), back(gb)};
}

// ---- 3-D: the kernels' oneDNN path or, in float64, their 2-D slices; what they do not serve (kNotSupported)
// runs on the CPU as above ----

std::array<int64_t, 3> three(at::IntArrayRef v, int64_t fill, const char* what) {
  if (v.empty()) return {fill, fill, fill};
  TORCH_CHECK(v.size() == 3 || v.size() == 1, "convolution: expected ", what, " to have 3 elements, got ", v);
  return v.size() == 1 ? std::array<int64_t, 3>{v[0], v[0], v[0]} : std::array<int64_t, 3>{v[0], v[1], v[2]};
}

struct Params3d {
  std::array<int64_t, 3> stride, padding, dilation, output_padding;
  int64_t groups;
};

Params3d make_params3d(at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                       at::IntArrayRef output_padding, int64_t groups) {
  return {three(stride, 1, "stride"), three(padding, 0, "padding"), three(dilation, 1, "dilation"),
          three(output_padding, 0, "output_padding"), groups};
}

// Forward-sense geometry: x (N, C, D, H, W) * w (O, C/g, KD, KH, KW) -> y (N, O, OD, OH, OW).
npu_kernels::Conv3dArgs geometry3d(const at::Tensor& x, const at::Tensor& w, const at::Tensor& y, const Params3d& p,
                                   const at::Tensor& bias = {}) {
  npu_kernels::Conv3dArgs a;
  a.dtype = static_cast<npu_kernels::DType>(x.scalar_type());
  a.batch = x.size(0), a.in_channels = x.size(1), a.out_channels = y.size(1), a.groups = p.groups;
  for (int i = 0; i < 3; ++i) {
    a.in[i] = x.size(2 + i), a.out[i] = y.size(2 + i), a.kernel[i] = w.size(2 + i);
    a.stride[i] = p.stride[i], a.pad[i] = p.padding[i], a.dilation[i] = p.dilation[i];
  }
  a.x = const_cast<void*>(x.const_data_ptr());
  a.w = const_cast<void*>(w.const_data_ptr());
  a.y = const_cast<void*>(y.const_data_ptr());
  for (int i = 0; i < 5; ++i) a.x_strides[i] = x.stride(i), a.w_strides[i] = w.stride(i), a.y_strides[i] = y.stride(i);
  a.bias = bias.defined() ? bias.const_data_ptr() : nullptr;
  a.bias_stride = bias.defined() ? bias.stride(0) : 1;
  const char* why = nullptr;
  TORCH_CHECK(npu_kernels::conv3d_validate(a, &why) == npu_sim::Status::kSuccess, "convolution on npu: ", why,
              " (input ", x.sizes(), ", weight ", w.sizes(), ", output ", y.sizes(), ")");
  return a;
}

// True when the kernel took the pass; false (nothing enqueued) when the oneDNN path does not serve it.
bool launched(npu_sim::Status st) {
  if (st == npu_sim::Status::kNotSupported) return false;
  NPU_CHECK(st);
  return true;
}

// conv3d_backward_input with the scratch its float64 path (2-D slices) asks for, from the caching allocator
// (stream-ordered: the block is reused only by work queued after this pass).
bool backward_input_3d(const at::Tensor& on, npu_kernels::Conv3dArgs a) {
  at::Tensor scratch;
  if (const std::size_t bytes = npu_kernels::conv3d_backward_input_scratch_bytes(a)) {
    scratch = at::empty({static_cast<int64_t>(bytes)}, on.options().dtype(at::kByte));
    a.scratch = scratch.data_ptr();
    a.scratch_bytes = bytes;
  }
  return launched(npu_kernels::conv3d_backward_input(stream_of(on), a));
}

// The 3-D forward (or transposed) convolution natively; an undefined tensor when the kernels cannot.
at::Tensor convolution_3d(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias, const Params3d& p,
                          bool transposed) {
  std::vector<int64_t> shape{x.size(0), transposed ? w.size(1) * p.groups : w.size(0)};
  for (int i = 0; i < 3; ++i) {
    const int64_t in = x.size(2 + i), k = w.size(2 + i);
    shape.push_back(transposed ? (in - 1) * p.stride[i] - 2 * p.padding[i] + p.dilation[i] * (k - 1) + p.output_padding[i] + 1
                               : (in + 2 * p.padding[i] - p.dilation[i] * (k - 1) - 1) / p.stride[i] + 1);
    TORCH_CHECK(shape.back() >= 1, "convolution: calculated output size ", shape, " is too small for input ",
                x.sizes(), " and weight ", w.sizes());
  }
  at::Tensor out = at::empty(shape, x.options());
  if (out.numel() == 0 || x.numel() == 0) return x.numel() == 0 ? out.zero_() : out;
  // The transposed conv's output is the forward-sense input; its input is the forward-sense output.
  const bool ok = transposed ? backward_input_3d(out, geometry3d(out, w, x, p, bias))
                             : launched(npu_kernels::conv3d_forward(stream_of(out), geometry3d(x, w, out, p, bias)));
  return ok ? out : at::Tensor();
}

}  // namespace

at::Tensor NF::convolution_overrideable(const at::Tensor& input_, const at::Tensor& weight_,
                                        const std::optional<at::Tensor>& bias_opt, at::IntArrayRef stride,
                                        at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                                        at::IntArrayRef output_padding, int64_t groups) {
  const at::Tensor bias = bias_opt.value_or(at::Tensor());
  check_inputs("convolution", {{"input", &input_}, {"weight", &weight_}, {"bias", &bias}});
  if (input_.dim() == 5) {
    TORCH_CHECK(weight_.dim() == 5, "convolution: expected weight to be 5-D, got ", weight_.sizes());
    c10::DeviceGuard guard(input_.device());
    const Params3d p = make_params3d(stride, padding, dilation, output_padding, groups);
    at::Tensor out = convolution_3d(input_, weight_, bias, p, transposed);
    if (out.defined()) return out;
    if (is_16bit(input_)) {
      // oneDNN has no 16-bit kernel for this pass on this CPU: float32 operands, rounded once at the end (the
      // Cube's fp32 accumulation; no CPU round trip)
      out = convolution_3d(input_.to(at::kFloat), weight_.to(at::kFloat), bias.defined() ? bias.to(at::kFloat) : bias,
                           p, transposed);
      if (out.defined()) return out.to(input_.scalar_type());
    }
    return convolution_3d_on_cpu(input_, weight_, bias, stride, padding, dilation, transposed, output_padding, groups);
  }
  TORCH_CHECK(input_.dim() == 3 || input_.dim() == 4, "convolution on npu supports 1-D, 2-D and 3-D convolution (3-D, 4-D or "
              "5-D input), got input of shape ", input_.sizes());
  TORCH_CHECK(weight_.dim() == input_.dim(), "convolution: expected weight to be ", input_.dim(), "-D, got ",
              weight_.sizes());
  const bool one_d = input_.dim() == 3;
  const Params p = make_params(stride, padding, dilation, output_padding, groups, one_d);
  const at::Tensor x = as4d(input_), w = as4d(weight_);
  c10::DeviceGuard guard(x.device());
  const int64_t n = x.size(0);
  at::Tensor out;
  if (!transposed) {
    const int64_t oh = (x.size(2) + 2 * p.padding[0] - p.dilation[0] * (w.size(2) - 1) - 1) / p.stride[0] + 1;
    const int64_t ow = (x.size(3) + 2 * p.padding[1] - p.dilation[1] * (w.size(3) - 1) - 1) / p.stride[1] + 1;
    out = at::empty({n, w.size(0), oh, ow}, x.options());
    if (out.numel() > 0) {
      auto a = geometry(x, w, out, p);
      a.bias = bias.defined() ? bias.const_data_ptr() : nullptr;
      a.bias_stride = bias.defined() ? bias.stride(0) : 1;
      NPU_CHECK(npu_kernels::conv2d_forward(stream_of(out), a));
    }
  } else {
    const int64_t oh = (x.size(2) - 1) * p.stride[0] - 2 * p.padding[0] + p.dilation[0] * (w.size(2) - 1) +
                       p.output_padding[0] + 1;
    const int64_t ow = (x.size(3) - 1) * p.stride[1] - 2 * p.padding[1] + p.dilation[1] * (w.size(3) - 1) +
                       p.output_padding[1] + 1;
    // ATen's slow_conv_transpose shape check (CPU and CUDA): an empty output plane is an error, not an empty result
    TORCH_CHECK(oh >= 1 && ow >= 1, "Given input size per channel: (", x.size(2), " x ", x.size(3),
                "). Calculated output size per channel: (", oh, " x ", ow, "). Output size is too small");
    out = at::empty({n, w.size(1) * groups, oh, ow}, x.options());
    if (out.numel() > 0) {
      // The transposed conv's output is the forward-sense input; its input is the forward-sense output.
      auto a = geometry(out, w, x, p);
      a.bias = bias.defined() ? bias.const_data_ptr() : nullptr;
      a.bias_stride = bias.defined() ? bias.stride(0) : 1;
      backward_input_into(a, out);
    }
  }
  return one_d ? out.squeeze(2) : out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> NF::convolution_backward_overrideable(
    const at::Tensor& grad_output_, const at::Tensor& input_, const at::Tensor& weight_, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> mask) {
  check_inputs("convolution_backward", {{"grad_output", &grad_output_}, {"input", &input_}, {"weight", &weight_}});
  if (input_.dim() == 5) {
    c10::DeviceGuard guard(input_.device());
    const Params3d p = make_params3d(stride, padding, dilation, output_padding, groups);
    const at::Tensor &gy = grad_output_, &x = input_, &w = weight_;
    at::Tensor gx, gw, gb;
    bool ok = true;
    if (mask[0]) {
      gx = at::empty(x.sizes(), x.options());
      if (gx.numel() > 0 && gy.numel() == 0) gx.zero_();
      // forward sense: backward-input for a convolution, forward for a transposed one (roles swapped)
      else if (gx.numel() > 0) ok = transposed ? launched(npu_kernels::conv3d_forward(stream_of(gx), geometry3d(gy, w, gx, p)))
                                               : backward_input_3d(gx, geometry3d(gx, w, gy, p));
    }
    if (ok && mask[1]) {
      gw = at::empty(w.sizes(), w.options());
      if (gw.numel() > 0 && gy.numel() == 0) gw.zero_();
      else if (gw.numel() > 0) ok = launched(npu_kernels::conv3d_backward_weight(
          stream_of(gw), transposed ? geometry3d(gy, gw, x, p) : geometry3d(x, gw, gy, p)));
    }
    if (!ok && is_16bit(input_)) {  // as the forward: the passes in float32, each gradient rounded once
      auto [fx, fw, fb] = NF::convolution_backward_overrideable(gy.to(at::kFloat), x.to(at::kFloat), w.to(at::kFloat),
                                                                stride, padding, dilation, transposed, output_padding,
                                                                groups, mask);
      auto back = [&](const at::Tensor& t) { return t.defined() ? t.to(input_.scalar_type()) : t; };
      return {back(fx), back(fw), back(fb)};
    }
    if (!ok) {
      return convolution_backward_3d_on_cpu(grad_output_, input_, weight_, stride, padding, dilation, transposed,
                                            output_padding, groups, mask);
    }
    if (mask[2]) gb = gy.sum({0, 2, 3, 4});
    return {gx, gw, gb};
  }
  TORCH_CHECK(input_.dim() == 3 || input_.dim() == 4, "convolution_backward on npu supports 1-D and 2-D "
              "convolution, got input of shape ", input_.sizes());
  const bool one_d = input_.dim() == 3;
  const Params p = make_params(stride, padding, dilation, output_padding, groups, one_d);
  const at::Tensor gy = as4d(grad_output_), x = as4d(input_), w = as4d(weight_);
  c10::DeviceGuard guard(x.device());
  at::Tensor gx, gw, gb;
  if (mask[0]) gx = at::empty(x.sizes(), x.options());
  if (mask[1]) gw = at::empty(w.sizes(), w.options());
  if (mask[2]) gb = at::empty({gy.size(1)}, gy.options());
  if (!transposed) {
    if (mask[0] && gx.numel() > 0) {
      if (gy.numel() == 0) {
        gx.zero_();
      } else {
        auto a = geometry(gx, w, gy, p);
        backward_input_into(a, gx);
      }
    }
    if (mask[1] && gw.numel() > 0) {
      auto a = geometry(x, gw, gy, p);
      NPU_CHECK(npu_kernels::conv2d_backward_weight(stream_of(gw), a));
    }
  } else {
    // Forward sense: conv input = grad_output (transposed output), conv output = input.
    if (mask[0] && gx.numel() > 0) {
      auto a = geometry(gy, w, gx, p);
      NPU_CHECK(npu_kernels::conv2d_forward(stream_of(gx), a));
    }
    if (mask[1] && gw.numel() > 0) {
      auto a = geometry(gy, gw, x, p);
      NPU_CHECK(npu_kernels::conv2d_backward_weight(stream_of(gw), a));
    }
  }
  if (mask[2] && gb.numel() > 0) {
    if (gy.numel() == 0) {
      gb.zero_();
    } else {
      bias_grad_into(gb, gy);
    }
  }
  if (one_d) {
    if (gx.defined()) gx = gx.squeeze(2);
    if (gw.defined()) gw = gw.squeeze(2);
  }
  return {gx, gw, gb};
}

}  // namespace torch_npu_sim
