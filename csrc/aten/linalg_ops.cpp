// Linear algebra on npu: libtorch's own linalg algorithms (meta checks, layouts, error reporting) run for npu
// tensors, and their LAPACK steps (ATen's dispatch stubs: lu_factor_stub, svd_stub, ...) are registered for
// PrivateUse1 here: each launches the batched LAPACK kernel of kernels/linalg on the tensor's stream.
#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/BatchLinearAlgebra.h>
#include <ATen/native/Cross.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/ops/_linalg_det_native.h>
#include <ATen/ops/_linalg_eigh_native.h>
#include <ATen/ops/_linalg_slogdet_native.h>
#include <ATen/ops/_linalg_solve_ex_native.h>
#include <ATen/ops/_linalg_svd_native.h>
#include <ATen/ops/_linalg_eigvals.h>
#include <ATen/ops/linalg_cholesky_ex_native.h>
#include <ATen/ops/linalg_cross_native.h>
#include <ATen/ops/linalg_eig.h>
#include <ATen/ops/linalg_inv_ex_native.h>
#include <ATen/ops/linalg_ldl_factor_ex_native.h>
#include <ATen/ops/linalg_ldl_solve_native.h>
#include <ATen/ops/linalg_lu_factor_ex_native.h>
#include <ATen/ops/linalg_lu_native.h>
#include <ATen/ops/linalg_lu_solve_native.h>
#include <ATen/ops/linalg_qr_native.h>
#include <ATen/ops/lu_unpack_native.h>
#include <ATen/ops/triangular_solve_native.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/linalg_solve.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/nan_to_num.h>
#include <ATen/ops/where.h>
#include <ATen/ops/exp2.h>
#include <ATen/ops/log2.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/linalg_solve_triangular_native.h>

#include <array>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "aten/npu_tensor.h"
#include "aten/structured.h"
#include "npu_kernels/linalg.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
using T = at::Tensor;
namespace la = npu_kernels::linalg;

namespace {

npu_kernels::DType lapack_dtype(const T& t, const char* op) {
  switch (t.scalar_type()) {
    case at::kFloat: return npu_kernels::DType::kFloat32;
    case at::kDouble: return npu_kernels::DType::kFloat64;
    case at::kComplexFloat: return npu_kernels::DType::kComplex64;
    case at::kComplexDouble: return npu_kernels::DType::kComplex128;
    default: TORCH_CHECK(false, op, ": not implemented for '", t.scalar_type(), "' on npu (float, double, cfloat, cdouble)");
  }
}

// The operand view of `t` for a batched LAPACK call: its last `inner` dims are one item (a column-major matrix
// for inner 2, a contiguous vector for 1, a scalar for 0); the dims before are the batch, any strides
// (broadcast batches included).
la::Batch operand(const T& t, int64_t inner) {
  la::Batch b;
  if (!t.defined()) return b;
  TORCH_INTERNAL_ASSERT(is_npu(t), "linalg: an npu LAPACK operand is on ", t.device());
  b.base = t.data_ptr();
  const int64_t batch_dims = t.dim() - inner;
  if (inner == 2) {
    // (an empty operand is never read: any strides)
    TORCH_INTERNAL_ASSERT(t.numel() == 0 || t.size(-2) <= 1 || t.stride(-2) == 1,
                          "linalg: npu LAPACK operand is not column-major: sizes ", t.sizes(), " strides ", t.strides());
    b.ld = t.size(-1) <= 1 || t.numel() == 0 ? std::max<int64_t>(1, t.size(-2)) : t.stride(-1);
  } else if (inner == 1) {
    TORCH_INTERNAL_ASSERT(t.numel() == 0 || t.size(-1) <= 1 || t.stride(-1) == 1,
                          "linalg: npu LAPACK vector operand is strided");
  }
  int64_t count = 1;
  for (int64_t d = 0; d < batch_dims; ++d) count *= t.size(d);
  b.offsets.resize(static_cast<std::size_t>(count));
  std::vector<int64_t> idx(static_cast<std::size_t>(std::max<int64_t>(batch_dims, 0)), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < count; ++i) {
    b.offsets[static_cast<std::size_t>(i)] = off;
    for (int64_t d = batch_dims - 1; d >= 0; --d) {  // row-major increment, as batchCount orders matrices
      auto& k = idx[static_cast<std::size_t>(d)];
      off += t.stride(d);
      if (++k < t.size(d)) break;
      off -= t.stride(d) * k;
      k = 0;
    }
  }
  return b;
}

// `t` broadcast over the batch dims of `like` (its own last `inner` dims kept).
T broadcast_batch(const T& t, const T& like, int64_t inner_t, int64_t inner_like) {
  std::vector<int64_t> sizes(like.sizes().begin(), like.sizes().end() - inner_like);
  sizes.insert(sizes.end(), t.sizes().end() - inner_t, t.sizes().end());
  return t.expand(sizes);
}

void launched(npu_sim::Status s, const char* op) {
  TORCH_CHECK(s == npu_sim::Status::kSuccess, op, ": npu LAPACK launch failed: ", npu_sim::status_name(s), " ",
              npu_sim::last_error_message());
}

char blas_trans(at::native::TransposeType t) {
  switch (t) {
    case at::native::TransposeType::NoTranspose: return 'N';
    case at::native::TransposeType::Transpose: return 'T';
    default: return 'C';
  }
}

// ---- the dispatch stubs ------------------------------------------------------------------------------------

void lu_factor_npu(const T& input, const T& pivots, const T& infos, bool compute_pivots) {
  TORCH_CHECK(compute_pivots, "linalg.lu_factor: LU without pivoting is not implemented on npu");
  launched(la::lu_factor(stream_of(input), lapack_dtype(input, "linalg.lu_factor"), input.size(-2), input.size(-1),
                         operand(input, 2), operand(pivots, 1), operand(infos, 0)),
           "linalg.lu_factor");
}

void lu_solve_npu(const T& LU, const T& pivots, const T& B, at::native::TransposeType trans) {
  const T lu = broadcast_batch(LU, B, 2, 2), piv = broadcast_batch(pivots, B, 1, 2);
  launched(la::lu_solve(stream_of(B), lapack_dtype(B, "linalg.lu_solve"), blas_trans(trans), B.size(-2), B.size(-1),
                        operand(lu, 2), operand(piv, 1), operand(B, 2)),
           "linalg.lu_solve");
}

void triangular_solve_npu(const T& A, const T& B, bool left, bool upper, at::native::TransposeType transpose,
                          bool unitriangular) {
  // libtorch may hand over a row-major A with the flags already set for reading its memory column-major (A^T,
  // the other triangle, transposed): that memory is A.mT() as a column-major matrix.
  const bool row_major = A.size(-1) > 1 && A.stride(-1) == 1 && A.stride(-2) != 1;
  const T a = broadcast_batch(row_major ? A.mT() : A, B, 2, 2);
  launched(la::triangular_solve(stream_of(B), lapack_dtype(B, "triangular_solve"), left ? 'L' : 'R', upper ? 'U' : 'L',
                                blas_trans(transpose), unitriangular ? 'U' : 'N', B.size(-2), B.size(-1),
                                operand(a, 2), operand(B, 2)),
           "triangular_solve");
}

void cholesky_npu(const T& input, const T& info, bool upper) {
  launched(la::cholesky(stream_of(input), lapack_dtype(input, "linalg.cholesky"), upper ? 'U' : 'L', input.size(-1),
                        operand(input, 2), operand(info, 0)),
           "linalg.cholesky");
}

T& cholesky_inverse_npu(T& result, T& infos, bool upper) {
  // libtorch hands this stub a CPU `infos` (it checks them right after): the kernel writes a device copy, and
  // copying it back waits for the kernel.
  const T dev_infos = is_npu(infos) ? infos : at::zeros(infos.sizes(), infos.options().device(result.device()));
  launched(la::cholesky_inverse(stream_of(result), lapack_dtype(result, "cholesky_inverse"), upper ? 'U' : 'L',
                                result.size(-1), operand(result, 2), operand(dev_infos, 0)),
           "cholesky_inverse");
  if (!is_npu(infos)) infos.copy_(dev_infos);
  return result;
}

void geqrf_npu(const T& input, const T& tau) {
  launched(la::geqrf(stream_of(input), lapack_dtype(input, "geqrf"), input.size(-2), input.size(-1),
                     operand(input, 2), operand(tau, 1)),
           "geqrf");
}

T& orgqr_npu(T& result, const T& tau) {
  launched(la::orgqr(stream_of(result), lapack_dtype(result, "linalg.householder_product"), result.size(-2),
                     result.size(-1), tau.size(-1), operand(result, 2), operand(tau, 1)),
           "linalg.householder_product");
  return result;
}

void ormqr_npu(const T& input, const T& tau, const T& other, bool left, bool transpose) {
  const T a = broadcast_batch(input, other, 2, 2), t = broadcast_batch(tau, other, 1, 2);
  launched(la::ormqr(stream_of(other), lapack_dtype(other, "ormqr"), left ? 'L' : 'R', transpose ? 'C' : 'N',
                     other.size(-2), other.size(-1), tau.size(-1), operand(a, 2), operand(t, 1), operand(other, 2)),
           "ormqr");
}

void eigh_npu(const T& values, const T& vectors, const T& infos, bool upper, bool compute_v) {
  launched(la::eigh(stream_of(vectors), lapack_dtype(vectors, "linalg.eigh"), upper ? 'U' : 'L', compute_v,
                    vectors.size(-1), operand(vectors, 2), operand(values, 1), operand(infos, 0)),
           "linalg.eigh");
}

void svd_npu(const T& A_in, bool full_matrices, bool compute_uv, const std::optional<std::string_view>& /*driver*/,
             const T& U, const T& S, const T& Vh, const T& info) {
  const char jobz = compute_uv ? (full_matrices ? 'A' : 'S') : 'N';
  const T A = at::native::cloneBatchedColumnMajor(A_in);  // gesdd destroys its input; libtorch leaves the copy to the backend
  launched(la::svd(stream_of(A), lapack_dtype(A, "linalg.svd"), jobz, A.size(-2), A.size(-1), operand(A, 2),
                   operand(S, 1), compute_uv ? operand(U, 2) : la::Batch{}, compute_uv ? operand(Vh, 2) : la::Batch{},
                   operand(info, 0)),
           "linalg.svd");
}

void lstsq_npu(const T& a, T& b, T& rank, T& singular_values, T& infos, double rcond, std::string driver_name) {
  la::LstsqDriver driver = la::LstsqDriver::kGelsy;
  if (driver_name == "gels") driver = la::LstsqDriver::kGels;
  else if (driver_name == "gelsd") driver = la::LstsqDriver::kGelsd;
  else if (driver_name == "gelss") driver = la::LstsqDriver::kGelss;
  const T bb = b;
  const bool has_rank = rank.defined() && rank.numel() > 0, has_sv = singular_values.defined() && singular_values.numel() > 0;
  launched(la::lstsq(stream_of(a), lapack_dtype(a, "linalg.lstsq"), driver, a.size(-2), a.size(-1), b.size(-1), rcond,
                     operand(a, 2), operand(bb, 2), has_rank ? operand(rank, 0) : la::Batch{},
                     has_sv ? operand(singular_values, 1) : la::Batch{}, operand(infos, 0)),
           "linalg.lstsq");
}

void ldl_factor_npu(const T& LD, const T& pivots, const T& info, bool upper, bool hermitian) {
  launched(la::ldl_factor(stream_of(LD), lapack_dtype(LD, "linalg.ldl_factor"), upper ? 'U' : 'L', hermitian,
                          LD.size(-1), operand(LD, 2), operand(pivots, 1), operand(info, 0)),
           "linalg.ldl_factor");
}

void ldl_solve_npu(const T& LD, const T& pivots, const T& B, bool upper, bool hermitian) {
  const T ld = broadcast_batch(LD, B, 2, 2), piv = broadcast_batch(pivots, B, 1, 2);
  launched(la::ldl_solve(stream_of(B), lapack_dtype(B, "linalg.ldl_solve"), upper ? 'U' : 'L', hermitian, B.size(-2),
                         B.size(-1), operand(ld, 2), operand(piv, 1), operand(B, 2)),
           "linalg.ldl_solve");
}

// lu_unpack's iterator pairs each permutation row (int64, dim_size entries) with its pivot row (int32).
void unpack_pivots_npu(at::TensorIterator& iter, const int64_t dim_size, const int64_t max_pivot) {
  // ATen's lu_unpack sizes the permutations by LU's batch and iterates over the pivots' batch without comparing
  // them (CPU writes out of bounds, or skips LU matrices): they must agree.
  const auto perm_batch = iter.tensor_base(0).sizes().slice(0, iter.tensor_base(0).dim() - 1);
  const auto piv_batch = iter.tensor_base(1).sizes().slice(0, iter.tensor_base(1).dim() - 1);
  TORCH_CHECK(perm_batch == piv_batch, "torch.lu_unpack: expected LU_pivots with the batch dimensions of LU ",
              perm_batch, ", got LU_pivots of batch dimensions ", piv_batch);
  if (iter.numel() == 0) return;
  la::Batch perm, piv;
  perm.base = iter.data_ptr(0);
  piv.base = iter.data_ptr(1);
  const int64_t n = iter.numel(), nd = iter.ndim();
  perm.offsets.reserve(static_cast<std::size_t>(n));
  piv.offsets.reserve(static_cast<std::size_t>(n));
  std::vector<int64_t> idx(static_cast<std::size_t>(nd), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t o0 = 0, o1 = 0;
    for (int64_t d = 0; d < nd; ++d) {
      o0 += idx[static_cast<std::size_t>(d)] * iter.strides(0)[d];
      o1 += idx[static_cast<std::size_t>(d)] * iter.strides(1)[d];
    }
    perm.offsets.push_back(o0 / static_cast<int64_t>(sizeof(int64_t)));
    piv.offsets.push_back(o1 / static_cast<int64_t>(sizeof(int32_t)));
    for (int64_t d = 0; d < nd; ++d) {  // TensorIterator's dim 0 moves fastest
      if (++idx[static_cast<std::size_t>(d)] < iter.shape()[d]) break;
      idx[static_cast<std::size_t>(d)] = 0;
    }
  }
  launched(la::unpack_pivots(current_native_stream(iter.device(0).index()), dim_size, max_pivot, perm, piv),
           "lu_unpack");
}

// The cross product along `dim` (size 3) from native npu ops: each component a_i b_j - a_j b_i.
void cross_npu(const T& result, const T& a, const T& b, const int64_t dim) {
  for (int64_t i = 0; i < 3; ++i) {
    const int64_t j = (i + 1) % 3, k = (i + 2) % 3;
    result.select(dim, i).copy_(a.select(dim, j).mul(b.select(dim, k)).sub_(a.select(dim, k).mul(b.select(dim, j))));
  }
}

}  // namespace

}  // namespace torch_npu_sim

// The registrations live in at::native, where the stubs and the registrar are declared.
namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(lu_factor_stub, &torch_npu_sim::lu_factor_npu)
REGISTER_PRIVATEUSE1_DISPATCH(lu_solve_stub, &torch_npu_sim::lu_solve_npu)
REGISTER_PRIVATEUSE1_DISPATCH(triangular_solve_stub, &torch_npu_sim::triangular_solve_npu)
REGISTER_PRIVATEUSE1_DISPATCH(cholesky_stub, &torch_npu_sim::cholesky_npu)
REGISTER_PRIVATEUSE1_DISPATCH(cholesky_inverse_stub, &torch_npu_sim::cholesky_inverse_npu)
REGISTER_PRIVATEUSE1_DISPATCH(geqrf_stub, &torch_npu_sim::geqrf_npu)
REGISTER_PRIVATEUSE1_DISPATCH(orgqr_stub, &torch_npu_sim::orgqr_npu)
REGISTER_PRIVATEUSE1_DISPATCH(ormqr_stub, &torch_npu_sim::ormqr_npu)
REGISTER_PRIVATEUSE1_DISPATCH(linalg_eigh_stub, &torch_npu_sim::eigh_npu)
REGISTER_PRIVATEUSE1_DISPATCH(svd_stub, &torch_npu_sim::svd_npu)
REGISTER_PRIVATEUSE1_DISPATCH(lstsq_stub, &torch_npu_sim::lstsq_npu)
REGISTER_PRIVATEUSE1_DISPATCH(ldl_factor_stub, &torch_npu_sim::ldl_factor_npu)
REGISTER_PRIVATEUSE1_DISPATCH(ldl_solve_stub, &torch_npu_sim::ldl_solve_npu)
REGISTER_PRIVATEUSE1_DISPATCH(unpack_pivots_stub, &torch_npu_sim::unpack_pivots_npu)
REGISTER_PRIVATEUSE1_DISPATCH(cross_stub, &torch_npu_sim::cross_npu)
}  // namespace at::native

namespace torch_npu_sim {

// ---- the structured ops: libtorch's meta() + impl() on npu tensors -----------------------------------------

namespace {

template <class Op, std::size_t... I, class... Args>
void meta_and_impl(Op& op, std::index_sequence<I...>, const Args&... args) {
  op.meta(args...);
  op.impl(args..., op.maybe_get_output(static_cast<int64_t>(I))...);
}
// Structured kernel `Impl` with N outputs, functional: returns its outputs as a tuple.
template <class Impl, std::size_t N, class... Args>
auto structured(const Args&... args) {
  NpuStructuredMulti<Impl, N> op;
  meta_and_impl(op, std::make_index_sequence<N>{}, args...);
  return std::apply([](auto&... t) { return std::make_tuple(t...); }, op.outs());
}
// The same into the caller's out= tensors.
template <class Impl, std::size_t N, class... Args>
void structured_into(std::array<T, N> outs, const Args&... args) {
  NpuStructuredMulti<Impl, N> op(std::move(outs));
  meta_and_impl(op, std::make_index_sequence<N>{}, args...);
  op.finish();
}

}  // namespace

using namespace at::native;

std::tuple<T, T> NF::linalg_cholesky_ex(const T& self, bool upper, bool check_errors) {
  return structured<structured_linalg_cholesky_ex_out, 2>(self, upper, check_errors);
}
std::tuple<T&, T&> NF::linalg_cholesky_ex_out(const T& self, bool upper, bool check_errors, T& L, T& info) {
  structured_into<structured_linalg_cholesky_ex_out, 2>({L, info}, self, upper, check_errors);
  return {L, info};
}

std::tuple<T, T, T> NF::linalg_lu_factor_ex(const T& A, bool pivot, bool check_errors) {
  return structured<structured_linalg_lu_factor_ex_out, 3>(A, pivot, check_errors);
}
std::tuple<T&, T&, T&> NF::linalg_lu_factor_ex_out(const T& A, bool pivot, bool check_errors, T& LU, T& pivots,
                                                   T& info) {
  structured_into<structured_linalg_lu_factor_ex_out, 3>({LU, pivots, info}, A, pivot, check_errors);
  return {LU, pivots, info};
}

std::tuple<T, T, T> NF::linalg_lu(const T& A, bool pivot) { return structured<structured_linalg_lu_out, 3>(A, pivot); }
std::tuple<T&, T&, T&> NF::linalg_lu_out(const T& A, bool pivot, T& P, T& L, T& U) {
  structured_into<structured_linalg_lu_out, 3>({P, L, U}, A, pivot);
  return {P, L, U};
}

T NF::linalg_lu_solve(const T& LU, const T& pivots, const T& B, bool left, bool adjoint) {
  return std::get<0>(structured<structured_linalg_lu_solve_out, 1>(LU, pivots, B, left, adjoint));
}
T& NF::linalg_lu_solve_out(const T& LU, const T& pivots, const T& B, bool left, bool adjoint, T& out) {
  structured_into<structured_linalg_lu_solve_out, 1>({out}, LU, pivots, B, left, adjoint);
  return out;
}

std::tuple<T, T, T> NF::lu_unpack(const T& LU_data, const T& LU_pivots, bool unpack_data, bool unpack_pivots) {
  return structured<structured_lu_unpack_out, 3>(LU_data, LU_pivots, unpack_data, unpack_pivots);
}
std::tuple<T&, T&, T&> NF::lu_unpack_out(const T& LU_data, const T& LU_pivots, bool unpack_data, bool unpack_pivots,
                                         T& P, T& L, T& U) {
  structured_into<structured_lu_unpack_out, 3>({P, L, U}, LU_data, LU_pivots, unpack_data, unpack_pivots);
  return {P, L, U};
}

std::tuple<T, T, T> NF::_linalg_det(const T& A) { return structured<structured__linalg_det_out, 3>(A); }
std::tuple<T&, T&, T&> NF::_linalg_det_out(const T& A, T& result, T& LU, T& pivots) {
  structured_into<structured__linalg_det_out, 3>({result, LU, pivots}, A);
  return {result, LU, pivots};
}

std::tuple<T, T, T, T> NF::_linalg_slogdet(const T& A) { return structured<structured__linalg_slogdet_out, 4>(A); }
std::tuple<T&, T&, T&, T&> NF::_linalg_slogdet_out(const T& A, T& sign, T& logabsdet, T& LU, T& pivots) {
  structured_into<structured__linalg_slogdet_out, 4>({sign, logabsdet, LU, pivots}, A);
  return {sign, logabsdet, LU, pivots};
}

std::tuple<T, T, T> NF::linalg_ldl_factor_ex(const T& self, bool hermitian, bool check_errors) {
  return structured<structured_linalg_ldl_factor_ex_out, 3>(self, hermitian, check_errors);
}
std::tuple<T&, T&, T&> NF::linalg_ldl_factor_ex_out(const T& self, bool hermitian, bool check_errors, T& LD,
                                                    T& pivots, T& info) {
  structured_into<structured_linalg_ldl_factor_ex_out, 3>({LD, pivots, info}, self, hermitian, check_errors);
  return {LD, pivots, info};
}

T NF::linalg_ldl_solve(const T& LD, const T& pivots, const T& B, bool hermitian) {
  return std::get<0>(structured<structured_linalg_ldl_solve_out, 1>(LD, pivots, B, hermitian));
}
T& NF::linalg_ldl_solve_out(const T& LD, const T& pivots, const T& B, bool hermitian, T& out) {
  structured_into<structured_linalg_ldl_solve_out, 1>({out}, LD, pivots, B, hermitian);
  return out;
}

std::tuple<T, T> NF::_linalg_eigh(const T& A, c10::string_view UPLO, bool compute_v) {
  return structured<structured__linalg_eigh_out, 2>(A, UPLO, compute_v);
}
std::tuple<T&, T&> NF::_linalg_eigh_out(const T& A, c10::string_view UPLO, bool compute_v, T& eigenvalues,
                                        T& eigenvectors) {
  structured_into<structured__linalg_eigh_out, 2>({eigenvalues, eigenvectors}, A, UPLO, compute_v);
  return {eigenvalues, eigenvectors};
}

std::tuple<T, T> NF::linalg_inv_ex(const T& A, bool check_errors) {
  return structured<structured_linalg_inv_ex_out, 2>(A, check_errors);
}
std::tuple<T&, T&> NF::linalg_inv_ex_out(const T& A, bool check_errors, T& inverse, T& info) {
  structured_into<structured_linalg_inv_ex_out, 2>({inverse, info}, A, check_errors);
  return {inverse, info};
}

std::tuple<T, T, T> NF::_linalg_svd(const T& A, bool full_matrices, bool compute_uv,
                                    std::optional<c10::string_view> driver) {
  return structured<structured__linalg_svd_out, 3>(A, full_matrices, compute_uv, driver);
}
std::tuple<T&, T&, T&> NF::_linalg_svd_out(const T& A, bool full_matrices, bool compute_uv,
                                           std::optional<c10::string_view> driver, T& U, T& S, T& Vh) {
  structured_into<structured__linalg_svd_out, 3>({U, S, Vh}, A, full_matrices, compute_uv, driver);
  return {U, S, Vh};
}

std::tuple<T, T, T, T> NF::_linalg_solve_ex(const T& A, const T& B, bool left, bool check_errors) {
  return structured<structured__linalg_solve_ex_out, 4>(A, B, left, check_errors);
}
std::tuple<T&, T&, T&, T&> NF::_linalg_solve_ex_out(const T& A, const T& B, bool left, bool check_errors, T& result,
                                                    T& LU, T& pivots, T& info) {
  structured_into<structured__linalg_solve_ex_out, 4>({result, LU, pivots, info}, A, B, left, check_errors);
  return {result, LU, pivots, info};
}

std::tuple<T, T> NF::linalg_qr(const T& A, c10::string_view mode) {
  return structured<structured_linalg_qr_out, 2>(A, mode);
}
std::tuple<T&, T&> NF::linalg_qr_out(const T& A, c10::string_view mode, T& Q, T& R) {
  structured_into<structured_linalg_qr_out, 2>({Q, R}, A, mode);
  return {Q, R};
}

T NF::linalg_cross(const T& self, const T& other, int64_t dim) {
  return std::get<0>(structured<structured_linalg_cross_out, 1>(self, other, dim));
}
T& NF::linalg_cross_out(const T& self, const T& other, int64_t dim, T& out) {
  structured_into<structured_linalg_cross_out, 1>({out}, self, other, dim);
  return out;
}

std::tuple<T, T> NF::triangular_solve(const T& self, const T& A, bool upper, bool transpose, bool unitriangular) {
  return structured<structured_triangular_solve_out, 2>(self, A, upper, transpose, unitriangular);
}
std::tuple<T&, T&> NF::triangular_solve_out(const T& self, const T& A, bool upper, bool transpose, bool unitriangular,
                                            T& X, T& M) {
  structured_into<structured_triangular_solve_out, 2>({X, M}, self, A, upper, transpose, unitriangular);
  return {X, M};
}

// The non-symmetric eigen-decomposition (geev) runs on the host, as CUDA runs it for matrices up to 2048 (libtorch's
// own linalg_eig code assumes a CPU or CUDA device, so the npu kernels call it on CPU copies).
std::tuple<T, T> NF::linalg_eig(const T& self) {
  auto [w, v] = at::linalg_eig(self.cpu());
  return {w.to(self.device()), v.to(self.device())};
}
std::tuple<T&, T&> NF::linalg_eig_out(const T& self, T& eigenvalues, T& eigenvectors) {
  auto [w, v] = NF::linalg_eig(self);
  resize_output(eigenvalues, w.sizes());
  resize_output(eigenvectors, v.sizes());
  eigenvalues.copy_(w);
  eigenvectors.copy_(v);
  return {eigenvalues, eigenvectors};
}
T NF::_linalg_eigvals(const T& self) { return at::_linalg_eigvals(self.cpu()).to(self.device()); }
// ATen's out= form, after CPU's and CUDA's rule that out has the result's dtype (ATen's own function would cast
// a complex result into a real out, dropping the imaginary parts)
T& NF::linalg_solve_triangular_out(const T& A, const T& B, bool upper, bool left, bool unitriangular, T& out) {
  const auto type = at::promote_types(A.scalar_type(), B.scalar_type());
  TORCH_CHECK(out.scalar_type() == type, "linalg.solve_triangular: Expected out tensor to have dtype ", type,
              ", but got ", out.scalar_type(), " instead");
  return at::native::linalg_solve_triangular_out(A, B, upper, left, unitriangular, out);
}

T& NF::linalg_eigvals_out(const T& self, T& out) {
  const T w = NF::_linalg_eigvals(self);
  TORCH_CHECK(c10::canCast(w.scalar_type(), out.scalar_type()), "torch.linalg.eigvals: Expected eigenvalues to be ",
              "safely castable from ", w.scalar_type(), " dtype, but got eigenvalues with dtype ", out.scalar_type());
  resize_output(out, w.sizes());
  return out.copy_(w);
}

// cholesky_solve's step: CPU and CUDA each have their own; ours runs potrs on column-major copies.
T NF::_cholesky_solve_helper(const T& self, const T& A, bool upper) {
  T x = cloneBatchedColumnMajor(self);
  const T a = broadcast_batch(cloneBatchedColumnMajor(A), x, 2, 2);
  const T infos = at::zeros(x.sizes().slice(0, x.dim() - 2), self.options().dtype(at::kInt));
  launched(la::cholesky_solve(stream_of(x), lapack_dtype(x, "cholesky_solve"), upper ? 'U' : 'L', x.size(-2),
                              x.size(-1), operand(a, 2), operand(x, 2), operand(infos, 0)),
           "cholesky_solve");
  return x;
}

// linalg_matrix_exp: scaling and squaring with the [13/13] Pade approximant (Higham, "The scaling and squaring
// method for the matrix exponential revisited", 2005), batched over native ops: each matrix's 1-norm picks its
// scaling 2^-s (s = 0 below theta_13), one batched solve gives r_13, then max(s) squarings, each kept only for the
// matrices that still need it. (ATen's composite indexes a CPU tensor with device masks on non-CUDA devices.)
// Float16 / BFloat16 run in float32 (LAPACK has no 16-bit solve). Its gradient is ATen's, which calls this op on
// a block matrix.
at::Tensor NF::linalg_matrix_exp(const at::Tensor& self) {
  at::native::squareCheckInputs(self, "linalg.matrix_exp");
  at::native::checkFloatingOrComplex(self, "linalg.matrix_exp");
  const int64_t n = self.size(-1);
  if (self.numel() == 0) return at::empty_like(self, at::MemoryFormat::Contiguous);
  if (n == 1) return self.exp();
  const bool half = self.scalar_type() == at::kHalf || self.scalar_type() == at::kBFloat16;
  const at::Tensor a = (half ? self.to(at::kFloat) : self).reshape({-1, n, n});
  constexpr double kTheta13 = 5.371920351148152;
  constexpr std::array<double, 14> b = {64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
                                        1187353796428800.0,  129060195264000.0,   10559470521600.0,
                                        670442572800.0,      33522128640.0,       1323241920.0,
                                        40840800.0,          960960.0,            16380.0,
                                        182.0,               1.0};
  const at::Tensor norm = a.abs().sum(-2).amax(-1);
  // NaN and inf norms give NaN results whatever the count; 64 squarings bound the loop
  const at::Tensor s = at::nan_to_num(at::ceil(at::log2(norm / kTheta13)), 0.0, 64.0, 0.0).clamp(0, 64);
  const at::Tensor x = a / at::exp2(s).view({-1, 1, 1});
  const at::Tensor eye = at::eye(n, x.options()).expand_as(x);
  const at::Tensor x2 = at::matmul(x, x), x4 = at::matmul(x2, x2), x6 = at::matmul(x4, x2);
  const at::Tensor u = at::matmul(
      x, at::matmul(x6, x6 * b[13] + x4 * b[11] + x2 * b[9]) + x6 * b[7] + x4 * b[5] + x2 * b[3] + eye * b[1]);
  const at::Tensor v = at::matmul(x6, x6 * b[12] + x4 * b[10] + x2 * b[8]) + x6 * b[6] + x4 * b[4] + x2 * b[2] +
                       eye * b[0];
  at::Tensor r = at::linalg_solve(v - u, v + u);
  const int64_t squarings = s.max().item<int64_t>();
  for (int64_t k = 0; k < squarings; ++k) r = at::where(s.gt(k).view({-1, 1, 1}), at::matmul(r, r), r);
  return r.reshape(self.sizes()).to(self.scalar_type());
}

}  // namespace torch_npu_sim
