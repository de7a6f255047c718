// Separable resampling kernels (see npu_kernels/resample.h): per-axis tap tables built on the host at
// launch, then row-parallel gathers (forward) and plane-parallel scatters into a float buffer (backward).
#include "npu_kernels/resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "npu_kernels/float_dispatch.h"
#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {

namespace {

// Output position o of one axis reads input i0 with weight l0 and i1 with weight l1 (l1 = 0 for gathers).
template <typename A>
struct Taps {
  std::vector<int64_t> i0, i1;
  std::vector<A> l0, l1;
};

// PyTorch's conventions (ATen/native/UpSample.h): nearest scales are float whatever the dtype; linear
// ones are in the accumulation type; a scale factor given by the user replaces in/out.
float nearest_scale(const ResampleAxis& ax) {
  return ax.scale > 0 ? static_cast<float>(1.0 / ax.scale) : static_cast<float>(ax.in) / static_cast<float>(ax.out);
}

template <typename A>
Taps<A> make_taps(ResampleMode mode, const ResampleAxis& ax) {
  Taps<A> t;
  t.i0.resize(ax.out);
  t.i1.resize(ax.out);
  t.l0.assign(ax.out, A(1));
  t.l1.assign(ax.out, A(0));
  const int64_t last = ax.in - 1;
  for (int64_t o = 0; o < ax.out; ++o) {
    int64_t i = o;
    switch (mode) {
      case ResampleMode::kNearest:
        if (ax.out == ax.in) i = o;
        else if (ax.out == 2 * ax.in) i = o >> 1;
        else i = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * nearest_scale(ax))), last);
        break;
      case ResampleMode::kNearestExact:
        i = std::min(static_cast<int64_t>(std::floor(static_cast<float>((o + 0.5) * nearest_scale(ax)))), last);
        break;
      case ResampleMode::kReflect:
        i = o - ax.pad_before;
        if (i < 0) i = -i;
        if (i > last) i = 2 * last - i;
        break;
      case ResampleMode::kReplicate: i = std::clamp<int64_t>(o - ax.pad_before, 0, last); break;
      case ResampleMode::kLinear: {
        if (ax.out == ax.in) break;
        A ratio;
        if (ax.align_corners) ratio = ax.out > 1 ? static_cast<A>(last) / static_cast<A>(ax.out - 1) : A(0);
        else ratio = ax.scale > 0 ? static_cast<A>(1.0 / ax.scale) : static_cast<A>(ax.in) / static_cast<A>(ax.out);
        A real = ax.align_corners ? ratio * static_cast<A>(o) : ratio * (static_cast<A>(o) + A(0.5)) - A(0.5);
        if (real < A(0)) real = A(0);
        i = std::min(static_cast<int64_t>(std::floor(real)), last);
        const A l1 = std::min(std::max(real - static_cast<A>(i), A(0)), A(1));
        t.i1[o] = i + (i < last ? 1 : 0);
        t.l0[o] = A(1) - l1;
        t.l1[o] = l1;
        t.i0[o] = i;
        continue;
      }
    }
    t.i0[o] = i;
    t.i1[o] = i;
  }
  return t;
}

template <typename A>
struct Plan {
  Taps<A> h, w;
};

template <typename A>
std::shared_ptr<const Plan<A>> make_plan(const ResampleArgs& a) {
  auto p = std::make_shared<Plan<A>>();
  p->h = make_taps<A>(a.mode, a.h);
  p->w = make_taps<A>(a.mode, a.w);
  return p;
}

// Gather modes move raw elements, so one instantiation per element size serves every dtype.
template <typename E>
npu_sim::Status gather(npu_sim::Stream s, const ResampleArgs& a, const void* in, void* out) {
  auto plan = make_plan<float>(a);
  const E* x = static_cast<const E*>(in);
  E* y = static_cast<E*>(out);
  const int64_t rows = a.planes * a.h.out;
  return parallel_for(s, resample_name(a.mode, false), rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(a.w.out, 1)),
                      [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        // Launch records, per output row: its int64 row tap, then per element the int64
                        // column tap (the table is re-read each row) and the element; the row written.
                        // 1 Vector op (the move) per element.
                        const int64_t n = (e - b) * a.w.out;
                        detail::record_vec(ctx, (e - b) * 8 + n * (8 + static_cast<int64_t>(sizeof(E))),
                                           n * static_cast<int64_t>(sizeof(E)), n);
                        const int64_t* iw = plan->w.i0.data();
                        for (int64_t r = b; r < e; ++r) {
                          const int64_t p = r / a.h.out, oh = r % a.h.out;
                          const E* src = x + (p * a.h.in + plan->h.i0[oh]) * a.w.in;
                          E* dst = y + r * a.w.out;
                          for (int64_t ow = 0; ow < a.w.out; ++ow) dst[ow] = src[iw[ow]];
                        }
                      });
}

template <typename T>
npu_sim::Status linear(npu_sim::Stream s, const ResampleArgs& a, const void* in, void* out) {
  using A = acc_t<T>;
  auto plan = make_plan<A>(a);
  const T* x = static_cast<const T*>(in);
  T* y = static_cast<T*>(out);
  const int64_t rows = a.planes * a.h.out;
  return parallel_for(s, resample_name(a.mode, false), rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(a.w.out, 1)),
                      [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        // Launch records, per output row: its two int64 row taps and two weights, then per
                        // element the two column taps and weights (re-read each row) and four input elements;
                        // the row written. 9 Vector ops per element (6 multiplies, 3 adds).
                        {
                          constexpr int64_t ts = sizeof(T), tap = 2 * (8 + static_cast<int64_t>(sizeof(A)));
                          const int64_t n = (e - b) * a.w.out;
                          detail::record_vec(ctx, (e - b) * tap + n * (tap + 4 * ts), n * ts, 9 * n);
                        }
                        const Taps<A>& tw = plan->w;
                        for (int64_t r = b; r < e; ++r) {
                          const int64_t p = r / a.h.out, oh = r % a.h.out;
                          const T* r0 = x + (p * a.h.in + plan->h.i0[oh]) * a.w.in;
                          const T* r1 = x + (p * a.h.in + plan->h.i1[oh]) * a.w.in;
                          const A lh0 = plan->h.l0[oh], lh1 = plan->h.l1[oh];
                          T* dst = y + r * a.w.out;
                          for (int64_t ow = 0; ow < a.w.out; ++ow) {
                            const int64_t c0 = tw.i0[ow], c1 = tw.i1[ow];
                            const A v0 = tw.l0[ow] * static_cast<A>(r0[c0]) + tw.l1[ow] * static_cast<A>(r0[c1]);
                            const A v1 = tw.l0[ow] * static_cast<A>(r1[c0]) + tw.l1[ow] * static_cast<A>(r1[c1]);
                            dst[ow] = static_cast<T>(lh0 * v0 + lh1 * v1);
                          }
                        }
                      });
}

}  // namespace

const char* resample_name(ResampleMode mode, bool backward) {
  static const char* const fwd[] = {"upsample_nearest", "upsample_nearest_exact", "upsample_linear", "reflection_pad",
                                    "replication_pad"};
  static const char* const bwd[] = {"upsample_nearest_backward", "upsample_nearest_exact_backward",
                                    "upsample_linear_backward", "reflection_pad_backward", "replication_pad_backward"};
  return (backward ? bwd : fwd)[static_cast<int>(mode)];
}

npu_sim::Status resample2d(npu_sim::Stream s, const ResampleArgs& a, const void* in, void* out) {
  if (a.mode == ResampleMode::kLinear) {
    return dispatch_fp(a.dtype, [&](auto tag) { return linear<decltype(tag)>(s, a, in, out); });
  }
  switch (dtype_size(a.dtype)) {
    case 1: return gather<uint8_t>(s, a, in, out);
    case 2: return gather<uint16_t>(s, a, in, out);
    case 4: return gather<uint32_t>(s, a, in, out);
    case 8: return gather<uint64_t>(s, a, in, out);
    default: return npu_sim::Status::kInvalidValue;
  }
}

npu_sim::Status resample2d_backward(npu_sim::Stream s, const ResampleArgs& a, const void* grad_out, void* grad_in) {
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    auto plan = make_plan<A>(a);
    const T* g = static_cast<const T*>(grad_out);
    T* gi = static_cast<T*>(grad_in);
    const bool two_taps = a.mode == ResampleMode::kLinear;
    return parallel_for(s, resample_name(a.mode, true), a.planes, 1,
                        [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                          // Launch records, per plane: grad_out read once, the taps read per output row
                          // (gathers: one int64 index; linear: two indices and two weights) and per element
                          // (likewise, re-read each row); the accumulation plane is block-local (UB), written
                          // to grad_in once. Vector ops per grad element: gathers 1 (add), linear 10.
                          {
                            constexpr int64_t ts = sizeof(T);
                            const int64_t tap = two_taps ? 2 * (8 + static_cast<int64_t>(sizeof(A))) : 8;
                            const int64_t n_out = a.h.out * a.w.out;
                            detail::record_vec(ctx, (e - b) * (n_out * ts + a.h.out * tap + n_out * tap),
                                               (e - b) * a.h.in * a.w.in * ts, (e - b) * n_out * (two_taps ? 10 : 1));
                          }
                          const Taps<A>&th = plan->h, &tw = plan->w;
                          const int64_t n_in = a.h.in * a.w.in;
                          std::vector<A> acc(static_cast<size_t>(n_in));  // one plane, in the UB's role
                          for (int64_t p = b; p < e; ++p) {
                            std::fill(acc.begin(), acc.end(), A(0));
                            const T* gp = g + p * a.h.out * a.w.out;
                            for (int64_t oh = 0; oh < a.h.out; ++oh) {
                              A* r0 = acc.data() + th.i0[oh] * a.w.in;
                              if (!two_taps) {  // gathers: one source each (no 0 * inf = NaN from unused taps)
                                for (int64_t ow = 0; ow < a.w.out; ++ow) r0[tw.i0[ow]] += static_cast<A>(gp[oh * a.w.out + ow]);
                                continue;
                              }
                              A* r1 = acc.data() + th.i1[oh] * a.w.in;
                              for (int64_t ow = 0; ow < a.w.out; ++ow) {
                                const A v = static_cast<A>(gp[oh * a.w.out + ow]);
                                const A v0 = th.l0[oh] * v, v1 = th.l1[oh] * v;
                                r0[tw.i0[ow]] += tw.l0[ow] * v0;
                                r0[tw.i1[ow]] += tw.l1[ow] * v0;
                                r1[tw.i0[ow]] += tw.l0[ow] * v1;
                                r1[tw.i1[ow]] += tw.l1[ow] * v1;
                              }
                            }
                            T* dst = gi + p * n_in;
                            for (int64_t i = 0; i < n_in; ++i) dst[i] = static_cast<T>(acc[i]);
                          }
                        });
  });
}

}  // namespace npu_kernels
