// The hccl backend's knobs, read once per communicator from the environment (HCCL_*, TORCH_HCCL_*,
// NPU_SIM_HCCL_*); documented in the README's environment table.
#pragma once

#include <chrono>
#include <string>

#include "distributed/collectives.h"

namespace hccl_sim {

enum class TransportKind { kAuto, kShm, kTcp };

// What a failed collective does to the process (NCCL's values; torch_npu's default is 1 for torch >= 2.1):
// 0 nothing more (the error reaches Work.wait(), its future and every later synchronize), 2 also abort the
// communicator (pending operations fail at once), 1 abort it and tear the process down (exit code 1,
// after printing rank, op, sequence number and cause), 3 tear down at once without the abort.
// A blocking wait (HCCL_BLOCKING_WAIT=1) reports errors to wait() instead, so it turns this to 0.
enum AsyncErrorHandling : int { kNoHandling = 0, kTearDown = 1, kAbortComm = 2, kSkipCleanUp = 3 };

struct HcclConfig {
  Algo algo = Algo::kAuto;                            // HCCL_ALGO
  std::chrono::milliseconds exec_timeout{0};          // HCCL_EXEC_TIMEOUT (s); 0 = process-group timeout only
  std::chrono::milliseconds connect_timeout{120000};  // HCCL_CONNECT_TIMEOUT (s)
  std::size_t ring_bytes = 4u << 20;                  // HCCL_BUFFSIZE (MB), per peer ring, power of two
  bool blocking_wait = false;                         // HCCL_BLOCKING_WAIT (or TORCH_HCCL_BLOCKING_WAIT)
  int async_error_handling = kTearDown;               // HCCL_ASYNC_ERROR_HANDLING (or TORCH_HCCL_...), see below
  bool blocking_wait_overrides = false;               // both were set: blocking wait wins (a warning says so)
  bool desync_debug = false;                          // HCCL_DESYNC_DEBUG (or TORCH_HCCL_DESYNC_DEBUG)
  TransportKind transport = TransportKind::kAuto;     // NPU_SIM_HCCL_TRANSPORT
  bool peer_read = true;                              // NPU_SIM_HCCL_PEER_READ (shm: peers' HBM mapped: peer reads, fullmesh)

  static HcclConfig from_env();  // throws CommError for malformed values
};

const char* transport_kind_name(TransportKind k);

}  // namespace hccl_sim
