// Registration of im2col (F.unfold) and col2im (F.fold): CPU's argument checks (im2col_shape_check.h),
// batched or not, then the plane-parallel kernels in kernels/src/fold.cpp.
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/im2col_shape_check.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/npu_tensor.h"
#include "aten/window2d.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/fold.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using at::IntArrayRef;
using T = at::Tensor;

void check_pairs(std::initializer_list<std::pair<const char*, IntArrayRef>> args) {
  for (const auto& [name, v] : args) {
    TORCH_CHECK(v.size() == 2, "It is expected ", name, " equals to 2, but got size ", v.size());
  }
}

npu_kernels::FoldArgs fold_args(const T& image_like, IntArrayRef image_hw, IntArrayRef k, IntArrayRef d, IntArrayRef p,
                                IntArrayRef s, int64_t planes, const char* op) {
  npu_kernels::FoldArgs a;
  a.dtype = kernel_dtype(image_like.scalar_type(), op);
  a.planes = planes;
  a.in_h = image_hw[0];
  a.in_w = image_hw[1];
  set_window2d(a, k, s, p, d);
  a.out_h = at::native::sliding_window_count(a.in_h, a.pad_h, a.dilation_h, a.kernel_h, a.stride_h);
  a.out_w = at::native::sliding_window_count(a.in_w, a.pad_w, a.dilation_w, a.kernel_w, a.stride_w);
  return a;
}

void check_status(npu_sim::Status status, const char* op, at::ScalarType type) {
  TORCH_CHECK_NOT_IMPLEMENTED(status != npu_sim::Status::kInvalidValue, "\"", op, "\" not implemented for '",
                              c10::toString(type), "'");
  NPU_CHECK(status);
}

}  // namespace

T NF::im2col(const T& self, IntArrayRef k, IntArrayRef d, IntArrayRef p, IntArrayRef s) {
  T out = at::empty({0}, self.options());
  return NF::im2col_out(self, k, d, p, s, out);
}

T& NF::im2col_out(const T& self, IntArrayRef k, IntArrayRef d, IntArrayRef p, IntArrayRef s, T& out) {
  TORCH_CHECK(is_npu(self), "im2col: expected an npu tensor, got one on ", self.device());
  check_pairs({{"kernel_size", k}, {"dilation", d}, {"padding", p}, {"stride", s}});
  at::native::im2col_shape_check(self, T(), k[0], k[1], d[0], d[1], p[0], p[1], s[0], s[1]);
  const auto type = self.scalar_type();  // CPU's set: floating, complex and bool
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(type) || at::isComplexType(type) || type == at::kBool,
                              "\"im2col\" not implemented for '", c10::toString(type), "'");
  c10::DeviceGuard guard(self.device());
  const T x = self.dim() == 3 ? self.unsqueeze(0).contiguous() : self.contiguous();
  auto a = fold_args(x, {x.size(2), x.size(3)}, k, d, p, s, x.size(0) * x.size(1), "im2col");
  std::vector<int64_t> sizes = {x.size(0), x.size(1) * k[0] * k[1], a.out_h * a.out_w};
  if (self.dim() == 3) sizes.erase(sizes.begin());
  at::native::resize_output(out, sizes);
  if (out.numel() == 0) return out;
  into_contiguous(out, [&](const T& dst) {
    check_status(npu_kernels::im2col(current_native_stream(self.device().index()), a, x.const_data_ptr(), dst.data_ptr()),
                 "im2col", self.scalar_type());
  });
  return out;
}

T NF::col2im(const T& self, IntArrayRef size, IntArrayRef k, IntArrayRef d, IntArrayRef p, IntArrayRef s) {
  T out = at::empty({0}, self.options());
  return NF::col2im_out(self, size, k, d, p, s, out);
}

T& NF::col2im_out(const T& self, IntArrayRef size, IntArrayRef k, IntArrayRef d, IntArrayRef p, IntArrayRef s, T& out) {
  TORCH_CHECK(is_npu(self), "col2im: expected an npu tensor, got one on ", self.device());
  check_pairs({{"output_size", size}, {"kernel_size", k}, {"dilation", d}, {"padding", p}, {"stride", s}});
  at::native::col2im_shape_check(self, T(), size[0], size[1], k[0], k[1], d[0], d[1], p[0], p[1], s[0], s[1]);
  c10::DeviceGuard guard(self.device());
  const T cols = self.dim() == 2 ? self.unsqueeze(0).contiguous() : self.contiguous();
  const int64_t channels = cols.size(1) / (k[0] * k[1]);
  auto a = fold_args(cols, size, k, d, p, s, cols.size(0) * channels, "col2im");
  std::vector<int64_t> sizes = {cols.size(0), channels, size[0], size[1]};
  if (self.dim() == 2) sizes.erase(sizes.begin());
  at::native::resize_output(out, sizes);
  if (out.numel() == 0) return out;
  into_contiguous(out, [&](const T& dst) {
    check_status(npu_kernels::col2im(current_native_stream(self.device().index()), a, cols.const_data_ptr(), dst.data_ptr()),
                 "col2im", self.scalar_type());
  });
  return out;
}

}  // namespace torch_npu_sim
