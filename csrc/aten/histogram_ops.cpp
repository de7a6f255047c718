// Registration of histc, histogram (bin count and bin edges, out= forms) and histogramdd: CPU's argument checks,
// messages and outer-edge rules (ATen/native/Histogram.cpp) on floating inputs, the bin edges from the native
// linspace, then kernels/src/histogram.cpp; histc on integers keeps CUDA's integer bins (a composition of native
// ops; CPU refuses).
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/bincount.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linspace.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>

#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "npu_kernels/histogram.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using at::Tensor;
using OptTensor = std::optional<Tensor>;

// histc on integer inputs, which CUDA accepts and CPU refuses: CUDA's arithmetic exactly (bounds converted to
// int64, bin = floor((v - min) * bins / (max - min)) in int64, v == max in the last bin, values outside [min, max]
// ignored, the counts in the input's dtype).
Tensor histc_integer(const Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max) {
  TORCH_CHECK(bins > 0, "bins must be > 0");
  int64_t lo = min.to<int64_t>(), hi = max.to<int64_t>();
  if (lo == hi && self.numel() > 0) {  // the data's range: a sync, as on CUDA
    lo = self.min().item<int64_t>();
    hi = self.max().item<int64_t>();
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  TORCH_CHECK(lo < hi, "max must be larger than min");
  if (self.numel() == 0) return at::zeros({bins}, self.options());
  const Tensor v = self.reshape({-1}).to(at::kLong);
  const Tensor bin = v.sub(lo).mul(bins).div(c10::Scalar(hi - lo), "floor").clamp_max(bins - 1);
  const Tensor kept = bin.masked_select(v.ge(lo).logical_and_(v.le(hi)));
  return at::bincount(kept, std::nullopt, bins).to(self.scalar_type());
}

bool is_float(const Tensor& t) { return at::isFloatingType(t.scalar_type()); }

// histc's two kernels: floating (CPU's) and integer (CUDA's); bool and complex are refused (CPU refuses them too,
// from inside linspace / aminmax).
bool histc_is_float(const Tensor& self) {
  const at::ScalarType st = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(st) || at::isIntegralType(st, /*includeBool=*/false),
                              "\"histc\" not implemented for '", c10::toString(st), "'");
  return at::isFloatingType(st);
}

// CPU's kernel dispatch (AT_DISPATCH_FLOATING_TYPES_AND2(kBFloat16, kHalf), named "histogram_cpu").
void check_kernel_dtype(const Tensor& self) {
  TORCH_CHECK_NOT_IMPLEMENTED(is_float(self), "\"histogram_cpu\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
}

// CPU's histogramdd_prepare_out for one dimension: dtypes of the outputs, the bin count, then both resized.
void prepare_out(const Tensor& self, int64_t bin_ct, const Tensor& hist, const Tensor& bin_edges) {
  TORCH_CHECK(self.dtype() == hist.dtype(), "torch.histogram: input tensor and hist tensor should have the same dtype,",
              " but got input ", self.dtype(), " and hist ", hist.dtype());
  TORCH_CHECK(self.dtype() == bin_edges.dtype(), "torch.histogram: input tensor and bin_edges tensor should have the ",
              "same dtype, but got input ", self.dtype(), " and bin_edges ", bin_edges.dtype(), " for dimension ", 0);
  TORCH_CHECK(bin_ct > 0, "torch.histogram(): bins must be > 0, but got ", bin_ct, " for dimension ", 0);
  at::native::resize_output(bin_edges, {bin_ct + 1});
  at::native::resize_output(hist, {bin_ct});
}

// CPU's histogramdd_check_inputs: per coordinate of self (..., N), its edges' dtype, rank and size; the weight's dtype
// and shape (self's without the last dimension).
void check_inputs_dd(const Tensor& self, at::TensorList bins, const OptTensor& weight) {
  TORCH_CHECK(self.dim() >= 2, "torch.histogramdd: input tensor should have at least 2 dimensions, but got ",
              self.dim());
  const int64_t n = self.size(-1);
  TORCH_CHECK(static_cast<int64_t>(bins.size()) == n, "torch.histogramdd: expected ", n,
              " sequences of bin edges for a ", n, "-dimensional histogram but got ", bins.size());
  for (int64_t d = 0; d < n; ++d) {
    TORCH_CHECK(self.dtype() == bins[d].dtype(), "torch.histogramdd: input tensor and bins tensors should have the ",
                "same dtype, but got input with dtype ", self.dtype(), " and bins for dimension ", d, " with dtype ",
                bins[d].dtype());
    TORCH_CHECK(bins[d].dim() == 1, "torch.histogramdd: bins tensor should have one dimension, but got ",
                bins[d].dim(), " dimensions in the bins tensor for dimension ", d);
    TORCH_CHECK(bins[d].numel() > 0, "torch.histogramdd: bins tensor should have at least 1 element, but got ",
                bins[d].numel(), " elements in the bins tensor for dimension ", d);
  }
  if (weight.has_value()) {
    TORCH_CHECK(self.dtype() == weight->dtype(), "torch.histogramdd: if weight tensor is provided, input tensor and ",
                "weight tensor should have the same dtype, but got input(", self.dtype(), "), and weight(",
                weight->dtype(), ")");
    const int64_t one = 1;
    const at::IntArrayRef got = weight->dim() == 0 ? at::IntArrayRef(one) : weight->sizes();  // a scalar: [1]
    TORCH_CHECK(self.sizes().slice(0, self.dim() - 1) == got, "torch.histogramdd: if weight tensor is provided it ",
                "should have the same shape as the input tensor excluding its innermost dimension, but got input with ",
                "shape ", self.sizes(), " and weight with shape ", weight->sizes());
  }
}

// The 1-D forms check self as (numel, 1) points and a weight of any shape with self's element count (CPU reshapes
// both).
void check_inputs_1d(const Tensor& self, const Tensor& bins, const OptTensor& weight) {
  check_inputs_dd(self.reshape({-1, 1}), bins, weight.has_value() ? OptTensor(weight->reshape({-1})) : std::nullopt);
}

// The kernel into hist (resized to the bin counts, self's dtype) from points (M, N) and each coordinate's edges
// (bins + 1 values on the device); density as CPU: divided by the total, then by each bin's width along each
// coordinate (hist.sum() stays on the device: no sync).
void run_histogram(const Tensor& points, const OptTensor& weight, bool density, const std::vector<Tensor>& edges,
                   const Tensor& hist, npu_kernels::BinSearch search) {
  check_kernel_dtype(points);
  const Tensor x = points.contiguous();
  const Tensor w = weight.has_value() ? weight->contiguous() : Tensor();
  npu_kernels::HistogramArgs a;
  a.dtype = kernel_dtype(points.scalar_type(), "histogram");
  a.numel = x.size(0);
  a.search = search;
  std::vector<Tensor> e;
  std::vector<const void*> e_ptr;
  for (const Tensor& t : edges) {
    e.push_back(t.contiguous());
    e_ptr.push_back(e.back().const_data_ptr());
    a.dim_bins.push_back(t.numel() - 1);
  }
  const Tensor scratch = at::empty({npu_kernels::histogram_partials(a), a.total_bins()},
                                   points.options().dtype(at::kDouble));
  into_contiguous(hist, [&](const Tensor& dst) {
    NPU_CHECK(npu_kernels::histogram(stream_of(points), a, x.const_data_ptr(),
                                       w.defined() ? w.const_data_ptr() : nullptr, e_ptr, scratch.data_ptr<double>(),
                                       dst.data_ptr()));
  });
  if (density) {
    hist.div_(hist.sum());
    for (size_t d = 0; d < edges.size(); ++d) {
      std::vector<int64_t> shape(static_cast<size_t>(hist.dim()), 1);
      shape[d] = edges[d].numel() - 1;
      hist.div_(edges[d].diff().reshape(shape));
    }
  }
}

// The 1-D forms: self as (numel, 1) points, a weight of any shape with self's element count (CPU reshapes it).
void run_histogram_1d(const Tensor& self, const OptTensor& weight, bool density, const Tensor& edges,
                      const Tensor& hist, npu_kernels::BinSearch search) {
  const OptTensor w = weight.has_value() ? OptTensor(weight->reshape({-1})) : std::nullopt;
  run_histogram(self.reshape({-1, 1}), w, density, std::vector<Tensor>{edges}, hist, search);
}

// CPU's bins_edges_correction of an empty histc range: one step of the dtype or 1, whichever is wider (16-bit: 1).
void widen_empty_range(at::ScalarType t, double& lo, double& hi) {
  if (t == at::kDouble) {
    lo = std::min(std::nexttoward(lo, std::numeric_limits<double>::lowest()), lo - 1.);
    hi = std::max(std::nexttoward(hi, std::numeric_limits<double>::max()), hi + 1.);
  } else if (t == at::kFloat) {
    lo = std::min(static_cast<double>(std::nexttoward(static_cast<float>(lo), std::numeric_limits<float>::lowest())),
                  lo - 1.);
    hi = std::max(static_cast<double>(std::nexttoward(static_cast<float>(hi), std::numeric_limits<float>::max())),
                  hi + 1.);
  } else {
    lo -= 1;
    hi += 1;
  }
}

// CPU's histogram_histc_out on a floating self.
Tensor& histc_float_out(const Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max,
                        Tensor& hist) {
  Tensor edges = at::empty({0}, self.options());
  prepare_out(self, bins, hist, edges);
  double lo = min.to<double>(), hi = max.to<double>();
  if (lo == hi && self.numel() > 0) {  // the data's range: a sync, as on CPU
    const auto [mn, mx] = at::aminmax(self);
    lo = mn.item<double>();
    hi = mx.item<double>();
  }
  if (lo == hi) widen_empty_range(self.scalar_type(), lo, hi);
  TORCH_CHECK(!(std::isinf(lo) || std::isinf(hi) || std::isnan(lo) || std::isnan(hi)), "torch.histc: range of [", lo,
              ", ", hi, "] is not finite");
  TORCH_CHECK(lo < hi, "torch.histc: max must be larger than min");
  at::linspace_out(edges, lo, hi, bins + 1);
  run_histogram_1d(self, std::nullopt, false, edges, hist, npu_kernels::BinSearch::kLinear);
  return hist;
}

// CPU's select_outer_bin_edges for points (M, N): per coordinate, range's pair, else the data's min and max
// (float32 / float64 only, as CPU's dispatch; one sync), else [0, 1]; finite, ordered, an empty range widened by
// 0.5 each side.
std::vector<std::pair<double, double>> outer_edges(const Tensor& points, std::optional<at::ArrayRef<double>> range) {
  const int64_t n = points.size(-1);
  std::vector<std::pair<double, double>> out(static_cast<size_t>(n), {0., 1.});
  if (range.has_value()) {
    TORCH_CHECK(static_cast<int64_t>(range->size()) == 2 * n, "torch.histogramdd: for a ", n, "-dimensional histogram",
                " range should have ", 2 * n, " elements, but got ", range->size());
    for (int64_t d = 0; d < n; ++d) out[d] = {(*range)[2 * d], (*range)[2 * d + 1]};
  } else if (points.numel() > 0) {
    const at::ScalarType st = points.scalar_type();
    TORCH_CHECK_NOT_IMPLEMENTED(st == at::kFloat || st == at::kDouble, "\"histogramdd\" not implemented for '",
                                c10::toString(st), "'");
    const auto [mn, mx] = at::aminmax(points, 0);
    const Tensor both = at::stack({mn, mx}).to(at::kDouble).cpu();
    const double* v = both.const_data_ptr<double>();
    for (int64_t d = 0; d < n; ++d) out[d] = {v[d], v[n + d]};
  }
  for (int64_t d = 0; d < n; ++d) {
    auto& [lo, hi] = out[d];
    TORCH_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histogramdd: dimension ", d, "'s range [", lo, ", ", hi,
                "] is not finite");
    TORCH_CHECK(lo <= hi, "torch.histogramdd: min should not exceed max, but got min ", lo, " max ", hi,
                " for dimension ", d);
    if (lo == hi) {
      lo -= 0.5;
      hi += 0.5;
    }
  }
  return out;
}

// CPU's histogramdd_bin_edges: self as (M, N) points, N linspaced edge tensors.
std::vector<Tensor> bin_edges_dd(const Tensor& self, at::IntArrayRef bin_ct,
                                 std::optional<at::ArrayRef<double>> range) {
  TORCH_CHECK(self.dim() >= 2, "torch.histogramdd: input tensor should have at least 2 dimensions");
  const int64_t n = self.size(-1);
  const auto outer = outer_edges(self.reshape({-1, n}), range);
  TORCH_CHECK(static_cast<int64_t>(bin_ct.size()) == n,
              "histogramdd: The size of bins must be equal to the innermost dimension of the input.");
  std::vector<Tensor> edges;
  for (int64_t d = 0; d < n; ++d) {
    edges.push_back(at::empty({0}, self.options(), at::MemoryFormat::Contiguous));
    at::linspace_out(edges.back(), outer[d].first, outer[d].second, bin_ct[d] + 1);
  }
  return edges;
}

// CPU's histogramdd_out: the checks, hist of the bin counts' shape, then the kernel.
Tensor histogramdd_from_edges(const Tensor& self, at::TensorList bins, const OptTensor& weight, bool density,
                              npu_kernels::BinSearch search, const char* op) {
  check_devices(op, {{"self", &self}, {"weight", weight ? &*weight : nullptr}});
  for (const Tensor& b : bins) check_device_arg(op, "bins", b, self.device());
  c10::DeviceGuard guard(self.device());
  check_inputs_dd(self, bins, weight);
  const int64_t n = self.size(-1);
  std::vector<int64_t> bin_ct;
  for (int64_t d = 0; d < n; ++d) {
    bin_ct.push_back(bins[d].numel() - 1);
    TORCH_CHECK(bin_ct.back() > 0, "torch.histogram(): bins must be > 0, but got ", bin_ct.back(), " for dimension ",
                d);
  }
  Tensor hist = at::empty(bin_ct, self.options(), at::MemoryFormat::Contiguous);
  const OptTensor w = weight.has_value() ? OptTensor(weight->reshape({-1})) : std::nullopt;
  run_histogram(self.reshape({-1, n}), w, density, bins.vec(), hist, search);
  return hist;
}

}  // namespace

Tensor NF::histc(const Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max) {
  c10::DeviceGuard guard(self.device());
  if (!histc_is_float(self)) return histc_integer(self, bins, min, max);
  Tensor hist = at::empty({0}, self.options());
  return histc_float_out(self, bins, min, max, hist);
}

Tensor& NF::histc_out(const Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max, Tensor& out) {
  check_devices("histc.out", {{"self", &self}, {"out", &out}});
  c10::DeviceGuard guard(self.device());
  if (histc_is_float(self)) return histc_float_out(self, bins, min, max, out);
  const Tensor r = histc_integer(self, bins, min, max);
  TORCH_CHECK(out.scalar_type() == r.scalar_type(), "torch.histogram: input tensor and hist tensor should have the "
              "same dtype, but got input ", self.scalar_type(), " and hist ", out.scalar_type());
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

std::tuple<Tensor&, Tensor&> NF::histogram_out(const Tensor& self, const Tensor& bins, const OptTensor& weight,
                                               bool density, Tensor& hist, Tensor& bin_edges) {
  check_devices("histogram.bins_tensor_out", {{"self", &self}, {"bins", &bins}, {"hist", &hist},
                                              {"bin_edges", &bin_edges}, {"weight", weight ? &*weight : nullptr}});
  c10::DeviceGuard guard(self.device());
  check_inputs_1d(self, bins, weight);
  prepare_out(self, bins.numel() - 1, hist, bin_edges);
  bin_edges.copy_(bins);
  run_histogram_1d(self, weight, density, bin_edges, hist, npu_kernels::BinSearch::kBinarySearch);
  return {hist, bin_edges};
}

std::tuple<Tensor, Tensor> NF::histogram(const Tensor& self, const Tensor& bins, const OptTensor& weight,
                                         bool density) {
  Tensor hist = at::empty({0}, self.options());
  Tensor bin_edges = at::empty({0}, bins.options());
  NF::histogram_out(self, bins, weight, density, hist, bin_edges);
  return {hist, bin_edges};
}

std::tuple<Tensor&, Tensor&> NF::histogram_out(const Tensor& self, int64_t bins,
                                               std::optional<at::ArrayRef<double>> range, const OptTensor& weight,
                                               bool density, Tensor& hist, Tensor& bin_edges) {
  check_devices("histogram.bin_ct_out", {{"self", &self}, {"hist", &hist}, {"bin_edges", &bin_edges},
                                         {"weight", weight ? &*weight : nullptr}});
  c10::DeviceGuard guard(self.device());
  prepare_out(self, bins, hist, bin_edges);
  const auto [lo, hi] = outer_edges(self.reshape({-1, 1}), range)[0];
  at::linspace_out(bin_edges, lo, hi, bins + 1);
  check_inputs_1d(self, bin_edges, weight);
  run_histogram_1d(self, weight, density, bin_edges, hist, npu_kernels::BinSearch::kLinearLocalSearch);
  return {hist, bin_edges};
}

std::tuple<Tensor, Tensor> NF::histogram(const Tensor& self, int64_t bins, std::optional<at::ArrayRef<double>> range,
                                         const OptTensor& weight, bool density) {
  Tensor hist = at::empty({0}, self.options());
  Tensor bin_edges = at::empty({0}, self.options());
  NF::histogram_out(self, bins, range, weight, density, hist, bin_edges);
  return {hist, bin_edges};
}

std::vector<Tensor> NF::_histogramdd_bin_edges(const Tensor& self, at::IntArrayRef bins,
                                               std::optional<at::ArrayRef<double>> range, const OptTensor& weight,
                                               bool density) {
  c10::DeviceGuard guard(self.device());
  return bin_edges_dd(self, bins, range);
}

Tensor NF::_histogramdd_from_bin_cts(const Tensor& self, at::IntArrayRef bins,
                                     std::optional<at::ArrayRef<double>> range, const OptTensor& weight, bool density) {
  c10::DeviceGuard guard(self.device());
  const std::vector<Tensor> edges = bin_edges_dd(self, bins, range);
  return histogramdd_from_edges(self, edges, weight, density, npu_kernels::BinSearch::kLinearLocalSearch,
                                "_histogramdd_from_bin_cts");
}

Tensor NF::_histogramdd_from_bin_tensors(const Tensor& self, at::TensorList bins, const OptTensor& weight,
                                        bool density) {
  return histogramdd_from_edges(self, bins, weight, density, npu_kernels::BinSearch::kBinarySearch,
                                "_histogramdd_from_bin_tensors");
}

}  // namespace torch_npu_sim
