// Private interfaces shared by the runtime's translation units: configuration, error helpers, the
// devices' sticky errors, the stream/event objects, the pointer registry query, the core pool and the
// process-wide counters.
//
// Note [Locks of the runtime]
// Every mutex below says at its declaration what it guards. The rules common to all of them:
//  - Nothing waits for a stream, an event, a worker or another thread while holding a runtime mutex,
//    except a condition-variable wait on that same mutex (StreamImpl::done_cv/work_cv under
//    StreamImpl::mu, the core pool's cv under Pool::mu, Job::cv under Job::mu), which releases it.
//  - The only nesting is registry lock -> nothing (registries hand out shared_ptrs and release), and
//    StreamImpl::mu / EventImpl::mu / DeviceErrors::mu are leaves: no other runtime lock is taken while
//    one of them is held (thread creation in start_worker_locked is the one slow call under
//    StreamImpl::mu; it waits for no stream).
//  - A stream worker takes its own StreamImpl::mu (to sleep, to wake waiters), the EventImpl::mu of
//    timing markers, DeviceErrors::mu (to record a failure), another stream's mu inside a wait op, and the
//    core pool's locks, and the launch records' mutex (launch_record.cpp, a leaf) once per recorded
//    launch. So an API call may block (wait for streams) only with none of these held.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "npu_sim/runtime.h"
#include "npu_sim/smi_registry.h"

namespace npu_sim {
namespace detail {

// ---------------------------------------------------------------------------------------------------
// Errors (error.cpp). fail() stores the formatted detail as this thread's last error and returns `s`.
Status fail(Status s, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Stores an already formatted message (used when re-reporting a recorded async error).
Status fail_msg(Status s, std::string msg);
// The status a stream records for a failure that reported `s`: `s` if it is an error, kKernelError for
// kSuccess / kNotReady / unknown values (an AsyncError must never make a failure look like success).
Status async_status(Status s);

#define NPU_SIM_CHECK(cond, status, ...)                    \
  do {                                                      \
    if (!(cond)) return ::npu_sim::detail::fail((status), __VA_ARGS__); \
  } while (0)

#define NPU_SIM_RETURN_IF_ERROR(expr)                       \
  do {                                                      \
    const ::npu_sim::Status npu_sim_status_ = (expr);       \
    if (npu_sim_status_ != ::npu_sim::Status::kSuccess) return npu_sim_status_; \
  } while (0)

// ---------------------------------------------------------------------------------------------------
// Configuration (device.cpp): read once from the environment when the runtime is first used.
struct Config {
  std::vector<int> physical_ids;  // visible ordinal -> physical id
  std::size_t hbm_bytes = 0;
  int ai_cores = 0;
  int core_threads = 0;
  std::size_t ub_bytes = 0;  // NPU_SIM_UB_KB (default 192): each AI core's Unified Buffer
  bool launch_blocking = false;
  int stream_spin_us = 50;  // NPU_SIM_STREAM_SPIN_US: how long an idle stream worker or AI-core thread polls
  bool shared_hbm = true;   // NPU_SIM_SHARED_HBM: device memory from a shareable memfd arena (hbm_arena.cpp)
  int fault_device = -1;  // from NPU_SIM_FAULT_MALLOC_FAIL
  int fault_count = 0;
};
const Config& config();
inline int device_count() { return static_cast<int>(config().physical_ids.size()); }
// Validates a device ordinal for entry point `fn` (sets the error message on failure).
Status check_device(const char* fn, int device);
int current_device();  // calling thread's current device (may be invalid if there are 0 devices)

constexpr std::size_t kDefaultUbBytes = 192 * 1024;

// Polls `ready()` for up to `spin_us` microseconds before a caller falls back to sleeping; true once it
// held. Back-to-back work then costs no wake-up (futex + context switch, ~5 us here). The poll yields the
// core every 64 rounds: on 2 cores a poller placed on the issuing thread's core otherwise halved that
// thread's share (a 1000-op chain ran 1.4-1.9x slower).
template <typename Ready>
bool spin_until(Ready ready, int spin_us) {
  if (spin_us <= 0) return ready();
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  for (int i = 0;; ++i) {
    if (ready()) return true;
    if ((i & 63) == 63) {
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::yield();
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

// True in a child forked after the runtime started: its worker threads did not survive the fork, so
// queue operations fail with kInternal instead of waiting forever (torch reports the same situation as
// "Cannot re-initialize NPU in forked subprocess").
bool in_forked_child();
#define NPU_SIM_CHECK_NOT_FORKED(fn)                                                              \
  NPU_SIM_CHECK(!::npu_sim::detail::in_forked_child(), ::npu_sim::Status::kInternal,             \
                "%s: the NPU runtime cannot be used in a process forked after it started; use the " \
                "'spawn' start method", fn)

// ---------------------------------------------------------------------------------------------------
// Counters (launch.cpp): process-wide atomics, relaxed ordering (they are statistics). On a cache line of
// their own: a heap neighbour written by a stream worker made every launch's increment a cross-core miss.
struct alignas(64) AtomicCounters {
  std::atomic<std::uint64_t> bytes_h2d{0}, bytes_d2h{0}, bytes_d2d{0}, bytes_h2h{0};
  std::atomic<std::uint64_t> kernels_launched{0}, kernels_failed{0};
  std::atomic<std::uint64_t> device_mallocs{0}, device_frees{0};
};
AtomicCounters& counters();

// ---------------------------------------------------------------------------------------------------
// Launch records (launch_record.cpp; the public half is in runtime.h). A stream worker asks
// recording_on() once per kernel op; if on, it runs the blocks with accumulators and then appends the
// record. append_launch_record takes only the record buffer's own mutex (a leaf).
bool recording_on();
void append_launch_record(const char* kernel, int device, Stream stream, std::uint64_t stream_id,
                          std::uint64_t launch_seq, std::uint32_t block_dim, const LaunchAccumulators& acc,
                          bool failed, std::int64_t start_ns, std::int64_t end_ns, std::uint64_t tag);

// ---------------------------------------------------------------------------------------------------
// Pointer registry (memory.cpp).
struct AllocInfo {
  MemoryType type = MemoryType::kUnregistered;
  int device = -1;
  char* base = nullptr;
  std::size_t size = 0;
  bool imported = false;  // another process's device memory (ipc_open_memory)
};
// Looks up the allocation containing p (interior pointers included). Returns false if unregistered.
bool find_allocation(const void* p, AllocInfo* info);

// Shareable HBM arena (hbm_arena.cpp). arena_alloc returns page-aligned memory of device's arena and its
// rounded length in *len, or nullptr (sharing off, or no free range fits: use private memory then).
// arena_free returns false if p is not arena memory of that device.
void* arena_alloc(int device, std::size_t bytes, std::size_t* len);
bool arena_free(int device, void* p, std::size_t len);

// ---------------------------------------------------------------------------------------------------
// Core pool (core_pool.cpp). Runs `fn` for block indices [0, n) on the pool threads and the calling
// thread together and returns when all blocks are done. A block that throws stops the remaining blocks
// from starting; the first exception's what() is returned in *error (and false is returned).
// `fn` is referenced, not copied (it outlives the call); a single block runs on the caller alone.
using BlockFn = FunctionRef<void(const BlockContext&)>;
// *status (optional) receives the failure's status: AsyncError::status, else kKernelError. `record`
// (optional) is handed to the blocks as BlockContext::record.
bool run_blocks(std::uint32_t n, BlockFn fn, std::string* error, Status* status = nullptr,
                LaunchAccumulators* record = nullptr);
// Copies (or sets) large ranges in parallel chunks over the pool; small ones on the calling thread.
void parallel_memcpy(void* dst, const void* src, std::size_t bytes);
void parallel_memset(void* dst, int value, std::size_t bytes);

// ---------------------------------------------------------------------------------------------------
// Sticky device errors (device.cpp). A stream worker records each failed op here; per device, the first
// failure of each stream is kept in record order, and the oldest one is the device's sticky error that
// every synchronizing call reports until device_restart clears what its wait covered.
//
// Records an op's failure: stream `s`, its op `seq`. Called by s's worker before the op counts as
// complete (so a waiter that sees the op complete sees the error). Takes only DeviceErrors::mu.
void record_async_error(StreamImpl& s, std::uint64_t seq, Status status, std::string message);
// kSuccess if `device` has no sticky error, else the error (message + the sticky note in the thread's
// last error). Never waits; one atomic load when the device is healthy.
Status device_error(int device);
// Brackets each kernel a stream worker runs, for device_busy_time (union of the kernels' intervals).
void kernel_began(int device);
void kernel_ended(int device);
// This process's npu-smi registry entry of `device` (smi_registry.cpp), or null without a registry file.
SmiDevice* smi_device(int device);

// ---------------------------------------------------------------------------------------------------
// Streams (stream.cpp).
//
// An op returns "" on success or an error message, which the worker records (record_async_error) as
// kKernelError; an op may also throw (AsyncError carries its own status).
using OpFn = std::function<std::string()>;

// One queued op: a kernel launch (kernel_name set: body run over block_dim blocks) or a host op (fn).
// Entries live on their stream's op list and are reused once finished, so a launch whose body fits
// KernelFn's inline storage costs no heap allocation (allocations freed by another thread were a large
// part of the host cost per op). `next` is written by producers (under the stream's mu) and read by the
// worker without a lock.
struct StreamOp {
  std::uint64_t seq = 0;
  const char* kernel_name = nullptr;  // not owned: launch_kernel's callers pass static strings
  std::uint32_t block_dim = 0;
  std::uint64_t tag = 0;              // the launching thread's launch tag
  const char* copy_name = nullptr;    // a copy or memset host op: its launch-record name ("memcpy_h2d"...)
  std::uint64_t copy_read = 0, copy_write = 0;  // and the device-memory bytes it reads and writes
  KernelFn body;
  OpFn fn;
  std::atomic<StreamOp*> next{nullptr};
};

}  // namespace detail

namespace detail {
// A stream's ops since its last real work: only event records and waits for other streams. When every
// wait among them is for one stream B, a wait of B on an event recorded there needs nothing B's own order
// does not already give (see stream_wait_event), so it is skipped: the collective after a Work.wait() then
// starts without a hand-off between the two streams' workers. For the same reason an event recorded there
// is complete once B has reached the highest seq waited for (event_complete in event.cpp), even if the
// recording stream's worker has not passed the marker yet.
struct WaitTrail {
  std::uint64_t work_seq = 0;             // seq of the last real op (anything but records and waits)
  bool waits = false;                     // some wait since then
  std::weak_ptr<StreamImpl> waits_on;     // the stream they are all for (if !mixed); expired: it is gone,
                                          // which means it ran everything (stream_destroy drains first)
  std::uint64_t max_waited_seq = 0;       // the highest seq of waits_on waited for since then
  bool mixed = false;                     // waits for more than one stream since then
};
}  // namespace detail

// Ownership: StreamImpl objects are owned by shared_ptrs in the stream registry (stream.cpp) and by any
// in-flight user of the handle (lookups hand out shared_ptr copies), so a concurrent stream_destroy
// never frees an object someone is still waiting on. The worker thread is the only one that runs ops.
//
// The op list runs front (oldest) -> tail (newest) with consecutive seqs. Producers append under `mu`;
// the worker walks it without any lock from the last op it finished (at first a seq-0 stub) and
// publishes each finished op in completed_seq. Entries before that one (seq < completed_seq) are
// finished: producers reuse them or free them. So a launch takes one lock the worker never contends
// (a contended std::mutex sleeps in the kernel: ~0.8 us per launch when the worker locked per op).
struct StreamImpl : std::enable_shared_from_this<StreamImpl> {
  int device = 0;
  bool is_default = false;
  std::uint64_t id = 0;  // unique for the process (a freed stream's address may be reused; its id is not)

  // Producer side (one cache line apart from the worker's fields below, which change per op).
  //
  // `mu` guards the fields marked below. Held only briefly: to link an op, to read enqueued_seq, by the
  // worker to sleep on work_cv or to wake done_cv's waiters. The only blocking under it is a
  // condition-variable wait on work_cv/done_cv (which releases it); no other runtime lock is taken under
  // it. Anything that waits for another stream or event runs outside it.
  std::mutex mu;
  std::condition_variable work_cv;  // the worker sleeps here for ops (or stop)
  std::condition_variable done_cv;  // waiters sleep here for completed_seq to advance
  detail::StreamOp* front;         // guarded by mu: the oldest entry kept (finished ones are reused)
  detail::StreamOp* tail;          // guarded by mu: the newest entry
  std::uint64_t enqueued_seq = 0;  // guarded by mu: seq of the last op enqueued
  std::uint64_t known_done = 0;    // guarded by mu: completed_seq as last read by a producer
  bool worker_sleeping = false;    // guarded by mu: the worker waits on work_cv (enqueue must notify)
  bool destroyed = false;          // guarded by mu: no more enqueues accepted
  bool stop = false;               // guarded by mu: worker exits once the queue is empty
  std::thread worker;              // started lazily by the first enqueue (guarded by mu)
  detail::WaitTrail trail;         // guarded by mu: what the ops after the last real work are (see WaitTrail)

  // Worker side.
  alignas(64) std::atomic<std::uint64_t> completed_seq{0};  // written by the worker only: last op finished
  // The lowest completed_seq a thread asleep on done_cv waits for (UINT64_MAX: none). Waiters lower it under
  // mu; the worker, once completed_seq reaches it, resets it under mu and notifies (see wait_done).
  std::atomic<std::uint64_t> wake_at{UINT64_MAX};

  StreamImpl() : front(new detail::StreamOp()), tail(front) {}
  StreamImpl(const StreamImpl&) = delete;
  StreamImpl& operator=(const StreamImpl&) = delete;
  ~StreamImpl();  // frees every entry; the worker has exited by then
};

// Ownership: EventImpl objects are owned by shared_ptrs in the event registry (event.cpp) and by
// marker ops in flight (weakly: a marker of a destroyed event does nothing).
//
// `mu` guards the record state below. It is a leaf held for a few assignments: event_record takes it
// to reserve a generation and again to publish the record, never while enqueuing the marker (the
// stream's worker takes it in timing markers); nothing blocks under it.
struct EventImpl {
  unsigned flags = 0;
  std::mutex mu;
  std::uint64_t reserved_gen = 0;      // guarded by mu: the last generation handed to an event_record
  std::uint64_t generation = 0;        // guarded by mu: generation of the published (latest) record
  std::shared_ptr<StreamImpl> stream;  // guarded by mu: stream of that record (null = never recorded)
  std::uint64_t seq = 0;               // guarded by mu: op seq of its marker
  detail::WaitTrail trail;             // guarded by mu: the recording stream's trail at the record
  std::uint64_t time_gen = 0;          // guarded by mu: generation of the newest marker that ran (timing)
  std::chrono::steady_clock::time_point time;  // guarded by mu: when that marker ran
};

namespace detail {

// Resolves a user stream handle (nullptr = default stream of the current device). On failure sets the
// error (naming fn) and returns null with *status set.
std::shared_ptr<StreamImpl> resolve_stream(const char* fn, Stream s, Status* status);
// Creates a stream object and registers it (the worker thread starts with the first op).
std::shared_ptr<StreamImpl> create_stream_impl(int device, bool is_default);
// Default stream of a device (created with its state on first use). Device must be valid.
std::shared_ptr<StreamImpl> default_stream(int device);
// What a host op is, for the wait trail: real work, an event record, or a wait for stream `waits_for`
// to reach `waited_seq`.
struct OpRole {
  enum Kind { kWork, kRecord, kWait } kind = kWork;
  StreamImpl* waits_for = nullptr;
  std::uint64_t waited_seq = 0;
};
// Appends an op; *seq (optional) receives its sequence number, *trail (optional) the stream's wait trail
// as of this op. Fails if the stream was destroyed.
Status enqueue(const char* fn, StreamImpl& s, OpFn op, std::uint64_t* seq = nullptr, OpRole role = {},
               WaitTrail* trail = nullptr);
// Appends a copy (or memset) host op that launch recording records as `name` (a static string) with the
// device-memory bytes it reads and writes.
Status enqueue_copy(const char* fn, StreamImpl& s, OpFn op, const char* name, std::uint64_t gm_read,
                    std::uint64_t gm_write);
// Appends a kernel launch (`name` must outlive the op; see launch_kernel).
Status enqueue_kernel(const char* fn, StreamImpl& s, const char* name, std::uint32_t block_dim, KernelFn&& body);
// resolve_stream for the launch path: the returned stream stays alive (owned by a per-thread cache)
// until this thread's next call. A hit (same handle, no stream destroyed since) takes no lock and
// copies no shared_ptr.
StreamImpl* resolve_stream_cached(const char* fn, Stream s, Status* status);
// Blocks until the stream completed `seq`. Refuses (kInvalidValue) a wait by the stream's own worker.
Status wait_for_seq(const char* fn, StreamImpl& s, std::uint64_t seq);
// Waits with s.mu held (by lk) until s completed `target`, lowering s.wake_at to it so that the worker
// signals done_cv only when some waiter's target is reached. Every wait on done_cv goes through here.
void wait_done(StreamImpl& s, std::unique_lock<std::mutex>& lk, std::uint64_t target);
// Waits for everything enqueued on `s` so far; reports no async error. Call with no runtime lock held.
Status wait_stream_idle(const char* fn, StreamImpl& s);
// wait_stream_idle, then the sticky error of s's device (not cleared).
Status sync_stream(const char* fn, StreamImpl& s);
// In ASCEND_LAUNCH_BLOCKING mode: synchronizes the stream after an enqueue; otherwise kSuccess.
Status maybe_block(const char* fn, StreamImpl& s);
// All live streams of `device` (-1 = every device), default streams included.
std::vector<std::shared_ptr<StreamImpl>> live_streams(int device);
// True if the calling thread is the worker of `s`.
bool on_worker_of(const StreamImpl& s);
// Waits until every live stream of `device` (-1 = all) is idle, without reporting errors; skips the
// stream whose worker is the caller. Used by free_device/free_host (as cudaFree synchronizes). Holds
// no lock but each stream's own mu during its done_cv wait; call it with no runtime lock held.
void wait_streams_idle(int device);

}  // namespace detail
}  // namespace npu_sim
