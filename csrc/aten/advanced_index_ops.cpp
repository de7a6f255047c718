// Advanced indexing and masks on npu: index.Tensor (x[idx]), _index_put_impl_,
// masked_scatter_, masked_select and nonzero. Shapes come from ATen's own index helpers (expandTensors,
// transposeToFront), the device work from kernels/src/index.cpp.
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/IndexingUtils.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/ReductionType.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/gather_meta.h>
#include <ATen/ops/index_add_meta.h>
#include <ATen/ops/index_copy_meta.h>
#include <ATen/ops/index_reduce_meta.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/nonzero_native.h>
#include <ATen/ops/scatter_add_meta.h>
#include <ATen/ops/scatter_meta.h>
#include <ATen/ops/scatter_reduce_meta.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/npu_tensor.h"
#include "aten/structured.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "npu_kernels/index.h"
#include "aten/index_util.h"
#include "npu_native_functions.h"

namespace torch_npu_sim {

using NF = NPUNativeFunctions;
namespace {

using namespace index_util;

// ---- advanced indexing -----------------------------------------------------------------------------

// What CPU/CUDA's AdvancedIndex holds: the restrided self and the broadcast int64 indices, all with the
// result shape; built with ATen's own expandTensors / expand_outplace / transposeToFront.
struct IndexPlan {
  at::Tensor self;  // possibly permuted view of the input
  std::vector<at::Tensor> indices;  // defined ones, broadcast to each other, int64 on self's device
  std::vector<int64_t> result_sizes;
  int64_t before = 0, after = 0;
  std::vector<int64_t> indexed_sizes, indexed_strides;
};

IndexPlan plan_index(const at::Tensor& self_in, const c10::List<std::optional<at::Tensor>>& orig, const char* op) {
  // Reached with a CPU self only when an index is on npu: CUDA refuses that too.
  TORCH_CHECK_INDEX(is_npu(self_in), "indices should be either on cpu or on the same device as the indexed tensor (",
                    self_in.device(), ")");
  TORCH_CHECK_INDEX(static_cast<int64_t>(orig.size()) <= self_in.dim(), "too many indices for tensor of dimension ",
                    self_in.dim(), " (got ", orig.size(), ")");
  at::native::checkIndexTensorTypes(orig, /*allow_int=*/true);
  // CPU indices are accepted (as CUDA does): masks are expanded where they are, then moved.
  std::vector<at::Tensor> indices = at::native::expandTensors(self_in, orig);
  for (auto& t : indices) {
    if (t.defined()) t = t.to(self_in.device(), at::kLong);
  }
  std::vector<at::Tensor> defined;
  for (auto& t : indices) {
    if (t.defined()) defined.push_back(t);
  }
  try {
    defined = at::expand_outplace(defined);
  } catch (std::exception&) {
    TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together");
  }
  size_t k = 0;
  for (auto& t : indices) {
    if (t.defined()) t = defined[k++];
  }
  while (static_cast<int64_t>(indices.size()) < self_in.dim()) indices.emplace_back();
  IndexPlan p;
  p.self = self_in;
  if (!at::native::hasContiguousSubspace(indices)) std::tie(p.self, indices) = at::native::transposeToFront(p.self, indices);
  at::IntArrayRef rep;
  for (int64_t d = 0; d < p.self.dim(); ++d) {
    if (!indices[d].defined()) {
      (p.indices.empty() ? p.before : p.after)++;
    } else {
      p.indices.push_back(indices[d]);
      p.indexed_sizes.push_back(p.self.size(d));
      p.indexed_strides.push_back(p.self.stride(d));
      rep = indices[d].sizes();
      TORCH_CHECK_INDEX(p.self.size(d) != 0 || indices[d].numel() == 0, op,
                        "(): index is out of bounds for dimension with size 0");
    }
  }
  TORCH_CHECK(static_cast<int>(p.indices.size()) <= npu_kernels::kMaxIndices, op, ": at most ",
              npu_kernels::kMaxIndices, " index tensors are supported on npu");
  for (int64_t d = 0; d < p.before; ++d) p.result_sizes.push_back(p.self.size(d));
  for (auto s : rep) p.result_sizes.push_back(s);
  for (int64_t d = p.self.dim() - p.after; d < p.self.dim(); ++d) p.result_sizes.push_back(p.self.size(d));
  return p;
}

npu_kernels::AdvancedIndexArgs index_args(const IndexPlan& p, const char* op) {
  npu_kernels::AdvancedIndexArgs a;
  a.op = op;
  const int64_t nrep = static_cast<int64_t>(p.result_sizes.size()) - p.before - p.after;
  const int nd = static_cast<int>(p.result_sizes.size());
  TORCH_CHECK(nd <= npu_kernels::kMaxDims, op, ": too many dimensions");
  // data: self's strides on the kept dims, 0 on the replaced ones
  auto sd = tensor_desc(p.self, op);
  a.data = sd;
  a.data.ndim = nd;
  for (int i = 0; i < nd; ++i) {
    a.data.sizes[i] = p.result_sizes[i];
    if (i < p.before) {
      a.data.strides[i] = sd.strides[i];
    } else if (i < p.before + nrep) {
      a.data.strides[i] = 0;
    } else {
      a.data.strides[i] = sd.strides[p.self.dim() - (nd - i)];
    }
  }
  a.nindex = static_cast<int>(p.indices.size());
  for (int k = 0; k < a.nindex; ++k) {
    const auto& ix = p.indices[k];
    auto d = tensor_desc(ix, op);
    d.ndim = nd;
    for (int i = 0; i < nd; ++i) {
      d.sizes[i] = p.result_sizes[i];
      d.strides[i] = (i >= p.before && i < p.before + nrep) ? ix.stride(i - p.before) : 0;
    }
    a.index[k] = d;
    a.indexed_sizes[k] = p.indexed_sizes[k];
    a.indexed_strides[k] = p.indexed_strides[k];
  }
  return a;
}

// ---- masks -----------------------------------------------------------------------------------------

// Reads a device int64 count (syncs: the result's size depends on it, as on CUDA).
int64_t device_count_of(const at::Tensor& t, const char* op) {
  at::Tensor c = at::empty({}, t.options().dtype(at::kLong));
  NPU_CHECK(npu_kernels::count_nonzero(stream_of(t), tensor_desc(t, op), c.data_ptr<int64_t>()));
  return c.item<int64_t>();
}

}  // namespace

at::Tensor NF::index(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  c10::DeviceGuard guard(self.device());
  const auto p = plan_index(self, indices, "index");
  at::Tensor out = at::empty(p.result_sizes, self.options());
  if (out.numel() == 0) return out;
  auto a = index_args(p, "index");
  a.other = tensor_desc(out, "index");
  NPU_CHECK(npu_kernels::advanced_index(stream_of(self), a));
  return out;
}

at::Tensor& NF::_index_put_impl_(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                                 const at::Tensor& values, bool accumulate, bool /*unsafe*/) {
  TORCH_CHECK_INDEX(self.scalar_type() == values.scalar_type(),
                    "Index put requires the source and destination dtypes match, got ", self.scalar_type(),
                    " for the destination and ", values.scalar_type(), " for the source.");
  c10::DeviceGuard guard(self.device());
  const auto p = plan_index(self, indices, "index_put_");
  check_device_arg("index_put_", "values", values, self.device(), /*cpu_allowed=*/values.dim() == 0);
  at::Tensor v = values.to(self.device());
  TORCH_CHECK(at::is_expandable_to(v.sizes(), p.result_sizes), "shape mismatch: value tensor of shape ", v.sizes(),
              " cannot be broadcast to indexing result of shape ", at::IntArrayRef(p.result_sizes));
  v = v.expand(p.result_sizes);
  if (v.numel() == 0) return self;
  auto a = index_args(p, "index_put_");
  a.other = tensor_desc(v, "index_put_");
  a.put = true;
  a.accumulate = accumulate;
  NPU_CHECK(npu_kernels::advanced_index(stream_of(self), a));
  return self;
}

at::Tensor NF::nonzero(const at::Tensor& self) {
  at::Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  return NF::nonzero_out(self, out);
}

at::Tensor& NF::nonzero_out(const at::Tensor& self, at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == at::kLong, "nonzero: expected out to have dtype int64");
  c10::DeviceGuard guard(self.device());
  const int64_t n = self.numel() == 0 ? 0 : device_count_of(self, "nonzero");
  at::native::resize_output(out, {n, self.dim()});
  if (n == 0 || self.dim() == 0) return out;
  into_contiguous(out, [&](const at::Tensor& o) {
    NPU_CHECK(npu_kernels::nonzero(stream_of(self), tensor_desc(self, "nonzero"), o.data_ptr<int64_t>(), n));
  });
  return out;
}

// nonzero_static: the first `size` coordinates, the rest fill_value, with no host sync (the kernel stops at `size`).
at::Tensor NF::nonzero_static(const at::Tensor& self, int64_t size, int64_t fill_value) {
  at::Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  return NF::nonzero_static_out(self, size, fill_value, out);
}

at::Tensor& NF::nonzero_static_out(const at::Tensor& self, int64_t size, int64_t fill_value, at::Tensor& out) {
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer");
  TORCH_CHECK(out.scalar_type() == at::kLong, "nonzero_static: Expected out tensor to have scalar type Long but got ",
              "scalar type", out.scalar_type());
  c10::DeviceGuard guard(self.device());
  at::native::resize_output(out, {size, self.dim()});
  if (out.numel() == 0) return out;
  into_contiguous(out, [&](const at::Tensor& o) {
    o.fill_(fill_value);
    if (self.numel() > 0) {
      NPU_CHECK(npu_kernels::nonzero(stream_of(self), tensor_desc(self, "nonzero_static"), o.data_ptr<int64_t>(), size));
    }
  });
  return out;
}

at::Tensor NF::masked_select(const at::Tensor& self, const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  c10::DeviceGuard guard(self.device());
  check_device_arg("masked_select", "mask", mask, self.device(), /*cpu_allowed=*/true);  // as CUDA's indexing
  const at::Tensor mask_dev = mask.to(self.device());
  auto [s, m] = at::expand_outplace(self, mask_dev);
  const int64_t n = s->numel() == 0 ? 0 : device_count_of(*m, "masked_select");
  at::Tensor out = at::empty({n}, self.options());
  if (n == 0) return out;
  NPU_CHECK(npu_kernels::masked_select(stream_of(self), tensor_desc(*s, "masked_select"),
                                       tensor_desc(*m, "masked_select"), out.data_ptr(), n));
  return out;
}

at::Tensor& NF::masked_scatter_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter_: expected self and source to have same dtypes but got ", self.scalar_type(), " and ",
              source.scalar_type());
  c10::DeviceGuard guard(self.device());
  if (self.numel() == 0) return self;
  TORCH_CHECK(at::is_expandable_to(mask.sizes(), self.sizes()), "masked_scatter_: mask of shape ", mask.sizes(),
              " cannot be broadcast to ", self.sizes());
  check_device_arg("masked_scatter_", "mask", mask, self.device());
  check_device_arg("masked_scatter_", "source", source, self.device());
  const at::Tensor m = mask.expand(self.sizes());
  const at::Tensor src = source.contiguous();
  NPU_CHECK(npu_kernels::masked_scatter(stream_of(self), tensor_desc(self, "masked_scatter_"),
                                        tensor_desc(m, "masked_scatter_"), src.const_data_ptr(), src.numel()));
  return self;
}

}  // namespace torch_npu_sim
