// Line-wise kernels along one dimension: stable sort and topk (see npu_kernels/index.h).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "npu_kernels/elementwise.h"
#include "npu_kernels/index.h"
#include "npu_kernels/launch.h"

namespace npu_kernels {

namespace {

// PyTorch's order: NaN is greater than every number (ascending puts NaNs last, descending first).
template <typename C>
bool less_nan_last(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

template <typename T>
void sort_range(const TensorDesc& in, int dim, bool descending, const TensorDesc& values, const TensorDesc& indices,
                int64_t k, int64_t b, int64_t e) {
  using C = compute_t<T>;
  const int64_t len = in.sizes[dim];
  TensorDesc oin = in, ov = values, oi = indices;
  oin.sizes[dim] = ov.sizes[dim] = oi.sizes[dim] = 1;
  const T* src = static_cast<const T*>(in.data);
  T* vals = static_cast<T*>(values.data);
  int64_t* idxs = static_cast<int64_t*>(indices.data);
  std::vector<int64_t> order(len);
  std::vector<C> key(len);
  StridedWalker wi(oin, b), wv(ov, b), wx(oi, b);
  for (int64_t o = b; o < e; ++o, wi.next(), wv.next(), wx.next()) {
    for (int64_t j = 0; j < len; ++j) key[j] = static_cast<C>(src[wi.offset() + j * in.strides[dim]]);
    std::iota(order.begin(), order.end(), 0);
    if (descending) {
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return less_nan_last(key[y], key[x]); });
    } else {
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return less_nan_last(key[x], key[y]); });
    }
    for (int64_t j = 0; j < k; ++j) {
      vals[wv.offset() + j * values.strides[dim]] = src[wi.offset() + order[j] * in.strides[dim]];
      idxs[wx.offset() + j * indices.strides[dim]] = order[j];
    }
  }
}

}  // namespace

npu_sim::Status sort_lines(npu_sim::Stream stream, const TensorDesc& in, int dim, bool descending,
                           const TensorDesc& values, const TensorDesc& indices, int64_t k, const char* op) {
  TensorDesc outer = in;
  outer.sizes[dim] = 1;
  const int64_t lines = outer.numel();
  if (lines == 0 || k == 0) return npu_sim::Status::kSuccess;
  const int64_t len = std::max<int64_t>(1, in.sizes[dim]);
  return parallel_for(stream, op, lines, std::max<int64_t>(1, 4096 / len),
                      [in, dim, descending, values, indices, k](int64_t b, int64_t e, const npu_sim::BlockContext&) {
                        bool ok = dispatch_dtype(in.dtype, [&](auto tag) {
                          using T = decltype(tag);
                          if constexpr (std::is_same_v<T, std::complex<float>> ||
                                        std::is_same_v<T, std::complex<double>>) {
                            throw npu_sim::KernelError("sort: complex tensors are not ordered");
                          } else {
                            sort_range<T>(in, dim, descending, values, indices, k, b, e);
                          }
                        });
                        (void)ok;
                      });
}

}  // namespace npu_kernels
