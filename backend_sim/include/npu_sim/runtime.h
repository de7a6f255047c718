// Public API of the simulated Ascend-style NPU runtime (think aclrt* / cudart): devices, HBM, pinned
// host memory, copies, streams, events, kernel launch over AI cores, errors, counters. No torch here.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "npu_sim/inline_fn.h"

namespace npu_sim {

// ---------------------------------------------------------------------------------------------------
// Errors. Every entry point returns a Status; on failure a human-readable detail is kept per thread and
// returned by last_error_message() (names the entry point, the argument and what was expected).
//
// Asynchronous errors are sticky, as on CUDA: the first failed kernel, host function or async copy on any
// stream of a device makes that device failed. From then on every call that waits for or reads back the
// device's work (the synchronizes, the queries once the work is done, synchronous copies/memsets, copies
// to pageable host memory) returns that error with its original message, followed by
// " (sticky: the device stays failed until torch.npu.restart_device(N))". Nothing clears it but
// device_restart. Launches and other enqueues keep working; only their results cannot be read back.
enum class Status : int {
  kSuccess = 0,
  kInvalidValue = 1,    // bad argument (null pointer, negative size, unknown kind, ...)
  kInvalidDevice = 2,   // device ordinal out of range
  kOutOfMemory = 3,     // device (HBM) capacity or host allocation exhausted
  kNotReady = 4,        // event/stream query: work still pending (not an error)
  kKernelError = 5,     // an asynchronous kernel or copy failed; sticky: every later sync point reports it
  kInvalidHandle = 6,   // unknown/destroyed stream or event, pointer not from this runtime
  kInternal = 7,
  kNotSupported = 8,    // the feature is off or the host does not provide it
  kCommError = 9,       // a collective or peer communication failed (asynchronous, like kKernelError)
};

const char* status_name(Status s);
// Detail of the last non-success status returned on this thread ("" if none).
std::string last_error_message();
// kInvalidValue with `detail` as this thread's last_error_message(): for libraries over the runtime (the kernel
// library) that refuse an argument at launch, so that the caller's error names what was wrong.
Status invalid_value(std::string detail);

// ---------------------------------------------------------------------------------------------------
// Devices. Count = NPU_SIM_DEVICE_COUNT (default 8) filtered/reordered by ASCEND_RT_VISIBLE_DEVICES
// (comma-separated physical ids). Device state is created lazily on first use.
struct DeviceProperties {
  char name[64];           // "Ascend910B-sim"
  int physical_id;         // id before ASCEND_RT_VISIBLE_DEVICES remapping
  std::size_t hbm_bytes;   // NPU_SIM_HBM_GB (default 16) GiB
  int ai_core_count;       // NPU_SIM_AI_CORES (default 24): blocks a kernel grid is meant to span
  std::size_t ub_bytes;    // Unified Buffer per AI core: NPU_SIM_UB_KB (default 192, 16..16384) KiB
  int core_threads;        // host threads that execute AI-core blocks (NPU_SIM_CORE_THREADS, default nproc)
};

Status get_device_count(int* count);
Status get_device_properties(int device, DeviceProperties* props);
// Current device of the calling thread (default 0).
Status set_device(int device);
Status get_device(int* device);
// Waits for every stream of `device`; then returns the device's sticky error, if any (not cleared).
Status device_synchronize(int device);
// The device's sticky error (status, with the message in last_error_message()) or kSuccess. Neither waits
// nor clears (torch.npu introspection, test fixtures).
Status device_get_error(int device);
// torch_npu.npu.restart_device(device): acknowledges the sticky error so later work can continue. Waits
// until every stream of the device has run what was queued before the call (consuming nothing), then
// clears the errors of that work: the sticky error and each stream's own. An error of work queued by
// another thread while the restart waits survives it (it becomes the sticky error). kSuccess, or
// kInvalidValue when called from a function running on a stream of `device` (it would wait for itself).
// Must not be called while holding a lock that work queued on the device needs.
Status device_restart(int device);

// Kernel time of `device` (torch.npu.utilization): nanoseconds during which at least one kernel of the device
// was running on any of its streams, summed since the process started (a kernel still running counts up to
// now), and the same clock's now (steady clock, ns). The busy fraction of a window is the difference of two
// readings' busy time over the difference of their now.
Status device_busy_time(int device, std::uint64_t* busy_ns, std::uint64_t* now_ns);

// ---------------------------------------------------------------------------------------------------
// Memory. Device memory is host memory reserved lazily (untouched pages cost nothing) and accounted
// against the device's HBM capacity; exceeding it returns kOutOfMemory.
Status malloc_device(int device, void** ptr, std::size_t bytes);
// As cudaFree: waits until the device's streams are idle (consuming nothing, reporting no async error),
// then frees. Never call it holding a lock that queued work needs (a host function, another stream).
Status free_device(void* ptr);
// Page-locked ("pinned") host memory, usable for truly asynchronous copies.
Status malloc_host(void** ptr, std::size_t bytes);
Status free_host(void* ptr);  // as free_device, but waits for the streams of every device
// Free and total HBM bytes of the device (free = capacity - bytes held by malloc_device).
Status mem_get_info(int device, std::size_t* free_bytes, std::size_t* total_bytes);

enum class MemoryType : int { kUnregistered = 0, kHost = 1, kDevice = 2 };
struct PointerAttributes {
  MemoryType type;   // kUnregistered for pageable host memory / unknown pointers
  int device;        // owning device for kDevice, -1 otherwise
  void* base;        // start of the allocation containing ptr (nullptr if unregistered)
  std::size_t size;  // size of that allocation (0 if unregistered)
};
// Works for any pointer inside an allocation, not just its start.
Status pointer_get_attributes(const void* ptr, PointerAttributes* attrs);

// Device memory as a shareable file: another process of the host can open /proc/<pid>/fd/<fd> and map
// it; device pointer p of `device` (if base <= p < base + size) is at file offset p - base. Allocations
// that did not fit the region (never the case while capacity is left) are private. kNotSupported when
// NPU_SIM_SHARED_HBM=0 or the host refused the memfd.
struct SharedRegion {
  int fd;
  void* base;
  std::size_t size;
};
Status device_memory_region(int device, SharedRegion* region);
// IPC: maps `bytes` at `offset` of another process's device memory file (its device_memory_region fd, as
// /proc/<pid>/fd/<fd>) and registers them as device memory of `device` in this process, not charged to its
// capacity (the memory is the other process's). The mapping keeps the memory alive after that process
// exits. kInvalidHandle when the file cannot be opened (the process is gone). Close with ipc_close_memory
// (free_device refuses it); it waits for the device's queued work first, as free_device does.
Status ipc_open_memory(int device, const char* path, std::size_t offset, std::size_t bytes, void** ptr);
Status ipc_close_memory(void* ptr);

// ---------------------------------------------------------------------------------------------------
// Streams and events: in-order queues, each executed by its own worker thread; different streams run
// concurrently. A null Stream means the default stream of the calling thread's current device.
struct StreamImpl;
struct EventImpl;
using Stream = StreamImpl*;
using Event = EventImpl*;

Status stream_create(int device, Stream* stream);
Status stream_destroy(Stream stream);  // waits for its pending work first; reports no async error
Status get_default_stream(int device, Stream* stream);
Status stream_get_device(Stream stream, int* device);
// Waits for the stream; then returns its device's sticky error, if any (not cleared).
Status stream_synchronize(Stream stream);
// kNotReady while work is pending; once idle, the device's sticky error if any, else kSuccess. (Pending
// work is reported first so that a caller such as the caching allocator never takes an error for "done".)
Status stream_query(Stream stream);
// Later work on `stream` waits for `event`. Reports no async error (it waits for nothing on the host).
Status stream_wait_event(Stream stream, Event event);

enum EventFlags : unsigned { kEventDefault = 0, kEventEnableTiming = 1 };
Status event_create(Event* event, unsigned flags = kEventDefault);
Status event_destroy(Event event);
// Captures the current tail of `stream`; the event completes when that work is done. An event never
// recorded counts as complete (as in CUDA). An event counts as complete as soon as everything it stands
// for is done, even if its stream's worker has not passed the marker yet (only records and satisfied
// waits left before it): an event that a synchronized stream waited for is complete, and so is every
// event recorded before it on its stream.
Status event_record(Event event, Stream stream);
// kNotReady while incomplete; once complete, the recording device's sticky error if any, else kSuccess.
Status event_query(Event event);
// Blocks until complete; then returns the recording device's sticky error, if any (not cleared).
Status event_synchronize(Event event);
// Milliseconds between two completed events created with kEventEnableTiming.
Status event_elapsed_time(float* ms, Event start, Event end);

// ---------------------------------------------------------------------------------------------------
// Copies. kDefault infers the direction from pointer attributes.
enum class MemcpyKind : int {
  kHostToHost = 0,
  kHostToDevice = 1,
  kDeviceToHost = 2,
  kDeviceToDevice = 3,  // also across devices (peer copy)
  kDefault = 4,
};
// Synchronous: ordered after all work already queued on the default stream of the device(s) involved,
// returns when the bytes have landed. If a device involved (either side of a peer copy; for host-to-host
// the current device, whose default stream orders it) already has a sticky error, returns it and copies
// nothing; an error that appears while the call waits is returned after the copy.
Status memcpy(void* dst, const void* src, std::size_t bytes, MemcpyKind kind);
// Asynchronous on `stream`. As in CUDA: from pageable host memory the source is staged at call time (the
// caller may reuse it on return) up to 1 MiB, larger pageable sources make the call wait for the stream;
// to pageable host memory the call returns once the copy is done; pinned<->device copies are fully
// asynchronous. The calls that wait return the stream's device's sticky error like a synchronize (a
// copy to pageable host memory from a failed device copies nothing); the others report none.
Status memcpy_async(void* dst, const void* src, std::size_t bytes, MemcpyKind kind, Stream stream);
// Synchronous, with memcpy's error rule (the device owning dst, or the current device for pinned memory).
Status memset(void* dst, int value, std::size_t bytes);
Status memset_async(void* dst, int value, std::size_t bytes, Stream stream);  // reports no async error

// ---------------------------------------------------------------------------------------------------
// Kernel launch. A kernel is a function run once per block of a 1-D grid; blocks are spread over the
// shared pool of AI-core threads. Each block gets the executing core's Unified Buffer as scratch
// (ub_bytes, valid only during the block). A block reports failure by throwing npu_sim::KernelError
// (or any std::exception); the stream records "kernel '<name>' failed: <what>" as kKernelError (or as
// AsyncError::status), which becomes the device's sticky error (see Errors) if it is the first. Launches
// report no async error. With ASCEND_LAUNCH_BLOCKING=1 every launch and async copy completes before the
// call returns and synchronizes its stream: the launch itself then returns the sticky error.
struct LaunchAccumulators;
struct BlockContext {
  std::uint32_t block_idx;
  std::uint32_t block_dim;
  int core_id;            // index of the executing core thread
  void* ub;               // Unified Buffer scratch of this core
  std::size_t ub_bytes;   // DeviceProperties::ub_bytes
  // The launch's traffic accumulators while launch recording is on (see Launch records), else null.
  // Blocks add to them with record_traffic(), once per tile or per block, never per element.
  LaunchAccumulators* record;
};
// Inline storage of a queued kernel body: enough for the elementwise engine's iterator plus its functor,
// so the common launch allocates nothing (larger bodies go to the heap).
constexpr std::size_t kKernelInlineBytes = 1280;
using KernelFn = InlineFn<void(const BlockContext&), kKernelInlineBytes>;

struct KernelError : std::exception {
  explicit KernelError(std::string msg) : msg_(std::move(msg)) {}
  const char* what() const noexcept override { return msg_.c_str(); }
  std::string msg_;
};
// A failure with its own status: thrown by a kernel block or host function, the stream records `status`
// instead of kKernelError (the collective library throws it with kCommError from its host functions). A
// host function's AsyncError message is recorded as is, without the "host function failed: " prefix.
// A status that is not an error (kSuccess, kNotReady) is recorded as kKernelError.
struct AsyncError : KernelError {
  AsyncError(Status s, std::string msg) : KernelError(std::move(msg)), status(s) {}
  Status status;
};

// `name` is NOT copied: it must stay valid until the kernel has run (every caller passes a string literal
// or a name from a static table). `fn` is moved into the queue and must own (or outlive) everything it
// reads; it is invoked concurrently by several core threads.
Status launch_kernel(Stream stream, const char* name, std::uint32_t block_dim, KernelFn&& fn);
// Enqueues an arbitrary host function on the stream (runs on the stream worker, in order). An exception
// it throws is recorded as "host function failed: <what>" (kKernelError), or as an AsyncError says.
// It must not wait for later work of its own stream, nor for work that waits for it.
Status launch_host_func(Stream stream, std::function<void()> fn);

bool launch_blocking();  // ASCEND_LAUNCH_BLOCKING=1

// ---------------------------------------------------------------------------------------------------
// Launch records: per-launch cost accounting, for profiling (DESIGN.md §10). While recording is on, each
// kernel launch gets accumulators for the global-memory (HBM) bytes its blocks read and wrote and the
// FLOPs they did on the Cube (matmul) and on the Vector unit; blocks add to them through
// BlockContext::record (the tile layer, kernels/include/npu_kernels/tile.h, does it for its kernels).
// When the launch completes, its stream's worker appends a LaunchRecord to a process-wide buffer that
// keeps the newest `capacity` records (older ones are dropped and counted) and adds it to running totals.
// Off by default: a launch then costs one relaxed atomic load more, and BlockContext::record is null.
// Whether a launch is recorded is decided when its stream's worker starts it.
struct LaunchAccumulators {  // relaxed atomics: blocks of one launch run on several core threads at once
  std::atomic<std::uint64_t> gm_read{0}, gm_write{0}, cube_flops{0}, vector_flops{0};
};
// Adds one block's (or one tile's) traffic to its launch; nothing when recording is off.
inline void record_traffic(const BlockContext& ctx, std::uint64_t gm_read, std::uint64_t gm_write,
                           std::uint64_t cube_flops, std::uint64_t vector_flops) {
  LaunchAccumulators* a = ctx.record;
  if (a == nullptr) return;
  constexpr auto r = std::memory_order_relaxed;
  if (gm_read != 0) a->gm_read.fetch_add(gm_read, r);
  if (gm_write != 0) a->gm_write.fetch_add(gm_write, r);
  if (cube_flops != 0) a->cube_flops.fetch_add(cube_flops, r);
  if (vector_flops != 0) a->vector_flops.fetch_add(vector_flops, r);
}
struct LaunchRecord {
  std::string kernel;        // the launch's name
  int device;
  Stream stream;             // the stream it ran on (a launch on nullptr: the default stream's handle); a
                             // destroyed stream's address may be reused, stream_id tells them apart
  std::uint64_t stream_id;   // unique per stream for the process
  std::uint64_t launch_seq;  // the launch's sequence number on its stream (orders one stream's records)
  std::uint32_t block_dim;
  std::uint64_t gm_read, gm_write, cube_flops, vector_flops;  // what its blocks recorded
  bool failed;               // a block threw: the counts are what the blocks recorded before the failure
  std::int64_t start_ns, end_ns;  // when its stream's worker ran it (CLOCK_REALTIME ns, profilers' clock)
  std::uint64_t tag;         // the launching thread's launch tag when it was launched (set_launch_tag)
};
struct LaunchTotals {  // over every record appended since the last clear, dropped ones included
  std::uint64_t launches, failed;
  std::uint64_t gm_read, gm_write, cube_flops, vector_flops;
  std::uint64_t dropped;  // records pushed out of the buffer by newer ones
};
constexpr std::size_t kDefaultLaunchRecordCapacity = 65536;
// Turns recording on or off (launches already running keep their choice). `capacity` (>= 1) bounds the
// buffer; a smaller capacity than the records held drops the oldest ones (counted as dropped).
Status set_launch_recording(bool on, std::size_t capacity = kDefaultLaunchRecordCapacity);
bool launch_recording();
// The buffered records, oldest first. Does not wait for running launches (synchronize first to see them).
std::vector<LaunchRecord> get_launch_records();
LaunchTotals get_launch_totals();
// Empties the buffer and zeroes the totals and the dropped count.
void clear_launch_records();
// The calling thread's launch tag, copied into each kernel it launches (LaunchRecord::tag); 0 by default.
// A profiler sets it to the correlation id of the op running on the thread, so that each recorded launch
// can be linked to the op that made it.
void set_launch_tag(std::uint64_t tag);
std::uint64_t launch_tag();

// The modeled time of a launch on a 910B-class part (a roofline; README, "Modeled NPU time"): the longest
// of its GM traffic over the HBM bandwidth and its Cube and Vector FLOPs over the chip's peaks (all AI
// cores). Defaults below; NPU_SIM_HBM_GBPS, NPU_SIM_CUBE_TFLOPS and NPU_SIM_VECTOR_TFLOPS (per device, all
// cores) override them.
struct Roofline {
  double hbm_bytes_per_s;     // 1.6e12
  double cube_flops_per_s;    // 313e12: 24 cores x 16x16x16 fp16 MACs per cycle x ~1.6 GHz
  double vector_flops_per_s;  // 9.8e12: 24 cores x 128 fp16 lanes x FMA x ~1.6 GHz
  int ai_cores;               // 24 (NPU_SIM_AI_CORES): the peaks above are these cores together
};
Roofline roofline();
double modeled_time_ns(const LaunchRecord& record);

// ---------------------------------------------------------------------------------------------------
// Counters (process-wide, monotonically increasing; reset_counters() zeroes them).
struct Counters {
  std::uint64_t bytes_h2d, bytes_d2h, bytes_d2d, bytes_h2h;
  std::uint64_t kernels_launched, kernels_failed;
  std::uint64_t device_mallocs, device_frees;
};
Counters get_counters();
void reset_counters();

// Fault injection for tests: the next `count` calls to malloc_device on `device` fail with kOutOfMemory
// (device -1 = any). Also set at start-up from NPU_SIM_FAULT_MALLOC_FAIL="<device>:<count>".
void inject_malloc_failures(int device, int count);

}  // namespace npu_sim
