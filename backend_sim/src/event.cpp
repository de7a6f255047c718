// Events: the event registry, record (a marker op on the stream that stamps the time when the worker
// passes it), query/synchronize against the stream's completed sequence, stream_wait_event, elapsed.
//
// Lock order: EventImpl::mu may be held while taking StreamImpl::mu (record enqueues under the event
// lock); never the reverse. Stream workers run ops without holding StreamImpl::mu.
#include <shared_mutex>
#include <unordered_map>

#include "internal.h"

namespace npu_sim {
namespace detail {
namespace {

// Owns one shared_ptr per live event; `mu` protects the map only.
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
  bool has_time = false;
  std::chrono::steady_clock::time_point time;
  WaitTrail trail;
};
RecordState snapshot(EventImpl& e) {
  std::lock_guard<std::mutex> lk(e.mu);
  return RecordState{e.stream, e.seq, e.has_time, e.time, e.trail};
}

bool stream_reached(StreamImpl& s, std::uint64_t seq) {
  return s.completed_seq.load(std::memory_order_acquire) >= seq;
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
  std::lock_guard<std::mutex> lk(e->mu);
  const std::uint64_t gen = e->generation + 1;
  const bool timing = (e->flags & kEventEnableTiming) != 0;
  std::uint64_t seq = 0;
  detail::WaitTrail trail;
  NPU_SIM_RETURN_IF_ERROR(detail::enqueue(
      "event_record", *s,
      [weak, gen, timing]() -> std::string {
        if (!timing) return "";
        const auto now = std::chrono::steady_clock::now();
        if (auto ev = weak.lock()) {
          std::lock_guard<std::mutex> g(ev->mu);
          if (ev->generation == gen) {  // a newer record supersedes this marker
            ev->time = now;
            ev->has_time = true;
          }
        }
        return "";
      },
      &seq, {detail::OpRole::kRecord}, &trail));
  e->generation = gen;
  e->stream = s;
  e->seq = seq;
  e->trail = trail;
  e->has_time = false;
  return Status::kSuccess;
}

Status event_query(Event event) {
  Status st;
  auto e = detail::resolve_event("event_query", "event", event, &st);
  if (!e) return st;
  const detail::RecordState r = detail::snapshot(*e);
  if (!r.stream) return Status::kSuccess;  // never recorded counts as complete
  NPU_SIM_CHECK(detail::stream_reached(*r.stream, r.seq), Status::kNotReady,
                "event_query: event %p has not completed yet", static_cast<void*>(event));
  return Status::kSuccess;
}

Status event_synchronize(Event event) {
  Status st;
  auto e = detail::resolve_event("event_synchronize", "event", event, &st);
  if (!e) return st;
  const detail::RecordState r = detail::snapshot(*e);
  if (!r.stream) return Status::kSuccess;
  NPU_SIM_RETURN_IF_ERROR(detail::wait_for_seq("event_synchronize", *r.stream, r.seq));
  return detail::peek_pending_error(*r.stream);
}

Status stream_wait_event(Stream stream, Event event) {
  Status st;
  auto s = detail::resolve_stream("stream_wait_event", stream, &st);
  if (!s) return st;
  auto e = detail::resolve_event("stream_wait_event", "event", event, &st);
  if (!e) return st;
  const detail::RecordState r = detail::snapshot(*e);
  // Never recorded, recorded on the same (in-order) stream, or already complete: nothing to wait for.
  if (!r.stream || r.stream == s || detail::stream_reached(*r.stream, r.seq)) return Status::kSuccess;
  // Nothing but records and waits for `s` itself left before the event: `s` runs in order, so those waits
  // hold before anything enqueued on `s` from now on runs (see WaitTrail).
  if (detail::stream_reached(*r.stream, r.trail.work_seq) && !r.trail.mixed &&
      (r.trail.waits_on == nullptr || r.trail.waits_on == s.get()))
    return Status::kSuccess;
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
  }, nullptr, {detail::OpRole::kWait, src.get()}));
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
  const detail::RecordState ra = detail::snapshot(*a);
  const detail::RecordState rb = detail::snapshot(*b);
  NPU_SIM_CHECK(ra.stream && rb.stream, Status::kInvalidValue,
                "event_elapsed_time: %s event was never recorded (expected both to be recorded)",
                ra.stream ? "the end" : "the start");
  NPU_SIM_CHECK(ra.has_time && rb.has_time, Status::kNotReady,
                "event_elapsed_time: %s event has not completed yet", ra.has_time ? "the end" : "the start");
  *ms = std::chrono::duration<float, std::milli>(rb.time - ra.time).count();
  return Status::kSuccess;
}

}  // namespace npu_sim
