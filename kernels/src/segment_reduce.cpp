// Segment reduction kernels (see npu_kernels/segment_reduce.h): the forward split over outputs, the backward over
// segments (each owning the gradient rows from its start to the next segment's, so every element is written by one
// block), both in dtype with CPU's order of operations; the index tensor validated by every block before any work.
#include "npu_kernels/segment_reduce.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "npu_kernels/float_dispatch.h"
#include "npu_kernels/launch.h"
#include "scalar_t_math.h"
#include "traffic.h"

namespace npu_kernels {
namespace {

using Status = npu_sim::Status;

using namespace detail::scalar_t_math;  // scalar_t arithmetic, as CPU's kernels
template <typename T>
bool isnan_(T v) {
  return std::isnan(wide(v));
}

// The start value of every segment: initial, or the reduction's identity.
template <typename T>
T start_value(const SegmentReduceArgs& a) {
  if (a.has_initial) return from_double<T>(a.initial);
  switch (a.reduce) {
    case SegmentReduction::kMax: return from_double<T>(-std::numeric_limits<double>::infinity());
    case SegmentReduction::kMin: return from_double<T>(std::numeric_limits<double>::infinity());
    case SegmentReduction::kProd: return from_int<T>(1);
    default: return from_int<T>(0);
  }
}

[[noreturn]] void fail_outside(int64_t s, int64_t r, int64_t b, int64_t e, int64_t n) {
  throw npu_sim::KernelError("segment_reduce(): segment " + std::to_string(s) + " of row " + std::to_string(r) +
                             " spans [" + std::to_string(b) + ", " + std::to_string(e) +
                             "), outside data.size(axis) = " + std::to_string(n));
}

[[noreturn]] void fail_negative() {
  throw npu_sim::KernelError("Expected segment_length >= 0 to be true, but got false.");
}

// The checks of the header, over the whole index tensor; `strict`: CPU's !unsafe checks of the lengths.
template <typename I>
void check_segments(const SegmentReduceArgs& a, const I* idx, bool strict) {
  const int64_t S = a.segments, n = a.axis_size;
  if (!a.offsets && strict) {
    for (int64_t k = 0; k < a.outer * S; ++k) {
      if (idx[k] < 0) throw npu_sim::KernelError("lengths contains negative value!");
    }
    for (int64_t r = 0; r < a.outer; ++r) {
      int64_t sum = 0;
      for (int64_t s = 0; s < S; ++s) sum += static_cast<int64_t>(idx[r * S + s]);
      if (sum != n) {
        throw npu_sim::KernelError(
            "segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) when "
            "!unsafe.");
      }
    }
    return;
  }
  for (int64_t r = 0; r < a.outer; ++r) {
    int64_t begin = a.offsets ? static_cast<int64_t>(idx[r * (S + 1)]) : 0;
    for (int64_t s = 0; s < S; ++s) {
      const int64_t end = a.offsets ? static_cast<int64_t>(idx[r * (S + 1) + s + 1])
                                    : begin + static_cast<int64_t>(idx[r * S + s]);
      if (end < begin) fail_negative();
      if (begin < 0 || end > n) fail_outside(s, r, begin, end, n);
      begin = end;
    }
  }
}

// Walks the segments of the rows in increasing (row, segment) order: begin/end of segment s of row r, each step
// amortised O(1) within a row.
template <typename I>
struct SegmentCursor {
  const SegmentReduceArgs* a;
  const I* idx;
  int64_t r = -1, s = 0, begin = 0, end = 0;

  void seek(int64_t row, int64_t seg) {
    const int64_t S = a->segments;
    if (a->offsets) {
      r = row;
      s = seg;
      begin = static_cast<int64_t>(idx[row * (S + 1) + seg]);
      end = static_cast<int64_t>(idx[row * (S + 1) + seg + 1]);
      return;
    }
    if (row != r || seg < s) {
      r = row;
      s = 0;
      begin = 0;
      end = static_cast<int64_t>(idx[row * S]);
    }
    while (s < seg) {
      ++s;
      begin = end;
      end = begin + static_cast<int64_t>(idx[row * S + s]);
    }
  }
};

template <typename F>
Status with_index(DType t, F&& f) {
  switch (t) {
    case DType::kInt32: return f(int32_t{});
    case DType::kInt64: return f(int64_t{});
    default: return Status::kInvalidValue;
  }
}

bool valid(const SegmentReduceArgs& a) {
  return a.outer >= 0 && a.axis_size >= 0 && a.inner >= 0 && a.segments >= 0 &&
         (a.dtype == DType::kFloat32 || a.dtype == DType::kFloat64 || a.dtype == DType::kFloat16 ||
          a.dtype == DType::kBFloat16) &&
         (a.index_dtype == DType::kInt32 || a.index_dtype == DType::kInt64);
}

int64_t index_count(const SegmentReduceArgs& a) { return a.outer * (a.offsets ? a.segments + 1 : a.segments); }

}  // namespace

Status segment_reduce_forward(npu_sim::Stream stream, const SegmentReduceArgs& a, const void* data,
                              const void* lengths_or_offsets, void* output) {
  if (!valid(a)) return Status::kInvalidValue;
  const int64_t outputs = a.outer * a.segments * a.inner;
  if (outputs == 0) return Status::kSuccess;
  if (!output || !lengths_or_offsets || (a.axis_size > 0 && !data)) return Status::kInvalidValue;
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    return with_index(a.index_dtype, [&](auto itag) {
      using I = decltype(itag);
      const int64_t per_output = std::max<int64_t>(1, a.axis_size / std::max<int64_t>(1, a.segments));
      return parallel_for(stream, "segment_reduce", outputs, std::max<int64_t>(1, 4096 / per_output),
                          [=](int64_t o0, int64_t o1, const npu_sim::BlockContext& ctx) {
        const I* idx = static_cast<const I*>(lengths_or_offsets);
        check_segments(a, idx, !a.offsets && !a.unsafe);
        const T* x = static_cast<const T*>(data);
        T* out = static_cast<T*>(output);
        const int64_t S = a.segments, inner = a.inner;
        const T init = start_value<T>(a);
        SegmentCursor<I> cur{&a, idx};
        int64_t read = 0;
        for (int64_t o = o0; o < o1; ++o) {
          const int64_t r = o / (S * inner), s = (o / inner) % S, j = o % inner;
          cur.seek(r, s);
          const int64_t len = cur.end - cur.begin;
          const T* col = x + (r * a.axis_size + cur.begin) * inner + j;
          T v = init;
          switch (a.reduce) {
            case SegmentReduction::kSum:
            case SegmentReduction::kMean:
              for (int64_t e = 0; e < len; ++e) v = add(v, col[e * inner]);
              break;
            case SegmentReduction::kMax:
              for (int64_t e = 0; e < len; ++e) {
                const T d = col[e * inner];
                v = isnan_(d) ? d : (wide(v) < wide(d) ? d : v);  // std::max keeps v unless v < d
              }
              break;
            case SegmentReduction::kMin:
              for (int64_t e = 0; e < len; ++e) {
                const T d = col[e * inner];
                v = isnan_(d) ? d : (wide(d) < wide(v) ? d : v);  // std::min keeps v unless d < v
              }
              break;
            case SegmentReduction::kProd:
              for (int64_t e = 0; e < len; ++e) v = mul(v, col[e * inner]);
              break;
          }
          if (a.reduce == SegmentReduction::kMean) {
            if (len == 0 && !a.has_initial) {
              v = from_double<T>(std::numeric_limits<double>::quiet_NaN());
            } else if (len > 0 && !isnan_(v)) {
              v = div(v, from_int<T>(len));
            }
          }
          out[o] = v;
          read += len;
        }
        const int64_t es = static_cast<int64_t>(sizeof(T));
        detail::record_vec(ctx, read * es + index_count(a) * static_cast<int64_t>(sizeof(I)), (o1 - o0) * es,
                           read + (o1 - o0));
      });
    });
  });
}

Status segment_reduce_backward(npu_sim::Stream stream, const SegmentReduceArgs& a, const void* grad,
                               const void* output, const void* data, const void* lengths_or_offsets,
                               void* grad_input) {
  if (!valid(a)) return Status::kInvalidValue;
  if (a.outer * a.axis_size * a.inner == 0) return Status::kSuccess;
  if (!grad_input || !data) return Status::kInvalidValue;
  if (a.segments > 0 && (!grad || !output)) return Status::kInvalidValue;
  if (index_count(a) > 0 && !lengths_or_offsets) return Status::kInvalidValue;
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    return with_index(a.index_dtype, [&](auto itag) {
      using I = decltype(itag);
      // One item per segment (one per row when there are none), owning the gradient rows from its start (0 for
      // the first) to the next segment's start (axis_size for the last).
      const int64_t S = a.segments, items = a.outer * std::max<int64_t>(1, S);
      const int64_t per_item = std::max<int64_t>(1, a.axis_size / std::max<int64_t>(1, S)) * a.inner;
      return parallel_for(stream, "segment_reduce_backward", items, std::max<int64_t>(1, 4096 / per_item),
                          [=](int64_t k0, int64_t k1, const npu_sim::BlockContext& ctx) {
        const I* idx = static_cast<const I*>(lengths_or_offsets);
        if (S > 0) check_segments(a, idx, false);
        const T* x = static_cast<const T*>(data);
        const T* g = static_cast<const T*>(grad);
        const T* out = static_cast<const T*>(output);
        T* gi = static_cast<T*>(grad_input);
        const int64_t inner = a.inner, n = a.axis_size;
        const T zero = from_int<T>(0), init_prod = a.has_initial ? from_double<T>(a.initial) : from_int<T>(1);
        SegmentCursor<I> cur{&a, idx};
        int64_t touched = 0, seg_elems = 0, flops = 0;
        for (int64_t k = k0; k < k1; ++k) {
          T* base = gi;
          if (S == 0) {
            base += k * n * inner;
            std::fill(base, base + n * inner, zero);
            touched += n * inner;
            continue;
          }
          const int64_t r = k / S, s = k % S;
          cur.seek(r, s);
          const int64_t begin = cur.begin, end = cur.end, len = end - begin;
          const int64_t own_begin = s == 0 ? 0 : begin, own_end = s == S - 1 ? n : end;
          base += r * n * inner;
          std::fill(base + own_begin * inner, base + begin * inner, zero);
          std::fill(base + end * inner, base + own_end * inner, zero);
          touched += (own_end - own_begin) * inner;
          if (len == 0) continue;
          const T* xs = x + (r * n + begin) * inner;
          T* dst = base + begin * inner;
          for (int64_t j = 0; j < inner; ++j) {
            const int64_t oi = (r * S + s) * inner + j;
            const T gv = g[oi];
            switch (a.reduce) {
              case SegmentReduction::kSum:
                for (int64_t e = 0; e < len; ++e) dst[e * inner + j] = gv;
                break;
              case SegmentReduction::kMean: {
                const T q = div(gv, from_int<T>(len));
                for (int64_t e = 0; e < len; ++e) dst[e * inner + j] = q;
                break;
              }
              case SegmentReduction::kMax:
              case SegmentReduction::kMin: {
                const acc_t<T> ov = wide(out[oi]);
                int64_t count = 0;
                for (int64_t e = 0; e < len; ++e) {
                  const acc_t<T> v = wide(xs[e * inner + j]);
                  const bool hit = std::isnan(v) || v == ov;
                  dst[e * inner + j] = hit ? gv : zero;
                  count += hit;
                }
                if (count >= 2) {
                  const T c = from_int<T>(count);
                  for (int64_t e = 0; e < len; ++e) {
                    T& d = dst[e * inner + j];
                    if (wide(d) > 0) d = div(d, c);
                  }
                }
                break;
              }
              case SegmentReduction::kProd: {
                const T gp = mul(gv, out[oi]);
                for (int64_t e = 0; e < len; ++e) {
                  const T v = xs[e * inner + j];
                  if (isnan_(v) || wide(v) == 0) {
                    T excl = init_prod;
                    for (int64_t q = 0; q < len; ++q) {
                      if (q != e) excl = mul(excl, xs[q * inner + j]);
                    }
                    dst[e * inner + j] = mul(gv, excl);
                    flops += len;
                  } else {
                    dst[e * inner + j] = div(gp, v);
                  }
                }
                break;
              }
            }
          }
          flops += 2 * len * inner;
          seg_elems += len * inner;
        }
        // Launch records: each owned gradient element written once; the segments' data, their grad and output
        // values and the index tensor read once.
        const int64_t es = static_cast<int64_t>(sizeof(T));
        const int64_t reads =
            (seg_elems + 2 * (k1 - k0) * inner) * es + index_count(a) * static_cast<int64_t>(sizeof(I));
        detail::record_vec(ctx, reads, touched * es, flops);
      });
    });
  });
}

}  // namespace npu_kernels
