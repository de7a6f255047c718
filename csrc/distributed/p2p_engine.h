// Point-to-point engine of the hccl backend: one thread per communicator progresses every posted
// send/recv concurrently (so isend+irecv pairs and batch_isend_irecv never deadlock on full buffers).
#pragma once

#include <ATen/core/Tensor.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "core/npu_event.h"
#include "distributed/hccl_backend.h"

namespace torch_npu_sim {

struct P2POp {
  hccl_sim::Xfer xfer;
  NpuEvent ready;  // recorded on the caller's stream: the tensor is ready to read/write (empty: it was idle)
  std::shared_ptr<WorkState> state;
  at::Tensor keep_alive;
};

class P2PEngine {
 public:
  explicit P2PEngine(std::shared_ptr<CommShared> comm);
  ~P2PEngine();
  void post(std::unique_ptr<P2POp> op);

 private:
  void loop();
  // Fails every op of `active` with `error` (a DistBackendError of `msg` when null) and breaks the communicator.
  void fail_all(std::deque<std::unique_ptr<P2POp>>& active, const std::string& msg, std::exception_ptr error = nullptr);

  std::shared_ptr<CommShared> comm_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<P2POp>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace torch_npu_sim
