// Counter-based random numbers (torch-free): Philox-4x32-10 and the distribution kernels built on it,
// plus the deterministic range factories (arange, linspace/logspace, eye, tril/triu_indices).
//
// Counter layout: element i of a launch draws philox(counter = (i, offset), key = seed), i.e. 4 fresh
// 32-bit words per element (normal_: elements 2m and 2m+1 share draw m, the two Box-Muller outputs; the
// rejection samplers: counter (i | k << 48, offset) for element i's k-th draw);
// a launch reserves its `offset` from the device generator
// (philox_engine_inputs), so two launches never share a counter and a (seed, offset) pair replays
// exactly, whatever the grid.
#pragma once

#include <array>
#include <cstdint>

#include "npu_kernels/tensor_desc.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// Philox-4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
inline std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * ctr[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * ctr[2];
    ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<uint32_t>(p0)};
    key[0] += kW0;
    key[1] += kW1;
  }
  return ctr;
}

struct PhiloxState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

// The 4 words for element `i` of a launch using `s`.
inline std::array<uint32_t, 4> philox_draw(const PhiloxState& s, uint64_t i) {
  return philox4x32_10({static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), static_cast<uint32_t>(s.offset),
                        static_cast<uint32_t>(s.offset >> 32)},
                       {static_cast<uint32_t>(s.seed), static_cast<uint32_t>(s.seed >> 32)});
}

enum class RandomKind {
  kUniform,      // [a, b)
  kNormal,       // mean a, std b (Box-Muller)
  kBernoulli,    // 1 with probability a
  kFromTo,       // integers in [from, from + range) : ifrom, urange
  kExponential,  // rate a
  kLogNormal,    // exp(normal(a, b))
  kGeometric,    // trials until the first success, success probability a (values 1, 2, ...)
  kCauchy,       // median a, scale b
};

struct RandomArgs {
  RandomKind kind = RandomKind::kUniform;
  double a = 0.0, b = 1.0;
  int64_t ifrom = 0;
  uint64_t urange = 0;  // 0 means the full 64-bit range
};

// out[...] = a draw of `args` for every element (any real dtype or bool, strided).
npu_sim::Status random_fill(npu_sim::Stream stream, const TensorDesc& out, const RandomArgs& args, PhiloxState s);
// out[p] = (u < p[p]) for tensor probabilities p (same sizes; broadcast by stride 0). Values of p outside
// [0, 1] raise KernelError("bernoulli_(): ...").
npu_sim::Status bernoulli_tensor(npu_sim::Stream stream, const TensorDesc& out, const TensorDesc& p, PhiloxState s);
// Fused dropout: mask = u >= p (bool, contiguous), out = in * mask * scale (in/out same sizes).
npu_sim::Status dropout(npu_sim::Stream stream, const TensorDesc& out, bool* mask, const TensorDesc& in, double p,
                        double scale, PhiloxState s);
// out = grad * mask * scale.
npu_sim::Status dropout_backward(npu_sim::Stream stream, const TensorDesc& out, const TensorDesc& grad,
                                 const TensorDesc& mask, double scale);
// Rows of `probs` (rows x categories, non-negative weights) -> `n` int64 samples per row into out
// (rows x n, contiguous), with or without replacement.
npu_sim::Status multinomial(npu_sim::Stream stream, const TensorDesc& probs, int64_t* out, int64_t n,
                            bool replacement, PhiloxState s);
// Rejection samplers (ATen's algorithms, so the distributions match CPU's): element i of `out` draws from its own
// Philox sequence, counter (i | k << 48, offset) for its k-th draw, as many as its loop needs. `in` has out's
// sizes (its dtype may differ); both real floating.
//   standard_gamma: Gamma(alpha = in, 1) by Marsaglia and Tsang, boosted below alpha = 1; 0 for alpha = 0 and
//     NaN for NaN; results below the dtype's smallest normal are raised to it (as CPU).
//   poisson: Poisson(rate = in): the multiplication method below 10, Hoermann's transformed rejection from 10;
//     a negative or NaN rate raises KernelError("poisson: invalid Poisson rate ...").
npu_sim::Status standard_gamma(npu_sim::Stream stream, const TensorDesc& out, const TensorDesc& alpha, PhiloxState s);
npu_sim::Status poisson(npu_sim::Stream stream, const TensorDesc& out, const TensorDesc& rate, PhiloxState s);
//   binomial: Binomial(count = in, prob = in2) (in2 with in's dtype and out's sizes): inversion by geometric
//     waiting times below count * prob = 10, Hoermann's BTRS from 10, by symmetry for prob > 0.5; 0 for
//     count <= 0 or prob <= 0, count for prob >= 1, NaN for a NaN count or prob.
npu_sim::Status binomial(npu_sim::Stream stream, const TensorDesc& out, const TensorDesc& count,
                         const TensorDesc& prob, PhiloxState s);
// A uniformly random permutation of [0, n) (Fisher-Yates in one block) into out (n elements, any dtype).
npu_sim::Status randperm(npu_sim::Stream stream, const TensorDesc& out, PhiloxState s);

// out[i] = start + i * step (integral: exact int64 arithmetic with istart/istep).
npu_sim::Status arange(npu_sim::Stream stream, const TensorDesc& out, double start, double step, int64_t istart,
                       int64_t istep);
// out[i] = linspace(start, end, steps)[i] with ATen's arithmetic in out's dtype (symmetric from both ends; start and
// end already converted to that dtype by the caller, as Scalar::to does); log: CPU's logspace, base ** the exponent
// stepped in double. bool outputs are not written (ATen has no bool linspace).
npu_sim::Status linspace(npu_sim::Stream stream, const TensorDesc& out, double start, double end, bool log,
                         double base);
// out (2-D) = identity.
npu_sim::Status eye(npu_sim::Stream stream, const TensorDesc& out);
// out (2 x n) = the (row, column) coordinates of the lower (upper) triangle of a rows x cols matrix,
// diagonal `offset`, in row-major order; n = out.sizes[1] is that triangle's size (the adapter's count).
npu_sim::Status triangle_indices(npu_sim::Stream stream, const TensorDesc& out, int64_t rows, int64_t cols,
                                 int64_t offset, bool upper);

}  // namespace npu_kernels
