// Registration of small ops that are compositions of native npu ops, with CPU's checks and messages:
// equal (eq + all), trace (diagonal + sum), isin (sort + searchsorted + gather), repeat_interleave with
// a repeats tensor (cumsum + searchsorted). No math of their own.
#include <ATen/core/Tensor.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/full.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/lt.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/sum.h>
#include <torch/library.h>

#include "aten/npu_tensor.h"

namespace torch_npu_sim {
namespace {

using T = at::Tensor;
using S = c10::Scalar;

bool npu_equal(const T& self, const T& other) {
  TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different devices. Got: ",
              self.device(), " and ", other.device());
  if (self.sizes() != other.sizes()) return false;
  if (self.numel() == 0) return true;
  return at::eq(self, other).all().item<bool>();
}

T npu_trace(const T& self) {
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBool, "\"trace\" not implemented for 'Bool'");
  return self.diagonal().sum();
}

// elements[i] in test_elements <=> the sorted test values hold it at its left insertion point.
void isin_into(const T& elements, const T& test, bool invert, T& out) {
  TORCH_CHECK(is_npu(elements) || is_npu(test), "isin: expected npu tensors");
  TORCH_CHECK(!elements.is_complex() && !test.is_complex(), "Unsupported input type encountered for isin(): ",
              elements.is_complex() ? elements.scalar_type() : test.scalar_type());
  TORCH_CHECK(out.scalar_type() == at::kBool, "isin: expected out of dtype Bool, got ", out.scalar_type());
  at::native::resize_output(out, elements.sizes());
  if (elements.numel() == 0) return;
  if (test.numel() == 0) {
    out.fill_(invert);
    return;
  }
  const auto common = at::result_type(elements, test);
  const T e = elements.to(common);
  const T sorted = std::get<0>(at::sort(test.to(common).reshape({-1}), /*stable=*/false, 0, false));
  const T pos = at::searchsorted(sorted, e.reshape({-1})).clamp_max(sorted.numel() - 1);
  const T found = at::eq(at::index_select(sorted, 0, pos), e.reshape({-1})).reshape(elements.sizes());
  out.copy_(invert ? found.logical_not() : found);
}

T npu_repeat_interleave(const T& repeats, std::optional<int64_t> output_size) {
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  TORCH_CHECK_NOT_IMPLEMENTED(repeats.scalar_type() == at::kLong || repeats.scalar_type() == at::kInt,
                              "\"repeat_interleave\" not implemented for '", c10::toString(repeats.scalar_type()), "'");
  if (repeats.numel() == 0) return at::empty({0}, repeats.options());
  TORCH_CHECK(!at::lt(repeats, 0).any().item<bool>(), "repeats can not be negative");
  const T ends = at::cumsum(repeats, 0, at::kLong);
  const int64_t total = output_size.has_value() ? *output_size : ends[-1].item<int64_t>();
  // output position j belongs to the first i with ends[i] > j
  const T positions = at::arange(total, repeats.options().dtype(at::kLong));
  return at::searchsorted(ends, positions, /*out_int32=*/false, /*right=*/true).to(repeats.scalar_type());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("equal", npu_equal);
  m.impl("trace", npu_trace);
  m.impl("isin.Tensor_Tensor_out", [](const T& e, const T& t, bool assume_unique, bool invert, T& out) -> T& {
    (void)assume_unique;  // a hint only: the sorted search is exact either way
    isin_into(e, t, invert, out);
    return out;
  });
  m.impl("isin.Tensor_Tensor", [](const T& e, const T& t, bool, bool invert) {
    T out = at::empty({0}, e.options().dtype(at::kBool));
    isin_into(e, t, invert, out);
    return out;
  });
  m.impl("isin.Tensor_Scalar_out", [](const T& e, const S& t, bool, bool invert, T& out) -> T& {
    at::native::resize_output(out, e.sizes());
    out.copy_(invert ? at::ne(e, t) : at::eq(e, t));
    return out;
  });
  m.impl("isin.Tensor_Scalar", [](const T& e, const S& t, bool, bool invert) { return invert ? at::ne(e, t) : at::eq(e, t); });
  m.impl("isin.Scalar_Tensor_out", [](const S& e, const T& t, bool, bool invert, T& out) -> T& {
    isin_into(at::native::wrapped_scalar_tensor(e, t.device()), t, invert, out);
    return out;
  });
  m.impl("isin.Scalar_Tensor", [](const S& e, const T& t, bool, bool invert) {
    T out = at::empty({0}, t.options().dtype(at::kBool));
    isin_into(at::native::wrapped_scalar_tensor(e, t.device()), t, invert, out);
    return out;
  });
  m.impl("repeat_interleave.Tensor", npu_repeat_interleave);
}

}  // namespace torch_npu_sim
