// Batch norm forward (train / eval, running-stat update) and backward, one channel per work item.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>
#include <type_traits>

#include "dtype_convert.h"  // branch-free fp16 <-> fp32 in registers
#include "npu_kernels/launch.h"
#include "npu_kernels/float_dispatch.h"
#include "npu_kernels/nn.h"
#include "traffic.h"

namespace npu_kernels {

namespace {

using detail::load_acc;

// Calls f(plane_pointer_offset, length) for the N planes of channel c.
template <typename F>
inline void for_planes(const BatchNormDesc& d, int64_t c, F&& f) {
  for (int64_t n = 0; n < d.N; ++n) f((n * d.C + c) * d.HW);
}

}  // namespace

npu_sim::Status batch_norm(npu_sim::Stream stream, const BatchNormDesc& d) {
  if (d.C == 0) return npu_sim::Status::kSuccess;
  return dispatch_fp(d.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    // Launch records, per channel of cnt = N*HW elements: training reads x three times (sum, squared
    // deviations, normalise), eval once; weight/bias one value each when given; running stats are read
    // (eval) or read and written (training); save_mean/save_invstd written (training); y written once.
    // Vector ops per element: training 6 (add; subtract, multiply, add; multiply, add), eval 2.
    return parallel_for(stream, "batch_norm", d.C, 1, [d](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
      const T* x = static_cast<const T*>(d.x);
      T* y = static_cast<T*>(d.y);
      const A* w = static_cast<const A*>(d.weight);
      const A* bias = static_cast<const A*>(d.bias);
      A* rm = static_cast<A*>(d.running_mean);
      A* rv = static_cast<A*>(d.running_var);
      const int64_t cnt = d.N * d.HW;
      {
        constexpr int64_t ts = sizeof(T), as = sizeof(A);
        const int64_t ch = e - b, params = (w ? 1 : 0) + (bias ? 1 : 0);
        const int64_t stats = (rm ? 1 : 0) + (rv ? 1 : 0);
        const int64_t rd = d.training ? 3 * cnt * ts + (params + stats) * as : cnt * ts + (params + 2) * as;
        const int64_t wr = cnt * ts + (d.training ? (stats + (d.save_mean ? 1 : 0) + (d.save_invstd ? 1 : 0)) * as : 0);
        detail::record_vec(ctx, ch * rd, ch * wr, ch * cnt * (d.training ? 6 : 2));
      }
      for (int64_t c = b; c < e; ++c) {
        A mean, invstd;
        if (d.training) {
          A sum = 0;
          for_planes(d, c, [&](int64_t off) {
            for (int64_t i = 0; i < d.HW; ++i) sum += load_acc(x, off + i);
          });
          mean = cnt > 0 ? sum / static_cast<A>(cnt) : A(0);
          A m2 = 0;
          for_planes(d, c, [&](int64_t off) {
            for (int64_t i = 0; i < d.HW; ++i) {
              const A dx = load_acc(x, off + i) - mean;
              m2 += dx * dx;
            }
          });
          const A var = cnt > 0 ? m2 / static_cast<A>(cnt) : A(0);
          invstd = A(1) / std::sqrt(var + static_cast<A>(d.eps));
          if (d.save_mean) static_cast<A*>(d.save_mean)[c] = mean;
          if (d.save_invstd) static_cast<A*>(d.save_invstd)[c] = invstd;
          const A mom = static_cast<A>(d.momentum);
          if (rm) rm[c] = (A(1) - mom) * rm[c] + mom * mean;
          if (rv) rv[c] = (A(1) - mom) * rv[c] + mom * (cnt > 1 ? m2 / static_cast<A>(cnt - 1) : var);
        } else {
          mean = rm[c];
          invstd = A(1) / std::sqrt(rv[c] + static_cast<A>(d.eps));
        }
        const A scale = invstd * (w ? w[c] : A(1));
        const A shift = (bias ? bias[c] : A(0)) - mean * scale;
        for_planes(d, c, [&](int64_t off) {
          for (int64_t i = 0; i < d.HW; ++i) y[off + i] = convert<T>(load_acc(x, off + i) * scale + shift);
        });
      }
    });
  });
}

npu_sim::Status batch_norm_backward(npu_sim::Stream stream, const BatchNormDesc& d) {
  if (d.C == 0) return npu_sim::Status::kSuccess;
  return dispatch_fp(d.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    // Launch records, per channel of cnt elements: the saved (or running) mean and invstd and the weight
    // (when given) one value each; dy and x read by the sums pass, then again by the dx pass in training
    // (dy only in eval); dx written, dweight/dbias one value each. Vector ops per element: 4 for the sums,
    // dx 6 (training) or 2 (eval).
    return parallel_for(stream, "batch_norm_backward", d.C, 1, [d](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
      const T* x = static_cast<const T*>(d.x);
      const T* dy = static_cast<const T*>(d.dy);
      T* dx = static_cast<T*>(d.dx);
      const A* w = static_cast<const A*>(d.weight);
      const int64_t cnt = d.N * d.HW;
      {
        constexpr int64_t ts = sizeof(T), as = sizeof(A);
        const int64_t ch = e - b;
        const bool tr = d.training && cnt > 0;
        const int64_t rd = (2 + (w ? 1 : 0)) * as + 2 * cnt * ts + (dx ? (tr ? 2 : 1) * cnt * ts : 0);
        const int64_t wr = (dx ? cnt * ts : 0) + ((d.dweight ? 1 : 0) + (d.dbias ? 1 : 0)) * as;
        detail::record_vec(ctx, ch * rd, ch * wr, ch * cnt * (4 + (dx ? (tr ? 6 : 2) : 0)));
      }
      for (int64_t c = b; c < e; ++c) {
        A mean, invstd;
        if (d.training) {
          mean = static_cast<const A*>(d.save_mean)[c];
          invstd = static_cast<const A*>(d.save_invstd)[c];
        } else {
          mean = static_cast<const A*>(d.running_mean)[c];
          invstd = A(1) / std::sqrt(static_cast<const A*>(d.running_var)[c] + static_cast<A>(d.eps));
        }
        A sum_dy = 0, sum_dy_xmu = 0;
        for_planes(d, c, [&](int64_t off) {
          for (int64_t i = 0; i < d.HW; ++i) {
            const A g = load_acc(dy, off + i);
            sum_dy += g;
            sum_dy_xmu += g * (load_acc(x, off + i) - mean);
          }
        });
        const A wc = w ? w[c] : A(1);
        if (dx) {
          if (d.training && cnt > 0) {
            const A mdy = sum_dy / static_cast<A>(cnt);
            const A k = sum_dy_xmu * invstd * invstd / static_cast<A>(cnt);
            for_planes(d, c, [&](int64_t off) {
              for (int64_t i = 0; i < d.HW; ++i) {
                dx[off + i] = convert<T>((load_acc(dy, off + i) - mdy - (load_acc(x, off + i) - mean) * k) * invstd * wc);
              }
            });
          } else {
            for_planes(d, c, [&](int64_t off) {
              for (int64_t i = 0; i < d.HW; ++i) dx[off + i] = convert<T>(load_acc(dy, off + i) * invstd * wc);
            });
          }
        }
        if (d.dweight) static_cast<A*>(d.dweight)[c] = sum_dy_xmu * invstd;
        if (d.dbias) static_cast<A*>(d.dbias)[c] = sum_dy;
      }
    });
  });
}

// Group norm backward: per (n, c) sums ds = sum(dy * x), db = sum(dy) (one launch over N*C), then
// dx per (n, g) and dweight/dbias per channel (second launch over N*G + C work items). An empty batch (N = 0)
// still runs the channel items: its weight and bias gradients are zeros, not whatever the buffers held.
npu_sim::Status group_norm_backward(npu_sim::Stream stream, const GroupNormBackwardDesc& d) {
  if (d.C == 0) return npu_sim::Status::kSuccess;
  return dispatch_fp(d.dtype, [&](auto tag) -> npu_sim::Status {
    using T = decltype(tag);
    using A = acc_t<T>;
    auto sums = std::make_shared<std::vector<A>>(static_cast<size_t>(2 * d.N * d.C));
    auto st = parallel_for(stream, "group_norm_backward", d.N * d.C, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(d.HW, 1)),
                           [d, sums](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                             // Launch records: dy and x read once per element, two partial sums per (n, c)
                             // written to the workspace; 3 Vector ops per element.
                             detail::record_vec(ctx, (e - b) * d.HW * 2 * static_cast<int64_t>(sizeof(T)),
                                                (e - b) * 2 * static_cast<int64_t>(sizeof(A)), (e - b) * d.HW * 3);
                             const T* x = static_cast<const T*>(d.x);
                             const T* dy = static_cast<const T*>(d.dy);
                             for (int64_t nc = b; nc < e; ++nc) {
                               A ds = 0, db = 0;
                               for (int64_t i = 0; i < d.HW; ++i) {
                                 const A g = load_acc(dy, nc * d.HW + i);
                                 ds += g * load_acc(x, nc * d.HW + i);
                                 db += g;
                               }
                               (*sums)[2 * nc] = ds;
                               (*sums)[2 * nc + 1] = db;
                             }
                           });
    if (st != npu_sim::Status::kSuccess) return st;
    const int64_t D = d.C / d.G;
    // Launch records: a (n, g) item reads mean and rstd, D partial-sum pairs and the D weights twice (when
    // given), dy and x per element, and writes dx (5 Vector ops per element); a channel item reads N
    // partial-sum pairs and N (mean, rstd) pairs and writes dweight/dbias (4 Vector ops per n).
    return parallel_for(stream, "group_norm_backward", d.N * d.G + d.C, 1, [d, sums, D](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
      const T* x = static_cast<const T*>(d.x);
      const T* dy = static_cast<const T*>(d.dy);
      const A* w = static_cast<const A*>(d.weight);
      const A* mean = static_cast<const A*>(d.mean);
      const A* rstd = static_cast<const A*>(d.rstd);
      {
        constexpr int64_t ts = sizeof(T), as = sizeof(A);
        const int64_t NG = d.N * d.G;
        const int64_t groups = d.dx ? std::max<int64_t>(0, std::min(e, NG) - b) : 0;
        const int64_t chans = e - std::max(b, NG) > 0 ? e - std::max(b, NG) : 0;
        const int64_t group_rd = (2 + 2 * D + (w ? 2 * D : 0)) * as + 2 * D * d.HW * ts;
        const int64_t chan_rd = 4 * d.N * as;
        const int64_t chan_wr = ((d.dweight ? 1 : 0) + (d.dbias ? 1 : 0)) * as;
        detail::record_vec(ctx, groups * group_rd + chans * chan_rd, groups * D * d.HW * ts + chans * chan_wr,
                           groups * D * d.HW * 5 + chans * d.N * 4);
      }
      for (int64_t item = b; item < e; ++item) {
        if (item < d.N * d.G) {
          if (!d.dx) continue;
          const int64_t n = item / d.G, g = item % d.G;
          const A mu = mean[item], rs = rstd[item];
          A sum1 = 0, sum2 = 0;
          for (int64_t c = g * D; c < (g + 1) * D; ++c) {
            const A wc = w ? w[c] : A(1);
            sum1 += (*sums)[2 * (n * d.C + c)] * wc;
            sum2 += (*sums)[2 * (n * d.C + c) + 1] * wc;
          }
          const A M = static_cast<A>(D * d.HW);
          const A c2 = rs * rs * rs * (mu * sum2 - sum1) / M;
          const A c3 = -c2 * mu - rs * sum2 / M;
          T* dx = static_cast<T*>(d.dx);
          for (int64_t c = g * D; c < (g + 1) * D; ++c) {
            const A k = rs * (w ? w[c] : A(1));
            const int64_t off = (n * d.C + c) * d.HW;
            for (int64_t i = 0; i < d.HW; ++i) dx[off + i] = convert<T>(k * load_acc(dy, off + i) + c2 * load_acc(x, off + i) + c3);
          }
        } else {
          const int64_t c = item - d.N * d.G;
          A dw = 0, dbias = 0;
          for (int64_t n = 0; n < d.N; ++n) {
            const int64_t ng = n * d.G + c / D;
            dw += ((*sums)[2 * (n * d.C + c)] - (*sums)[2 * (n * d.C + c) + 1] * mean[ng]) * rstd[ng];
            dbias += (*sums)[2 * (n * d.C + c) + 1];
          }
          if (d.dweight) static_cast<A*>(d.dweight)[c] = dw;
          if (d.dbias) static_cast<A*>(d.dbias)[c] = dbias;
        }
      }
    });
  });
}

}  // namespace npu_kernels
