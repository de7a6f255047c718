// Runs a pointwise kernel on a built TensorIteratorBase: converts it to the kernels' ElementwiseIter
// (promoting inputs to the common dtype, host scalars inline, a temporary when the output dtype differs)
// and enqueues the launch on the current stream of the iterator's device; plus the kernel callables
// the registration files share.
#pragma once

#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/util/FunctionRef.h>

#include <functional>
#include <initializer_list>
#include <optional>

#include "npu_kernels/pointwise.h"

namespace torch_npu_sim {

// Called synchronously, never stored: a non-owning reference (no allocation for a capturing lambda).
using PointwiseLaunch = c10::function_ref<npu_sim::Status(npu_sim::Stream, const npu_kernels::ElementwiseIter&)>;

// `predicate`: the kernel writes bool. `compute_dtype` overrides the iterator's common dtype (e.g. an
// integer input of a float-only op is computed in the default float type).
// `out_dtype` overrides the kernel's output dtype (abs of complex writes the real type).
// `raw_first_input`: the first input keeps its own dtype (where's 1-byte condition), host scalar or tensor.
void run_pointwise(at::TensorIteratorBase& iter, const char* op, bool predicate, const PointwiseLaunch& launch,
                   std::optional<at::ScalarType> compute_dtype = std::nullopt,
                   std::optional<at::ScalarType> out_dtype = std::nullopt, bool raw_first_input = false);

// The fast path of a functional pointwise op whose operands are contiguous npu tensors of one floating
// dtype and one shape (the common case in models): the output is allocated like the first operand and
// the kernel runs over one flat dimension, without building a TensorIterator (its meta work was ~0.35 us
// of a small op's ~1.8 us of host time). Empty when the operands do not qualify or the kernel library has
// no kernel for the dtype; the caller then takes the structured path, which owns every error message.
std::optional<at::Tensor> flat_pointwise(const char* op, bool predicate,
                                         std::initializer_list<std::reference_wrapper<const at::Tensor>> ins,
                                         const PointwiseLaunch& launch);

// The in-place flavour: writes the result into the first operand (self) under the same conditions, when no
// input partially overlaps self. False (nothing done) otherwise.
bool flat_pointwise_inplace(const char* op, bool predicate,
                            std::initializer_list<std::reference_wrapper<const at::Tensor>> ins,
                            const PointwiseLaunch& launch);

// `v` converted to `type`, written as a kernel scalar operand (ElementwiseIter::scalar_bytes).
void write_scalar(const c10::Scalar& v, at::ScalarType type, unsigned char* bytes);

// The launch of a catalogue op on an ElementwiseIter.
inline auto unary_launch(npu_kernels::UnaryOp op, npu_kernels::PointwiseParams p = {}) {
  return [op, p](npu_sim::Stream s, const npu_kernels::ElementwiseIter& e) { return npu_kernels::unary(s, op, e, p); };
}
inline auto binary_launch(npu_kernels::BinaryOp op, npu_kernels::PointwiseParams p = {}) {
  return [op, p](npu_sim::Stream s, const npu_kernels::ElementwiseIter& e) { return npu_kernels::binary(s, op, e, p); };
}

// Kernels as callables on the built iterator (what NpuStructured's callers pass as `kernel`).
inline auto unary_kernel(npu_kernels::UnaryOp op, npu_kernels::PointwiseParams p = {}) {
  return [op, p](at::TensorIteratorBase& it) {
    run_pointwise(it, npu_kernels::op_name(op), npu_kernels::is_predicate(op), unary_launch(op, p));
  };
}
inline auto binary_kernel(npu_kernels::BinaryOp op, npu_kernels::PointwiseParams p = {}) {
  return [op, p](at::TensorIteratorBase& it) {
    run_pointwise(it, npu_kernels::op_name(op), npu_kernels::is_predicate(op), binary_launch(op, p));
  };
}
// flat_pointwise / flat_pointwise_inplace for a unary / binary op of the catalogue.
inline std::optional<at::Tensor> flat_unary(npu_kernels::UnaryOp op, const at::Tensor& a) {
  return flat_pointwise(npu_kernels::op_name(op), npu_kernels::is_predicate(op), {a}, unary_launch(op));
}
inline std::optional<at::Tensor> flat_binary(npu_kernels::BinaryOp op, const at::Tensor& a, const at::Tensor& b,
                                             npu_kernels::PointwiseParams p = {}) {
  return flat_pointwise(npu_kernels::op_name(op), npu_kernels::is_predicate(op), {a, b}, binary_launch(op, p));
}
inline bool flat_unary_(npu_kernels::UnaryOp op, const at::Tensor& self) {
  return flat_pointwise_inplace(npu_kernels::op_name(op), npu_kernels::is_predicate(op), {self}, unary_launch(op));
}
inline bool flat_binary_(npu_kernels::BinaryOp op, const at::Tensor& self, const at::Tensor& b,
                         npu_kernels::PointwiseParams p = {}) {
  return flat_pointwise_inplace(npu_kernels::op_name(op), npu_kernels::is_predicate(op), {self, b}, binary_launch(op, p));
}
inline auto ternary_kernel(npu_kernels::TernaryOp op, npu_kernels::PointwiseParams p = {}) {
  return [op, p](at::TensorIteratorBase& it) {
    run_pointwise(it, npu_kernels::op_name(op), false,
                  [&](npu_sim::Stream s, const npu_kernels::ElementwiseIter& e) { return npu_kernels::ternary(s, op, e, p); },
                  std::nullopt, std::nullopt, /*raw_first_input=*/op == npu_kernels::TernaryOp::kWhere);
  };
}

// A catalogue op through libtorch's TensorIterator::unary_op / binary_op (ops without a structured meta
// function): an undefined `out` is allocated by the iterator. Returns the output.
inline at::Tensor unary_into(at::TensorBase out, const at::TensorBase& self, npu_kernels::UnaryOp op,
                             npu_kernels::PointwiseParams p = {}) {
  auto iter = at::TensorIterator::unary_op(out, self);
  unary_kernel(op, p)(iter);
  return iter.output();
}
inline at::Tensor binary_into(at::TensorBase out, const at::TensorBase& a, const at::TensorBase& b,
                              npu_kernels::BinaryOp op, npu_kernels::PointwiseParams p = {}) {
  auto iter = at::TensorIterator::binary_op(out, a, b);
  binary_kernel(op, p)(iter);
  return iter.output();
}

// A complex scalar keeps its imaginary part in `ai` (complex kernels read both; real tensors never get one:
// ATen's meta functions refuse a complex alpha or value for them).
inline npu_kernels::PointwiseParams with_a(const c10::Scalar& a) {
  npu_kernels::PointwiseParams p;
  if (a.isComplex()) {
    const c10::complex<double> z = a.toComplexDouble();
    p.a = z.real();
    p.ai = z.imag();
  } else {
    p.a = a.toDouble();
  }
  p.has_a = true;
  return p;
}
inline npu_kernels::PointwiseParams with_ab(const c10::Scalar& a, const c10::Scalar& b) {
  npu_kernels::PointwiseParams p = with_a(a);
  p.b = b.toDouble();
  p.has_b = true;
  return p;
}

}  // namespace torch_npu_sim
