// The collectives of HcclBackend: argument checks, contiguous staging, and the body each one runs on the
// communication stream (see launch() in hccl_backend.cpp and the algorithms in collectives.cpp).
#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cstring>

#include "aten/npu_tensor.h"
#include "distributed/hccl_backend.h"

namespace torch_npu_sim {

namespace {

using hccl_sim::CommContext;
using npu_kernels::DType;
using npu_kernels::ReduceKind;

// What a c10d::ReduceOp means for the element math: the reduction plus an optional pre-scale
// (PREMUL_SUM) or post-division (AVG).
struct ReduceSpec {
  ReduceKind kind = ReduceKind::kSum;
  bool premul = false;
  double factor = 1.0;
  bool average = false;
};

ReduceSpec reduce_spec(const c10d::ReduceOp& op, at::ScalarType st, const char* name) {
  ReduceSpec s;
  switch (op.op_) {
    case c10d::ReduceOp::SUM: s.kind = ReduceKind::kSum; break;
    case c10d::ReduceOp::PRODUCT: s.kind = ReduceKind::kProd; break;
    case c10d::ReduceOp::MIN: s.kind = ReduceKind::kMin; break;
    case c10d::ReduceOp::MAX: s.kind = ReduceKind::kMax; break;
    case c10d::ReduceOp::BAND: s.kind = ReduceKind::kBand; break;
    case c10d::ReduceOp::BOR: s.kind = ReduceKind::kBor; break;
    case c10d::ReduceOp::BXOR: s.kind = ReduceKind::kBxor; break;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK(st != at::kBool, "hccl: ", name, ": ReduceOp.AVG is not defined for bool tensors");
      s.average = true;
      break;
    case c10d::ReduceOp::PREMUL_SUM: {
      TORCH_CHECK(at::isFloatingType(st) || at::isComplexType(st), "hccl: ", name,
                  ": PREMUL_SUM needs a floating-point tensor, got ", st);
      auto* sup = dynamic_cast<c10d::PreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(sup, "hccl: ", name, ": PREMUL_SUM without its factor");
      s.premul = true;
      s.factor = sup->tensor_factor.defined() ? sup->tensor_factor.item<double>() : sup->double_factor;
      break;
    }
    default: TORCH_CHECK(false, "hccl: ", name, ": unsupported reduce op ", static_cast<int>(op.op_));
  }
  const DType dt = kernel_dtype(st, name);
  TORCH_CHECK(npu_kernels::reduce_supported(dt, s.kind), "hccl: ", name, ": reduce op ",
              npu_kernels::reduce_kind_name(s.kind), " is not defined for dtype ", st);
  return s;
}

// Runs the reduction of `count` elements at `buf` with the spec's pre/post steps.
void allreduce_with(CommContext& c, void* buf, std::size_t count, DType dt, const ReduceSpec& s) {
  if (s.premul) npu_kernels::scale_inplace(dt, buf, count, s.factor);
  hccl_sim::allreduce(c, buf, count, dt, s.kind);
  if (s.average) npu_kernels::divide_inplace(dt, buf, count, c.t.size());
}

// reduce_scatter with the spec's pre/post steps: blocks[p] is this rank's input block for rank p. PREMUL_SUM
// scales a private copy of the inputs (the user's stay unchanged); every other op reads them in place.
void reduce_scatter_with(CommContext& c, std::vector<const void*> blocks, void* out, std::size_t count, DType dt,
                         const ReduceSpec& s) {
  std::vector<char> scaled;
  if (s.premul) {
    const std::size_t bytes = count * npu_kernels::dtype_size(dt);
    scaled.resize(bytes * blocks.size());
    for (std::size_t r = 0; r < blocks.size(); ++r) {
      if (bytes) std::memcpy(scaled.data() + bytes * r, blocks[r], bytes);
      blocks[r] = scaled.data() + bytes * r;
    }
    npu_kernels::scale_inplace(dt, scaled.data(), count * blocks.size(), s.factor);
  }
  hccl_sim::reduce_scatter(c, blocks, out, count, dt, s.kind);
  if (s.average) npu_kernels::divide_inplace(dt, out, count, c.t.size());
}

// The frames' header: op, dtype and size, and in the tag the reduce op and root, which every rank must agree on.
hccl_sim::MsgHeader header(c10d::OpType op, const at::Tensor& t, uint64_t numel, int reduce_op = -1, int root = -1) {
  hccl_sim::MsgHeader h;
  h.op = static_cast<uint16_t>(op);
  h.dtype = static_cast<int8_t>(t.scalar_type());
  h.numel = numel;
  h.tag = hccl_sim::collective_tag(reduce_op, root);
  return h;
}

void check_one(const std::vector<at::Tensor>& ts, const char* name) {
  TORCH_CHECK(ts.size() == 1, "hccl: ", name, ": expected exactly one tensor per process, got ", ts.size());
}

void check_same(const at::Tensor& a, const at::Tensor& b, const char* name, const char* what) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "hccl: ", name, ": ", what, " dtype ", b.scalar_type(),
              " does not match the input's ", a.scalar_type());
}

}  // namespace

c10::intrusive_ptr<c10d::Work> HcclBackend::allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) {
  check_one(tensors, "allreduce");
  device_for(tensors[0], "allreduce");
  const ReduceSpec spec = reduce_spec(opts.reduceOp, tensors[0].scalar_type(), "allreduce");
  Launch l{c10d::OpType::ALLREDUCE, "allreduce", header(c10d::OpType::ALLREDUCE, tensors[0], tensors[0].numel(), opts.reduceOp.op_), {}, tensors};
  l.timeout = opts.timeout;
  at::Tensor t = contiguous_for(l, tensors[0], true);
  void* p = t.data_ptr();
  const std::size_t n = t.numel();
  const DType dt = kernel_dtype(t.scalar_type(), "allreduce");
  return launch(std::move(l), [=](CommContext& c) { allreduce_with(c, p, n, dt, spec); });
}

c10::intrusive_ptr<c10d::Work> HcclBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "hccl: allreduce_coalesced: no tensors");
  Launch l{c10d::OpType::ALLREDUCE_COALESCED, "allreduce_coalesced",
           header(c10d::OpType::ALLREDUCE_COALESCED, tensors[0], tensors.size(), opts.reduceOp.op_), {}, tensors};
  l.timeout = opts.timeout;
  struct Item { void* p; std::size_t n; DType dt; ReduceSpec spec; };
  std::vector<Item> items;
  for (auto& t : tensors) {
    device_for(t, "allreduce_coalesced");
    const ReduceSpec spec = reduce_spec(opts.reduceOp, t.scalar_type(), "allreduce_coalesced");
    at::Tensor c = contiguous_for(l, t, true);
    items.push_back({c.data_ptr(), static_cast<std::size_t>(c.numel()), kernel_dtype(c.scalar_type(), "allreduce_coalesced"), spec});
  }
  return launch(std::move(l), [items](CommContext& c) {
    for (const auto& it : items) {
      c.base.dtype = static_cast<int8_t>(it.dt);
      c.base.numel = it.n;
      allreduce_with(c, it.p, it.n, it.dt, it.spec);
    }
  });
}

c10::intrusive_ptr<c10d::Work> HcclBackend::broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) {
  check_one(tensors, "broadcast");
  device_for(tensors[0], "broadcast");
  const int root = static_cast<int>(opts.rootRank);
  TORCH_CHECK(root >= 0 && root < getSize(), "hccl: broadcast: invalid root rank ", root);
  Launch l{c10d::OpType::BROADCAST, "broadcast", header(c10d::OpType::BROADCAST, tensors[0], tensors[0].numel(), -1, root), {}, tensors};
  l.timeout = opts.timeout;
  at::Tensor t = contiguous_for(l, tensors[0], getRank() != root);
  void* p = t.data_ptr();
  const std::size_t bytes = t.nbytes();
  return launch(std::move(l), [=](CommContext& c) { hccl_sim::broadcast(c, p, bytes, root); });
}

c10::intrusive_ptr<c10d::Work> HcclBackend::reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) {
  check_one(tensors, "reduce");
  device_for(tensors[0], "reduce");
  const int root = static_cast<int>(opts.rootRank);
  TORCH_CHECK(root >= 0 && root < getSize(), "hccl: reduce: invalid root rank ", root);
  const ReduceSpec spec = reduce_spec(opts.reduceOp, tensors[0].scalar_type(), "reduce");
  Launch l{c10d::OpType::REDUCE, "reduce", header(c10d::OpType::REDUCE, tensors[0], tensors[0].numel(), opts.reduceOp.op_, root), {}, tensors};
  l.timeout = opts.timeout;
  const bool is_root = getRank() == root;
  at::Tensor t = contiguous_for(l, tensors[0], is_root);
  void* p = t.data_ptr();
  const std::size_t n = t.numel(), bytes = t.nbytes();
  const DType dt = kernel_dtype(t.scalar_type(), "reduce");
  return launch(std::move(l), [=](CommContext& c) {
    if (is_root) return allreduce_with(c, p, n, dt, spec);
    char* scratch = hccl_sim::scratch(c, bytes);  // non-root inputs stay unchanged
    if (bytes) std::memcpy(scratch, p, bytes);
    allreduce_with(c, scratch, n, dt, spec);
  });
}

c10::intrusive_ptr<c10d::Work> HcclBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                      std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions& opts) {
  std::vector<at::Tensor> ins = inputs;
  return allgather_coalesced(outputs, ins, opts);
}

c10::intrusive_ptr<c10d::Work> HcclBackend::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                                std::vector<at::Tensor>& inputs,
                                                                const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(!inputs.empty() && outputs.size() == inputs.size(), "hccl: allgather: expected one output list per input, got ",
              outputs.size(), " lists for ", inputs.size(), " inputs");
  Launch l{c10d::OpType::ALLGATHER, "allgather", header(c10d::OpType::ALLGATHER, inputs[0], inputs[0].numel()), {}, {}};
  l.timeout = opts.timeout;
  struct Item { const void* in; std::vector<void*> out; std::size_t bytes; int8_t dt; uint64_t numel; };
  std::vector<Item> items;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    device_for(inputs[i], "allgather");
    TORCH_CHECK(static_cast<int>(outputs[i].size()) == getSize(), "hccl: allgather: expected ", getSize(),
                " output tensors, got ", outputs[i].size());
    Item it;
    at::Tensor in = contiguous_for(l, inputs[i], false);
    it.in = in.const_data_ptr();
    it.bytes = in.nbytes();
    it.dt = static_cast<int8_t>(in.scalar_type());
    it.numel = in.numel();
    for (auto& o : outputs[i]) {
      device_for(o, "allgather");
      check_same(in, o, "allgather", "output");
      TORCH_CHECK(o.numel() == in.numel(), "hccl: allgather: output has ", o.numel(), " elements, input ", in.numel());
      it.out.push_back(contiguous_for(l, o, true).data_ptr());
      l.outputs.push_back(o);
    }
    items.push_back(std::move(it));
  }
  return launch(std::move(l), [items](CommContext& c) {
    for (const auto& it : items) {
      c.base.dtype = it.dt;
      c.base.numel = it.numel;
      hccl_sim::allgather(c, it.in, it.out, it.bytes);
    }
  });
}

c10::intrusive_ptr<c10d::Work> HcclBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                            const c10d::AllgatherOptions& opts) {
  std::vector<at::Tensor> outs{output}, ins{input};
  return allgather_into_tensor_coalesced(outs, ins, opts);
}

c10::intrusive_ptr<c10d::Work> HcclBackend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                            std::vector<at::Tensor>& inputs,
                                                                            const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(!inputs.empty() && outputs.size() == inputs.size(), "hccl: allgather_into_tensor: ", outputs.size(),
              " outputs for ", inputs.size(), " inputs");
  Launch l{c10d::OpType::_ALLGATHER_BASE, "allgather_into_tensor",
           header(c10d::OpType::ALLGATHER, inputs[0], inputs[0].numel()), {}, outputs};
  l.timeout = opts.timeout;
  struct Item { const void* in; std::vector<void*> out; std::size_t bytes; int8_t dt; uint64_t numel; };
  std::vector<Item> items;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    device_for(inputs[i], "allgather_into_tensor");
    device_for(outputs[i], "allgather_into_tensor");
    check_same(inputs[i], outputs[i], "allgather_into_tensor", "output");
    TORCH_CHECK(outputs[i].numel() == inputs[i].numel() * getSize(), "hccl: allgather_into_tensor: output must have ",
                getSize(), " x ", inputs[i].numel(), " elements, has ", outputs[i].numel());
    at::Tensor in = contiguous_for(l, inputs[i], false);
    at::Tensor out = contiguous_for(l, outputs[i], true);
    Item it{in.const_data_ptr(), {}, in.nbytes(), static_cast<int8_t>(in.scalar_type()), static_cast<uint64_t>(in.numel())};
    for (int r = 0; r < getSize(); ++r) it.out.push_back(static_cast<char*>(out.data_ptr()) + it.bytes * r);
    items.push_back(std::move(it));
  }
  return launch(std::move(l), [items](CommContext& c) {
    for (const auto& it : items) {
      c.base.dtype = it.dt;
      c.base.numel = it.numel;
      hccl_sim::allgather(c, it.in, it.out, it.bytes);
    }
  });
}

c10::intrusive_ptr<c10d::Work> HcclBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                   std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) {
  check_one(inputs, "gather");
  device_for(inputs[0], "gather");
  const int root = static_cast<int>(opts.rootRank);
  TORCH_CHECK(root >= 0 && root < getSize(), "hccl: gather: invalid root rank ", root);
  Launch l{c10d::OpType::GATHER, "gather", header(c10d::OpType::GATHER, inputs[0], inputs[0].numel(), -1, root), {}, {}};
  l.timeout = opts.timeout;
  at::Tensor in = contiguous_for(l, inputs[0], false);
  std::vector<void*> out;
  if (getRank() == root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
                "hccl: gather: the root needs one list of ", getSize(), " output tensors");
    for (auto& o : outputs[0]) {
      device_for(o, "gather");
      check_same(in, o, "gather", "output");
      TORCH_CHECK(o.numel() == in.numel(), "hccl: gather: output has ", o.numel(), " elements, input ", in.numel());
      out.push_back(contiguous_for(l, o, true).data_ptr());
      l.outputs.push_back(o);
    }
  } else {
    TORCH_CHECK(outputs.empty() || outputs[0].empty(), "hccl: gather: only the root passes output tensors");
  }
  const void* ip = in.const_data_ptr();
  const std::size_t bytes = in.nbytes();
  return launch(std::move(l), [=](CommContext& c) { hccl_sim::gather(c, ip, out, bytes, root); });
}

c10::intrusive_ptr<c10d::Work> HcclBackend::scatter(std::vector<at::Tensor>& outputs,
                                                    std::vector<std::vector<at::Tensor>>& inputs, const c10d::ScatterOptions& opts) {
  check_one(outputs, "scatter");
  device_for(outputs[0], "scatter");
  const int root = static_cast<int>(opts.rootRank);
  TORCH_CHECK(root >= 0 && root < getSize(), "hccl: scatter: invalid root rank ", root);
  Launch l{c10d::OpType::SCATTER, "scatter", header(c10d::OpType::SCATTER, outputs[0], outputs[0].numel(), -1, root), {}, outputs};
  l.timeout = opts.timeout;
  at::Tensor out = contiguous_for(l, outputs[0], true);
  std::vector<const void*> in;
  if (getRank() == root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
                "hccl: scatter: the root needs one list of ", getSize(), " input tensors");
    for (auto& t : inputs[0]) {
      device_for(t, "scatter");
      check_same(out, t, "scatter", "input");
      TORCH_CHECK(t.numel() == out.numel(), "hccl: scatter: input has ", t.numel(), " elements, output ", out.numel());
      in.push_back(contiguous_for(l, t, false).const_data_ptr());
    }
  }
  void* op = out.data_ptr();
  const std::size_t bytes = out.nbytes();
  return launch(std::move(l), [=](CommContext& c) { hccl_sim::scatter(c, in, op, bytes, root); });
}

c10::intrusive_ptr<c10d::Work> HcclBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                           std::vector<std::vector<at::Tensor>>& inputs,
                                                           const c10d::ReduceScatterOptions& opts) {
  check_one(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(), "hccl: reduce_scatter: expected one list of ",
              getSize(), " input tensors");
  device_for(outputs[0], "reduce_scatter");
  const ReduceSpec spec = reduce_spec(opts.reduceOp, outputs[0].scalar_type(), "reduce_scatter");
  Launch l{c10d::OpType::REDUCE_SCATTER, "reduce_scatter", header(c10d::OpType::REDUCE_SCATTER, outputs[0], outputs[0].numel(), opts.reduceOp.op_), {}, outputs};
  l.timeout = opts.timeout;
  at::Tensor out = contiguous_for(l, outputs[0], true);
  std::vector<const void*> in;
  for (auto& t : inputs[0]) {
    device_for(t, "reduce_scatter");
    check_same(out, t, "reduce_scatter", "input");
    TORCH_CHECK(t.numel() == out.numel(), "hccl: reduce_scatter: input has ", t.numel(), " elements, output ", out.numel());
    in.push_back(contiguous_for(l, t, false).const_data_ptr());
  }
  void* op = out.data_ptr();
  const std::size_t n = out.numel();
  const DType dt = kernel_dtype(out.scalar_type(), "reduce_scatter");
  return launch(std::move(l), [=](CommContext& c) { reduce_scatter_with(c, in, op, n, dt, spec); });
}

c10::intrusive_ptr<c10d::Work> HcclBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                 const c10d::ReduceScatterOptions& opts) {
  std::vector<at::Tensor> outs{output}, ins{input};
  return reduce_scatter_tensor_coalesced(outs, ins, opts);
}

c10::intrusive_ptr<c10d::Work> HcclBackend::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                            std::vector<at::Tensor>& inputs,
                                                                            const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(!inputs.empty() && outputs.size() == inputs.size(), "hccl: reduce_scatter_tensor: ", outputs.size(),
              " outputs for ", inputs.size(), " inputs");
  Launch l{c10d::OpType::_REDUCE_SCATTER_BASE, "reduce_scatter_tensor",
           header(c10d::OpType::REDUCE_SCATTER, outputs[0], outputs[0].numel(), opts.reduceOp.op_), {}, outputs};
  l.timeout = opts.timeout;
  struct Item { const void* in; void* out; std::size_t n; DType dt; ReduceSpec spec; };
  std::vector<Item> items;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    device_for(inputs[i], "reduce_scatter_tensor");
    device_for(outputs[i], "reduce_scatter_tensor");
    check_same(outputs[i], inputs[i], "reduce_scatter_tensor", "input");
    TORCH_CHECK(inputs[i].numel() == outputs[i].numel() * getSize(), "hccl: reduce_scatter_tensor: input must have ",
                getSize(), " x ", outputs[i].numel(), " elements, has ", inputs[i].numel());
    const ReduceSpec spec = reduce_spec(opts.reduceOp, outputs[i].scalar_type(), "reduce_scatter_tensor");
    at::Tensor in = contiguous_for(l, inputs[i], false);
    at::Tensor out = contiguous_for(l, outputs[i], true);
    items.push_back({in.const_data_ptr(), out.data_ptr(), static_cast<std::size_t>(out.numel()),
                     kernel_dtype(out.scalar_type(), "reduce_scatter_tensor"), spec});
  }
  return launch(std::move(l), [items](CommContext& c) {
    for (const auto& it : items) {
      const std::size_t bytes = it.n * npu_kernels::dtype_size(it.dt);
      std::vector<const void*> blocks;
      for (int r = 0; r < c.t.size(); ++r) blocks.push_back(static_cast<const char*>(it.in) + bytes * r);
      c.base.dtype = static_cast<int8_t>(it.dt);
      c.base.numel = it.n;
      reduce_scatter_with(c, std::move(blocks), it.out, it.n, it.dt, it.spec);
    }
  });
}

c10::intrusive_ptr<c10d::Work> HcclBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                          std::vector<int64_t>& output_splits,
                                                          std::vector<int64_t>& input_splits,
                                                          const c10d::AllToAllOptions& opts) {
  device_for(input, "alltoall_base");
  device_for(output, "alltoall_base");
  check_same(input, output, "alltoall_base", "output");
  const int n = getSize();
  Launch l{c10d::OpType::ALLTOALL_BASE, "alltoall_base", header(c10d::OpType::ALLTOALL_BASE, input, 0), {}, {output}};
  l.timeout = opts.timeout;
  at::Tensor in = contiguous_for(l, input, false);
  at::Tensor out = contiguous_for(l, output, true);
  auto offsets = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* which) {
    const int64_t rows = t.dim() > 0 ? t.size(0) : 1;
    const std::size_t row_bytes = rows > 0 ? t.nbytes() / rows : 0;
    std::vector<int64_t> s = splits;
    if (s.empty()) {
      TORCH_CHECK(rows % n == 0, "hccl: alltoall_base: ", which, " dim 0 (", rows, ") is not divisible by the group size ", n);
      s.assign(n, rows / n);
    }
    TORCH_CHECK(static_cast<int>(s.size()) == n, "hccl: alltoall_base: ", which, " split sizes must have ", n, " entries");
    int64_t sum = 0;
    for (int64_t v : s) {
      TORCH_CHECK(v >= 0, "hccl: alltoall_base: negative split size");
      sum += v;
    }
    TORCH_CHECK(sum == rows, "hccl: alltoall_base: ", which, " split sizes sum to ", sum, " but dim 0 is ", rows);
    std::vector<std::size_t> off(n), bytes(n);
    std::size_t o = 0;
    for (int r = 0; r < n; ++r) {
      off[r] = o;
      bytes[r] = static_cast<std::size_t>(s[r]) * row_bytes;
      o += bytes[r];
    }
    return std::make_pair(off, bytes);
  };
  const auto [soff, sbytes] = offsets(in, input_splits, "input");
  const auto [roff, rbytes] = offsets(out, output_splits, "output");
  std::vector<const void*> sp(n);
  std::vector<void*> rp(n);
  for (int r = 0; r < n; ++r) {
    sp[r] = static_cast<const char*>(in.const_data_ptr()) + soff[r];
    rp[r] = static_cast<char*>(out.data_ptr()) + roff[r];
  }
  return launch(std::move(l), [sp, sbytes = sbytes, rp, rbytes = rbytes](CommContext& c) {
    hccl_sim::alltoallv(c, sp, sbytes, rp, rbytes);
  });
}

c10::intrusive_ptr<c10d::Work> HcclBackend::alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                                     const c10d::AllToAllOptions& opts) {
  const int n = getSize();
  TORCH_CHECK(static_cast<int>(outputs.size()) == n && static_cast<int>(inputs.size()) == n,
              "hccl: alltoall: expected ", n, " input and ", n, " output tensors");
  Launch l{c10d::OpType::ALLTOALL, "alltoall", header(c10d::OpType::ALLTOALL, inputs[0], 0), {}, outputs};
  l.timeout = opts.timeout;
  std::vector<const void*> sp(n);
  std::vector<void*> rp(n);
  std::vector<std::size_t> sb(n), rb(n);
  for (int r = 0; r < n; ++r) {
    device_for(inputs[r], "alltoall");
    device_for(outputs[r], "alltoall");
    check_same(inputs[0], inputs[r], "alltoall", "input");
    check_same(inputs[0], outputs[r], "alltoall", "output");
    at::Tensor in = contiguous_for(l, inputs[r], false);
    at::Tensor out = contiguous_for(l, outputs[r], true);
    sp[r] = in.const_data_ptr();
    sb[r] = in.nbytes();
    rp[r] = out.data_ptr();
    rb[r] = out.nbytes();
  }
  return launch(std::move(l), [=](CommContext& c) { hccl_sim::alltoallv(c, sp, sb, rp, rb); });
}

}  // namespace torch_npu_sim
