// The matmul family on npu (registration + adapters, no math): mm, bmm, addmm, baddbmm, addbmm, mv,
// addmv, dot, vdot, with out= and in-place variants, and addr. Complex operands honour PyTorch's lazy
// conjugation (mm, bmm, addmm, baddbmm, dot and vdot receive conj views: the Conjugate key falls through for
// them). libtorch's structured meta functions do the shape and dtype checks (same messages as CPU); operands go to npu_kernels::gemm as (batch, row, col)
// strides, so transposed and strided views are read in place. matmul, linear, einsum, tensordot are
// CompositeImplicit and reach these.
#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/addmm_meta.h>
#include <ATen/ops/addr_native.h>
#include <ATen/ops/addmv_meta.h>
#include <ATen/ops/baddbmm_meta.h>
#include <ATen/ops/bmm_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm_meta.h>
#include <ATen/ops/result_type.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <initializer_list>
#include <string_view>
#include <utility>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "fallback/dtype_fallback.h"
#include "npu_kernels/gemm.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

npu_kernels::DType gemm_dtype(at::ScalarType t, const char* op) {
  // integers are refused, as on CUDA
  TORCH_CHECK_NOT_IMPLEMENTED(t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16 ||
                                  t == at::kComplexFloat || t == at::kComplexDouble,
                              op, ": the npu Cube unit has no kernel for dtype ", t,
                              " (supported: float32, float64, float16, bfloat16, complex64, complex128)");
  return static_cast<npu_kernels::DType>(t);
}

// Output handling of a structured meta function: functional (allocate on npu), out= (check dtype,
// resize) or in-place (sizes must match).
template <typename Meta>
struct NpuMeta final : Meta {
  explicit NpuMeta(const char* op, at::Tensor out = {}, bool inplace = false)
      : op_(op), out_(std::move(out)), inplace_(inplace) {}
  void set_output_raw_strided(int64_t, at::IntArrayRef sizes, at::IntArrayRef, at::TensorOptions options) override {
    if (!out_.defined()) {
      out_ = at::empty(sizes, options);
      return;
    }
    TORCH_CHECK(options.dtype() == out_.dtype(), op_, ": expected out tensor to have dtype ",
                c10::typeMetaToScalarType(options.dtype()), ", but got ", out_.scalar_type(), " instead");
    if (inplace_) {
      TORCH_CHECK(out_.sizes() == sizes, op_, ": in-place result of shape ", sizes,
                  " does not match the shape of self ", out_.sizes());
    } else {
      at::native::resize_output(out_, sizes);
    }
  }
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options) override {
    set_output_raw_strided(i, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t) override { return out_; }
  const char* op_;
  at::Tensor out_;
  bool inplace_;
};

// An operand as the kernel sees it: (batch, row, col) strides over a base pointer.
struct Mat {
  const void* data;
  int64_t bs, rs, cs;
};
Mat mat2d(const at::Tensor& t) { return {t.const_data_ptr(), 0, t.stride(0), t.stride(1)}; }
Mat mat3d(const at::Tensor& t) { return {t.const_data_ptr(), t.stride(0), t.stride(1), t.stride(2)}; }
Mat column(const at::Tensor& v) { return {v.const_data_ptr(), 0, v.stride(0), 0}; }  // K x 1
Mat row(const at::Tensor& v) { return {v.const_data_ptr(), 0, 0, v.stride(0)}; }     // 1 x K

using Cx = c10::complex<double>;

// out = alpha * A @ B + beta * cin (cin broadcast to out's shape; ignored when beta == 0). Runs on the
// current stream of out's device. Results that alias an input go through a temporary. `conj_a`: A is read
// conjugated on top of its own conj bit (vdot).
void run_gemm(const char* op, const at::Tensor& out, Mat (*as_mat)(const at::Tensor&), int64_t batch, int64_t m,
              int64_t n, int64_t k, const Mat& a, const Mat& b, const at::Tensor& a_t, const at::Tensor& b_t,
              const at::Tensor* cin, Cx alpha, Cx beta, bool conj_a = false) {
  // shape errors before dtype errors, as ATen's addmm/baddbmm (expand_size first): cin must broadcast to out
  const at::Tensor cin_expanded = cin != nullptr ? cin->expand(out.sizes()).resolve_conj() : at::Tensor();
  if (out.numel() == 0) return;
  const auto dtype = gemm_dtype(out.scalar_type(), op);
  if (!out.is_complex() && (alpha.imag() != 0.0 || beta.imag() != 0.0)) {
    throw_no_kernel_for_dtype("a complex alpha or beta on real tensors: no npu kernel");  // CPU's rules apply
  }
  for (const at::Tensor* t : {&a_t, &b_t, cin}) {
    TORCH_CHECK(t == nullptr || t->scalar_type() == out.scalar_type(), op, ": expected all operands to have dtype ",
                out.scalar_type(), ", but got ", t->scalar_type());
  }
  at::assert_no_internal_overlap(out);
  const bool cin_same = cin != nullptr && cin->data_ptr() == out.data_ptr() && cin->strides() == out.strides();
  // Conservative: any shared storage counts (the overlap test gives up on non-dense views).
  auto overlaps = [&](const at::Tensor& t) {
    return t.numel() > 0 && out.is_alias_of(t) && at::get_overlap_status(out, t) != at::MemOverlapStatus::No;
  };
  const bool aliased = overlaps(a_t) || overlaps(b_t) || (cin != nullptr && beta != 0.0 && !cin_same && overlaps(*cin));
  if (aliased || out.is_conj()) {  // (a conj out, addmm_ on a conj view: written through copy_)
    at::Tensor tmp = at::empty(out.sizes(), out.options());
    run_gemm(op, tmp, as_mat, batch, m, n, k, a, b, a_t, b_t, cin, alpha, beta, conj_a);
    const_cast<at::Tensor&>(out).copy_(tmp);
    return;
  }
  c10::DeviceGuard guard(out.device());
  npu_kernels::GemmArgs g;
  g.dtype = dtype;
  g.batch = batch; g.m = m; g.n = n; g.k = k;
  g.a = a.data; g.a_batch_stride = a.bs; g.a_row_stride = a.rs; g.a_col_stride = a.cs;
  g.b = b.data; g.b_batch_stride = b.bs; g.b_row_stride = b.rs; g.b_col_stride = b.cs;
  const Mat c = as_mat(out);
  g.c = const_cast<void*>(c.data); g.c_batch_stride = c.bs; g.c_row_stride = c.rs; g.c_col_stride = c.cs;
  if (cin != nullptr && beta != 0.0) {
    const Mat ci = as_mat(cin_expanded);
    g.cin = ci.data; g.cin_batch_stride = ci.bs; g.cin_row_stride = ci.rs; g.cin_col_stride = ci.cs;
  }
  g.alpha = alpha.real();
  g.alpha_imag = alpha.imag();
  g.beta = cin != nullptr ? beta.real() : 0.0;
  g.beta_imag = cin != nullptr ? beta.imag() : 0.0;
  g.conj_a = a_t.is_conj() != conj_a;
  g.conj_b = b_t.is_conj();
  NPU_CHECK(npu_kernels::gemm(current_native_stream(out.device().index()), g));
}

Mat out_column(const at::Tensor& t) { return {t.const_data_ptr(), 0, t.stride(0), 1}; }  // (M) as M x 1
Mat out_scalar(const at::Tensor& t) { return {t.const_data_ptr(), 0, 1, 1}; }           // () as 1 x 1

Cx scalar(const at::Scalar& s) { return s.toComplexDouble(); }

// ---- mm / addmm ---------------------------------------------------------------------------------------
at::Tensor& addmm_impl(const char* op, const at::Tensor* self, const at::Tensor& m1, const at::Tensor& m2,
                       Cx beta, Cx alpha, at::Tensor& out) {
  run_gemm(op, out, mat2d, 1, m1.size(0), m2.size(1), m1.size(1), mat2d(m1), mat2d(m2), m1, m2, self, alpha, beta);
  return out;
}

// ---- bmm / baddbmm / addbmm ----------------------------------------------------------------------------
at::Tensor& baddbmm_impl(const char* op, const at::Tensor* self, const at::Tensor& b1, const at::Tensor& b2,
                         Cx beta, Cx alpha, at::Tensor& out) {
  run_gemm(op, out, mat3d, b1.size(0), b1.size(1), b2.size(2), b1.size(2), mat3d(b1), mat3d(b2), b1, b2, self, alpha,
           beta);
  return out;
}

// ---- mv / addmv / dot / vdot -------------------------------------------------------------------------
at::Tensor& addmv_impl(const char* op, const at::Tensor* self, const at::Tensor& mat, const at::Tensor& vec,
                       Cx beta, Cx alpha, at::Tensor& out) {
  at::Tensor cin;
  if (self != nullptr) cin = self->dim() == 0 ? self->expand({mat.size(0)}) : *self;
  run_gemm(op, out, out_column, 1, mat.size(0), 1, mat.size(1), mat2d(mat), column(vec), mat, vec,
           self != nullptr ? &cin : nullptr, alpha, beta);
  return out;
}

void check_mv(const at::Tensor& self, const at::Tensor& vec) {
  // ATen's mv (CompositeExplicitAutograd, CPU and CUDA alike) sizes its result with self.size(0) first
  TORCH_CHECK_INDEX(self.dim() > 0, "Dimension specified as 0 but tensor has no dimensions");
  TORCH_CHECK(self.dim() == 2 && vec.dim() == 1, "vector + matrix @ vector expected, got ", 1, ", ", self.dim(), ", ",
              vec.dim());
  TORCH_CHECK(self.size(1) == vec.size(0), "size mismatch, got input (", self.size(0), "), mat (", self.size(0), "x",
              self.size(1), "), vec (", vec.size(0), ")");
  TORCH_CHECK(self.scalar_type() == vec.scalar_type(), "mv: expected mat and vec to have the same dtype, but got ",
              self.scalar_type(), " and ", vec.scalar_type());
}

at::Tensor dot_impl(const char* op, const at::Tensor& self, const at::Tensor& other) {
  check_devices(op, {{"self", &self}, {"other", &other}});
  TORCH_CHECK(self.dim() == 1 && other.dim() == 1, "1D tensors expected, but got ", self.dim(), "D and ", other.dim(),
              "D tensors");
  TORCH_CHECK(self.scalar_type() == other.scalar_type(), op, " : expected both vectors to have same dtype, but found ",
              self.scalar_type(), " and ", other.scalar_type());
  TORCH_CHECK(self.numel() == other.numel(), "inconsistent tensor size, expected tensor [", self.numel(), "] and src [",
              other.numel(), "] to have the same number of elements, but got ", self.numel(), " and ", other.numel(),
              " elements respectively");
  at::Tensor out = at::empty({}, self.options());
  run_gemm(op, out, out_scalar, 1, 1, 1, self.numel(), row(self), column(other), self, other, nullptr, 1.0, 0.0,
           /*conj_a=*/std::string_view(op) == "vdot");
  return out;
}

}  // namespace

// ---- addr --------------------------------------------------------------------------------------------
// ATen's math_addr (beta * self + alpha * outer(vec1, vec2) through native ops) behind the checks of CPU's and
// CUDA's addr, which math_addr lacks: 1-D vectors, self broadcastable to vec1 x vec2 (math_addr's broadcasting
// accepted a self the result does not fit), the kinds of beta and alpha.
at::Tensor NF::addr(const at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2, const at::Scalar& beta,
                    const at::Scalar& alpha) {
  TORCH_CHECK(vec1.dim() == 1, "addr: Expected 1-D argument vec1, but got ", vec1.dim(), "-D");
  TORCH_CHECK(vec2.dim() == 1, "addr: Expected 1-D argument vec2, but got ", vec2.dim(), "-D");
  const at::Tensor self_ = self.expand({vec1.size(0), vec2.size(0)});
  const auto type = at::promote_types(at::result_type(self, vec1), vec2.scalar_type());
  for (const auto& [s, name] : {std::pair<const at::Scalar&, const char*>{beta, "beta"}, {alpha, "alpha"}}) {
    TORCH_CHECK(!s.isBoolean() || type == at::kBool, "Boolean ", name, " only supported for Boolean results.");
    TORCH_CHECK(at::isFloatingType(type) || at::isComplexType(type) || s.isIntegral(true),
                "For integral input tensors, argument ", name, " must not be a floating point number.");
  }
  return at::native::math_addr(self_, vec1, vec2, beta, alpha);
}

at::Tensor NF::mm(const at::Tensor& self, const at::Tensor& mat2) {
  check_devices("mm", {{"self", &self}, {"mat2", &mat2}});
  NpuMeta<at::meta::structured_mm> meta("mm");
  meta.meta(self, mat2);
  return addmm_impl("mm", nullptr, self, mat2, 0.0, 1.0, meta.out_);
}

at::Tensor& NF::mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  check_devices("mm", {{"self", &self}, {"mat2", &mat2}, {"out", &out}});
  NpuMeta<at::meta::structured_mm> meta("mm", out);
  meta.meta(self, mat2);
  return addmm_impl("mm", nullptr, self, mat2, 0.0, 1.0, out);
}

at::Tensor NF::bmm(const at::Tensor& self, const at::Tensor& mat2) {
  check_devices("bmm", {{"self", &self}, {"mat2", &mat2}});
  NpuMeta<at::meta::structured_bmm> meta("bmm");
  meta.meta(self, mat2);
  return baddbmm_impl("bmm", nullptr, self, mat2, 0.0, 1.0, meta.out_);
}

at::Tensor& NF::bmm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  check_devices("bmm", {{"self", &self}, {"mat2", &mat2}, {"out", &out}});
  NpuMeta<at::meta::structured_bmm> meta("bmm", out);
  meta.meta(self, mat2);
  return baddbmm_impl("bmm", nullptr, self, mat2, 0.0, 1.0, out);
}

at::Tensor NF::addmm(const at::Tensor& self, const at::Tensor& m1, const at::Tensor& m2, const at::Scalar& beta,
                     const at::Scalar& alpha) {
  check_devices("addmm", {{"self", &self}, {"mat1", &m1}, {"mat2", &m2}});
  NpuMeta<at::meta::structured_addmm> meta("addmm");
  meta.meta(self, m1, m2, beta, alpha);
  return addmm_impl("addmm", &self, m1, m2, scalar(beta), scalar(alpha), meta.out_);
}

at::Tensor& NF::addmm_out(const at::Tensor& self, const at::Tensor& m1, const at::Tensor& m2, const at::Scalar& beta,
                          const at::Scalar& alpha, at::Tensor& out) {
  check_devices("addmm", {{"self", &self}, {"mat1", &m1}, {"mat2", &m2}, {"out", &out}});
  NpuMeta<at::meta::structured_addmm> meta("addmm", out);
  meta.meta(self, m1, m2, beta, alpha);
  return addmm_impl("addmm", &self, m1, m2, scalar(beta), scalar(alpha), out);
}

at::Tensor& NF::addmm_(at::Tensor& self, const at::Tensor& m1, const at::Tensor& m2, const at::Scalar& beta,
                       const at::Scalar& alpha) {
  check_devices("addmm_", {{"self", &self}, {"mat1", &m1}, {"mat2", &m2}});
  NpuMeta<at::meta::structured_addmm> meta("addmm_", self, /*inplace=*/true);
  meta.meta(self, m1, m2, beta, alpha);
  return addmm_impl("addmm_", &self, m1, m2, scalar(beta), scalar(alpha), self);
}

at::Tensor NF::baddbmm(const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const at::Scalar& beta,
                       const at::Scalar& alpha) {
  check_devices("baddbmm", {{"self", &self}, {"batch1", &b1}, {"batch2", &b2}});
  NpuMeta<at::meta::structured_baddbmm> meta("baddbmm");
  meta.meta(self, b1, b2, beta, alpha);
  return baddbmm_impl("baddbmm", &self, b1, b2, scalar(beta), scalar(alpha), meta.out_);
}

at::Tensor& NF::baddbmm_out(const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const at::Scalar& beta,
                            const at::Scalar& alpha, at::Tensor& out) {
  check_devices("baddbmm", {{"self", &self}, {"batch1", &b1}, {"batch2", &b2}, {"out", &out}});
  NpuMeta<at::meta::structured_baddbmm> meta("baddbmm", out);
  meta.meta(self, b1, b2, beta, alpha);
  return baddbmm_impl("baddbmm", &self, b1, b2, scalar(beta), scalar(alpha), out);
}

at::Tensor& NF::baddbmm_(at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const at::Scalar& beta,
                         const at::Scalar& alpha) {
  check_devices("baddbmm_", {{"self", &self}, {"batch1", &b1}, {"batch2", &b2}});
  NpuMeta<at::meta::structured_baddbmm> meta("baddbmm_", self, /*inplace=*/true);
  meta.meta(self, b1, b2, beta, alpha);
  return baddbmm_impl("baddbmm_", &self, b1, b2, scalar(beta), scalar(alpha), self);
}

at::Tensor NF::addbmm(const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const at::Scalar& beta,
                      const at::Scalar& alpha) {
  check_devices("addbmm", {{"self", &self}, {"batch1", &b1}, {"batch2", &b2}});
  at::Tensor out = at::empty({0}, self.options());
  return NF::addbmm_out(self, b1, b2, beta, alpha, out);
}

// addbmm: out = beta * self + alpha * sum_b b1[b] @ b2[b], as one GEMM per batch accumulating in place.
at::Tensor& NF::addbmm_out(const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const at::Scalar& beta,
                           const at::Scalar& alpha, at::Tensor& out) {
  check_devices("addbmm", {{"self", &self}, {"batch1", &b1}, {"batch2", &b2}, {"out", &out}});
  TORCH_CHECK(b1.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(b2.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(b1.size(0) == b2.size(0), "batch1 and batch2 must have same number of batches, got ", b1.size(0), " and ",
              b2.size(0));
  TORCH_CHECK(b1.size(2) == b2.size(1), "Incompatible matrix sizes for bmm (", b1.size(1), "x", b1.size(2), " and ",
              b2.size(1), "x", b2.size(2), ")");
  TORCH_CHECK(b1.scalar_type() == b2.scalar_type() && b1.scalar_type() == self.scalar_type(),
              "addbmm: expected self, batch1 and batch2 to have the same dtype, but got: ", self.scalar_type(), ", ",
              b1.scalar_type(), " and ", b2.scalar_type());
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "addbmm: expected out tensor to have dtype ", self.scalar_type(),
              ", but got ", out.scalar_type(), " instead");
  const int64_t m = b1.size(1), n = b2.size(2);
  const auto expanded = self.expand({m, n});
  if (!out.is_same(self)) at::native::resize_output(out, {m, n});
  if (b1.size(0) == 0 || b1.size(2) == 0) {
    // Empty reduction: out = beta * self (through the GEMM with K = 0).
    run_gemm("addbmm", out, mat2d, 1, m, n, 0, Mat{nullptr, 0, 0, 0}, Mat{nullptr, 0, 0, 0}, b1, b2, &expanded, 1.0,
             scalar(beta));
    return out;
  }
  for (int64_t i = 0; i < b1.size(0); ++i) {
    const auto x = b1.select(0, i), y = b2.select(0, i);
    if (i == 0) {
      run_gemm("addbmm", out, mat2d, 1, m, n, x.size(1), mat2d(x), mat2d(y), x, y, &expanded, scalar(alpha),
               scalar(beta));
    } else {
      run_gemm("addbmm", out, mat2d, 1, m, n, x.size(1), mat2d(x), mat2d(y), x, y, &out, scalar(alpha), 1.0);
    }
  }
  return out;
}

at::Tensor& NF::addbmm_(at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const at::Scalar& beta,
                        const at::Scalar& alpha) {
  TORCH_CHECK(self.dim() == 2 && b1.dim() == 3 && b2.dim() == 3 && self.size(0) == b1.size(1) &&
                  self.size(1) == b2.size(2),
              "addbmm_: self of shape ", self.sizes(), " does not match the result shape");
  return NF::addbmm_out(self, b1, b2, beta, alpha, self);
}

at::Tensor NF::mv(const at::Tensor& self, const at::Tensor& vec) {
  check_devices("mv", {{"self", &self}, {"vec", &vec}});
  check_mv(self, vec);
  at::Tensor out = at::empty({self.size(0)}, self.options());
  return addmv_impl("mv", nullptr, self, vec, 0.0, 1.0, out);
}

at::Tensor& NF::mv_out(const at::Tensor& self, const at::Tensor& vec, at::Tensor& out) {
  check_devices("mv", {{"self", &self}, {"vec", &vec}, {"out", &out}});
  check_mv(self, vec);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "mv: expected out tensor to have dtype ", self.scalar_type(),
              ", but got ", out.scalar_type(), " instead");
  at::native::resize_output(out, {self.size(0)});
  return addmv_impl("mv", nullptr, self, vec, 0.0, 1.0, out);
}

at::Tensor NF::addmv(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec, const at::Scalar& beta,
                     const at::Scalar& alpha) {
  check_devices("addmv", {{"self", &self}, {"mat", &mat}, {"vec", &vec}});
  NpuMeta<at::meta::structured_addmv> meta("addmv");
  meta.meta(self, mat, vec, beta, alpha);
  return addmv_impl("addmv", &self, mat, vec, scalar(beta), scalar(alpha), meta.out_);
}

at::Tensor& NF::addmv_out(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec, const at::Scalar& beta,
                          const at::Scalar& alpha, at::Tensor& out) {
  check_devices("addmv", {{"self", &self}, {"mat", &mat}, {"vec", &vec}, {"out", &out}});
  NpuMeta<at::meta::structured_addmv> meta("addmv", out);
  meta.meta(self, mat, vec, beta, alpha);
  return addmv_impl("addmv", &self, mat, vec, scalar(beta), scalar(alpha), out);
}

at::Tensor& NF::addmv_(at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec, const at::Scalar& beta,
                       const at::Scalar& alpha) {
  check_devices("addmv_", {{"self", &self}, {"mat", &mat}, {"vec", &vec}});
  NpuMeta<at::meta::structured_addmv> meta("addmv_", self, /*inplace=*/true);
  meta.meta(self, mat, vec, beta, alpha);
  return addmv_impl("addmv_", &self, mat, vec, scalar(beta), scalar(alpha), self);
}

at::Tensor NF::dot(const at::Tensor& self, const at::Tensor& other) { return dot_impl("dot", self, other); }

at::Tensor NF::vdot(const at::Tensor& self, const at::Tensor& other) { return dot_impl("vdot", self, other); }

}  // namespace torch_npu_sim
