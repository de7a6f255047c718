// Events: the event registry, record (a marker op on the stream that stamps the time when the worker
// passes it), completion (event_complete: the stream passed the marker, or everything the marker stands
// for is done), query/synchronize, stream_wait_event, elapsed time.
//
// Locks: EventImpl::mu and StreamImpl::mu are never held together. event_record reserves a generation
// under the event's mu, enqueues the marker with no event lock held (the enqueue takes the stream's mu,
// and the stream's worker takes the event's mu in timing markers), then publishes under the event's mu.
#include <shared_mutex>
#include <unordered_map>

#include "internal.h"

namespace npu_sim {
namespace detail {
namespace {

// Owns one shared_ptr per live event; `mu` protects the map only (held to look up, insert or erase;
// nothing else is locked or waited for under it).
struct EventRegistry {
  std::shared_mutex mu;
  std::unordered_map<const EventImpl*, std::shared_ptr<EventImpl>> events;
};
EventRegistry& event_registry() {
  static EventRegistry* r = new EventRegistry();  // never destroyed (process-lifetime singleton)
  return *r;
}

std::shared_ptr<EventImpl> resolve_event(const char* fn, const char* arg, Event e, Status* status) {
  *status = Status::kSuccess;
  if (e == nullptr) {
    *status = fail(Status::kInvalidValue, "%s: %s is null (expected an event from event_create)", fn, arg);
    return nullptr;
  }
  EventRegistry& r = event_registry();
  {
    std::shared_lock<std::shared_mutex> lk(r.mu);
    auto it = r.events.find(e);
    if (it != r.events.end()) return it->second;
  }
  *status = fail(Status::kInvalidHandle, "%s: %s %p is not a live event (destroyed or never created)", fn, arg,
                 static_cast<void*>(e));
  return nullptr;
}

// Snapshot of an event's last record.
struct RecordState {
  std::shared_ptr<StreamImpl> stream;  // null: never recorded
  std::uint64_t seq = 0;
  bool has_time = false;               // the marker of this record has run (timing events)
  std::chrono::steady_clock::time_point time;
  WaitTrail trail;
};
RecordState snapshot(EventImpl& e) {
  std::lock_guard<std::mutex> lk(e.mu);
  const bool has_time = e.stream != nullptr && e.time_gen == e.generation;
  return RecordState{e.stream, e.seq, has_time, e.time, e.trail};
}

bool stream_reached(StreamImpl& s, std::uint64_t seq) {
  return s.completed_seq.load(std::memory_order_acquire) >= seq;
}

// Whether everything the record stands for is done: its stream passed the marker, or passed its last
// real work (trail.work_seq) with only records and waits after it, all for one stream B that has reached
// the highest seq waited for (or is gone, having run everything). The marker's worker may still be
// short of it (a wait op not yet returned), but nothing left before the marker can fail or change memory.
// `waiter`: a stream for which waits on itself count as satisfied, because it runs in order and every
// such wait is for work already enqueued on it (stream_wait_event; null for query/synchronize).
// One rule for query, synchronize and stream_wait_event, so that an event a synchronized stream waited
// for, and every event recorded before it on its stream, reports complete.
bool event_complete(const RecordState& r, const StreamImpl* waiter) {
  if (!r.stream || stream_reached(*r.stream, r.seq)) return true;
  const WaitTrail& t = r.trail;
  if (t.mixed || !stream_reached(*r.stream, t.work_seq)) return false;
  if (!t.waits) return true;
  std::shared_ptr<StreamImpl> b = t.waits_on.lock();
  return b == nullptr || b.get() == waiter || stream_reached(*b, t.max_waited_seq);
}

}  // namespace
}  // namespace detail

using detail::fail;

Status event_create(Event* event, unsigned flags) {
  NPU_SIM_CHECK(event != nullptr, Status::kInvalidValue, "event_create: event is null (expected a pointer)");
  NPU_SIM_CHECK((flags & ~static_cast<unsigned>(kEventEnableTiming)) == 0, Status::kInvalidValue,
                "event_create: flags 0x%x has unknown bits (expected kEventDefault or kEventEnableTiming)", flags);
  auto e = std::make_shared<EventImpl>();
  e->flags = flags;
  detail::EventRegistry& r = detail::event_registry();
  std::unique_lock<std::shared_mutex> lk(r.mu);
  r.events.emplace(e.get(), e);
  *event = e.get();
  return Status::kSuccess;
}

Status event_destroy(Event event) {
  NPU_SIM_CHECK(event != nullptr, Status::kInvalidValue, "event_destroy: event is null (expected an event)");
  detail::EventRegistry& r = detail::event_registry();
  std::unique_lock<std::shared_mutex> lk(r.mu);
  NPU_SIM_CHECK(r.events.erase(event) == 1, Status::kInvalidHandle,
                "event_destroy: event %p is not a live event (destroyed or never created)",
                static_cast<void*>(event));
  return Status::kSuccess;  // a marker still in flight keeps its own reference
}

Status event_record(Event event, Stream stream) {
  Status st;
  auto e = detail::resolve_event("event_record", "event", event, &st);
  if (!e) return st;
  auto s = detail::resolve_stream("event_record", stream, &st);
  if (!s) return st;
  std::weak_ptr<EventImpl> weak = e;
  std::uint64_t gen = 0;
  {
    std::lock_guard<std::mutex> lk(e->mu);
    gen = ++e->reserved_gen;
  }
  const bool timing = (e->flags & kEventEnableTiming) != 0;
  std::uint64_t seq = 0;
  detail::WaitTrail trail;
  // Enqueued with no event lock held. The marker may run before the record is published below: it stamps
  // its generation, which counts once published (and a marker older than the newest stamp does nothing).
  NPU_SIM_RETURN_IF_ERROR(detail::enqueue(
      "event_record", *s,
      [weak, gen, timing]() -> std::string {
        if (!timing) return "";
        const auto now = std::chrono::steady_clock::now();
        if (auto ev = weak.lock()) {
          std::lock_guard<std::mutex> g(ev->mu);
          if (gen > ev->time_gen) {
            ev->time_gen = gen;
            ev->time = now;
          }
        }
        return "";
      },
      &seq, {detail::OpRole::kRecord}, &trail));
  std::lock_guard<std::mutex> lk(e->mu);
  if (gen > e->generation) {  // concurrent records of one event: the later reservation wins
    e->generation = gen;
    e->stream = std::move(s);
    e->seq = seq;
    e->trail = std::move(trail);
  }
  return Status::kSuccess;
}

Status event_query(Event event) {
  Status st;
  auto e = detail::resolve_event("event_query", "event", event, &st);
  if (!e) return st;
  const detail::RecordState r = detail::snapshot(*e);
  if (!r.stream) return Status::kSuccess;  // never recorded counts as complete
  NPU_SIM_CHECK(detail::event_complete(r, nullptr), Status::kNotReady,
                "event_query: event %p has not completed yet", static_cast<void*>(event));
  return detail::device_error(r.stream->device);
}

Status event_synchronize(Event event) {
  Status st;
  auto e = detail::resolve_event("event_synchronize", "event", event, &st);
  if (!e) return st;
  const detail::RecordState r = detail::snapshot(*e);
  if (!r.stream) return Status::kSuccess;
  if (!detail::event_complete(r, nullptr)) {
    NPU_SIM_RETURN_IF_ERROR(detail::wait_for_seq("event_synchronize", *r.stream, r.seq));
  }
  return detail::device_error(r.stream->device);
}

Status stream_wait_event(Stream stream, Event event) {
  Status st;
  auto s = detail::resolve_stream("stream_wait_event", stream, &st);
  if (!s) return st;
  auto e = detail::resolve_event("stream_wait_event", "event", event, &st);
  if (!e) return st;
  const detail::RecordState r = detail::snapshot(*e);
  // Never recorded, recorded on the same (in-order) stream, or complete: nothing to wait for. Complete
  // includes nothing but records and waits for `s` itself left before the event: `s` runs in order, so
  // those waits hold before anything enqueued on `s` from now on runs (see WaitTrail).
  if (r.stream == s || detail::event_complete(r, s.get())) return Status::kSuccess;
  std::shared_ptr<StreamImpl> src = r.stream;
  const std::uint64_t seq = r.seq;
  NPU_SIM_RETURN_IF_ERROR(detail::enqueue("stream_wait_event", *s, [src, seq]() -> std::string {
    // Poll first: the other stream is usually a few microseconds from the event (a collective's end).
    if (detail::spin_until([&] { return detail::stream_reached(*src, seq); }, detail::config().stream_spin_us)) {
      return "";
    }
    std::unique_lock<std::mutex> lk(src->mu);
    detail::wait_done(*src, lk, seq);
    return "";
  }, nullptr, {detail::OpRole::kWait, src.get(), seq}));
  return detail::maybe_block("stream_wait_event", *s);
}

Status event_elapsed_time(float* ms, Event start, Event end) {
  NPU_SIM_CHECK(ms != nullptr, Status::kInvalidValue, "event_elapsed_time: ms is null (expected a pointer)");
  Status st;
  auto a = detail::resolve_event("event_elapsed_time", "start", start, &st);
  if (!a) return st;
  auto b = detail::resolve_event("event_elapsed_time", "end", end, &st);
  if (!b) return st;
  NPU_SIM_CHECK((a->flags & kEventEnableTiming) && (b->flags & kEventEnableTiming), Status::kInvalidValue,
                "event_elapsed_time: both events must be created with kEventEnableTiming (start %s, end %s)",
                (a->flags & kEventEnableTiming) ? "has it" : "does not", (b->flags & kEventEnableTiming) ? "has it" : "does not");
  detail::RecordState ra = detail::snapshot(*a);
  detail::RecordState rb = detail::snapshot(*b);
  NPU_SIM_CHECK(ra.stream && rb.stream, Status::kInvalidValue,
                "event_elapsed_time: %s event was never recorded (expected both to be recorded)",
                ra.stream ? "the end" : "the start");
  // A complete event whose marker has not run yet (see event_complete) gets its time in a moment: nothing
  // but satisfied waits and records is left before it.
  for (auto* r : {&ra, &rb}) {
    if (!r->has_time && detail::event_complete(*r, nullptr) &&
        detail::wait_for_seq("event_elapsed_time", *r->stream, r->seq) == Status::kSuccess) {
      *r = detail::snapshot(r == &ra ? *a : *b);
    }
  }
  NPU_SIM_CHECK(ra.has_time && rb.has_time, Status::kNotReady,
                "event_elapsed_time: %s event has not completed yet", ra.has_time ? "the end" : "the start");
  *ms = std::chrono::duration<float, std::milli>(rb.time - ra.time).count();
  return Status::kSuccess;
}

}  // namespace npu_sim
