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
    return parallel_for(stream, "batch_norm", d.C, 1, [d](int64_t b, int64_t e, const npu_sim::BlockContext&) {
      const T* x = static_cast<const T*>(d.x);
      T* y = static_cast<T*>(d.y);
      const A* w = static_cast<const A*>(d.weight);
      const A* bias = static_cast<const A*>(d.bias);
      A* rm = static_cast<A*>(d.running_mean);
      A* rv = static_cast<A*>(d.running_var);
      const int64_t cnt = d.N * d.HW;
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
    return parallel_for(stream, "batch_norm_backward", d.C, 1, [d](int64_t b, int64_t e, const npu_sim::BlockContext&) {
      const T* x = static_cast<const T*>(d.x);
      const T* dy = static_cast<const T*>(d.dy);
      T* dx = static_cast<T*>(d.dx);
      const A* w = static_cast<const A*>(d.weight);
      const int64_t cnt = d.N * d.HW;
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
// dx per (n, g) and dweight/dbias per channel (second launch over N*G + C work items).
npu_sim::Status group_norm_backward(npu_sim::Stream stream, const GroupNormBackwardDesc& d) {
  if (d.N * d.C == 0) return npu_sim::Status::kSuccess;
  return dispatch_fp(d.dtype, [&](auto tag) -> npu_sim::Status {
    using T = decltype(tag);
    using A = acc_t<T>;
    auto sums = std::make_shared<std::vector<A>>(static_cast<size_t>(2 * d.N * d.C));
    auto st = parallel_for(stream, "group_norm_backward", d.N * d.C, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(d.HW, 1)),
                           [d, sums](int64_t b, int64_t e, const npu_sim::BlockContext&) {
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
    return parallel_for(stream, "group_norm_backward", d.N * d.G + d.C, 1, [d, sums, D](int64_t b, int64_t e, const npu_sim::BlockContext&) {
      const T* x = static_cast<const T*>(d.x);
      const T* dy = static_cast<const T*>(d.dy);
      const A* w = static_cast<const A*>(d.weight);
      const A* mean = static_cast<const A*>(d.mean);
      const A* rstd = static_cast<const A*>(d.rstd);
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
