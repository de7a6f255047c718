// The fused optimizer kernels: the tensor lists flattened into one index range split over AI-core blocks;
// each block walks its part tensor by tensor and applies the update with the math of PyTorch's CUDA kernels.
#include "npu_kernels/optim.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <utility>

#include "dtype_convert.h"
#include "npu_kernels/float_dispatch.h"
#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {
namespace {

using detail::load_as;
using detail::store_as;

constexpr int64_t kGrain = 1 << 14;  // elements per block at least: an update is ~20 flops on 4-5 streams

// The lists with their element offsets: begin[i] is the flat index of tensor i's first element.
struct Flat {
  OptimLists lists;
  std::vector<int64_t> begin;
  int64_t total = 0;
  explicit Flat(OptimLists l) : lists(std::move(l)) {
    begin.reserve(lists.numel.size() + 1);
    for (int64_t n : lists.numel) {
      begin.push_back(total);
      total += n;
    }
    begin.push_back(total);
  }
  // Calls f(tensor, first, last) for the pieces of tensors covering the flat range [lo, hi).
  template <typename F>
  void for_pieces(int64_t lo, int64_t hi, F&& f) const {
    auto t = static_cast<std::size_t>(std::upper_bound(begin.begin(), begin.end(), lo) - begin.begin() - 1);
    for (; lo < hi; ++t) {
      const int64_t last = std::min(hi, begin[t + 1]);
      if (last > lo) f(t, lo - begin[t], last - begin[t]);
      lo = last;
    }
  }
};

template <typename T>
T* at(void* p) {
  return static_cast<T*>(p);
}

// Weight decay as a compile-time mode, so the element loops below have no branch and vectorise.
enum class Decay { kNone, kL2, kDecoupled };

// The gradient divided by grad_scale (kScaled: the unscaled value is written back, as CUDA's fused kernels
// do) and signed for maximize (sign = -1).
template <bool kScaled, typename T, typename Acc>
inline Acc load_grad(T* g, int64_t i, Acc grad_scale, Acc sign) {
  Acc grad = load_as<Acc>(g[i]);
  if constexpr (kScaled) {
    grad /= grad_scale;
    g[i] = store_as<T>(grad);
  }
  return sign * grad;
}

template <typename T, Decay kDecay, bool kAmsgrad, bool kScaled>
void adam_loop(T* param, T* grad, T* exp_avg, T* exp_avg_sq, T* max_sq, int64_t lo, int64_t hi, acc_t<T> lr,
               acc_t<T> beta1, acc_t<T> beta2, acc_t<T> wd, acc_t<T> eps, acc_t<T> step_size, acc_t<T> bc2_sqrt,
               acc_t<T> scale, acc_t<T> sign) {
  using Acc = acc_t<T>;
  for (int64_t i = lo; i < hi; ++i) {
    Acc p = load_as<Acc>(param[i]);
    Acc g = load_grad<kScaled>(grad, i, scale, sign);
    if constexpr (kDecay == Decay::kDecoupled) p -= lr * wd * p;
    if constexpr (kDecay == Decay::kL2) g += p * wd;
    const Acc m = beta1 * load_as<Acc>(exp_avg[i]) + (1 - beta1) * g;
    const Acc v = beta2 * load_as<Acc>(exp_avg_sq[i]) + (1 - beta2) * g * g;
    Acc v_hat = v;
    if constexpr (kAmsgrad) {
      v_hat = std::max(load_as<Acc>(max_sq[i]), v);
      max_sq[i] = store_as<T>(v_hat);
    }
    param[i] = store_as<T>(p - step_size * m / (std::sqrt(v_hat) / bc2_sqrt + eps));
    exp_avg[i] = store_as<T>(m);
    exp_avg_sq[i] = store_as<T>(v);
  }
}

// Calls f(std::integral_constant<bool, b>) for a runtime flag.
template <typename F>
inline void with_flag(bool b, F&& f) {
  if (b) {
    f(std::true_type{});
  } else {
    f(std::false_type{});
  }
}

template <typename T>
void adam_piece(const Flat& f, std::size_t t, int64_t lo, int64_t hi, const AdamHyper& h, const OptimScalars& sc) {
  using Acc = acc_t<T>;
  const OptimLists& l = f.lists;
  const double step = *l.step[t];
  const Acc lr = static_cast<Acc>(sc.lr != nullptr ? *sc.lr : h.lr);
  const Acc step_size = lr / static_cast<Acc>(1 - std::pow(h.beta1, step));
  const Acc bc2_sqrt = static_cast<Acc>(std::sqrt(1 - std::pow(h.beta2, step)));
  const Acc scale = sc.grad_scale != nullptr ? static_cast<Acc>(*sc.grad_scale) : Acc(1);
  const Decay decay = h.weight_decay == 0 ? Decay::kNone : h.decoupled_weight_decay ? Decay::kDecoupled : Decay::kL2;
  auto run = [&](auto decay_c, auto amsgrad_c, auto scaled_c) {
    adam_loop<T, decltype(decay_c)::value, decltype(amsgrad_c)::value, decltype(scaled_c)::value>(
        at<T>(l.param[t]), at<T>(l.grad[t]), at<T>(l.state1[t]), at<T>(l.state2[t]),
        h.amsgrad ? at<T>(l.state3[t]) : nullptr, lo, hi, lr, static_cast<Acc>(h.beta1), static_cast<Acc>(h.beta2),
        static_cast<Acc>(h.weight_decay), static_cast<Acc>(h.eps), step_size, bc2_sqrt, scale,
        h.maximize ? Acc(-1) : Acc(1));
  };
  with_flag(h.amsgrad, [&](auto amsgrad_c) {
    with_flag(sc.grad_scale != nullptr, [&](auto scaled_c) {
      switch (decay) {
        case Decay::kNone:
          return run(std::integral_constant<Decay, Decay::kNone>{}, amsgrad_c, scaled_c);
        case Decay::kL2:
          return run(std::integral_constant<Decay, Decay::kL2>{}, amsgrad_c, scaled_c);
        case Decay::kDecoupled:
          return run(std::integral_constant<Decay, Decay::kDecoupled>{}, amsgrad_c, scaled_c);
      }
    });
  });
}

template <typename T, bool kMomentum, bool kScaled>
void sgd_loop(T* param, T* grad, T* buf, int64_t lo, int64_t hi, const SgdHyper& h, acc_t<T> lr, acc_t<T> scale) {
  using Acc = acc_t<T>;
  const Acc wd = static_cast<Acc>(h.weight_decay), momentum = static_cast<Acc>(h.momentum);
  const Acc damp = static_cast<Acc>(h.dampening);
  const Acc sign = h.maximize ? Acc(-1) : Acc(1);
  // Loop-invariant: GCC unswitches them. The first step's buffer is the gradient itself (torch passes it
  // uninitialised).
  const bool decay = h.weight_decay != 0, nesterov = h.nesterov, first = h.is_first_step;
  for (int64_t i = lo; i < hi; ++i) {
    const Acc p = load_as<Acc>(param[i]);
    Acc g = load_grad<kScaled>(grad, i, scale, sign);
    if (decay) g += wd * p;
    if constexpr (kMomentum) {
      const Acc b = first ? g : momentum * load_as<Acc>(buf[i]) + (1 - damp) * g;
      buf[i] = store_as<T>(b);
      g = nesterov ? g + momentum * b : b;
    }
    param[i] = store_as<T>(p - lr * g);
  }
}

template <typename T>
void sgd_piece(const Flat& f, std::size_t t, int64_t lo, int64_t hi, const SgdHyper& h, const OptimScalars& sc) {
  using Acc = acc_t<T>;
  const OptimLists& l = f.lists;
  const Acc lr = static_cast<Acc>(sc.lr != nullptr ? *sc.lr : h.lr);
  const Acc scale = sc.grad_scale != nullptr ? static_cast<Acc>(*sc.grad_scale) : Acc(1);
  T* buf = l.state1.empty() ? nullptr : at<T>(l.state1[t]);
  with_flag(buf != nullptr, [&](auto momentum_c) {
    with_flag(sc.grad_scale != nullptr, [&](auto scaled_c) {
      sgd_loop<T, decltype(momentum_c)::value, decltype(scaled_c)::value>(at<T>(l.param[t]), at<T>(l.grad[t]), buf, lo,
                                                                          hi, h, lr, scale);
    });
  });
}

// Adagrad (torch.optim.Adagrad): state_sum += g^2, param -= clr * g / (sqrt(state_sum) + eps), with
// clr = lr / (1 + (step - 1) * lr_decay) and L2 weight decay folded into g.
template <typename T, bool kDecay, bool kScaled>
void adagrad_loop(T* param, T* grad, T* sum, int64_t lo, int64_t hi, acc_t<T> clr, acc_t<T> wd, acc_t<T> eps,
                  acc_t<T> scale, acc_t<T> sign) {
  using Acc = acc_t<T>;
  for (int64_t i = lo; i < hi; ++i) {
    const Acc p = load_as<Acc>(param[i]);
    Acc g = load_grad<kScaled>(grad, i, scale, sign);
    if constexpr (kDecay) g += p * wd;
    const Acc s2 = load_as<Acc>(sum[i]) + g * g;
    sum[i] = store_as<T>(s2);
    param[i] = store_as<T>(p - clr * g / (std::sqrt(s2) + eps));
  }
}

template <typename T>
void adagrad_piece(const Flat& f, std::size_t t, int64_t lo, int64_t hi, const AdagradHyper& h,
                   const OptimScalars& sc) {
  using Acc = acc_t<T>;
  const OptimLists& l = f.lists;
  const double lr = sc.lr != nullptr ? *sc.lr : h.lr;
  const auto clr = static_cast<Acc>(lr / (1 + (*l.step[t] - 1) * h.lr_decay));
  const Acc scale = sc.grad_scale != nullptr ? static_cast<Acc>(*sc.grad_scale) : Acc(1);
  with_flag(h.weight_decay != 0, [&](auto decay_c) {
    with_flag(sc.grad_scale != nullptr, [&](auto scaled_c) {
      adagrad_loop<T, decltype(decay_c)::value, decltype(scaled_c)::value>(
          at<T>(l.param[t]), at<T>(l.grad[t]), at<T>(l.state1[t]), lo, hi, clr, static_cast<Acc>(h.weight_decay),
          static_cast<Acc>(h.eps), scale, h.maximize ? Acc(-1) : Acc(1));
    });
  });
}

// What a step costs in the launch records: GM bytes read and written per element (over every list the
// update touches), Vector ops per element, and bytes read per piece of a tensor (its device scalars: the
// step count, lr, grad_scale). Each block also reads found_inf (when given) and stops there when it is set.
struct StepCost {
  int64_t rd_elem, wr_elem, ops_elem, rd_piece;
};

// One launch over the flattened lists; `piece(flat, tensor, lo, hi, scalars)` updates a part of a tensor.
template <typename Piece>
npu_sim::Status launch_step(npu_sim::Stream s, const char* name, OptimLists lists, const OptimScalars& sc,
                            StepCost cost, Piece piece) {
  auto flat = std::make_shared<const Flat>(std::move(lists));
  const int64_t total = flat->total;
  return parallel_for(s, name, total, kGrain, [flat, sc, cost, piece](int64_t lo, int64_t hi, const npu_sim::BlockContext& ctx) {
    const int64_t flag = sc.found_inf != nullptr ? int64_t{sizeof(float)} : 0;
    if (sc.found_inf != nullptr && *sc.found_inf == 1.0f) {  // an inf/NaN gradient: the step is skipped
      detail::record_vec(ctx, flag, 0, 0);
      return;
    }
    int64_t pieces = 0;
    flat->for_pieces(lo, hi, [&](std::size_t t, int64_t a, int64_t b) {
      piece(*flat, t, a, b, sc);
      ++pieces;
    });
    const int64_t n = hi - lo;
    detail::record_vec(ctx, flag + pieces * cost.rd_piece + n * cost.rd_elem, n * cost.wr_elem, n * cost.ops_elem);
  });
}

// Every list the update uses holds one entry per parameter: `states` state lists (SGD's momentum buffers may be
// absent), and the step counts when `steps`.
npu_sim::Status check_lists(const OptimLists& l, std::size_t states, bool steps, bool optional_states = false) {
  const std::size_t n = l.param.size();
  const std::vector<void*>* lists[] = {&l.state1, &l.state2, &l.state3};
  bool ok = l.grad.size() == n && l.numel.size() == n && (!steps || l.step.size() == n);
  for (std::size_t k = 0; k < states; ++k) ok = ok && (lists[k]->size() == n || (optional_states && lists[k]->empty()));
  return ok ? npu_sim::Status::kSuccess : npu_sim::Status::kInvalidValue;
}

}  // namespace

npu_sim::Status fused_adam(npu_sim::Stream s, const OptimLists& lists, const AdamHyper& h, const OptimScalars& sc) {
  if (auto st = check_lists(lists, h.amsgrad ? 3 : 2, true); st != npu_sim::Status::kSuccess) return st;
  const char* name = h.decoupled_weight_decay ? "fused_adamw" : "fused_adam";
  return dispatch_fp(lists.dtype, [&](auto tag) {
    using T = decltype(tag);
    // Launch records: param, grad, exp_avg, exp_avg_sq (+ max_exp_avg_sq) read and param, exp_avg,
    // exp_avg_sq (+ max_exp_avg_sq, + the unscaled grad) written per element; the float32 step (and lr,
    // grad_scale when given) per piece; 16 Vector ops per element (+1 amsgrad, +1 unscale).
    constexpr int64_t ts = sizeof(T), fs = sizeof(float);
    const int64_t ams = h.amsgrad ? 1 : 0, scaled = sc.grad_scale != nullptr ? 1 : 0;
    const StepCost cost{(4 + ams) * ts, (3 + ams + scaled) * ts, 16 + ams + scaled,
                        fs * (1 + (sc.lr != nullptr ? 1 : 0) + scaled)};
    return launch_step(s, name, lists, sc, cost,
                       [h](const Flat& f, std::size_t t, int64_t lo, int64_t hi, const OptimScalars& c) {
                         adam_piece<T>(f, t, lo, hi, h, c);
                       });
  });
}

npu_sim::Status fused_sgd(npu_sim::Stream s, const OptimLists& lists, const SgdHyper& h, const OptimScalars& sc) {
  if (auto st = check_lists(lists, 1, false, true); st != npu_sim::Status::kSuccess) return st;
  return dispatch_fp(lists.dtype, [&](auto tag) {
    using T = decltype(tag);
    // Launch records: param and grad read, param written per element; with momentum the buffer is written
    // and (but on the first step) read; the unscaled grad written back when scaled; lr and grad_scale per
    // piece when given. Vector ops per element: 3 (decay, lr multiply, subtract), +3 with momentum, +1
    // unscale.
    constexpr int64_t ts = sizeof(T), fs = sizeof(float);
    const int64_t mom = lists.state1.empty() ? 0 : 1, scaled = sc.grad_scale != nullptr ? 1 : 0;
    const StepCost cost{(2 + (mom && !h.is_first_step ? 1 : 0)) * ts, (1 + mom + scaled) * ts, 3 + 3 * mom + scaled,
                        fs * ((sc.lr != nullptr ? 1 : 0) + scaled)};
    return launch_step(s, "fused_sgd", lists, sc, cost,
                       [h](const Flat& f, std::size_t t, int64_t lo, int64_t hi, const OptimScalars& c) {
                         sgd_piece<T>(f, t, lo, hi, h, c);
                       });
  });
}

npu_sim::Status fused_adagrad(npu_sim::Stream s, const OptimLists& lists, const AdagradHyper& h,
                              const OptimScalars& sc) {
  if (auto st = check_lists(lists, 1, true); st != npu_sim::Status::kSuccess) return st;
  return dispatch_fp(lists.dtype, [&](auto tag) {
    using T = decltype(tag);
    // Launch records: param, grad and state_sum read, param and state_sum (+ the unscaled grad) written per
    // element; the float32 step (and lr, grad_scale when given) per piece; 6 Vector ops per element (square-add,
    // sqrt, add eps, divide, multiply, subtract), +1 weight decay, +1 unscale.
    constexpr int64_t ts = sizeof(T), fs = sizeof(float);
    const int64_t decay = h.weight_decay != 0 ? 1 : 0, scaled = sc.grad_scale != nullptr ? 1 : 0;
    const StepCost cost{3 * ts, (2 + scaled) * ts, 6 + decay + scaled,
                        fs * (1 + (sc.lr != nullptr ? 1 : 0) + scaled)};
    return launch_step(s, "fused_adagrad", lists, sc, cost,
                       [h](const Flat& f, std::size_t t, int64_t lo, int64_t hi, const OptimScalars& c) {
                         adagrad_piece<T>(f, t, lo, hi, h, c);
                       });
  });
}

}  // namespace npu_kernels
