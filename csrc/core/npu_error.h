// The one error path from the runtime into torch: NPU_CHECK turns a non-success npu_sim::Status into a
// Python-visible error naming the call: torch.OutOfMemoryError for kOutOfMemory,
// torch.distributed.DistBackendError for kCommError (a failed collective, sticky on its device),
// RuntimeError otherwise.
#pragma once

#include <c10/util/Exception.h>

#include "npu_sim/runtime.h"

#define NPU_CHECK(expr)                                                                           \
  do {                                                                                            \
    const ::npu_sim::Status npu_status__ = (expr);                                                \
    if (C10_UNLIKELY(npu_status__ != ::npu_sim::Status::kSuccess)) {                              \
      TORCH_CHECK_WITH(OutOfMemoryError, npu_status__ != ::npu_sim::Status::kOutOfMemory,         \
                       "NPU out of memory: ", ::npu_sim::last_error_message());                   \
      TORCH_CHECK_WITH(DistBackendError, npu_status__ != ::npu_sim::Status::kCommError,           \
                       "NPU error (", ::npu_sim::status_name(npu_status__), "): ",                \
                       ::npu_sim::last_error_message());                                          \
      TORCH_CHECK(false, "NPU error (", ::npu_sim::status_name(npu_status__), "): ",              \
                  ::npu_sim::last_error_message());                                               \
    }                                                                                             \
  } while (0)
