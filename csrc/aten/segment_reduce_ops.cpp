// Registration of segment_reduce and _segment_reduce_backward (torch._segment_reduce): CPU's checks and messages
// (ATen/native/SegmentReduce.cpp), then kernels/src/segment_reduce.cpp on contiguous (outer, axis, inner) views.
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/accumulate.h>

#include <optional>
#include <string_view>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "npu_kernels/segment_reduce.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using at::Tensor;
using npu_kernels::SegmentReduction;

SegmentReduction reduction_of(std::string_view reduce) {
  if (reduce == "sum") return SegmentReduction::kSum;
  if (reduce == "mean") return SegmentReduction::kMean;
  if (reduce == "max") return SegmentReduction::kMax;
  if (reduce == "min") return SegmentReduction::kMin;
  if (reduce == "prod") return SegmentReduction::kProd;
  TORCH_CHECK(false, "reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
}

// The kernel's view of data (outer, axis, inner) and of the lengths or offsets, with CPU's front-end checks.
struct Segments {
  npu_kernels::SegmentReduceArgs args;
  Tensor index;                      // lengths or offsets, contiguous
  std::vector<int64_t> out_sizes;    // data's sizes with the axis replaced by the segment count
};

Segments segments_of(const Tensor& data, std::string_view reduce, const std::optional<Tensor>& lengths,
                     const std::optional<Tensor>& offsets, int64_t axis, const std::optional<at::Scalar>& initial,
                     const char* op) {
  // autograd passes the one not used as an undefined tensor
  const bool by_offsets = offsets.has_value() && offsets->defined();
  TORCH_CHECK(by_offsets || (lengths.has_value() && lengths->defined()),
              "segment_reduce(): Either lengths or offsets must be defined.");
  axis = at::maybe_wrap_dim(axis, data.dim());
  const Tensor& index = by_offsets ? *offsets : *lengths;
  const char* index_name = by_offsets ? "offsets" : "lengths";
  check_device_arg(op, index_name, index, data.device());
  TORCH_CHECK(data.dim() >= index.dim(), "Expected data.dim() >= ", index_name, "_value.dim() to be true, but got false.");
  TORCH_CHECK(axis == index.dim() - 1, "segment_reduce(): Expected axis to be the last dimension of ", index_name,
              " but got ", axis, ".");
  TORCH_CHECK(index.sizes().slice(0, axis) == data.sizes().slice(0, axis), op, ": expected the leading dims of ",
              index_name, " (", index.sizes(), ") to be data's (", data.sizes(), ")");
  const at::ScalarType dt = data.scalar_type(), it = index.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(dt), "\"_segment_reduce_npu\" not implemented for '",
                              c10::toString(dt), "'");
  TORCH_CHECK_NOT_IMPLEMENTED(it == at::kInt || it == at::kLong, "\"_segment_reduce_", index_name,
                              "_npu\" not implemented for '", c10::toString(it), "'");
  Segments s;
  npu_kernels::SegmentReduceArgs& a = s.args;
  a.dtype = kernel_dtype(dt, op);
  a.index_dtype = kernel_dtype(it, op);
  a.reduce = reduction_of(reduce);
  a.outer = c10::multiply_integers(data.sizes().slice(0, axis));
  a.axis_size = data.size(axis);
  a.inner = c10::multiply_integers(data.sizes().slice(axis + 1));
  a.segments = index.size(axis) - (by_offsets ? 1 : 0);
  TORCH_CHECK(a.segments >= 0, op, ": offsets need at least one element along the axis");
  a.offsets = by_offsets;
  a.has_initial = initial.has_value();
  a.initial = initial ? initial->toDouble() : 0.0;
  s.index = index.contiguous();
  s.out_sizes = data.sizes().vec();
  s.out_sizes[axis] = a.segments;
  return s;
}

}  // namespace

Tensor NF::segment_reduce(const Tensor& data, c10::string_view reduce, const std::optional<Tensor>& lengths,
                          const std::optional<Tensor>& indices, const std::optional<Tensor>& offsets, int64_t axis,
                          bool unsafe, const std::optional<at::Scalar>& initial) {
  TORCH_CHECK(!indices.has_value(), "segment_reduce(): indices based reduction is not supported yet.");
  c10::DeviceGuard guard(data.device());
  Segments s = segments_of(data, reduce, lengths, offsets, axis, initial, "segment_reduce");
  s.args.unsafe = unsafe;
  if (!unsafe && !s.args.offsets && s.index.numel() > 0) {
    // CPU's and CUDA's checks, with their host sync (the kernel checks again, but a failed kernel fails the device)
    TORCH_CHECK(s.index.min().item<int64_t>() >= 0, "lengths contains negative value!");
    TORCH_CHECK(s.index.sum({-1}).eq(s.args.axis_size).all().item<bool>(),
                "segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) when "
                "!unsafe.");
  }
  Tensor out = at::empty(s.out_sizes, data.options());
  if (out.numel() == 0) return out;
  const Tensor x = data.contiguous();
  NPU_CHECK(npu_kernels::segment_reduce_forward(stream_of(data), s.args, x.const_data_ptr(), s.index.const_data_ptr(),
                                                out.data_ptr()));
  return out;
}

Tensor NF::_segment_reduce_backward(const Tensor& grad, const Tensor& output, const Tensor& data,
                                    c10::string_view reduce, const std::optional<Tensor>& lengths,
                                    const std::optional<Tensor>& offsets, int64_t axis,
                                    const std::optional<at::Scalar>& initial) {
  c10::DeviceGuard guard(data.device());
  const char* op = "_segment_reduce_backward";
  const Segments s = segments_of(data, reduce, lengths, offsets, axis, initial, op);
  check_devices(op, {{"grad", &grad}, {"output", &output}, {"data", &data}});
  TORCH_CHECK(grad.sizes() == at::IntArrayRef(s.out_sizes) && output.sizes() == grad.sizes(), op,
              ": expected grad and output of shape ", at::IntArrayRef(s.out_sizes), ", but got ", grad.sizes(),
              " and ", output.sizes());
  TORCH_CHECK(grad.scalar_type() == data.scalar_type() && output.scalar_type() == data.scalar_type(), op,
              ": expected grad and output of dtype ", data.scalar_type(), ", but got ", grad.scalar_type(), " and ",
              output.scalar_type());
  Tensor grad_input = at::empty(data.sizes(), data.options());
  if (grad_input.numel() == 0) return grad_input;
  if (s.args.segments == 0) return grad_input.zero_();  // no segment: the kernel launches nothing
  const Tensor g = grad.contiguous(), o = output.contiguous(), x = data.contiguous();
  NPU_CHECK(npu_kernels::segment_reduce_backward(stream_of(data), s.args, g.const_data_ptr(), o.const_data_ptr(),
                                                 x.const_data_ptr(), s.index.const_data_ptr(), grad_input.data_ptr()));
  return grad_input;
}

}  // namespace torch_npu_sim
