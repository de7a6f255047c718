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

// numel points of dim_bins.size() coordinates each (input row-major, numel x dims; 1-D histograms have one),
// coordinate d binned among its own edges (dim_bins[d] + 1 increasing values); the histogram is the product of
// dim_bins, row-major.
struct HistogramArgs {
  DType dtype = DType::kFloat32;  // input, weight, edges and hist: kFloat32, kFloat64, kFloat16 or kBFloat16
  int64_t numel = 0;              // points (and weights)
  std::vector<int64_t> dim_bins;  // per coordinate, >= 1
  BinSearch search = BinSearch::kLinear;
  int64_t total_bins() const;
};

// Rows of total_bins() float64 partial sums the caller provides as scratch to histogram() (a function of numel and
// the bins only, so a result never depends on the machine's core count).
int64_t histogram_partials(const HistogramArgs& a);

// hist[b] = the number (or, with weight, the summed weights) of the points that select bin b: a point counts when
// every coordinate x lies within edges[d][0] <= x <= edges[d][bins]; the last bin of a coordinate holds its right
// edge; NaN and points outside are skipped. Each block counts its slice of the points into its own scratch row
// (float64), a second launch adds the rows in block order and rounds once to dtype, so counts are exact integers up
// to 2^53 before that rounding. kInvalidValue for another dtype, no coordinates, a bin count < 1, a negative numel,
// edges for another number of coordinates or null pointers.
npu_sim::Status histogram(npu_sim::Stream stream, const HistogramArgs& a, const void* input, const void* weight,
                          const std::vector<const void*>& edges, double* scratch, void* hist);

}  // namespace npu_kernels
