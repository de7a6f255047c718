// 2-D and 3-D pooling for npu: max_pool{2,3}d_with_indices, avg_pool{2,3}d, _adaptive_avg_pool{2,3}d,
// adaptive_max_pool{2,3}d, fractional_max_pool{2,3}d and their backward ops, max_unpool{2,3}d. Shapes and argument checks reuse ATen's pooling helpers
// (ATen/native/Pool.h); the windows run in kernels/src/pool.cpp on contiguous N C (D) H W planes, one kernel per
// op for both ranks (2-D is depth 1).
#include <ATen/core/Tensor.h>
#include <ATen/native/Pool.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/fractional_max_pool2d_backward_meta.h>
#include <ATen/ops/fractional_max_pool2d_meta.h>
#include <ATen/ops/fractional_max_pool3d_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <array>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "fallback/dtype_fallback.h"
#include "npu_kernels/fractional_pool.h"
#include "npu_kernels/pool.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using at::IntArrayRef;
using at::Tensor;

// A window argument of a rank-`rank` pool as {depth, height, width} (depth 1 / 0 for 2-D): one int for every
// axis, or one per axis.
std::array<int64_t, 3> window_arg(IntArrayRef v, IntArrayRef fallback, int rank, int64_t depth_default, const char* op,
                                  const char* name) {
  if (v.empty()) v = fallback;
  TORCH_CHECK(v.size() == 1 || static_cast<int>(v.size()) == rank, op, ": ", name,
              " must either be a single int, or a tuple of ", rank == 2 ? "two" : "three", " ints");
  if (v.size() == 1) return {rank == 3 ? v[0] : depth_default, v[0], v[0]};
  return rank == 3 ? std::array<int64_t, 3>{v[0], v[1], v[2]} : std::array<int64_t, 3>{depth_default, v[0], v[1]};
}

struct Geometry {
  npu_kernels::PoolArgs args;
  std::vector<int64_t> out_sizes;  // (N,) C, (D_out,) H_out, W_out
};

// The input's leading dims with the pooled sizes of `a` after them.
std::vector<int64_t> pooled_sizes(const Tensor& input, const npu_kernels::PoolArgs& a, int rank) {
  std::vector<int64_t> sizes(input.sizes().begin(), input.sizes().end() - rank);
  if (rank == 3) sizes.push_back(a.out_d);
  sizes.push_back(a.out_h);
  sizes.push_back(a.out_w);
  return sizes;
}

// The kernels' dtypes: floating, and integers as well for max pooling's forward (a comparison; CPU and CUDA take
// them). Integer average pooling is refused as CUDA refuses it (CPU computes it).
npu_kernels::DType pool_dtype(const Tensor& input, const char* op, bool integers = false) {
  const at::ScalarType st = input.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(st) || (integers && at::isIntegralType(st, /*includeBool=*/false)),
                              "\"", op, "\" not implemented for '", c10::toString(st), "'");
  return kernel_dtype(st, op);
}

// check_input_size: avg_pool3d's extra check (ATen's) that the input is at least one window large. integers: the
// op is max pooling's forward.
Geometry geometry(const Tensor& input, int rank, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode, const char* op, bool check_input_size = false,
                  bool integers = false) {
  TORCH_CHECK(is_npu(input), op, ": expected an npu tensor, got one on ", input.device());
  if (rank == 2) {
    TORCH_CHECK(input.dim() == 3 || input.dim() == 4, op, ": expected 3D or 4D (batch mode) tensor for input, got ",
                input.sizes());
  } else {
    TORCH_CHECK(input.dim() == 4 || input.dim() == 5, op, ": non-empty 4D or 5D (batch mode) tensor expected for input");
  }
  const auto k = window_arg(kernel_size, {}, rank, 1, op, "kernel_size");
  const auto s = window_arg(stride, kernel_size, rank, 1, op, "stride");
  const auto p = window_arg(padding, {0}, rank, 0, op, "padding");
  const auto d = window_arg(dilation, {1}, rank, 1, op, "dilation");
  Geometry g;
  auto& a = g.args;
  a.dtype = pool_dtype(input, op, integers);
  a.three_d = rank == 3;
  a.planes = input.dim() == rank + 2 ? input.size(0) * input.size(1) : input.size(0);
  a.in_d = rank == 3 ? input.size(-3) : 1;
  a.in_h = input.size(-2);
  a.in_w = input.size(-1);
  a.out_d = rank == 3 ? at::native::pooling_output_shape<int64_t>(a.in_d, k[0], p[0], s[0], d[0], ceil_mode) : 1;
  a.out_h = at::native::pooling_output_shape<int64_t>(a.in_h, k[1], p[1], s[1], d[1], ceil_mode);
  a.out_w = at::native::pooling_output_shape<int64_t>(a.in_w, k[2], p[2], s[2], d[2], ceil_mode);
  if (rank == 2) {
    at::native::pool2d_shape_check(input, k[1], k[2], s[1], s[2], p[1], p[2], d[1], d[2], input.size(-3), a.in_h,
                                   a.in_w, a.out_h, a.out_w, at::MemoryFormat::Contiguous);
  } else {
    auto i = [](int64_t v) { return static_cast<int>(v); };
    at::native::pool3d_shape_check(input, input.size(-4), i(k[0]), i(k[1]), i(k[2]), i(s[0]), i(s[1]), i(s[2]), i(p[0]),
                                   i(p[1]), i(p[2]), i(d[0]), i(d[1]), i(d[2]), a.in_d, a.in_h, a.in_w, a.out_d,
                                   a.out_h, a.out_w, op, check_input_size);
  }
  a.kernel_d = k[0], a.kernel_h = k[1], a.kernel_w = k[2];
  a.stride_d = s[0], a.stride_h = s[1], a.stride_w = s[2];
  a.pad_d = p[0], a.pad_h = p[1], a.pad_w = p[2];
  a.dilation_d = d[0], a.dilation_h = d[1], a.dilation_w = d[2];
  g.out_sizes = pooled_sizes(input, a, rank);
  return g;
}

Geometry avg_geometry(const Tensor& input, int rank, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                      bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor, const char* op) {
  TORCH_CHECK(!divisor.has_value() || *divisor != 0, op, ": divisor must be not zero");
  const auto k = window_arg(kernel_size, {}, rank, 1, op, "kernel_size");
  const auto p = window_arg(padding, {0}, rank, 0, op, "padding");
  TORCH_CHECK(p[0] <= k[0] / 2 && p[1] <= k[1] / 2 && p[2] <= k[2] / 2, op,
              ": pad should be at most half of effective kernel size, but got pad=", padding, " and kernel_size=",
              kernel_size);
  // ATen's avg_pool2d meta reads the plane count before checking the rank: an IndexError below 3 dims
  if (rank == 2) static_cast<void>(input.size(-3));
  Geometry g = geometry(input, rank, kernel_size, stride, padding, {1}, ceil_mode, op, /*check_input_size=*/rank == 3);
  g.args.count_include_pad = count_include_pad;
  g.args.divisor = divisor.value_or(0);
  return g;
}

npu_kernels::PoolArgs adaptive_args(const Tensor& input, int rank, IntArrayRef output_size, const char* op) {
  TORCH_CHECK(is_npu(input), op, ": expected an npu tensor, got one on ", input.device());
  TORCH_CHECK(static_cast<int>(output_size.size()) == rank, op, ": output_size must be ", rank);
  TORCH_CHECK(input.dim() == rank + 1 || input.dim() == rank + 2, op, ": Expected ", rank + 1, "D or ", rank + 2,
              "D tensor, but got ", input.sizes());
  for (int64_t d = 1; d < input.dim(); ++d) {
    TORCH_CHECK(input.size(d) > 0, op, ": expected input to have non-zero size for non-batch dimensions, but input has "
                "sizes ", input.sizes(), " with dimension ", d, " being empty");
  }
  npu_kernels::PoolArgs a;
  a.dtype = pool_dtype(input, op);
  a.three_d = rank == 3;
  a.planes = input.dim() == rank + 2 ? input.size(0) * input.size(1) : input.size(0);
  a.in_d = rank == 3 ? input.size(-3) : 1;
  a.in_h = input.size(-2);
  a.in_w = input.size(-1);
  a.out_d = rank == 3 ? output_size[0] : 1;
  a.out_h = output_size[rank - 2];
  a.out_w = output_size[rank - 1];
  a.adaptive = true;
  return a;
}

IntArrayRef last_dims(const Tensor& t, int rank) { return t.sizes().slice(t.dim() - rank); }

// ---- fractional max pooling: ATen's meta functions for CPU's checks, messages and output sizes, then
// kernels/src/fractional_pool.cpp on contiguous planes ----

// A structured op's meta function run for its checks and output sizes only: it allocates nothing.
template <class Meta>
struct MetaSizes final : Meta {
  std::vector<int64_t> sizes;
  void set_output_strided(int64_t, IntArrayRef s, IntArrayRef, at::TensorOptions) override { sizes = s.vec(); }
  void set_output_raw_strided(int64_t, IntArrayRef s, IntArrayRef, at::TensorOptions) override { sizes = s.vec(); }
  const Tensor& maybe_get_output(int64_t) override { return none_; }

 private:
  Tensor none_;
};

// The kernel's arguments for an input of rank + 1 or rank + 2 dims and the pooled sizes `out` (meta-checked).
npu_kernels::FractionalPoolArgs fractional_args(const Tensor& input, int rank, IntArrayRef kernel, IntArrayRef out,
                                                const char* op) {
  TORCH_CHECK(is_npu(input), op, ": expected an npu tensor, got one on ", input.device());
  npu_kernels::FractionalPoolArgs a;
  a.dtype = pool_dtype(input, op);
  a.three_d = rank == 3;
  a.planes = input.dim() == rank + 2 ? input.size(0) * input.size(1) : input.size(0);
  const IntArrayRef in = last_dims(input, rank), o = out.slice(out.size() - rank);
  const int lead = 3 - rank;  // 2-D leaves the depth fields at 1
  int64_t* in_f[3] = {&a.in_t, &a.in_h, &a.in_w};
  int64_t* out_f[3] = {&a.out_t, &a.out_h, &a.out_w};
  int64_t* k_f[3] = {&a.kernel_t, &a.kernel_h, &a.kernel_w};
  for (int d = 0; d < rank; ++d) {
    *in_f[lead + d] = in[d];
    *out_f[lead + d] = o[d];
    *k_f[lead + d] = kernel[d];
  }
  return a;
}

// The samples the kernel reads: (N, C, rank) of the input's dtype, contiguous. CPU reads them unchecked (fewer
// rows than the batch read past their end); here they must cover the batch and planes.
Tensor fractional_samples(const Tensor& input, const Tensor& samples, int rank, const char* op) {
  check_device_arg(op, "random_samples", samples, input.device());
  const int64_t n = input.dim() == rank + 2 ? input.size(0) : 1, c = input.size(input.dim() - rank - 1);
  TORCH_CHECK(samples.dim() == 3 && samples.size(0) >= n && samples.size(1) == c && samples.size(2) >= rank, op,
              ": expected random_samples of shape (N >= ", n, ", ", c, ", ", rank, "), but got ", samples.sizes());
  return samples.narrow(0, 0, n).narrow(2, 0, rank).to(input.scalar_type()).contiguous();
}

std::tuple<Tensor&, Tensor&> fractional_max_into(const Tensor& input, int rank, IntArrayRef kernel, IntArrayRef output_size,
                                                 const Tensor& samples, const std::vector<int64_t>& sizes, Tensor& out,
                                                 Tensor& indices, const char* op) {
  c10::DeviceGuard guard(input.device());
  const auto a = fractional_args(input, rank, kernel, output_size, op);
  const Tensor s = fractional_samples(input, samples, rank, op);
  TORCH_CHECK(indices.scalar_type() == at::kLong, op, ": expected indices of dtype Long, got ", indices.scalar_type());
  TORCH_CHECK(out.scalar_type() == input.scalar_type(), op, ": expected out of dtype ", input.scalar_type(), ", got ",
              out.scalar_type());
  at::native::resize_output(out, sizes);
  at::native::resize_output(indices, sizes);
  const Tensor x = input.contiguous();
  into_contiguous(out, [&](const Tensor& o) {
    into_contiguous(indices, [&](const Tensor& i) {
      NPU_CHECK(npu_kernels::fractional_max_pool_forward(stream_of(input), a, x.const_data_ptr(), s.const_data_ptr(),
                                                         o.data_ptr(), i.data_ptr<int64_t>()));
    });
  });
  return {out, indices};
}

// CPU's backward trusts grad_output and indices to have the output's shape (it reads past them otherwise).
Tensor& fractional_max_backward_into(const Tensor& grad_output, const Tensor& input, int rank, IntArrayRef kernel,
                                     IntArrayRef output_size, const Tensor& indices, Tensor& grad_input, const char* op) {
  c10::DeviceGuard guard(input.device());
  TORCH_CHECK(static_cast<int>(output_size.size()) == rank, op, ": output_size must have ", rank, " elements");
  TORCH_CHECK(static_cast<int>(kernel.size()) == rank, op, ": kernel_size must have ", rank, " elements");
  TORCH_CHECK(input.dim() == rank + 1 || input.dim() == rank + 2, op, ": expected ", rank + 1, "D or ", rank + 2,
              "D input, got ", input.sizes());
  check_devices(op, {{"grad_output", &grad_output}, {"self", &input}, {"indices", &indices}});
  std::vector<int64_t> sizes(input.sizes().begin(), input.sizes().end() - rank);
  sizes.insert(sizes.end(), output_size.begin(), output_size.end());
  TORCH_CHECK(grad_output.sizes() == IntArrayRef(sizes), op, ": expected grad_output of shape ", IntArrayRef(sizes),
              ", but got ", grad_output.sizes());
  TORCH_CHECK(indices.sizes() == IntArrayRef(sizes) && indices.scalar_type() == at::kLong, op,
              ": expected int64 indices of shape ", IntArrayRef(sizes), ", but got ", indices.scalar_type(), " ",
              indices.sizes());
  TORCH_CHECK(grad_output.scalar_type() == input.scalar_type(), op, ": expected dtype ", input.scalar_type(),
              " for `grad_output` but got dtype ", grad_output.scalar_type());
  const auto a = fractional_args(input, rank, kernel, output_size, op);
  at::native::resize_output(grad_input, input.sizes());
  const Tensor go = grad_output.contiguous(), idx = indices.contiguous();
  into_contiguous(grad_input, [&](const Tensor& gi) {
    if (gi.numel() > 0) {
      NPU_CHECK(npu_kernels::fractional_max_pool_backward(stream_of(input), a, go.const_data_ptr(),
                                                          idx.const_data_ptr<int64_t>(), gi.data_ptr()));
    }
  });
  return grad_input;
}

template <class Meta>
std::vector<int64_t> fractional_sizes(const Tensor& input, IntArrayRef kernel, IntArrayRef output_size,
                                      const Tensor& samples) {
  MetaSizes<Meta> meta;
  meta.meta(input, kernel, output_size, samples);
  return meta.sizes;
}

// max_unpool{2,3}d with CPU's checks and messages (ATen/native/MaxUnpooling.cpp); the output follows the input's
// suggested memory format, as CPU's. An index outside the output plane is a device error at the next sync (as on
// CUDA, where CPU raises at once: reading the indices here would cost a sync).
Tensor& max_unpool_into(const Tensor& self, const Tensor& indices, IntArrayRef output_size, int rank, Tensor& out,
                        const char* fn) {
  c10::DeviceGuard guard(self.device());
  TORCH_CHECK(indices.scalar_type() == at::kLong, "elements in indices should be type int64 but got: ",
              indices.scalar_type());
  if (rank == 2) {
    TORCH_CHECK(output_size.size() == 2, "There should be exactly two elements (height, width) in output_size, but got ",
                output_size.size(), " elements.");
    TORCH_CHECK(self.dim() == 3 || self.dim() == 4, "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a "
                "tensor with ", self.dim(), " dimensions.");
  } else {
    TORCH_CHECK(self.dim() == 4 || self.dim() == 5, "Input to max_unpooling3d should be a 4d or 5d Tensor, but got a "
                "tensor with ", self.dim(), " dimensions.");
    TORCH_CHECK(output_size.size() == 3, "There should be exactly three elements (depth, height, width) in "
                "output_size, but got ", output_size.size(), " elements.");
  }
  TORCH_CHECK(self.sizes() == indices.sizes(), "Expected shape of indices to be same as that of the input tensor (",
              self.sizes(), ") but got indices tensor with shape: ", indices.sizes());
  for (int64_t d = 1; d < self.dim(); ++d) {
    TORCH_CHECK(self.size(d) > 0, fn, ": Expected input to have non-zero size for non-batch dimensions, but got ",
                self.sizes(), " with dimension ", d, " being empty.");
  }
  TORCH_CHECK(is_npu(self) && is_npu(indices), fn, ": expected npu tensors, got self on ", self.device(),
              " and indices on ", indices.device());
  if (!at::isFloatingType(self.scalar_type())) {  // integer unpooling runs CPU's kernel (or_cpu in ops.yaml)
    throw_no_kernel_for_dtype(c10::str(fn, ": no npu kernel for dtype ", self.scalar_type()));
  }
  npu_kernels::PoolArgs a;
  a.dtype = kernel_dtype(self.scalar_type(), fn);
  a.three_d = rank == 3;
  a.planes = self.dim() == rank + 2 ? self.size(0) * self.size(1) : self.size(0);
  a.in_d = rank == 3 ? output_size[0] : 1;
  a.in_h = output_size[rank - 2];
  a.in_w = output_size[rank - 1];
  a.out_d = rank == 3 ? self.size(-3) : 1;
  a.out_h = self.size(-2);
  a.out_w = self.size(-1);
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end() - rank);
  sizes.insert(sizes.end(), output_size.begin(), output_size.end());
  const Tensor x = self.contiguous(), idx = indices.contiguous();
  Tensor o = at::empty(sizes, self.options());
  if (o.numel() > 0) {
    NPU_CHECK(npu_kernels::max_unpool(stream_of(self), a, x.const_data_ptr(), idx.const_data_ptr<int64_t>(),
                                      o.data_ptr()));
  }
  at::native::resize_output(out, sizes);
  const auto format = self.suggest_memory_format();
  if (out.is_same(o)) return out;
  if (!out.is_contiguous(format)) out.resize_(sizes, format);
  return out.copy_(o);
}

std::tuple<Tensor&, Tensor&> adaptive_max_into(const Tensor& input, int rank, IntArrayRef output_size, Tensor& out,
                                               Tensor& indices, const char* op) {
  c10::DeviceGuard guard(input.device());
  const auto a = adaptive_args(input, rank, output_size, op);
  TORCH_CHECK(indices.scalar_type() == at::kLong, op, ": expected indices of dtype Long, got ", indices.scalar_type());
  TORCH_CHECK(out.scalar_type() == input.scalar_type(), op, ": expected out of dtype ", input.scalar_type(), ", got ",
              out.scalar_type());
  const std::vector<int64_t> sizes = pooled_sizes(input, a, rank);
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

Tensor& adaptive_max_backward_into(const Tensor& grad_output, const Tensor& input, const Tensor& indices, int rank,
                                   Tensor& grad_input, const char* op) {
  c10::DeviceGuard guard(input.device());
  const auto a = adaptive_args(input, rank, last_dims(grad_output, rank), op);
  TORCH_CHECK(grad_output.sizes() == indices.sizes(), op, ": grad_output has shape ", grad_output.sizes(),
              " but indices have shape ", indices.sizes());
  TORCH_CHECK(input.scalar_type() == grad_output.scalar_type(), op, ": expected dtype ", input.scalar_type(),
              " for `grad_output` but got dtype ", grad_output.scalar_type());
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

std::tuple<Tensor, Tensor> max_pool_with_indices(const Tensor& input, int rank, IntArrayRef kernel_size,
                                                 IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                                 bool ceil_mode, const char* op) {
  c10::DeviceGuard guard(input.device());
  const Geometry g = geometry(input, rank, kernel_size, stride, padding, dilation, ceil_mode, op, false,
                              /*integers=*/true);
  const Tensor x = input.contiguous();
  Tensor out = at::empty(g.out_sizes, input.options());
  Tensor indices = at::empty(g.out_sizes, input.options().dtype(at::kLong));
  if (out.numel() > 0) {
    NPU_CHECK(npu_kernels::max_pool2d(stream_of(input), g.args, x.const_data_ptr(), out.data_ptr(),
                                      indices.data_ptr<int64_t>()));
  }
  return {out, indices};
}

Tensor max_pool_backward(const Tensor& grad_output, const Tensor& input, int rank, IntArrayRef kernel_size,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                         const Tensor& indices, const char* op) {
  c10::DeviceGuard guard(input.device());
  const Geometry g = geometry(input, rank, kernel_size, stride, padding, dilation, ceil_mode, op);
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(g.out_sizes), op, ": grad_output has shape ",
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

Tensor avg_pool(const Tensor& input, const npu_kernels::PoolArgs& a, const std::vector<int64_t>& sizes) {
  c10::DeviceGuard guard(input.device());
  const Tensor x = input.contiguous();
  Tensor out = at::empty(sizes, input.options());
  if (out.numel() > 0) NPU_CHECK(npu_kernels::avg_pool2d(stream_of(input), a, x.const_data_ptr(), out.data_ptr()));
  return out;
}

// `expected`: the output sizes the window arguments give (checked against grad_output), empty for adaptive pools.
Tensor avg_pool_backward(const Tensor& grad_output, const Tensor& input, const npu_kernels::PoolArgs& a,
                         const std::vector<int64_t>& expected = {}, const char* op = "") {
  c10::DeviceGuard guard(input.device());
  TORCH_CHECK(expected.empty() || grad_output.sizes() == at::IntArrayRef(expected), op, ": grad_output has shape ",
              grad_output.sizes(), ", expected ", at::IntArrayRef(expected));
  const Tensor go = grad_output.contiguous().to(input.scalar_type());
  Tensor grad_input = at::empty(input.sizes(), input.options().memory_format(at::MemoryFormat::Contiguous));
  if (grad_input.numel() > 0) {
    NPU_CHECK(npu_kernels::avg_pool2d_backward(stream_of(input), a, go.const_data_ptr(), grad_input.data_ptr()));
  }
  return grad_input;
}

}  // namespace

// ---- 2-D ----

std::tuple<Tensor, Tensor> NF::adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size) {
  Tensor out = at::empty({0}, input.options()), indices = at::empty({0}, input.options().dtype(at::kLong));
  adaptive_max_into(input, 2, output_size, out, indices, "adaptive_max_pool2d");
  return {out, indices};
}
std::tuple<Tensor&, Tensor&> NF::adaptive_max_pool2d_out(const Tensor& input, IntArrayRef output_size, Tensor& out,
                                                         Tensor& indices) {
  return adaptive_max_into(input, 2, output_size, out, indices, "adaptive_max_pool2d");
}
Tensor NF::adaptive_max_pool2d_backward(const Tensor& grad_output, const Tensor& input, const Tensor& indices) {
  Tensor grad_input = at::empty({0}, input.options());
  return adaptive_max_backward_into(grad_output, input, indices, 2, grad_input, "adaptive_max_pool2d_backward");
}
Tensor& NF::adaptive_max_pool2d_backward_out(const Tensor& grad_output, const Tensor& input, const Tensor& indices,
                                             Tensor& grad_input) {
  return adaptive_max_backward_into(grad_output, input, indices, 2, grad_input, "adaptive_max_pool2d_backward");
}

std::tuple<Tensor, Tensor> NF::max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                                       IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return max_pool_with_indices(input, 2, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d");
}
Tensor NF::max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& input, IntArrayRef kernel_size,
                                            IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                            bool ceil_mode, const Tensor& indices) {
  return max_pool_backward(grad_output, input, 2, kernel_size, stride, padding, dilation, ceil_mode, indices,
                           "max_pool2d_backward");
}

Tensor NF::avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                      bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor) {
  const Geometry g =
      avg_geometry(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor, "avg_pool2d");
  return avg_pool(input, g.args, g.out_sizes);
}
Tensor NF::avg_pool2d_backward(const Tensor& grad_output, const Tensor& input, IntArrayRef kernel_size,
                               IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor) {
  const Geometry g = avg_geometry(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor,
                                  "avg_pool2d_backward");
  return avg_pool_backward(grad_output, input, g.args, g.out_sizes, "avg_pool2d_backward");
}

Tensor NF::_adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  const auto a = adaptive_args(input, 2, output_size, "adaptive_avg_pool2d");
  return avg_pool(input, a, pooled_sizes(input, a, 2));
}
Tensor NF::_adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& input) {
  return avg_pool_backward(grad_output, input,
                           adaptive_args(input, 2, last_dims(grad_output, 2), "adaptive_avg_pool2d_backward"));
}

std::tuple<Tensor, Tensor> NF::fractional_max_pool2d(const Tensor& input, IntArrayRef kernel_size,
                                                     IntArrayRef output_size, const Tensor& samples) {
  Tensor out = at::empty({0}, input.options()), indices = at::empty({0}, input.options().dtype(at::kLong));
  return NF::fractional_max_pool2d_out(input, kernel_size, output_size, samples, out, indices);
}
std::tuple<Tensor&, Tensor&> NF::fractional_max_pool2d_out(const Tensor& input, IntArrayRef kernel_size,
                                                          IntArrayRef output_size, const Tensor& samples, Tensor& out,
                                                          Tensor& indices) {
  const auto sizes =
      fractional_sizes<at::meta::structured_fractional_max_pool2d>(input, kernel_size, output_size, samples);
  return fractional_max_into(input, 2, kernel_size, output_size, samples, sizes, out, indices, "fractional_max_pool2d");
}
Tensor NF::fractional_max_pool2d_backward(const Tensor& grad_output, const Tensor& input, IntArrayRef kernel_size,
                                          IntArrayRef output_size, const Tensor& indices) {
  Tensor grad_input = at::empty({0}, input.options());
  return NF::fractional_max_pool2d_backward_out(grad_output, input, kernel_size, output_size, indices, grad_input);
}
Tensor& NF::fractional_max_pool2d_backward_out(const Tensor& grad_output, const Tensor& input, IntArrayRef kernel_size,
                                               IntArrayRef output_size, const Tensor& indices, Tensor& grad_input) {
  MetaSizes<at::meta::structured_fractional_max_pool2d_backward> meta;
  meta.meta(grad_output, input, kernel_size, output_size, indices);
  return fractional_max_backward_into(grad_output, input, 2, kernel_size, output_size, indices, grad_input,
                                      "fractional_max_pool2d_backward");
}

// ---- 3-D: the same kernels with a depth axis ----

std::tuple<Tensor, Tensor> NF::fractional_max_pool3d(const Tensor& input, IntArrayRef kernel_size,
                                                     IntArrayRef output_size, const Tensor& samples) {
  Tensor out = at::empty({0}, input.options()), indices = at::empty({0}, input.options().dtype(at::kLong));
  return NF::fractional_max_pool3d_out(input, kernel_size, output_size, samples, out, indices);
}
std::tuple<Tensor&, Tensor&> NF::fractional_max_pool3d_out(const Tensor& input, IntArrayRef kernel_size,
                                                          IntArrayRef output_size, const Tensor& samples, Tensor& out,
                                                          Tensor& indices) {
  const auto sizes =
      fractional_sizes<at::meta::structured_fractional_max_pool3d>(input, kernel_size, output_size, samples);
  return fractional_max_into(input, 3, kernel_size, output_size, samples, sizes, out, indices, "fractional_max_pool3d");
}
Tensor NF::fractional_max_pool3d_backward(const Tensor& grad_output, const Tensor& input, IntArrayRef kernel_size,
                                          IntArrayRef output_size, const Tensor& indices) {
  Tensor grad_input = at::empty({0}, input.options());
  return NF::fractional_max_pool3d_backward_out(grad_output, input, kernel_size, output_size, indices, grad_input);
}
Tensor& NF::fractional_max_pool3d_backward_out(const Tensor& grad_output, const Tensor& input, IntArrayRef kernel_size,
                                               IntArrayRef output_size, const Tensor& indices, Tensor& grad_input) {
  return fractional_max_backward_into(grad_output, input, 3, kernel_size, output_size, indices, grad_input,
                                      "fractional_max_pool3d_backward");
}

std::tuple<Tensor, Tensor> NF::adaptive_max_pool3d(const Tensor& input, IntArrayRef output_size) {
  Tensor out = at::empty({0}, input.options()), indices = at::empty({0}, input.options().dtype(at::kLong));
  adaptive_max_into(input, 3, output_size, out, indices, "adaptive_max_pool3d");
  return {out, indices};
}
std::tuple<Tensor&, Tensor&> NF::adaptive_max_pool3d_out(const Tensor& input, IntArrayRef output_size, Tensor& out,
                                                         Tensor& indices) {
  return adaptive_max_into(input, 3, output_size, out, indices, "adaptive_max_pool3d");
}
Tensor NF::adaptive_max_pool3d_backward(const Tensor& grad_output, const Tensor& input, const Tensor& indices) {
  Tensor grad_input = at::empty({0}, input.options());
  return adaptive_max_backward_into(grad_output, input, indices, 3, grad_input, "adaptive_max_pool3d_backward");
}
Tensor& NF::adaptive_max_pool3d_backward_out(const Tensor& grad_output, const Tensor& input, const Tensor& indices,
                                             Tensor& grad_input) {
  return adaptive_max_backward_into(grad_output, input, indices, 3, grad_input, "adaptive_max_pool3d_backward");
}

std::tuple<Tensor, Tensor> NF::max_pool3d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                                       IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return max_pool_with_indices(input, 3, kernel_size, stride, padding, dilation, ceil_mode, "max_pool3d");
}
Tensor NF::max_pool3d_with_indices_backward(const Tensor& grad_output, const Tensor& input, IntArrayRef kernel_size,
                                            IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                            bool ceil_mode, const Tensor& indices) {
  return max_pool_backward(grad_output, input, 3, kernel_size, stride, padding, dilation, ceil_mode, indices,
                           "max_pool3d_backward");
}

Tensor NF::avg_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                      bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor) {
  const Geometry g =
      avg_geometry(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor, "avg_pool3d");
  return avg_pool(input, g.args, g.out_sizes);
}
Tensor NF::avg_pool3d_backward(const Tensor& grad_output, const Tensor& input, IntArrayRef kernel_size,
                               IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor) {
  const Geometry g = avg_geometry(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor,
                                  "avg_pool3d_backward");
  return avg_pool_backward(grad_output, input, g.args, g.out_sizes, "avg_pool3d_backward");
}

Tensor NF::_adaptive_avg_pool3d(const Tensor& input, IntArrayRef output_size) {
  const auto a = adaptive_args(input, 3, output_size, "adaptive_avg_pool3d");
  return avg_pool(input, a, pooled_sizes(input, a, 3));
}
Tensor NF::_adaptive_avg_pool3d_backward(const Tensor& grad_output, const Tensor& input) {
  return avg_pool_backward(grad_output, input,
                           adaptive_args(input, 3, last_dims(grad_output, 3), "adaptive_avg_pool3d_backward"));
}

Tensor NF::max_unpool2d(const Tensor& self, const Tensor& indices, IntArrayRef output_size) {
  Tensor out = at::empty({0}, self.options());
  return max_unpool_into(self, indices, output_size, 2, out, "max_unpooling2d_forward_out_cpu()");
}
Tensor& NF::max_unpool2d_out(const Tensor& self, const Tensor& indices, IntArrayRef output_size, Tensor& out) {
  return max_unpool_into(self, indices, output_size, 2, out, "max_unpooling2d_forward_out_cpu()");
}

// stride and padding only enter CPU's checks
Tensor NF::max_unpool3d(const Tensor& self, const Tensor& indices, IntArrayRef output_size, IntArrayRef stride,
                        IntArrayRef padding) {
  Tensor out = at::empty({0}, self.options());
  return NF::max_unpool3d_out(self, indices, output_size, stride, padding, out);
}
Tensor& NF::max_unpool3d_out(const Tensor& self, const Tensor& indices, IntArrayRef output_size, IntArrayRef stride,
                             IntArrayRef padding, Tensor& out) {
  TORCH_CHECK(stride.size() == 3, "There should be exactly three elements (depth, height, width) in stride, but got: ",
              stride.size(), " elements.");
  TORCH_CHECK(padding.size() == 3, "There should be exactly three elements (depth, height, width) in padding, but "
              "got: ", padding.size(), " elements.");
  TORCH_CHECK(stride[0] > 0 && stride[1] > 0 && stride[2] > 0, "strides should be greater than zero, but got stride: ",
              stride);
  return max_unpool_into(self, indices, output_size, 3, out, "max_unpooling3d_forward_out_cpu()");
}

}  // namespace torch_npu_sim
