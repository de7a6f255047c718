// The "hccl" c10d::Backend over the simulated NPU: collectives on npu tensors, run on a per-device
// communication stream ordered after the caller's stream, over the shm or tcp transport.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "distributed/collectives.h"
#include "distributed/hccl_config.h"
#include "distributed/hccl_work.h"

namespace torch_npu_sim {

class P2PEngine;

// State shared by the backend and the host functions that run on its communication stream.
struct CommShared {
  hccl_sim::HcclConfig cfg;
  std::unique_ptr<hccl_sim::Transport> coll;  // collectives
  std::unique_ptr<hccl_sim::Transport> p2p;   // send/recv (separate rings/sockets: no interleaving)
  std::chrono::milliseconds timeout{0};       // effective per-operation timeout
  std::atomic<bool> abort{false};
  std::mutex mu;       // guards `broken` only; never held across a wait or a call out
  std::string broken;  // first failure; every later operation fails fast with it
  int rank = 0;
  std::vector<char> scratch;  // only touched by collectives on the communication stream, one at a time
  std::vector<int> host_of;   // host index per rank when the ranks span hosts (two-level all_reduce), else empty
  void set_broken(const std::string& msg);
  std::string broken_reason();
  // A failed operation: marks the communicator broken, applies HCCL_ASYNC_ERROR_HANDLING (abort, or
  // print and end the process) and returns the typed error for its Work and future.
  std::exception_ptr fail(const std::string& msg, hccl_sim::CommErrorKind kind);
};

class HcclBackend : public c10d::Backend {
 public:
  HcclBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout,
              int device_index);
  ~HcclBackend() override;

  const std::string getBackendName() const override { return "hccl"; }
  std::string transport_name() const { return comm_->coll->name(); }
  int device_index() const { return device_index_; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  void abort() override;
  void shutdown() override;

 private:
  using Body = std::function<void(hccl_sim::CommContext&)>;
  // One stream-ordered operation: orders the communication stream after the caller's stream, enqueues
  // `body` there, copies non-contiguous outputs back, records the completion event, builds the Work.
  struct Launch {
    c10d::OpType op;
    const char* name;
    hccl_sim::MsgHeader hdr;
    std::vector<at::Tensor> keep_alive;  // every buffer the body touches
    std::vector<at::Tensor> outputs;     // the future's value
    std::vector<std::pair<at::Tensor, at::Tensor>> copy_back;  // (user tensor, contiguous temp)
    bool host_blocking = false;          // barrier: wait() blocks the host
    std::chrono::milliseconds timeout = c10d::kUnsetTimeout;  // c10d's per-call timeout (opts.timeout)
  };
  c10::intrusive_ptr<c10d::Work> launch(Launch l, Body body);
  c10::intrusive_ptr<c10d::Work> p2p(at::Tensor& t, int peer, int tag, bool is_send, c10d::OpType op);
  // Contiguous view of t (t itself, or a temp registered in l.copy_back when `is_output`).
  at::Tensor contiguous_for(Launch& l, const at::Tensor& t, bool is_output);
  void check_usable(const char* op);
  c10::Device device_for(const at::Tensor& t, const char* op);
  c10::Stream comm_stream(c10::DeviceIndex device);
  c10::Stream p2p_stream(c10::DeviceIndex device);  // where p2p Works' completion events are recorded
  void shutdown_impl();
  // Enqueues on `stream` (after the operation and its copies back) the hand-over of `state`'s outcome to
  // the completion thread, which completes `future` with `outputs` or the error.
  void complete_after(npu_sim::Stream stream, const c10::Stream& cstream, std::shared_ptr<WorkState> state,
                      c10::intrusive_ptr<c10::ivalue::Future> future, std::vector<at::Tensor> outputs);

  std::shared_ptr<CommShared> comm_;
  std::shared_ptr<CompletionThread> completions_;
  int device_index_;
  uint32_t seq_ = 0;
  // Guards the two stream maps only: never held across a wait (shutdown copies them out first).
  std::mutex streams_mu_;
  std::map<c10::DeviceIndex, c10::Stream> comm_streams_;  // guarded by streams_mu_
  std::map<c10::DeviceIndex, c10::Stream> p2p_streams_;   // guarded by streams_mu_
  std::unique_ptr<P2PEngine> p2p_engine_;
  bool shut_down_ = false;
  bool coalescing_ = false;
  std::vector<c10::intrusive_ptr<c10d::Work>> coalesced_;
  c10::intrusive_ptr<c10d::Work> track(c10::intrusive_ptr<c10d::Work> w);
};

}  // namespace torch_npu_sim
