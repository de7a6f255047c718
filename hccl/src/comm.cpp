// Communicator set-up (transport choice by host identity, through the root's bootstrap), the stream task a
// collective becomes, the error state, and the p2p engine (see comm.h).
#include "comm.h"

#include <algorithm>
#include <map>

#include "hybrid_transport.h"
#include "shm_transport.h"
#include "tcp_transport.h"

namespace hccl_sim {

HcclResult result_of(CommErrorKind kind) {
  switch (kind) {
    case CommErrorKind::kTimeout: return HCCL_E_TIMEOUT;
    case CommErrorKind::kPeerGone: return HCCL_E_REMOTE;
    case CommErrorKind::kDesync: return HCCL_E_PARA;
    case CommErrorKind::kAborted: return HCCL_E_SUSPENDING;
    case CommErrorKind::kOther: break;
  }
  return HCCL_E_INTERNAL;
}

OwnedEvent record_on(npu_sim::Stream stream) {
  npu_sim::Event e = nullptr;
  if (npu_sim::event_create(&e) != npu_sim::Status::kSuccess) {
    throw CommError("hccl: cannot create an event: " + npu_sim::last_error_message());
  }
  OwnedEvent owned(e);
  if (npu_sim::event_record(e, stream) != npu_sim::Status::kSuccess) {
    throw CommError("hccl: cannot record an event on the stream: " + npu_sim::last_error_message());
  }
  return owned;
}

void P2PState::finish(const std::string& err, int src) {
  {
    std::lock_guard<std::mutex> lk(mu);
    if (done) return;  // the first outcome stands
    error = err;
    source = src;
    done = true;
  }
  cv.notify_all();
}

// ---------------------------------------------------------------------------------------------------
// Set-up

namespace {

// "hccl: allreduce #3 on rank 0" — how every failure of an operation starts.
std::string op_label(const char* name, uint32_t seq, int rank) {
  return std::string("hccl: ") + name + " #" + std::to_string(seq) + " on rank " + std::to_string(rank);
}

// Marks this rank's part of the bootstrap over when set-up ends, however it ends.
struct DoneOnExit {
  BootstrapClient& rv;
  ~DoneOnExit() { rv.done(); }
};

}  // namespace

Communicator::Communicator(int nranks, const RootAddress& root, int rank, const HcclCommConfig& config)
    : rank_(rank), size_(nranks), cfg_(HcclConfig::from_env()) {
  if (config.hcclBufferSize > 0) {
    std::size_t ring = 1u << 20;
    while (ring < std::size_t{config.hcclBufferSize} << 20) ring <<= 1;
    cfg_.ring_bytes = ring;
  }
  set_op_timeout(config.npuSimOpTimeoutMs > 0 ? std::chrono::milliseconds(config.npuSimOpTimeoutMs)
                                             : std::chrono::milliseconds(std::chrono::minutes(30)));
  BootstrapClient rv(root, nranks, rank, cfg_.connect_timeout);
  DoneOnExit done{rv};
  setup(rv, config.npuSimDevice < 0 ? 0 : config.npuSimDevice);
  engine_ = std::make_unique<P2PEngine>(this);
}

Communicator::~Communicator() { stop_p2p(); }

void Communicator::setup(Rendezvous& rv, int device) {
  const int rank = rank_, size = size_;
  // Host identity decides the transport: shared memory between the ranks of one host, TCP between hosts
  // (both at once, hierarchically, when the job spans hosts with several ranks on some). The transport
  // setting travels with it: ranks that disagree would wait for each other on different transports until
  // the connect timeout, so they fail at once naming the setting instead.
  const std::string me = host_identity();
  const char* my_transport = transport_kind_name(cfg_.transport);
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
        throw CommError("transport mismatch: rank " + std::to_string(rank) + " has NPU_SIM_HCCL_TRANSPORT=" +
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
  if (hosts.size() > 1) host_of_ = host_of;
  const TransportKind kind = cfg_.transport;
  if (kind == TransportKind::kShm && !remote.empty()) {
    throw CommError("NPU_SIM_HCCL_TRANSPORT=shm but the ranks are on different hosts");
  }
  const std::size_t ring = cfg_.ring_bytes, p2p_ring = std::min<std::size_t>(ring, 1u << 20);
  const int pr = cfg_.peer_read ? device : -1;  // whose HBM peers read in place
  const auto& cto = cfg_.connect_timeout;
  // The choice depends only on the host list, so every rank makes the same one.
  if (kind == TransportKind::kTcp || (hosts.size() > 1 && hosts.size() == std::size_t(size))) {
    coll_ = make_tcp_transport(rv, "coll", rank, size, cto, all);
    p2p_ = make_tcp_transport(rv, "p2p", rank, size, cto, all);
  } else if (remote.empty()) {
    coll_ = make_shm_transport(rv, "coll", rank, size, ring, local, pr);
    p2p_ = make_shm_transport(rv, "p2p", rank, size, p2p_ring, local, pr);
  } else {
    // Every rank takes part in every key exchange of both kinds (ranks alone on their host have an empty
    // shm side), so the root sees the same sequence from all of them.
    for (const std::string what : {"coll", "p2p"}) {
      auto shm = make_shm_transport(rv, what + "/h", rank, size, what == "coll" ? ring : p2p_ring, local, pr);
      auto tcp = make_tcp_transport(rv, what + "/h", rank, size, cto, remote);
      (what == "coll" ? coll_ : p2p_) = make_hybrid_transport(rank, size, is_local, std::move(shm), std::move(tcp));
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Errors

void Communicator::set_error(CommErrorKind kind, const std::string& msg) {
  std::lock_guard<std::mutex> lk(err_mu_);
  if (has_error_) return;
  has_error_ = true;
  err_kind_ = kind;
  err_msg_ = msg;
}

HcclResult Communicator::error() const {
  std::lock_guard<std::mutex> lk(err_mu_);
  return has_error_ ? result_of(err_kind_) : HCCL_SUCCESS;
}

std::string Communicator::error_message() const {
  std::lock_guard<std::mutex> lk(err_mu_);
  return err_msg_;
}

std::chrono::milliseconds Communicator::op_timeout() const {
  const std::chrono::milliseconds t(op_timeout_ms_.load());
  return cfg_.exec_timeout.count() > 0 ? std::min(t, cfg_.exec_timeout) : t;
}

void Communicator::abort() {
  abort_.store(true);
  set_error(CommErrorKind::kAborted, "hccl: the communicator was aborted");
}

void Communicator::stop_p2p() {
  std::unique_ptr<P2PEngine> engine;
  {
    std::lock_guard<std::mutex> lk(engine_mu_);
    engine = std::move(engine_);
  }
  engine.reset();  // joins outside engine_mu_: the engine's loop never takes it
}

// ---------------------------------------------------------------------------------------------------
// Stream tasks

void Communicator::enqueue(npu_sim::Stream stream, const char* name, MsgHeader hdr, Body body) {
  hdr.seq = ++seq_;
  const std::chrono::milliseconds timeout = op_timeout();
  // A failure breaks the communicator and fails this stream: the host function throws, so the device's
  // error is sticky and every later synchronize or copy to the host raises.
  const npu_sim::Status st = npu_sim::launch_host_func(stream, [self = shared_from_this(), this, name, hdr, timeout, body = std::move(body)] {
    const std::string label = op_label(name, hdr.seq, rank_);
    if (error() != HCCL_SUCCESS) {
      throw npu_sim::AsyncError(npu_sim::Status::kCommError,
                                label + ": communicator unusable after an earlier failure: " + error_message());
    }
    std::string msg;
    CommErrorKind kind = CommErrorKind::kOther;
    try {
      std::lock_guard<std::mutex> lk(run_mu_);  // collectives of one communicator run one at a time
      CommContext ctx{*coll_, hdr, std::chrono::steady_clock::now() + timeout, &abort_, cfg_.algo, name, &scratch_,
                      host_of_.empty() ? nullptr : &host_of_};
      body(ctx);
      return;
    } catch (const CommError& e) {
      msg = label + " failed (" + comm_error_kind_name(e.kind) + "): " + e.what();
      kind = e.kind;
    } catch (const std::exception& e) {
      msg = label + " failed: " + e.what();
    }
    set_error(kind, msg);
    throw npu_sim::AsyncError(npu_sim::Status::kCommError, msg);
  });
  if (st != npu_sim::Status::kSuccess) {
    throw CommError(std::string("hccl: ") + name + ": cannot enqueue on the stream: " + npu_sim::last_error_message());
  }
}

void Communicator::enqueue_p2p(npu_sim::Stream stream, std::vector<std::unique_ptr<P2POp>> ops, const std::string& label) {
  std::vector<std::shared_ptr<P2PState>> states;
  // Every op of the batch starts once the stream has reached this point (at once when it is idle).
  const bool busy = npu_sim::stream_query(stream) != npu_sim::Status::kSuccess;
  for (auto& op : ops) {
    states.push_back(op->state);
    if (busy) op->ready = record_on(stream);
  }
  {
    std::lock_guard<std::mutex> lk(engine_mu_);
    if (!engine_) throw CommError(label + ": the communicator has been destroyed");
    engine_->post(std::move(ops));
  }
  // The stream goes on once every op has ended; the engine fails an op before this limit (its timeout),
  // the margin only guards against an engine that stopped.
  const auto limit = op_timeout() + std::chrono::seconds(5);
  const npu_sim::Status st = npu_sim::launch_host_func(stream, [states = std::move(states), limit, label] {
    for (const auto& s : states) {
      std::unique_lock<std::mutex> lk(s->mu);
      if (!s->cv.wait_for(lk, limit, [&] { return s->done; })) {
        throw npu_sim::AsyncError(npu_sim::Status::kCommError, label + ": no completion within the timeout");
      }
      // Fail the stream too: a receive buffer must not be read as if the message had arrived.
      if (!s->error.empty()) throw npu_sim::AsyncError(npu_sim::Status::kCommError, s->error);
      if (s->source_out != nullptr) *s->source_out = static_cast<uint32_t>(s->source);  // in stream order
    }
  });
  if (st != npu_sim::Status::kSuccess) {
    throw CommError(label + ": cannot enqueue on the stream: " + npu_sim::last_error_message());
  }
}

// ---------------------------------------------------------------------------------------------------
// P2P engine: ops start in posting order once their ready event has completed; the transport serves ops
// to the same peer and direction in order, as send/recv matching expects.

P2PEngine::P2PEngine(Communicator* comm) : comm_(comm) {
  thread_ = std::thread([this] { loop(); });
}

P2PEngine::~P2PEngine() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void P2PEngine::post(std::vector<std::unique_ptr<P2POp>> ops) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& op : ops) queue_.push_back(std::move(op));
  }
  cv_.notify_all();
}

void P2PEngine::fail_all(std::deque<std::unique_ptr<P2POp>>& ops, const std::string& msg) {
  for (auto& op : ops) op->state->finish(msg, -1);
  ops.clear();
}

void P2PEngine::loop() {
  std::deque<std::unique_ptr<P2POp>> active;
  auto last_progress = std::chrono::steady_clock::now();
  int idle = 0;
  Transport& t = comm_->p2p_transport();
  const int rank = comm_->rank();
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      if (active.empty()) cv_.wait(lk, [this] { return stop_ || !queue_.empty(); });
      if (stop_) {
        const std::string msg = "hccl: the communicator was destroyed with p2p operations pending";
        fail_all(queue_, msg);
        lk.unlock();
        fail_all(active, msg);
        return;
      }
      while (!queue_.empty()) {
        active.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    if (comm_->error() != HCCL_SUCCESS) {
      fail_all(active, "hccl: communicator unusable after an earlier failure: " + comm_->error_message());
      continue;
    }
    std::vector<Xfer*> xs;
    std::string device_error;
    for (auto& op : active) {
      if (op->ready) {
        const npu_sim::Status st = npu_sim::event_query(op->ready.get());
        if (st == npu_sim::Status::kNotReady) break;  // keep posting order
        if (st != npu_sim::Status::kSuccess) {  // the device failed: the buffer holds nothing valid to send
          device_error = npu_sim::last_error_message();
          break;
        }
        op->ready.reset();
      }
      xs.push_back(&op->xfer);
    }
    if (!device_error.empty()) {
      fail_all(active, "hccl: p2p operation on rank " + std::to_string(rank) +
                           " not started: the device failed before its buffer was ready: " + device_error);
      continue;
    }
    const uint32_t token = t.wait_token();
    bool moved = false;
    try {
      moved = !xs.empty() && t.progress(xs);
      if (!moved && ++idle > 2000 && check_peers_or_drain(t, xs)) moved = true;
      if (!moved && idle > 2000) {
        if (comm_->aborted().load()) throw CommError("the communicator was aborted", CommErrorKind::kAborted);
        if (std::chrono::steady_clock::now() - last_progress > comm_->op_timeout()) {
          throw CommError("hccl: p2p operation timed out on rank " + std::to_string(rank) +
                          " (peer dead, hung or never posted the matching send/recv)", CommErrorKind::kTimeout);
        }
      }
    } catch (const CommError& e) {
      const std::string msg = std::string("hccl: p2p on rank ") + std::to_string(rank) + " failed (" +
                              comm_error_kind_name(e.kind) + "): " + e.what();
      comm_->set_error(e.kind, msg);
      fail_all(active, msg);
      continue;
    } catch (const std::exception& e) {
      comm_->set_error(CommErrorKind::kOther, e.what());
      fail_all(active, e.what());
      continue;
    }
    if (moved || xs.empty()) {
      idle = 0;
      last_progress = std::chrono::steady_clock::now();
    }
    for (auto it = active.begin(); it != active.end();) {
      if ((*it)->xfer.finished) {
        (*it)->state->finish(std::string(), (*it)->xfer.source);
        it = active.erase(it);
      } else {
        ++it;
      }
    }
    if (xs.empty()) std::this_thread::sleep_for(std::chrono::microseconds(50));  // waiting for ready events
    else if (!moved && idle > 2000) t.idle_wait(token, xs, std::chrono::microseconds(200));
  }
}

}  // namespace hccl_sim
