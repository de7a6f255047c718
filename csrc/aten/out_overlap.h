// The overlap guard of out= and in-place kernels (tools/gen_op_table.py registers them behind it).
#pragma once

#include <ATen/core/Tensor.h>

#include <c10/util/SmallVector.h>

#include <initializer_list>
#include <list>
#include <optional>

namespace torch_npu_sim {

// Whether `input` shares memory with `written`; raises ATen's error where it partially overlaps it (a 0-dim
// input excepted: a value, read before anything is written).
bool overlaps_written(const at::Tensor& written, const at::Tensor& input);

// The tensors an out= or in-place kernel writes, against which each of its tensor inputs is checked before the
// kernel runs, by the rule of ATen's TensorIterator applied to every kernel: an input that partially overlaps a
// written tensor raises ATen's error ("unsupported operation: some elements of the input tensor and the written-to
// tensor refer to a single memory location. ..."; CPU's and CUDA's reductions and linear algebra skip the check
// and compute on partly overwritten inputs); an input that is a written tensor, or shares its memory in a way too
// irregular to tell (torch.msort(x, out=x), torch.addmm(y, a, b, out=y)), or a 0-dim input sharing its memory (a
// value: x.fill_(x[1]), as ATen's .item() reads it) is read from a copy taken first, so no kernel reads an element
// it has already written; every other input passes through untouched (a storage comparison per pair).
class OutOverlapGuard {
 public:
  // (pointers to the kernel's own arguments, which outlive the guard: no copies on the hot path)
  explicit OutOverlapGuard(std::initializer_list<const at::Tensor*> written) : written_(written) {}
  const at::Tensor& input(const at::Tensor& t);
  const std::optional<at::Tensor>& input(const std::optional<at::Tensor>& t);

 private:
  c10::SmallVector<const at::Tensor*, 4> written_;
  std::list<at::Tensor> copies_;  // (a list: no allocation until a copy is taken; references stay valid)
  std::list<std::optional<at::Tensor>> optional_copies_;
};

}  // namespace torch_npu_sim
