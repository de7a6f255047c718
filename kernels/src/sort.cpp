// Line-wise ordering kernels: stable sort and topk, unique, bincount, searchsorted (see npu_kernels/index.h).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "npu_kernels/elementwise.h"
#include "npu_kernels/index.h"
#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {

namespace {

// Comparisons a comparison sort of n keys is counted with: n * ceil(log2 n), at least n.
int64_t sort_ops(int64_t n) {
  int64_t lg = 0;
  while ((int64_t(1) << lg) < n) ++lg;
  return n * std::max<int64_t>(1, lg);
}

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
    if (k < len) {
      // topk: a partial sort, ties broken by position (the order a stable sort gives)
      auto before = [&](int64_t x, int64_t y) {
        const bool lt = descending ? less_nan_last(key[y], key[x]) : less_nan_last(key[x], key[y]);
        const bool gt = descending ? less_nan_last(key[x], key[y]) : less_nan_last(key[y], key[x]);
        return lt || (!gt && x < y);
      };
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    } else if (descending) {
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
  // Launch records, per line: its len keys read (into a block-local buffer), then the k kept values read
  // again from the input by position, and k values plus k int64 indices written; Vector ops: len *
  // ceil(log2 len) comparisons (sort_ops).
  const int64_t es = static_cast<int64_t>(dtype_size(in.dtype));
  const int64_t line_rd = (in.sizes[dim] + k) * es, line_wr = k * (es + 8), line_ops = sort_ops(in.sizes[dim]);
  return parallel_for(stream, op, lines, std::max<int64_t>(1, 4096 / len),
                      [in, dim, descending, values, indices, k, line_rd, line_wr, line_ops](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        detail::record_vec(ctx, (e - b) * line_rd, (e - b) * line_wr, (e - b) * line_ops);
                        bool ok = dispatch_dtype(in.dtype, [&](auto tag) {
                          using T = decltype(tag);
                          if constexpr (is_complex_v<T>) {
                            throw npu_sim::KernelError("sort: complex tensors are not ordered");
                          } else {
                            sort_range<T>(in, dim, descending, values, indices, k, b, e);
                          }
                        });
                        (void)ok;
                      });
}

}  // namespace npu_kernels

namespace npu_kernels {

npu_sim::Status unique_sorted(npu_sim::Stream stream, const TensorDesc& in, void* values, int64_t* inverse,
                              int64_t* counts, int64_t* num_unique) {
  // One block: sort (index order), then one sweep assigns slots; the caller syncs for the count anyway.
  // Launch records: every element read once (keys sorted in a block-local buffer); the unique values, their
  // int64 counts (when asked), one int64 inverse index per element (when asked) and the int64 number of
  // uniques written; Vector ops: the sort's comparisons plus one per element for the sweep.
  return npu_sim::launch_kernel(stream, "unique", 1, [in, values, inverse, counts, num_unique](const npu_sim::BlockContext& ctx) {
    dispatch_dtype(in.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (is_complex_v<T>) {
        throw npu_sim::KernelError("unique: complex tensors are not supported");
      } else {
        using C = compute_t<T>;
        const int64_t n = in.numel();
        const T* src = static_cast<const T*>(in.data);
        std::vector<C> key(n);
        StridedWalker w(in, 0);
        for (int64_t i = 0; i < n; ++i, w.next()) key[i] = static_cast<C>(src[w.offset()]);
        std::vector<int64_t> order(n);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return less_nan_last(key[a], key[b]); });
        T* vals = static_cast<T*>(values);
        int64_t k = -1;
        for (int64_t j = 0; j < n; ++j) {
          const int64_t i = order[j];
          // NaNs compare unequal, so each one is its own value (as on CPU)
          if (k < 0 || !(key[order[j - 1]] == key[i])) {
            ++k;
            vals[k] = static_cast<T>(key[i]);
            if (counts) counts[k] = 0;
          }
          if (counts) ++counts[k];
          if (inverse) inverse[i] = k;
        }
        *num_unique = k + 1;
        const int64_t es = sizeof(T), u = k + 1;
        detail::record_vec(ctx, n * es, u * es + (counts ? u * 8 : 0) + (inverse ? n * 8 : 0) + 8, sort_ops(n) + n);
      }
    });
  });
}

npu_sim::Status bincount_max(npu_sim::Stream stream, const TensorDesc& in, int64_t* max_out) {
  // Launch records: every element read, the int64 maximum written; 1 Vector op per element.
  return npu_sim::launch_kernel(stream, "bincount", 1, [in, max_out](const npu_sim::BlockContext& ctx) {
    detail::record_vec(ctx, in.numel() * static_cast<int64_t>(dtype_size(in.dtype)), 8, in.numel());
    int64_t m = -1;
    dispatch_dtype(in.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_integral_v<T>) {
        const T* p = static_cast<const T*>(in.data);
        StridedWalker w(in, 0);
        for (int64_t i = 0; i < in.numel(); ++i, w.next()) {
          const int64_t v = static_cast<int64_t>(p[w.offset()]);
          if (v < 0) throw npu_sim::KernelError("bincount(): input must contain only non-negative values, got " + std::to_string(v));
          m = std::max(m, v);
        }
      } else {
        throw npu_sim::KernelError("bincount(): only integral inputs are supported");
      }
    });
    *max_out = m;
  });
}

npu_sim::Status bincount(npu_sim::Stream stream, const TensorDesc& in, const TensorDesc& weights, const TensorDesc& out) {
  // Launch records: per element the input (and its weight) read, and its bin read, added to and written
  // back; 1 Vector op per element.
  return npu_sim::launch_kernel(stream, "bincount", 1, [in, weights, out](const npu_sim::BlockContext& ctx) {
    {
      const int64_t n = in.numel(), os = static_cast<int64_t>(dtype_size(out.dtype));
      const int64_t per = static_cast<int64_t>(dtype_size(in.dtype)) +
                          (weights.ndim == 0 ? 0 : static_cast<int64_t>(dtype_size(weights.dtype))) + os;
      detail::record_vec(ctx, n * per, n * os, n);
    }
    dispatch_dtype(out.dtype, [&](auto otag) {
      using O = decltype(otag);
      if constexpr (!is_complex_v<O>) {
        O* o = static_cast<O*>(out.data);
        dispatch_dtype(in.dtype, [&](auto itag) {
          using I = decltype(itag);
          if constexpr (std::is_integral_v<I>) {
            const I* p = static_cast<const I*>(in.data);
            StridedWalker w(in, 0);
            if (weights.ndim == 0) {
              for (int64_t i = 0; i < in.numel(); ++i, w.next()) { O& slot = o[static_cast<int64_t>(p[w.offset()])]; slot = convert<O>(convert<double>(slot) + 1.0); }
              return;
            }
            dispatch_dtype(weights.dtype, [&](auto wtag) {
              using W = decltype(wtag);
              if constexpr (!is_complex_v<W>) {
                const W* wt = static_cast<const W*>(weights.data);
                StridedWalker ww(weights, 0);
                for (int64_t i = 0; i < in.numel(); ++i, w.next(), ww.next()) {
                  O& slot = o[static_cast<int64_t>(p[w.offset()])];
                  slot = convert<O>(convert<double>(slot) + convert<double>(wt[ww.offset()]));
                }
              }
            });
          }
        });
      }
    });
  });
}

npu_sim::Status searchsorted(npu_sim::Stream stream, const TensorDesc& boundaries, const TensorDesc& values,
                             const TensorDesc& out, bool right) {
  const int64_t m = values.ndim == 0 ? 1 : values.sizes[values.ndim - 1];
  return parallel_for(stream, "searchsorted", values.numel(), 4096,
                      [boundaries, values, out, right, m](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
    const int64_t len = boundaries.ndim == 0 ? 1 : boundaries.sizes[boundaries.ndim - 1];
    const bool shared = boundaries.numel() == len;
    {
      // Launch records: per value, the value and ceil(log2(len + 1)) boundaries read (a binary search's
      // probes, the shared row re-read per value), its index written; 1 Vector op per probe.
      int64_t probes = 0;
      while ((int64_t(1) << probes) < len + 1) ++probes;
      const int64_t es = static_cast<int64_t>(dtype_size(values.dtype));
      detail::record_vec(ctx, (e - b) * (1 + probes) * es, (e - b) * (out.dtype == DType::kInt32 ? 4 : 8),
                         (e - b) * std::max<int64_t>(1, probes));
    }
    dispatch_dtype(values.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (is_complex_v<T>) {
        throw npu_sim::KernelError("searchsorted: complex tensors are not supported");
      } else {
        using C = compute_t<T>;
        const T* bd = static_cast<const T*>(boundaries.data);
        const T* v = static_cast<const T*>(values.data);
        for (int64_t i = b; i < e; ++i) {
          const T* row = bd + (shared ? 0 : (i / m) * len);
          const C x = static_cast<C>(v[i]);
          int64_t lo = 0, hi = len;
          while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            const C y = static_cast<C>(row[mid]);
            const bool go_right = right ? !less_nan_last(x, y) : less_nan_last(y, x);
            if (go_right) lo = mid + 1; else hi = mid;
          }
          if (out.dtype == DType::kInt32) {
            static_cast<int32_t*>(out.data)[i] = static_cast<int32_t>(lo);
          } else {
            static_cast<int64_t*>(out.data)[i] = lo;
          }
        }
      }
    });
  });
}

}  // namespace npu_kernels
