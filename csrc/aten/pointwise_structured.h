// The functional, in-place and out= flavours of a unary / binary op of the kernel catalogue over ATen's
// structured meta function (NpuStructured), with the flat fast path for same-shape contiguous operands. The
// kernels the op table generates (tools/gen_op_table.py) call these; so can a family file's hand kernel.
#pragma once

#include <type_traits>
#include <utility>

#include "aten/pointwise.h"
#include "aten/structured.h"

namespace torch_npu_sim {

// Each takes the flat path when it applies, else runs the meta function and the kernel on its iterator. A
// dtype the kernel library lacks raises NoKernelForDtype (an op the table marks or_cpu then runs on the CPU).
template <class Meta>
at::Tensor unary(npu_kernels::UnaryOp op, const at::Tensor& self) {
  if (auto flat = flat_unary(op, self)) return *std::move(flat);
  return structured_functional<Meta>(unary_kernel(op), self);
}
template <class Meta>
at::Tensor& unary_(npu_kernels::UnaryOp op, at::Tensor& self) {
  if (flat_unary_(op, self)) return self;
  return structured_inplace<Meta>(unary_kernel(op), self);
}
template <class Meta>
at::Tensor& unary_out(npu_kernels::UnaryOp op, const at::Tensor& self, at::Tensor& out) {
  return structured_out<Meta>(unary_kernel(op), out, self);
}
template <class Meta, class B>
at::Tensor binary(npu_kernels::BinaryOp op, const at::Tensor& a, const B& b) {
  if constexpr (std::is_same_v<B, at::Tensor>) {
    if (auto flat = flat_binary(op, a, b)) return *std::move(flat);
  }
  return structured_functional<Meta>(binary_kernel(op), a, b);
}
template <class Meta, class B>
at::Tensor& binary_(npu_kernels::BinaryOp op, at::Tensor& a, const B& b) {
  if constexpr (std::is_same_v<B, at::Tensor>) {
    if (flat_binary_(op, a, b)) return a;
  }
  return structured_inplace<Meta>(binary_kernel(op), a, b);
}
template <class Meta, class B>
at::Tensor& binary_out(npu_kernels::BinaryOp op, const at::Tensor& a, const B& b, at::Tensor& out) {
  return structured_out<Meta>(binary_kernel(op), out, a, b);
}

}  // namespace torch_npu_sim
