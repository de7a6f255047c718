// The dtype layer's out-of-line part: names, sizes and the dtypes a kernel can take (npu_kernels/dtype.h).
#include "npu_kernels/dtype.h"

namespace npu_kernels {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kUInt8: return "uint8";
    case DType::kInt8: return "int8";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kFloat16: return "float16";
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kComplex64: return "complex64";
    case DType::kComplex128: return "complex128";
    case DType::kBool: return "bool";
    case DType::kBFloat16: return "bfloat16";
  }
  return "unknown";
}

std::size_t dtype_size(DType t) {
  std::size_t size = 0;
  dispatch_dtype(t, [&](auto v) { size = sizeof(v); });
  return size;
}

bool dtype_supported(int raw) {
  return dispatch_dtype(static_cast<DType>(raw), [](auto) {});
}

}  // namespace npu_kernels
