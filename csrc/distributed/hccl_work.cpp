// HcclWork (see hccl_work.h): stream-ordered wait by default, host-blocking wait on request
// (TORCH_HCCL_BLOCKING_WAIT=1) and for host-completed operations; errors come back as DistBackendError.
#include "distributed/hccl_work.h"

#include <c10/util/Exception.h>

#include <cstdio>

#include "core/npu_error.h"
#include "core/npu_stream.h"

namespace torch_npu_sim {

void WorkState::finish(std::exception_ptr e) {
  {
    std::lock_guard<std::mutex> lk(mu);
    if (done) return;  // the first outcome stands (a late success must not clear a timeout's error)
    error = std::move(e);
    done = true;
  }
  cv.notify_all();
}

bool WorkState::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lk(mu);
  if (timeout.count() <= 0) {
    cv.wait(lk, [this] { return done; });
    return true;
  }
  return cv.wait_for(lk, timeout, [this] { return done; });
}

std::exception_ptr make_dist_error(const std::string& msg, HcclResult result) {
  try {
    if (result == HCCL_E_REMOTE) C10_THROW_ERROR(DistNetworkError, msg);
    C10_THROW_ERROR(DistBackendError, msg);
  } catch (...) {
    return std::current_exception();
  }
}

CompletionThread::CompletionThread() : thread_([this] { loop(); }) {}

CompletionThread::~CompletionThread() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();  // tasks never own the CompletionThread, so this never runs on its own thread
}

void CompletionThread::post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void CompletionThread::loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      task();
    } catch (const std::exception& e) {  // a user callback of the future threw: the future keeps it
      std::fprintf(stderr, "[hccl] a future callback raised: %s\n", e.what());
    }
  }
}

HcclWork::HcclWork(int rank, c10d::OpType op, c10::Device device, std::shared_ptr<WorkState> state,
                   NpuEvent done_event, std::vector<at::Tensor> outputs, bool stream_ordered,
                   bool blocking_wait, std::chrono::milliseconds timeout,
                   c10::intrusive_ptr<c10::ivalue::Future> future)
    : c10d::Work(rank, op),
      device_(device),
      state_(std::move(state)),
      done_event_(std::move(done_event)),
      outputs_(std::move(outputs)),
      stream_ordered_(stream_ordered),
      blocking_wait_(blocking_wait),
      timeout_(timeout),
      future_(std::move(future)) {}

bool HcclWork::isCompleted() {
  std::lock_guard<std::mutex> lk(state_->mu);
  return state_->done;
}

int HcclWork::sourceRank() const {
  std::lock_guard<std::mutex> lk(state_->mu);
  return state_->source;
}

bool HcclWork::isSuccess() const {
  std::lock_guard<std::mutex> lk(state_->mu);
  return state_->done && !state_->error;
}

std::exception_ptr HcclWork::exception() const {
  std::lock_guard<std::mutex> lk(state_->mu);
  return state_->error;
}

void HcclWork::host_wait(std::chrono::milliseconds timeout) {
  // The communicating side has its own deadline; this bound only guards against a lost completion.
  const auto limit = timeout.count() > 0 ? timeout : timeout_ + std::chrono::seconds(5);
  if (!state_->wait_for(limit)) {
    C10_THROW_ERROR(DistBackendError, "hccl: Work::wait timed out after " + std::to_string(limit.count()) +
                                          " ms (" + c10d::opTypeToString(retrieveOpType()) + ")");
  }
  std::exception_ptr e = exception();
  if (e) std::rethrow_exception(e);
}

void HcclWork::synchronize() { wait(kNoTimeout); }

bool HcclWork::wait(std::chrono::milliseconds timeout) {
  if (!stream_ordered_ || blocking_wait_) {
    host_wait(timeout);
    // What the communication side enqueued after the operation (copies back) is done too.
    if (done_event_) NPU_CHECK(npu_sim::event_synchronize(done_event_.get()));
    return true;
  }
  if (std::exception_ptr e = exception()) std::rethrow_exception(e);
  // Order the caller's stream after the collective; the host goes on.
  NPU_CHECK(npu_sim::stream_wait_event(current_native_stream(device_.index()), done_event_.get()));
  return true;
}

HcclCoalescedWork::HcclCoalescedWork(int rank, std::vector<c10::intrusive_ptr<c10d::Work>> works)
    : c10d::Work(rank, c10d::OpType::COALESCED), works_(std::move(works)) {}

bool HcclCoalescedWork::isCompleted() {
  for (auto& w : works_) if (!w->isCompleted()) return false;
  return true;
}

bool HcclCoalescedWork::isSuccess() const {
  for (auto& w : works_) if (!w->isSuccess()) return false;
  return true;
}

std::exception_ptr HcclCoalescedWork::exception() const {
  for (auto& w : works_) if (auto e = w->exception()) return e;
  return nullptr;
}

bool HcclCoalescedWork::wait(std::chrono::milliseconds timeout) {
  for (auto& w : works_) w->wait(timeout);
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> HcclCoalescedWork::getFuture() {
  std::vector<at::Tensor> all;
  for (auto& w : works_) for (auto& t : w->result()) all.push_back(t);
  auto f = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
  f->markCompleted(c10::IValue(all));
  if (!works_.empty()) return works_.back()->getFuture();
  return f;
}

}  // namespace torch_npu_sim
