// Registration of unique_consecutive (flattened or along a dim), unique_dim_consecutive and unique_dim as a
// composition of native ops: a "differs from the previous element/slice" mask, then nonzero, cumsum and
// index_select; unique_dim first sorts the slices lexicographically (stable sorts, last column first). NaNs never
// equal each other, so consecutive NaNs stay separate, as on CPU.
#include <ATen/core/Tensor.h>
#include <ATen/ops/any.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/nonzero.h>
#include <torch/library.h>

#include "aten/npu_tensor.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using T = at::Tensor;

// `lines` is (n, m): row i is the i-th element (m == 1) or slice. Returns (first-of-run positions,
// inverse, counts) as int64 vectors.
std::tuple<T, T, T> runs(const T& lines) {
  const int64_t n = lines.size(0);
  const auto long_opts = lines.options().dtype(at::kLong);
  const T changed = at::ne(lines.narrow(0, 1, n - 1), lines.narrow(0, 0, n - 1)).any(1);
  const T starts_mask = at::cat({at::full({1}, true, lines.options().dtype(at::kBool)), changed});
  const T starts = at::nonzero(starts_mask).reshape({-1});
  const T inverse = at::cumsum(starts_mask, 0, at::kLong).sub(1);
  const T ends = at::cat({starts.narrow(0, 1, starts.numel() - 1), at::full({1}, n, long_opts)});
  return {starts, inverse, ends.sub(starts)};
}

// CPU's rules for an empty input along `d`: one zero-sized dimension, and it is d.
void check_empty_dims(const T& self, int64_t d) {
  int64_t zero_dims = 0;
  for (const int64_t s : self.sizes()) zero_dims += s == 0;
  TORCH_CHECK(zero_dims == 1, "Number of zero sized dimensions is more than one, so unique cannot be applied ");
  TORCH_CHECK(self.size(d) == 0, "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
}

}  // namespace

std::tuple<T, T, T> NF::unique_consecutive(const T& self, bool return_inverse, bool return_counts,
                                           std::optional<int64_t> dim) {
  TORCH_CHECK(is_npu(self), "unique_consecutive: expected an npu tensor, got one on ", self.device());
  const auto long_opts = self.options().dtype(at::kLong);
  T empty_long = at::empty({0}, long_opts);
  if (!dim.has_value() || (self.dim() == 0 && (*dim == 0 || *dim == -1))) {
    const T flat = self.reshape({-1});
    if (flat.numel() == 0) {
      return {flat.clone(), return_inverse ? at::empty(self.sizes(), long_opts) : empty_long,
              return_counts ? at::empty({0}, long_opts) : empty_long};
    }
    auto [starts, inverse, counts] = runs(flat.reshape({-1, 1}));
    return {at::index_select(flat, 0, starts), return_inverse ? inverse.reshape(self.sizes()) : empty_long,
            return_counts ? counts : empty_long};
  }
  const int64_t d = c10::maybe_wrap_dim(*dim, self.dim());
  if (self.numel() == 0) {
    check_empty_dims(self, d);
    return {self.clone(), return_inverse ? at::empty({0}, long_opts) : empty_long,
            return_counts ? at::empty({0}, long_opts) : empty_long};
  }
  const T lines = self.movedim(d, 0).reshape({self.size(d), -1});
  auto [starts, inverse, counts] = runs(lines.size(1) == 0 ? lines.new_zeros({self.size(d), 1}) : lines);
  return {at::index_select(self, d, starts), return_inverse ? inverse : empty_long,
          return_counts ? counts : empty_long};
}

::std::tuple<at::Tensor, at::Tensor, at::Tensor> NF::unique_dim_consecutive(const T& self, int64_t dim,
                                                                            bool return_inverse, bool return_counts) {
  return NF::unique_consecutive(self, return_inverse, return_counts, dim);
}

// The slices along dim in ascending lexicographic order (CPU's order: it sorts them with a lexicographic compare),
// then the runs of equal slices as unique_consecutive finds them; inverse mapped back to the input's order.
std::tuple<T, T, T> NF::unique_dim(const T& self, int64_t dim, bool /*sorted: always*/, bool return_inverse,
                                   bool return_counts) {
  TORCH_CHECK(is_npu(self), "unique_dim: expected an npu tensor, got one on ", self.device());
  const int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  const auto long_opts = self.options().dtype(at::kLong);
  if (self.numel() == 0) {
    check_empty_dims(self, d);
    return {self.clone(), at::empty({0}, long_opts), at::empty({0}, long_opts)};
  }
  const int64_t n = self.size(d);
  const T lines = self.movedim(d, 0).reshape({n, -1});
  T perm = at::arange(n, long_opts);
  for (int64_t c = lines.size(1) - 1; c >= 0; --c) {  // least significant column first: each sort stable
    const T keys = at::index_select(lines.select(1, c), 0, perm);
    perm = at::index_select(perm, 0, std::get<1>(keys.sort(/*stable=*/true, 0, false)));
  }
  auto [starts, inverse_sorted, counts] = runs(at::index_select(lines, 0, perm));
  const T inverse = return_inverse ? at::empty({n}, long_opts).index_copy_(0, perm, inverse_sorted)
                                   : at::empty({0}, long_opts);
  return {at::index_select(self, d, at::index_select(perm, 0, starts)), inverse,
          return_counts ? counts : at::empty({0}, long_opts)};
}

}  // namespace torch_npu_sim
