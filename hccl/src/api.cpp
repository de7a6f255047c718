// The C API of hccl/hccl.h: argument checks, dtype and reduce-op mapping, groups, and each operation's
// body over the algorithms of collectives.cpp, enqueued through the Communicator (comm.h).
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm.h"
#include "hccl/hccl.h"
#include "npu_kernels/collective_math.h"

using hccl_sim::CommContext;
using hccl_sim::CommError;
using hccl_sim::Communicator;
using npu_kernels::DType;
using npu_kernels::ReduceKind;

struct HcclCommHandle {
  std::shared_ptr<Communicator> impl;
};

namespace {

thread_local std::string t_last_error;

// Thrown by the checks below: the code to return and the message for HcclGetLastErrorMessage.
struct ApiError {
  HcclResult code;
  std::string msg;
};

// The frames' op field: which collective (desync check between ranks).
enum OpKind : uint16_t { kAllReduce = 1, kBroadcast, kAllGather, kReduceScatter, kReduce, kAlltoAll, kScatter, kGather,
                         kBarrier, kSendRecv };

template <typename F>
HcclResult guarded(const char* fn, F&& f) {
  try {
    f();
    return HCCL_SUCCESS;
  } catch (const ApiError& e) {
    t_last_error = std::string(fn) + ": " + e.msg;
    return e.code;
  } catch (const CommError& e) {
    t_last_error = std::string(fn) + ": " + e.what();
    return e.kind == hccl_sim::CommErrorKind::kOther ? HCCL_E_INTERNAL : hccl_sim::result_of(e.kind);
  } catch (const std::bad_alloc&) {
    t_last_error = std::string(fn) + ": out of host memory";
    return HCCL_E_MEMORY;
  } catch (const std::exception& e) {
    t_last_error = std::string(fn) + ": " + e.what();
    return HCCL_E_INTERNAL;
  }
}

void require(bool ok, HcclResult code, const std::string& msg) {
  if (!ok) throw ApiError{code, msg};
}

Communicator& comm_of(HcclComm comm) {
  require(comm != nullptr, HCCL_E_PTR, "comm is null");
  return *static_cast<HcclCommHandle*>(comm)->impl;
}

npu_sim::Stream stream_of(aclrtStream stream) {
  require(stream != nullptr, HCCL_E_PTR, "stream is null");
  return static_cast<npu_sim::Stream>(stream);
}

DType dtype_of(HcclDataType t) {
  switch (t) {
    case HCCL_DATA_TYPE_INT8: return DType::kInt8;
    case HCCL_DATA_TYPE_INT16: return DType::kInt16;
    case HCCL_DATA_TYPE_INT32: return DType::kInt32;
    case HCCL_DATA_TYPE_FP16: return DType::kFloat16;
    case HCCL_DATA_TYPE_FP32: return DType::kFloat32;
    case HCCL_DATA_TYPE_INT64: return DType::kInt64;
    case HCCL_DATA_TYPE_UINT8: return DType::kUInt8;
    case HCCL_DATA_TYPE_FP64: return DType::kFloat64;
    case HCCL_DATA_TYPE_BFP16: return DType::kBFloat16;
    case HCCL_DATA_TYPE_SIM_BOOL: return DType::kBool;
    case HCCL_DATA_TYPE_SIM_COMPLEX64: return DType::kComplex64;
    case HCCL_DATA_TYPE_SIM_COMPLEX128: return DType::kComplex128;
    default: break;
  }
  throw ApiError{HCCL_E_NOT_SUPPORT, "data type " + std::to_string(static_cast<int>(t)) + " is not supported"};
}

ReduceKind reduce_of(HcclReduceOp op, DType dt) {
  ReduceKind k;
  switch (op) {
    case HCCL_REDUCE_SUM: k = ReduceKind::kSum; break;
    case HCCL_REDUCE_PROD: k = ReduceKind::kProd; break;
    case HCCL_REDUCE_MAX: k = ReduceKind::kMax; break;
    case HCCL_REDUCE_MIN: k = ReduceKind::kMin; break;
    case HCCL_REDUCE_SIM_BAND: k = ReduceKind::kBand; break;
    case HCCL_REDUCE_SIM_BOR: k = ReduceKind::kBor; break;
    case HCCL_REDUCE_SIM_BXOR: k = ReduceKind::kBxor; break;
    default: throw ApiError{HCCL_E_PARA, "unknown reduce op " + std::to_string(static_cast<int>(op))};
  }
  require(npu_kernels::reduce_supported(dt, k), HCCL_E_NOT_SUPPORT,
          std::string("reduce op ") + npu_kernels::reduce_kind_name(k) + " is not defined for " + npu_kernels::dtype_name(dt));
  return k;
}

void require_buffer(const void* p, uint64_t count, const char* what) {
  require(p != nullptr || count == 0, HCCL_E_PTR, std::string(what) + " is null");
}

void require_rank(const Communicator& c, uint32_t r, const char* what) {
  require(r < static_cast<uint32_t>(c.size()), HCCL_E_PARA,
          std::string(what) + " " + std::to_string(r) + " is not a rank of this communicator (size " +
              std::to_string(c.size()) + ")");
}

// The frames' header: op, dtype, element count, and in the tag the reduce op and root, which every rank
// must agree on.
hccl_sim::MsgHeader header(OpKind op, HcclDataType dt, uint64_t numel, int reduce_op = -1, int root = -1) {
  hccl_sim::MsgHeader h;
  h.op = op;
  h.dtype = static_cast<int8_t>(dt);
  h.numel = numel;
  h.tag = hccl_sim::collective_tag(reduce_op, root);
  return h;
}

bool overlaps(const void* a, std::size_t an, const void* b, std::size_t bn) {
  const char* x = static_cast<const char*>(a);
  const char* y = static_cast<const char*>(b);
  return an && bn && x < y + bn && y < x + an;
}

// A rooted scatter or gather: the root's buffer of nRanks blocks (`root_buf`) and every rank's own block
// (`own_buf`) of `count` elements; the root's blocks (empty on the other ranks).
struct Rooted {
  int root;
  std::size_t bytes;
  std::vector<void*> blocks;
};
Rooted rooted(const Communicator& c, void* root_buf, const char* root_name, void* own_buf, const char* own_name,
              uint64_t count, HcclDataType dataType, uint32_t root) {
  const DType dt = dtype_of(dataType);
  require_rank(c, root, "root");
  require_buffer(own_buf, count, own_name);
  Rooted g{static_cast<int>(root), count * npu_kernels::dtype_size(dt), {}};
  if (g.root == c.rank()) {
    require_buffer(root_buf, count, root_name);
    for (int p = 0; p < c.size(); ++p) g.blocks.push_back(static_cast<char*>(root_buf) + g.bytes * p);
  }
  return g;
}

// Pending send/recvs of this thread's open group, by communicator and stream.
struct GroupState {
  int depth = 0;
  struct Batch {
    std::shared_ptr<Communicator> comm;
    npu_sim::Stream stream;
    std::vector<std::unique_ptr<hccl_sim::P2POp>> ops;
  };
  std::vector<Batch> batches;
};
thread_local GroupState t_group;

HcclResult p2p(const char* fn, void* buf, uint64_t count, HcclDataType dataType, int peer, uint32_t* src_out,
               bool is_send, HcclComm comm, aclrtStream stream) {
  return guarded(fn, [&] {
    Communicator& c = comm_of(comm);
    const auto& handle = *static_cast<HcclCommHandle*>(comm);
    npu_sim::Stream s = stream_of(stream);
    const DType dt = dtype_of(dataType);
    require_buffer(buf, count, is_send ? "sendBuf" : "recvBuf");
    if (peer >= 0) {
      require_rank(c, static_cast<uint32_t>(peer), is_send ? "destRank" : "srcRank");
      require(peer != c.rank(), HCCL_E_PARA, "a rank cannot send to or receive from itself");
    }
    auto op = std::make_unique<hccl_sim::P2POp>();
    op->state = std::make_shared<hccl_sim::P2PState>();
    op->state->source_out = src_out;
    hccl_sim::Xfer& x = op->xfer;
    x.peer = peer;
    x.is_send = is_send;
    x.check_desync = false;
    x.hdr.op = kSendRecv;
    x.hdr.dtype = static_cast<int8_t>(dataType);
    x.hdr.bytes = count * npu_kernels::dtype_size(dt);
    x.hdr.numel = count;
    if (is_send) x.src = buf;
    else x.dst = buf;
    if (t_group.depth > 0) {
      for (auto& b : t_group.batches) {
        if (b.comm == handle.impl && b.stream == s) {
          b.ops.push_back(std::move(op));
          return;
        }
      }
      t_group.batches.push_back({handle.impl, s, {}});
      t_group.batches.back().ops.push_back(std::move(op));
      return;
    }
    std::vector<std::unique_ptr<hccl_sim::P2POp>> ops;
    ops.push_back(std::move(op));
    const std::string label = std::string("hccl: ") + (is_send ? "send" : "recv") + " on rank " +
                              std::to_string(c.rank()) + " with peer " + (peer < 0 ? std::string("any") : std::to_string(peer));
    c.enqueue_p2p(s, std::move(ops), label);
  });
}

}  // namespace

extern "C" {

void HcclCommConfigInit(HcclCommConfig* config) {
  if (config == nullptr) return;
  std::memset(config, 0, sizeof(*config));
  config->npuSimDevice = -1;
}

const char* HcclGetErrorString(HcclResult code) {
  switch (code) {
    case HCCL_SUCCESS: return "success";
    case HCCL_E_PARA: return "parameter error";
    case HCCL_E_PTR: return "empty pointer";
    case HCCL_E_MEMORY: return "memory error";
    case HCCL_E_INTERNAL: return "internal error";
    case HCCL_E_NOT_SUPPORT: return "not support feature";
    case HCCL_E_NOT_FOUND: return "not found specific resource";
    case HCCL_E_UNAVAIL: return "resource unavailable";
    case HCCL_E_SYSCALL: return "call system interface error";
    case HCCL_E_TIMEOUT: return "timeout";
    case HCCL_E_OPEN_FILE_FAILURE: return "open file fail";
    case HCCL_E_TCP_CONNECT: return "tcp connect fail";
    case HCCL_E_ROCE_CONNECT: return "roce connect fail";
    case HCCL_E_TCP_TRANSFER: return "tcp transfer fail";
    case HCCL_E_ROCE_TRANSFER: return "roce transfer fail";
    case HCCL_E_RUNTIME: return "call runtime api fail";
    case HCCL_E_DRV: return "call driver api fail";
    case HCCL_E_PROFILING: return "call profiling api fail";
    case HCCL_E_CCE: return "call cce api fail";
    case HCCL_E_NETWORK: return "call network api fail";
    case HCCL_E_AGAIN: return "try again";
    case HCCL_E_REMOTE: return "error cqe (a peer is gone)";
    case HCCL_E_SUSPENDING: return "error communicator suspending (aborted)";
    default: return "unknown HcclResult";
  }
}

const char* HcclGetLastErrorMessage(void) { return t_last_error.c_str(); }

HcclResult HcclGetRootInfo(HcclRootInfo* rootInfo) {
  return guarded("HcclGetRootInfo", [&] {
    require(rootInfo != nullptr, HCCL_E_PTR, "rootInfo is null");
    const hccl_sim::HcclConfig cfg = hccl_sim::HcclConfig::from_env();
    // The server lives until every rank has set up, or this long without a request.
    const std::string enc = hccl_sim::start_root_server(cfg.connect_timeout * 2).encode();
    require(enc.size() < sizeof(rootInfo->internal), HCCL_E_INTERNAL, "root address too long");
    std::memset(rootInfo->internal, 0, sizeof(rootInfo->internal));
    std::memcpy(rootInfo->internal, enc.data(), enc.size());
  });
}

HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo* rootInfo, uint32_t rank,
                                      const HcclCommConfig* config, HcclComm* comm) {
  return guarded("HcclCommInitRootInfo", [&] {
    require(rootInfo != nullptr && comm != nullptr, HCCL_E_PTR, "rootInfo or comm is null");
    require(nRanks > 0 && rank < nRanks, HCCL_E_PARA,
            "rank " + std::to_string(rank) + " is not below nRanks " + std::to_string(nRanks));
    *comm = nullptr;
    HcclCommConfig defaults;
    HcclCommConfigInit(&defaults);
    hccl_sim::RootAddress root;
    try {
      root = hccl_sim::RootAddress::decode(rootInfo->internal, sizeof(rootInfo->internal));
    } catch (const CommError& e) {
      throw ApiError{HCCL_E_PARA, e.what()};
    }
    auto impl = std::make_shared<Communicator>(static_cast<int>(nRanks), root, static_cast<int>(rank),
                                               config ? *config : defaults);
    *comm = new HcclCommHandle{std::move(impl)};
  });
}

HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo* rootInfo, uint32_t rank, HcclComm* comm) {
  return HcclCommInitRootInfoConfig(nRanks, rootInfo, rank, nullptr, comm);
}

HcclResult HcclCommDestroy(HcclComm comm) {
  return guarded("HcclCommDestroy", [&] {
    comm_of(comm).stop_p2p();
    delete static_cast<HcclCommHandle*>(comm);
  });
}

HcclResult HcclGetRankSize(HcclComm comm, uint32_t* rankSize) {
  return guarded("HcclGetRankSize", [&] {
    require(rankSize != nullptr, HCCL_E_PTR, "rankSize is null");
    *rankSize = static_cast<uint32_t>(comm_of(comm).size());
  });
}

HcclResult HcclGetRankId(HcclComm comm, uint32_t* rank) {
  return guarded("HcclGetRankId", [&] {
    require(rank != nullptr, HCCL_E_PTR, "rank is null");
    *rank = static_cast<uint32_t>(comm_of(comm).rank());
  });
}

HcclResult HcclGetTransportName(HcclComm comm, const char** name) {
  return guarded("HcclGetTransportName", [&] {
    require(name != nullptr, HCCL_E_PTR, "name is null");
    *name = comm_of(comm).transport_name();
  });
}

HcclResult HcclAllReduce(void* sendBuf, void* recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                         HcclComm comm, aclrtStream stream) {
  return guarded("HcclAllReduce", [&] {
    Communicator& c = comm_of(comm);
    const DType dt = dtype_of(dataType);
    const ReduceKind k = reduce_of(op, dt);
    require_buffer(sendBuf, count, "sendBuf");
    require_buffer(recvBuf, count, "recvBuf");
    const std::size_t bytes = count * npu_kernels::dtype_size(dt);
    c.enqueue(stream_of(stream), "allreduce", header(kAllReduce, dataType, count, op),
              [=](CommContext& ctx) {
                if (sendBuf != recvBuf && bytes) std::memmove(recvBuf, sendBuf, bytes);
                hccl_sim::allreduce(ctx, recvBuf, count, dt, k);
              });
  });
}

HcclResult HcclBroadcast(void* buf, uint64_t count, HcclDataType dataType, uint32_t root, HcclComm comm,
                         aclrtStream stream) {
  return guarded("HcclBroadcast", [&] {
    Communicator& c = comm_of(comm);
    const DType dt = dtype_of(dataType);
    require_buffer(buf, count, "buf");
    require_rank(c, root, "root");
    const std::size_t bytes = count * npu_kernels::dtype_size(dt);
    const int r = static_cast<int>(root);
    c.enqueue(stream_of(stream), "broadcast", header(kBroadcast, dataType, count, -1, r),
              [=](CommContext& ctx) { hccl_sim::broadcast(ctx, buf, bytes, r); });
  });
}

HcclResult HcclReduceScatter(void* sendBuf, void* recvBuf, uint64_t recvCount, HcclDataType dataType,
                             HcclReduceOp op, HcclComm comm, aclrtStream stream) {
  return guarded("HcclReduceScatter", [&] {
    Communicator& c = comm_of(comm);
    const DType dt = dtype_of(dataType);
    const ReduceKind k = reduce_of(op, dt);
    require_buffer(sendBuf, recvCount, "sendBuf");
    require_buffer(recvBuf, recvCount, "recvBuf");
    const std::size_t bytes = recvCount * npu_kernels::dtype_size(dt);
    const int n = c.size();
    const bool in_place = overlaps(sendBuf, bytes * n, recvBuf, bytes);
    c.enqueue(stream_of(stream), "reduce_scatter", header(kReduceScatter, dataType, recvCount, op),
              [=](CommContext& ctx) {
                std::vector<const void*> blocks(n);
                for (int p = 0; p < n; ++p) blocks[p] = static_cast<const char*>(sendBuf) + bytes * p;
                if (!in_place) return hccl_sim::reduce_scatter(ctx, blocks, recvBuf, recvCount, dt, k);
                std::vector<char> out(bytes);  // the algorithms read every input block until the end
                hccl_sim::reduce_scatter(ctx, blocks, out.data(), recvCount, dt, k);
                if (bytes) std::memcpy(recvBuf, out.data(), bytes);
              });
  });
}

HcclResult HcclAllGather(void* sendBuf, void* recvBuf, uint64_t sendCount, HcclDataType dataType, HcclComm comm,
                         aclrtStream stream) {
  return guarded("HcclAllGather", [&] {
    Communicator& c = comm_of(comm);
    const DType dt = dtype_of(dataType);
    require_buffer(sendBuf, sendCount, "sendBuf");
    require_buffer(recvBuf, sendCount, "recvBuf");
    const std::size_t bytes = sendCount * npu_kernels::dtype_size(dt);
    const int n = c.size();
    std::vector<void*> out(n);
    for (int r = 0; r < n; ++r) out[r] = static_cast<char*>(recvBuf) + bytes * r;
    require(sendBuf == out[c.rank()] || !overlaps(sendBuf, bytes, recvBuf, bytes * n), HCCL_E_PARA,
            "sendBuf overlaps recvBuf other than as this rank's block");
    c.enqueue(stream_of(stream), "allgather", header(kAllGather, dataType, sendCount),
              [=](CommContext& ctx) { hccl_sim::allgather(ctx, sendBuf, out, bytes); });
  });
}

HcclResult HcclReduce(void* sendBuf, void* recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                      uint32_t root, HcclComm comm, aclrtStream stream) {
  return guarded("HcclReduce", [&] {
    Communicator& c = comm_of(comm);
    const DType dt = dtype_of(dataType);
    const ReduceKind k = reduce_of(op, dt);
    require_rank(c, root, "root");
    require_buffer(sendBuf, count, "sendBuf");
    const bool is_root = static_cast<int>(root) == c.rank();
    if (is_root) require_buffer(recvBuf, count, "recvBuf");
    const std::size_t bytes = count * npu_kernels::dtype_size(dt);
    c.enqueue(stream_of(stream), "reduce", header(kReduce, dataType, count, op, static_cast<int>(root)),
              [=](CommContext& ctx) {
                // An all_reduce whose result only the root keeps: the others reduce into scratch, so their
                // inputs stay unchanged.
                char* work = is_root ? static_cast<char*>(recvBuf) : hccl_sim::scratch(ctx, bytes);
                if (work != sendBuf && bytes) std::memmove(work, sendBuf, bytes);
                hccl_sim::allreduce(ctx, work, count, dt, k);
              });
  });
}

HcclResult HcclAlltoAllV(const void* sendBuf, const void* sendCounts, const void* sdispls, HcclDataType sendType,
                         const void* recvBuf, const void* recvCounts, const void* rdispls, HcclDataType recvType,
                         HcclComm comm, aclrtStream stream) {
  return guarded("HcclAlltoAllV", [&] {
    Communicator& c = comm_of(comm);
    require(sendType == recvType, HCCL_E_PARA, "sendType and recvType differ");
    const std::size_t esz = npu_kernels::dtype_size(dtype_of(sendType));
    require(sendCounts && sdispls && recvCounts && rdispls, HCCL_E_PTR, "a count or displacement array is null");
    const int n = c.size();
    const auto* sc = static_cast<const uint64_t*>(sendCounts);
    const auto* sd = static_cast<const uint64_t*>(sdispls);
    const auto* rc = static_cast<const uint64_t*>(recvCounts);
    const auto* rd = static_cast<const uint64_t*>(rdispls);
    std::vector<const void*> sp(n);
    std::vector<void*> rp(n);
    std::vector<std::size_t> sb(n), rb(n);
    for (int r = 0; r < n; ++r) {
      require_buffer(sendBuf, sc[r], "sendBuf");
      require_buffer(recvBuf, rc[r], "recvBuf");
      sp[r] = static_cast<const char*>(sendBuf) + sd[r] * esz;
      rp[r] = const_cast<char*>(static_cast<const char*>(recvBuf)) + rd[r] * esz;
      sb[r] = sc[r] * esz;
      rb[r] = rc[r] * esz;
    }
    c.enqueue(stream_of(stream), "alltoall", header(kAlltoAll, sendType, 0),
              [=](CommContext& ctx) { hccl_sim::alltoallv(ctx, sp, sb, rp, rb); });
  });
}

HcclResult HcclAlltoAll(const void* sendBuf, uint64_t sendCount, HcclDataType sendType, const void* recvBuf,
                        uint64_t recvCount, HcclDataType recvType, HcclComm comm, aclrtStream stream) {
  std::vector<uint64_t> sc, rc, sd, rd;
  const HcclResult r = guarded("HcclAlltoAll", [&] {
    const std::size_t n = static_cast<std::size_t>(comm_of(comm).size());
    for (std::size_t p = 0; p < n; ++p) {
      sc.push_back(sendCount);
      rc.push_back(recvCount);
      sd.push_back(sendCount * p);
      rd.push_back(recvCount * p);
    }
  });
  if (r != HCCL_SUCCESS) return r;
  return HcclAlltoAllV(sendBuf, sc.data(), sd.data(), sendType, recvBuf, rc.data(), rd.data(), recvType, comm, stream);
}

HcclResult HcclScatter(void* sendBuf, void* recvBuf, uint64_t recvCount, HcclDataType dataType, uint32_t root,
                       HcclComm comm, aclrtStream stream) {
  return guarded("HcclScatter", [&] {
    Communicator& c = comm_of(comm);
    const Rooted g = rooted(c, sendBuf, "sendBuf", recvBuf, "recvBuf", recvCount, dataType, root);
    std::vector<const void*> in(g.blocks.begin(), g.blocks.end());
    c.enqueue(stream_of(stream), "scatter", header(kScatter, dataType, recvCount, -1, g.root),
              [=](CommContext& ctx) { hccl_sim::scatter(ctx, in, recvBuf, g.bytes, g.root); });
  });
}

HcclResult HcclGather(void* sendBuf, void* recvBuf, uint64_t sendCount, HcclDataType dataType, uint32_t root,
                      HcclComm comm, aclrtStream stream) {
  return guarded("HcclGather", [&] {
    Communicator& c = comm_of(comm);
    const Rooted g = rooted(c, recvBuf, "recvBuf", sendBuf, "sendBuf", sendCount, dataType, root);
    c.enqueue(stream_of(stream), "gather", header(kGather, dataType, sendCount, -1, g.root),
              [=](CommContext& ctx) { hccl_sim::gather(ctx, sendBuf, g.blocks, g.bytes, g.root); });
  });
}

HcclResult HcclBarrier(HcclComm comm, aclrtStream stream) {
  return guarded("HcclBarrier", [&] {
    comm_of(comm).enqueue(stream_of(stream), "barrier", header(kBarrier, HCCL_DATA_TYPE_INT8, 0),
                          [](CommContext& ctx) { hccl_sim::barrier(ctx); });
  });
}

HcclResult HcclSend(void* sendBuf, uint64_t count, HcclDataType dataType, uint32_t destRank, HcclComm comm,
                    aclrtStream stream) {
  return p2p("HcclSend", sendBuf, count, dataType, static_cast<int>(destRank), nullptr, true, comm, stream);
}

HcclResult HcclRecv(void* recvBuf, uint64_t count, HcclDataType dataType, uint32_t srcRank, HcclComm comm,
                    aclrtStream stream) {
  return p2p("HcclRecv", recvBuf, count, dataType, static_cast<int>(srcRank), nullptr, false, comm, stream);
}

HcclResult HcclRecvAny(void* recvBuf, uint64_t count, HcclDataType dataType, uint32_t* srcRank, HcclComm comm,
                       aclrtStream stream) {
  if (srcRank == nullptr) {
    t_last_error = "HcclRecvAny: srcRank is null";
    return HCCL_E_PTR;
  }
  return p2p("HcclRecvAny", recvBuf, count, dataType, -1, srcRank, false, comm, stream);
}

HcclResult HcclGroupStart(void) {
  ++t_group.depth;
  return HCCL_SUCCESS;
}

HcclResult HcclGroupEnd(void) {
  return guarded("HcclGroupEnd", [&] {
    require(t_group.depth > 0, HCCL_E_PARA, "no group is open (HcclGroupStart was not called)");
    if (--t_group.depth > 0) return;
    std::vector<GroupState::Batch> batches = std::move(t_group.batches);
    t_group.batches.clear();
    for (auto& b : batches) {
      const std::string label = "hccl: send/recv group on rank " + std::to_string(b.comm->rank());
      b.comm->enqueue_p2p(b.stream, std::move(b.ops), label);
    }
  });
}

HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult* asyncError) {
  return guarded("HcclGetCommAsyncError", [&] {
    require(asyncError != nullptr, HCCL_E_PTR, "asyncError is null");
    *asyncError = comm_of(comm).error();
  });
}

const char* HcclGetCommAsyncErrorString(HcclComm comm) {
  if (comm == nullptr) return "";
  thread_local std::string msg;
  msg = static_cast<HcclCommHandle*>(comm)->impl->error_message();
  return msg.c_str();
}

HcclResult HcclCommAbort(HcclComm comm) {
  return guarded("HcclCommAbort", [&] { comm_of(comm).abort(); });
}

HcclResult HcclCommSetOpTimeout(HcclComm comm, uint32_t timeoutMs) {
  return guarded("HcclCommSetOpTimeout", [&] {
    require(timeoutMs > 0, HCCL_E_PARA, "timeoutMs must be positive");
    comm_of(comm).set_op_timeout(std::chrono::milliseconds(timeoutMs));
  });
}

}  // extern "C"
