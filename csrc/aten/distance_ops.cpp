// Registration of _cdist_forward, _cdist_backward, _pdist_forward and _pdist_backward (torch.cdist, torch.pdist,
// F.pdist): CPU's checks, messages and shape rules (ATen/native/Distance.cpp), then kernels/src/distance.cpp. The
// p = 2 matrix-multiplication path (compute_mode 1, or 0 with more than 25 rows) is CPU's too: _euclidean_dist, whose
// CompositeExplicitAutograd kernel is made of native ops (torch.cdist reaches it without _cdist_forward).
#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_euclidean_dist.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/accumulate.h>

#include <cmath>
#include <vector>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "npu_kernels/distance.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using at::Tensor;

// CPU's kernels are dispatched over float32 / float64 only (AT_DISPATCH_FLOATING_TYPES, named `kernel`).
void check_kernel_dtype(const Tensor& t, const char* kernel) {
  const at::ScalarType st = t.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(st == at::kFloat || st == at::kDouble, "\"", kernel, "\" not implemented for '",
                              c10::toString(st), "'");
}

// CPU reads every other operand as the first one's dtype (data_ptr<scalar_t>), with this message.
void check_same_dtype(const Tensor& first, const Tensor& t) {
  TORCH_CHECK(t.scalar_type() == first.scalar_type(), "expected scalar type ", first.scalar_type(),
              " but found ", t.scalar_type());
}

void check_p(const char* op, double p) { TORCH_CHECK(!std::isnan(p), op, ": expected p to be a number, but got nan"); }

// CPU's cdist condition for the matrix-multiplication path of p = 2 (Note [cdist relies on cdist_impl redispatching]).
bool euclid_by_mm(double p, int64_t mode, int64_t r1, int64_t r2) {
  return p == 2 && (mode == 1 || (mode == 0 && (r1 > 25 || r2 > 25)));
}

// The broadcast batch dimensions of x1 and x2 (all but the last two), CPU's infer_size and its message.
std::vector<int64_t> batch_shape(const Tensor& x1, const Tensor& x2) {
  return at::infer_size(x1.sizes().slice(0, x1.dim() - 2), x2.sizes().slice(0, x2.dim() - 2));
}

std::vector<int64_t> with_last(std::vector<int64_t> batch, int64_t a, int64_t b) {
  batch.insert(batch.end(), {a, b});
  return batch;
}

// x expanded to the batch shape, contiguous, viewed as (batch, rows, cols): what CPU's kernels read.
Tensor batched(const Tensor& x, const std::vector<int64_t>& batch, int64_t product) {
  return x.expand(with_last(batch, x.size(-2), x.size(-1))).contiguous().view({product, x.size(-2), x.size(-1)});
}

void check_sizes(const char* op, const char* name, const Tensor& t, at::IntArrayRef want) {
  TORCH_CHECK(t.sizes() == want, op, ": expected ", name, " of shape ", want, ", but got ", t.sizes());
}

}  // namespace

// CPU's cdist_impl: its checks in its order, empty and zero-column shortcuts, the mm path, then the kernel.
Tensor NF::_cdist_forward(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t> compute_mode) {
  TORCH_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  TORCH_CHECK(at::isFloatingType(x1.scalar_type()), "cdist only supports floating-point dtypes, X1 got: ",
              x1.scalar_type());
  TORCH_CHECK(at::isFloatingType(x2.scalar_type()), "cdist only supports floating-point dtypes, X2 got: ",
              x2.scalar_type());
  TORCH_CHECK(p >= 0, "cdist only supports non-negative p values");
  check_devices("_cdist_forward", {{"x1", &x1}, {"x2", &x2}});
  c10::DeviceGuard guard(x1.device());
  const int64_t mode = compute_mode.value_or(0);
  TORCH_CHECK(mode >= 0 && mode <= 2, "possible modes: 0, 1, 2, but was: ", mode);
  const int64_t r1 = x1.size(-2), r2 = x2.size(-2), c = x1.size(-1);
  const std::vector<int64_t> batch = batch_shape(x1, x2);
  const int64_t product = c10::multiply_integers(batch);
  const std::vector<int64_t> out_shape = with_last(batch, r1, r2);
  if (r1 == 0 || r2 == 0 || product == 0) return at::empty(out_shape, x1.options());
  if (c == 0) return at::zeros(out_shape, x1.options());
  const Tensor t1 = batched(x1, batch, product), t2 = batched(x2, batch, product);
  if (euclid_by_mm(p, mode, r1, r2)) {
    return (product == 1 ? at::_euclidean_dist(x1, x2) : at::_euclidean_dist(t1, t2)).view(out_shape);
  }
  check_kernel_dtype(x1, "cdist");
  check_same_dtype(x1, x2);
  Tensor out = at::empty(out_shape, x1.options());
  npu_kernels::CdistArgs a;
  a.dtype = kernel_dtype(x1.scalar_type(), "_cdist_forward");
  a.batch = product;
  a.r1 = r1;
  a.r2 = r2;
  a.m = c;
  a.p = p;
  NPU_CHECK(npu_kernels::cdist_forward(stream_of(x1), a, t1.const_data_ptr(), t2.const_data_ptr(), out.data_ptr()));
  return out;
}

// CPU's _cdist_backward: the gradient of x1 at x1's broadcast shape (autograd reduces it); the gradient of x2 is
// this op with the operands swapped. CPU reads grad and cdist unchecked; here their shapes must be the output's.
Tensor NF::_cdist_backward(const Tensor& grad, const Tensor& x1, const Tensor& x2, double p, const Tensor& cdist) {
  constexpr const char* op = "_cdist_backward";
  TORCH_CHECK(x1.dim() >= 2 && x2.dim() >= 2, op, ": expected x1 and x2 with at least 2 dimensions, but got ",
              x1.dim(), "-D and ", x2.dim(), "-D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1), op, ": X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  check_p(op, p);
  check_devices(op, {{"grad", &grad}, {"x1", &x1}, {"x2", &x2}, {"cdist", &cdist}});
  c10::DeviceGuard guard(x1.device());
  const int64_t r1 = x1.size(-2), r2 = x2.size(-2), c = x1.size(-1);
  const std::vector<int64_t> batch = batch_shape(x1, x2);
  const int64_t product = c10::multiply_integers(batch);
  if (r1 == 0 || r2 == 0 || c == 0 || product == 0) return at::zeros_like(x1);
  check_kernel_dtype(x1, "cdist_backward");
  for (const Tensor* t : {&grad, &cdist, &x2}) check_same_dtype(x1, *t);
  const std::vector<int64_t> out_shape = with_last(batch, r1, r2);
  check_sizes(op, "grad", grad, out_shape);
  check_sizes(op, "cdist", cdist, out_shape);
  const Tensor t1 = batched(x1, batch, product), t2 = batched(x2, batch, product);
  const Tensor g = grad.contiguous(), d = cdist.contiguous();
  Tensor out = at::empty({product, r1, c}, x1.options());
  npu_kernels::CdistArgs a;
  a.dtype = kernel_dtype(x1.scalar_type(), op);
  a.batch = product;
  a.r1 = r1;
  a.r2 = r2;
  a.m = c;
  a.p = p;
  NPU_CHECK(npu_kernels::cdist_backward(stream_of(x1), a, g.const_data_ptr(), t1.const_data_ptr(),
                                        t2.const_data_ptr(), d.const_data_ptr(), out.data_ptr()));
  return out.view(with_last(batch, r1, c));
}

// CPU's _pdist_forward (torch.pdist checks 2-D, floating and p >= 0 before, and makes self contiguous). CPU does not
// check the dimension here and reads a 3-D self as if 2-D: refused instead.
Tensor NF::_pdist_forward(const Tensor& self, double p) {
  constexpr const char* op = "_pdist_forward";
  TORCH_CHECK(self.is_contiguous(), "_pdist_forward requires contiguous input");
  TORCH_CHECK(self.dim() == 2, op, ": expected self to be a 2-D tensor, but got ", self.dim(), "-D");
  check_p(op, p);
  c10::DeviceGuard guard(self.device());
  const int64_t n = self.size(0), m = self.size(1);
  if (n <= 1) return at::empty({0}, self.options());
  const int64_t pairs = npu_kernels::pdist_pairs(n);
  if (m == 0) return at::zeros({pairs}, self.options());
  check_kernel_dtype(self, "pdist");
  Tensor out = at::empty({pairs}, self.options());
  npu_kernels::PdistArgs a;
  a.dtype = kernel_dtype(self.scalar_type(), op);
  a.n = n;
  a.m = m;
  a.p = p;
  NPU_CHECK(npu_kernels::pdist_forward(stream_of(self), a, self.const_data_ptr(), out.data_ptr()));
  return out;
}

// CPU's _pdist_backward; grad (any strides) and pdist must hold one entry per pair (CPU reads them unchecked).
Tensor NF::_pdist_backward(const Tensor& grad, const Tensor& self, double p, const Tensor& pdist) {
  constexpr const char* op = "_pdist_backward";
  TORCH_CHECK(self.is_contiguous(), "_pdist_backward requires self to be contiguous");
  TORCH_CHECK(pdist.is_contiguous(), "_pdist_backward requires pdist to be contiguous");
  TORCH_CHECK(self.dim() == 2, op, ": expected self to be a 2-D tensor, but got ", self.dim(), "-D");
  check_p(op, p);
  check_devices(op, {{"grad", &grad}, {"self", &self}, {"pdist", &pdist}});
  c10::DeviceGuard guard(self.device());
  check_kernel_dtype(self, "pdist_backward");
  check_same_dtype(self, grad);
  check_same_dtype(self, pdist);
  const int64_t n = self.size(0), m = self.size(1), pairs = npu_kernels::pdist_pairs(n);
  check_sizes(op, "grad", grad, {pairs});
  check_sizes(op, "pdist", pdist, {pairs});
  Tensor out = at::empty(self.sizes(), self.options());
  if (out.numel() == 0) return out;
  const Tensor g = grad.contiguous();
  npu_kernels::PdistArgs a;
  a.dtype = kernel_dtype(self.scalar_type(), op);
  a.n = n;
  a.m = m;
  a.p = p;
  NPU_CHECK(npu_kernels::pdist_backward(stream_of(self), a, g.const_data_ptr(), self.const_data_ptr(),
                                        pdist.const_data_ptr(), out.data_ptr()));
  return out;
}

}  // namespace torch_npu_sim
