// HcclBackend set-up and the machinery shared by every operation: the communicator from a root info
// passed through the c10d Store (as torch_npu does), the communication streams, launch() (stream
// ordering, the C API calls, copies back, completion, future), error handling and the p2p path.
#include "distributed/hccl_backend.h"

#include <ATen/ATen.h>
#include <c10/core/StreamGuard.h>
#include <c10/util/Exception.h>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include "aten/npu_tensor.h"
#include "core/npu_error.h"
#include "core/npu_stream.h"

namespace torch_npu_sim {

namespace {

// An HCCL_* integer (the TORCH_HCCL_* spelling when the first is unset), `fallback` when neither is set.
int env_choice(const char* name, const char* alias, int fallback, int lo, int hi) {
  const char* used = name;
  const char* v = std::getenv(name);
  if (!v || !*v) v = std::getenv(used = alias);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < lo || x > hi) {
    C10_THROW_ERROR(DistBackendError, std::string("hccl: cannot create the communicator: ") + used + "='" + v +
                                          "': expected an integer in [" + std::to_string(lo) + ", " +
                                          std::to_string(hi) + "]");
  }
  return static_cast<int>(x);
}

// Throws the typed error of a C API call that failed on this thread.
void check_hccl(HcclResult r, const char* what) {
  if (r == HCCL_SUCCESS) return;
  const std::string msg = std::string("hccl: ") + what + ": " + HcclGetLastErrorMessage() + " (" +
                          HcclGetErrorString(r) + ")";
  std::rethrow_exception(make_dist_error(msg, r));
}

}  // namespace

PgOptions PgOptions::from_env() {
  PgOptions o;
  o.blocking_wait = env_choice("HCCL_BLOCKING_WAIT", "TORCH_HCCL_BLOCKING_WAIT", 0, 0, 1) == 1;
  o.async_error_handling = env_choice("HCCL_ASYNC_ERROR_HANDLING", "TORCH_HCCL_ASYNC_ERROR_HANDLING", kTearDown,
                                      kNoHandling, kSkipCleanUp);
  if (o.blocking_wait) o.async_error_handling = kNoHandling;  // as NCCL: blocking wait reports errors to wait()
  // Validated only: the desync check it asks for is always on (every frame carries op, dtype, numel,
  // sequence number, reduce op and root).
  (void)env_choice("HCCL_DESYNC_DEBUG", "TORCH_HCCL_DESYNC_DEBUG", 0, 0, 1);
  return o;
}

CommShared::~CommShared() {
  if (comm != nullptr) (void)HcclCommDestroy(comm);  // every task that used it has run
}

std::exception_ptr CommShared::failure() {
  HcclResult r = HCCL_SUCCESS;
  if (HcclGetCommAsyncError(comm, &r) != HCCL_SUCCESS || r == HCCL_SUCCESS) return nullptr;
  const std::string msg = HcclGetCommAsyncErrorString(comm);
  const int mode = closing.load() ? kNoHandling : opts.async_error_handling;
  if (mode == kAbortComm || mode == kTearDown) (void)HcclCommAbort(comm);  // pending operations end now
  if (mode == kTearDown || mode == kSkipCleanUp) {
    std::fprintf(stderr, "[hccl] rank %d: %s\n[hccl] HCCL_ASYNC_ERROR_HANDLING=%d: tearing down the process "
                 "(set it to 0 or 2 to handle the error in the program instead)\n", rank, msg.c_str(), mode);
    std::fflush(stderr);
    _exit(1);
  }
  return make_dist_error(msg, r);
}

HcclBackend::HcclBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                         std::chrono::milliseconds timeout, int device_index)
    : c10d::Backend(rank, size), comm_(std::make_shared<CommShared>()), device_index_(device_index), timeout_(timeout) {
  comm_->opts = PgOptions::from_env();
  comm_->rank = rank;
  // As torch_npu: rank 0 makes the root info and shares it through the store; every rank then joins.
  HcclRootInfo info;
  const std::string key = "hccl/root_info";
  if (rank == 0) {
    check_hccl(HcclGetRootInfo(&info), "cannot create the communicator");
    store->set(key, std::vector<uint8_t>(info.internal, info.internal + sizeof(info.internal)));
  } else {
    const std::vector<uint8_t> v = store->get(key);  // waits up to the store's timeout
    TORCH_CHECK(v.size() == sizeof(info.internal), "hccl: the root info in the store has ", v.size(),
                " bytes, expected ", sizeof(info.internal));
    std::copy(v.begin(), v.end(), info.internal);
  }
  HcclCommConfig config;
  HcclCommConfigInit(&config);
  config.npuSimDevice = device_index;
  config.npuSimOpTimeoutMs = static_cast<uint32_t>(std::max<int64_t>(1, timeout.count()));
  comm_timeout_ = std::chrono::milliseconds(config.npuSimOpTimeoutMs);
  check_hccl(HcclCommInitRootInfoConfig(size, &info, rank, &config, &comm_->comm), "cannot create the communicator");
  completions_ = std::make_shared<CompletionThread>();
}

HcclBackend::~HcclBackend() { shutdown_impl(); }

std::string HcclBackend::transport_name() const {
  const char* name = "";
  (void)HcclGetTransportName(comm_->comm, &name);
  return name;
}

// Waits on the streams outside streams_mu_ (it guards the maps only; a future callback on the completion
// thread may start a collective and need it while this waits).
void HcclBackend::shutdown_impl() {
  if (shut_down_) return;
  shut_down_ = true;
  std::vector<npu_sim::Stream> comm_streams, p2p_streams;
  {
    std::lock_guard<std::mutex> lk(streams_mu_);
    for (const auto& [dev, s] : comm_streams_) comm_streams.push_back(native_stream(s));
    for (const auto& [key, s] : p2p_lanes_) p2p_streams.push_back(s.get());
    for (const auto& [dev, s] : p2p_streams_) p2p_streams.push_back(native_stream(s));
  }
  // Pending collectives finish (or time out) before the communicator goes away. Their errors stay on the
  // device (sticky) for its user; nothing is consumed here.
  for (npu_sim::Stream s : comm_streams) npu_sim::stream_synchronize(s);
  // Send/recvs still pending fail now (the abort reaches the library's p2p engine), which lets the lanes
  // go on; the handle itself is destroyed with the last task that holds CommShared.
  comm_->closing.store(true);
  (void)HcclCommAbort(comm_->comm);
  for (npu_sim::Stream s : p2p_streams) npu_sim::stream_synchronize(s);
  completions_.reset();  // completes the futures still queued, then joins (host functions hold no more)
  std::lock_guard<std::mutex> lk(streams_mu_);
  p2p_lanes_.clear();
}

void HcclBackend::shutdown() { shutdown_impl(); }

void HcclBackend::abort() {
  // Before shutdown_impl waits for the streams: pending operations end now instead of at their timeout.
  comm_->closing.store(true);
  (void)HcclCommAbort(comm_->comm);
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
  TORCH_CHECK(!shut_down_, "hccl: ", op, ": the process group has been shut down");
  HcclResult r = HCCL_SUCCESS;
  if (HcclGetCommAsyncError(comm_->comm, &r) == HCCL_SUCCESS && r != HCCL_SUCCESS) {
    C10_THROW_ERROR(DistBackendError, std::string("hccl: ") + op +
                                          ": the communicator is unusable after an earlier failure: " +
                                          HcclGetCommAsyncErrorString(comm_->comm));
  }
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

npu_sim::Stream HcclBackend::p2p_lane(c10::DeviceIndex device, bool is_send, int peer) {
  std::lock_guard<std::mutex> lk(streams_mu_);
  auto& lane = p2p_lanes_[std::make_tuple(device, is_send, peer)];
  if (!lane) {
    npu_sim::Stream s = nullptr;
    NPU_CHECK(npu_sim::stream_create(device, &s));
    lane.reset(s);
  }
  return lane.get();
}

void HcclBackend::set_timeout(std::chrono::milliseconds timeout) {
  if (timeout.count() < 0) timeout = timeout_;  // c10d's "unset"
  timeout = std::max(timeout, std::chrono::milliseconds(1));
  if (timeout == comm_timeout_) return;
  check_hccl(HcclCommSetOpTimeout(comm_->comm, static_cast<uint32_t>(timeout.count())), "set the timeout");
  comm_timeout_ = timeout;
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

at::Tensor HcclBackend::flat_for(Launch& l, const std::vector<at::Tensor>& ts, bool is_output) {
  const at::Tensor& first = ts.front();
  const std::size_t bytes = first.nbytes();
  bool adjacent = true;
  for (std::size_t i = 0; i < ts.size() && adjacent; ++i) {
    adjacent = ts[i].is_contiguous() && ts[i].nbytes() == bytes &&
               static_cast<const char*>(ts[i].const_data_ptr()) == static_cast<const char*>(first.const_data_ptr()) + bytes * i;
  }
  at::Tensor flat;
  if (adjacent) {  // e.g. the chunks of one tensor: no staging
    flat = at::from_blob(const_cast<void*>(first.const_data_ptr()), {static_cast<int64_t>(first.numel() * ts.size())},
                         first.options());
    for (const auto& t : ts) l.keep_alive.push_back(t);
  } else {
    flat = at::empty({static_cast<int64_t>(first.numel() * ts.size())}, first.options());
    for (std::size_t i = 0; i < ts.size(); ++i) {
      at::Tensor slot = flat.narrow(0, static_cast<int64_t>(first.numel() * i), first.numel()).view(ts[i].sizes());
      if (is_output) l.copy_back.emplace_back(ts[i], slot);
      else slot.copy_(ts[i]);  // on the caller's stream, before the ordering event
    }
  }
  l.keep_alive.push_back(flat);
  return flat;
}

c10::intrusive_ptr<c10d::Work> HcclBackend::launch(Launch l, const std::vector<Call>& calls) {
  check_usable(l.name);
  c10::Device device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device_index_));
  if (!l.keep_alive.empty()) device = l.keep_alive.front().device();
  for (const auto& t : l.keep_alive) {
    TORCH_CHECK(t.device() == device, "hccl: ", l.name, ": all tensors must be on the same device (", device,
                "), got one on ", t.device());
  }
  const c10::Stream comm = comm_stream(device.index());
  npu_sim::Stream cs = native_stream(comm);
  // Order after the caller's stream; an idle stream has nothing to order after (skipping the event saves
  // a marker on its worker and a hand-off between the two workers per collective).
  npu_sim::Stream caller = current_native_stream(device.index());
  if (npu_sim::stream_query(caller) != npu_sim::Status::kSuccess) {
    const NpuEvent ready = NpuEvent::recorded_on(caller);
    NPU_CHECK(npu_sim::stream_wait_event(cs, ready.get()));
  }
  set_timeout(l.timeout);
  for (const Call& call : calls) check_hccl(call(cs), l.name);
  if (!l.copy_back.empty()) {
    c10::StreamGuard guard(comm);
    for (auto& [dst, tmp] : l.copy_back) dst.copy_(tmp);
    // The temps were allocated on the caller's stream: hold them until the copies on this stream have
    // read them, or the caching allocator could hand their blocks out again too early.
    NPU_CHECK(npu_sim::launch_host_func(cs, [hold = std::move(l.copy_back)] {}));
  }
  // DDP's reducer and comm hooks need a Tensor-list value; unlike NCCL's, the future completes when the
  // collective has ended, with its error if it failed (a failed all_reduce must not look like a success).
  auto state = std::make_shared<WorkState>();
  auto future = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                         std::vector<c10::Device>{device});
  // The buffers stay alive until the stream has passed the operation: the completion task holds them.
  complete_after(cs, comm, state, future, l.outputs, nullptr, std::move(l.keep_alive));
  NpuEvent done = NpuEvent::recorded_on(cs);
  std::chrono::milliseconds timeout = l.timeout.count() >= 0 ? l.timeout : timeout_;
  return track(c10::make_intrusive<HcclWork>(getRank(), l.op, device, state, std::move(done), l.outputs,
                                             !l.host_blocking, comm_->opts.blocking_wait, timeout, future));
}

void HcclBackend::complete_after(npu_sim::Stream stream, const c10::Stream& cstream, std::shared_ptr<WorkState> state,
                                 c10::intrusive_ptr<c10::ivalue::Future> future, std::vector<at::Tensor> outputs,
                                 std::shared_ptr<uint32_t> source, std::vector<at::Tensor> keep_alive) {
  NPU_CHECK(npu_sim::launch_host_func(stream, [comm = comm_, completions = completions_, cstream,
                                               state = std::move(state), future = std::move(future),
                                               outputs = std::move(outputs), source = std::move(source),
                                               keep = std::move(keep_alive)]() {
    // The operation has ended (the library's task ran before this one on the stream): a failure shows
    // as the communicator's async error, which HCCL_ASYNC_ERROR_HANDLING acts on here, as torch_npu's
    // watchdog does.
    std::exception_ptr error = comm->failure();
    if (source && !error) {
      std::lock_guard<std::mutex> lk(state->mu);
      state->source = static_cast<int>(*source);
    }
    state->finish(error);
    completions->post([cstream, error, future, outputs] {
      if (error) return future->setError(error);
      c10::StreamGuard guard(cstream);  // consumers of the value are ordered after this stream
      future->markCompleted(c10::IValue(outputs));
    });
  }));
}

c10::intrusive_ptr<c10d::Work> HcclBackend::p2p(at::Tensor& t, int peer, bool is_send, c10d::OpType op) {
  const char* name = is_send ? "send" : "recv";
  check_usable(name);
  const c10::Device device = device_for(t, name);
  TORCH_CHECK(peer == -1 || (peer >= 0 && peer < getSize() && peer != getRank()), "hccl: ", name,
              ": invalid peer rank ", peer, " (group size ", getSize(), ", this rank ", getRank(), ")");
  at::Tensor buf = t.is_contiguous() ? t : (is_send ? t.contiguous() : at::empty_like(t, at::MemoryFormat::Contiguous));
  // A lane per direction and peer carries the operation, ordered after the caller's stream: a receive
  // posted after a send to the same peer does not wait for that send in stream order (both progress at
  // once in the library's p2p engine). The device's p2p stream then copies a non-contiguous receive
  // back and completes the Work; wait() orders the caller's stream after it, as NCCL's does. A receive
  // from any source keeps a host-blocking wait: c10d reads its source rank right after wait().
  npu_sim::Stream lane = p2p_lane(device.index(), is_send, peer);
  npu_sim::Stream caller = current_native_stream(device.index());
  if (npu_sim::stream_query(caller) != npu_sim::Status::kSuccess) {
    const NpuEvent ready = NpuEvent::recorded_on(caller);
    NPU_CHECK(npu_sim::stream_wait_event(lane, ready.get()));
  }
  set_timeout(c10d::kUnsetTimeout);
  const HcclDataType dt = hccl_dtype(t.scalar_type(), name);
  auto source = std::make_shared<uint32_t>(0);
  HcclResult r;
  if (is_send) r = HcclSend(buf.data_ptr(), buf.numel(), dt, peer, comm_->comm, lane);
  else if (peer >= 0) r = HcclRecv(buf.data_ptr(), buf.numel(), dt, peer, comm_->comm, lane);
  else r = HcclRecvAny(buf.data_ptr(), buf.numel(), dt, source.get(), comm_->comm, lane);
  check_hccl(r, name);
  NPU_CHECK(npu_sim::launch_host_func(lane, [hold = buf] {}));
  const c10::Stream ps = p2p_stream(device.index());
  npu_sim::Stream pns = native_stream(ps);
  {
    const NpuEvent ended = NpuEvent::recorded_on(lane);
    NPU_CHECK(npu_sim::stream_wait_event(pns, ended.get()));
  }
  if (!is_send && !t.is_contiguous()) {
    c10::StreamGuard guard(ps);
    t.copy_(buf);
    NPU_CHECK(npu_sim::launch_host_func(pns, [hold = buf] {}));  // as in launch(): buf outlives the copy
  }
  auto state = std::make_shared<WorkState>();
  auto future = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
  complete_after(pns, ps, state, future, {t}, peer < 0 ? source : nullptr);
  auto work = c10::make_intrusive<HcclWork>(getRank(), op, device, state, NpuEvent::recorded_on(pns), std::vector<at::Tensor>{t},
                                            /*stream_ordered=*/op != c10d::OpType::RECVANYSOURCE,
                                            comm_->opts.blocking_wait, timeout_, future);
  return track(work);
}

c10::intrusive_ptr<c10d::Work> HcclBackend::send(std::vector<at::Tensor>& tensors, int dst, int tag) {
  TORCH_CHECK(tensors.size() == 1, "hccl: send: expected exactly one tensor, got ", tensors.size());
  return p2p(tensors[0], dst, true, c10d::OpType::SEND);
}

c10::intrusive_ptr<c10d::Work> HcclBackend::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
  TORCH_CHECK(tensors.size() == 1, "hccl: recv: expected exactly one tensor, got ", tensors.size());
  return p2p(tensors[0], src, false, c10d::OpType::RECV);
}

c10::intrusive_ptr<c10d::Work> HcclBackend::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  TORCH_CHECK(tensors.size() == 1, "hccl: recvAnysource: expected exactly one tensor, got ", tensors.size());
  return p2p(tensors[0], -1, false, c10d::OpType::RECVANYSOURCE);
}

c10::intrusive_ptr<c10d::Work> HcclBackend::barrier(const c10d::BarrierOptions& opts) {
  Launch l{c10d::OpType::BARRIER, "barrier", {}, {}, {}, true};
  l.timeout = opts.timeout;
  HcclComm comm = comm_->comm;
  return launch(std::move(l), [comm](aclrtStream cs) { return HcclBarrier(comm, cs); });
}

}  // namespace torch_npu_sim
