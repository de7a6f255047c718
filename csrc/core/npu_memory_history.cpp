// Memory history: what was allocated and freed, when and from where (see npu_memory_history.h).
// Lock rule: `mu` is a leaf. record_* may run on any thread (a stream worker frees an op's captures);
// stacks are gathered before taking it, and Python frames only where the thread can hold the GIL.
#include "core/npu_memory_history.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <torch/csrc/profiler/combined_traceback.h>

// From torch/csrc/profiler/python/combined_traceback.h (libtorch_python), declared here because that header
// also pulls in nlohmann/json, which the torch wheel does not ship.
namespace torch {
TORCH_PYTHON_API std::vector<pybind11::object> py_symbolize(std::vector<CapturedTraceback*>& to_symbolize);
TORCH_PYTHON_API void installCapturedTracebackPython();
}  // namespace torch

#include "core/npu_allocator.h"
#include "core/npu_stream.h"

namespace torch_npu_sim::memory_history {
namespace {

namespace py = pybind11;
using Traceback = std::shared_ptr<torch::CapturedTraceback>;

enum Mode : int { kOff = 0, kState = 1, kAll = 2 };  // _record_memory_history's `enabled`

struct Entry {
  const char* action;  // "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free"
  uintptr_t address;
  std::size_t size;
  uintptr_t stream;
  int64_t time_us;
  Traceback frames;  // may be null
};

struct History {
  std::atomic<int> mode{kOff};
  std::mutex mu;  // guards everything below (leaf)
  bool stacks_for_live = false;   // context "state", "alloc" or "all": a live block keeps its alloc stack
  bool stacks_for_alloc = false;  // "alloc" or "all": alloc trace entries carry it
  bool stacks_for_free = false;   // "all": free entries carry the freeing stack
  bool cpp = false;               // stacks "all": C++ frames as well as Python ones
  std::size_t max_entries = SIZE_MAX;
  std::vector<std::deque<Entry>> traces;                 // per device, oldest first
  std::unordered_map<uintptr_t, Traceback> live_frames;  // address -> stack of its allocation
};

History& history() {
  static History* h = new History();  // lives for the process: frees can come during interpreter shutdown
  return *h;
}

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void push(History& h, int device, Entry e) {
  if (h.traces.size() <= static_cast<std::size_t>(device)) h.traces.resize(device + 1);
  auto& t = h.traces[device];
  t.push_back(std::move(e));
  while (t.size() > h.max_entries) t.pop_front();
}

// Stack of the calling thread, or null (no stacks wanted).
Traceback gather(bool wanted, bool cpp) {
  if (!wanted) return nullptr;
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/false, cpp);
}

}  // namespace

bool enabled() noexcept { return history().mode.load(std::memory_order_relaxed) != kOff; }

namespace {

void alloc_entry(int device, uintptr_t address, std::size_t size, npu_sim::Stream stream) {
  History& h = history();
  bool want, cpp;
  {
    std::lock_guard<std::mutex> lk(h.mu);
    want = h.stacks_for_live || h.stacks_for_alloc;
    cpp = h.cpp;
  }
  Traceback tb = gather(want, cpp);
  std::lock_guard<std::mutex> lk(h.mu);
  const int mode = h.mode.load(std::memory_order_relaxed);
  if (mode == kOff) return;
  if (h.stacks_for_live) h.live_frames[address] = tb;
  if (mode == kAll) {
    push(h, device, {"alloc", address, size, reinterpret_cast<uintptr_t>(stream), now_us(),
                     h.stacks_for_alloc ? tb : nullptr});
  }
}

void free_entry(int device, uintptr_t address, std::size_t size, npu_sim::Stream stream) {
  History& h = history();
  bool want, cpp;
  {
    std::lock_guard<std::mutex> lk(h.mu);
    want = h.stacks_for_free;
    cpp = h.cpp;
  }
  Traceback tb = gather(want, cpp);
  Traceback dropped;  // released after the lock: a traceback's destructor may touch Python state
  std::lock_guard<std::mutex> lk(h.mu);
  auto it = h.live_frames.find(address);
  if (it != h.live_frames.end()) {
    dropped = std::move(it->second);
    h.live_frames.erase(it);
  }
  if (h.mode.load(std::memory_order_relaxed) != kAll) return;
  const auto s = reinterpret_cast<uintptr_t>(stream);
  const int64_t t = now_us();
  // The block is reusable at once unless record_stream holds it; the trace does not see those events.
  push(h, device, {"free_requested", address, size, s, t, tb});
  push(h, device, {"free_completed", address, size, s, t, tb});
}

// The caching allocator's segment events (no stacks: the observer may run under the allocator's mutex).
void segment_entry(bool alloc, int device, uintptr_t address, std::size_t size, npu_sim::Stream stream) {
  History& h = history();
  if (h.mode.load(std::memory_order_relaxed) != kAll) return;
  std::lock_guard<std::mutex> lk(h.mu);
  if (h.mode.load(std::memory_order_relaxed) != kAll) return;
  push(h, device, {alloc ? "segment_alloc" : "segment_free", address, size, reinterpret_cast<uintptr_t>(stream),
                   now_us(), nullptr});
}

}  // namespace

// The history is a diagnostic: a failure to record (no memory for a stack) must not fail the allocation
// or the free, so it is reported once and the entry dropped.
void record_alloc(int device, uintptr_t address, std::size_t size, npu_sim::Stream stream) {
  try {
    alloc_entry(device, address, size, stream);
  } catch (const std::exception& e) {
    TORCH_WARN_ONCE("npu memory history: an allocation was not recorded: ", e.what());
  }
}

void record_free(int device, uintptr_t address, std::size_t size, npu_sim::Stream stream) {
  try {
    free_entry(device, address, size, stream);
  } catch (const std::exception& e) {
    TORCH_WARN_ONCE("npu memory history: a free was not recorded: ", e.what());
  }
}

namespace {

void set_history(const std::string& enabled, const std::string& context, const std::string& stacks,
                 int64_t max_entries) {
  int mode;
  if (enabled == "none") mode = kOff;
  else if (enabled == "state") mode = kState;
  else if (enabled == "all") mode = kAll;
  else TORCH_CHECK_VALUE(false, "_record_memory_history: expected enabled to be None, 'state' or 'all', got '", enabled, "'");
  TORCH_CHECK_VALUE(context == "none" || context == "state" || context == "alloc" || context == "all",
                    "_record_memory_history: expected context to be None, 'state', 'alloc' or 'all', got '",
                    context, "'");
  TORCH_CHECK_VALUE(stacks == "python" || stacks == "all",
                    "_record_memory_history: expected stacks to be 'python' or 'all', got '", stacks, "'");
  TORCH_CHECK_VALUE(max_entries > 0, "_record_memory_history: expected max_entries > 0, got ", max_entries);
  if (mode != kOff && context != "none") torch::installCapturedTracebackPython();
  npu_alloc::set_segment_observer([](bool alloc, int device, uintptr_t address, std::size_t size,
                                     npu_sim::Stream stream) noexcept {
    try {
      segment_entry(alloc, device, address, size, stream);
    } catch (const std::exception&) {  // a diagnostic; the allocation goes on (see record_alloc)
    }
  });
  History& h = history();
  std::vector<std::deque<Entry>> old_traces;
  std::unordered_map<uintptr_t, Traceback> old_frames;
  {
    std::lock_guard<std::mutex> lk(h.mu);
    h.stacks_for_live = context != "none";
    h.stacks_for_alloc = context == "alloc" || context == "all";
    h.stacks_for_free = context == "all";
    h.cpp = stacks == "all";
    h.max_entries = static_cast<std::size_t>(max_entries);
    for (auto& t : h.traces) {
      while (t.size() > h.max_entries) t.pop_front();
    }
    if (mode == kOff) {  // as on CUDA: turning history off forgets it
      old_traces.swap(h.traces);
      old_frames.swap(h.live_frames);
    }
    h.mode.store(mode, std::memory_order_relaxed);
  }
}

// The snapshot as torch.cuda.memory._snapshot() returns it: segments with their blocks (and the stack
// of each live block) plus one trace per device.
py::dict snapshot() {
  History& h = history();
  std::vector<npu_alloc::SegmentInfo> segments = caching_allocator().snapshot();
  std::vector<std::vector<Entry>> traces;
  std::unordered_map<uintptr_t, Traceback> live;
  {
    std::lock_guard<std::mutex> lk(h.mu);
    for (const auto& t : h.traces) traces.emplace_back(t.begin(), t.end());
    live = h.live_frames;
  }
  // Symbolize every stack once, in one call (frames are shared between entries).
  std::vector<torch::CapturedTraceback*> to_symbolize;
  std::unordered_map<torch::CapturedTraceback*, std::size_t> index;
  auto want = [&](const Traceback& tb) {
    if (tb && index.emplace(tb.get(), to_symbolize.size()).second) to_symbolize.push_back(tb.get());
  };
  for (const auto& t : traces) for (const auto& e : t) want(e.frames);
  for (const auto& [addr, tb] : live) want(tb);
  std::vector<py::object> symbolized = torch::py_symbolize(to_symbolize);
  auto frames_of = [&](const Traceback& tb) -> py::object {
    if (!tb) return py::list();
    return symbolized.at(index.at(tb.get()));
  };

  py::list segs;
  for (const auto& s : segments) {
    py::dict d;
    d["device"] = s.device;
    d["address"] = s.address;
    d["total_size"] = s.total_size;
    d["allocated_size"] = s.allocated_size;
    d["active_size"] = s.active_size;
    d["requested_size"] = s.requested_size;
    d["stream"] = s.stream;
    d["segment_type"] = s.is_large ? "large" : "small";
    d["segment_pool_id"] = py::make_tuple(0, 0);
    d["is_expandable"] = false;
    d["frames"] = py::list();
    py::list blocks;
    for (const auto& b : s.blocks) {
      py::dict bd;
      bd["address"] = b.address;
      bd["size"] = b.size;
      bd["requested_size"] = b.requested_size;
      bd["state"] = b.allocated ? "active_allocated" : (b.active ? "active_pending_free" : "inactive");
      auto it = b.allocated ? live.find(b.address) : live.end();
      bd["frames"] = it != live.end() ? frames_of(it->second) : py::list();
      blocks.append(bd);
    }
    d["blocks"] = blocks;
    segs.append(d);
  }
  py::list device_traces;
  const auto n = std::max<std::size_t>(traces.size(), static_cast<std::size_t>(device_count()));
  for (std::size_t dev = 0; dev < n; ++dev) {
    py::list trace;
    if (dev < traces.size()) {
      for (const auto& e : traces[dev]) {
        py::dict d;
        d["action"] = e.action;
        d["addr"] = e.address;
        d["size"] = e.size;
        d["stream"] = e.stream;
        d["time_us"] = e.time_us;
        d["frames"] = frames_of(e.frames);
        trace.append(d);
      }
    }
    device_traces.append(trace);
  }
  py::dict out;
  out["segments"] = segs;
  out["device_traces"] = device_traces;
  out["allocator_settings"] = py::dict();
  return out;
}

}  // namespace

void bind(py::module_& m) {
  m.def("_record_memory_history", &set_history);
  m.def("_memory_history_snapshot", &snapshot);
}

}  // namespace torch_npu_sim::memory_history
