// NpuEvent: the one RAII owner of a runtime event in torch code (copies, collectives, Work, the pinned
// host allocator), so an exception between creating and destroying an event never leaks it.
#pragma once

#include <utility>

#include "core/npu_error.h"
#include "npu_sim/runtime.h"

namespace torch_npu_sim {

class NpuEvent {
 public:
  NpuEvent() = default;  // empty: owns nothing
  // Creates an event (NPU_CHECK on failure).
  static NpuEvent create(unsigned flags = npu_sim::kEventDefault) {
    NpuEvent e;
    NPU_CHECK(npu_sim::event_create(&e.event_, flags));
    return e;
  }
  // Creates an event and records it on `stream` now.
  static NpuEvent recorded_on(npu_sim::Stream stream) {
    NpuEvent e = create();
    NPU_CHECK(npu_sim::event_record(e.event_, stream));
    return e;
  }
  NpuEvent(NpuEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  NpuEvent& operator=(NpuEvent&& other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }
  NpuEvent(const NpuEvent&) = delete;
  NpuEvent& operator=(const NpuEvent&) = delete;
  ~NpuEvent() { reset(); }

  npu_sim::Event get() const { return event_; }
  explicit operator bool() const { return event_ != nullptr; }
  void reset() {
    if (event_ != nullptr) (void)npu_sim::event_destroy(std::exchange(event_, nullptr));
  }

 private:
  npu_sim::Event event_ = nullptr;
};

}  // namespace torch_npu_sim
