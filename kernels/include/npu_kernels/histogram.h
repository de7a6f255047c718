// Histograms of floating inputs (torch-free): CPU's bin selection for torch.histc, torch.histogram and
// torch.histogramdd (ATen/native/cpu/HistogramKernel.cpp), accumulated deterministically (no float atomics).
#pragma once

#include <cstdint>
#include <vector>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// How an element finds its bin among edges[0..bins] (increasing), CPU's BIN_SELECTION_ALGORITHM:
// kLinear: (x - edges[0]) * bins / (edges[bins] - edges[0]) truncated, in dtype arithmetic (torch.histc);
// kLinearLocalSearch: that, then corrected against the neighbouring edges (torch.histogram with a bin count);
// kBinarySearch: the last edge <= x (torch.histogram with bin edges).
enum class BinSearch { kLinear, kLinearLocalSearch, kBinarySearch };

struct HistogramArgs {
  DType dtype = DType::kFloat32;  // input, weight, edges and hist: kFloat32, kFloat64, kFloat16 or kBFloat16
  int64_t numel = 0;              // input (and weight) elements, contiguous
  int64_t bins = 0;               // hist length; edges holds bins + 1 values
  BinSearch search = BinSearch::kLinear;
};

// histogramdd: numel points of dim_bins.size() coordinates each (input row-major, numel x dims), coordinate d binned
// among its own edges (dim_bins[d] + 1 increasing values); the histogram is the product of dim_bins, row-major.
struct HistogramDDArgs {
  DType dtype = DType::kFloat32;
  int64_t numel = 0;              // points (and weights)
  std::vector<int64_t> dim_bins;  // per coordinate, >= 1
  BinSearch search = BinSearch::kLinear;
  int64_t total_bins() const;
};

// Rows of bins float64 partial sums the caller provides as scratch to histogram() (a function of numel and bins
// only, so a result never depends on the machine's core count).
int64_t histogram_partials(const HistogramArgs& a);

// hist[b] = the number (or, with weight, the summed weights) of the elements x with edges[0] <= x <= edges[bins]
// that select bin b; the last bin holds its right edge; NaN and elements outside are skipped. Each block counts its
// slice of the input into its own scratch row (float64), a second launch adds the rows in block order and rounds
// once to dtype, so counts are exact integers up to 2^53 before that rounding. kInvalidValue for another dtype,
// bins < 1, a negative numel or null pointers.
npu_sim::Status histogram(npu_sim::Stream stream, const HistogramArgs& a, const void* input, const void* weight,
                          const void* edges, double* scratch, void* hist);

// The same for points: a point counts (into the bin its coordinates select) when every coordinate lies within its
// outer edges. edges[d] holds coordinate d's edges; scratch has histogramdd_partials(a) rows of a.total_bins().
// kInvalidValue as above, or for no coordinates or a null edges entry.
int64_t histogramdd_partials(const HistogramDDArgs& a);
npu_sim::Status histogramdd(npu_sim::Stream stream, const HistogramDDArgs& a, const void* input, const void* weight,
                            const std::vector<const void*>& edges, double* scratch, void* hist);

}  // namespace npu_kernels
