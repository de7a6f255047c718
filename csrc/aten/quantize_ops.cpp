// Registration of affine quantization on npu: quantize_per_tensor / per_channel into npu quantized tensors
// (ATen's QTensorImpl over device memory; their per-channel scales live on the device too), dequantize,
// int_repr, _make_per_*_quantized_tensor and torch_npu.npu_quant_matmul. Checks and messages are CPU's; the
// arithmetic is kernels/src/quantize.cpp on the stream. ATen's own kernels serve the accessors and views.
#include <ATen/ExpandUtils.h>
#include <ATen/TensorUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_empty_per_channel_affine_quantized_native.h>
#include <ATen/ops/empty.h>
#include <ATen/quantized/Quantizer.h>
#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/quantize.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using at::Tensor;

// The codes' range of a quantized dtype, and the check CPU makes of a zero point against it.
template <typename C>
void check_zero_point(const char* fn, int64_t zero_point) {
  TORCH_CHECK(zero_point <= std::numeric_limits<C>::max(), fn, " zero_point ", zero_point, " is above upper bound.");
  TORCH_CHECK(zero_point >= std::numeric_limits<C>::min(), fn, " zero_point ", zero_point, " is below lower bound.");
}

npu_kernels::DType code_dtype(at::ScalarType qtype, const char* fn) {
  switch (qtype) {
    case at::kQInt8: return npu_kernels::DType::kInt8;
    case at::kQUInt8: return npu_kernels::DType::kUInt8;
    case at::kQInt32: return npu_kernels::DType::kInt32;
    default:
      TORCH_CHECK_NOT_IMPLEMENTED(false, fn, ": no npu kernel for quantized dtype ", qtype,
                                  " (qint8, quint8 and qint32 are supported)");
  }
}

void check_zero_point(const char* fn, at::ScalarType qtype, int64_t zero_point) {
  switch (qtype) {
    case at::kQInt8: return check_zero_point<int8_t>(fn, zero_point);
    case at::kQUInt8: return check_zero_point<uint8_t>(fn, zero_point);
    default: return check_zero_point<int32_t>(fn, zero_point);
  }
}

void check_float_npu(const Tensor& self) {
  TORCH_CHECK(self.scalar_type() == at::kFloat, "Quantize only works on Float Tensor, got ", self.scalar_type());
  TORCH_CHECK(is_npu(self), "quantize: expected an npu tensor, got ", self.device());
}

// The kernel's view of a quantized tensor's parameters; per-channel scales and zero points moved to `device`
// as float64 / int64 (kept alive by the struct).
struct Params {
  npu_kernels::QuantParams q;
  Tensor scales, zero_points;
};

Params params_of(const at::QuantizerPtr& quantizer, at::IntArrayRef sizes, c10::Device device, const char* fn) {
  Params p;
  p.q.code = code_dtype(quantizer->scalar_type(), fn);
  if (quantizer->qscheme() == at::kPerTensorAffine) {
    const auto* q = static_cast<const at::PerTensorAffineQuantizer*>(quantizer.get());
    p.q.scale = q->scale();
    p.q.zero_point = q->zero_point();
    return p;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(quantizer->qscheme() == at::kPerChannelAffine, fn, ": no npu kernel for qscheme ",
                              c10::toString(quantizer->qscheme()));
  const auto* q = static_cast<const at::PerChannelAffineQuantizer*>(quantizer.get());
  const int64_t axis = q->axis();
  p.scales = q->scales().to(device, at::kDouble).contiguous();
  p.zero_points = q->zero_points().to(device, at::kLong).contiguous();
  p.q.scales = p.scales.const_data_ptr<double>();
  p.q.zero_points = p.zero_points.const_data_ptr<int64_t>();
  p.q.channels = sizes[axis];
  p.q.inner = c10::multiply_integers(sizes.begin() + axis + 1, sizes.end());
  return p;
}

// A new contiguous npu qtensor with `quantizer` holding quantize(self).
Tensor quantize(const Tensor& self, const at::QuantizerPtr& quantizer, const char* fn) {
  c10::DeviceGuard guard(self.device());
  Tensor q = at::new_qtensor(self.sizes(), self.options().dtype(quantizer->scalar_type()), quantizer);
  const Params p = params_of(quantizer, self.sizes(), self.device(), fn);
  if (q.numel() > 0) {
    const Tensor x = self.contiguous();
    NPU_CHECK(npu_kernels::quantize(stream_of(x), x.const_data_ptr<float>(), q.data_ptr(), q.numel(), p.q));
  }
  return q;
}

void check_axis(const Tensor& self, int64_t axis) {
  TORCH_CHECK(axis >= 0 && axis < self.dim(), "Channel axis out of range in per channel affine quantization. Got: ",
              axis, "Expected: [0, ", self.dim(), ")");
}

// CPU's per-channel parameter checks (ATen/native/quantized/AffineQuantizer.cpp, make_per_channel_quantizer).
void check_per_channel(const Tensor& self, const Tensor& scales, const Tensor& zero_points, int64_t axis,
                       at::ScalarType qtype, const char* fn) {
  TORCH_CHECK(scales.dim() == 1, "scale tensor must have dimension 1");
  TORCH_CHECK(zero_points.dim() == 1, "zero_points tensor must have dimension 1");
  TORCH_CHECK(scales.numel() == zero_points.numel(), "number of elements in scales and zero_points must match");
  check_axis(self, axis);
  TORCH_CHECK(self.size(axis) == scales.numel(), "length of scales must equal to channel, expected ", self.size(axis),
              " got, ", scales.numel());
  // float zero points make CPU's per_channel_affine_float_qparams scheme (embedding-table quantization)
  TORCH_CHECK_NOT_IMPLEMENTED(!at::isFloatingType(zero_points.scalar_type()), fn,
                              ": no npu kernel for float zero points (qscheme per_channel_affine_float_qparams)");
  code_dtype(qtype, fn);
  // the zero points' range: read on the host (a handful of values; CPU reads them too)
  const Tensor zp = zero_points.to(at::kCPU, at::kLong);
  for (int64_t i = 0; i < zp.numel(); ++i) check_zero_point(fn, qtype, zp.const_data_ptr<int64_t>()[i]);
}

// The int8 GEMM's operands from (batch, rows, cols) views, each with a unit stride in one of its last two dims.
void set_operands(npu_kernels::QuantMatmulArgs& a, const Tensor& x1, const Tensor& x2) {
  a.batch = x1.size(0);
  a.m = x1.size(1);
  a.k = x1.size(2);
  a.n = x2.size(2);
  a.x1 = static_cast<const int8_t*>(x1.const_data_ptr());
  a.x1_batch_stride = x1.stride(0);
  a.x1_row_stride = x1.stride(1);
  a.x1_col_stride = x1.stride(2);
  a.x2 = static_cast<const int8_t*>(x2.const_data_ptr());
  a.x2_batch_stride = x2.stride(0);
  a.x2_row_stride = x2.stride(1);
  a.x2_col_stride = x2.stride(2);
}

}  // namespace

Tensor NF::quantize_per_tensor(const Tensor& self, double scale, int64_t zero_point, at::ScalarType dtype) {
  const char* fn = "quantize_tensor_per_tensor_affine";
  check_float_npu(self);
  code_dtype(dtype, fn);
  check_zero_point(fn, dtype, zero_point);
  return quantize(self, at::make_per_tensor_affine_quantizer(scale, zero_point, dtype), fn);
}

Tensor NF::quantize_per_tensor(const Tensor& self, const Tensor& scale, const Tensor& zero_point,
                               at::ScalarType dtype) {
  // CPU reads the parameters' values too (item(): a sync when they live on the device)
  return NF::quantize_per_tensor(self, scale.item<double>(), zero_point.item<int64_t>(), dtype);
}

Tensor NF::quantize_per_channel(const Tensor& self, const Tensor& scales, const Tensor& zero_points, int64_t axis,
                                at::ScalarType dtype) {
  const char* fn = "quantize_tensor_per_channel_affine";
  check_float_npu(self);
  check_per_channel(self, scales, zero_points, axis, dtype, fn);
  const auto quantizer = at::make_per_channel_affine_quantizer(
      scales.to(self.device(), at::kDouble), zero_points.to(self.device(), at::kLong), axis, dtype);
  return quantize(self, quantizer, fn);
}

Tensor NF::_make_per_tensor_quantized_tensor(const Tensor& self, double scale, int64_t zero_point) {
  const at::ScalarType qtype = c10::toQIntType(self.scalar_type());
  TORCH_CHECK(qtype != self.scalar_type(), "_make_per_tensor_quantized_tensor: expected uint8, int8 or int32 codes, "
              "got ", self.scalar_type());
  Tensor q = at::new_qtensor(self.sizes(), self.options().dtype(qtype),
                             at::make_per_tensor_affine_quantizer(scale, zero_point, qtype));
  quantized_codes(q).copy_(self);
  return q;
}

Tensor NF::_make_per_channel_quantized_tensor(const Tensor& self, const Tensor& scale, const Tensor& zero_point,
                                              int64_t axis) {
  const at::ScalarType qtype = c10::toQIntType(self.scalar_type());
  TORCH_CHECK(qtype != self.scalar_type(), "_make_per_channel_quantized_tensor: expected uint8, int8 or int32 codes, "
              "got ", self.scalar_type());
  check_axis(self, axis);
  Tensor q = at::new_qtensor(self.sizes(), self.options().dtype(qtype),
                             at::make_per_channel_affine_quantizer(scale.to(self.device(), at::kDouble),
                                                                   zero_point.to(self.device(), at::kLong), axis, qtype));
  quantized_codes(q).copy_(self);
  return q;
}

Tensor NF::dequantize(const Tensor& self) {
  c10::DeviceGuard guard(self.device());
  Tensor out = at::empty(self.sizes(), self.options().dtype(at::kFloat));
  const Params p = params_of(self.quantizer(), self.sizes(), self.device(), "dequantize");
  if (out.numel() > 0) {
    const Tensor codes = quantized_codes(self).contiguous();
    NPU_CHECK(npu_kernels::dequantize(stream_of(out), codes.const_data_ptr(), out.data_ptr<float>(), out.numel(),
                                      p.q));
  }
  return out;
}

Tensor NF::int_repr(const Tensor& self) {
  // the codes as a plain integer tensor over the same storage, copied (CPU returns a new contiguous tensor)
  return quantized_codes(self).clone(at::MemoryFormat::Contiguous);
}

Tensor NF::_empty_per_channel_affine_quantized(at::IntArrayRef size, const Tensor& scales, const Tensor& zero_points,
                                               int64_t axis, std::optional<at::ScalarType> dtype,
                                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                                               std::optional<bool> pin_memory,
                                               std::optional<at::MemoryFormat> memory_format) {
  // a tensor copied to another device takes its parameters along (ATen's kernel keeps the given tensors)
  const c10::Device target = device.value_or(scales.device());
  return at::native::empty_per_channel_affine_quantized(size, scales.to(target, at::kDouble),
                                                        zero_points.to(target, at::kLong), axis, dtype, layout, device,
                                                        pin_memory, memory_format);
}

// ---- torch_npu.npu_quant_matmul ----

Tensor NF::npu_quant_matmul(const Tensor& x1, const Tensor& x2, const Tensor& scale,
                            const std::optional<Tensor>& offset, const std::optional<Tensor>& pertoken_scale,
                            const std::optional<Tensor>& bias, std::optional<at::ScalarType> output_dtype) {
  const char* op = "npu_quant_matmul";
  c10::DeviceGuard guard(x1.device());
  TORCH_CHECK(x1.scalar_type() == at::kChar && x2.scalar_type() == at::kChar, op,
              ": x1 and x2 must be int8 (int4 packed in int32 is not simulated), got ", x1.scalar_type(), " and ",
              x2.scalar_type());
  TORCH_CHECK(x1.dim() >= 2 && x1.dim() <= 6 && x2.dim() >= 2 && x2.dim() <= 6, op,
              ": x1 and x2 must have 2 to 6 dims, got ", x1.dim(), " and ", x2.dim());
  const int64_t m = x1.size(-2), k = x1.size(-1), n = x2.size(-1);
  TORCH_CHECK(x2.size(-2) == k, op, ": x1 ", x1.sizes(), " and x2 ", x2.sizes(), " cannot be multiplied (k ", k,
              " vs ", x2.size(-2), ")");
  const at::ScalarType out_type = output_dtype.value_or(at::kChar);
  TORCH_CHECK(out_type == at::kChar || out_type == at::kHalf || out_type == at::kBFloat16 || out_type == at::kFloat,
              op, ": output_dtype must be torch.int8, torch.float16, torch.bfloat16 or torch.float32, got ", out_type);
  auto vec = [&](const Tensor& t, const char* name, std::initializer_list<int64_t> lens) {
    TORCH_CHECK(t.dim() == 1 && std::find(lens.begin(), lens.end(), t.numel()) != lens.end(), op, ": ", name,
                " must be 1-D with ", *lens.begin(), lens.size() > 1 ? c10::str(" or ", *(lens.begin() + 1)) : "",
                " elements, got shape ", t.sizes());
    TORCH_CHECK(is_npu(t), op, ": ", name, " must be an npu tensor, got ", t.device());
  };
  TORCH_CHECK(scale.scalar_type() == at::kFloat || scale.scalar_type() == at::kBFloat16, op,
              ": scale must be float32 or bfloat16 (npu_trans_quant_param's int64 form is not simulated), got ",
              scale.scalar_type());
  vec(scale, "scale", {1, n});
  const Tensor scale_f = scale.to(at::kFloat).contiguous();
  Tensor offset_f, token_f, bias_c;
  if (offset.has_value() && offset->defined()) {
    TORCH_CHECK(offset->scalar_type() == at::kFloat, op, ": offset must be float32, got ", offset->scalar_type());
    vec(*offset, "offset", {1, n});
    offset_f = offset->contiguous();
  }
  // the batch: x1's and x2's leading dims broadcast
  const auto batch_sizes = at::infer_size(x1.sizes().slice(0, x1.dim() - 2), x2.sizes().slice(0, x2.dim() - 2));
  const int64_t batch = c10::multiply_integers(batch_sizes);
  if (pertoken_scale.has_value() && pertoken_scale->defined()) {
    TORCH_CHECK(pertoken_scale->scalar_type() == at::kFloat, op, ": pertoken_scale must be float32, got ",
                pertoken_scale->scalar_type());
    vec(*pertoken_scale, "pertoken_scale", {m});
    token_f = pertoken_scale->contiguous();
  }
  npu_kernels::QuantMatmulArgs a;
  if (bias.has_value() && bias->defined()) {
    const at::ScalarType bt = bias->scalar_type();
    TORCH_CHECK(bt == at::kInt || bt == at::kFloat || bt == at::kBFloat16 || bt == at::kHalf, op,
                ": bias must be int32, float32, bfloat16 or float16, got ", bt);
    TORCH_CHECK(is_npu(*bias), op, ": bias must be an npu tensor, got ", bias->device());
    TORCH_CHECK((bias->dim() == 1 && bias->numel() == n) ||
                    (bias->dim() == 3 && bias->size(0) == batch && bias->size(1) == 1 && bias->size(2) == n),
                op, ": bias must have shape (n,) or (batch, 1, n) = (", batch, ", 1, ", n, "), got ", bias->sizes());
    bias_c = bias->contiguous();
    a.bias = bias_c.const_data_ptr();
    a.bias_dtype = kernel_dtype(bt, op);
    a.bias_batch_stride = bias->dim() == 3 ? n : 0;
  }
  for (const Tensor* t : {&x1, &x2}) TORCH_CHECK(is_npu(*t), op, ": x1 and x2 must be npu tensors, got ", t->device());

  std::vector<int64_t> out_sizes(batch_sizes.begin(), batch_sizes.end());
  out_sizes.push_back(m);
  out_sizes.push_back(n);
  Tensor out = at::empty(out_sizes, x1.options().dtype(out_type));
  if (out.numel() == 0) return out;
  // Each operand batched over the broadcast batch with one unit stride (row-major or a transpose of it).
  auto operand = [&](const Tensor& x) {
    std::vector<int64_t> sizes(batch_sizes.begin(), batch_sizes.end());
    sizes.push_back(x.size(-2));
    sizes.push_back(x.size(-1));
    Tensor e = x.expand(sizes);
    if (e.stride(-1) != 1 && e.stride(-2) != 1) e = e.contiguous();
    return e.reshape({-1, x.size(-2), x.size(-1)});  // a view when the batch dims fold (expanded: stride 0)
  };
  set_operands(a, operand(x1), operand(x2));
  a.scale = scale_f.const_data_ptr<float>();
  a.scale_len = scale_f.numel();
  a.offset = offset_f.defined() ? offset_f.const_data_ptr<float>() : nullptr;
  a.offset_len = offset_f.defined() ? offset_f.numel() : 1;
  a.pertoken_scale = token_f.defined() ? token_f.const_data_ptr<float>() : nullptr;
  a.out = out.data_ptr();
  a.out_dtype = kernel_dtype(out_type, op);
  NPU_CHECK(npu_kernels::quant_matmul(stream_of(out), a));
  return out;
}

// torch._int_mm: the int8 GEMM's int32 accumulators (int8 or uint8 self, int8 mat2), with CPU's checks (its wording,
// "int_mm_out_cpu").
Tensor& NF::_int_mm_out(const Tensor& self, const Tensor& mat2, Tensor& result) {
  constexpr const char* op = "int_mm_out_cpu";
  check_devices("_int_mm", {{"self", &self}, {"mat2", &mat2}, {"out", &result}});
  TORCH_CHECK(self.dim() == 2, op, ": Expected self to be of dimension 2 but got ", self.dim());
  TORCH_CHECK(mat2.dim() == 2, op, ": Expected mat2 to be of dimension 2 but got ", mat2.dim());
  TORCH_CHECK(self.size(1) == mat2.size(0), op, ": self.size(1) needs to match mat2.size(0) but got ", self.size(1),
              " and ", mat2.size(0));
  TORCH_CHECK(self.dtype() == at::kChar || self.dtype() == at::kByte, op,
              ": Expected self dtype to be int8 or uint8 but got ", self.dtype());
  TORCH_CHECK(mat2.dtype() == at::kChar, op, ": Expected mat2 dtype to be of type int8 but got ", mat2.dtype());
  TORCH_CHECK(result.dtype() == at::kInt, op, ": Expected result dtype to be of type kInt but got ", result.dtype());
  TORCH_CHECK(result.size(0) == self.size(0), op, ": Expected result.size(0) to be ", self.size(0), " but got ",
              result.size(0));
  TORCH_CHECK(result.size(1) == mat2.size(1), op, ": Expected result.size(1) to be ", mat2.size(1), " but got ",
              result.size(1));
  TORCH_CHECK(result.dim() == 2, op, ": Expected result to be of dimension 2 but got ", result.dim());
  TORCH_CHECK(result.is_contiguous(), op, ": Expected result to be contiguous.");
  if (result.numel() == 0 || self.size(1) == 0) return result.zero_();
  c10::DeviceGuard guard(self.device());
  if (self.dtype() == at::kByte) {
    // u8 x s8 (x86's quantized GEMM): x = (x - 128) + 128, so x @ w = (x - 128) @ w + 128 * (column sums of w),
    // all in wrapping int32 as CPU accumulates
    const Tensor shifted = self.to(at::kShort).sub_(128).to(at::kChar);
    NF::_int_mm_out(shifted, mat2, result);
    return result.add_(mat2.sum(0, /*keepdim=*/true, at::kInt).mul_(128));
  }
  auto unit = [](const Tensor& x) { return (x.stride(0) == 1 || x.stride(1) == 1 ? x : x.contiguous()).unsqueeze(0); };
  npu_kernels::QuantMatmulArgs a;
  set_operands(a, unit(self), unit(mat2));
  a.out = result.data_ptr();
  a.out_dtype = npu_kernels::DType::kInt32;
  a.name = "int_mm";
  NPU_CHECK(npu_kernels::quant_matmul(stream_of(result), a));
  return result;
}

Tensor NF::_int_mm(const Tensor& self, const Tensor& mat2) {
  Tensor result = at::empty({self.dim() == 2 ? self.size(0) : 0, mat2.dim() == 2 ? mat2.size(1) : 0},
                            self.options().dtype(at::kInt));
  return NF::_int_mm_out(self, mat2, result);
}

}  // namespace torch_npu_sim
