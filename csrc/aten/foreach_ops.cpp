// The _foreach_* ops (torch.optim's default "foreach" path) for npu. The ops the optimizers' update
// steps use (arithmetic with a scalar, a uniform scalar list or a second list, lerp, addcmul/addcdiv,
// sqrt and a few unary ops) run as one multi-tensor launch of the elementwise engine when every tensor
// is a contiguous npu tensor of one floating dtype; anything else, and every other _foreach op, runs
// the CPU kernel's composition of per-tensor ATen ops (the "slow" foreach path, or the op's
// CompositeExplicitAutograd kernel) on the npu tensors: a boxed kernel re-dispatches to it *without
// moving data*, and each per-tensor op it issues dispatches to our native kernels. The ops are listed in
// csrc/aten/ops.yaml (every aten::_foreach_* op with a CPU kernel, and the natively handled ones).
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aten/npu_tensor.h"
#include "aten/pointwise.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/pointwise.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {
namespace {

using npu_kernels::BinaryOp;
using npu_kernels::TernaryOp;
using npu_kernels::UnaryOp;

// What a natively handled _foreach op computes: out[i] = op(self[i], <lists[i]...>, scalar) with the
// kernel's op enum; `scalar_operand`: the op's Scalar is the second operand (mul(x, s)), otherwise it is
// PointwiseParams::a (alpha, lerp weight, addcmul value).
struct Native {
  enum Kind { kUnary, kBinary, kTernary } kind;
  int op;
  int lists;            // tensor lists after self
  bool scalar_operand;  // binary: the Scalar (or uniform ScalarList) is the second operand
  bool has_scalar;      // a Scalar / Scalar[] argument follows the lists
};

const std::map<std::string, Native>& native_table() {
  static const std::map<std::string, Native> table = [] {
    std::map<std::string, Native> t;
    auto both = [&](const std::string& base, const std::string& overload, Native n) {
      const std::string suffix = overload.empty() ? "" : "." + overload;
      t["aten::_foreach_" + base + suffix] = n;
      t["aten::_foreach_" + base + "_" + suffix] = n;
    };
    for (auto [name, op] : {std::pair{"add", BinaryOp::kAdd}, {"sub", BinaryOp::kSub}, {"mul", BinaryOp::kMul},
                            {"div", BinaryOp::kDiv}}) {
      const int o = static_cast<int>(op);
      both(name, "Scalar", {Native::kBinary, o, 0, true, true});
      both(name, "ScalarList", {Native::kBinary, o, 0, true, true});
      both(name, "List", {Native::kBinary, o, 1, false, op == BinaryOp::kAdd || op == BinaryOp::kSub});
    }
    both("lerp", "Scalar", {Native::kBinary, static_cast<int>(BinaryOp::kLerpScalar), 1, false, true});
    for (auto [name, op] : {std::pair{"addcmul", TernaryOp::kAddcmul}, {"addcdiv", TernaryOp::kAddcdiv}}) {
      both(name, "Scalar", {Native::kTernary, static_cast<int>(op), 2, false, true});
      both(name, "ScalarList", {Native::kTernary, static_cast<int>(op), 2, false, true});
    }
    for (auto [name, op] : {std::pair{"sqrt", UnaryOp::kSqrt}, {"neg", UnaryOp::kNeg},
                            {"reciprocal", UnaryOp::kReciprocal}, {"exp", UnaryOp::kExp}, {"abs", UnaryOp::kAbs},
                            {"sign", UnaryOp::kSign}}) {
      both(name, "", {Native::kUnary, static_cast<int>(op), 0, false, false});
    }
    return t;
  }();
  return table;
}

void composite_cpu_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
}

// The op's Scalar argument as one double: a Scalar, or a Scalar[] whose entries are all equal (the
// optimizers' per-parameter step sizes, equal while every parameter has taken the same number of steps).
std::optional<double> uniform_scalar(const c10::IValue& v, std::size_t n) {
  if (v.isScalar()) {
    const c10::Scalar s = v.toScalar();
    if (s.isComplex() || s.isBoolean()) return std::nullopt;
    return s.toDouble();
  }
  if (!v.isList()) return std::nullopt;
  const auto list = v.toListRef();
  if (list.size() != n || n == 0) return std::nullopt;
  std::optional<double> value;
  for (const c10::IValue& x : list) {
    if (!x.isScalar() || x.toScalar().isComplex() || x.toScalar().isBoolean()) return std::nullopt;
    const double d = x.toScalar().toDouble();
    if (value && *value != d) return std::nullopt;
    value = d;
  }
  return value;
}

bool fast_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// One contiguous 1-D part: out = op(inputs...).
npu_kernels::ElementwiseIter part(const at::Tensor& out, const std::vector<const at::Tensor*>& ins,
                                  npu_kernels::DType dt, std::optional<double> scalar_operand, at::ScalarType type) {
  npu_kernels::ElementwiseIter e;
  e.ndim = 1;
  e.shape[0] = out.numel();
  e.in_dtype = e.out_dtype = dt;
  e.ninputs = static_cast<int>(ins.size()) + (scalar_operand ? 1 : 0);
  const int64_t esz = out.element_size();
  e.data[0] = out.data_ptr();
  e.strides[0][0] = esz;
  for (std::size_t k = 0; k < ins.size(); ++k) {
    e.data[k + 1] = const_cast<void*>(ins[k]->const_data_ptr());
    e.strides[k + 1][0] = esz;
  }
  if (scalar_operand) {
    const int k = e.ninputs;
    e.is_scalar[k] = true;
    write_scalar(c10::Scalar(*scalar_operand), type, e.scalar_bytes[k]);
  }
  return e;
}

// In place, the parts run concurrently: no tensor of `self` may appear twice, nor as an input of another
// position (the per-tensor composition would see the earlier update there).
bool independent(const std::vector<at::Tensor>& self, const std::vector<std::vector<at::Tensor>>& lists) {
  std::map<const void*, std::size_t> pos;
  for (std::size_t i = 0; i < self.size(); ++i) {
    if (!pos.emplace(self[i].const_data_ptr(), i).second) return false;
  }
  for (const auto& l : lists) {
    for (std::size_t j = 0; j < l.size(); ++j) {
      const auto it = pos.find(l[j].const_data_ptr());
      if (it != pos.end() && it->second != j) return false;
    }
  }
  return true;
}

// Runs the op as one multi-tensor launch if it qualifies; false (stack untouched) otherwise.
bool try_native(const c10::OperatorHandle& op, const Native& n, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const std::size_t nargs = schema.arguments().size();
  const auto args = torch::jit::last(*stack, nargs);
  const bool inplace = schema.name().back() == '_';
  const std::vector<at::Tensor> self = args[0].toTensorVector();
  if (self.empty()) return false;
  std::vector<std::vector<at::Tensor>> lists;
  for (int l = 0; l < n.lists; ++l) lists.push_back(args[1 + l].toTensorVector());
  std::optional<double> scalar;
  if (n.has_scalar) {
    // The Scalar, Scalar[] or (List add/sub) alpha follows the lists.
    scalar = uniform_scalar(args[1 + n.lists], self.size());
    if (!scalar) return false;
  }
  const at::Tensor& ref = self[0];
  if (!is_npu(ref) || !fast_dtype(ref.scalar_type())) return false;
  for (std::size_t i = 0; i < self.size(); ++i) {
    auto ok = [&](const at::Tensor& t) {
      return t.defined() && t.device() == ref.device() && t.scalar_type() == ref.scalar_type() && t.is_contiguous() &&
             t.sizes() == self[i].sizes();
    };
    if (!ok(self[i])) return false;
    for (const auto& l : lists) {
      if (l.size() != self.size() || !ok(l[i])) return false;
    }
  }
  if (inplace && !independent(self, lists)) return false;
  c10::DeviceGuard guard(ref.device());
  std::vector<at::Tensor> outs;
  if (!inplace) {
    outs.reserve(self.size());
    for (const at::Tensor& t : self) outs.push_back(at::empty_like(t));
  }
  const npu_kernels::DType dt = kernel_dtype(ref.scalar_type(), schema.name().c_str());
  std::vector<npu_kernels::ElementwiseIter> parts;
  parts.reserve(self.size());
  for (std::size_t i = 0; i < self.size(); ++i) {
    std::vector<const at::Tensor*> ins{&self[i]};
    for (const auto& l : lists) ins.push_back(&l[i]);
    const bool operand = n.kind == Native::kBinary && n.scalar_operand;
    parts.push_back(part(inplace ? self[i] : outs[i], ins, dt, operand ? scalar : std::nullopt, ref.scalar_type()));
  }
  npu_kernels::ElementwiseIter batch;
  batch.in_dtype = batch.out_dtype = dt;
  batch.ninputs = parts[0].ninputs;
  batch.parts = parts.data();
  batch.nparts = static_cast<int>(parts.size());
  npu_kernels::PointwiseParams p;
  p.a = (n.has_scalar && !n.scalar_operand) ? *scalar : 1.0;  // alpha / weight / value; 1 = plain add/sub
  p.has_a = true;
  const npu_sim::Stream s = current_native_stream(ref.device().index());
  npu_sim::Status status = npu_sim::Status::kInvalidValue;
  switch (n.kind) {
    case Native::kUnary: status = npu_kernels::unary(s, static_cast<UnaryOp>(n.op), batch, p); break;
    case Native::kBinary: status = npu_kernels::binary(s, static_cast<BinaryOp>(n.op), batch, p); break;
    case Native::kTernary: status = npu_kernels::ternary(s, static_cast<TernaryOp>(n.op), batch, p); break;
  }
  NPU_CHECK(status);
  torch::jit::drop(*stack, nargs);
  if (!inplace) torch::jit::push(*stack, c10::IValue(outs));
  return true;
}

}  // namespace

// The one boxed kernel of every _foreach op in the table: natively when it can, else the composite.
void NPUNativeFunctions::foreach_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet /*ks*/,
                                        torch::jit::Stack* stack) {
  const auto& table = native_table();
  const auto& name = op.schema().operator_name();
  const std::string full = name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
  const auto it = table.find(full);
  if (it != table.end() && try_native(op, it->second, stack)) return;
  composite_cpu_kernel(op, stack);
}

}  // namespace torch_npu_sim
