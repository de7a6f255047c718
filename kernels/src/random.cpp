// Distribution kernels over Philox-4x32-10 (see npu_kernels/random.h).
#include "npu_kernels/random.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "npu_kernels/dtype.h"
#include "npu_kernels/launch.h"
#include "fast_math.h"
#include "special_math.h"
#include "traffic.h"

namespace npu_kernels {

namespace {

constexpr int64_t kGrain = 1 << 13;
constexpr double kTwoPi = 6.283185307179586476925286766559;
// Launch records: random kernels read no GM (but the operands of bernoulli_ / dropout) and write their
// outputs; a Philox-4x32-10 draw plus the distribution's transform is counted as kDrawOps Vector ops per
// element (ten rounds of 2 multiplies, 2 xors, key bumps, amortised over the words used, plus the transform).
constexpr int64_t kDrawOps = 16;

// The floating dtypes, the only ones the samplers and bernoulli's p accept: at run time, and as element types
// (the loops are instantiated for these only).
bool is_floating(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 || t == DType::kBFloat16;
}
template <typename T>
constexpr bool kFloating = std::is_floating_point_v<T> || is_reduced_float_v<T>;


// uniform in [0, 1) with 53 random bits, and in (0, 1] (safe for log).
inline double u01(uint32_t lo, uint32_t hi) {
  const uint64_t x = (static_cast<uint64_t>(hi) << 32 | lo) >> 11;
  return static_cast<double>(x) * 0x1.0p-53;
}
inline double u01_open0(uint32_t lo, uint32_t hi) { return 1.0 - u01(lo, hi); }

template <typename T>
T draw(const RandomArgs& a, const std::array<uint32_t, 4>& w) {
  switch (a.kind) {
    case RandomKind::kUniform: {
      const double v = a.a + (a.b - a.a) * u01(w[0], w[1]);
      T t = convert<T>(v);
      // rounding to a narrow type may land on the excluded upper bound
      if (!(convert<double>(t) < a.b) && a.b > a.a) t = convert<T>(a.a);
      return t;
    }
    case RandomKind::kNormal: return T{};  // filled by normal_range (pairs of draws)
    case RandomKind::kBernoulli: return convert<T>(u01(w[0], w[1]) < a.a ? 1 : 0);
    case RandomKind::kFromTo: {
      const uint64_t x = static_cast<uint64_t>(w[1]) << 32 | w[0];
      const uint64_t r = a.urange == 0 ? x : x % a.urange;
      return convert<T>(static_cast<int64_t>(static_cast<uint64_t>(a.ifrom) + r));
    }
    case RandomKind::kExponential: {
      return convert<T>(-std::log(u01_open0(w[0], w[1])) / a.a);
    }
    case RandomKind::kLogNormal: {
      const double r = std::sqrt(-2.0 * std::log(u01_open0(w[0], w[1])));
      return convert<T>(std::exp(a.a + a.b * r * std::cos(kTwoPi * u01(w[2], w[3]))));
    }
    case RandomKind::kGeometric: {
      return convert<T>(std::ceil(std::log(u01_open0(w[0], w[1])) / std::log1p(-a.a)));
    }
    case RandomKind::kCauchy: {
      return convert<T>(a.a + a.b * std::tan(kTwoPi / 2 * (u01(w[0], w[1]) - 0.5)));
    }
  }
  return T{};
}

// Box-Muller for float / half / bfloat16 outputs from words w0 (radius) and w2 (angle) of a draw: 24-bit uniforms
// and float math (fast_log, fast_sincos_turns) are exact enough for these dtypes, and vectorise.
NPU_VEC_INLINE void box_muller_float(uint32_t w0, uint32_t w2, float& z0, float& z1) {
  const float u1 = static_cast<float>((w0 >> 8) + 1) * 0x1.0p-24f;  // (0, 1]
  const float u2 = static_cast<float>(w2 >> 8) * 0x1.0p-24f;        // [0, 1)
  const float r = std::sqrt(-2.0f * detail::fast_log(u1));
  float sn, cs;
  detail::fast_sincos_turns(u2, sn, cs);
  z0 = r * cs;
  z1 = r * sn;
}

// Both Box-Muller outputs of one Philox draw (element pair 2m, 2m+1 shares draw m).
template <typename T>
std::pair<double, double> box_muller(const std::array<uint32_t, 4>& w) {
  if constexpr (std::is_same_v<T, double>) {
    const double r = std::sqrt(-2.0 * std::log(u01_open0(w[0], w[1])));
    const double th = kTwoPi * u01(w[2], w[3]);
    return {r * std::cos(th), r * std::sin(th)};
  } else {
    float z0, z1;
    box_muller_float(w[0], w[2], z0, z1);
    return {z0, z1};
  }
}

// The normals of 16 consecutive draws m0 .. m0 + 15 (elements 2 m0 .. 2 m0 + 31) into o, contiguous: the Philox
// rounds and the transform run across the 16 lanes (the same draws and arithmetic as box_muller, vectorised).
template <typename T>
void normal_block(T* o, float mean, float stdev, const PhiloxState& s, uint64_t m0) {
  constexpr int kLanes = 16;
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  // The 32-bit words held in 64-bit lanes, so that the products are plain 64-bit multiplies.
  constexpr uint64_t kLo = 0xffffffffu;
  uint64_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    const uint64_t m = m0 + static_cast<uint64_t>(l);
    c0[l] = m & kLo;
    c1[l] = m >> 32;
    c2[l] = s.offset & kLo;
    c3[l] = s.offset >> 32;
  }
  uint32_t k0 = static_cast<uint32_t>(s.seed), k1 = static_cast<uint32_t>(s.seed >> 32);
  for (int r = 0; r < 10; ++r) {  // philox4x32_10, lane by lane
    for (int l = 0; l < kLanes; ++l) {
      const uint64_t p0 = kM0 * c0[l], p1 = kM1 * c2[l];
      c0[l] = (p1 >> 32) ^ c1[l] ^ k0;
      c1[l] = p1 & kLo;
      c2[l] = (p0 >> 32) ^ c3[l] ^ k1;
      c3[l] = p0 & kLo;
    }
    k0 += kW0;
    k1 += kW1;
  }
  float z0[kLanes], z1[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    box_muller_float(static_cast<uint32_t>(c0[l]), static_cast<uint32_t>(c2[l]), z0[l], z1[l]);
  }
  for (int l = 0; l < kLanes; ++l) {
    o[2 * l] = convert<T>(mean + stdev * z0[l]);
    o[2 * l + 1] = convert<T>(mean + stdev * z1[l]);
  }
}

template <typename T>
void normal_range(const TensorDesc& out, const RandomArgs& a, PhiloxState s, int64_t b, int64_t e) {
  T* o = static_cast<T*>(out.data);
  const bool contig = out.is_contiguous();
  constexpr bool kFloat = !std::is_same_v<T, double>;
  const float mean = static_cast<float>(a.a), stdev = static_cast<float>(a.b);
  StridedWalker w(out, b);
  auto put = [&](int64_t i, double z) {
    T v;
    if constexpr (kFloat) {
      v = convert<T>(mean + stdev * static_cast<float>(z));  // as normal_block computes it
    } else {
      v = convert<T>(a.a + a.b * z);
    }
    if (contig) {
      o[i] = v;
    } else {
      o[w.offset()] = v;
      w.next();
    }
  };
  int64_t i = b;
  // whole blocks of 32 elements (from a multiple of 32) vectorised; the edges one pair at a time
  const int64_t block_end = kFloat && contig ? (e & ~int64_t{31}) : b;
  const int64_t block_begin = std::min(block_end, (b + 31) & ~int64_t{31});
  if constexpr (kFloat) {
    for (int64_t j = block_begin; j < block_end; j += 32) normal_block<T>(o + j, mean, stdev, s, static_cast<uint64_t>(j) >> 1);
  }
  while (i < e) {
    if (i == block_begin && block_begin < block_end) {
      i = block_end;
      continue;
    }
    const auto [z0, z1] = box_muller<T>(philox_draw(s, static_cast<uint64_t>(i) >> 1));
    if ((i & 1) == 0) {
      put(i++, z0);
      if (i < e) put(i++, z1);
    } else {
      put(i++, z1);
    }
  }
}

// The k-th Philox draw of element i's own sequence (rejection samplers): counter (i | k << 48, offset). Elements
// stay below 2^48; a loop past 2^16 draws (never met: acceptance is >= 0.7 per round) would reuse its sequence.
class ElementStream {
 public:
  ElementStream(const PhiloxState& s, uint64_t i) : s_(s), i_(i) {}
  double uniform() {  // [0, 1), 53 bits
    if (pos_ == 2) refill();
    const double u = u01(w_[2 * pos_], w_[2 * pos_ + 1]);
    ++pos_;
    return u;
  }
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2.0 * std::log(1.0 - uniform())), th = kTwoPi * uniform();
    spare_ = r * std::sin(th);
    has_spare_ = true;
    return r * std::cos(th);
  }

 private:
  void refill() {
    w_ = philox_draw(s_, i_ | static_cast<uint64_t>(k_++ & 0xffff) << 48);
    pos_ = 0;
  }
  PhiloxState s_;
  uint64_t i_;
  uint32_t k_ = 0;
  int pos_ = 2;
  std::array<uint32_t, 4> w_{};
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// ATen's sample_gamma (Marsaglia and Tsang 2000, doi:10.1145/358407.358414), in double.
double sample_gamma(double alpha, ElementStream& r) {
  if (std::isnan(alpha)) return alpha;  // (the loop below would never accept)
  double scale = 1.0;
  if (alpha < 1.0) {  // boost alpha for a higher acceptance probability
    if (alpha == 0.0) return 0.0;
    scale *= std::pow(1.0 - r.uniform(), 1.0 / alpha);
    alpha += 1.0;
  }
  const double d = alpha - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, y;
    do {
      x = r.normal();
      y = 1.0 + c * x;
    } while (y <= 0);
    const double v = y * y * y, u = 1.0 - r.uniform(), xx = x * x;
    if (u < 1.0 - 0.0331 * xx * xx) return scale * d * v;
    if (std::log(u) < 0.5 * xx + d * (1.0 - v + std::log(v))) return scale * d * v;
  }
}

// ATen's sample_poisson: the multiplication method below 10, transformed rejection (Hoermann 1993) from 10.
double sample_poisson(double lambda, ElementStream& r) {
  if (lambda >= 10) {
    const double slam = std::sqrt(lambda), loglam = std::log(lambda);
    const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
    const double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
    for (;;) {
      const double U = r.uniform() - 0.5, V = r.uniform(), us = 0.5 - std::fabs(U);
      const double k = std::floor((2 * a / us + b) * U + lambda + 0.43);
      if (us >= 0.07 && V <= vr) return k;
      if (k < 0 || (us < 0.013 && V > us)) continue;
      const double log_pk = -lambda + k * loglam - detail::lgamma_nosign(k + 1);
      if (std::log(V) + std::log(invalpha) - std::log(a / (us * us) + b) <= log_pk) return k;
    }
  }
  if (lambda == 0) return 0;
  const double enlam = std::exp(-lambda);
  double x = 0, prod = 1.0;
  for (;;) {
    prod *= r.uniform();
    if (prod > enlam) {
      x += 1;
    } else {
      return x;
    }
  }
}

// Binomial(count, prob) for 0 < prob <= 0.5, count >= 1 (an integer-valued double).
//   count * prob < 10: inversion by waiting times: the gaps between successes are geometric, ceil(log U /
//     log(1 - prob)); count the successes whose running sum of gaps stays within count.
//   else Hoermann's BTRS (transformed rejection with squeeze, 1993, doi:10.1080/00949659308811496): a
//     candidate k = floor((2a / us + b) u + c) from the hat, accepted at once inside the squeeze, else against
//     the exact log-ratio of the pmf to its mode's.
double sample_binomial_low(double count, double prob, ElementStream& r) {
  if (count * prob < 10) {
    const double log_q = std::log1p(-prob);
    double waited = 0, successes = 0;
    for (;;) {
      waited += std::max(1.0, std::ceil(std::log(1.0 - r.uniform()) / log_q));  // a gap is at least one trial
      if (waited > count) return successes;
      successes += 1;
    }
  }
  const double q = 1 - prob, spq = std::sqrt(count * prob * q);
  const double b = 1.15 + 2.53 * spq, a = -0.0873 + 0.0248 * b + 0.01 * prob, c = count * prob + 0.5;
  const double v_r = 0.92 - 4.2 / b, alpha = (2.83 + 5.1 / b) * spq, lpq = std::log(prob / q);
  const double m = std::floor((count + 1) * prob);
  const double h = detail::lgamma_nosign(m + 1) + detail::lgamma_nosign(count - m + 1);
  for (;;) {
    const double u = r.uniform() - 0.5, v = r.uniform(), us = 0.5 - std::fabs(u);
    const double k = std::floor((2 * a / us + b) * u + c);
    if (k < 0 || k > count) continue;
    if (us >= 0.07 && v <= v_r) return k;
    const double lhs = std::log(v * alpha / (a / (us * us) + b));
    if (lhs <= h - detail::lgamma_nosign(k + 1) - detail::lgamma_nosign(count - k + 1) + (k - m) * lpq) return k;
  }
}

// Binomial(count, prob) as CPU's binomial treats its edges: 0 for count <= 0 or prob <= 0, count for prob >= 1,
// NaN for a NaN prob; a NaN count is NaN too (CPU's sampler never returns there). count is floored.
double sample_binomial(double count, double prob, ElementStream& r) {
  if (std::isnan(count) || std::isnan(prob)) return std::numeric_limits<double>::quiet_NaN();
  count = std::floor(count);
  if (count <= 0 || prob <= 0) return 0;
  if (prob >= 1) return count;
  if (std::isinf(count)) return count;
  return prob <= 0.5 ? sample_binomial_low(count, prob, r) : count - sample_binomial_low(count, 1 - prob, r);
}

// out[i] = sample(in[i], in2[i], element i's stream) over a launch (in2 null: one input, sample(in[i], 0, ...));
// `what` names the kernel. The samplers are defined for floating dtypes: out and in each have one (out may be
// wider, as Dirichlet's double gamma draws of a float input), in2 has in's. Anything else is kInvalidValue, and
// only those 16 loops are instantiated.
template <typename Sample>
npu_sim::Status sample_each(npu_sim::Stream stream, const char* what, const TensorDesc& out, const TensorDesc& in,
                            const TensorDesc* in2, PhiloxState s, Sample sample) {
  const bool two = in2 != nullptr;
  const TensorDesc second = two ? *in2 : in;
  if (!is_floating(out.dtype) || !is_floating(in.dtype) || second.dtype != in.dtype) return npu_sim::Status::kInvalidValue;
  return parallel_for(stream, what, out.numel(), kGrain, [out, in, two, second, s, sample](
                                                             int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
    detail::record_vec(ctx, (e - b) * static_cast<int64_t>(dtype_size(in.dtype)) * (two ? 2 : 1),
                       (e - b) * static_cast<int64_t>(dtype_size(out.dtype)), (e - b) * 4 * kDrawOps);
    dispatch_dtype(out.dtype, [&](auto tag) {
      using T = decltype(tag);
      dispatch_dtype(in.dtype, [&](auto itag) {
        using I = decltype(itag);
        if constexpr (kFloating<T> && kFloating<I>) {
          T* o = static_cast<T*>(out.data);
          const I* x = static_cast<const I*>(in.data);
          const I* y = static_cast<const I*>(second.data);
          StridedWalker wo(out, b), wi(in, b), wj(second, b);
          for (int64_t i = b; i < e; ++i, wo.next(), wi.next(), wj.next()) {
            ElementStream r(s, static_cast<uint64_t>(i));
            const double yv = two ? convert<double>(y[wj.offset()]) : 0.0;
            o[wo.offset()] = convert<T>(sample(convert<double>(x[wi.offset()]), yv, r, T{}));
          }
        }
      });
    });
  });
}

}  // namespace

npu_sim::Status random_fill(npu_sim::Stream stream, const TensorDesc& out, const RandomArgs& args, PhiloxState s) {
  return parallel_for(stream, "random", out.numel(), kGrain, [out, args, s](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
    detail::record_vec(ctx, 0, (e - b) * static_cast<int64_t>(dtype_size(out.dtype)), (e - b) * kDrawOps);
    dispatch_dtype(out.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (is_complex_v<T>) {
        throw npu_sim::KernelError("random: complex tensors are not supported on npu");
      } else {
        if (args.kind == RandomKind::kNormal) {
          normal_range<T>(out, args, s, b, e);
          return;
        }
        T* o = static_cast<T*>(out.data);
        if (out.is_contiguous()) {
          for (int64_t i = b; i < e; ++i) o[i] = draw<T>(args, philox_draw(s, i));
          return;
        }
        StridedWalker w(out, b);
        for (int64_t i = b; i < e; ++i, w.next()) o[w.offset()] = draw<T>(args, philox_draw(s, i));
      }
    });
  });
}

npu_sim::Status bernoulli_tensor(npu_sim::Stream stream, const TensorDesc& out, const TensorDesc& p, PhiloxState s) {
  if (!is_floating(p.dtype)) return npu_sim::Status::kInvalidValue;  // CPU refuses integer probabilities
  return parallel_for(stream, "bernoulli_", out.numel(), kGrain, [out, p, s](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
    // the probability read and the result written per element
    detail::record_vec(ctx, (e - b) * static_cast<int64_t>(dtype_size(p.dtype)),
                       (e - b) * static_cast<int64_t>(dtype_size(out.dtype)), (e - b) * kDrawOps);
    dispatch_dtype(out.dtype, [&](auto tag) {
      using T = decltype(tag);
      dispatch_dtype(p.dtype, [&](auto ptag) {
        using P = decltype(ptag);
        if constexpr (is_complex_v<T>) {
          throw npu_sim::KernelError("bernoulli_(): complex tensors are not supported");
        } else if constexpr (kFloating<P>) {
          T* o = static_cast<T*>(out.data);
          const P* pp = static_cast<const P*>(p.data);
          StridedWalker wo(out, b), wp(p, b);
          for (int64_t i = b; i < e; ++i, wo.next(), wp.next()) {
            const double prob = convert<double>(pp[wp.offset()]);
            if (!(prob >= 0.0 && prob <= 1.0)) {
              throw npu_sim::KernelError("bernoulli_(): expected all probabilities in [0, 1], got " + std::to_string(prob));
            }
            const auto w = philox_draw(s, i);
            o[wo.offset()] = convert<T>(u01(w[0], w[1]) < prob ? 1 : 0);
          }
        }
      });
    });
  });
}

npu_sim::Status dropout(npu_sim::Stream stream, const TensorDesc& out, bool* mask, const TensorDesc& in, double p,
                        double scale, PhiloxState s) {
  return parallel_for(stream, "native_dropout", out.numel(), kGrain,
                      [out, mask, in, p, scale, s](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        // the input read, the output and the bool mask written per element; +1 op (scale)
                        detail::record_vec(ctx, (e - b) * static_cast<int64_t>(dtype_size(in.dtype)),
                                           (e - b) * (static_cast<int64_t>(dtype_size(out.dtype)) + 1),
                                           (e - b) * (kDrawOps + 1));
                        dispatch_dtype(out.dtype, [&](auto tag) {
                          using T = decltype(tag);
                          if constexpr (is_complex_v<T>) {
                            throw npu_sim::KernelError("native_dropout: complex tensors are not supported");
                          } else {
                            T* o = static_cast<T*>(out.data);
                            const T* x = static_cast<const T*>(in.data);
                            StridedWalker wo(out, b), wi(in, b);
                            for (int64_t i = b; i < e; ++i, wo.next(), wi.next()) {
                              const auto w = philox_draw(s, i);
                              const bool keep = u01(w[0], w[1]) >= p;
                              mask[i] = keep;
                              o[wo.offset()] = keep ? convert<T>(convert<double>(x[wi.offset()]) * scale) : convert<T>(0);
                            }
                          }
                        });
                      });
}

npu_sim::Status dropout_backward(npu_sim::Stream stream, const TensorDesc& out, const TensorDesc& grad,
                                 const TensorDesc& mask, double scale) {
  return parallel_for(stream, "native_dropout_backward", out.numel(), kGrain,
                      [out, grad, mask, scale](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        // no draws: grad and the bool mask read, the output written; 1 op (select-scale)
                        detail::record_vec(ctx, (e - b) * (static_cast<int64_t>(dtype_size(grad.dtype)) + 1),
                                           (e - b) * static_cast<int64_t>(dtype_size(out.dtype)), e - b);
                        dispatch_dtype(out.dtype, [&](auto tag) {
                          using T = decltype(tag);
                          if constexpr (is_complex_v<T>) {
                            throw npu_sim::KernelError("native_dropout_backward: complex tensors are not supported");
                          } else {
                            T* o = static_cast<T*>(out.data);
                            const T* g = static_cast<const T*>(grad.data);
                            const bool* m = static_cast<const bool*>(mask.data);
                            StridedWalker wo(out, b), wg(grad, b), wm(mask, b);
                            for (int64_t i = b; i < e; ++i, wo.next(), wg.next(), wm.next()) {
                              o[wo.offset()] =
                                  m[wm.offset()] ? convert<T>(convert<double>(g[wg.offset()]) * scale) : convert<T>(0);
                            }
                          }
                        });
                      });
}

npu_sim::Status multinomial(npu_sim::Stream stream, const TensorDesc& probs, int64_t* out, int64_t n,
                            bool replacement, PhiloxState s) {
  const int64_t rows = probs.sizes[0];
  return parallel_for(stream, "multinomial", rows, 1, [probs, out, n, replacement, s](int64_t b, int64_t e,
                                                                                     const npu_sim::BlockContext& ctx) {
    const int64_t cats = probs.sizes[1];
    // per row its cats probabilities read once (into a local buffer), n int64 samples written; per sample a
    // draw and a cumulative sum over the categories
    detail::record_vec(ctx, (e - b) * cats * static_cast<int64_t>(dtype_size(probs.dtype)), (e - b) * n * 8,
                       (e - b) * n * (kDrawOps + cats));
    std::vector<double> w(cats), cdf(cats);
    for (int64_t r = b; r < e; ++r) {
      dispatch_dtype(probs.dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (is_complex_v<T>) {
          throw npu_sim::KernelError("multinomial: complex probabilities");
        } else {
          const T* p = static_cast<const T*>(probs.data);
          for (int64_t c = 0; c < cats; ++c) w[c] = convert<double>(p[r * probs.strides[0] + c * probs.strides[1]]);
        }
      });
      int64_t positive = 0;
      for (int64_t c = 0; c < cats; ++c) {
        if (!(w[c] >= 0.0) || std::isinf(w[c])) throw npu_sim::KernelError("multinomial(): probability tensor contains either `inf`, `nan` or element < 0");
        positive += w[c] > 0.0;
      }
      if (positive == 0) throw npu_sim::KernelError("multinomial(): invalid multinomial distribution (sum of probabilities <= 0)");
      if (!replacement && positive < n) {
        throw npu_sim::KernelError("multinomial(): cannot sample n_sample > prob_dist.size(-1) samples without replacement");
      }
      for (int64_t j = 0; j < n; ++j) {
        double total = 0.0;
        for (int64_t c = 0; c < cats; ++c) cdf[c] = (total += w[c]);
        const auto bits = philox_draw(s, static_cast<uint64_t>(r * n + j));
        const double u = u01(bits[0], bits[1]) * total;
        int64_t pick = std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
        pick = std::min(pick, cats - 1);
        while (w[pick] == 0.0 && pick > 0) --pick;  // never land on a zero-weight category
        out[r * n + j] = pick;
        if (!replacement) w[pick] = 0.0;
      }
    }
  });
}

npu_sim::Status randperm(npu_sim::Stream stream, const TensorDesc& out, PhiloxState s) {
  return npu_sim::launch_kernel(stream, "randperm", 1, [out, s](const npu_sim::BlockContext& ctx) {
    const int64_t n = out.numel();
    // the shuffle is block-local; the permutation written once, a draw per element
    detail::record_vec(ctx, 0, n * static_cast<int64_t>(dtype_size(out.dtype)), n * kDrawOps);
    std::vector<int64_t> perm(n);
    for (int64_t i = 0; i < n; ++i) perm[i] = i;
    for (int64_t i = n - 1; i > 0; --i) {
      const auto w = philox_draw(s, static_cast<uint64_t>(i));
      const uint64_t x = static_cast<uint64_t>(w[1]) << 32 | w[0];
      std::swap(perm[i], perm[static_cast<int64_t>(x % static_cast<uint64_t>(i + 1))]);
    }
    dispatch_dtype(out.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* o = static_cast<T*>(out.data);
      StridedWalker w(out, 0);
      for (int64_t i = 0; i < n; ++i, w.next()) o[w.offset()] = convert<T>(perm[i]);
    });
  });
}

npu_sim::Status arange(npu_sim::Stream stream, const TensorDesc& out, double start, double step, int64_t istart,
                       int64_t istep) {
  return parallel_for(stream, "arange", out.numel(), kGrain * 4,
                      [out, start, step, istart, istep](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        // writes only; 2 ops (multiply-add) per element
                        detail::record_vec(ctx, 0, (e - b) * static_cast<int64_t>(dtype_size(out.dtype)), 2 * (e - b));
                        dispatch_dtype(out.dtype, [&](auto tag) {
                          using T = decltype(tag);
                          T* o = static_cast<T*>(out.data);
                          StridedWalker w(out, b);
                          for (int64_t i = b; i < e; ++i, w.next()) {
                            if constexpr (std::is_integral_v<T>) {
                              o[w.offset()] = convert<T>(istart + i * istep);
                            } else {
                              o[w.offset()] = convert<T>(start + static_cast<double>(i) * step);
                            }
                          }
                        });
                      });
}

namespace {

// Element i of ATen's linspace (CPU's scalar path, CUDA's kernel): symmetric from both ends; a floating type steps
// in its own arithmetic (fp16 / bf16 rounding after every operation, as c10::Half / c10::BFloat16 do, the index
// converted to the type first), an integer type in double, truncated.
template <typename T>
T linspace_at(double start, double end, int64_t steps, int64_t i) {
  const int64_t half = steps / 2;
  if constexpr (std::is_integral_v<T>) {
    const double step = (end - start) / static_cast<double>(steps - 1);
    return static_cast<T>(i < half ? start + step * static_cast<double>(i)
                                   : end - step * static_cast<double>(steps - i - 1));
  } else if constexpr (is_reduced_float_v<T>) {
    auto r = [](float x) { return static_cast<float>(T(x)); };  // one c10 operation's rounding
    const float s = r(static_cast<float>(start)), e = r(static_cast<float>(end));
    const float step = r(r(e - s) / r(static_cast<float>(steps - 1)));
    return i < half ? T(s + r(step * r(static_cast<float>(i))))
                    : T(e - r(step * r(static_cast<float>(steps - i - 1))));
  } else if constexpr (is_complex_v<T>) {
    using R = typename T::value_type;
    return T(linspace_at<R>(start, end, steps, i), R(0));
  } else {
    const T s = static_cast<T>(start), e = static_cast<T>(end);
    const T step = (e - s) / static_cast<T>(steps - 1);
    return i < half ? s + step * static_cast<T>(i) : e - step * static_cast<T>(steps - i - 1);
  }
}

// Element i of CPU's logspace: the step in double from the typed ends' difference (taken in the type, which C++
// promotes: uint8 1 -> 0 is -1 in int, not 255; int32 and int64 wrap), base ** (start + step * i) in double.
template <typename R>
double typed_difference(double end, double start) {
  if constexpr (std::is_integral_v<R>) {
    using P = decltype(R() - R());
    return static_cast<double>(static_cast<P>(static_cast<uint64_t>(static_cast<int64_t>(static_cast<R>(end))) -
                                              static_cast<uint64_t>(static_cast<int64_t>(static_cast<R>(start)))));
  } else {
    return static_cast<double>(static_cast<R>(static_cast<R>(end) - static_cast<R>(start)));
  }
}

template <typename T>
T logspace_at(double start, double end, int64_t steps, int64_t i, double base) {
  using R = std::conditional_t<is_complex_v<T>, double, T>;
  const double diff = typed_difference<R>(end, start);
  const double step = diff / static_cast<double>(steps - 1);
  const int64_t half = steps / 2;
  const double x = i < half ? start + step * static_cast<double>(i) : end - step * static_cast<double>(steps - i - 1);
  return convert<T>(std::pow(base, x));
}

}  // namespace

npu_sim::Status linspace(npu_sim::Stream stream, const TensorDesc& out, double start, double end, bool log,
                         double base) {
  const int64_t steps = out.numel();
  return parallel_for(stream, log ? "logspace" : "linspace", steps, kGrain * 4,
                      [out, start, end, log, base, steps](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        // writes only; 2 ops (multiply-add) per element, 3 with logspace's pow
                        detail::record_vec(ctx, 0, (e - b) * static_cast<int64_t>(dtype_size(out.dtype)),
                                           (log ? 3 : 2) * (e - b));
                        dispatch_dtype(out.dtype, [&](auto tag) {
                          using T = decltype(tag);
                          T* o = static_cast<T*>(out.data);
                          StridedWalker w(out, b);
                          for (int64_t i = b; i < e; ++i, w.next()) {
                            if (steps == 1) {  // ATen fills start (bool included)
                              o[w.offset()] = convert<T>(log ? std::pow(base, start) : start);
                            } else if constexpr (!std::is_same_v<T, bool>) {
                              o[w.offset()] = log ? logspace_at<T>(start, end, steps, i, base)
                                                  : linspace_at<T>(start, end, steps, i);
                            }
                          }
                        });
                      });
}

npu_sim::Status eye(npu_sim::Stream stream, const TensorDesc& out) {
  return parallel_for(stream, "eye", out.numel(), kGrain * 4, [out](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
    // writes only; 1 op (the compare) per element
    detail::record_vec(ctx, 0, (e - b) * static_cast<int64_t>(dtype_size(out.dtype)), e - b);
    const int64_t cols = out.sizes[1];
    dispatch_dtype(out.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* o = static_cast<T*>(out.data);
      StridedWalker w(out, b);
      for (int64_t i = b; i < e; ++i, w.next()) o[w.offset()] = convert<T>((i / cols == i % cols) ? 1 : 0);
    });
  });
}

npu_sim::Status triangle_indices(npu_sim::Stream stream, const TensorDesc& out, int64_t rows, int64_t cols,
                                 int64_t offset, bool upper) {
  // One block: a row-major walk; row r's columns are [0, r + offset] (lower) or [r + offset, cols) (upper).
  return npu_sim::launch_kernel(stream, upper ? "triu_indices" : "tril_indices", 1,
                                [=](const npu_sim::BlockContext& ctx) {
    int64_t pairs = 0;
    dispatch_dtype(out.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* o = static_cast<T*>(out.data);
      const int64_t n = out.sizes[1], s0 = out.strides[0], s1 = out.strides[1];
      int64_t k = 0;
      for (int64_t r = 0; r < rows && k < n; ++r) {
        const int64_t begin = upper ? std::max<int64_t>(0, r + offset) : 0;
        const int64_t end = upper ? cols : std::min<int64_t>(cols, std::max<int64_t>(0, r + offset + 1));
        for (int64_t c = begin; c < end && k < n; ++c, ++k) {
          o[k * s1] = convert<T>(r);
          o[s0 + k * s1] = convert<T>(c);
        }
      }
      pairs = k;
    });
    // writes only: a (row, column) pair per index; 1 op per pair
    detail::record_vec(ctx, 0, 2 * pairs * static_cast<int64_t>(dtype_size(out.dtype)), pairs);
  });
}

npu_sim::Status standard_gamma(npu_sim::Stream stream, const TensorDesc& out, const TensorDesc& alpha, PhiloxState s) {
  return sample_each(stream, "standard_gamma", out, alpha, nullptr, s, [](double a, double, ElementStream& r, auto tag) {
    using T = decltype(tag);
    // CPU raises results below the smallest normal of the dtype to it (a 0 would break Dirichlet's normalisation)
    double tiny = 0;
    if constexpr (std::is_same_v<T, double>) {
      tiny = std::numeric_limits<double>::min();
    } else if constexpr (std::is_same_v<T, Half>) {
      tiny = 0x1p-14;
    } else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, BFloat16>) {
      tiny = std::numeric_limits<float>::min();
    }
    const double g = sample_gamma(a, r);
    return std::isnan(g) ? g : std::max(tiny, g);
  });
}

npu_sim::Status poisson(npu_sim::Stream stream, const TensorDesc& out, const TensorDesc& rate, PhiloxState s) {
  return sample_each(stream, "poisson", out, rate, nullptr, s, [](double lambda, double, ElementStream& r, auto) {
    if (!(lambda >= 0)) {
      throw npu_sim::KernelError("poisson: invalid Poisson rate, expected rate to be non-negative, got " +
                                 std::to_string(lambda));
    }
    return sample_poisson(lambda, r);
  });
}

npu_sim::Status binomial(npu_sim::Stream stream, const TensorDesc& out, const TensorDesc& count,
                         const TensorDesc& prob, PhiloxState s) {
  return sample_each(stream, "binomial", out, count, &prob, s,
                     [](double n, double p, ElementStream& r, auto) { return sample_binomial(n, p, r); });
}

}  // namespace npu_kernels
