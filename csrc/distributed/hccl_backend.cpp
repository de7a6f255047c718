// HcclBackend set-up and the machinery shared by every operation: rendezvous through the c10d Store,
// transport choice by host identity, the communication streams, launch() (stream ordering, the host
// function that communicates, completion event, future) and the p2p path.
#include "distributed/hccl_backend.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cstdio>
#include <map>
#include <unistd.h>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"
#include "distributed/hybrid_transport.h"
#include "distributed/p2p_engine.h"
#include "distributed/shm_transport.h"
#include "distributed/tcp_transport.h"

namespace torch_npu_sim {

namespace {

class StoreRendezvous final : public hccl_sim::Rendezvous {
 public:
  StoreRendezvous(c10::intrusive_ptr<c10d::Store> store, std::chrono::milliseconds timeout)
      : store_(std::move(store)), timeout_(timeout) {}
  void set(const std::string& key, const std::string& value) override {
    store_->set("hccl/" + key, std::vector<uint8_t>(value.begin(), value.end()));
  }
  std::string get(const std::string& key) override {
    try {
      store_->wait({"hccl/" + key}, timeout_);
    } catch (const std::exception& e) {
      throw hccl_sim::CommError("hccl: rendezvous timed out waiting for '" + key + "' (a rank did not join "
                                "within HCCL_CONNECT_TIMEOUT=" + std::to_string(timeout_.count() / 1000) + " s): " + e.what());
    }
    const std::vector<uint8_t> v = store_->get("hccl/" + key);
    return std::string(v.begin(), v.end());
  }
  bool try_get(const std::string& key, std::string* value) override {
    try {
      if (!store_->check({"hccl/" + key})) return false;
      const std::vector<uint8_t> v = store_->get("hccl/" + key);
      value->assign(v.begin(), v.end());
      return true;
    } catch (const std::exception&) {  // the store itself is gone: nothing more to learn
      return false;
    }
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  std::chrono::milliseconds timeout_;
};

// Swaps the calling thread's current stream for the stream's device and restores it.
struct StreamSwap {
  explicit StreamSwap(const c10::Stream& s) : prev(exchange_stream(s)) {}
  ~StreamSwap() { exchange_stream(prev); }
  c10::Stream prev;
};

}  // namespace

void CommShared::set_broken(const std::string& msg) {
  std::lock_guard<std::mutex> lk(mu);
  if (broken.empty()) broken = msg;
}

std::string CommShared::broken_reason() {
  std::lock_guard<std::mutex> lk(mu);
  return broken;
}

std::exception_ptr CommShared::fail(const std::string& msg, hccl_sim::CommErrorKind kind) {
  set_broken(msg);
  const int mode = cfg.async_error_handling;
  if (mode == hccl_sim::kAbortComm || mode == hccl_sim::kTearDown) abort.store(true);  // pending ops end now
  if (mode == hccl_sim::kTearDown || mode == hccl_sim::kSkipCleanUp) {
    std::fprintf(stderr, "[hccl] rank %d: %s\n[hccl] HCCL_ASYNC_ERROR_HANDLING=%d: tearing down the process "
                 "(set it to 0 or 2 to handle the error in the program instead)\n", rank, msg.c_str(), mode);
    std::fflush(stderr);
    _exit(1);
  }
  return make_dist_error(msg, kind);
}

namespace {
// "hccl: allreduce #3 on rank 0" — how every failure of an operation starts.
std::string op_label(const char* name, uint32_t seq, int rank) {
  return std::string("hccl: ") + name + " #" + std::to_string(seq) + " on rank " + std::to_string(rank);
}
}  // namespace

HcclBackend::HcclBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                         std::chrono::milliseconds timeout, int device_index)
    : c10d::Backend(rank, size), comm_(std::make_shared<CommShared>()), device_index_(device_index) {
  try {
    comm_->cfg = hccl_sim::HcclConfig::from_env();
    comm_->rank = rank;
    comm_->timeout = timeout;
    if (comm_->cfg.exec_timeout.count() > 0) comm_->timeout = std::min(timeout, comm_->cfg.exec_timeout);
    StoreRendezvous rv(store, comm_->cfg.connect_timeout);
    // Host identity decides the transport: shared memory between the ranks of one host, TCP between
    // hosts (both at once, hierarchically, when the job spans hosts with several ranks on some).
    // The transport setting travels with it: ranks that disagree would wait for each other on different
    // transports until the connect timeout, so they fail at once naming the setting instead.
    const std::string me = hccl_sim::host_identity();
    const char* my_transport = hccl_sim::transport_kind_name(comm_->cfg.transport);
    rv.set("host/" + std::to_string(rank), std::string(my_transport) + " " + me);
    std::vector<int> local, remote, all, host_of;
    std::vector<char> is_local(size, 0);
    std::map<std::string, int> hosts;  // identity -> index, in order of each host's lowest rank
    for (int r = 0; r < size; ++r) {
      std::string h = me;
      if (r != rank) {
        const std::string v = rv.get("host/" + std::to_string(r));
        const std::size_t sp = v.find(' ');
        const std::string theirs = v.substr(0, sp);
        if (theirs != my_transport) {
          throw hccl_sim::CommError("transport mismatch: rank " + std::to_string(rank) + " has NPU_SIM_HCCL_TRANSPORT=" +
                                    my_transport + " but rank " + std::to_string(r) + " has " + theirs +
                                    "; every rank must use the same setting");
        }
        h = sp == std::string::npos ? std::string() : v.substr(sp + 1);
      }
      host_of.push_back(hosts.emplace(h, static_cast<int>(hosts.size())).first->second);
      all.push_back(r);
      is_local[r] = h == me;
      (is_local[r] ? local : remote).push_back(r);
    }
    if (hosts.size() > 1) comm_->host_of = host_of;
    hccl_sim::TransportKind kind = comm_->cfg.transport;
    if (kind == hccl_sim::TransportKind::kShm && !remote.empty())
      throw hccl_sim::CommError("NPU_SIM_HCCL_TRANSPORT=shm but the ranks are on different hosts");
    const std::size_t ring = comm_->cfg.ring_bytes, p2p_ring = std::min<std::size_t>(ring, 1u << 20);
    const int pr = comm_->cfg.peer_read ? device_index : -1;  // whose HBM peers read in place
    const auto& cto = comm_->cfg.connect_timeout;
    // The choice depends only on the host list, so every rank makes the same one.
    if (kind == hccl_sim::TransportKind::kTcp || (hosts.size() > 1 && hosts.size() == std::size_t(size))) {
      comm_->coll = hccl_sim::make_tcp_transport(rv, "coll", rank, size, cto, all);
      comm_->p2p = hccl_sim::make_tcp_transport(rv, "p2p", rank, size, cto, all);
    } else if (remote.empty()) {
      comm_->coll = hccl_sim::make_shm_transport(rv, "coll", rank, size, ring, local, pr);
      comm_->p2p = hccl_sim::make_shm_transport(rv, "p2p", rank, size, p2p_ring, local, pr);
    } else {
      // Every rank takes part in every key exchange of both kinds (ranks alone on their host have an
      // empty shm side), so the store sees the same sequence from all of them.
      for (const char* what : {"coll", "p2p"}) {
        auto shm = hccl_sim::make_shm_transport(rv, std::string(what) + "/h", rank, size,
                                                std::string(what) == "coll" ? ring : p2p_ring, local, pr);
        auto tcp = hccl_sim::make_tcp_transport(rv, std::string(what) + "/h", rank, size, cto, remote);
        auto t = hccl_sim::make_hybrid_transport(rank, size, is_local, std::move(shm), std::move(tcp));
        (std::string(what) == "coll" ? comm_->coll : comm_->p2p) = std::move(t);
      }
    }
  } catch (const hccl_sim::CommError& e) {
    C10_THROW_ERROR(DistBackendError, std::string("hccl: cannot create the communicator: ") + e.what());
  }
  p2p_engine_ = std::make_unique<P2PEngine>(comm_);
  completions_ = std::make_shared<CompletionThread>();
}

HcclBackend::~HcclBackend() { shutdown_impl(); }

// Waits on the streams outside streams_mu_ (it guards the maps only; a future callback on the completion
// thread may start a collective and need it while this waits).
void HcclBackend::shutdown_impl() {
  if (shut_down_) return;
  shut_down_ = true;
  auto streams_of = [this](const std::map<c10::DeviceIndex, c10::Stream>& m) {
    std::lock_guard<std::mutex> lk(streams_mu_);
    std::vector<npu_sim::Stream> out;
    for (const auto& [dev, s] : m) out.push_back(native_stream(s));
    return out;
  };
  // Pending collectives finish (or time out) before the transports they use go away. Their errors stay
  // on the device (sticky) for its user; nothing is consumed here.
  for (npu_sim::Stream s : streams_of(comm_streams_)) npu_sim::stream_synchronize(s);
  p2p_engine_.reset();  // fails pending p2p operations, which releases the p2p streams' host functions
  for (npu_sim::Stream s : streams_of(p2p_streams_)) npu_sim::stream_synchronize(s);
  completions_.reset();  // completes the futures still queued, then joins (host functions hold no more)
}

void HcclBackend::shutdown() { shutdown_impl(); }

void HcclBackend::abort() {
  comm_->abort.store(true);
  comm_->set_broken("hccl: the communicator was aborted");
  shutdown_impl();
}

void HcclBackend::startCoalescing() {
  coalescing_ = true;
  coalesced_.clear();
}

c10::intrusive_ptr<c10d::Work> HcclBackend::endCoalescing() {
  coalescing_ = false;
  return c10::make_intrusive<HcclCoalescedWork>(getRank(), std::move(coalesced_));
}

c10::intrusive_ptr<c10d::Work> HcclBackend::track(c10::intrusive_ptr<c10d::Work> w) {
  if (coalescing_) coalesced_.push_back(w);
  return w;
}

void HcclBackend::check_usable(const char* op) {
  const std::string broken = comm_->broken_reason();
  if (!broken.empty()) {
    C10_THROW_ERROR(DistBackendError, std::string("hccl: ") + op +
                                          ": the communicator is unusable after an earlier failure: " + broken);
  }
  TORCH_CHECK(!shut_down_, "hccl: ", op, ": the process group has been shut down");
}

c10::Device HcclBackend::device_for(const at::Tensor& t, const char* op) {
  TORCH_CHECK(t.defined(), "hccl: ", op, ": undefined tensor");
  TORCH_CHECK(is_npu(t), "hccl: ", op, ": expected tensors on npu, got one on ", t.device(),
              " (use a 'cpu:gloo,npu:hccl' process group for CPU tensors)");
  TORCH_CHECK(!t.is_sparse(), "hccl: ", op, ": sparse tensors are not supported");
  kernel_dtype(t.scalar_type(), op);
  return t.device();
}

c10::Stream HcclBackend::comm_stream(c10::DeviceIndex device) {
  std::lock_guard<std::mutex> lk(streams_mu_);
  auto it = comm_streams_.find(device);
  if (it == comm_streams_.end()) it = comm_streams_.emplace(device, stream_from_pool(device)).first;
  return it->second;
}

c10::Stream HcclBackend::p2p_stream(c10::DeviceIndex device) {
  std::lock_guard<std::mutex> lk(streams_mu_);
  auto it = p2p_streams_.find(device);
  if (it == p2p_streams_.end()) it = p2p_streams_.emplace(device, stream_from_pool(device)).first;
  return it->second;
}

at::Tensor HcclBackend::contiguous_for(Launch& l, const at::Tensor& t, bool is_output) {
  if (t.is_contiguous()) {
    l.keep_alive.push_back(t);
    return t;
  }
  at::Tensor tmp = t.contiguous();  // on the caller's stream, before the ordering event
  l.keep_alive.push_back(tmp);
  if (is_output) l.copy_back.emplace_back(t, tmp);
  return tmp;
}

c10::intrusive_ptr<c10d::Work> HcclBackend::launch(Launch l, Body body) {
  check_usable(l.name);
  c10::Device device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device_index_));
  if (!l.keep_alive.empty()) device = l.keep_alive.front().device();
  for (const auto& t : l.keep_alive) {
    TORCH_CHECK(t.device() == device, "hccl: ", l.name, ": all tensors must be on the same device (", device,
                "), got one on ", t.device());
  }
  l.hdr.seq = ++seq_;
  const c10::Stream comm = comm_stream(device.index());
  npu_sim::Stream cs = native_stream(comm);
  // Order after the caller's stream; an idle stream has nothing to order after (skipping the event saves
  // a marker on its worker and a hand-off between the two workers per collective).
  npu_sim::Stream caller = current_native_stream(device.index());
  if (npu_sim::stream_query(caller) != npu_sim::Status::kSuccess) {
    const NpuEvent ready = NpuEvent::recorded_on(caller);
    NPU_CHECK(npu_sim::stream_wait_event(cs, ready.get()));
  }

  auto state = std::make_shared<WorkState>();
  auto shared = comm_;
  const hccl_sim::MsgHeader hdr = l.hdr;
  const char* name = l.name;
  std::chrono::milliseconds timeout = comm_->timeout;
  if (l.timeout.count() >= 0) {  // c10d's per-call timeout, still bounded by HCCL_EXEC_TIMEOUT
    timeout = l.timeout;
    if (comm_->cfg.exec_timeout.count() > 0) timeout = std::min(timeout, comm_->cfg.exec_timeout);
  }
  // A failure fails the Work (state), the future (by complete_after) and this stream: the host function
  // throws, so the device's error is sticky and every later synchronize or copy to the host raises.
  NPU_CHECK(npu_sim::launch_host_func(cs, [shared, state, body = std::move(body), hdr, name, timeout,
                                           keep = l.keep_alive]() {
    const std::string label = op_label(name, hdr.seq, shared->rank);
    const std::string broken = shared->broken_reason();
    if (!broken.empty()) {
      const std::string msg = label + ": communicator unusable after an earlier failure: " + broken;
      state->finish(make_dist_error(msg));
      throw npu_sim::AsyncError(npu_sim::Status::kCommError, msg);
    }
    std::string msg;
    hccl_sim::CommErrorKind kind = hccl_sim::CommErrorKind::kOther;
    try {
      hccl_sim::CommContext ctx{*shared->coll, hdr, std::chrono::steady_clock::now() + timeout,
                                &shared->abort, shared->cfg.algo, name, &shared->scratch,
                                shared->host_of.empty() ? nullptr : &shared->host_of};
      body(ctx);
      state->finish(nullptr);
      return;
    } catch (const hccl_sim::CommError& e) {
      msg = label + " failed (" + hccl_sim::comm_error_kind_name(e.kind) + "): " + e.what();
      kind = e.kind;
    } catch (const std::exception& e) {
      msg = label + " failed: " + e.what();
    }
    state->finish(shared->fail(msg, kind));
    throw npu_sim::AsyncError(npu_sim::Status::kCommError, msg);
  }));
  if (!l.copy_back.empty()) {
    StreamSwap swap(comm);
    for (auto& [dst, tmp] : l.copy_back) dst.copy_(tmp);
    // The temps were allocated on the caller's stream: hold them until the copies on this stream have
    // read them, or the caching allocator could hand their blocks out again too early.
    NPU_CHECK(npu_sim::launch_host_func(cs, [hold = std::move(l.copy_back)] {}));
  }
  // DDP's reducer and comm hooks need a Tensor-list value; unlike NCCL's, the future completes when the
  // collective has ended, with its error if it failed (a failed all_reduce must not look like a success).
  auto future = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                         std::vector<c10::Device>{device});
  complete_after(cs, comm, state, future, l.outputs);
  NpuEvent done = NpuEvent::recorded_on(cs);
  return track(c10::make_intrusive<HcclWork>(getRank(), l.op, device, state, std::move(done), l.outputs, !l.host_blocking,
                                             comm_->cfg.blocking_wait, timeout, future));
}

void HcclBackend::complete_after(npu_sim::Stream stream, const c10::Stream& cstream, std::shared_ptr<WorkState> state,
                                 c10::intrusive_ptr<c10::ivalue::Future> future, std::vector<at::Tensor> outputs) {
  NPU_CHECK(npu_sim::launch_host_func(stream, [completions = completions_, cstream, state = std::move(state),
                                               future = std::move(future), outputs = std::move(outputs)]() {
    completions->post([cstream, state, future, outputs] {
      std::exception_ptr error;
      {
        std::lock_guard<std::mutex> lk(state->mu);
        error = state->error;
      }
      if (error) return future->setError(error);
      StreamSwap swap(cstream);  // consumers of the value are ordered after this stream
      future->markCompleted(c10::IValue(outputs));
    });
  }));
}

c10::intrusive_ptr<c10d::Work> HcclBackend::p2p(at::Tensor& t, int peer, int tag, bool is_send, c10d::OpType op) {
  const char* name = is_send ? "send" : "recv";
  check_usable(name);
  const c10::Device device = device_for(t, name);
  TORCH_CHECK(peer == -1 || (peer >= 0 && peer < getSize() && peer != getRank()), "hccl: ", name,
              ": invalid peer rank ", peer, " (group size ", getSize(), ", this rank ", getRank(), ")");
  auto op_ = std::make_unique<P2POp>();
  at::Tensor buf = t.is_contiguous() ? t : (is_send ? t.contiguous() : at::empty_like(t, at::MemoryFormat::Contiguous));
  npu_sim::Stream caller = current_native_stream(device.index());
  if (npu_sim::stream_query(caller) != npu_sim::Status::kSuccess) {  // else the tensor is ready now
    op_->ready = NpuEvent::recorded_on(caller);
  }
  op_->state = std::make_shared<WorkState>();
  op_->keep_alive = buf;
  hccl_sim::Xfer& x = op_->xfer;
  x.peer = peer;
  x.is_send = is_send;
  x.check_desync = false;
  x.hdr.op = static_cast<uint16_t>(op);
  x.hdr.dtype = static_cast<int8_t>(t.scalar_type());
  x.hdr.tag = tag;
  x.hdr.bytes = buf.nbytes();
  x.hdr.numel = buf.numel();
  if (is_send) x.src = buf.const_data_ptr();
  else x.dst = buf.data_ptr();
  auto state = op_->state;
  p2p_engine_->post(std::move(op_));
  // As NCCL: wait() orders the caller's stream after the operation instead of blocking the host. The
  // device's p2p stream (never the collectives' stream: a pending receive must not hold up a collective)
  // runs a host function that returns when the engine has finished the operation, then the copy back
  // into a non-contiguous receive buffer; the Work's event is recorded after both. A receive from any
  // source keeps a host-blocking wait: c10d reads its source rank right after wait().
  const c10::Stream ps = p2p_stream(device.index());
  npu_sim::Stream pns = native_stream(ps);
  const auto limit = comm_->timeout + std::chrono::seconds(5);  // the engine fails the op before that
  const std::string label = std::string("hccl: ") + name + " on rank " + std::to_string(getRank()) + " with peer " +
                            (peer < 0 ? std::string("any") : std::to_string(peer));
  NPU_CHECK(npu_sim::launch_host_func(pns, [state, limit, label] {
    if (!state->wait_for(limit)) state->finish(make_dist_error(label + ": no completion within the timeout"));
    std::lock_guard<std::mutex> lk(state->mu);
    if (state->error) {  // fail the stream too: the receive buffer must not be read as if it had arrived
      try {
        std::rethrow_exception(state->error);
      } catch (const std::exception& e) {
        throw npu_sim::AsyncError(npu_sim::Status::kCommError, e.what());
      }
    }
  }));
  if (!is_send && !t.is_contiguous()) {
    StreamSwap swap(ps);
    t.copy_(buf);
    NPU_CHECK(npu_sim::launch_host_func(pns, [hold = buf] {}));  // as in launch(): buf outlives the copy
  }
  auto future = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
  complete_after(pns, ps, state, future, {t});
  auto work = c10::make_intrusive<HcclWork>(getRank(), op, device, state, NpuEvent::recorded_on(pns), std::vector<at::Tensor>{t},
                                            /*stream_ordered=*/op != c10d::OpType::RECVANYSOURCE,
                                            comm_->cfg.blocking_wait, comm_->timeout, future);
  return track(work);
}

c10::intrusive_ptr<c10d::Work> HcclBackend::send(std::vector<at::Tensor>& tensors, int dst, int tag) {
  TORCH_CHECK(tensors.size() == 1, "hccl: send: expected exactly one tensor, got ", tensors.size());
  return p2p(tensors[0], dst, tag, true, c10d::OpType::SEND);
}

c10::intrusive_ptr<c10d::Work> HcclBackend::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
  TORCH_CHECK(tensors.size() == 1, "hccl: recv: expected exactly one tensor, got ", tensors.size());
  return p2p(tensors[0], src, tag, false, c10d::OpType::RECV);
}

c10::intrusive_ptr<c10d::Work> HcclBackend::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  TORCH_CHECK(tensors.size() == 1, "hccl: recvAnysource: expected exactly one tensor, got ", tensors.size());
  return p2p(tensors[0], -1, tag, false, c10d::OpType::RECVANYSOURCE);
}

c10::intrusive_ptr<c10d::Work> HcclBackend::barrier(const c10d::BarrierOptions& opts) {
  Launch l{c10d::OpType::BARRIER, "barrier", {}, {}, {}, {}, true};
  l.hdr.op = static_cast<uint16_t>(c10d::OpType::BARRIER);
  l.timeout = opts.timeout;
  return launch(std::move(l), [](hccl_sim::CommContext& c) { hccl_sim::barrier(c); });
}

}  // namespace torch_npu_sim
