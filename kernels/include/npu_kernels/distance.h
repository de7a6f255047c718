// Pairwise p-norm distances (torch-free): cdist between two batched row sets and pdist within one row set, forward
// and backward, with the semantics of ATen's CPU kernels (ATen/native/cpu/DistanceOpsKernel.cpp).
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// The p of every call selects the norm as CPU does: 0 (count of differing coordinates), 1, 2, +inf (largest
// |difference|), any other p >= 0 (general: (sum |d|^p)^(1/p)). The forward picks it from p rounded to dtype, the
// backward from p itself (CPU's order); the arithmetic runs in dtype. Only kFloat32 and kFloat64 (CPU's kernels).
struct CdistArgs {
  DType dtype = DType::kFloat32;
  int64_t batch = 1, r1 = 0, r2 = 0, m = 0;  // x1 (batch, r1, m), x2 (batch, r2, m), both contiguous
  double p = 2.0;
};

// out (batch, r1, r2), contiguous: out[b, i, j] = || x1[b, i] - x2[b, j] ||_p, each sum taken over the m
// coordinates in order (as CPU's scalar loop, so values match it). The inf norm ignores NaN differences, as CPU's
// std::max does. m == 0 gives zeros. kInvalidValue for another dtype, negative sizes or null pointers.
npu_sim::Status cdist_forward(npu_sim::Stream stream, const CdistArgs& a, const void* x1, const void* x2, void* out);

// grad_x1 (batch, r1, m), contiguous and fully written: sum over j of the norm's derivative at x1[b, i] - x2[b, j],
// scaled by grad[b, i, j]; grad and dist (the forward's result) are (batch, r1, r2), contiguous. CPU's subgradients
// where dist is 0 (0 for p = 2 and general p, 0 for p < 1 at a zero coordinate, sign(0) = 0 for p = 1 and inf);
// p = 0 gives zeros. The gradient of x2 is this call with the operands swapped and grad, dist transposed.
npu_sim::Status cdist_backward(npu_sim::Stream stream, const CdistArgs& a, const void* grad, const void* x1,
                               const void* x2, const void* dist, void* grad_x1);

struct PdistArgs {
  DType dtype = DType::kFloat32;
  int64_t n = 0, m = 0;  // x (n, m), contiguous
  double p = 2.0;
};

// Number of pairs i < j of n rows: n (n - 1) / 2 (0 for n < 2).
int64_t pdist_pairs(int64_t n);

// out (pdist_pairs(n)): the distances of the rows i < j in row-major order of (i, j). The inf norm propagates NaN
// (CPU's vectorised max). Errors as cdist_forward's.
npu_sim::Status pdist_forward(npu_sim::Stream stream, const PdistArgs& a, const void* x, void* out);

// grad_x (n, m), contiguous and fully written: row r gets, in CPU's order, minus the pair terms of (i, r) for i < r,
// then plus those of (r, j) for j > r, each the norm's derivative at x[i] - x[j] scaled by grad[k] (grad and dist
// are pdist_pairs(n) long, contiguous). Subgradients as cdist_backward's.
npu_sim::Status pdist_backward(npu_sim::Stream stream, const PdistArgs& a, const void* grad, const void* x,
                               const void* dist, void* grad_x);

}  // namespace npu_kernels
