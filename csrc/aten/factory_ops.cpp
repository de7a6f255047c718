// Range factories for npu: arange (arange.start_out), linspace.out, logspace.out, eye.out / eye.m_out,
// tril_indices / triu_indices (sizes from ATen's get_tril_size); _efficientzerotensor as materialised zeros.
// Sizes and argument checks follow ATen (at::native::compute_arange_size); values come from
// kernels/src/random.cpp (arange, linspace, eye). full/zeros/ones are empty + fill_ (core_ops.cpp).
#include <ATen/Dispatch.h>
#include <ATen/Dispatch_v2.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/RangeUtils.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/npu_tensor.h"
#include "fallback/dtype_fallback.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/random.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

// Runs `fill(contiguous)` on `out`, through a contiguous temporary when out is strided.
template <class F>
void fill_contiguous(at::Tensor& out, const F& fill) {
  if (out.numel() == 0) return;
  c10::DeviceGuard guard(out.device());
  if (out.is_contiguous()) {
    fill(out);
    return;
  }
  at::Tensor tmp = at::empty(out.sizes(), out.options());
  fill(tmp);
  out.copy_(tmp);
}

at::Tensor triangle_indices(int64_t row, int64_t col, int64_t offset, std::optional<at::ScalarType> dtype,
                            std::optional<at::Layout> layout, std::optional<at::Device> device,
                            std::optional<bool> pin_memory, bool upper) {
  at::native::check_args(row, col, layout);
  const at::ScalarType type = dtype.value_or(at::kLong);
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kLong || type == at::kInt, "\"", upper ? "triu_indices" : "tril_indices",
                              "\" not implemented for '", c10::toString(type), "'");
  const int64_t n =
      upper ? row * col - at::native::get_tril_size(row, col, offset - 1) : at::native::get_tril_size(row, col, offset);
  const auto options = at::TensorOptions().dtype(dtype.value_or(at::kLong)).device(device).pinned_memory(pin_memory);
  at::Tensor out = at::empty({2, n}, options);
  fill_contiguous(out, [&](at::Tensor& o) {
    const char* op = upper ? "triu_indices" : "tril_indices";
    NPU_CHECK(npu_kernels::triangle_indices(stream_of(o), tensor_desc(o, op), row, col, offset, upper));
  });
  return out;
}

}  // namespace

at::Tensor& NF::arange_out(const at::Scalar& start, const at::Scalar& end, const at::Scalar& step, at::Tensor& out) {
  int64_t size = 0;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "arange_npu",
                             [&] { size = at::native::compute_arange_size<scalar_t>(start, end, step); });
  if (out.numel() != size) {
    if (out.numel() > 0) {
      TORCH_WARN("The number of elements in the out tensor of shape ", out.sizes(), " is ", out.numel(),
                 " which does not match the computed number of elements ", size,
                 ". Note that this may occur as a result of rounding error. The out tensor will be resized to a "
                 "tensor of shape (",
                 size, ",).");
    }
    out.resize_({size});
  }
  fill_contiguous(out, [&](at::Tensor& o) {
    const bool integral = at::isIntegralType(o.scalar_type(), /*includeBool=*/true);
    NPU_CHECK(npu_kernels::arange(stream_of(o), tensor_desc(o, "arange"), start.toDouble(), step.toDouble(),
                                  integral ? start.toLong() : 0, integral ? step.toLong() : 0));
  });
  return out;
}

// A linspace / logspace end converted to the output's dtype as ATen converts it (Scalar::to, which raises CPU's
// overflow error), carried as a double.
template <typename S>
double real_part(S v) {
  if constexpr (c10::is_complex<S>::value) return static_cast<double>(v.real());
  else return static_cast<double>(v);
}
double typed_end(const at::Scalar& v, at::ScalarType type) {
  double d = 0;
  AT_DISPATCH_V2(type, "linspace", AT_WRAP([&] { d = real_part(v.to<scalar_t>()); }),
                 AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), at::kHalf, at::kBFloat16, at::kBool);
  return d;
}

at::Tensor& NF::linspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps, at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (out.numel() != steps) out.resize_({steps});
  if (steps == 1) return out.fill_(start);  // as ATen (fill_ converts with Scalar's overflow check)
  TORCH_CHECK_NOT_IMPLEMENTED(out.scalar_type() != at::kBool || steps < 2, "\"linspace_cpu\" not implemented for 'Bool'");
  if (out.is_complex() && (start.isComplex() || end.isComplex())) {
    throw_no_kernel_for_dtype("linspace: complex ends: no npu kernel");  // the CPU fallback (or_cpu)
  }
  const double s = typed_end(start, out.scalar_type()), e = typed_end(end, out.scalar_type());
  fill_contiguous(out, [&](at::Tensor& o) {
    NPU_CHECK(npu_kernels::linspace(stream_of(o), tensor_desc(o, "linspace"), s, e, false, 0.0));
  });
  return out;
}

at::Tensor& NF::logspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps, double base,
                             at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (out.numel() != steps) out.resize_({steps});
  if (steps == 1) {  // as ATen: base ** start, through fill_'s overflow check
    if (start.isComplex()) return out.fill_(std::pow(c10::complex<double>(base), start.toComplexDouble()));
    return out.fill_(std::pow(base, start.toDouble()));
  }
  TORCH_CHECK_NOT_IMPLEMENTED(out.scalar_type() != at::kBool || steps < 2, "\"logspace_cpu\" not implemented for 'Bool'");
  if (out.is_complex() && (start.isComplex() || end.isComplex())) {
    throw_no_kernel_for_dtype("logspace: complex ends: no npu kernel");  // the CPU fallback (or_cpu)
  }
  const double s = typed_end(start, out.scalar_type()), e = typed_end(end, out.scalar_type());
  fill_contiguous(out, [&](at::Tensor& o) {
    NPU_CHECK(npu_kernels::linspace(stream_of(o), tensor_desc(o, "logspace"), s, e, true, base));
  });
  return out;
}

at::Tensor& NF::eye_out(int64_t n, at::Tensor& out) { return NF::eye_out(n, n, out); }

at::Tensor& NF::eye_out(int64_t n, int64_t m, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  out.resize_({n, m});
  fill_contiguous(out, [&](at::Tensor& o) { NPU_CHECK(npu_kernels::eye(stream_of(o), tensor_desc(o, "eye"))); });
  return out;
}

at::Tensor NF::tril_indices(int64_t row, int64_t col, int64_t offset, std::optional<at::ScalarType> dtype,
                            std::optional<at::Layout> layout, std::optional<at::Device> device,
                            std::optional<bool> pin_memory) {
  return triangle_indices(row, col, offset, dtype, layout, device, pin_memory, false);
}

at::Tensor NF::triu_indices(int64_t row, int64_t col, int64_t offset, std::optional<at::ScalarType> dtype,
                            std::optional<at::Layout> layout, std::optional<at::Device> device,
                            std::optional<bool> pin_memory) {
  return triangle_indices(row, col, offset, dtype, layout, device, pin_memory, true);
}

// Autograd's zero gradients (sgn of a real tensor, ...). CPU and CUDA return a storage-less ZeroTensor; npu
// materialises the zeros: the same values, a tensor's memory instead of none.
at::Tensor NF::_efficientzerotensor(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                                    std::optional<at::Layout> layout, std::optional<at::Device> device,
                                    std::optional<bool> pin_memory) {
  return at::zeros(size, at::TensorOptions().dtype(dtype).layout(layout).device(device).pinned_memory(pin_memory));
}

}  // namespace torch_npu_sim
