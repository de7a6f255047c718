// Batched dense linear algebra on device memory (torch-free): LAPACK as shipped with OpenBLAS, one LAPACK call
// per matrix, the batch split over AI-core blocks on the device stream.
#pragma once

#include <cstdint>
#include <vector>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels::linalg {

// One operand of a batched call: matrix (or vector) i of the batch starts `offsets[i]` elements after `base`.
// Matrices are column-major with leading dimension `ld` (LAPACK's layout). Offsets may repeat (a broadcast
// batch) when the operand is only read. Every operand of a call has the same number of offsets.
struct Batch {
  void* base = nullptr;
  std::vector<int64_t> offsets;
  int64_t ld = 1;
};

// True when OpenBLAS's LAPACK is loaded; without it every call returns kNotSupported.
bool available();

// Each call takes the matrices' dtype (kFloat32, kFloat64, kComplex64 or kComplex128; anything else is
// kInvalidValue) and returns the launch status. `info` operands are int32, one per matrix, LAPACK's value
// (0, or > 0 for a numerical failure such as a singular or non-positive-definite matrix). Pivots are int32,
// 1-based (LAPACK's); `rank` is int64; eigen- and singular values are of the real type of dtype.
using npu_sim::Status;
using npu_sim::Stream;

Status lu_factor(Stream s, DType dt, int64_t m, int64_t n, const Batch& a, const Batch& pivots, const Batch& info);
// Pivots outside [1, n] fail the kernel with PyTorch's message (LAPACK would write out of bounds).
Status lu_solve(Stream s, DType dt, char trans, int64_t n, int64_t nrhs, const Batch& lu, const Batch& pivots,
                const Batch& b);
// B := op(A)^-1 B (side 'L') or B op(A)^-1 (side 'R'), A m x m (or n x n) triangular.
Status triangular_solve(Stream s, DType dt, char side, char uplo, char trans, char diag, int64_t m, int64_t n,
                        const Batch& a, const Batch& b);
Status cholesky(Stream s, DType dt, char uplo, int64_t n, const Batch& a, const Batch& info);
Status cholesky_inverse(Stream s, DType dt, char uplo, int64_t n, const Batch& a, const Batch& info);
Status cholesky_solve(Stream s, DType dt, char uplo, int64_t n, int64_t nrhs, const Batch& a, const Batch& b,
                      const Batch& info);
Status geqrf(Stream s, DType dt, int64_t m, int64_t n, const Batch& a, const Batch& tau);
// The first n columns of Q (m x n) from k reflectors, in place of a.
Status orgqr(Stream s, DType dt, int64_t m, int64_t n, int64_t k, const Batch& a, const Batch& tau);
// C := op(Q) C or C op(Q), trans 'N', 'T' (real) or 'C' (complex); C is m x n, Q from k reflectors.
Status ormqr(Stream s, DType dt, char side, char trans, int64_t m, int64_t n, int64_t k, const Batch& a,
             const Batch& tau, const Batch& c);
// Eigenvalues (ascending) into w; with `vectors` the eigenvectors replace a.
Status eigh(Stream s, DType dt, char uplo, bool vectors, int64_t n, const Batch& a, const Batch& w,
            const Batch& info);
// gesdd: jobz 'N' (values only), 'S' (reduced) or 'A' (full); a is destroyed.
Status svd(Stream s, DType dt, char jobz, int64_t m, int64_t n, const Batch& a, const Batch& sv, const Batch& u,
           const Batch& vt, const Batch& info);
// driver: 'gels', 'gelsy', 'gelsd' or 'gelss' (by its last letters: 's', 'y', 'd', 'S'); b is max(m, n) x nrhs.
enum class LstsqDriver { kGels, kGelsy, kGelsd, kGelss };
Status lstsq(Stream s, DType dt, LstsqDriver driver, int64_t m, int64_t n, int64_t nrhs, double rcond,
             const Batch& a, const Batch& b, const Batch& rank, const Batch& sv, const Batch& info);
// Bunch-Kaufman LDL^T (sytrf) or LDL^H (hetrf) and its solve.
Status ldl_factor(Stream s, DType dt, char uplo, bool hermitian, int64_t n, const Batch& a, const Batch& pivots,
                  const Batch& info);
Status ldl_solve(Stream s, DType dt, char uplo, bool hermitian, int64_t n, int64_t nrhs, const Batch& a,
                 const Batch& pivots, const Batch& b);

// lu_unpack's permutations: for each pair i, applies the row swaps of pivots[i] (int32, 1-based, dim_size of them)
// to perm[i] (int64). A pivot outside [1, max_pivot] fails the kernel with PyTorch's message, touching nothing.
Status unpack_pivots(Stream s, int64_t dim_size, int64_t max_pivot, const Batch& perm, const Batch& pivots);

}  // namespace npu_kernels::linalg
