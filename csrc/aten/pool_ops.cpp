// 2-D pooling for npu: max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d, adaptive_max_pool2d and
// their backward ops. Shapes and argument checks reuse ATen's pooling helpers (ATen/native/Pool.h); the windows run in
// kernels/src/pool.cpp on contiguous NCHW planes.
#include <ATen/core/Tensor.h>
#include <ATen/native/Pool.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/npu_tensor.h"
#include "aten/window2d.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/pool.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using at::IntArrayRef;
using at::Tensor;

std::array<int64_t, 2> pair_arg(IntArrayRef v, IntArrayRef fallback, const char* op, const char* name) {
  if (v.empty()) v = fallback;
  TORCH_CHECK(v.size() == 1 || v.size() == 2, op, ": ", name, " must either be a single int, or a tuple of two ints");
  return {v[0], v.size() == 1 ? v[0] : v[1]};
}

struct Geometry {
  npu_kernels::Pool2dArgs args;
  std::vector<int64_t> out_sizes;  // (N,) C, H_out, W_out
};

Geometry geometry(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode, const char* op) {
  TORCH_CHECK(is_npu(input), op, ": expected an npu tensor, got one on ", input.device());
  TORCH_CHECK(input.dim() == 3 || input.dim() == 4, op, ": expected 3D or 4D (batch mode) tensor for input, got ",
              input.sizes());
  const auto k = pair_arg(kernel_size, {}, op, "kernel_size");
  const auto s = pair_arg(stride, kernel_size, op, "stride");
  const auto p = pair_arg(padding, {0}, op, "padding");
  const auto d = pair_arg(dilation, {1}, op, "dilation");
  const int64_t planes = input.dim() == 4 ? input.size(0) * input.size(1) : input.size(0);
  const int64_t in_h = input.size(-2), in_w = input.size(-1);
  const int64_t out_h = at::native::pooling_output_shape<int64_t>(in_h, k[0], p[0], s[0], d[0], ceil_mode);
  const int64_t out_w = at::native::pooling_output_shape<int64_t>(in_w, k[1], p[1], s[1], d[1], ceil_mode);
  at::native::pool2d_shape_check(input, k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], input.size(-3), in_h, in_w,
                                 out_h, out_w, at::MemoryFormat::Contiguous);
  Geometry g;
  auto& a = g.args;
  a.dtype = kernel_dtype(input.scalar_type(), op);
  a.planes = planes;
  a.in_h = in_h;
  a.in_w = in_w;
  a.out_h = out_h;
  a.out_w = out_w;
  set_window2d(a, k, s, p, d);
  g.out_sizes.assign(input.sizes().begin(), input.sizes().end() - 2);
  g.out_sizes.push_back(out_h);
  g.out_sizes.push_back(out_w);
  return g;
}

npu_kernels::Pool2dArgs avg_args(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                                 bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor,
                                 std::vector<int64_t>* out_sizes, const char* op) {
  TORCH_CHECK(!divisor.has_value() || *divisor != 0, op, ": divisor must be not zero");
  const auto k = pair_arg(kernel_size, {}, op, "kernel_size");
  const auto p = pair_arg(padding, {0}, op, "padding");
  TORCH_CHECK(p[0] <= k[0] / 2 && p[1] <= k[1] / 2, op, ": pad should be at most half of effective kernel size, but got pad=",
              padding, " and kernel_size=", kernel_size);
  // ATen's avg_pool2d meta reads the plane count before checking the rank: an IndexError below 3 dims
  static_cast<void>(input.size(-3));
  Geometry g = geometry(input, kernel_size, stride, padding, {1}, ceil_mode, op);
  g.args.count_include_pad = count_include_pad;
  g.args.divisor = divisor.value_or(0);
  *out_sizes = g.out_sizes;
  return g.args;
}

npu_kernels::Pool2dArgs adaptive_args(const Tensor& input, IntArrayRef output_size, const char* op) {
  TORCH_CHECK(is_npu(input), op, ": expected an npu tensor, got one on ", input.device());
  TORCH_CHECK(output_size.size() == 2, op, ": output_size must be 2");
  TORCH_CHECK(input.dim() == 3 || input.dim() == 4, op, ": Expected 3D or 4D tensor, but got ", input.sizes());
  for (int64_t d = 1; d < input.dim(); ++d) {
    TORCH_CHECK(input.size(d) > 0, op, ": expected input to have non-zero size for non-batch dimensions, but input has "
                "sizes ", input.sizes(), " with dimension ", d, " being empty");
  }
  npu_kernels::Pool2dArgs a;
  a.dtype = kernel_dtype(input.scalar_type(), op);
  a.planes = input.dim() == 4 ? input.size(0) * input.size(1) : input.size(0);
  a.in_h = input.size(-2);
  a.in_w = input.size(-1);
  a.out_h = output_size[0];
  a.out_w = output_size[1];
  a.adaptive = true;
  return a;
}

}  // namespace

::std::tuple<at::Tensor, at::Tensor> NF::adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size) {
  Tensor out = at::empty({0}, input.options()), indices = at::empty({0}, input.options().dtype(at::kLong));
  NF::adaptive_max_pool2d_out(input, output_size, out, indices);
  return std::make_tuple(out, indices);
}

std::tuple<Tensor&, Tensor&> NF::adaptive_max_pool2d_out(const Tensor& input, IntArrayRef output_size, Tensor& out,
                                                         Tensor& indices) {
  c10::DeviceGuard guard(input.device());
  const auto a = adaptive_args(input, output_size, "adaptive_max_pool2d");
  TORCH_CHECK(indices.scalar_type() == at::kLong, "adaptive_max_pool2d: expected indices of dtype Long, got ",
              indices.scalar_type());
  TORCH_CHECK(out.scalar_type() == input.scalar_type(), "adaptive_max_pool2d: expected out of dtype ",
              input.scalar_type(), ", got ", out.scalar_type());
  std::vector<int64_t> sizes(input.sizes().begin(), input.sizes().end() - 2);
  sizes.push_back(a.out_h);
  sizes.push_back(a.out_w);
  at::native::resize_output(out, sizes);
  at::native::resize_output(indices, sizes);
  const Tensor x = input.contiguous();
  Tensor o = out.is_contiguous() ? out : at::empty(sizes, input.options());
  Tensor i = indices.is_contiguous() ? indices : at::empty(sizes, indices.options());
  if (o.numel() > 0) {
    NPU_CHECK(npu_kernels::max_pool2d(stream_of(input), a, x.const_data_ptr(), o.data_ptr(), i.data_ptr<int64_t>()));
  }
  if (!o.is_same(out)) out.copy_(o);
  if (!i.is_same(indices)) indices.copy_(i);
  return {out, indices};
}

at::Tensor NF::adaptive_max_pool2d_backward(const Tensor& grad_output, const Tensor& input, const Tensor& indices) {
  Tensor grad_input = at::empty({0}, input.options());
  return NF::adaptive_max_pool2d_backward_out(grad_output, input, indices, grad_input);
}

Tensor& NF::adaptive_max_pool2d_backward_out(const Tensor& grad_output, const Tensor& input, const Tensor& indices,
                                             Tensor& grad_input) {
  c10::DeviceGuard guard(input.device());
  const auto a = adaptive_args(input, {grad_output.size(-2), grad_output.size(-1)}, "adaptive_max_pool2d_backward");
  TORCH_CHECK(grad_output.sizes() == indices.sizes(), "adaptive_max_pool2d_backward: grad_output has shape ",
              grad_output.sizes(), " but indices have shape ", indices.sizes());
  TORCH_CHECK(input.scalar_type() == grad_output.scalar_type(), "adaptive_max_pool2d_backward: expected dtype ",
              input.scalar_type(), " for `grad_output` but got dtype ", grad_output.scalar_type());
  at::native::resize_output(grad_input, input.sizes());
  const Tensor go = grad_output.contiguous(), idx = indices.contiguous();
  Tensor gi = grad_input.is_contiguous() ? grad_input : at::empty(input.sizes(), input.options());
  if (gi.numel() > 0) {
    NPU_CHECK(npu_kernels::max_pool2d_backward(stream_of(input), a, go.const_data_ptr(), idx.const_data_ptr<int64_t>(),
                                               gi.data_ptr()));
  }
  if (!gi.is_same(grad_input)) grad_input.copy_(gi);
  return grad_input;
}

std::tuple<Tensor, Tensor> NF::max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                                       IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  c10::DeviceGuard guard(input.device());
  const Geometry g = geometry(input, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d");
  const Tensor x = input.contiguous();
  Tensor out = at::empty(g.out_sizes, input.options());
  Tensor indices = at::empty(g.out_sizes, input.options().dtype(at::kLong));
  if (out.numel() > 0) {
    NPU_CHECK(npu_kernels::max_pool2d(stream_of(input), g.args, x.const_data_ptr(), out.data_ptr(),
                                      indices.data_ptr<int64_t>()));
  }
  return {out, indices};
}

Tensor NF::max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& input, IntArrayRef kernel_size,
                                            IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                            bool ceil_mode, const Tensor& indices) {
  c10::DeviceGuard guard(input.device());
  const Geometry g = geometry(input, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d_backward");
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(g.out_sizes), "max_pool2d_backward: grad_output has shape ",
              grad_output.sizes(), ", expected ", at::IntArrayRef(g.out_sizes));
  const Tensor go = grad_output.contiguous().to(input.scalar_type());
  const Tensor idx = indices.contiguous();
  Tensor grad_input = at::empty(input.sizes(), input.options().memory_format(at::MemoryFormat::Contiguous));
  if (grad_input.numel() > 0) {
    NPU_CHECK(npu_kernels::max_pool2d_backward(stream_of(input), g.args, go.const_data_ptr(),
                                               idx.const_data_ptr<int64_t>(), grad_input.data_ptr()));
  }
  return grad_input;
}

Tensor NF::avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                      bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor) {
  c10::DeviceGuard guard(input.device());
  std::vector<int64_t> sizes;
  const auto a =
      avg_args(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor, &sizes, "avg_pool2d");
  const Tensor x = input.contiguous();
  Tensor out = at::empty(sizes, input.options());
  if (out.numel() > 0) NPU_CHECK(npu_kernels::avg_pool2d(stream_of(input), a, x.const_data_ptr(), out.data_ptr()));
  return out;
}

Tensor NF::avg_pool2d_backward(const Tensor& grad_output, const Tensor& input, IntArrayRef kernel_size,
                               IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor) {
  c10::DeviceGuard guard(input.device());
  std::vector<int64_t> sizes;
  const auto a = avg_args(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor, &sizes,
                          "avg_pool2d_backward");
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(sizes), "avg_pool2d_backward: grad_output has shape ",
              grad_output.sizes(), ", expected ", at::IntArrayRef(sizes));
  const Tensor go = grad_output.contiguous().to(input.scalar_type());
  Tensor grad_input = at::empty(input.sizes(), input.options().memory_format(at::MemoryFormat::Contiguous));
  if (grad_input.numel() > 0) {
    NPU_CHECK(npu_kernels::avg_pool2d_backward(stream_of(input), a, go.const_data_ptr(), grad_input.data_ptr()));
  }
  return grad_input;
}

Tensor NF::_adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  c10::DeviceGuard guard(input.device());
  const auto a = adaptive_args(input, output_size, "adaptive_avg_pool2d");
  std::vector<int64_t> sizes(input.sizes().begin(), input.sizes().end() - 2);
  sizes.push_back(a.out_h);
  sizes.push_back(a.out_w);
  const Tensor x = input.contiguous();
  Tensor out = at::empty(sizes, input.options());
  if (out.numel() > 0) NPU_CHECK(npu_kernels::avg_pool2d(stream_of(input), a, x.const_data_ptr(), out.data_ptr()));
  return out;
}

Tensor NF::_adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& input) {
  c10::DeviceGuard guard(input.device());
  const auto a = adaptive_args(input, {grad_output.size(-2), grad_output.size(-1)}, "adaptive_avg_pool2d_backward");
  const Tensor go = grad_output.contiguous().to(input.scalar_type());
  Tensor grad_input = at::empty(input.sizes(), input.options().memory_format(at::MemoryFormat::Contiguous));
  if (grad_input.numel() > 0) {
    NPU_CHECK(npu_kernels::avg_pool2d_backward(stream_of(input), a, go.const_data_ptr(), grad_input.data_ptr()));
  }
  return grad_input;
}

}  // namespace torch_npu_sim
