// Elementwise losses (mse, smooth_l1, huber, binary_cross_entropy) and their gradients; see nn.h.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "dtype_convert.h"  // branch-free fp16 <-> fp32 in registers
#include "npu_kernels/launch.h"
#include "npu_kernels/float_dispatch.h"
#include "npu_kernels/nn.h"
#include "traffic.h"

namespace npu_kernels {

namespace {

using detail::load_acc;

template <typename A>
inline void check_prob(A x) {
  if (!(x >= A(0) && x <= A(1))) {
    throw npu_sim::KernelError("binary_cross_entropy: all elements of input should be between 0 and 1");
  }
}

const char* loss_name(LossKind kind, bool backward) {
  static const char* const fwd[] = {"mse_loss", "smooth_l1_loss", "binary_cross_entropy", "huber_loss"};
  static const char* const bwd[] = {"mse_loss_backward", "smooth_l1_loss_backward", "binary_cross_entropy_backward",
                                    "huber_loss_backward"};
  return (backward ? bwd : fwd)[static_cast<int>(kind)];
}

}  // namespace

npu_sim::Status pointwise_loss(npu_sim::Stream stream, LossKind kind, const PointLossDesc& d) {
  if (d.n == 0) return npu_sim::Status::kSuccess;
  return dispatch_fp(d.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    return parallel_for(stream, loss_name(kind, false),
                        d.n, 1 << 14, [d, kind](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
      const T* x = static_cast<const T*>(d.input);
      const T* t = static_cast<const T*>(d.target);
      const T* w = static_cast<const T*>(d.weight);
      T* out = static_cast<T*>(d.out);
      {
        // Launch records: input and target (and binary_cross_entropy's weight) read once per element, the
        // loss written once; Vector ops per element: mse 2, smooth_l1 / huber 5, binary_cross_entropy 8.
        static constexpr int64_t kFlops[] = {2, 5, 8, 5};  // LossKind order
        constexpr int64_t ts = sizeof(T);
        const int64_t n = e - b, ins = 2 + (kind == LossKind::kBce && w ? 1 : 0);
        detail::record_vec(ctx, n * ins * ts, n * ts, n * kFlops[static_cast<int>(kind)]);
      }
      const A beta = static_cast<A>(d.beta);
      switch (kind) {
        case LossKind::kMse:
          for (int64_t i = b; i < e; ++i) {
            const A diff = load_acc(x, i) - load_acc(t, i);
            out[i] = convert<T>(diff * diff);
          }
          break;
        case LossKind::kSmoothL1:
          for (int64_t i = b; i < e; ++i) {
            const A z = std::fabs(load_acc(x, i) - load_acc(t, i));
            out[i] = convert<T>(z < beta ? A(0.5) * z * z / beta : z - A(0.5) * beta);
          }
          break;
        case LossKind::kHuber:  // beta is delta
          for (int64_t i = b; i < e; ++i) {
            const A z = std::fabs(load_acc(x, i) - load_acc(t, i));
            out[i] = convert<T>(z < beta ? A(0.5) * z * z : beta * (z - A(0.5) * beta));
          }
          break;
        case LossKind::kBce:
          for (int64_t i = b; i < e; ++i) {
            const A p = load_acc(x, i), y = load_acc(t, i);
            check_prob(p);
            const A l = -(y * std::max(std::log(p), A(-100)) + (A(1) - y) * std::max(std::log1p(-p), A(-100)));
            out[i] = convert<T>(w ? l * load_acc(w, i) : l);
          }
          break;
      }
    });
  });
}

npu_sim::Status pointwise_loss_backward(npu_sim::Stream stream, LossKind kind, const PointLossDesc& d) {
  if (d.n == 0) return npu_sim::Status::kSuccess;
  return dispatch_fp(d.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    return parallel_for(stream, loss_name(kind, true),
                        d.n, 1 << 14, [d, kind](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
      const T* x = static_cast<const T*>(d.input);
      const T* t = static_cast<const T*>(d.target);
      const T* w = static_cast<const T*>(d.weight);
      const T* g = static_cast<const T*>(d.grad);
      {
        // Launch records: grad (one element per output, a broadcast scalar is re-read each time), input and
        // target (and binary_cross_entropy's weight) read per element, grad_in written; Vector ops per
        // element: 4 (scale, subtract, derivative, multiply), binary_cross_entropy 7.
        constexpr int64_t ts = sizeof(T);
        const int64_t n = e - b, ins = 3 + (kind == LossKind::kBce && w ? 1 : 0);
        detail::record_vec(ctx, n * ins * ts, n * ts, n * (kind == LossKind::kBce ? 7 : 4));
      }
      T* gi = static_cast<T*>(d.grad_in);
      const A beta = static_cast<A>(d.beta), scale = static_cast<A>(d.scale);
      for (int64_t i = b; i < e; ++i) {
        const A go = load_acc(g, i * d.grad_stride) * scale;
        const A diff = load_acc(x, i) - load_acc(t, i);
        A v;
        switch (kind) {
          case LossKind::kMse: v = A(2) * diff; break;
          case LossKind::kSmoothL1:
            v = std::fabs(diff) < beta ? diff / beta : static_cast<A>((diff > A(0)) - (diff < A(0)));
            break;
          case LossKind::kHuber: v = diff <= -beta ? -beta : (diff >= beta ? beta : diff); break;
          default: {
            const A p = load_acc(x, i);
            v = diff / std::max((A(1) - p) * p, A(1e-12));
            if (w) v *= load_acc(w, i);
          }
        }
        gi[i] = convert<T>(v * go);
      }
    });
  });
}

}  // namespace npu_kernels
