// Running ATen's structured meta functions for npu: NpuStructured<Meta> is the output-allocation half of
// what torchgen generates for CPU/CUDA (functional, in-place and out= flavours), so shape, broadcasting,
// type promotion and argument checks all come from libtorch's meta code; the caller then runs our kernel
// on the resulting TensorIteratorBase.
#pragma once

#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty_strided.h>

#include <array>
#include <optional>
#include <type_traits>
#include <utility>

#include "aten/npu_tensor.h"

namespace torch_npu_sim {

enum class OutMode { kFunctional, kInplace, kOut };

template <class Meta>
struct NpuStructured final : public Meta {
  explicit NpuStructured(OutMode mode, const at::Tensor& target = at::Tensor()) : mode_(mode), out_(target) {}

  void set_output_strided(int64_t idx, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options) override {
    prepare(sizes, strides, options);
    // TensorIterator metas record the output; plain MetaBase ones (gather, cat, tril, ...) have nothing to record.
    if constexpr (std::is_base_of_v<at::TensorIteratorBase, Meta>) Meta::set_output_raw_strided(idx, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t idx, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options) override {
    prepare(sizes, strides, options);
    // TensorIterator metas record the output; plain MetaBase ones (gather, cat, tril, ...) have nothing to record.
    if constexpr (std::is_base_of_v<at::TensorIteratorBase, Meta>) Meta::set_output_raw_strided(idx, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t /*idx*/) override { return proxy_ ? *proxy_ : out_; }

  // Copies a proxy output (used when out= has the wrong strides) back into the user's tensor.
  void finish() {
    if (proxy_) out_.copy_(*proxy_);
  }
  at::Tensor& result() { return out_; }

 private:
  void prepare(at::IntArrayRef sizes, at::IntArrayRef strides, const at::TensorOptions& options) {
    switch (mode_) {
      case OutMode::kFunctional:
        out_ = empty_npu(sizes, strides, options);
        return;
      case OutMode::kInplace:
        TORCH_CHECK(out_.sizes() == sizes, "output with shape ", out_.sizes(), " doesn't match the broadcast shape ",
                    sizes);
        break;
      case OutMode::kOut:
        TORCH_CHECK(options.dtype() == out_.dtype(), "Expected out tensor to have dtype ", options.dtype(),
                    ", but got ", out_.dtype(), " instead");
        TORCH_CHECK(options.device() == out_.device(), "Expected out tensor to have device ", options.device(),
                    ", but got ", out_.device(), " instead");
        if (at::native::resize_output(out_, sizes) && !strides.empty()) {
          out_.as_strided_(sizes, strides);
        }
        break;
    }
    if (!strides.empty() && out_.strides() != strides) {
      proxy_ = empty_npu(sizes, strides, options);
    }
  }

  OutMode mode_;
  at::Tensor out_;
  std::optional<at::Tensor> proxy_;
};

// The three flavours for a meta class whose meta() takes (args...); `kernel` gets the TensorIteratorBase.
template <class Meta, class Kernel, class... Args>
at::Tensor structured_functional(const Kernel& kernel, const Args&... args) {
  NpuStructured<Meta> op(OutMode::kFunctional);
  op.meta(args...);
  kernel(op);
  return std::move(op.result());
}

template <class Meta, class Kernel, class... Rest>
at::Tensor& structured_inplace(const Kernel& kernel, at::Tensor& self, const Rest&... rest) {
  NpuStructured<Meta> op(OutMode::kInplace, self);
  op.meta(self, rest...);
  kernel(op);
  op.finish();
  return self;
}

template <class Meta, class Kernel, class... Args>
at::Tensor& structured_out(const Kernel& kernel, at::Tensor& out, const Args&... args) {
  NpuStructured<Meta> op(OutMode::kOut, out);
  op.meta(args...);
  kernel(op);
  op.finish();
  return out;
}

// An ATen structured kernel with N outputs run whole for npu: libtorch's meta() (checks, shapes) and impl()
// (the algorithm, which calls other ops and the device's dispatch stubs), with the output half torchgen writes
// for CPU: functional outputs are allocated on npu; out= outputs are checked (dtype, device), resized, and
// replaced by a proxy when set_output_strided asks for other strides (copied back by finish()).
template <class Impl, std::size_t N>
struct NpuStructuredMulti final : public Impl {
  NpuStructuredMulti() = default;  // functional
  explicit NpuStructuredMulti(std::array<at::Tensor, N> outs) : out_mode_(true), outs_(std::move(outs)) {}

  void set_output_strided(int64_t idx, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options) override {
    prepare(idx, sizes, strides, options, /*exact_strides=*/true);
  }
  void set_output_raw_strided(int64_t idx, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options) override {
    prepare(idx, sizes, strides, options, /*exact_strides=*/false);
  }
  const at::Tensor& maybe_get_output(int64_t idx) override {
    const auto& proxy = proxies_[static_cast<std::size_t>(idx)];
    return proxy ? *proxy : outs_[static_cast<std::size_t>(idx)];
  }
  void finish() {
    for (std::size_t i = 0; i < N; ++i) {
      if (proxies_[i]) outs_[i].copy_(*proxies_[i]);
    }
  }
  const std::array<at::Tensor, N>& outs() const { return outs_; }

 private:
  void prepare(int64_t idx, at::IntArrayRef sizes, at::IntArrayRef strides, const at::TensorOptions& options,
               bool exact_strides) {
    at::Tensor& out = outs_[static_cast<std::size_t>(idx)];
    if (!out_mode_) {
      out = empty_npu(sizes, strides, options);
      return;
    }
    TORCH_CHECK(options.dtype() == out.dtype(), "Expected out tensor to have dtype ", options.dtype(), ", but got ",
                out.dtype(), " instead");
    TORCH_CHECK(options.device() == out.device(), "Expected out tensor to have device ", options.device(),
                ", but got ", out.device(), " instead");
    if (at::native::resize_output(out, sizes) && !strides.empty()) out.as_strided_(sizes, strides);
    if (exact_strides && !strides.empty() && out.strides() != strides) {
      proxies_[static_cast<std::size_t>(idx)] = empty_npu(sizes, strides, options);
    }
  }

  bool out_mode_ = false;
  std::array<at::Tensor, N> outs_;
  std::array<std::optional<at::Tensor>, N> proxies_;
};

}  // namespace torch_npu_sim
