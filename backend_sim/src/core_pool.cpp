// The process-wide pool of AI-core host threads, dynamic block distribution for kernel launches (the
// calling stream worker helps), per-core Unified Buffers, and the pool-parallel memcpy/memset.
//
// Progress: a launch's caller claims blocks from the same atomic counter as the pool threads and only
// then waits, so every launch completes even if all pool threads are busy with (or blocked in) other
// launches. Pool threads never wait on anything but the job list.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "internal.h"

namespace npu_sim {
namespace detail {
namespace {

// One launch. `next` hands out block indices; `done` counts finished blocks (the thread that completes
// the count notifies `cv` under `mu`). `mu` guards `error` and `status` (read once `done == n`); under it
// only the launching caller's wait on `cv`, nothing else blocks.
struct Job {
  std::uint32_t n = 0;
  const BlockFn* fn = nullptr;  // the caller's (run_blocks waits until no block can still call it)
  LaunchAccumulators* record = nullptr;  // the caller's too (BlockContext::record)
  std::atomic<std::uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::atomic<std::uint32_t> done{0};  // blocks finished (or skipped after a failure)
  std::mutex mu;
  std::condition_variable cv;
  std::string error;  // guarded by mu: what() of the first failing block
  Status status = Status::kKernelError;  // guarded by mu: its status (AsyncError's, else kKernelError)
  bool exhausted() const { return next.load(std::memory_order_relaxed) >= n; }
};

// Process-lifetime pool (never destroyed; its threads idle forever at exit). `mu` protects `jobs` and
// `sleepers`; `posted` (written under mu) lets idle threads poll for a new launch without the lock, and a
// launch notifies `cv` only when a thread is asleep on it. Held only to push/pop jobs; pool threads sleep
// on `cv` under it and nothing else blocks under it (blocks run with no pool lock held).
struct Pool {
  std::once_flag started;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Job>> jobs;  // launches that may still have unclaimed blocks
  std::atomic<std::uint64_t> posted{0};   // launches ever queued
  int sleepers = 0;                       // pool threads waiting on cv
};
Pool& pool() {
  static Pool* p = new Pool();
  return *p;
}

// A Unified Buffer, owned by the thread that executes blocks (pool thread or helping stream worker).
struct UnifiedBuffer {
  void* mem = nullptr;
  int core_id = -1;
  ~UnifiedBuffer() { std::free(mem); }
};
std::atomic<int> g_next_helper_core{0};
thread_local UnifiedBuffer t_ub;

UnifiedBuffer& this_thread_ub(int pool_core_id) {
  if (t_ub.mem == nullptr) {
    t_ub.mem = std::aligned_alloc(4096, (config().ub_bytes + 4095) / 4096 * 4096);
    if (t_ub.mem == nullptr) throw std::bad_alloc();
    // Stream workers (and any other caller) get ids after the pool's: unique per thread.
    t_ub.core_id = pool_core_id >= 0 ? pool_core_id
                                     : config().core_threads + g_next_helper_core.fetch_add(1);
  }
  return t_ub;
}

void record_failure(Job& job, const char* what, Status status) {
  if (job.failed.exchange(true)) return;  // first error wins
  std::lock_guard<std::mutex> lk(job.mu);
  job.error = what;
  job.status = status;
}

// Claims and runs blocks of `job` until none is left; then adds the count to job.done.
void work_on(Job& job, UnifiedBuffer& ub) {
  std::uint32_t ran = 0;
  for (;;) {
    const std::uint64_t i = job.next.fetch_add(1, std::memory_order_relaxed);
    if (i >= job.n) break;
    if (!job.failed.load(std::memory_order_relaxed)) {
      try {
        (*job.fn)(BlockContext{static_cast<std::uint32_t>(i), job.n, ub.core_id, ub.mem, config().ub_bytes,
                                job.record});
      } catch (const AsyncError& e) {
        record_failure(job, e.what(), async_status(e.status));
      } catch (const std::exception& e) {
        record_failure(job, e.what(), Status::kKernelError);
      } catch (...) {
        record_failure(job, "unknown exception", Status::kKernelError);
      }
    }
    ++ran;
  }
  if (ran == 0 || job.done.fetch_add(ran) + ran != job.n) return;
  std::lock_guard<std::mutex> lk(job.mu);  // the caller checks `done` under mu before it sleeps
  job.cv.notify_all();
}

void pool_thread(int core_id) {
  UnifiedBuffer& ub = this_thread_ub(core_id);
  Pool& p = pool();
  auto has_job = [&p] {  // under p.mu
    while (!p.jobs.empty() && p.jobs.front()->exhausted()) p.jobs.pop_front();
    return !p.jobs.empty();
  };
  std::uint64_t seen = 0;
  for (;;) {
    // Poll for a launch (kernels come back to back; each wake-up cost ~5 us), then sleep.
    const bool polled =
        spin_until([&] { return p.posted.load(std::memory_order_acquire) != seen; }, config().stream_spin_us);
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lk(p.mu);
      seen = p.posted.load(std::memory_order_relaxed);
      if (!has_job()) {
        if (polled) continue;  // its blocks were all claimed already: poll again
        ++p.sleepers;
        p.cv.wait(lk, has_job);
        --p.sleepers;
        seen = p.posted.load(std::memory_order_relaxed);
      }
      job = p.jobs.front();
    }
    work_on(*job, ub);
  }
}

void start_pool() {
  const int n = config().core_threads;
  for (int i = 0; i < n; ++i) std::thread(pool_thread, i).detach();  // never joined (process lifetime)
}

}  // namespace

bool run_blocks(std::uint32_t n, BlockFn fn, std::string* error, Status* status, LaunchAccumulators* record) {
  if (n == 0) return true;
  UnifiedBuffer& ub = this_thread_ub(-1);
  if (status != nullptr) *status = Status::kKernelError;
  if (n == 1) {  // a single block runs on the caller: no job, no pool wake-up, no locks
    try {
      fn(BlockContext{0, 1, ub.core_id, ub.mem, config().ub_bytes, record});
      return true;
    } catch (const AsyncError& e) {
      if (error != nullptr) *error = e.what();
      if (status != nullptr) *status = async_status(e.status);
    } catch (const std::exception& e) {
      if (error != nullptr) *error = e.what();
    } catch (...) {
      if (error != nullptr) *error = "unknown exception";
    }
    return false;
  }
  auto job = std::make_shared<Job>();
  job->n = n;
  job->fn = &fn;
  job->record = record;
  Pool& p = pool();
  std::call_once(p.started, start_pool);
  bool wake = false;
  {
    std::lock_guard<std::mutex> lk(p.mu);
    p.jobs.push_back(job);
    p.posted.fetch_add(1, std::memory_order_release);
    wake = p.sleepers > 0;
  }
  if (wake) p.cv.notify_all();
  work_on(*job, ub);
  auto finished = [&] { return job->done.load(std::memory_order_acquire) == job->n; };
  if (!spin_until(finished, config().stream_spin_us)) {
    std::unique_lock<std::mutex> lk(job->mu);
    job->cv.wait(lk, finished);
  }
  if (!job->failed.load()) return true;
  std::lock_guard<std::mutex> lk(job->mu);
  if (error != nullptr) *error = job->error;
  if (status != nullptr) *status = job->status;
  return false;
}

namespace {
constexpr std::size_t kParallelCopyThreshold = 4u << 20;  // below: one thread is as fast
constexpr std::size_t kMinChunk = 1u << 20;

std::size_t chunk_for(std::size_t bytes) {
  const std::size_t parts = static_cast<std::size_t>(config().core_threads + 1) * 2;
  std::size_t chunk = std::max(kMinChunk, bytes / parts);
  return (chunk + 4095) / 4096 * 4096;
}
}  // namespace

void parallel_memcpy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  const auto d0 = reinterpret_cast<std::uintptr_t>(dst), s0 = reinterpret_cast<std::uintptr_t>(src);
  const bool overlap = d0 < s0 + bytes && s0 < d0 + bytes;
  if (bytes <= kParallelCopyThreshold || overlap) {
    std::memmove(dst, src, bytes);
    return;
  }
  const std::size_t chunk = chunk_for(bytes);
  const auto n = static_cast<std::uint32_t>((bytes + chunk - 1) / chunk);
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  run_blocks(n, [=](const BlockContext& ctx) {
    const std::size_t off = ctx.block_idx * chunk;
    std::memcpy(d + off, s + off, std::min(chunk, bytes - off));
  }, nullptr);
}

void parallel_memset(void* dst, int value, std::size_t bytes) {
  if (bytes == 0) return;
  if (bytes <= kParallelCopyThreshold) {
    std::memset(dst, value, bytes);
    return;
  }
  const std::size_t chunk = chunk_for(bytes);
  const auto n = static_cast<std::uint32_t>((bytes + chunk - 1) / chunk);
  char* d = static_cast<char*>(dst);
  run_blocks(n, [=](const BlockContext& ctx) {
    const std::size_t off = ctx.block_idx * chunk;
    std::memset(d + off, value, std::min(chunk, bytes - off));
  }, nullptr);
}

}  // namespace detail
}  // namespace npu_sim
