// The collectives of HcclBackend: argument checks, contiguous staging, the c10d reduce ops HCCL lacks
// (AVG, PREMUL_SUM: a scaling around a SUM) and the C API call each one makes on the communication
// stream (see launch() in hccl_backend.cpp and hccl/hccl.h).
#include <ATen/ATen.h>
#include <c10/core/StreamGuard.h>
#include <c10/util/Exception.h>

#include "aten/npu_tensor.h"
#include "distributed/hccl_backend.h"

namespace torch_npu_sim {

HcclDataType hccl_dtype(at::ScalarType type, const char* op) {
  switch (type) {
    case at::kByte: return HCCL_DATA_TYPE_UINT8;
    case at::kChar: return HCCL_DATA_TYPE_INT8;
    case at::kShort: return HCCL_DATA_TYPE_INT16;
    case at::kInt: return HCCL_DATA_TYPE_INT32;
    case at::kLong: return HCCL_DATA_TYPE_INT64;
    case at::kHalf: return HCCL_DATA_TYPE_FP16;
    case at::kFloat: return HCCL_DATA_TYPE_FP32;
    case at::kDouble: return HCCL_DATA_TYPE_FP64;
    case at::kBFloat16: return HCCL_DATA_TYPE_BFP16;
    case at::kBool: return HCCL_DATA_TYPE_SIM_BOOL;
    case at::kComplexFloat: return HCCL_DATA_TYPE_SIM_COMPLEX64;
    case at::kComplexDouble: return HCCL_DATA_TYPE_SIM_COMPLEX128;
    default: break;
  }
  TORCH_CHECK(false, "hccl: ", op, ": dtype ", type, " is not supported");
}

namespace {

// What a c10d::ReduceOp asks of HCCL: its reduce op, plus a pre-scale (PREMUL_SUM) or a division by the
// group size afterwards (AVG), done with npu ops on the communication stream.
struct ReduceSpec {
  HcclReduceOp op = HCCL_REDUCE_SUM;
  bool premul = false;
  double factor = 1.0;
  bool average = false;
};

ReduceSpec reduce_spec(const c10d::ReduceOp& op, at::ScalarType st, const char* name) {
  ReduceSpec s;
  switch (op.op_) {
    case c10d::ReduceOp::SUM: s.op = HCCL_REDUCE_SUM; break;
    case c10d::ReduceOp::PRODUCT: s.op = HCCL_REDUCE_PROD; break;
    case c10d::ReduceOp::MIN: s.op = HCCL_REDUCE_MIN; break;
    case c10d::ReduceOp::MAX: s.op = HCCL_REDUCE_MAX; break;
    case c10d::ReduceOp::BAND: s.op = HCCL_REDUCE_SIM_BAND; break;
    case c10d::ReduceOp::BOR: s.op = HCCL_REDUCE_SIM_BOR; break;
    case c10d::ReduceOp::BXOR: s.op = HCCL_REDUCE_SIM_BXOR; break;
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
  const bool complex = at::isComplexType(st), floating = at::isFloatingType(st) || complex;
  TORCH_CHECK(!complex || (s.op != HCCL_REDUCE_MIN && s.op != HCCL_REDUCE_MAX), "hccl: ", name,
              ": reduce op MIN/MAX is not defined for dtype ", st);
  TORCH_CHECK(!floating || s.op < HCCL_REDUCE_SIM_BAND, "hccl: ", name,
              ": bitwise reduce ops are not defined for dtype ", st);
  return s;
}

// AVG's division of the reduced `t`, as NCCL's ncclAvg (integers: truncated).
void divide_by(at::Tensor& t, int64_t n) {
  if (at::isIntegralType(t.scalar_type(), /*includeBool=*/false)) t.div_(n, "trunc");
  else t.div_(n);
}

void check_one(const std::vector<at::Tensor>& ts, const char* name) {
  TORCH_CHECK(ts.size() == 1, "hccl: ", name, ": expected exactly one tensor per process, got ", ts.size());
}

void check_same(const at::Tensor& a, const at::Tensor& b, const char* name, const char* what) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "hccl: ", name, ": ", what, " dtype ", b.scalar_type(),
              " does not match the input's ", a.scalar_type());
}

void check_root(int root, int size, const char* name) {
  TORCH_CHECK(root >= 0 && root < size, "hccl: ", name, ": invalid root rank ", root);
}

}  // namespace

// Each reduction is a SUM/PROD/MIN/MAX/bitwise of the library; AVG and PREMUL_SUM scale before or after it
// with npu ops run on the communication stream (in the Call, which runs on that stream's thread of issue).
c10::intrusive_ptr<c10d::Work> HcclBackend::allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) {
  std::vector<at::Tensor> ts = tensors;
  c10d::AllreduceCoalescedOptions o;
  o.reduceOp = opts.reduceOp;
  o.timeout = opts.timeout;
  check_one(tensors, "allreduce");
  return allreduce_coalesced(ts, o);
}

c10::intrusive_ptr<c10d::Work> HcclBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                const c10d::AllreduceCoalescedOptions& opts) {
  const char* name = tensors.size() == 1 ? "allreduce" : "allreduce_coalesced";
  TORCH_CHECK(!tensors.empty(), "hccl: ", name, ": no tensors");
  Launch l{tensors.size() == 1 ? c10d::OpType::ALLREDUCE : c10d::OpType::ALLREDUCE_COALESCED, name, {}, tensors};
  l.timeout = opts.timeout;
  std::vector<Call> calls;
  HcclComm comm = comm_->comm;
  const int64_t n = getSize();
  for (auto& t : tensors) {
    device_for(t, name);
    const ReduceSpec spec = reduce_spec(opts.reduceOp, t.scalar_type(), name);
    at::Tensor c = contiguous_for(l, t, true);
    const HcclDataType dt = hccl_dtype(c.scalar_type(), name);
    const c10::Stream cs = comm_stream(c.device().index());
    calls.push_back([=](aclrtStream s) mutable {
      at::Tensor buf = c;
      if (spec.premul) {
        c10::StreamGuard guard(cs);
        buf.mul_(spec.factor);
      }
      const HcclResult r = HcclAllReduce(buf.data_ptr(), buf.data_ptr(), buf.numel(), dt, spec.op, comm, s);
      if (r == HCCL_SUCCESS && spec.average) {
        c10::StreamGuard guard(cs);
        divide_by(buf, n);
      }
      return r;
    });
  }
  return launch(std::move(l), calls);
}

c10::intrusive_ptr<c10d::Work> HcclBackend::broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) {
  check_one(tensors, "broadcast");
  device_for(tensors[0], "broadcast");
  const int root = static_cast<int>(opts.rootRank);
  check_root(root, getSize(), "broadcast");
  Launch l{c10d::OpType::BROADCAST, "broadcast", {}, tensors};
  l.timeout = opts.timeout;
  at::Tensor t = contiguous_for(l, tensors[0], getRank() != root);
  const HcclDataType dt = hccl_dtype(t.scalar_type(), "broadcast");
  HcclComm comm = comm_->comm;
  return launch(std::move(l), [=](aclrtStream s) {
    return HcclBroadcast(t.data_ptr(), t.numel(), dt, static_cast<uint32_t>(root), comm, s);
  });
}

c10::intrusive_ptr<c10d::Work> HcclBackend::reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) {
  check_one(tensors, "reduce");
  device_for(tensors[0], "reduce");
  const int root = static_cast<int>(opts.rootRank);
  check_root(root, getSize(), "reduce");
  const ReduceSpec spec = reduce_spec(opts.reduceOp, tensors[0].scalar_type(), "reduce");
  Launch l{c10d::OpType::REDUCE, "reduce", {}, tensors};
  l.timeout = opts.timeout;
  const bool is_root = getRank() == root;
  at::Tensor t = contiguous_for(l, tensors[0], is_root);
  // The root reduces in place; the others' inputs stay unchanged (a scaled copy for PREMUL_SUM).
  at::Tensor in = spec.premul ? t.mul(spec.factor) : t;
  if (spec.premul) l.keep_alive.push_back(in);
  const HcclDataType dt = hccl_dtype(t.scalar_type(), "reduce");
  HcclComm comm = comm_->comm;
  const c10::Stream cs = comm_stream(t.device().index());
  const int64_t n = getSize();
  return launch(std::move(l), [=](aclrtStream s) mutable {
    const HcclResult r = HcclReduce(in.data_ptr(), is_root ? t.data_ptr() : nullptr, t.numel(), dt, spec.op,
                                    static_cast<uint32_t>(root), comm, s);
    if (r == HCCL_SUCCESS && spec.average && is_root) {
      c10::StreamGuard guard(cs);
      divide_by(t, n);
    }
    return r;
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
  Launch l{c10d::OpType::ALLGATHER, "allgather", {}, {}};
  l.timeout = opts.timeout;
  std::vector<Call> calls;
  HcclComm comm = comm_->comm;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    device_for(inputs[i], "allgather");
    TORCH_CHECK(static_cast<int>(outputs[i].size()) == getSize(), "hccl: allgather: expected ", getSize(),
                " output tensors, got ", outputs[i].size());
    at::Tensor in = contiguous_for(l, inputs[i], false);
    for (auto& o : outputs[i]) {
      device_for(o, "allgather");
      check_same(in, o, "allgather", "output");
      TORCH_CHECK(o.numel() == in.numel(), "hccl: allgather: output has ", o.numel(), " elements, input ", in.numel());
      l.outputs.push_back(o);
    }
    at::Tensor out = flat_for(l, outputs[i], true);
    const HcclDataType dt = hccl_dtype(in.scalar_type(), "allgather");
    calls.push_back([=](aclrtStream s) { return HcclAllGather(in.data_ptr(), out.data_ptr(), in.numel(), dt, comm, s); });
  }
  return launch(std::move(l), calls);
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
  Launch l{c10d::OpType::_ALLGATHER_BASE, "allgather_into_tensor", {}, outputs};
  l.timeout = opts.timeout;
  std::vector<Call> calls;
  HcclComm comm = comm_->comm;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    device_for(inputs[i], "allgather_into_tensor");
    device_for(outputs[i], "allgather_into_tensor");
    check_same(inputs[i], outputs[i], "allgather_into_tensor", "output");
    TORCH_CHECK(outputs[i].numel() == inputs[i].numel() * getSize(), "hccl: allgather_into_tensor: output must have ",
                getSize(), " x ", inputs[i].numel(), " elements, has ", outputs[i].numel());
    at::Tensor in = contiguous_for(l, inputs[i], false);
    at::Tensor out = contiguous_for(l, outputs[i], true);
    const HcclDataType dt = hccl_dtype(in.scalar_type(), "allgather_into_tensor");
    calls.push_back([=](aclrtStream s) { return HcclAllGather(in.data_ptr(), out.data_ptr(), in.numel(), dt, comm, s); });
  }
  return launch(std::move(l), calls);
}

c10::intrusive_ptr<c10d::Work> HcclBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                   std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) {
  check_one(inputs, "gather");
  device_for(inputs[0], "gather");
  const int root = static_cast<int>(opts.rootRank);
  check_root(root, getSize(), "gather");
  Launch l{c10d::OpType::GATHER, "gather", {}, {}};
  l.timeout = opts.timeout;
  at::Tensor in = contiguous_for(l, inputs[0], false);
  at::Tensor out;
  if (getRank() == root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
                "hccl: gather: the root needs one list of ", getSize(), " output tensors");
    for (auto& o : outputs[0]) {
      device_for(o, "gather");
      check_same(in, o, "gather", "output");
      TORCH_CHECK(o.numel() == in.numel(), "hccl: gather: output has ", o.numel(), " elements, input ", in.numel());
      l.outputs.push_back(o);
    }
    out = flat_for(l, outputs[0], true);
  } else {
    TORCH_CHECK(outputs.empty() || outputs[0].empty(), "hccl: gather: only the root passes output tensors");
  }
  const HcclDataType dt = hccl_dtype(in.scalar_type(), "gather");
  HcclComm comm = comm_->comm;
  return launch(std::move(l), [=](aclrtStream s) {
    return HcclGather(in.data_ptr(), out.defined() ? out.data_ptr() : nullptr, in.numel(), dt,
                      static_cast<uint32_t>(root), comm, s);
  });
}

c10::intrusive_ptr<c10d::Work> HcclBackend::scatter(std::vector<at::Tensor>& outputs,
                                                    std::vector<std::vector<at::Tensor>>& inputs, const c10d::ScatterOptions& opts) {
  check_one(outputs, "scatter");
  device_for(outputs[0], "scatter");
  const int root = static_cast<int>(opts.rootRank);
  check_root(root, getSize(), "scatter");
  Launch l{c10d::OpType::SCATTER, "scatter", {}, outputs};
  l.timeout = opts.timeout;
  at::Tensor out = contiguous_for(l, outputs[0], true);
  at::Tensor in;
  if (getRank() == root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
                "hccl: scatter: the root needs one list of ", getSize(), " input tensors");
    for (auto& t : inputs[0]) {
      device_for(t, "scatter");
      check_same(out, t, "scatter", "input");
      TORCH_CHECK(t.numel() == out.numel(), "hccl: scatter: input has ", t.numel(), " elements, output ", out.numel());
    }
    in = flat_for(l, inputs[0], false);
  }
  const HcclDataType dt = hccl_dtype(out.scalar_type(), "scatter");
  HcclComm comm = comm_->comm;
  return launch(std::move(l), [=](aclrtStream s) {
    return HcclScatter(in.defined() ? in.data_ptr() : nullptr, out.data_ptr(), out.numel(), dt,
                       static_cast<uint32_t>(root), comm, s);
  });
}

c10::intrusive_ptr<c10d::Work> HcclBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                           std::vector<std::vector<at::Tensor>>& inputs,
                                                           const c10d::ReduceScatterOptions& opts) {
  check_one(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(), "hccl: reduce_scatter: expected one list of ",
              getSize(), " input tensors");
  device_for(outputs[0], "reduce_scatter");
  for (auto& t : inputs[0]) {
    device_for(t, "reduce_scatter");
    check_same(outputs[0], t, "reduce_scatter", "input");
    TORCH_CHECK(t.numel() == outputs[0].numel(), "hccl: reduce_scatter: input has ", t.numel(), " elements, output ",
                outputs[0].numel());
  }
  Launch l{c10d::OpType::REDUCE_SCATTER, "reduce_scatter", {}, outputs};
  l.timeout = opts.timeout;
  at::Tensor in = flat_for(l, inputs[0], false);
  Call call = reduce_scatter_call(l, in, outputs[0], opts.reduceOp);
  return launch(std::move(l), std::move(call));
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
  Launch l{c10d::OpType::_REDUCE_SCATTER_BASE, "reduce_scatter_tensor", {}, outputs};
  l.timeout = opts.timeout;
  std::vector<Call> calls;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    device_for(inputs[i], "reduce_scatter_tensor");
    device_for(outputs[i], "reduce_scatter_tensor");
    check_same(outputs[i], inputs[i], "reduce_scatter_tensor", "input");
    TORCH_CHECK(inputs[i].numel() == outputs[i].numel() * getSize(), "hccl: reduce_scatter_tensor: input must have ",
                getSize(), " x ", outputs[i].numel(), " elements, has ", inputs[i].numel());
    calls.push_back(reduce_scatter_call(l, contiguous_for(l, inputs[i], false), outputs[i], opts.reduceOp));
  }
  return launch(std::move(l), calls);
}

HcclBackend::Call HcclBackend::reduce_scatter_call(Launch& l, at::Tensor in, const at::Tensor& output,
                                                   const c10d::ReduceOp& reduce_op) {
  const ReduceSpec spec = reduce_spec(reduce_op, output.scalar_type(), l.name);
  at::Tensor out = contiguous_for(l, output, true);
  if (spec.premul) {  // a scaled copy: the inputs stay unchanged
    in = in.mul(spec.factor);
    l.keep_alive.push_back(in);
  }
  const HcclDataType dt = hccl_dtype(out.scalar_type(), l.name);
  HcclComm comm = comm_->comm;
  const c10::Stream cs = comm_stream(out.device().index());
  const int64_t n = getSize();
  return [=](aclrtStream s) mutable {
    const HcclResult r = HcclReduceScatter(in.data_ptr(), out.data_ptr(), out.numel(), dt, spec.op, comm, s);
    if (r == HCCL_SUCCESS && spec.average) {
      c10::StreamGuard guard(cs);
      divide_by(out, n);
    }
    return r;
  };
}

c10::intrusive_ptr<c10d::Work> HcclBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                          std::vector<int64_t>& output_splits,
                                                          std::vector<int64_t>& input_splits,
                                                          const c10d::AllToAllOptions& opts) {
  device_for(input, "alltoall_base");
  device_for(output, "alltoall_base");
  check_same(input, output, "alltoall_base", "output");
  const int n = getSize();
  Launch l{c10d::OpType::ALLTOALL_BASE, "alltoall_base", {}, {output}};
  l.timeout = opts.timeout;
  at::Tensor in = contiguous_for(l, input, false);
  at::Tensor out = contiguous_for(l, output, true);
  // Counts and displacements in elements, from the split sizes along dim 0 (equal splits when empty).
  auto counts = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* which) {
    const int64_t rows = t.dim() > 0 ? t.size(0) : 1;
    const uint64_t row_elems = rows > 0 ? static_cast<uint64_t>(t.numel() / rows) : 0;
    std::vector<int64_t> sp = splits;
    if (sp.empty()) {
      TORCH_CHECK(rows % n == 0, "hccl: alltoall_base: ", which, " dim 0 (", rows, ") is not divisible by the group size ", n);
      sp.assign(n, rows / n);
    }
    TORCH_CHECK(static_cast<int>(sp.size()) == n, "hccl: alltoall_base: ", which, " split sizes must have ", n, " entries");
    int64_t sum = 0;
    for (int64_t v : sp) {
      TORCH_CHECK(v >= 0, "hccl: alltoall_base: negative split size");
      sum += v;
    }
    TORCH_CHECK(sum == rows, "hccl: alltoall_base: ", which, " split sizes sum to ", sum, " but dim 0 is ", rows);
    std::vector<uint64_t> cnt(n), displ(n);
    uint64_t o = 0;
    for (int r = 0; r < n; ++r) {
      displ[r] = o;
      cnt[r] = static_cast<uint64_t>(sp[r]) * row_elems;
      o += cnt[r];
    }
    return std::make_pair(cnt, displ);
  };
  const auto [sc, sd] = counts(in, input_splits, "input");
  const auto [rc, rd] = counts(out, output_splits, "output");
  const HcclDataType dt = hccl_dtype(in.scalar_type(), "alltoall_base");
  HcclComm comm = comm_->comm;
  return launch(std::move(l), [=, sc = sc, sd = sd, rc = rc, rd = rd](aclrtStream s) {
    return HcclAlltoAllV(in.data_ptr(), sc.data(), sd.data(), dt, out.data_ptr(), rc.data(), rd.data(), dt, comm, s);
  });
}

c10::intrusive_ptr<c10d::Work> HcclBackend::alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                                     const c10d::AllToAllOptions& opts) {
  const int n = getSize();
  TORCH_CHECK(static_cast<int>(outputs.size()) == n && static_cast<int>(inputs.size()) == n,
              "hccl: alltoall: expected ", n, " input and ", n, " output tensors");
  Launch l{c10d::OpType::ALLTOALL, "alltoall", {}, outputs};
  l.timeout = opts.timeout;
  // One send and one receive buffer with the tensors back to back (sizes may differ per rank).
  std::vector<uint64_t> sc(n), sd(n), rc(n), rd(n);
  std::vector<at::Tensor> ins, outs;
  for (int r = 0; r < n; ++r) {
    device_for(inputs[r], "alltoall");
    device_for(outputs[r], "alltoall");
    check_same(inputs[0], inputs[r], "alltoall", "input");
    check_same(inputs[0], outputs[r], "alltoall", "output");
    sc[r] = inputs[r].numel();
    rc[r] = outputs[r].numel();
    sd[r] = r ? sd[r - 1] + sc[r - 1] : 0;
    rd[r] = r ? rd[r - 1] + rc[r - 1] : 0;
    ins.push_back(inputs[r].reshape({-1}));
    outs.push_back(outputs[r]);
  }
  at::Tensor send = at::cat(ins);
  at::Tensor recv = at::empty({static_cast<int64_t>(rd[n - 1] + rc[n - 1])}, send.options());
  l.keep_alive = {send, recv};
  for (int r = 0; r < n; ++r) {
    l.copy_back.emplace_back(outputs[r], recv.narrow(0, static_cast<int64_t>(rd[r]), static_cast<int64_t>(rc[r]))
                                             .view(outputs[r].sizes()));
  }
  const HcclDataType dt = hccl_dtype(send.scalar_type(), "alltoall");
  HcclComm comm = comm_->comm;
  return launch(std::move(l), [=](aclrtStream s) {
    return HcclAlltoAllV(send.data_ptr(), sc.data(), sd.data(), dt, recv.data_ptr(), rc.data(), rd.data(), dt, comm, s);
  });
}

}  // namespace torch_npu_sim
