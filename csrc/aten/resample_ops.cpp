// Registration of interpolation (upsample nearest / nearest-exact / linear / bilinear / bicubic / trilinear, and
// the antialiased bilinear / bicubic / Lanczos) and reflect / replicate padding, 1-D to 3-D, forward and backward.
// ATen's structured metas (or its padding checks) give shapes and errors; every op runs the separable resampling
// kernels (kernels/src/resample.cpp, resample_aa.cpp).
#include <ATen/core/Tensor.h>
#include <ATen/native/Padding.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_upsample_bicubic2d_aa_backward_meta.h>
#include <ATen/ops/_upsample_bicubic2d_aa_meta.h>
#include <ATen/ops/_upsample_bilinear2d_aa_backward_meta.h>
#include <ATen/ops/_upsample_bilinear2d_aa_meta.h>
#include <ATen/ops/_upsample_lanczos2d_aa_backward_meta.h>
#include <ATen/ops/_upsample_lanczos2d_aa_meta.h>
#include <ATen/ops/_upsample_nearest_exact1d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact1d_meta.h>
#include <ATen/ops/_upsample_nearest_exact2d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact2d_meta.h>
#include <ATen/ops/_upsample_nearest_exact3d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact3d_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/reflection_pad1d_backward_meta.h>
#include <ATen/ops/view_as_complex.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/reflection_pad1d_meta.h>
#include <ATen/ops/reflection_pad3d_backward_meta.h>
#include <ATen/ops/reflection_pad3d_meta.h>
#include <ATen/ops/replication_pad1d_backward_meta.h>
#include <ATen/ops/replication_pad1d_meta.h>
#include <ATen/ops/replication_pad2d_meta.h>
#include <ATen/ops/replication_pad3d_meta.h>
#include <ATen/ops/upsample_bicubic2d_backward_meta.h>
#include <ATen/ops/upsample_bicubic2d_meta.h>
#include <ATen/ops/upsample_bilinear2d_backward_meta.h>
#include <ATen/ops/upsample_bilinear2d_meta.h>
#include <ATen/ops/upsample_linear1d_backward_meta.h>
#include <ATen/ops/upsample_linear1d_meta.h>
#include <ATen/ops/upsample_nearest1d_backward_meta.h>
#include <ATen/ops/upsample_nearest1d_meta.h>
#include <ATen/ops/upsample_nearest2d_backward_meta.h>
#include <ATen/ops/upsample_nearest2d_meta.h>
#include <ATen/ops/upsample_nearest3d_backward_meta.h>
#include <ATen/ops/upsample_nearest3d_meta.h>
#include <ATen/ops/upsample_trilinear3d_backward_meta.h>
#include <ATen/ops/upsample_trilinear3d_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/npu_tensor.h"
#include "aten/structured.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "fallback/dtype_fallback.h"
#include "npu_kernels/resample.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using at::IntArrayRef;
using npu_kernels::ResampleArgs;
using npu_kernels::ResampleAxis;
using npu_kernels::ResampleMode;
using OptD = std::optional<double>;
using T = at::Tensor;

// What one op call needs besides its tensors: mode, spatial rank and the per-axis parameters.
struct Spec {
  ResampleMode mode;
  int spatial;  // 1, 2 or 3
  double scale_d = 0, scale_h = 0, scale_w = 0;
  bool align_corners = false;
  int64_t pad_w = 0, pad_h = 0, pad_d = 0;  // left, top, front
};

Spec interp(ResampleMode mode, int spatial, OptD sh, OptD sw, bool align = false, OptD sd = {}) {
  Spec s{mode, spatial};
  s.scale_d = sd.value_or(0.0);
  s.scale_h = sh.value_or(0.0);
  s.scale_w = sw.value_or(0.0);
  s.align_corners = align;
  return s;
}

Spec pad(ResampleMode mode, int spatial, IntArrayRef padding) {
  Spec s{mode, spatial};
  s.pad_w = padding[0];
  if (spatial >= 2) s.pad_h = padding[2];
  if (spatial == 3) s.pad_d = padding[4];
  return s;
}

ResampleAxis axis(int64_t in, int64_t out, double scale, const Spec& s, int64_t pad) {
  ResampleAxis ax;
  ax.in = in;
  ax.out = out;
  ax.scale = scale;
  ax.align_corners = s.align_corners;
  ax.pad_before = pad;
  return ax;
}

// `in` has the input geometry (the grad_input for backward), `out` the output's (grad_output's).
ResampleArgs make_args(const Spec& s, const T& in, const T& out, const char* op) {
  ResampleArgs a;
  a.dtype = kernel_dtype(in.scalar_type(), op);
  a.mode = s.mode;
  const int64_t in_w = in.size(-1), out_w = out.size(-1);
  const int64_t in_h = s.spatial >= 2 ? in.size(-2) : 1, out_h = s.spatial >= 2 ? out.size(-2) : 1;
  const int64_t in_d = s.spatial == 3 ? in.size(-3) : 1, out_d = s.spatial == 3 ? out.size(-3) : 1;
  a.planes = in_d * in_h * in_w > 0 ? in.numel() / (in_d * in_h * in_w) : 0;
  a.w = axis(in_w, out_w, s.scale_w, s, s.pad_w);
  a.h = axis(in_h, out_h, s.scale_h, s, s.pad_h);
  a.d = axis(in_d, out_d, s.scale_d, s, s.pad_d);
  return a;
}

// Runs the kernel from `src` into `dst` (any strides: non-contiguous ones go through a temporary).
void launch(const Spec& s, bool backward, const T& src, const T& dst, const char* op) {
  TORCH_CHECK(is_npu(src), op, ": expected an npu tensor, got one on ", src.device());
  TORCH_CHECK(src.device() == dst.device(), op, ": expected all tensors on the same device, got ", src.device(),
              " and ", dst.device());
  TORCH_CHECK(src.scalar_type() == dst.scalar_type(), op, ": expected grad_output and output of the same dtype, got ",
              src.scalar_type(), " and ", dst.scalar_type());
  // CPU's dtype sets: interpolation takes floating types, and uint8 but for (tri)linear in 1-D and 3-D; padding
  // any type but bool. (CPU lacks the antialiased modes in 16 bits; they run here, as on CUDA.)
  const at::ScalarType type = src.scalar_type();
  const bool linear_1d_3d = s.mode == ResampleMode::kLinear && s.spatial != 2;
  const bool supported = s.mode == ResampleMode::kReflect || s.mode == ResampleMode::kReplicate
                             ? type != at::kBool
                             : at::isFloatingType(type) || (type == at::kByte && !linear_1d_3d);
  TORCH_CHECK_NOT_IMPLEMENTED(supported, "\"", op, "\" not implemented for '", c10::toString(type), "'");
  if (dst.numel() == 0) return;
  c10::DeviceGuard guard(src.device());
  if (backward && src.is_complex()) {
    // The gradient is linear: the real and imaginary parts run as separate planes of the real kernel (its
    // accumulation has no complex form).
    const T parts = at::view_as_real(src.resolve_conj()).movedim(-1, 0);
    std::vector<int64_t> sizes{2};
    sizes.insert(sizes.end(), dst.sizes().begin(), dst.sizes().end());
    const T out_parts = at::empty(sizes, dst.options().dtype(c10::toRealValueType(type)));
    launch(s, true, parts, out_parts, op);
    const_cast<T&>(dst).copy_(at::view_as_complex(out_parts.movedim(0, -1).contiguous()));
    return;
  }
  const T in = src.contiguous();
  const bool direct = dst.is_contiguous();
  T out = direct ? dst : at::empty(dst.sizes(), dst.options().memory_format(at::MemoryFormat::Contiguous));
  const ResampleArgs a = backward ? make_args(s, out, in, op) : make_args(s, in, out, op);
  const auto stream = current_native_stream(src.device().index());
  const std::size_t scratch_bytes = backward ? 0 : npu_kernels::resample_scratch_bytes(a);
  const T scratch = scratch_bytes > 0 ? at::empty({static_cast<int64_t>(scratch_bytes)}, in.options().dtype(at::kByte))
                                      : T();
  const npu_sim::Status status =
      backward ? npu_kernels::resample_backward(stream, a, in.const_data_ptr(), out.data_ptr())
               : npu_kernels::resample(stream, a, in.const_data_ptr(), out.data_ptr(),
                                       scratch.defined() ? scratch.data_ptr() : nullptr);
  if (status == npu_sim::Status::kInvalidValue) {
    throw_no_kernel_for_dtype(c10::str(op, ": no npu kernel for dtype ", src.scalar_type()));
  }
  NPU_CHECK(status);
  if (!direct) const_cast<T&>(dst).copy_(out);
}

// The kernel callable NpuStructured's helpers expect: the meta has allocated the output.
auto forward_kernel(Spec s, const T& input, const char* op) {
  return [s, &input, op](auto& meta) { launch(s, false, input, meta.maybe_get_output(0), op); };
}
auto backward_kernel(Spec s, const T& grad_output, const char* op) {
  return [s, &grad_output, op](auto& meta) { launch(s, true, grad_output, meta.maybe_get_output(0), op); };
}

// reflection_pad2d and replication_pad{2,3}d's backward have no structured meta: CPU's checks, written out for
// `spatial` = 2 or 3 padded dimensions (padding: left, right, top, bottom[, front, back]).
std::vector<int64_t> pad_output_size(const T& input, IntArrayRef padding, int spatial, bool reflect, const char* op) {
  if (spatial == 2) at::native::padding::check_valid_input<2>(input, padding);
  else at::native::padding::check_valid_input<3>(input, padding);
  std::vector<int64_t> sizes(input.sizes().begin(), input.sizes().end());
  static const char* const names[] = {"W", "H", "D"};
  for (int k = 0; k < spatial; ++k) {  // k = 0: the last dimension (w)
    const int64_t dim = input.dim() - 1 - k, in = input.size(dim);
    const int64_t before = padding[2 * k], after = padding[2 * k + 1];
    if (reflect) {
      TORCH_CHECK(before < in && after < in, "Argument #", 4 + 2 * k, ": Padding size should be less than the ",
                  "corresponding input dimension, but got: padding (", before, ", ", after, ") at dimension ", dim,
                  " of input ", input.sizes());
    }
    sizes[dim] = in + before + after;
    TORCH_CHECK(sizes[dim] >= 1, op, ": input (", names[k], ": ", in, ") is too small. Calculated output ", names[k],
                ": ", sizes[dim]);
  }
  return sizes;
}

T& pad2d_out(ResampleMode mode, const T& self, IntArrayRef padding, T& out, const char* op) {
  const auto sizes = pad_output_size(self, padding, 2, mode == ResampleMode::kReflect, op);
  at::native::resize_output(out, sizes);
  launch(pad(mode, 2, padding), false, self, out, op);
  return out;
}

T& pad_backward_out(ResampleMode mode, int spatial, const T& grad, const T& self, IntArrayRef padding, T& grad_input,
                    const char* op) {
  const auto sizes = pad_output_size(self, padding, spatial, mode == ResampleMode::kReflect, op);
  TORCH_CHECK(grad.sizes() == IntArrayRef(sizes), op, ": grad_output has shape ", grad.sizes(), ", expected ",
              IntArrayRef(sizes));
  at::native::resize_output(grad_input, self.sizes());
  launch(pad(mode, spatial, padding), true, grad, grad_input, op);
  return grad_input;
}

}  // namespace

// The interpolation ops: each flavour runs the op's ATen meta function over the separable resampling kernel.

T NF::upsample_nearest1d(const T& self, IntArrayRef size, OptD sw) {
  return structured_functional<at::meta::structured_upsample_nearest1d>(
      forward_kernel(interp(ResampleMode::kNearest, 1, {}, sw), self, "upsample_nearest1d"), self, size, sw);
}

T& NF::upsample_nearest1d_out(const T& self, IntArrayRef size, OptD sw, T& out) {
  return structured_out<at::meta::structured_upsample_nearest1d>(
      forward_kernel(interp(ResampleMode::kNearest, 1, {}, sw), self, "upsample_nearest1d"), out, self, size, sw);
}

T NF::upsample_nearest1d_backward(const T& g, IntArrayRef size, IntArrayRef in_size, OptD sw) {
  return structured_functional<at::meta::structured_upsample_nearest1d_backward>(
      backward_kernel(interp(ResampleMode::kNearest, 1, {}, sw), g, "upsample_nearest1d_backward"), g, size, in_size,
      sw);
}

T& NF::upsample_nearest1d_backward_out(const T& g, IntArrayRef size, IntArrayRef in_size, OptD sw, T& out) {
  return structured_out<at::meta::structured_upsample_nearest1d_backward>(
      backward_kernel(interp(ResampleMode::kNearest, 1, {}, sw), g, "upsample_nearest1d_backward"), out, g, size,
      in_size, sw);
}

T NF::upsample_nearest2d(const T& self, IntArrayRef size, OptD sh, OptD sw) {
  return structured_functional<at::meta::structured_upsample_nearest2d>(
      forward_kernel(interp(ResampleMode::kNearest, 2, sh, sw), self, "upsample_nearest2d"), self, size, sh, sw);
}

T& NF::upsample_nearest2d_out(const T& self, IntArrayRef size, OptD sh, OptD sw, T& out) {
  return structured_out<at::meta::structured_upsample_nearest2d>(
      forward_kernel(interp(ResampleMode::kNearest, 2, sh, sw), self, "upsample_nearest2d"), out, self, size, sh, sw);
}

T NF::upsample_nearest2d_backward(const T& g, IntArrayRef size, IntArrayRef in_size, OptD sh, OptD sw) {
  return structured_functional<at::meta::structured_upsample_nearest2d_backward>(
      backward_kernel(interp(ResampleMode::kNearest, 2, sh, sw), g, "upsample_nearest2d_backward"), g, size, in_size,
      sh, sw);
}

T& NF::upsample_nearest2d_backward_out(const T& g, IntArrayRef size, IntArrayRef in_size, OptD sh, OptD sw, T& out) {
  return structured_out<at::meta::structured_upsample_nearest2d_backward>(
      backward_kernel(interp(ResampleMode::kNearest, 2, sh, sw), g, "upsample_nearest2d_backward"), out, g, size,
      in_size, sh, sw);
}

T NF::_upsample_nearest_exact1d(const T& self, IntArrayRef size, OptD sw) {
  return structured_functional<at::meta::structured__upsample_nearest_exact1d>(
      forward_kernel(interp(ResampleMode::kNearestExact, 1, {}, sw), self, "_upsample_nearest_exact1d"), self, size,
      sw);
}

T& NF::_upsample_nearest_exact1d_out(const T& self, IntArrayRef size, OptD sw, T& out) {
  return structured_out<at::meta::structured__upsample_nearest_exact1d>(
      forward_kernel(interp(ResampleMode::kNearestExact, 1, {}, sw), self, "_upsample_nearest_exact1d"), out, self,
      size, sw);
}

T NF::_upsample_nearest_exact1d_backward(const T& g, IntArrayRef size, IntArrayRef in_size, OptD sw) {
  return structured_functional<at::meta::structured__upsample_nearest_exact1d_backward>(
      backward_kernel(interp(ResampleMode::kNearestExact, 1, {}, sw), g, "_upsample_nearest_exact1d_backward"), g, size,
      in_size, sw);
}

T& NF::_upsample_nearest_exact1d_backward_out(const T& g, IntArrayRef size, IntArrayRef in_size, OptD sw, T& out) {
  return structured_out<at::meta::structured__upsample_nearest_exact1d_backward>(
      backward_kernel(interp(ResampleMode::kNearestExact, 1, {}, sw), g, "_upsample_nearest_exact1d_backward"), out, g,
      size, in_size, sw);
}

T NF::_upsample_nearest_exact2d(const T& self, IntArrayRef size, OptD sh, OptD sw) {
  return structured_functional<at::meta::structured__upsample_nearest_exact2d>(
      forward_kernel(interp(ResampleMode::kNearestExact, 2, sh, sw), self, "_upsample_nearest_exact2d"), self, size, sh,
      sw);
}

T& NF::_upsample_nearest_exact2d_out(const T& self, IntArrayRef size, OptD sh, OptD sw, T& out) {
  return structured_out<at::meta::structured__upsample_nearest_exact2d>(
      forward_kernel(interp(ResampleMode::kNearestExact, 2, sh, sw), self, "_upsample_nearest_exact2d"), out, self,
      size, sh, sw);
}

T NF::_upsample_nearest_exact2d_backward(const T& g, IntArrayRef size, IntArrayRef in_size, OptD sh, OptD sw) {
  return structured_functional<at::meta::structured__upsample_nearest_exact2d_backward>(
      backward_kernel(interp(ResampleMode::kNearestExact, 2, sh, sw), g, "_upsample_nearest_exact2d_backward"), g, size,
      in_size, sh, sw);
}

T& NF::_upsample_nearest_exact2d_backward_out(const T& g, IntArrayRef size, IntArrayRef in_size, OptD sh, OptD sw,
                                              T& out) {
  return structured_out<at::meta::structured__upsample_nearest_exact2d_backward>(
      backward_kernel(interp(ResampleMode::kNearestExact, 2, sh, sw), g, "_upsample_nearest_exact2d_backward"), out, g,
      size, in_size, sh, sw);
}

T NF::upsample_nearest3d(const T& self, IntArrayRef size, OptD sd, OptD sh, OptD sw) {
  const Spec s = interp(ResampleMode::kNearest, 3, sh, sw, false, sd);
  return structured_functional<at::meta::structured_upsample_nearest3d>(forward_kernel(s, self, "upsample_nearest3d"),
      self, size, sd, sh, sw);
}

T& NF::upsample_nearest3d_out(const T& self, IntArrayRef size, OptD sd, OptD sh, OptD sw, T& out) {
  const Spec s = interp(ResampleMode::kNearest, 3, sh, sw, false, sd);
  return structured_out<at::meta::structured_upsample_nearest3d>(forward_kernel(s, self, "upsample_nearest3d"), out,
      self, size, sd, sh, sw);
}

T NF::upsample_nearest3d_backward(const T& g, IntArrayRef size, IntArrayRef in_size, OptD sd, OptD sh, OptD sw) {
  const Spec s = interp(ResampleMode::kNearest, 3, sh, sw, false, sd);
  return structured_functional<at::meta::structured_upsample_nearest3d_backward>(
      backward_kernel(s, g, "upsample_nearest3d_backward"), g, size, in_size, sd, sh, sw);
}

T& NF::upsample_nearest3d_backward_out(const T& g, IntArrayRef size, IntArrayRef in_size, OptD sd, OptD sh, OptD sw,
                                       T& out) {
  const Spec s = interp(ResampleMode::kNearest, 3, sh, sw, false, sd);
  return structured_out<at::meta::structured_upsample_nearest3d_backward>(
      backward_kernel(s, g, "upsample_nearest3d_backward"), out, g, size, in_size, sd, sh, sw);
}

T NF::_upsample_nearest_exact3d(const T& self, IntArrayRef size, OptD sd, OptD sh, OptD sw) {
  const Spec s = interp(ResampleMode::kNearestExact, 3, sh, sw, false, sd);
  return structured_functional<at::meta::structured__upsample_nearest_exact3d>(
      forward_kernel(s, self, "_upsample_nearest_exact3d"), self, size, sd, sh, sw);
}

T& NF::_upsample_nearest_exact3d_out(const T& self, IntArrayRef size, OptD sd, OptD sh, OptD sw, T& out) {
  const Spec s = interp(ResampleMode::kNearestExact, 3, sh, sw, false, sd);
  return structured_out<at::meta::structured__upsample_nearest_exact3d>(
      forward_kernel(s, self, "_upsample_nearest_exact3d"), out, self, size, sd, sh, sw);
}

T NF::_upsample_nearest_exact3d_backward(const T& g, IntArrayRef size, IntArrayRef in_size, OptD sd, OptD sh, OptD sw) {
  const Spec s = interp(ResampleMode::kNearestExact, 3, sh, sw, false, sd);
  return structured_functional<at::meta::structured__upsample_nearest_exact3d_backward>(
      backward_kernel(s, g, "_upsample_nearest_exact3d_backward"), g, size, in_size, sd, sh, sw);
}

T& NF::_upsample_nearest_exact3d_backward_out(const T& g, IntArrayRef size, IntArrayRef in_size, OptD sd, OptD sh,
                                              OptD sw, T& out) {
  const Spec s = interp(ResampleMode::kNearestExact, 3, sh, sw, false, sd);
  return structured_out<at::meta::structured__upsample_nearest_exact3d_backward>(
      backward_kernel(s, g, "_upsample_nearest_exact3d_backward"), out, g, size, in_size, sd, sh, sw);
}

T NF::upsample_linear1d(const T& self, IntArrayRef size, bool align, OptD sw) {
  return structured_functional<at::meta::structured_upsample_linear1d>(
      forward_kernel(interp(ResampleMode::kLinear, 1, {}, sw, align), self, "upsample_linear1d"), self, size, align,
      sw);
}

T& NF::upsample_linear1d_out(const T& self, IntArrayRef size, bool align, OptD sw, T& out) {
  return structured_out<at::meta::structured_upsample_linear1d>(
      forward_kernel(interp(ResampleMode::kLinear, 1, {}, sw, align), self, "upsample_linear1d"), out, self, size,
      align, sw);
}

T NF::upsample_linear1d_backward(const T& g, IntArrayRef size, IntArrayRef in_size, bool align, OptD sw) {
  return structured_functional<at::meta::structured_upsample_linear1d_backward>(
      backward_kernel(interp(ResampleMode::kLinear, 1, {}, sw, align), g, "upsample_linear1d_backward"), g, size,
      in_size, align, sw);
}

T& NF::upsample_linear1d_backward_out(const T& g, IntArrayRef size, IntArrayRef in_size, bool align, OptD sw, T& out) {
  return structured_out<at::meta::structured_upsample_linear1d_backward>(
      backward_kernel(interp(ResampleMode::kLinear, 1, {}, sw, align), g, "upsample_linear1d_backward"), out, g, size,
      in_size, align, sw);
}

T NF::upsample_bilinear2d(const T& self, IntArrayRef size, bool align, OptD sh, OptD sw) {
  return structured_functional<at::meta::structured_upsample_bilinear2d>(
      forward_kernel(interp(ResampleMode::kLinear, 2, sh, sw, align), self, "upsample_bilinear2d"), self, size, align,
      sh, sw);
}

T& NF::upsample_bilinear2d_out(const T& self, IntArrayRef size, bool align, OptD sh, OptD sw, T& out) {
  return structured_out<at::meta::structured_upsample_bilinear2d>(
      forward_kernel(interp(ResampleMode::kLinear, 2, sh, sw, align), self, "upsample_bilinear2d"), out, self, size,
      align, sh, sw);
}

T NF::upsample_bilinear2d_backward(const T& g, IntArrayRef size, IntArrayRef in_size, bool align, OptD sh, OptD sw) {
  return structured_functional<at::meta::structured_upsample_bilinear2d_backward>(
      backward_kernel(interp(ResampleMode::kLinear, 2, sh, sw, align), g, "upsample_bilinear2d_backward"), g, size,
      in_size, align, sh, sw);
}

T& NF::upsample_bilinear2d_backward_out(const T& g, IntArrayRef size, IntArrayRef in_size, bool align, OptD sh, OptD sw,
                                        T& out) {
  return structured_out<at::meta::structured_upsample_bilinear2d_backward>(
      backward_kernel(interp(ResampleMode::kLinear, 2, sh, sw, align), g, "upsample_bilinear2d_backward"), out, g, size,
      in_size, align, sh, sw);
}

T NF::upsample_bicubic2d(const T& self, IntArrayRef size, bool align, OptD sh, OptD sw) {
  return structured_functional<at::meta::structured_upsample_bicubic2d>(
      forward_kernel(interp(ResampleMode::kCubic, 2, sh, sw, align), self, "upsample_bicubic2d"), self, size, align,
      sh, sw);
}

T& NF::upsample_bicubic2d_out(const T& self, IntArrayRef size, bool align, OptD sh, OptD sw, T& out) {
  return structured_out<at::meta::structured_upsample_bicubic2d>(
      forward_kernel(interp(ResampleMode::kCubic, 2, sh, sw, align), self, "upsample_bicubic2d"), out, self, size,
      align, sh, sw);
}

T NF::upsample_bicubic2d_backward(const T& g, IntArrayRef size, IntArrayRef in_size, bool align, OptD sh, OptD sw) {
  return structured_functional<at::meta::structured_upsample_bicubic2d_backward>(
      backward_kernel(interp(ResampleMode::kCubic, 2, sh, sw, align), g, "upsample_bicubic2d_backward"), g, size,
      in_size, align, sh, sw);
}

T& NF::upsample_bicubic2d_backward_out(const T& g, IntArrayRef size, IntArrayRef in_size, bool align, OptD sh, OptD sw,
                                       T& out) {
  return structured_out<at::meta::structured_upsample_bicubic2d_backward>(
      backward_kernel(interp(ResampleMode::kCubic, 2, sh, sw, align), g, "upsample_bicubic2d_backward"), out, g, size,
      in_size, align, sh, sw);
}

// The antialiased modes (PIL's filters, 2-D).
T NF::_upsample_bilinear2d_aa(const T& self, IntArrayRef size, bool align, OptD sh, OptD sw) {
  return structured_functional<at::meta::structured__upsample_bilinear2d_aa>(
      forward_kernel(interp(ResampleMode::kLinearAA, 2, sh, sw, align), self, "_upsample_bilinear2d_aa"), self, size,
      align, sh, sw);
}

T& NF::_upsample_bilinear2d_aa_out(const T& self, IntArrayRef size, bool align, OptD sh, OptD sw, T& out) {
  return structured_out<at::meta::structured__upsample_bilinear2d_aa>(
      forward_kernel(interp(ResampleMode::kLinearAA, 2, sh, sw, align), self, "_upsample_bilinear2d_aa"), out, self,
      size, align, sh, sw);
}

T NF::_upsample_bilinear2d_aa_backward(const T& g, IntArrayRef size, IntArrayRef in_size, bool align, OptD sh,
                                       OptD sw) {
  return structured_functional<at::meta::structured__upsample_bilinear2d_aa_backward>(
      backward_kernel(interp(ResampleMode::kLinearAA, 2, sh, sw, align), g, "_upsample_bilinear2d_aa_backward"), g,
      size, in_size, align, sh, sw);
}

T& NF::_upsample_bilinear2d_aa_backward_out(const T& g, IntArrayRef size, IntArrayRef in_size, bool align, OptD sh,
                                            OptD sw, T& out) {
  return structured_out<at::meta::structured__upsample_bilinear2d_aa_backward>(
      backward_kernel(interp(ResampleMode::kLinearAA, 2, sh, sw, align), g, "_upsample_bilinear2d_aa_backward"), out,
      g, size, in_size, align, sh, sw);
}

T NF::_upsample_bicubic2d_aa(const T& self, IntArrayRef size, bool align, OptD sh, OptD sw) {
  return structured_functional<at::meta::structured__upsample_bicubic2d_aa>(
      forward_kernel(interp(ResampleMode::kCubicAA, 2, sh, sw, align), self, "_upsample_bicubic2d_aa"), self, size,
      align, sh, sw);
}

T& NF::_upsample_bicubic2d_aa_out(const T& self, IntArrayRef size, bool align, OptD sh, OptD sw, T& out) {
  return structured_out<at::meta::structured__upsample_bicubic2d_aa>(
      forward_kernel(interp(ResampleMode::kCubicAA, 2, sh, sw, align), self, "_upsample_bicubic2d_aa"), out, self,
      size, align, sh, sw);
}

T NF::_upsample_bicubic2d_aa_backward(const T& g, IntArrayRef size, IntArrayRef in_size, bool align, OptD sh,
                                      OptD sw) {
  return structured_functional<at::meta::structured__upsample_bicubic2d_aa_backward>(
      backward_kernel(interp(ResampleMode::kCubicAA, 2, sh, sw, align), g, "_upsample_bicubic2d_aa_backward"), g, size,
      in_size, align, sh, sw);
}

T& NF::_upsample_bicubic2d_aa_backward_out(const T& g, IntArrayRef size, IntArrayRef in_size, bool align, OptD sh,
                                           OptD sw, T& out) {
  return structured_out<at::meta::structured__upsample_bicubic2d_aa_backward>(
      backward_kernel(interp(ResampleMode::kCubicAA, 2, sh, sw, align), g, "_upsample_bicubic2d_aa_backward"), out, g,
      size, in_size, align, sh, sw);
}

T NF::_upsample_lanczos2d_aa(const T& self, IntArrayRef size, bool align, OptD sh, OptD sw) {
  return structured_functional<at::meta::structured__upsample_lanczos2d_aa>(
      forward_kernel(interp(ResampleMode::kLanczosAA, 2, sh, sw, align), self, "_upsample_lanczos2d_aa"), self, size,
      align, sh, sw);
}

T& NF::_upsample_lanczos2d_aa_out(const T& self, IntArrayRef size, bool align, OptD sh, OptD sw, T& out) {
  return structured_out<at::meta::structured__upsample_lanczos2d_aa>(
      forward_kernel(interp(ResampleMode::kLanczosAA, 2, sh, sw, align), self, "_upsample_lanczos2d_aa"), out, self,
      size, align, sh, sw);
}

T NF::_upsample_lanczos2d_aa_backward(const T& g, IntArrayRef size, IntArrayRef in_size, bool align, OptD sh,
                                      OptD sw) {
  return structured_functional<at::meta::structured__upsample_lanczos2d_aa_backward>(
      backward_kernel(interp(ResampleMode::kLanczosAA, 2, sh, sw, align), g, "_upsample_lanczos2d_aa_backward"), g,
      size, in_size, align, sh, sw);
}

T& NF::_upsample_lanczos2d_aa_backward_out(const T& g, IntArrayRef size, IntArrayRef in_size, bool align, OptD sh,
                                           OptD sw, T& out) {
  return structured_out<at::meta::structured__upsample_lanczos2d_aa_backward>(
      backward_kernel(interp(ResampleMode::kLanczosAA, 2, sh, sw, align), g, "_upsample_lanczos2d_aa_backward"), out,
      g, size, in_size, align, sh, sw);
}

T NF::upsample_trilinear3d(const T& self, IntArrayRef size, bool align, OptD sd, OptD sh, OptD sw) {
  return structured_functional<at::meta::structured_upsample_trilinear3d>(
      forward_kernel(interp(ResampleMode::kLinear, 3, sh, sw, align, sd), self, "upsample_trilinear3d"), self, size,
      align, sd, sh, sw);
}

T& NF::upsample_trilinear3d_out(const T& self, IntArrayRef size, bool align, OptD sd, OptD sh, OptD sw, T& out) {
  return structured_out<at::meta::structured_upsample_trilinear3d>(
      forward_kernel(interp(ResampleMode::kLinear, 3, sh, sw, align, sd), self, "upsample_trilinear3d"), out, self,
      size, align, sd, sh, sw);
}

T NF::upsample_trilinear3d_backward(const T& g, IntArrayRef size, IntArrayRef in_size, bool align, OptD sd, OptD sh,
                                    OptD sw) {
  return structured_functional<at::meta::structured_upsample_trilinear3d_backward>(
      backward_kernel(interp(ResampleMode::kLinear, 3, sh, sw, align, sd), g, "upsample_trilinear3d_backward"), g,
      size, in_size, align, sd, sh, sw);
}

T& NF::upsample_trilinear3d_backward_out(const T& g, IntArrayRef size, IntArrayRef in_size, bool align, OptD sd,
                                         OptD sh, OptD sw, T& out) {
  return structured_out<at::meta::structured_upsample_trilinear3d_backward>(
      backward_kernel(interp(ResampleMode::kLinear, 3, sh, sw, align, sd), g, "upsample_trilinear3d_backward"), out,
      g, size, in_size, align, sd, sh, sw);
}

// 1-D padding and replication_pad2d: structured metas
T NF::reflection_pad1d(const T& self, IntArrayRef p) {
  return structured_functional<at::meta::structured_reflection_pad1d>(
      forward_kernel(pad(ResampleMode::kReflect, 1, p), self, "reflection_pad1d"), self, p);
}

T& NF::reflection_pad1d_out(const T& self, IntArrayRef p, T& out) {
  return structured_out<at::meta::structured_reflection_pad1d>(
      forward_kernel(pad(ResampleMode::kReflect, 1, p), self, "reflection_pad1d"), out, self, p);
}

T NF::reflection_pad1d_backward(const T& g, const T& self, IntArrayRef p) {
  return structured_functional<at::meta::structured_reflection_pad1d_backward>(
      backward_kernel(pad(ResampleMode::kReflect, 1, p), g, "reflection_pad1d_backward"), g, self, p);
}

T& NF::reflection_pad1d_backward_out(const T& g, const T& self, IntArrayRef p, T& out) {
  return structured_out<at::meta::structured_reflection_pad1d_backward>(
      backward_kernel(pad(ResampleMode::kReflect, 1, p), g, "reflection_pad1d_backward"), out, g, self, p);
}

T NF::replication_pad1d(const T& self, IntArrayRef p) {
  return structured_functional<at::meta::structured_replication_pad1d>(
      forward_kernel(pad(ResampleMode::kReplicate, 1, p), self, "replication_pad1d"), self, p);
}

T& NF::replication_pad1d_out(const T& self, IntArrayRef p, T& out) {
  return structured_out<at::meta::structured_replication_pad1d>(
      forward_kernel(pad(ResampleMode::kReplicate, 1, p), self, "replication_pad1d"), out, self, p);
}

T NF::replication_pad1d_backward(const T& g, const T& self, IntArrayRef p) {
  return structured_functional<at::meta::structured_replication_pad1d_backward>(
      backward_kernel(pad(ResampleMode::kReplicate, 1, p), g, "replication_pad1d_backward"), g, self, p);
}

T& NF::replication_pad1d_backward_out(const T& g, const T& self, IntArrayRef p, T& out) {
  return structured_out<at::meta::structured_replication_pad1d_backward>(
      backward_kernel(pad(ResampleMode::kReplicate, 1, p), g, "replication_pad1d_backward"), out, g, self, p);
}

T NF::replication_pad2d(const T& self, IntArrayRef p) {
  return structured_functional<at::meta::structured_replication_pad2d>(
      forward_kernel(pad(ResampleMode::kReplicate, 2, p), self, "replication_pad2d"), self, p);
}

T& NF::replication_pad2d_out(const T& self, IntArrayRef p, T& out) {
  return structured_out<at::meta::structured_replication_pad2d>(
      forward_kernel(pad(ResampleMode::kReplicate, 2, p), self, "replication_pad2d"), out, self, p);
}

// 3-D padding: structured metas but for replication_pad3d's backward
T NF::reflection_pad3d(const T& self, IntArrayRef p) {
  return structured_functional<at::meta::structured_reflection_pad3d>(
      forward_kernel(pad(ResampleMode::kReflect, 3, p), self, "reflection_pad3d"), self, p);
}

T& NF::reflection_pad3d_out(const T& self, IntArrayRef p, T& out) {
  return structured_out<at::meta::structured_reflection_pad3d>(
      forward_kernel(pad(ResampleMode::kReflect, 3, p), self, "reflection_pad3d"), out, self, p);
}

T NF::reflection_pad3d_backward(const T& g, const T& self, IntArrayRef p) {
  return structured_functional<at::meta::structured_reflection_pad3d_backward>(
      backward_kernel(pad(ResampleMode::kReflect, 3, p), g, "reflection_pad3d_backward"), g, self, p);
}

T& NF::reflection_pad3d_backward_out(const T& g, const T& self, IntArrayRef p, T& out) {
  return structured_out<at::meta::structured_reflection_pad3d_backward>(
      backward_kernel(pad(ResampleMode::kReflect, 3, p), g, "reflection_pad3d_backward"), out, g, self, p);
}

T NF::replication_pad3d(const T& self, IntArrayRef p) {
  return structured_functional<at::meta::structured_replication_pad3d>(
      forward_kernel(pad(ResampleMode::kReplicate, 3, p), self, "replication_pad3d"), self, p);
}

T& NF::replication_pad3d_out(const T& self, IntArrayRef p, T& out) {
  return structured_out<at::meta::structured_replication_pad3d>(
      forward_kernel(pad(ResampleMode::kReplicate, 3, p), self, "replication_pad3d"), out, self, p);
}

T NF::replication_pad3d_backward(const T& g, const T& self, IntArrayRef p) {
  T out = at::empty({0}, self.options());
  return pad_backward_out(ResampleMode::kReplicate, 3, g, self, p, out, "replication_pad3d_backward");
}

T& NF::replication_pad3d_backward_out(const T& g, const T& self, IntArrayRef p, T& out) {
  return pad_backward_out(ResampleMode::kReplicate, 3, g, self, p, out, "replication_pad3d_backward");
}

// 2-D padding without metas
T NF::reflection_pad2d(const T& self, IntArrayRef p) {
  T out = at::empty({0}, self.options());
  return pad2d_out(ResampleMode::kReflect, self, p, out, "reflection_pad2d");
}

T& NF::reflection_pad2d_out(const T& self, IntArrayRef p, T& out) {
  return pad2d_out(ResampleMode::kReflect, self, p, out, "reflection_pad2d");
}

T NF::reflection_pad2d_backward(const T& g, const T& self, IntArrayRef p) {
  T out = at::empty({0}, self.options());
  return pad_backward_out(ResampleMode::kReflect, 2, g, self, p, out, "reflection_pad2d_backward");
}

T& NF::reflection_pad2d_backward_out(const T& g, const T& self, IntArrayRef p, T& out) {
  return pad_backward_out(ResampleMode::kReflect, 2, g, self, p, out, "reflection_pad2d_backward");
}

T NF::replication_pad2d_backward(const T& g, const T& self, IntArrayRef p) {
  T out = at::empty({0}, self.options());
  return pad_backward_out(ResampleMode::kReplicate, 2, g, self, p, out, "replication_pad2d_backward");
}

T& NF::replication_pad2d_backward_out(const T& g, const T& self, IntArrayRef p, T& out) {
  return pad_backward_out(ResampleMode::kReplicate, 2, g, self, p, out, "replication_pad2d_backward");
}

}  // namespace torch_npu_sim
