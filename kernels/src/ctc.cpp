// CTC loss kernels (see npu_kernels/ctc.h): batch items split over blocks, each item's alpha (forward) or beta
// (backward) recursion run in log space in the input dtype with CPU's order of operations, so values match CPU's.
#include "npu_kernels/ctc.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {
namespace {

using Status = npu_sim::Status;

struct Item {
  int64_t input_length, target_length, target_offset;  // target_offset: in elements of targets
};

// The per-launch copy of the host lengths (the caller's arrays may be gone when the blocks run).
struct Plan {
  std::vector<Item> items;
  int64_t width = 1;  // log_alpha's last dimension
};

int64_t max_target_length(const CtcArgs& a) {
  int64_t m = 0;
  for (int64_t b = 0; b < a.batch; ++b) m = std::max(m, a.target_lengths[b]);
  return m;
}

// CPU's argument checks on the lengths and the blank (the adapter raises CPU's messages before it gets here).
std::shared_ptr<const Plan> make_plan(const CtcArgs& a) {
  if (a.dtype != DType::kFloat32 && a.dtype != DType::kFloat64) return nullptr;
  if (a.batch < 0 || a.max_input_length < 0 || a.num_labels < 0 || a.num_targets < 0) return nullptr;
  if (a.blank < 0 || a.blank >= a.num_labels) return nullptr;
  if (a.batch > 0 && (!a.input_lengths || !a.target_lengths)) return nullptr;
  auto plan = std::make_shared<Plan>();
  plan->items.resize(static_cast<size_t>(a.batch));
  int64_t pos = 0;
  for (int64_t b = 0; b < a.batch; ++b) {
    const int64_t il = a.input_lengths[b], tl = a.target_lengths[b];
    if (il < 0 || il > a.max_input_length || tl < 0) return nullptr;
    if (!a.targets_concatenated && tl > a.num_targets) return nullptr;
    plan->items[b] = {il, tl, a.targets_concatenated ? pos * a.target_stride : b * a.target_stride_n};
    pos += tl;
  }
  if (a.targets_concatenated && pos != a.num_targets) return nullptr;
  plan->width = 2 * max_target_length(a) + 1;
  return plan;
}

// l' of the paper: blank, target 0, blank, target 1, ..., blank (2 * target_length + 1 labels), each target checked.
void extended_labels(const CtcArgs& a, const Item& it, int64_t b, const int64_t* targets, std::vector<int64_t>& out) {
  out.assign(static_cast<size_t>(2 * it.target_length + 1), a.blank);
  for (int64_t i = 0; i < it.target_length; ++i) {
    const int64_t v = targets[it.target_offset + i * a.target_stride];
    if (v < 0 || v >= a.num_labels) {
      throw npu_sim::KernelError("ctc_loss: target " + std::to_string(i) + " of batch item " + std::to_string(b) +
                                 " is " + std::to_string(v) + ", expected a class index in [0, " +
                                 std::to_string(a.num_labels) + ")");
    }
    out[2 * i + 1] = v;
  }
}

template <typename T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// log(exp(x - m) + exp(y - m) + exp(z - m)) + m with m the largest (0 when all are -inf), as CPU writes it.
template <typename T>
T log_sum3(T x, T y, T z) {
  T m = x;
  if (y > m) m = y;
  if (z > m) m = z;
  if (m == kNegInf<T>) m = 0;
  return std::log(std::exp(x - m) + std::exp(y - m) + std::exp(z - m)) + m;
}

// One item's alpha rows (eq. 6-7 of Graves et al.) and its nll. `al` is the item's (max_input_length x width) block.
template <typename T>
void forward_item(const CtcArgs& a, const Item& it, const std::vector<int64_t>& lab, const T* lp, T* al, int64_t width,
                  T* nll) {
  std::fill(al, al + a.max_input_length * width, kNegInf<T>);
  const int64_t il = it.input_length, tl = it.target_length, states = 2 * tl + 1;
  if (il == 0) {
    const T log_likelihood = tl == 0 ? T(0) : kNegInf<T>;
    *nll = -log_likelihood;
    return;
  }
  auto lpt = [&](int64_t t, int64_t c) { return lp[t * a.lp_stride_t + c * a.lp_stride_c]; };
  al[0] = lpt(0, a.blank);
  if (tl > 0) al[1] = lpt(0, lab[1]);
  for (int64_t t = 1; t < il; ++t) {
    const T* prev = al + (t - 1) * width;
    T* cur = al + t * width;
    for (int64_t s = 0; s < states; ++s) {
      const T la1 = prev[s];
      const T la2 = s > 0 ? prev[s - 1] : kNegInf<T>;
      const T la3 = s > 1 && lab[s - 2] != lab[s] ? prev[s - 2] : kNegInf<T>;
      cur[s] = log_sum3(la1, la2, la3) + lpt(t, lab[s]);
    }
  }
  const T* last = al + (il - 1) * width;
  if (tl == 0) {  // no label before the final blank: one path end, nothing to merge
    *nll = -last[0];
    return;
  }
  const T l1 = last[2 * tl], l2 = last[2 * tl - 1];
  T m = std::max(l1, l2);
  m = m == kNegInf<T> ? T(0) : m;
  *nll = -(std::log(std::exp(l1 - m) + std::exp(l2 - m)) + m);
}

// acc "log+=" v, as CPU's backward collects alpha * beta per label.
template <typename T>
void log_add(T& acc, T v) {
  if (acc == kNegInf<T>) {
    acc = v;
  } else {
    const T m = std::max(acc, v);
    acc = std::log(std::exp(acc - m) + std::exp(v - m)) + m;
  }
}

// One item's gradient: beta rows from the end (eq. 10-11) in two rows, alpha * beta collected per label into the
// item's gradient rows (g(t, c) at g[t * row_stride + c]), then eq. 16.
template <typename T>
void backward_item(const CtcArgs& a, const Item& it, const std::vector<int64_t>& lab, const T* lp, const T* al,
                   int64_t width, T nll, T gr, T* g, int64_t row_stride, std::vector<T>& beta_cur,
                   std::vector<T>& beta_next) {
  const int64_t C = a.num_labels, il = it.input_length, tl = it.target_length, states = 2 * tl + 1;
  if (a.zero_infinity && nll == std::numeric_limits<T>::infinity()) {
    for (int64_t t = 0; t < a.max_input_length; ++t) std::fill(g + t * row_stride, g + t * row_stride + C, T(0));
    return;
  }
  auto lpt = [&](int64_t t, int64_t c) { return lp[t * a.lp_stride_t + c * a.lp_stride_c]; };
  for (int64_t t = 0; t < il; ++t) std::fill(g + t * row_stride, g + t * row_stride + C, kNegInf<T>);
  if (il > 0) {
    const int64_t t = il - 1;
    beta_next.assign(static_cast<size_t>(states), kNegInf<T>);
    beta_next[2 * tl] = lpt(t, a.blank);
    g[t * row_stride + a.blank] = al[t * width + 2 * tl] + beta_next[2 * tl];
    if (tl > 0) {  // a blank and a label: different states, a plain assignment (as CPU)
      const int64_t c = lab[2 * tl - 1];
      beta_next[2 * tl - 1] = lpt(t, c);
      g[t * row_stride + c] = al[t * width + 2 * tl - 1] + beta_next[2 * tl - 1];
    }
  }
  beta_cur.resize(static_cast<size_t>(states));
  for (int64_t t = il - 2; t >= 0; --t) {
    const T* alpha = al + t * width;
    T* gt = g + t * row_stride;
    for (int64_t s = 2 * tl; s >= 0; --s) {
      const T lb1 = beta_next[s];
      const T lb2 = s < 2 * tl ? beta_next[s + 1] : kNegInf<T>;
      const T lb3 = s < 2 * tl - 1 && lab[s + 2] != lab[s] ? beta_next[s + 2] : kNegInf<T>;
      beta_cur[s] = log_sum3(lb1, lb2, lb3) + lpt(t, lab[s]);
      log_add(gt[lab[s]], alpha[s] + beta_cur[s]);
    }
    std::swap(beta_cur, beta_next);
  }
  for (int64_t t = 0; t < il; ++t) {
    T* gt = g + t * row_stride;
    for (int64_t c = 0; c < C; ++c) {
      const T lp_tc = lpt(t, c);
      gt[c] = (std::exp(lp_tc) - std::exp(gt[c] + nll - lp_tc)) * gr;
    }
  }
  for (int64_t t = il; t < a.max_input_length; ++t) std::fill(g + t * row_stride, g + t * row_stride + C, T(0));
}

template <typename F>
Status dispatch_ctc(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: return f(double{});
    default: return Status::kInvalidValue;
  }
}

}  // namespace

int64_t ctc_alpha_width(const CtcArgs& a) { return 2 * max_target_length(a) + 1; }

Status ctc_loss(npu_sim::Stream stream, const CtcArgs& a, const void* log_probs, const int64_t* targets,
                void* neg_log_likelihood, void* log_alpha) {
  auto plan = make_plan(a);
  if (!plan) return Status::kInvalidValue;
  if (a.batch == 0) return Status::kSuccess;
  if (!neg_log_likelihood || !log_alpha || (a.max_input_length > 0 && !log_probs) ||
      (a.num_targets > 0 && !targets)) {
    return Status::kInvalidValue;
  }
  return dispatch_ctc(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    return parallel_for(stream, "ctc_loss", a.batch, 1, [=](int64_t b0, int64_t b1, const npu_sim::BlockContext& ctx) {
      const T* lp = static_cast<const T*>(log_probs);
      T* nll = static_cast<T*>(neg_log_likelihood);
      T* al = static_cast<T*>(log_alpha);
      const int64_t width = plan->width, es = static_cast<int64_t>(sizeof(T));
      std::vector<int64_t> lab;
      int64_t cells = 0, labels = 0;  // (t, s) states computed, targets read
      for (int64_t b = b0; b < b1; ++b) {
        const Item& it = plan->items[b];
        extended_labels(a, it, b, targets, lab);
        forward_item<T>(a, it, lab, lp + b * a.lp_stride_n, al + b * a.max_input_length * width, width, nll + b);
        cells += it.input_length * (2 * it.target_length + 1);
        labels += it.target_length;
      }
      // Launch records: per state one log_prob read, per item its targets; every log_alpha entry and the nll
      // written; per state 3 exp, a log and ~6 adds / compares.
      detail::record_vec(ctx, cells * es + labels * 8, ((b1 - b0) * a.max_input_length * width + (b1 - b0)) * es,
                         10 * cells);
    });
  });
}

Status ctc_loss_backward(npu_sim::Stream stream, const CtcArgs& a, const void* grad_out, const void* log_probs,
                         const int64_t* targets, const void* neg_log_likelihood, const void* log_alpha,
                         int64_t alpha_width, void* grad) {
  auto plan = make_plan(a);
  if (!plan || alpha_width < plan->width) return Status::kInvalidValue;
  if (a.batch == 0 || a.max_input_length == 0 || a.num_labels == 0) return Status::kSuccess;
  if (!grad_out || !log_probs || !neg_log_likelihood || !log_alpha || !grad || (a.num_targets > 0 && !targets)) {
    return Status::kInvalidValue;
  }
  return dispatch_ctc(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    return parallel_for(stream, "ctc_loss_backward", a.batch, 1,
                        [=](int64_t b0, int64_t b1, const npu_sim::BlockContext& ctx) {
      const T* lp = static_cast<const T*>(log_probs);
      const T* al = static_cast<const T*>(log_alpha);
      const T* go = static_cast<const T*>(grad_out);
      const T* nll = static_cast<const T*>(neg_log_likelihood);
      T* g = static_cast<T*>(grad);
      const int64_t C = a.num_labels, row_stride = a.batch * C, es = static_cast<int64_t>(sizeof(T));
      std::vector<int64_t> lab;
      std::vector<T> beta_cur, beta_next;
      int64_t cells = 0, rows = 0, labels = 0;  // states computed, gradient rows transformed, targets read
      for (int64_t b = b0; b < b1; ++b) {
        const Item& it = plan->items[b];
        extended_labels(a, it, b, targets, lab);
        backward_item<T>(a, it, lab, lp + b * a.lp_stride_n, al + b * a.max_input_length * alpha_width, alpha_width,
                         nll[b], go[b], g + b * C, row_stride, beta_cur, beta_next);
        cells += it.input_length * (2 * it.target_length + 1);
        rows += it.input_length;
        labels += it.target_length;
      }
      // Launch records: per state alpha and log_prob read and one gradient entry read and written; per live row its
      // log_probs and gradient read again; nll, grad_out and the targets; every gradient row written (a live one
      // twice: the -inf start and the result). Per state 5 exp, 2 log and ~10 adds; per live entry 2 exp, 4 ops.
      const int64_t items = b1 - b0;
      detail::record_vec(ctx, (3 * cells + 2 * rows * C + 2 * items) * es + labels * 8,
                         (cells + rows * C + items * a.max_input_length * C) * es, 17 * cells + 6 * rows * C);
    });
  });
}

}  // namespace npu_kernels
