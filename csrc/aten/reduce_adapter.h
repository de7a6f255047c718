// The reductions' adapter: (input, dim mask, outputs) -> npu_kernels::ReduceDesc, enqueued on the
// current stream. Outputs must already have their final shape (ATen's meta function or helpers).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/TensorIterator.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <array>
#include <type_traits>

#include <initializer_list>
#include <optional>

#include "npu_kernels/reduce.h"

namespace torch_npu_sim {

// `compute_dtype`: the input is converted to it first (value reductions run in the output's dtype).
void run_reduce(npu_kernels::ReduceOp op, const at::Tensor& self, const at::native::DimMask& mask,
                std::initializer_list<at::Tensor> outs, bool keepdim, const npu_kernels::ReduceParams& prm,
                std::optional<at::ScalarType> compute_dtype);

// Structured meta runner with several outputs (values + indices): functional or out= flavour.
template <class Meta, size_t N>
struct MultiOut final : public Meta {
  std::array<at::Tensor, N> outs;
  bool out_mode = false;

  void set_output_strided(int64_t idx, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options) override {
    prepare(idx, sizes, strides, options);
    if constexpr (std::is_base_of_v<at::TensorIteratorBase, Meta>) Meta::set_output_raw_strided(idx, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t idx, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options) override {
    prepare(idx, sizes, strides, options);
    if constexpr (std::is_base_of_v<at::TensorIteratorBase, Meta>) Meta::set_output_raw_strided(idx, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t idx) override { return outs[idx]; }

 private:
  void prepare(int64_t idx, at::IntArrayRef sizes, at::IntArrayRef strides, const at::TensorOptions& options) {
    at::Tensor& o = outs[idx];
    if (!out_mode) {
      o = strides.empty() ? at::empty(sizes, options) : at::empty_strided(sizes, strides, options);
      return;
    }
    TORCH_CHECK(options.dtype() == o.dtype(), "Expected out tensor to have dtype ", options.dtype(), ", but got ",
                o.dtype(), " instead");
    TORCH_CHECK(options.device() == o.device(), "Expected out tensor to have device ", options.device(),
                ", but got ", o.device(), " instead");
    at::native::resize_output(o, sizes);
  }
};

template <class Meta, size_t N = 1, class... Args>
MultiOut<Meta, N> meta_functional(const Args&... args) {
  MultiOut<Meta, N> m;
  m.meta(args...);
  return m;
}

template <class Meta, size_t N = 1, class... Args>
MultiOut<Meta, N> meta_out(std::array<at::Tensor, N> outs, const Args&... args) {
  MultiOut<Meta, N> m;
  m.outs = outs;
  m.out_mode = true;
  m.meta(args...);
  return m;
}

}  // namespace torch_npu_sim
