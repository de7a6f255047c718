// The "hccl" c10d::Backend over the simulated NPU, as torch_npu's ProcessGroupHCCL: it checks and stages
// torch's arguments and calls the collective library's C API (hccl/hccl.h) on a per-device communication
// stream ordered after the caller's stream; Work, futures and error handling stay here.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "distributed/hccl_work.h"
#include "hccl/hccl.h"

namespace torch_npu_sim {

// The process group's own knobs, read as torch_npu reads them (HCCL_* first, then TORCH_HCCL_*).
// HCCL_ASYNC_ERROR_HANDLING, what a failed operation does to the process (NCCL's values; torch_npu's
// default is 1 for torch >= 2.1): 0 nothing more (the error reaches Work.wait(), its future and every
// later synchronize), 2 also abort the communicator (pending operations fail at once), 1 abort it and
// tear the process down (exit code 1, after printing rank, op, sequence number and cause), 3 tear down
// at once without the abort. A blocking wait (HCCL_BLOCKING_WAIT=1) reports errors to wait() instead,
// so it turns this to 0.
enum AsyncErrorHandling : int { kNoHandling = 0, kTearDown = 1, kAbortComm = 2, kSkipCleanUp = 3 };
struct PgOptions {
  bool blocking_wait = false;
  int async_error_handling = kTearDown;
  static PgOptions from_env();  // throws DistBackendError for malformed values
};

// What the host functions of the backend's streams share with it: the communicator and the handling of
// its failures. Owned through shared_ptr by the backend and by every task it enqueued.
struct CommShared {
  HcclComm comm = nullptr;  // destroyed with this (after every task that uses it has run)
  PgOptions opts;
  int rank = 0;
  std::atomic<bool> closing{false};  // shut down or aborted by the program: failures no longer tear down
  ~CommShared();
  // The communicator's first failure as the typed error of a failed operation, after applying
  // HCCL_ASYNC_ERROR_HANDLING (abort, or print and end the process); null if it has not failed.
  std::exception_ptr failure();
};

// The HcclDataType of a tensor's dtype; a clear error naming `op` for one the library does not move.
HcclDataType hccl_dtype(at::ScalarType type, const char* op);

class HcclBackend : public c10d::Backend {
 public:
  HcclBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout,
              int device_index);
  ~HcclBackend() override;

  const std::string getBackendName() const override { return "hccl"; }
  std::string transport_name() const;
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
  // One stream-ordered operation: `call` enqueues it (the C API call) on the communication stream `cs`.
  using Call = std::function<HcclResult(aclrtStream cs)>;
  struct Launch {
    c10d::OpType op;
    const char* name;
    std::vector<at::Tensor> keep_alive;  // every buffer the operation touches
    std::vector<at::Tensor> outputs;     // the future's value
    std::vector<std::pair<at::Tensor, at::Tensor>> copy_back;  // (user tensor, contiguous temp)
    bool host_blocking = false;          // barrier: wait() blocks the host
    std::chrono::milliseconds timeout = c10d::kUnsetTimeout;  // c10d's per-call timeout (opts.timeout)
  };
  // Orders the communication stream after the caller's, makes the calls there, copies non-contiguous
  // outputs back, and builds the Work whose state and future complete after them.
  c10::intrusive_ptr<c10d::Work> launch(Launch l, const std::vector<Call>& calls);
  c10::intrusive_ptr<c10d::Work> launch(Launch l, Call call) { return launch(std::move(l), std::vector<Call>{std::move(call)}); }
  c10::intrusive_ptr<c10d::Work> p2p(at::Tensor& t, int peer, bool is_send, c10d::OpType op);
  // The call that reduce-scatters the flat `in` (group size x output's elements) into `output`; registers
  // its buffers in `l`.
  Call reduce_scatter_call(Launch& l, at::Tensor in, const at::Tensor& output, const c10d::ReduceOp& reduce_op);
  // Contiguous view of t (t itself, or a temp registered in l.copy_back when `is_output`).
  at::Tensor contiguous_for(Launch& l, const at::Tensor& t, bool is_output);
  // One contiguous buffer holding `ts` back to back: their own storage when they already lie so, else a
  // temp (filled from them unless `is_output`; copied back into them after the operation if it is).
  at::Tensor flat_for(Launch& l, const std::vector<at::Tensor>& ts, bool is_output);
  void check_usable(const char* op);
  c10::Device device_for(const at::Tensor& t, const char* op);
  c10::Stream comm_stream(c10::DeviceIndex device);
  c10::Stream p2p_stream(c10::DeviceIndex device);  // where p2p Works' copies back and completions run
  // The stream that carries send/recvs of one direction with one peer (-1: any), so that a pair's sends
  // and receives never wait for each other in stream order.
  npu_sim::Stream p2p_lane(c10::DeviceIndex device, bool is_send, int peer);
  void shutdown_impl();
  // Enqueues on `stream` (after the operation and its copies back) the task that decides the
  // operation's outcome (the communicator's async error), finishes `state` and hands `future` to the
  // completion thread; it holds `keep_alive` (the operation's buffers) until then.
  void complete_after(npu_sim::Stream stream, const c10::Stream& cstream, std::shared_ptr<WorkState> state,
                      c10::intrusive_ptr<c10::ivalue::Future> future, std::vector<at::Tensor> outputs,
                      std::shared_ptr<uint32_t> source = nullptr, std::vector<at::Tensor> keep_alive = {});
  // HcclCommSetOpTimeout when the next operation's timeout differs from the last one set.
  void set_timeout(std::chrono::milliseconds timeout);

  std::shared_ptr<CommShared> comm_;
  std::shared_ptr<CompletionThread> completions_;
  int device_index_;
  std::chrono::milliseconds timeout_;       // the process group's
  std::chrono::milliseconds comm_timeout_{0};  // last passed to HcclCommSetOpTimeout
  // Guards the stream maps only: never held across a wait (shutdown copies them out first).
  std::mutex streams_mu_;
  std::map<c10::DeviceIndex, c10::Stream> comm_streams_;  // guarded by streams_mu_
  std::map<c10::DeviceIndex, c10::Stream> p2p_streams_;   // guarded by streams_mu_
  struct StreamDeleter {
    void operator()(npu_sim::StreamImpl* s) const { (void)npu_sim::stream_destroy(s); }
  };
  // (device, is_send, peer) -> lane; guarded by streams_mu_
  std::map<std::tuple<c10::DeviceIndex, bool, int>, std::unique_ptr<npu_sim::StreamImpl, StreamDeleter>> p2p_lanes_;
  bool shut_down_ = false;
  bool coalescing_ = false;
  std::vector<c10::intrusive_ptr<c10d::Work>> coalesced_;
  c10::intrusive_ptr<c10d::Work> track(c10::intrusive_ptr<c10d::Work> w);
};

}  // namespace torch_npu_sim
