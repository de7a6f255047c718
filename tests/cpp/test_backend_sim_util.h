// Shared helpers for the backend_sim gtests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "npu_sim/runtime.h"

#define ASSERT_OK(expr)                                                                            \
  do {                                                                                             \
    const ::npu_sim::Status s_ = (expr);                                                           \
    ASSERT_EQ(s_, ::npu_sim::Status::kSuccess)                                                     \
        << #expr << " -> " << ::npu_sim::status_name(s_) << ": " << ::npu_sim::last_error_message(); \
  } while (0)

#define EXPECT_OK(expr)                                                                            \
  do {                                                                                             \
    const ::npu_sim::Status s_ = (expr);                                                           \
    EXPECT_EQ(s_, ::npu_sim::Status::kSuccess)                                                     \
        << #expr << " -> " << ::npu_sim::status_name(s_) << ": " << ::npu_sim::last_error_message(); \
  } while (0)

namespace npu_sim_test {

// A one-shot gate: wait() blocks until open() (or the timeout, which returns false).
class Gate {
 public:
  void open() {
    std::lock_guard<std::mutex> lk(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool wait(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lk(mu_);
    return cv_.wait_for(lk, timeout, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace npu_sim_test
