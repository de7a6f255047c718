// The overlap guard of out= and in-place kernels (tools/gen_op_table.py registers them behind it).
#pragma once

#include <ATen/core/Tensor.h>

#include <deque>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

namespace torch_npu_sim {

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
  explicit OutOverlapGuard(std::initializer_list<at::Tensor> written) : written_(written) {}
  explicit OutOverlapGuard(std::vector<at::Tensor> written) : written_(std::move(written)) {}
  const at::Tensor& input(const at::Tensor& t);
  const std::optional<at::Tensor>& input(const std::optional<at::Tensor>& t);

 private:
  std::vector<at::Tensor> written_;
  std::deque<at::Tensor> copies_;  // (a deque: the references handed out stay valid)
  std::deque<std::optional<at::Tensor>> optional_copies_;
};

}  // namespace torch_npu_sim
