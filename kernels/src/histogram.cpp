// Histogram kernels (see npu_kernels/histogram.h): per-block partial histograms in float64 scratch rows, merged in
// block order by a second launch. Bin selection repeats CPU's arithmetic in the input dtype (a 16-bit type rounds
// after each operation, as c10::Half / c10::BFloat16 do).
#include "npu_kernels/histogram.h"

#include <algorithm>
#include <cmath>
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

}  // namespace

int64_t histogram_partials(const HistogramArgs& a) {
  const int64_t by_size = std::max<int64_t>(1, (a.numel + kGrain - 1) / kGrain);
  const int64_t by_scratch = std::max<int64_t>(1, kScratchBudget / std::max<int64_t>(1, a.bins));
  return std::min({by_size, by_scratch, kMaxPartials});
}

Status histogram(npu_sim::Stream stream, const HistogramArgs& a, const void* input, const void* weight,
                 const void* edges, double* scratch, void* hist) {
  if (a.bins < 1 || a.numel < 0 || !edges || !scratch || !hist || (a.numel > 0 && !input)) {
    return Status::kInvalidValue;
  }
  const int64_t parts = histogram_partials(a);
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t es = static_cast<int64_t>(sizeof(T)), n = a.numel, bins = a.bins;
    Status s = npu_sim::launch_kernel(stream, "histogram_count", static_cast<uint32_t>(parts),
                                      [=](const npu_sim::BlockContext& ctx) {
      const int64_t blk = ctx.block_idx, i0 = n * blk / parts, i1 = n * (blk + 1) / parts;
      const T* x = static_cast<const T*>(input);
      const T* w = static_cast<const T*>(weight);
      const T* e = static_cast<const T*>(edges);
      double* row = scratch + blk * bins;
      std::fill(row, row + bins, 0.0);
      const T left = e[0], right = e[bins];
      for (int64_t i = i0; i < i1; ++i) {
        const T v = x[i];
        // skips NaN too: both comparisons are false for it
        if (!(static_cast<step_t<T>>(v) >= static_cast<step_t<T>>(left) &&
              static_cast<step_t<T>>(v) <= static_cast<step_t<T>>(right))) {
          continue;
        }
        row[select_bin(a.search, e, bins, left, right, v)] += w ? static_cast<double>(static_cast<step_t<T>>(w[i])) : 1.0;
      }
      // Launch records: the block's input (and weight) slice and the edges it needs read, its scratch row written;
      // per element 2 compares and ~4 ops of bin selection (a search ~log2(bins) compares), one add.
      const int64_t cnt = i1 - i0, search = a.search == BinSearch::kLinear ? 4 : 8;
      const int64_t edge_reads = a.search == BinSearch::kLinear ? 2 : bins + 1;
      detail::record_vec(ctx, (cnt * (w ? 2 : 1) + edge_reads) * es, bins * 8, cnt * (3 + search));
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
