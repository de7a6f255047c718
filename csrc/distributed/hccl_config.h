// The hccl backend's knobs, read once per communicator from the environment (HCCL_*, TORCH_HCCL_*,
// NPU_SIM_HCCL_*); documented in the README's environment table.
#pragma once

#include <chrono>
#include <string>

#include "distributed/collectives.h"

namespace hccl_sim {

enum class TransportKind { kAuto, kShm, kTcp };

struct HcclConfig {
  Algo algo = Algo::kAuto;                            // HCCL_ALGO
  std::chrono::milliseconds exec_timeout{0};          // HCCL_EXEC_TIMEOUT (s); 0 = process-group timeout only
  std::chrono::milliseconds connect_timeout{120000};  // HCCL_CONNECT_TIMEOUT (s)
  std::size_t ring_bytes = 4u << 20;                  // HCCL_BUFFSIZE (MB), per peer ring, power of two
  bool blocking_wait = false;                         // TORCH_HCCL_BLOCKING_WAIT
  int async_error_handling = 0;                       // TORCH_HCCL_ASYNC_ERROR_HANDLING (1: abort process)
  bool desync_debug = false;                          // TORCH_HCCL_DESYNC_DEBUG
  TransportKind transport = TransportKind::kAuto;     // NPU_SIM_HCCL_TRANSPORT
  bool peer_read = true;                              // NPU_SIM_HCCL_PEER_READ (shm: peers' HBM mapped: peer reads, fullmesh)

  static HcclConfig from_env();  // throws CommError for malformed values
};

const char* transport_kind_name(TransportKind k);

}  // namespace hccl_sim
