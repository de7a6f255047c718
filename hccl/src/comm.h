// The communicator behind an HcclComm (torch-free): its transports (set up through the root's bootstrap),
// configuration, error state and the stream tasks its operations become. api.cpp is the C surface over it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap.h"
#include "collectives.h"
#include "hccl/hccl.h"
#include "hccl_config.h"
#include "npu_sim/runtime.h"

namespace hccl_sim {

// The HcclResult a failure of this kind reports.
HcclResult result_of(CommErrorKind kind);

// A runtime event owned by one object (destroyed with it).
struct EventDeleter {
  void operator()(npu_sim::EventImpl* e) const { (void)npu_sim::event_destroy(e); }
};
using OwnedEvent = std::unique_ptr<npu_sim::EventImpl, EventDeleter>;
// An event recorded on `stream` now. Throws CommError.
OwnedEvent record_on(npu_sim::Stream stream);

// Completion of one send/recv, shared by the engine and the stream task that waits for it.
struct P2PState {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;          // guarded by mu
  std::string error;          // guarded by mu; empty: success
  int source = -1;            // guarded by mu; the rank a receive came from
  uint32_t* source_out = nullptr;  // HcclRecvAny's output, written by the stream task after done
  void finish(const std::string& err, int src);
};

struct P2POp {
  Xfer xfer;
  OwnedEvent ready;  // the buffer may be used once this has completed (null: at once)
  std::shared_ptr<P2PState> state;
};

class Communicator;

// One thread per communicator progresses every posted send/recv concurrently, in posting order per peer
// and direction (so a pair's sends and receives in both directions never deadlock on full buffers).
// Lock rule: mu_ guards the queue and stop_ only; the progress loop runs without it.
class P2PEngine {
 public:
  explicit P2PEngine(Communicator* comm);
  ~P2PEngine();  // fails what is pending, then joins
  void post(std::vector<std::unique_ptr<P2POp>> ops);

 private:
  void loop();
  void fail_all(std::deque<std::unique_ptr<P2POp>>& ops, const std::string& msg);

  Communicator* comm_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<P2POp>> queue_;  // guarded by mu_
  bool stop_ = false;                         // guarded by mu_
  std::thread thread_;
};

// Owned through shared_ptr: the C handle holds one, and so does every stream task of the communicator, so
// HcclCommDestroy with operations still queued leaves them to run.
class Communicator : public std::enable_shared_from_this<Communicator> {
 public:
  // Sets up the transports through the root's bootstrap. Throws CommError.
  Communicator(int nranks, const RootAddress& root, int rank, const HcclCommConfig& config);
  ~Communicator();

  int rank() const { return rank_; }
  int size() const { return size_; }
  const char* transport_name() const { return coll_->name(); }

  // Enqueues a collective on `stream`: a host function that runs `body` over the collective transport
  // when the stream reaches it, and on failure breaks the communicator and fails the stream.
  using Body = std::function<void(CommContext&)>;
  void enqueue(npu_sim::Stream stream, const char* name, MsgHeader hdr, Body body);
  // Posts send/recvs now (each starts once `stream` has reached this point) and enqueues on `stream`
  // the task that waits for them all.
  void enqueue_p2p(npu_sim::Stream stream, std::vector<std::unique_ptr<P2POp>> ops, const std::string& label);

  void set_op_timeout(std::chrono::milliseconds t) { op_timeout_ms_.store(t.count()); }
  // The timeout of an operation enqueued now: the one set last, bounded by HCCL_EXEC_TIMEOUT.
  std::chrono::milliseconds op_timeout() const;

  // The first failure (kind and message); later operations fail at once with it.
  void set_error(CommErrorKind kind, const std::string& msg);
  HcclResult error() const;
  std::string error_message() const;
  void abort();
  // Fails the pending send/recvs and stops the engine (HcclCommDestroy); idempotent.
  void stop_p2p();

  Transport& p2p_transport() { return *p2p_; }
  const std::atomic<bool>& aborted() const { return abort_; }

 private:
  void setup(Rendezvous& rv, int device);

  int rank_, size_;
  HcclConfig cfg_;
  std::unique_ptr<Transport> coll_, p2p_;
  std::vector<int> host_of_;     // host index per rank when the ranks span hosts, else empty
  std::vector<char> scratch_;    // guarded by run_mu_: the collectives' staging buffer
  // Serialises the collectives of this communicator (they share coll_ and scratch_) when they are
  // enqueued on several streams; held while one communicates, which waits on peers only, never on a lock.
  std::mutex run_mu_;
  std::atomic<long long> op_timeout_ms_;
  std::atomic<uint32_t> seq_{0};
  std::atomic<bool> abort_{false};
  mutable std::mutex err_mu_;    // guards err_kind_, err_msg_, has_error_ (a leaf lock)
  bool has_error_ = false;
  CommErrorKind err_kind_ = CommErrorKind::kOther;
  std::string err_msg_;
  std::mutex engine_mu_;         // guards engine_ (created at set-up, reset by stop_p2p)
  std::unique_ptr<P2PEngine> engine_;
};

}  // namespace hccl_sim
