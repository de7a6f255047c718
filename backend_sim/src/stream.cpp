// Streams: in-order op queues each run by its own lazily started worker thread, the stream registry
// (handle validation), the wait trail, recording failed ops (device.cpp keeps them) and the stream_* entry
// points.
#include <algorithm>
#include <shared_mutex>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "internal.h"

namespace npu_sim {
namespace detail {
namespace {

// The registry owns one shared_ptr per live stream; `mu` (shared for lookups, exclusive for
// create/destroy) protects the map only, never a stream's own state. Held only to look up, copy
// shared_ptrs, insert or erase: no other lock is taken and nothing waits under it (stream_destroy drains
// the worker after releasing it).
struct StreamRegistry {
  std::shared_mutex mu;
  std::unordered_map<const StreamImpl*, std::shared_ptr<StreamImpl>> streams;
};
StreamRegistry& registry() {
  static StreamRegistry* r = new StreamRegistry();  // never destroyed: workers may outlive statics
  return *r;
}

thread_local const StreamImpl* t_worker_of = nullptr;

// Bumped (after the registry erase) by every stream_destroy: a per-thread resolve cache entry taken at an
// older epoch is looked up again, so a destroyed handle is never resolved from the cache.
std::atomic<std::uint64_t> g_destroy_epoch{0};

// The launch path's resolve cache (see resolve_stream_cached). Owned by its thread; its shared_ptr keeps
// the cached stream alive, so the handle cannot be reused by a new stream while it is cached.
struct ResolveCache {
  Stream handle = nullptr;
  std::uint64_t epoch = 0;
  std::shared_ptr<StreamImpl> impl;
};
thread_local ResolveCache t_resolve_cache;

// Entries a stream keeps for reuse; more are freed once finished (a burst of queued launches should not
// pin memory).
constexpr std::uint64_t kKeptOps = 64;

// An entry for an op about to be queued: the oldest one if the worker has finished it (seq < completed_seq:
// it has moved past it), else a new one. The list first grows to kKeptOps entries, so completed_seq (a
// line the worker writes per op) is read about once per kKeptOps launches. Caller holds s.mu.
StreamOp* take_entry(StreamImpl& s) {
  if (s.tail->seq - s.front->seq < kKeptOps) return new StreamOp();
  if (s.front->seq >= s.known_done) s.known_done = s.completed_seq.load(std::memory_order_acquire);
  while (s.front->seq + kKeptOps < s.known_done) {
    StreamOp* old = s.front;
    s.front = old->next.load(std::memory_order_relaxed);
    delete old;
  }
  if (s.front->seq >= s.known_done) return new StreamOp();
  StreamOp* op = s.front;
  s.front = op->next.load(std::memory_order_relaxed);  // not null: the worker's last op (seq == done) follows
  op->next.store(nullptr, std::memory_order_relaxed);
  return op;
}

// Links a filled entry after the tail and publishes it to the worker. Caller holds s.mu.
std::uint64_t push_entry(StreamImpl& s, StreamOp* op) {
  const std::uint64_t q = ++s.enqueued_seq;
  op->seq = q;
  s.tail->next.store(op, std::memory_order_release);
  s.tail = op;
  return q;
}

// The op after `cur` once one is queued: polls for NPU_SIM_STREAM_SPIN_US (spin_until), then sleeps on
// work_cv. Null when the stream is stopping and nothing is left.
StreamOp* wait_for_work(StreamImpl* s, const StreamOp* cur) {
  StreamOp* next = nullptr;
  if (spin_until([&] { return (next = cur->next.load(std::memory_order_acquire)) != nullptr; },
                 config().stream_spin_us)) {
    return next;
  }
  std::unique_lock<std::mutex> lk(s->mu);
  for (;;) {  // producers link under mu, so a check under mu cannot miss a wake-up
    if (StreamOp* op = cur->next.load(std::memory_order_acquire)) return op;
    if (s->stop) return nullptr;
    s->worker_sleeping = true;
    s->work_cv.wait(lk);
    s->worker_sleeping = false;
  }
}

std::int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Runs one queued op on s's worker; "" or the error message to record with *status. A kernel launch is
// recorded (append_launch_record, failed or not) when recording is on as it starts.
std::string run_op(const StreamImpl& s, const StreamOp& op, Status* status) {
  *status = Status::kKernelError;
  if (op.kernel_name == nullptr) {
    if (op.copy_name == nullptr || !recording_on()) return op.fn();
    // A copy is recorded as a launch of one block that moved its bytes (no FLOPs).
    LaunchAccumulators acc;
    acc.gm_read.store(op.copy_read, std::memory_order_relaxed);
    acc.gm_write.store(op.copy_write, std::memory_order_relaxed);
    const std::int64_t start = wall_ns();
    std::string err = op.fn();
    append_launch_record(op.copy_name, s.device, const_cast<StreamImpl*>(&s), s.id, op.seq, 1, acc, !err.empty(),
                         start, wall_ns(), op.tag);
    return err;
  }
  std::string what;
  bool ok;
  kernel_began(s.device);
  struct Ended {
    int device;
    ~Ended() { kernel_ended(device); }
  } ended{s.device};
  if (recording_on()) {
    LaunchAccumulators acc;
    const std::int64_t start = wall_ns();
    ok = run_blocks(op.block_dim, op.body, &what, status, &acc);
    append_launch_record(op.kernel_name, s.device, const_cast<StreamImpl*>(&s), s.id, op.seq, op.block_dim, acc,
                         !ok, start, wall_ns(), op.tag);
  } else {
    ok = run_blocks(op.block_dim, op.body, &what, status);
  }
  if (ok) return std::string();
  counters().kernels_failed.fetch_add(1, std::memory_order_relaxed);
  return std::string("kernel '") + op.kernel_name + "' failed: " + what;
}

// `cur`: the last finished entry (the list's stub when the worker starts), owned by this thread.
void worker_loop(StreamImpl* s, StreamOp* cur) {
  t_worker_of = s;
  for (;;) {
    StreamOp* op = cur->next.load(std::memory_order_acquire);
    if (op == nullptr && (op = wait_for_work(s, cur)) == nullptr) return;
    std::string err;
    Status status = Status::kKernelError;
    try {
      err = run_op(*s, *op, &status);
    } catch (const AsyncError& e) {  // a host function's own status and message (launch_host_func)
      status = async_status(e.status);
      err = e.what();
      if (err.empty()) err = "stream op failed: " + std::string(status_name(status));
    } catch (const std::exception& e) {
      status = Status::kKernelError;
      err = std::string("stream op failed: ") + e.what();
    } catch (...) {
      status = Status::kKernelError;
      err = "stream op failed: unknown exception";
    }
    // release captured resources before the op counts as complete
    op->body.reset();
    op->fn = nullptr;
    // Before completed_seq: whoever sees this op complete sees its error (no stream lock held here).
    if (!err.empty()) record_async_error(*s, op->seq, status, std::move(err));
    cur = op;
    // seq_cst pairs with wait_done's store of wake_at: either the waiter sees this seq or this sees its
    // target. Only a reached target wakes anyone (a host synchronize waiting for the 200th queued
    // collective is not woken by each of the 199 before it).
    s->completed_seq.store(op->seq, std::memory_order_seq_cst);
    if (s->wake_at.load(std::memory_order_seq_cst) <= op->seq) {
      {  // under mu a waiter is either before its check or asleep; woken ones still short re-register
        std::lock_guard<std::mutex> lk(s->mu);
        s->wake_at.store(UINT64_MAX, std::memory_order_relaxed);
      }
      s->done_cv.notify_all();
    }
  }
}

}  // namespace

std::shared_ptr<StreamImpl> create_stream_impl(int device, bool is_default) {
  static std::atomic<std::uint64_t> next_id{0};
  auto s = std::make_shared<StreamImpl>();
  s->device = device;
  s->is_default = is_default;
  s->id = next_id.fetch_add(1, std::memory_order_relaxed) + 1;
  StreamRegistry& r = registry();
  std::unique_lock<std::shared_mutex> lk(r.mu);
  r.streams.emplace(s.get(), s);
  return s;
}

std::shared_ptr<StreamImpl> resolve_stream(const char* fn, Stream s, Status* status) {
  *status = Status::kSuccess;
  if (s == nullptr) {
    const int dev = current_device();
    *status = check_device(fn, dev);
    if (*status != Status::kSuccess) return nullptr;
    return default_stream(dev);
  }
  StreamRegistry& r = registry();
  {
    std::shared_lock<std::shared_mutex> lk(r.mu);
    auto it = r.streams.find(s);
    if (it != r.streams.end()) return it->second;
  }
  *status = fail(Status::kInvalidHandle, "%s: stream %p is not a live stream (destroyed or never created)", fn,
                 static_cast<void*>(s));
  return nullptr;
}

StreamImpl* resolve_stream_cached(const char* fn, Stream s, Status* status) {
  ResolveCache& c = t_resolve_cache;
  const std::uint64_t epoch = g_destroy_epoch.load(std::memory_order_acquire);
  if (s != nullptr && c.handle == s && c.epoch == epoch && c.impl) {
    *status = Status::kSuccess;
    return c.impl.get();
  }
  std::shared_ptr<StreamImpl> impl = resolve_stream(fn, s, status);
  if (!impl) return nullptr;
  c.handle = s;  // a null handle (current device's default stream) is never a hit: the device may change
  c.epoch = epoch;
  c.impl = std::move(impl);
  return c.impl.get();
}

bool on_worker_of(const StreamImpl& s) { return t_worker_of == &s; }

void wait_done(StreamImpl& s, std::unique_lock<std::mutex>& lk, std::uint64_t target) {
  for (;;) {
    if (target < s.wake_at.load(std::memory_order_relaxed)) s.wake_at.store(target, std::memory_order_seq_cst);
    if (s.completed_seq.load(std::memory_order_seq_cst) >= target) return;
    s.done_cv.wait(lk);
  }
}

namespace {
// Refuses a destroyed stream and starts the worker on first use. Caller holds s.mu.
Status start_worker_locked(const char* fn, StreamImpl& s) {
  NPU_SIM_CHECK(!s.destroyed, Status::kInvalidHandle, "%s: stream %p is being destroyed", fn,
                static_cast<void*>(&s));
  if (!s.worker.joinable()) {
    try {
      s.worker = std::thread(worker_loop, &s, s.front);
    } catch (const std::system_error& e) {
      return fail(Status::kInternal, "%s: cannot start the stream worker thread: %s", fn, e.what());
    }
  }
  return Status::kSuccess;
}

// Updates s.trail (caller holds s.mu) for op `q` in `role`.
void note_role(StreamImpl& s, std::uint64_t q, const OpRole& role) {
  WaitTrail& t = s.trail;
  if (role.kind == OpRole::kWork) {  // every launch: no weak_ptr traffic unless there were waits
    if (t.waits) t = WaitTrail{};
    t.work_seq = q;
  } else if (role.kind == OpRole::kWait && !t.mixed) {
    // The same stream again (weak_ptrs compare by owner: no address reuse while we hold one), or the first
    // wait, or the previous target is gone (it ran everything, so its waits are satisfied): still one.
    std::shared_ptr<StreamImpl> prev = t.waits ? t.waits_on.lock() : nullptr;
    if (prev.get() == role.waits_for && prev != nullptr) {
      t.max_waited_seq = std::max(t.max_waited_seq, role.waited_seq);
    } else if (prev == nullptr) {
      t.waits = true;
      t.waits_on = role.waits_for->weak_from_this();
      t.max_waited_seq = role.waited_seq;
    } else {
      t.mixed = true;
    }
  }
}

// The common half of enqueue and enqueue_kernel: under s.mu, refuses a destroyed stream, starts the worker,
// lets `fill` set up a (recycled) entry and links it, keeps the wait trail; wakes the worker if it sleeps.
template <typename Fill>
Status push_op(const char* fn, StreamImpl& s, const Fill& fill, std::uint64_t* seq, const OpRole& role = {},
               WaitTrail* trail = nullptr) {
  NPU_SIM_CHECK_NOT_FORKED(fn);
  bool wake = false;
  {
    std::lock_guard<std::mutex> lk(s.mu);
    NPU_SIM_RETURN_IF_ERROR(start_worker_locked(fn, s));
    StreamOp* entry = take_entry(s);
    fill(*entry);
    const std::uint64_t q = push_entry(s, entry);
    note_role(s, q, role);
    if (seq != nullptr) *seq = q;
    if (trail != nullptr) *trail = s.trail;
    wake = s.worker_sleeping;
  }
  if (wake) s.work_cv.notify_one();
  return Status::kSuccess;
}
}  // namespace

Status enqueue(const char* fn, StreamImpl& s, OpFn op, std::uint64_t* seq, OpRole role, WaitTrail* trail) {
  return push_op(fn, s, [&](StreamOp& e) {
    e.kernel_name = nullptr;  // a host op (the entry may have held a kernel before)
    e.copy_name = nullptr;
    e.fn = std::move(op);
  }, seq, role, trail);
}

Status enqueue_copy(const char* fn, StreamImpl& s, OpFn op, const char* name, std::uint64_t gm_read,
                    std::uint64_t gm_write) {
  return push_op(fn, s, [&](StreamOp& e) {
    e.kernel_name = nullptr;
    e.copy_name = name;
    e.copy_read = gm_read;
    e.copy_write = gm_write;
    e.tag = launch_tag();
    e.fn = std::move(op);
  }, nullptr);
}

Status enqueue_kernel(const char* fn, StreamImpl& s, const char* name, std::uint32_t block_dim, KernelFn&& body) {
  return push_op(fn, s, [&](StreamOp& e) {
    e.kernel_name = name;
    e.block_dim = block_dim;
    e.tag = launch_tag();
    e.body = std::move(body);
  }, nullptr);
}

Status wait_for_seq(const char* fn, StreamImpl& s, std::uint64_t seq) {
  NPU_SIM_CHECK_NOT_FORKED(fn);
  auto reached = [&] { return s.completed_seq.load(std::memory_order_acquire) >= seq; };
  if (reached() || (!on_worker_of(s) && spin_until(reached, config().stream_spin_us))) return Status::kSuccess;
  std::unique_lock<std::mutex> lk(s.mu);
  NPU_SIM_CHECK(!on_worker_of(s), Status::kInvalidValue,
                "%s: called from a function running on the same stream (it would wait for itself)", fn);
  wait_done(s, lk, seq);
  return Status::kSuccess;
}

Status wait_stream_idle(const char* fn, StreamImpl& s) {
  std::uint64_t target = 0;
  {
    std::lock_guard<std::mutex> lk(s.mu);
    target = s.enqueued_seq;
  }
  return wait_for_seq(fn, s, target);
}

Status sync_stream(const char* fn, StreamImpl& s) {
  NPU_SIM_RETURN_IF_ERROR(wait_stream_idle(fn, s));
  return device_error(s.device);
}

Status maybe_block(const char* fn, StreamImpl& s) {
  if (!config().launch_blocking) return Status::kSuccess;
  return sync_stream(fn, s);
}

std::vector<std::shared_ptr<StreamImpl>> live_streams(int device) {
  std::vector<std::shared_ptr<StreamImpl>> out;
  StreamRegistry& r = registry();
  std::shared_lock<std::shared_mutex> lk(r.mu);
  for (const auto& kv : r.streams) {
    if (device < 0 || kv.second->device == device) out.push_back(kv.second);
  }
  return out;
}

void wait_streams_idle(int device) {
  if (in_forked_child()) return;  // no worker survived the fork; nothing will ever run
  for (const auto& s : live_streams(device)) {
    if (on_worker_of(*s)) continue;
    std::unique_lock<std::mutex> lk(s->mu);
    wait_done(*s, lk, s->enqueued_seq);
  }
}

}  // namespace detail

StreamImpl::~StreamImpl() {
  for (detail::StreamOp* op = front; op != nullptr;) {
    detail::StreamOp* next = op->next.load(std::memory_order_relaxed);
    delete op;
    op = next;
  }
}

using detail::fail;

Status stream_create(int device, Stream* stream) {
  NPU_SIM_CHECK(stream != nullptr, Status::kInvalidValue, "stream_create: stream is null (expected a pointer)");
  NPU_SIM_RETURN_IF_ERROR(detail::check_device("stream_create", device));
  *stream = detail::create_stream_impl(device, /*is_default=*/false).get();
  return Status::kSuccess;
}

Status stream_destroy(Stream stream) {
  NPU_SIM_CHECK(stream != nullptr, Status::kInvalidValue,
                "stream_destroy: stream is null (the default stream cannot be destroyed)");
  Status st;
  std::shared_ptr<StreamImpl> s = detail::resolve_stream("stream_destroy", stream, &st);
  if (!s) return st;
  NPU_SIM_CHECK(!s->is_default, Status::kInvalidValue,
                "stream_destroy: stream %p is the default stream of device %d and cannot be destroyed",
                static_cast<void*>(stream), s->device);
  NPU_SIM_CHECK(!detail::on_worker_of(*s), Status::kInvalidValue,
                "stream_destroy: called from a function running on the stream being destroyed");
  {
    detail::StreamRegistry& r = detail::registry();
    std::unique_lock<std::shared_mutex> lk(r.mu);
    NPU_SIM_CHECK(r.streams.erase(stream) == 1, Status::kInvalidHandle,
                  "stream_destroy: stream %p was destroyed concurrently", static_cast<void*>(stream));
    detail::g_destroy_epoch.fetch_add(1, std::memory_order_release);  // invalidates resolve caches
  }
  std::thread worker;
  {
    std::unique_lock<std::mutex> lk(s->mu);
    s->destroyed = true;  // later enqueues through stale shared_ptrs are refused
    s->stop = true;       // the worker drains the queue, then exits
    worker = std::move(s->worker);
  }
  s->work_cv.notify_all();
  if (worker.joinable()) worker.join();
  return Status::kSuccess;
}

Status get_default_stream(int device, Stream* stream) {
  NPU_SIM_CHECK(stream != nullptr, Status::kInvalidValue,
                "get_default_stream: stream is null (expected a pointer)");
  NPU_SIM_RETURN_IF_ERROR(detail::check_device("get_default_stream", device));
  *stream = detail::default_stream(device).get();
  return Status::kSuccess;
}

Status stream_get_device(Stream stream, int* device) {
  NPU_SIM_CHECK(device != nullptr, Status::kInvalidValue, "stream_get_device: device is null (expected a pointer)");
  Status st;
  auto s = detail::resolve_stream("stream_get_device", stream, &st);
  if (!s) return st;
  *device = s->device;
  return Status::kSuccess;
}

Status stream_synchronize(Stream stream) {
  Status st;
  auto s = detail::resolve_stream("stream_synchronize", stream, &st);
  if (!s) return st;
  return detail::sync_stream("stream_synchronize", *s);
}

Status stream_query(Stream stream) {
  Status st;
  auto s = detail::resolve_stream("stream_query", stream, &st);
  if (!s) return st;
  {
    std::lock_guard<std::mutex> lk(s->mu);
    const std::uint64_t done = s->completed_seq.load(std::memory_order_acquire);
    NPU_SIM_CHECK(done == s->enqueued_seq, Status::kNotReady,
                  "stream_query: stream %p still has %llu pending op(s)", static_cast<void*>(s.get()),
                  static_cast<unsigned long long>(s->enqueued_seq - done));
  }
  return detail::device_error(s->device);
}

}  // namespace npu_sim
