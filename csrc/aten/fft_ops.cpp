// torch.fft on npu: the three ATen FFT primitives every torch.fft function, stft/istft and their gradients
// reduce to (_fft_c2c, _fft_r2c, _fft_c2r, + .out), each one transform of kernels/fft (pocketfft) on the stream.
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/SpectralOpsUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "npu_kernels/fft.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
using at::IntArrayRef;
using at::Tensor;
namespace fft = npu_kernels::fft;

namespace {

std::vector<int64_t> wrapped_dims(const Tensor& t, IntArrayRef dim, const char* op) {
  TORCH_CHECK(!dim.empty(), op, ": expected at least one dim to transform");
  std::vector<int64_t> dims;
  for (int64_t d : dim) dims.push_back(at::maybe_wrap_dim(d, t.dim()));
  return dims;
}

// The normalization factor of ATen's fft_norm_mode over the signal sizes of `dims` (of the complex side for c2c,
// the real side for r2c / c2r).
double norm_scale(const Tensor& signal, const std::vector<int64_t>& dims, int64_t normalization) {
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(signal.size(d));
  switch (static_cast<at::native::fft_norm_mode>(normalization)) {
    case at::native::fft_norm_mode::none: return 1.0;
    case at::native::fft_norm_mode::by_root_n: return 1.0 / std::sqrt(n);
    case at::native::fft_norm_mode::by_n: return 1.0 / n;
  }
  TORCH_CHECK(false, "fft: unknown normalization mode ", normalization);
}

npu_kernels::DType complex_dtype(at::ScalarType t, const char* op) {
  switch (t) {
    case at::kFloat: case at::kComplexFloat: return npu_kernels::DType::kComplex64;
    case at::kDouble: case at::kComplexDouble: return npu_kernels::DType::kComplex128;
    default: TORCH_CHECK(false, op, ": unsupported dtype ", t, " on npu (float, double, cfloat, cdouble)");
  }
}

// Runs `t` from `in` into `out` (a fresh tensor) on in's stream.
void run(fft::Transform t, const Tensor& in, const Tensor& out, std::vector<int64_t> dims, const char* op,
         const Tensor& scratch = Tensor()) {
  t.in_shape = in.sizes().vec(), t.in_strides = in.strides().vec();
  t.out_shape = out.sizes().vec(), t.out_strides = out.strides().vec();
  t.axes = std::move(dims);
  c10::DeviceGuard guard(in.device());
  const auto status = fft::execute(stream_of(in), t, in.const_data_ptr(), out.data_ptr(),
                                   scratch.defined() ? scratch.data_ptr() : nullptr);
  TORCH_CHECK(status != npu_sim::Status::kInvalidValue, op, ": invalid transform of input ", in.sizes(), " over dims ",
              t.axes, " into ", out.sizes());
  NPU_CHECK(status);
}

// The dims of `dims` in decreasing stride order of `t` (stable), the last one kept last if `keep_last`: the order
// ATen's FFTs (and their meta functions) transform them in.
std::vector<int64_t> sorted_dims(const Tensor& t, std::vector<int64_t> dims, bool keep_last = false) {
  const auto strides = t.strides();
  std::stable_sort(dims.begin(), dims.end() - (keep_last ? 1 : 0),
                   [&](int64_t a, int64_t b) { return strides[a] > strides[b]; });
  return dims;
}

// The strides of an output laid out as ATen's _exec_fft lays it out (the meta function of the FFTs for devices
// other than CUDA, which torch.compile plans buffers by; CPU's layout too): the untransformed dims first, in the
// input's stride order, then the transformed dims in `dims` order, dense in that order. (_exec_fft is internal to
// libtorch's CPU FFT files: not callable from here.)
std::vector<int64_t> fft_output_strides(IntArrayRef in_strides, IntArrayRef out_sizes,
                                        const std::vector<int64_t>& dims) {
  const int64_t ndim = static_cast<int64_t>(out_sizes.size());
  std::vector<bool> transformed(ndim, false);
  for (int64_t d : dims) transformed[d] = true;
  std::vector<int64_t> batch;
  for (int64_t d = 0; d < ndim; ++d)
    if (!transformed[d]) batch.push_back(d);
  std::stable_sort(batch.begin(), batch.end(), [&](int64_t a, int64_t b) { return in_strides[a] > in_strides[b]; });
  std::vector<int64_t> strides(ndim);
  int64_t inner = 1;  // contiguous strides of [batch, transformed sizes...]
  for (auto d = dims.rbegin(); d != dims.rend(); ++d) strides[*d] = inner, inner *= std::max<int64_t>(out_sizes[*d], 1);
  int64_t batch_numel = 1;
  for (auto d = batch.rbegin(); d != batch.rend(); ++d) strides[*d] = batch_numel * inner, batch_numel *= out_sizes[*d];
  return strides;
}

Tensor empty_fft_output(IntArrayRef in_strides, IntArrayRef out_sizes, const std::vector<int64_t>& dims,
                        const at::TensorOptions& options) {
  return at::empty_strided(out_sizes, fft_output_strides(in_strides, out_sizes, dims), options);
}

// The operand as the kernel reads it: no lazy conjugate / negative bit left.
Tensor materialized(const Tensor& self, const char* op) {
  TORCH_CHECK(is_npu(self), op, ": expected an npu tensor, got one on ", self.device());
  return self.resolve_conj().resolve_neg();
}

// The complex transform of `in` over `dims` into `out`.
void c2c(const Tensor& in, const std::vector<int64_t>& dims, int64_t normalization, bool forward, const Tensor& out,
         const char* op) {
  fft::Transform t;
  t.kind = fft::Kind::kC2C;
  t.dtype = complex_dtype(in.scalar_type(), op);
  t.forward = forward;
  t.scale = norm_scale(in, dims, normalization);
  run(t, in, out, dims, op);
}

}  // namespace

Tensor NF::_fft_c2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool forward) {
  constexpr const char* op = "_fft_c2c";
  TORCH_CHECK(self.is_complex(), op, ": expected a complex input tensor, but got ", self.scalar_type());
  const Tensor in = materialized(self, op);
  if (dim.empty()) return in.clone();
  const auto dims = wrapped_dims(in, dim, op);
  Tensor out = empty_fft_output(self.strides(), in.sizes(), sorted_dims(self, dims), in.options());
  c2c(in, dims, normalization, forward, out, op);
  return out;
}

Tensor NF::_fft_r2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool onesided) {
  constexpr const char* op = "_fft_r2c";
  TORCH_CHECK(self.is_floating_point(), op, ": expected a real input tensor, but got ", self.scalar_type());
  const Tensor in = materialized(self, op);
  const auto dims = wrapped_dims(in, dim, op);
  // (an empty signal would leave its one-bin spectrum unwritten)
  TORCH_CHECK(in.size(dims.back()) > 0, op, ": Invalid number of data points (0) specified");
  const auto ctype = c10::toComplexType(in.scalar_type());
  auto out_sizes = in.sizes().vec();
  if (onesided) out_sizes[static_cast<std::size_t>(dims.back())] = in.size(dims.back()) / 2 + 1;
  Tensor out = empty_fft_output(self.strides(), out_sizes, sorted_dims(self, dims, /*keep_last=*/true),
                                in.options().dtype(ctype));
  if (!onesided) {  // the full spectrum: the complex transform of the real signal
    c2c(in.to(ctype), dims, normalization, /*forward=*/true, out, op);
    return out;
  }
  fft::Transform t;
  t.kind = fft::Kind::kR2C;
  t.dtype = complex_dtype(in.scalar_type(), op);
  t.scale = norm_scale(in, dims, normalization);
  run(t, in, out, dims, op);
  return out;
}

Tensor NF::_fft_c2r(const Tensor& self, IntArrayRef dim, int64_t normalization, int64_t last_dim_size) {
  constexpr const char* op = "_fft_c2r";
  TORCH_CHECK(self.is_complex(), op, ": expected a complex input tensor, but got ", self.scalar_type());
  TORCH_CHECK(last_dim_size >= 1, op, ": invalid number of data points (", last_dim_size, ") specified");
  Tensor in = materialized(self, op);
  const auto dims = wrapped_dims(in, dim, op);
  const int64_t last = dims.back(), half = last_dim_size / 2 + 1;
  // The transform reads the first n/2 + 1 entries of the last dim (the one-sided half): there must be as many.
  TORCH_CHECK(in.size(last) >= half, op, ": expected the input's dim ", last, " to hold at least ", half,
              " values (last_dim_size / 2 + 1), got ", in.size(last));
  in = in.narrow(last, 0, half);
  auto out_sizes = in.sizes().vec();
  out_sizes[static_cast<std::size_t>(last)] = last_dim_size;
  // The meta function's layout: the complex transforms of the other dims first (their output's strides), then
  // the real one of the last dim.
  std::vector<int64_t> after_c2c = self.strides().vec();
  if (dims.size() > 1) {
    const std::vector<int64_t> c2c_dims(dims.begin(), dims.end() - 1);
    after_c2c = fft_output_strides(self.strides(), self.sizes(), sorted_dims(self, c2c_dims));
  }
  Tensor out = empty_fft_output(after_c2c, out_sizes, {last},
                                in.options().dtype(c10::toRealValueType(in.scalar_type())));
  fft::Transform t;
  t.kind = fft::Kind::kC2R;
  t.dtype = complex_dtype(in.scalar_type(), op);
  t.forward = false;
  t.scale = norm_scale(out, dims, normalization);
  const Tensor scratch = dims.size() > 1 ? at::empty(in.sizes(), in.options()) : Tensor();
  run(t, in, out, dims, op, scratch);
  return out;
}

// The .out forms compute into a fresh tensor and copy (as CPU's kernels do): `out` may be any layout.
namespace {
Tensor& copied_into(Tensor& out, const Tensor& result) {
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}
}  // namespace

Tensor& NF::_fft_c2c_out(const Tensor& self, IntArrayRef dim, int64_t normalization, bool forward, Tensor& out) {
  return copied_into(out, NF::_fft_c2c(self, dim, normalization, forward));
}
Tensor& NF::_fft_r2c_out(const Tensor& self, IntArrayRef dim, int64_t normalization, bool onesided, Tensor& out) {
  return copied_into(out, NF::_fft_r2c(self, dim, normalization, onesided));
}
Tensor& NF::_fft_c2r_out(const Tensor& self, IntArrayRef dim, int64_t normalization, int64_t last_dim_size,
                         Tensor& out) {
  return copied_into(out, NF::_fft_c2r(self, dim, normalization, last_dim_size));
}

}  // namespace torch_npu_sim
