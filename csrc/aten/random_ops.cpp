// Random ops for npu over the per-device counter-based generator (core/npu_generator.h): every launch
// reserves a (seed, offset) pair under the generator's mutex and the Philox kernels in
// kernels/src/random.cpp expand it. uniform_, normal_ (real and complex; + Tensor mean/std variants), bernoulli_ (float
// and tensor p), bernoulli, random_ (all three forms), exponential_, multinomial, randperm,
// native_dropout and its backward, and the rejection samplers poisson, _standard_gamma, _sample_dirichlet and
// binomial (torch.distributions' Poisson, Gamma, Beta, Dirichlet and Binomial).
#include <ATen/MemoryOverlap.h>
#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <mutex>
#include <string_view>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_generator.h"
#include "core/npu_stream.h"
#include "npu_kernels/random.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using npu_kernels::RandomKind;

// Reserves counters from `gen` (or the device's default generator) for one launch.
npu_kernels::PhiloxState next_state(const std::optional<at::Generator>& gen, const at::Device& device) {
  const auto [seed, offset] = reserve_philox(gen, device.index(), 4);
  return {seed, offset};
}

void check_real(const at::Tensor& t, const char* op) {
  TORCH_CHECK(!t.is_complex(), op, ": complex tensors are not supported on npu");
}

at::Tensor& fill_random(at::Tensor& self, const npu_kernels::RandomArgs& args, const std::optional<at::Generator>& gen,
                        const char* op) {
  check_real(self, op);
  at::assert_no_internal_overlap(self);  // as CUDA's nullary TensorIterator: an expanded self is refused
  if (self.numel() == 0) return self;
  c10::DeviceGuard guard(self.device());
  const auto state = next_state(gen, self.device());
  NPU_CHECK(npu_kernels::random_fill(stream_of(self), tensor_desc(self, op), args, state));
  return self;
}

// normal with tensor mean and/or std: a standard normal draw, scaled and shifted by ATen's own ops.
at::Tensor& normal_scaled_out(const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> gen,
                              at::Tensor& out) {
  TORCH_CHECK(!std.defined() || std.numel() == 0 || std.lt(0).nonzero().size(0) == 0,
              "normal expects all elements of std >= 0.0");
  NF::normal_(out, 0.0, 1.0, gen);
  out.mul_(std).add_(mean);
  return out;
}

// The largest value random_ draws for a dtype when no `to` is given: 2^digits for floating types (so
// every integer in range is exact), the type's max for integers.
int64_t default_upper(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return int64_t{1} << 24;
    case at::kDouble:
      return int64_t{1} << 53;
    case at::kHalf:
      return int64_t{1} << 11;
    case at::kBFloat16:
      return int64_t{1} << 8;
    case at::kBool:
      return 1;
    case at::kByte:
      return std::numeric_limits<uint8_t>::max();
    case at::kChar:
      return std::numeric_limits<int8_t>::max();
    case at::kShort:
      return std::numeric_limits<int16_t>::max();
    case at::kInt:
      return std::numeric_limits<int32_t>::max();
    case at::kLong:
      return std::numeric_limits<int64_t>::max();
    default:
      TORCH_CHECK(false, "random_: unsupported dtype ", t);
  }
}

// [from, to_inclusive]
at::Tensor& random_inclusive(at::Tensor& self, int64_t from, int64_t to_inclusive, std::optional<at::Generator> gen) {
  npu_kernels::RandomArgs a;
  a.kind = npu_kernels::RandomKind::kFromTo;
  a.ifrom = from;
  a.urange = static_cast<uint64_t>(to_inclusive) - static_cast<uint64_t>(from) + 1;  // 0 = full 2^64
  return fill_random(self, a, gen, "random_");
}

// ATen's refusals for a continuous distribution on an integer or bool tensor (CPU and CUDA alike): a kernel
// named after the op has no such dtype, or (exponential_, cauchy_) an explicit check.
void check_floating(const at::Tensor& self, const char* kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()) || self.is_complex(), "\"", kernel,
                              "\" not implemented for '", c10::toString(self.scalar_type()), "'");
}
// (`type` as ATen prints it there: exponential_ the ScalarType, "Long"; cauchy_ the TypeMeta, "long int")
void check_continuous(const at::Tensor& self, const char* distribution, std::string_view type) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), distribution, " distribution is a continuous probability "
              "distribution. dtype must be a floating point but you specified ", type);
}

}  // namespace

at::Tensor& NF::uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  check_floating(self, "check_uniform_bounds");
  TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  if (self.is_complex()) {  // as ATen: both parts drawn from [from, to)
    auto parts = at::view_as_real(self);
    fill_random(parts, {RandomKind::kUniform, from, to}, gen, "uniform_");
    return self;
  }
  return fill_random(self, {RandomKind::kUniform, from, to}, gen, "uniform_");
}

at::Tensor& NF::normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  check_floating(self, "normal_kernel_npu");
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  if (self.is_complex()) {  // as ATen: both parts normal around `mean`, each with half the variance
    auto parts = at::view_as_real(self);
    fill_random(parts, {RandomKind::kNormal, mean, std / std::sqrt(2.0)}, gen, "normal_");
    return self;
  }
  return fill_random(self, {RandomKind::kNormal, mean, std}, gen, "normal_");
}

at::Tensor NF::normal(const at::Tensor& mean, double std, std::optional<at::Generator> gen) {
  at::Tensor out = at::empty(mean.sizes(), mean.options());
  return NF::normal_out(mean, std, gen, out);
}

at::Tensor& NF::normal_out(const at::Tensor& mean, double std, std::optional<at::Generator> gen, at::Tensor& out) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  at::native::resize_output(out, mean.sizes());
  NF::normal_(out, 0.0, std, gen);
  out.add_(mean);
  return out;
}

at::Tensor NF::normal(double mean, const at::Tensor& std, std::optional<at::Generator> gen) {
  at::Tensor out = at::empty(std.sizes(), std.options());
  return NF::normal_out(mean, std, gen, out);
}

at::Tensor& NF::normal_out(double mean, const at::Tensor& std, std::optional<at::Generator> gen, at::Tensor& out) {
  at::native::resize_output(out, std.sizes());
  TORCH_CHECK(std.numel() == 0 || std.lt(0).nonzero().size(0) == 0, "normal expects all elements of std >= 0.0");
  NF::normal_(out, 0.0, 1.0, gen);
  out.mul_(std).add_(mean);
  return out;
}

at::Tensor NF::normal(const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> gen) {
  at::Tensor out = at::empty(at::infer_size(mean.sizes(), std.sizes()), mean.options());
  return normal_scaled_out(mean, std, gen, out);
}

at::Tensor& NF::normal_out(const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> gen,
                           at::Tensor& out) {
  at::native::resize_output(out, at::infer_size(mean.sizes(), std.sizes()));
  return normal_scaled_out(mean, std, gen, out);
}

at::Tensor& NF::bernoulli_(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  TORCH_CHECK(0 <= p && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  return fill_random(self, {RandomKind::kBernoulli, p}, gen, "bernoulli_");
}

at::Tensor& NF::bernoulli_(at::Tensor& self, const at::Tensor& p, std::optional<at::Generator> gen) {
  check_real(self, "bernoulli_");
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(p.scalar_type()), "bernoulli_: no npu kernel for p of dtype ",
                              p.scalar_type(), " (p must be floating)");
  if (self.numel() == 0) return self;
  c10::DeviceGuard guard(self.device());
  TORCH_CHECK(at::is_expandable_to(p.sizes(), self.sizes()), "bernoulli_: p of shape ", p.sizes(),
              " cannot be broadcast to ", self.sizes());
  const at::Tensor pe = p.to(self.device()).expand(self.sizes());
  const auto state = next_state(gen, self.device());
  NPU_CHECK(npu_kernels::bernoulli_tensor(stream_of(self), tensor_desc(self, "bernoulli_"),
                                          tensor_desc(pe, "bernoulli_"), state));
  return self;
}

at::Tensor NF::bernoulli(const at::Tensor& self, std::optional<at::Generator> gen) {
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Contiguous);
  return NF::bernoulli_(out, self, gen);
}

at::Tensor& NF::bernoulli_out(const at::Tensor& self, std::optional<at::Generator> gen, at::Tensor& out) {
  at::native::resize_output(out, self.sizes());
  return NF::bernoulli_(out, self, gen);
}

at::Tensor& NF::random_(at::Tensor& self, std::optional<at::Generator> gen) {
  return random_inclusive(self, 0, default_upper(self.scalar_type()), gen);
}

at::Tensor& NF::random_(at::Tensor& self, int64_t from, std::optional<int64_t> to, std::optional<at::Generator> gen) {
  if (to.has_value()) {
    TORCH_CHECK(from < *to, "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=", *to);
    return random_inclusive(self, from, *to - 1, gen);
  }
  return random_inclusive(self, from, default_upper(self.scalar_type()), gen);
}

at::Tensor& NF::random_(at::Tensor& self, int64_t to, std::optional<at::Generator> gen) {
  return NF::random_(self, 0, to, gen);
}

at::Tensor& NF::exponential_(at::Tensor& self, double lambd, std::optional<at::Generator> gen) {
  check_continuous(self, "Exponential", c10::toString(self.scalar_type()));
  TORCH_CHECK(lambd > 0.0, "exponential_ expects lambda > 0.0, but found lambda=", lambd);
  return fill_random(self, {RandomKind::kExponential, lambd}, gen, "exponential_");
}

at::Tensor& NF::log_normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  check_floating(self, "log_normal_npu");
  TORCH_CHECK(std > 0.0, "log_normal_ expects std > 0.0, but found std=", std);
  return fill_random(self, {RandomKind::kLogNormal, mean, std}, gen, "log_normal_");
}

at::Tensor& NF::geometric_(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBool, "\"geometric_npu\" not implemented for 'Bool'");
  TORCH_CHECK(0 < p && p < 1, "geometric_ expects p to be in (0, 1), but got p=", p);
  return fill_random(self, {RandomKind::kGeometric, p}, gen, "geometric_");
}

at::Tensor& NF::cauchy_(at::Tensor& self, double median, double sigma, std::optional<at::Generator> gen) {
  check_continuous(self, "Cauchy", self.dtype().name());
  TORCH_CHECK(sigma > 0.0, "cauchy_ expects sigma > 0.0, but found sigma=", sigma);
  return fill_random(self, {RandomKind::kCauchy, median, sigma}, gen, "cauchy_");
}

at::Tensor NF::multinomial(const at::Tensor& self, int64_t n_sample, bool replacement,
                           std::optional<at::Generator> gen) {
  at::Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  return NF::multinomial_out(self, n_sample, replacement, gen, out);
}

at::Tensor& NF::multinomial_out(const at::Tensor& self, int64_t n_sample, bool replacement,
                                std::optional<at::Generator> gen, at::Tensor& out) {
  TORCH_CHECK(n_sample > 0, "cannot sample n_sample <= 0 samples");
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "multinomial only supports floating-point dtypes for input, got: ", self.scalar_type());
  const int64_t cats = self.size(-1);
  TORCH_CHECK(replacement || n_sample <= cats,
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  c10::DeviceGuard guard(self.device());
  const at::Tensor p2 = self.dim() == 1 ? self.unsqueeze(0) : self;
  if (self.dim() == 1) {
    at::native::resize_output(out, {n_sample});
  } else {
    at::native::resize_output(out, {self.size(0), n_sample});
  }
  if (out.numel() == 0) return out;
  const auto state = next_state(gen, self.device());
  into_contiguous(out, [&](const at::Tensor& o) {
    NPU_CHECK(npu_kernels::multinomial(stream_of(self), tensor_desc(p2, "multinomial"), o.data_ptr<int64_t>(), n_sample,
                                       replacement, state));
  });
  return out;
}

namespace {
// The dtypes CPU samples `op` in (its kernels' error otherwise: CPU has no 16-bit gamma or Dirichlet).
void check_sample_dtype(const at::Tensor& t, const char* op, bool with_16_bit) {
  const auto st = t.scalar_type();
  TORCH_CHECK(st == at::kFloat || st == at::kDouble || (with_16_bit && (st == at::kHalf || st == at::kBFloat16)),
              op, ": expected a floating point tensor", with_16_bit ? "" : " of float32 or float64", ", got ", st);
}

// out = a draw per element of `in` by a rejection sampler; out's dtype `dtype`.
template <typename Kernel>
at::Tensor sample_like(const at::Tensor& in, at::ScalarType dtype, const std::optional<at::Generator>& gen,
                       const char* op, Kernel kernel) {
  c10::DeviceGuard guard(in.device());
  at::Tensor out = at::empty(in.sizes(), in.options().dtype(dtype));
  if (out.numel() == 0) return out;
  const auto state = next_state(gen, in.device());
  NPU_CHECK(kernel(stream_of(in), tensor_desc(out, op), tensor_desc(in, op), state));
  return out;
}
}  // namespace

at::Tensor NF::poisson(const at::Tensor& self, std::optional<at::Generator> gen) {
  check_sample_dtype(self, "poisson", /*with_16_bit=*/true);
  return sample_like(self, self.scalar_type(), gen, "poisson", npu_kernels::poisson);
}

at::Tensor NF::_standard_gamma(const at::Tensor& self, std::optional<at::Generator> gen) {
  check_sample_dtype(self, "_standard_gamma", /*with_16_bit=*/false);
  return sample_like(self, self.scalar_type(), gen, "_standard_gamma", npu_kernels::standard_gamma);
}

// torch.binomial: one draw per element of the broadcast of count and prob (CPU's output shape, without its
// resize warning); both floating, of one dtype (float16 / bfloat16 too, as CUDA).
at::Tensor NF::binomial(const at::Tensor& count, const at::Tensor& prob, std::optional<at::Generator> gen) {
  TORCH_CHECK_VALUE(at::isFloatingType(count.scalar_type()),
                    "binomial only supports floating-point dtypes for count, got: ", count.scalar_type());
  TORCH_CHECK_VALUE(at::isFloatingType(prob.scalar_type()),
                    "binomial only supports floating-point dtypes for prob, got: ", prob.scalar_type());
  TORCH_CHECK(prob.scalar_type() == count.scalar_type(), "Found dtype ", prob.scalar_type(), " but expected ",
              count.scalar_type());
  check_device_arg("binomial", "prob", prob, count.device());
  c10::DeviceGuard guard(count.device());
  const auto shape = at::infer_size(count.sizes(), prob.sizes());
  at::Tensor out = at::empty(shape, count.options());
  if (out.numel() == 0) return out;
  const auto state = next_state(gen, count.device());
  NPU_CHECK(npu_kernels::binomial(stream_of(out), tensor_desc(out, "binomial"),
                                  tensor_desc(count.expand(shape), "binomial"), tensor_desc(prob.expand(shape), "binomial"),
                                  state));
  return out;
}

// CPU's _s_dirichlet: gamma draws in double (no underflow), normalised along the last dim, then clamped to
// [the dtype's smallest normal, the float below 1].
at::Tensor NF::_sample_dirichlet(const at::Tensor& self, std::optional<at::Generator> gen) {
  check_sample_dtype(self, "_sample_dirichlet", /*with_16_bit=*/false);
  const at::Tensor g = sample_like(self, at::kDouble, gen, "_sample_dirichlet", npu_kernels::standard_gamma);
  if (g.numel() == 0) return g.to(self.scalar_type());
  const at::Tensor r = g.div(g.sum(-1, /*keepdim=*/true)).to(self.scalar_type());
  if (self.scalar_type() == at::kFloat) {
    return r.clamp_(std::numeric_limits<float>::min(), std::nextafter(1.0f, 0.0f));
  }
  return r.clamp_(std::numeric_limits<double>::min(), std::nextafter(1.0, 0.0));
}

at::Tensor& NF::randperm_out(int64_t n, std::optional<at::Generator> gen, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  out.resize_({n});
  if (n == 0) return out;
  c10::DeviceGuard guard(out.device());
  const auto state = next_state(gen, out.device());
  NPU_CHECK(npu_kernels::randperm(stream_of(out), tensor_desc(out, "randperm"), state));
  return out;
}

std::tuple<at::Tensor, at::Tensor> NF::native_dropout(const at::Tensor& input, double p, std::optional<bool> train) {
  c10::DeviceGuard guard(input.device());
  TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  if (input.numel() == 0 || !train.value_or(true) || p == 0.0) {
    return {input.clone(), at::ones_like(input, input.options().dtype(at::kBool))};
  }
  at::Tensor out = at::empty_like(input, at::MemoryFormat::Contiguous);
  at::Tensor mask = at::empty(input.sizes(), input.options().dtype(at::kBool));
  const double scale = p == 1.0 ? 0.0 : 1.0 / (1.0 - p);
  const auto state = next_state(std::nullopt, input.device());
  NPU_CHECK(npu_kernels::dropout(stream_of(input), tensor_desc(out, "native_dropout"), mask.data_ptr<bool>(),
                                 tensor_desc(input, "native_dropout"), p, scale, state));
  return {out, mask};
}

at::Tensor NF::native_dropout_backward(const at::Tensor& grad, const at::Tensor& mask, double scale) {
  c10::DeviceGuard guard(grad.device());
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Mask should be Bool Scalar Type", mask.scalar_type());
  // CUDA's kernel is floating-only (CPU's grad * mask * scale would promote an integer grad to float)
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(grad.scalar_type()), "\"masked_scale\" not implemented for '",
                              c10::toString(grad.scalar_type()), "'");
  // as CUDA's TensorIterator with grad's shape as output: the mask must broadcast to grad (checked for empty
  // grads too)
  TORCH_CHECK(at::is_expandable_to(mask.sizes(), grad.sizes()), "native_dropout_backward: mask of shape ",
              mask.sizes(), " doesn't match the broadcast shape ", grad.sizes());
  at::Tensor out = at::empty_like(grad, at::MemoryFormat::Contiguous);
  if (out.numel() == 0) return out;
  const at::Tensor m = mask.expand(grad.sizes());
  NPU_CHECK(npu_kernels::dropout_backward(stream_of(grad), tensor_desc(out, "native_dropout_backward"),
                                          tensor_desc(grad, "native_dropout_backward"),
                                          tensor_desc(m, "native_dropout_backward"), scale));
  return out;
}

}  // namespace torch_npu_sim
