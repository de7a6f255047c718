// P2PEngine (see p2p_engine.h). Ops start in posting order once their ready event has completed; the
// transport serves ops to the same peer and direction in order, as c10d's send/recv matching expects.
#include "distributed/p2p_engine.h"

namespace torch_npu_sim {

P2PEngine::P2PEngine(std::shared_ptr<CommShared> comm) : comm_(std::move(comm)) {
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

void P2PEngine::post(std::unique_ptr<P2POp> op) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(std::move(op));
  }
  cv_.notify_all();
}

void P2PEngine::fail_all(std::deque<std::unique_ptr<P2POp>>& active, const std::string& msg, std::exception_ptr error) {
  comm_->set_broken(msg);
  if (!error) error = make_dist_error(msg);
  for (auto& op : active) {
    op->state->finish(error);
  }
  active.clear();
}

void P2PEngine::loop() {
  std::deque<std::unique_ptr<P2POp>> active;
  auto last_progress = std::chrono::steady_clock::now();
  int idle = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      if (active.empty()) cv_.wait(lk, [this] { return stop_ || !queue_.empty(); });
      if (stop_) {
        lk.unlock();
        fail_all(active, "hccl: the process group was shut down with p2p operations pending");
        std::lock_guard<std::mutex> lk2(mu_);
        fail_all(queue_, "hccl: the process group was shut down with p2p operations pending");
        return;
      }
      while (!queue_.empty()) {
        active.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    const std::string broken = comm_->broken_reason();
    if (!broken.empty()) {
      fail_all(active, "hccl: communicator unusable after an earlier failure: " + broken);
      continue;
    }
    std::vector<hccl_sim::Xfer*> xs;
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
      fail_all(active, "hccl: p2p operation on rank " + std::to_string(comm_->rank) +
                           " not started: the device failed before its buffer was ready: " + device_error);
      continue;
    }
    const uint32_t token = comm_->p2p->wait_token();
    bool moved = false;
    try {
      moved = !xs.empty() && comm_->p2p->progress(xs);
      if (!moved && ++idle > 2000) {
        comm_->p2p->check_peers();
        if (std::chrono::steady_clock::now() - last_progress > comm_->timeout) {
          throw hccl_sim::CommError("hccl: p2p operation timed out on rank " + std::to_string(comm_->rank) +
                                    " (peer dead, hung or never posted the matching send/recv)",
                                    hccl_sim::CommErrorKind::kTimeout);
        }
      }
    } catch (const hccl_sim::CommError& e) {
      const std::string msg = std::string("hccl: p2p on rank ") + std::to_string(comm_->rank) + " failed (" +
                              hccl_sim::comm_error_kind_name(e.kind) + "): " + e.what();
      fail_all(active, msg, comm_->fail(msg, e.kind));
      continue;
    } catch (const std::exception& e) {
      fail_all(active, e.what(), comm_->fail(e.what(), hccl_sim::CommErrorKind::kOther));
      continue;
    }
    if (moved || xs.empty()) {
      idle = 0;
      last_progress = std::chrono::steady_clock::now();
    }
    for (auto it = active.begin(); it != active.end();) {
      if ((*it)->xfer.finished) {
        {
          std::lock_guard<std::mutex> lk((*it)->state->mu);
          (*it)->state->source = (*it)->xfer.source;
        }
        (*it)->state->finish(nullptr);
        it = active.erase(it);
      } else {
        ++it;
      }
    }
    if (xs.empty()) std::this_thread::sleep_for(std::chrono::microseconds(50));  // waiting for ready events
    else if (!moved && idle > 2000) comm_->p2p->idle_wait(token, xs, std::chrono::microseconds(200));
  }
}

}  // namespace torch_npu_sim
