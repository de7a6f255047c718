// c10d::Work of the hccl backend: completion state shared with the thread that communicates, the event
// recorded after the collective on the communication stream, the outputs, and the future DDP consumes.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "core/npu_event.h"
#include "hccl/hccl.h"
#include "npu_sim/runtime.h"

namespace torch_npu_sim {

// Completion of one operation; written by the communicating thread, read by the Work.
struct WorkState {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  int source = -1;  // p2p receives: the rank the message came from
  void finish(std::exception_ptr e);  // the first call decides the outcome
  // False on timeout.
  bool wait_for(std::chrono::milliseconds timeout);
};

// The typed error a Work stores and rethrows: DistNetworkError when a peer is gone (HCCL_E_REMOTE),
// DistBackendError for everything else (timeout, desync, abort, an earlier failure).
std::exception_ptr make_dist_error(const std::string& msg, HcclResult result = HCCL_E_INTERNAL);

// Completes the Works' futures off the streams, in order, on one thread per communicator (NCCL's
// watchdog plays this part). A future must complete only once its operation has ended, with its value
// or its error; completing it on a stream worker would run user callbacks there (a Python callback
// would need the GIL a synchronizing host thread may hold). Lock rule: `mu_` guards the queue only;
// tasks run without it.
class CompletionThread {
 public:
  CompletionThread();
  ~CompletionThread();  // runs what is queued, then joins
  void post(std::function<void()> task);

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stop_ = false;                        // guarded by mu_
  std::thread thread_;
};

class HcclWork : public c10d::Work {
 public:
  // stream_ordered: wait() orders the caller's stream after `done_event` (host not blocked) unless
  // blocking_wait; otherwise (receive from any source, barrier) wait() blocks the host until the state is done.
  HcclWork(int rank, c10d::OpType op, c10::Device device, std::shared_ptr<WorkState> state,
           NpuEvent done_event, std::vector<at::Tensor> outputs, bool stream_ordered, bool blocking_wait,
           std::chrono::milliseconds timeout, c10::intrusive_ptr<c10::ivalue::Future> future);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override { return outputs_; }
  int sourceRank() const override;
  void synchronize() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  void host_wait(std::chrono::milliseconds timeout);

  c10::Device device_;
  std::shared_ptr<WorkState> state_;
  NpuEvent done_event_;  // recorded after the operation (and its copies back) on its stream
  std::vector<at::Tensor> outputs_;
  bool stream_ordered_;
  bool blocking_wait_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// The Work of a _coalescing_manager block: the operations were issued as they came; waiting on this
// waits on each of them (stream-ordered ones order the caller's stream, p2p ones block the host).
class HcclCoalescedWork : public c10d::Work {
 public:
  HcclCoalescedWork(int rank, std::vector<c10::intrusive_ptr<c10d::Work>> works);
  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  void synchronize() override { wait(kNoTimeout); }
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  std::vector<c10::intrusive_ptr<c10d::Work>> works_;
};

}  // namespace torch_npu_sim
