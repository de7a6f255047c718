// Histogram kernels (see npu_kernels/histogram.h), 1-D as the one-coordinate case: per-block partial
// histograms in float64 scratch rows, merged in block order by a second launch. Bin selection repeats CPU's
// arithmetic in the input dtype (a 16-bit type rounds after each operation, as c10::Half / c10::BFloat16 do).
#include "npu_kernels/histogram.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>
#include <type_traits>

#include "npu_kernels/float_dispatch.h"
#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {
namespace {

using Status = npu_sim::Status;

constexpr int64_t kGrain = 4096;                 // elements per block at least
constexpr int64_t kMaxPartials = 64;             // blocks of the counting launch at most
constexpr int64_t kScratchBudget = int64_t{1} << 22;  // float64 partial entries at most (32 MiB)

// One arithmetic step in T: float for the 16-bit types (then rounded back by T's constructor), T otherwise.
template <typename T>
using step_t = std::conditional_t<is_reduced_float_v<T>, float, T>;

template <typename T>
T sub(T a, T b) { return T(static_cast<step_t<T>>(a) - static_cast<step_t<T>>(b)); }
template <typename T>
T mul(T a, T b) { return T(static_cast<step_t<T>>(a) * static_cast<step_t<T>>(b)); }
template <typename T>
T div(T a, T b) { return T(static_cast<step_t<T>>(a) / static_cast<step_t<T>>(b)); }
template <typename T>
bool less(T a, T b) { return static_cast<step_t<T>>(a) < static_cast<step_t<T>>(b); }

// Index of the first edge in [lo, hi) greater than x, minus 1 (std::upper_bound's answer).
template <typename T>
int64_t upper_bound_pos(const T* edges, int64_t lo, int64_t hi, T x) {
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (less(x, edges[mid])) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo - 1;
}

// The bin of x (already known to lie in [edges[0], edges[bins]]), CPU's selection for `search`.
template <typename T>
int64_t select_bin(BinSearch search, const T* edges, int64_t bins, T left, T right, T x) {
  int64_t pos;
  if (search == BinSearch::kBinarySearch) {
    pos = upper_bound_pos(edges, 0, bins + 1, x);
  } else {
    // (x - left) * bins / (right - left); the int64 bin count converted to T first, as CPU's mixed arithmetic does
    pos = static_cast<int64_t>(static_cast<step_t<T>>(
        div(mul(sub(x, left), T(static_cast<step_t<T>>(bins))), sub(right, left))));
    if (search == BinSearch::kLinearLocalSearch) {
      const int64_t lo = std::max<int64_t>(0, pos - 1), hi = std::min<int64_t>(pos + 2, bins + 1);
      pos = upper_bound_pos(edges, lo, hi, x);
    }
  }
  if (pos == bins) pos -= 1;  // the last bin holds its right edge
  return std::clamp<int64_t>(pos, 0, bins - 1);  // never out of the histogram (CPU's arithmetic stays inside)
}

int64_t partials(int64_t numel, int64_t bins) {
  const int64_t by_size = std::max<int64_t>(1, (numel + kGrain - 1) / kGrain);
  const int64_t by_scratch = std::max<int64_t>(1, kScratchBudget / std::max<int64_t>(1, bins));
  return std::min({by_size, by_scratch, kMaxPartials});
}

}  // namespace

int64_t HistogramArgs::total_bins() const {
  return std::accumulate(dim_bins.begin(), dim_bins.end(), int64_t{1}, std::multiplies<int64_t>());
}

int64_t histogram_partials(const HistogramArgs& a) { return partials(a.numel, a.total_bins()); }

Status histogram(npu_sim::Stream stream, const HistogramArgs& a, const void* input, const void* weight,
                 const std::vector<const void*>& edges, double* scratch, void* hist) {
  const int64_t dims = static_cast<int64_t>(a.dim_bins.size());
  if (dims < 1 || edges.size() != a.dim_bins.size() || a.numel < 0 || !scratch || !hist || (a.numel > 0 && !input)) {
    return Status::kInvalidValue;
  }
  for (int64_t d = 0; d < dims; ++d) {
    if (a.dim_bins[d] < 1 || !edges[d]) return Status::kInvalidValue;
  }
  const int64_t parts = histogram_partials(a), bins = a.total_bins();
  // Per coordinate: its bin count, its edges and its stride in the row-major histogram (shared by the blocks).
  struct Axes {
    std::vector<int64_t> bins, stride;
    std::vector<const void*> edges;
  };
  auto axes = std::make_shared<Axes>();
  axes->bins = a.dim_bins;
  axes->edges = edges;
  axes->stride.assign(static_cast<size_t>(dims), 1);
  for (int64_t d = dims - 2; d >= 0; --d) axes->stride[d] = axes->stride[d + 1] * a.dim_bins[d + 1];
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t es = static_cast<int64_t>(sizeof(T)), n = a.numel;
    const BinSearch search = a.search;
    Status s = npu_sim::launch_kernel(stream, "histogram_count", static_cast<uint32_t>(parts),
                                      [=](const npu_sim::BlockContext& ctx) {
      const int64_t blk = ctx.block_idx, i0 = n * blk / parts, i1 = n * (blk + 1) / parts;
      const T* x = static_cast<const T*>(input);
      const T* w = static_cast<const T*>(weight);
      double* row = scratch + blk * bins;
      std::fill(row, row + bins, 0.0);
      // The outer edges, read on the device at run time (an earlier launch may have written them).
      std::vector<T> left(static_cast<size_t>(dims)), right(static_cast<size_t>(dims));
      for (int64_t d = 0; d < dims; ++d) {
        left[d] = static_cast<const T*>(axes->edges[d])[0];
        right[d] = static_cast<const T*>(axes->edges[d])[axes->bins[d]];
      }
      for (int64_t i = i0; i < i1; ++i) {
        int64_t at = 0;
        bool inside = true;
        for (int64_t d = 0; d < dims && inside; ++d) {
          const T v = x[i * dims + d];
          // NaN is outside too: both comparisons are false for it
          inside = static_cast<step_t<T>>(v) >= static_cast<step_t<T>>(left[d]) &&
                   static_cast<step_t<T>>(v) <= static_cast<step_t<T>>(right[d]);
          if (inside) {
            const T* e = static_cast<const T*>(axes->edges[d]);
            at += select_bin(search, e, axes->bins[d], left[d], right[d], v) * axes->stride[d];
          }
        }
        if (inside) row[at] += w ? static_cast<double>(static_cast<step_t<T>>(w[i])) : 1.0;
      }
      // Launch records: the block's points (and weights) and the edges it needs read, its scratch row written; per
      // coordinate 2 compares and ~4 ops of bin selection (a search ~log2(bins) compares), per point one add.
      const int64_t cnt = i1 - i0, per = search == BinSearch::kLinear ? 4 : 8;
      int64_t edge_reads = 0;
      for (int64_t d = 0; d < dims; ++d) edge_reads += search == BinSearch::kLinear ? 2 : axes->bins[d] + 1;
      detail::record_vec(ctx, (cnt * (dims + (w ? 1 : 0)) + edge_reads) * es, bins * 8, cnt * (dims * (2 + per) + 1));
    });
    if (s != Status::kSuccess) return s;
    return parallel_for(stream, "histogram_merge", bins, std::max<int64_t>(1, 4096 / parts),
                        [=](int64_t b0, int64_t b1, const npu_sim::BlockContext& ctx) {
      T* h = static_cast<T*>(hist);
      for (int64_t b = b0; b < b1; ++b) {
        double sum = 0;
        for (int64_t p = 0; p < parts; ++p) sum += scratch[p * bins + b];
        h[b] = static_cast<T>(static_cast<step_t<T>>(sum));
      }
      detail::record_vec(ctx, (b1 - b0) * parts * 8, (b1 - b0) * es, (b1 - b0) * parts);
    });
  });
}

}  // namespace npu_kernels
