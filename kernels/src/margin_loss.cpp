// multi_margin_loss / multilabel_margin_loss kernels (see npu_kernels/margin_loss.h): per-row loops written in
// CPU's order and types (dtype for the row, double for the sum over rows). Unreduced forwards and the backwards
// split rows over blocks (each row written by one block); mean / sum forwards run on one block in row order, as
// nll_loss's do, so the double accumulation is CPU's sequence (deterministic, no atomics).
#include "npu_kernels/margin_loss.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {
namespace {

using Status = npu_sim::Status;

template <typename F>
Status with_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: return f(double{});
    default: return Status::kInvalidValue;
  }
}

bool valid_sizes(int64_t nframe, int64_t dim, int64_t reduction) {
  return nframe >= 0 && dim > 0 && reduction >= 0 && reduction <= 2;
}

// Rows per block for a per-row kernel of `dim` elements.
int64_t row_grain(int64_t dim) { return std::max<int64_t>(1, 8192 / dim); }

// The product v rounded to T before it is used: keeps the compiler from fusing a * b + c into one FMA (the
// kernels build with -march=x86-64-v3/v4 and GCC's default -ffp-contract=fast; CPU's ATen computes these
// loops with separate multiplies and adds, and so must we to match it bit for bit).
template <typename T>
inline T rounded(T v) {
  asm("" : "+m"(v));
  return v;
}

// ---- multi_margin_loss ----

[[noreturn]] void mm_bad_target(const char* op) { throw npu_sim::KernelError(std::string(op) + ": target out of range"); }

// One row's loss, CPU's multi_margin_inner_sum_cpu order: the sum and the division by dim in T.
template <typename T>
T mm_row(const T* x, const T* w, int64_t p, T margin, int64_t dim, int64_t y) {
  const T xy = x[y];
  T sum = 0;
  for (int64_t d = 0; d < dim; ++d) {
    if (d == y) continue;
    const T z = margin - xy + x[d];
    if (z > 0) {
      T h = p == 1 ? z : rounded(z * z);
      if (w) h = rounded(h * w[y]);
      sum += h;
    }
  }
  sum /= static_cast<T>(dim);
  return sum;
}

// ---- multilabel_margin_loss ----

constexpr const char* kMlTargetFwd = "multilabel_margin_loss: argument #2 'target' is out of range";
constexpr const char* kMlTargetBwd = "multilabel_margin_loss_backward: argument #3 'target' is out of range";
constexpr const char* kMlIsTarget = "multilabel_margin_loss_backward: argument #5 'is_target' is out of range";

// Every entry of a target row must be in [-1, dim): CPU's whole-tensor min/max check, also past the first -1.
void ml_check_targets(const int64_t* t, int64_t dim, const char* msg) {
  for (int64_t k = 0; k < dim; ++k) {
    if (t[k] < -1 || t[k] >= dim) throw npu_sim::KernelError(msg);
  }
}

// Marks the row's labels in is_target (zeros elsewhere), then CPU's inner sum: double acc of the positive
// margins over labels y (until the first negative) and non-labels d, returned rounded to T.
template <typename T>
T ml_row(const T* x, const int64_t* t, T* is_t, int64_t dim) {
  std::fill(is_t, is_t + dim, T(0));
  for (int64_t k = 0; k < dim && t[k] >= 0; ++k) is_t[t[k]] = T(1);
  double acc = 0;
  for (int64_t k = 0; k < dim && t[k] >= 0; ++k) {
    const T xy = x[t[k]];
    for (int64_t d = 0; d < dim; ++d) {
      if (is_t[d] == T(0)) {
        const T z = T(1) - xy + x[d];
        if (z > 0) acc += z;
      }
    }
  }
  return static_cast<T>(acc);
}

// Labels of a row before its first negative entry (for the launch records' FLOP counts).
int64_t ml_labels(const int64_t* t, int64_t dim) {
  int64_t k = 0;
  while (k < dim && t[k] >= 0) ++k;
  return k;
}

}  // namespace

Status multi_margin_loss(npu_sim::Stream stream, const MultiMarginArgs& a, const void* input, const int64_t* target,
                         const void* weight, void* out) {
  if (!valid_sizes(a.nframe, a.dim, a.reduction) || (a.p != 1 && a.p != 2)) return Status::kInvalidValue;
  if (a.reduction == 0 && a.nframe == 0) return with_dtype(a.dtype, [](auto) { return Status::kSuccess; });
  if (!out || (a.nframe > 0 && (!input || !target))) return Status::kInvalidValue;
  return with_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const MultiMarginArgs args = a;
    constexpr int64_t es = sizeof(T);
    if (a.reduction == 0) {
      return parallel_for(stream, "multi_margin_loss", a.nframe, row_grain(a.dim),
                          [=](int64_t r0, int64_t r1, const npu_sim::BlockContext& ctx) {
        const T* x = static_cast<const T*>(input);
        const T* w = static_cast<const T*>(weight);
        T* o = static_cast<T*>(out);
        const T margin = static_cast<T>(args.margin);
        const int64_t dim = args.dim;
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t y = target[r];
          if (y < 0 || y >= dim) mm_bad_target("multi_margin_loss");
          o[r] = mm_row<T>(x + r * dim, w, args.p, margin, dim, y);
        }
        // Launch records: each row's input, target and weight[y] read, one loss written; ~4 Vector ops per class.
        const int64_t n = r1 - r0;
        detail::record_vec(ctx, n * (dim * es + 8 + (w ? es : 0)), n * es, n * dim * 4);
      });
    }
    return npu_sim::launch_kernel(stream, "multi_margin_loss", 1, [=](const npu_sim::BlockContext& ctx) {
      const T* x = static_cast<const T*>(input);
      const T* w = static_cast<const T*>(weight);
      const T margin = static_cast<T>(args.margin);
      const int64_t dim = args.dim, nframe = args.nframe;
      double sum = 0;  // CPU's at::acc_type<scalar_t, false>
      for (int64_t r = 0; r < nframe; ++r) {
        const int64_t y = target[r];
        if (y < 0 || y >= dim) mm_bad_target("multi_margin_loss");
        sum += mm_row<T>(x + r * dim, w, args.p, margin, dim, y);
      }
      if (args.reduction == 1) sum /= static_cast<double>(nframe);
      *static_cast<T*>(out) = static_cast<T>(sum);
      // Launch records: every row's input, target and weight[y] read, the scalar written.
      detail::record_vec(ctx, nframe * (dim * es + 8 + (w ? es : 0)), es, nframe * (dim * 4 + 1));
    });
  });
}

Status multi_margin_loss_backward(npu_sim::Stream stream, const MultiMarginArgs& a, const void* grad_output,
                                  const void* input, const int64_t* target, const void* weight, void* grad_input) {
  if (!valid_sizes(a.nframe, a.dim, a.reduction) || (a.p != 1 && a.p != 2)) return Status::kInvalidValue;
  if (a.nframe == 0) return with_dtype(a.dtype, [](auto) { return Status::kSuccess; });
  if (!grad_output || !input || !target || !grad_input) return Status::kInvalidValue;
  return with_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const MultiMarginArgs args = a;
    constexpr int64_t es = sizeof(T);
    return parallel_for(stream, "multi_margin_loss_backward", a.nframe, row_grain(a.dim),
                        [=](int64_t r0, int64_t r1, const npu_sim::BlockContext& ctx) {
      const T* x = static_cast<const T*>(input);
      const T* w = static_cast<const T*>(weight);
      const T* go = static_cast<const T*>(grad_output);
      T* gi = static_cast<T*>(grad_input);
      const int64_t dim = args.dim, nframe = args.nframe;
      const T margin = static_cast<T>(args.margin);
      const T g = args.reduction == 1 ? static_cast<T>(1. / static_cast<double>(nframe * dim))
                                      : static_cast<T>(1. / static_cast<double>(dim));
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t y = target[r];
        if (y < 0 || y >= dim) mm_bad_target("multi_margin_loss_backward");
        const T* xr = x + r * dim;
        T* gr = gi + r * dim;
        const T xy = xr[y];
        T gy = 0;
        for (int64_t d = 0; d < dim; ++d) {
          if (d == y) continue;
          const T z = margin - xy + xr[d];
          if (z > 0) {
            T h = args.p == 1 ? g : rounded(T(2) * g * z);
            if (w) h = rounded(h * w[y]);
            gy -= h;
            gr[d] = h;
          } else {
            gr[d] = 0;
          }
        }
        gr[y] = gy;
        // CPU's second pass: the whole gradient scaled by grad_output (per row for none, else its one value).
        const T s = args.reduction == 0 ? go[r] : go[0];
        for (int64_t d = 0; d < dim; ++d) gr[d] *= s;
      }
      // Launch records: each row's input, target, weight[y] and grad_output read, its gradient row written;
      // ~6 Vector ops per class.
      const int64_t n = r1 - r0;
      detail::record_vec(ctx, n * (dim * es + 8 + (w ? es : 0) + es), n * dim * es, n * dim * 6);
    });
  });
}

Status multilabel_margin_loss_forward(npu_sim::Stream stream, const MultilabelMarginArgs& a, const void* input,
                                      const int64_t* target, void* out, void* is_target) {
  if (!valid_sizes(a.nframe, a.dim, a.reduction)) return Status::kInvalidValue;
  if (a.reduction == 0 && a.nframe == 0) return with_dtype(a.dtype, [](auto) { return Status::kSuccess; });
  if (!out || (a.nframe > 0 && (!input || !target || !is_target))) return Status::kInvalidValue;
  return with_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const MultilabelMarginArgs args = a;
    constexpr int64_t es = sizeof(T);
    if (a.reduction == 0) {
      return parallel_for(stream, "multilabel_margin_loss_forward", a.nframe, row_grain(a.dim),
                          [=](int64_t r0, int64_t r1, const npu_sim::BlockContext& ctx) {
        const T* x = static_cast<const T*>(input);
        T* o = static_cast<T*>(out);
        T* it = static_cast<T*>(is_target);
        const int64_t dim = args.dim;
        int64_t flops = 0;
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t* t = target + r * dim;
          ml_check_targets(t, dim, kMlTargetFwd);
          T sum = ml_row<T>(x + r * dim, t, it + r * dim, dim);
          sum /= static_cast<T>(dim);
          o[r] = sum;
          flops += ml_labels(t, dim) * dim * 3 + 1;
        }
        // Launch records: each row's input and targets read, its is_target row and loss written.
        const int64_t n = r1 - r0;
        detail::record_vec(ctx, n * dim * (es + 8), n * (dim + 1) * es, flops);
      });
    }
    return npu_sim::launch_kernel(stream, "multilabel_margin_loss_forward", 1, [=](const npu_sim::BlockContext& ctx) {
      const T* x = static_cast<const T*>(input);
      T* it = static_cast<T*>(is_target);
      const int64_t dim = args.dim, nframe = args.nframe;
      // CPU checks the whole target tensor before it computes anything.
      for (int64_t r = 0; r < nframe; ++r) ml_check_targets(target + r * dim, dim, kMlTargetFwd);
      double sum = 0;
      int64_t flops = 0;
      for (int64_t r = 0; r < nframe; ++r) {
        sum += ml_row<T>(x + r * dim, target + r * dim, it + r * dim, dim);
        flops += ml_labels(target + r * dim, dim) * dim * 3 + 1;
      }
      sum /= static_cast<double>(dim);
      if (args.reduction == 1) sum /= static_cast<double>(nframe);
      *static_cast<T*>(out) = static_cast<T>(sum);
      // Launch records: input and targets read, is_target and the scalar written.
      detail::record_vec(ctx, nframe * dim * (es + 8), (nframe * dim + 1) * es, flops);
    });
  });
}

Status multilabel_margin_loss_backward(npu_sim::Stream stream, const MultilabelMarginArgs& a, const void* grad_output,
                                       const void* input, const int64_t* target, const void* is_target,
                                       void* grad_input) {
  if (!valid_sizes(a.nframe, a.dim, a.reduction)) return Status::kInvalidValue;
  if (a.nframe == 0) return with_dtype(a.dtype, [](auto) { return Status::kSuccess; });
  if (!grad_output || !input || !target || !is_target || !grad_input) return Status::kInvalidValue;
  return with_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const MultilabelMarginArgs args = a;
    constexpr int64_t es = sizeof(T);
    // First launch: the target check over the whole tensor, so that its error is the one the stream keeps when
    // is_target is bad too (CPU checks target first).
    Status st = parallel_for(stream, "multilabel_margin_loss_backward_check", a.nframe, row_grain(a.dim),
                             [=](int64_t r0, int64_t r1, const npu_sim::BlockContext& ctx) {
      for (int64_t r = r0; r < r1; ++r) ml_check_targets(target + r * args.dim, args.dim, kMlTargetBwd);
      detail::record_vec(ctx, (r1 - r0) * args.dim * 8, 0, (r1 - r0) * args.dim * 2);
    });
    if (st != Status::kSuccess) return st;
    return parallel_for(stream, "multilabel_margin_loss_backward", a.nframe, row_grain(a.dim),
                        [=](int64_t r0, int64_t r1, const npu_sim::BlockContext& ctx) {
      const T* x = static_cast<const T*>(input);
      const T* it = static_cast<const T*>(is_target);
      const T* go = static_cast<const T*>(grad_output);
      T* gi = static_cast<T*>(grad_input);
      const int64_t dim = args.dim, nframe = args.nframe;
      const T g = args.reduction == 1 ? static_cast<T>(1. / static_cast<double>(nframe * dim))
                                      : static_cast<T>(1. / static_cast<double>(dim));
      int64_t flops = 0;
      for (int64_t r = r0; r < r1; ++r) {
        const T* itr = it + r * dim;
        for (int64_t d = 0; d < dim; ++d) {
          if (!(itr[d] >= T(0) && itr[d] <= T(1))) throw npu_sim::KernelError(kMlIsTarget);
        }
      }
      for (int64_t r = r0; r < r1; ++r) {
        const T* xr = x + r * dim;
        const T* itr = it + r * dim;
        const int64_t* t = target + r * dim;
        T* gr = gi + r * dim;
        std::fill(gr, gr + dim, T(0));
        const int64_t labels = ml_labels(t, dim);
        for (int64_t k = 0; k < labels; ++k) {
          const int64_t y = t[k];
          const T xy = xr[y];
          for (int64_t d = 0; d < dim; ++d) {
            if (itr[d] == T(0)) {
              const T z = T(1) - xy + xr[d];
              if (z > 0) {
                gr[y] -= g;
                gr[d] += g;
              }
            }
          }
        }
        const T s = args.reduction == 0 ? go[r] : go[0];
        for (int64_t d = 0; d < dim; ++d) gr[d] *= s;
        flops += labels * dim * 4 + dim;
      }
      // Launch records: each row's input, targets, is_target and grad_output read, its gradient row written.
      const int64_t n = r1 - r0;
      detail::record_vec(ctx, n * (dim * (2 * es + 8) + es), n * dim * es, flops);
    });
  });
}

}  // namespace npu_kernels
