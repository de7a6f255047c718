// Shape ops for npu: cat (structured_cat meta), flip, roll, tril/triu. Data movement goes through the
// copy_cast kernel (flip = a copy from a negative-stride view of the source) and kernels/src/index.cpp.
#include <ATen/WrapDimUtils.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/TensorShape.h>
#include <ATen/ops/cat_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/tril_meta.h>
#include <ATen/ops/triu_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/npu_tensor.h"
#include "aten/structured.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/copy.h"
#include "npu_kernels/index.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

void cat_kernel(const at::Tensor& out, const at::ITensorListRef& tensors, int64_t dim) {
  for (const at::Tensor& t : tensors) check_device_arg("cat", "tensors", t, out.device());
  if (out.numel() == 0) return;
  c10::DeviceGuard guard(out.device());
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    if (at::native::cat_should_skip_tensor(t)) continue;
    const int64_t n = t.size(dim);
    if (n > 0) out.narrow(dim, offset, n).copy_(t);  // copy_ converts to the promoted dtype
    offset += n;
  }
}

// roll along one dim: out[(i + shift) % n] = in[i], as two slice copies.
void roll_one(const at::Tensor& out, const at::Tensor& in, int64_t dim, int64_t shift) {
  const int64_t n = in.size(dim);
  shift = n == 0 ? 0 : ((shift % n) + n) % n;
  if (shift == 0) {
    out.copy_(in);
    return;
  }
  out.narrow(dim, shift, n - shift).copy_(in.narrow(dim, 0, n - shift));
  out.narrow(dim, 0, shift).copy_(in.narrow(dim, n - shift, shift));
}

void triangle_kernel(const at::Tensor& out, const at::Tensor& self, int64_t diagonal, bool upper) {
  if (out.numel() == 0) return;
  c10::DeviceGuard guard(out.device());
  const char* op = upper ? "triu" : "tril";
  NPU_CHECK(npu_kernels::triangle(current_native_stream(out.device().index()), tensor_desc(out, op),
                                  tensor_desc(self, op), diagonal, upper));
}

// The structured body of tril / triu.
auto triangle_body(const at::Tensor& self, int64_t diagonal, bool upper) {
  return [&self, diagonal, upper](auto& op) { triangle_kernel(op.maybe_get_output(0), self, diagonal, upper); };
}

}  // namespace

at::Tensor NF::cat(const at::ITensorListRef& tensors, int64_t dim) {
  NpuStructured<at::meta::structured_cat> op(OutMode::kFunctional);
  const auto pre = op.meta(tensors, dim);
  cat_kernel(op.maybe_get_output(0), tensors, pre.dim);
  return std::move(op.result());
}

at::Tensor& NF::cat_out(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out) {
  NpuStructured<at::meta::structured_cat> op(OutMode::kOut, out);
  const auto pre = op.meta(tensors, dim);
  cat_kernel(op.maybe_get_output(0), tensors, pre.dim);
  op.finish();
  return out;
}

at::Tensor NF::flip(const at::Tensor& self, at::IntArrayRef dims) {
  const auto flip_dims = at::dim_list_to_bitset(dims, self.dim());
  c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty(self.sizes(), self.options());
  if (self.numel() == 0) return out;
  auto src = tensor_desc(self, "flip");
  for (int d = 0; d < src.ndim; ++d) {
    if (!flip_dims[d]) continue;
    src.data =
        static_cast<char*>(src.data) + (src.sizes[d] - 1) * src.strides[d] * static_cast<int64_t>(self.element_size());
    src.strides[d] = -src.strides[d];
  }
  NPU_CHECK(npu_kernels::copy_cast(current_native_stream(self.device().index()), tensor_desc(out, "flip"), src));
  return out;
}

at::Tensor NF::roll(const at::Tensor& self, c10::IntArrayRef shifts, c10::IntArrayRef dims) {
  c10::DeviceGuard guard(self.device());
  if (dims.empty()) {
    TORCH_CHECK(shifts.size() == 1, "roll: `shifts` required to be of size 1 when `dims` is empty, got ",
                shifts.size());
    const int64_t zero = 0;
    return NF::roll(self.flatten(), shifts, c10::IntArrayRef(&zero, 1)).view(self.sizes());
  }
  TORCH_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ", shifts.size(),
              ", dims:", dims.size());
  at::Tensor cur = self;
  for (size_t i = 0; i < dims.size(); ++i) {
    at::Tensor out = at::empty(self.sizes(), self.options());
    if (self.numel() > 0) roll_one(out, cur, at::maybe_wrap_dim(dims[i], self.dim()), shifts[i]);
    cur = out;
  }
  return cur;
}

at::Tensor NF::tril(const at::Tensor& self, int64_t diagonal) {
  return structured_functional<at::meta::structured_tril>(triangle_body(self, diagonal, false), self, diagonal);
}
at::Tensor& NF::tril_(at::Tensor& self, int64_t diagonal) {
  return structured_inplace<at::meta::structured_tril>(triangle_body(self, diagonal, false), self, diagonal);
}
at::Tensor& NF::tril_out(const at::Tensor& self, int64_t diagonal, at::Tensor& out) {
  return structured_out<at::meta::structured_tril>(triangle_body(self, diagonal, false), out, self, diagonal);
}
at::Tensor NF::triu(const at::Tensor& self, int64_t diagonal) {
  return structured_functional<at::meta::structured_triu>(triangle_body(self, diagonal, true), self, diagonal);
}
at::Tensor& NF::triu_(at::Tensor& self, int64_t diagonal) {
  return structured_inplace<at::meta::structured_triu>(triangle_body(self, diagonal, true), self, diagonal);
}
at::Tensor& NF::triu_out(const at::Tensor& self, int64_t diagonal, at::Tensor& out) {
  return structured_out<at::meta::structured_triu>(triangle_body(self, diagonal, true), out, self, diagonal);
}

}  // namespace torch_npu_sim
