// at::Tensor -> kernel TensorDesc conversion and dtype mapping (see npu_tensor.h).
#include "aten/npu_tensor.h"

#include <ATen/Dispatch_v2.h>

#include "aten/npu_ops_check.h"

#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>

namespace torch_npu_sim {

bool is_npu(const at::Tensor& t) { return t.device().type() == c10::DeviceType::PrivateUse1; }

at::Tensor quantized_codes(const at::Tensor& q) {
  TORCH_INTERNAL_ASSERT(q.is_quantized());
  at::Tensor codes = at::empty({0}, q.options().dtype(c10::toUnderlying(q.scalar_type())));
  codes.set_(q.storage(), q.storage_offset(), q.sizes(), q.strides());
  return codes;
}

void check_device_arg(const char* op, const char* arg, const at::Tensor& t, const at::Device& device, bool cpu_allowed) {
  if (!t.defined() || t.device() == device || (cpu_allowed && t.device().is_cpu())) return;
  TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two devices, ", device, " and ",
              t.device(), "! (when checking argument for argument ", arg, " in method ", op, ")");
}

void check_devices(const char* op, std::initializer_list<NamedTensor> args) {
  const at::Tensor* first = nullptr;
  for (const auto& [name, t] : args) {
    if (t != nullptr && t->defined() && is_npu(*t)) {
      first = t;
      break;
    }
  }
  TORCH_INTERNAL_ASSERT(first != nullptr, op, ": called without an npu tensor");
  for (const auto& [name, t] : args) {
    if (t != nullptr) check_device_arg(op, name, *t, first->device());
  }
}

npu_kernels::DType kernel_dtype(at::ScalarType type, const char* op) {
  TORCH_CHECK_TYPE(npu_kernels::dtype_supported(static_cast<int>(type)), op, ": dtype ", type,
                   " is not supported on the npu device (supported: bool, uint8, int8, int16, int32, int64, "
                   "float16, bfloat16, float32, float64, complex64, complex128)");
  return static_cast<npu_kernels::DType>(type);
}

npu_kernels::TensorDesc tensor_desc(const at::Tensor& t, const char* op) {
  TORCH_CHECK(is_npu(t), op, ": expected a tensor on npu, got one on ", t.device());
  TORCH_CHECK(t.dim() <= npu_kernels::kMaxDims, op, ": tensors with more than ", npu_kernels::kMaxDims,
              " dimensions are not supported on npu (got ", t.dim(), ")");
  npu_kernels::TensorDesc d;
  d.data = t.numel() > 0 ? const_cast<void*>(t.const_data_ptr()) : nullptr;
  d.dtype = kernel_dtype(t.scalar_type(), op);
  d.ndim = static_cast<int>(t.dim());
  for (int i = 0; i < d.ndim; ++i) {
    d.sizes[i] = t.size(i);
    d.strides[i] = t.stride(i);
  }
  return d;
}

npu_kernels::ScalarValue to_scalar_value(const c10::Scalar& s, at::ScalarType target) {
  // Scalar::to's checked conversion, as CPU's kernels convert the value: an out-of-range value raises CPU's
  // "value cannot be converted to type ... without overflow" instead of wrapping on the device
  AT_DISPATCH_V2(target, "fill", AT_WRAP([&] { (void)s.to<scalar_t>(); }), AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX),
                 at::kHalf, at::kBFloat16, at::kBool);
  npu_kernels::ScalarValue v;
  if (s.isBoolean()) {
    v.kind = npu_kernels::ScalarValue::kBool;
    v.b = s.toBool();
  } else if (s.isIntegral(false)) {
    v.kind = npu_kernels::ScalarValue::kInt;
    v.i = s.toLong();
  } else if (s.isComplex()) {
    v.kind = npu_kernels::ScalarValue::kComplex;
    const auto c = s.toComplexDouble();
    v.d = c.real();
    v.imag = c.imag();
  } else {
    v.kind = npu_kernels::ScalarValue::kDouble;
    v.d = s.toDouble();
  }
  return v;
}

void npu_op_on_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const auto& args = schema.arguments();
  const size_t first = stack->size() - args.size();
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& v = (*stack)[first + i];
    auto refuse = [&](const at::Tensor& t) {
      TORCH_CHECK(!t.defined() || is_npu(t), schema.name(), ": expected argument '", args[i].name(),
                  "' on an npu device, got a tensor on ", t.device(),
                  " (torch_npu's ops run on the NPU only: move the inputs with .npu() or .to('npu'))");
    };
    if (v.isTensor()) refuse(v.toTensor());
    if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorVector()) refuse(t);
  }
  TORCH_CHECK(false, schema.name(), ": expected its tensor arguments on an npu device");
}

}  // namespace torch_npu_sim
