// The collective library's knobs, read once per communicator from the environment (HCCL_*, NPU_SIM_HCCL_*);
// documented in the README's environment table. The process group's own (error handling, blocking wait)
// are read by the torch glue, as torch_npu's ProcessGroupHCCL reads them.
#pragma once

#include <chrono>
#include <string>

#include "collectives.h"

namespace hccl_sim {

enum class TransportKind { kAuto, kShm, kTcp };

struct HcclConfig {
  Algo algo = Algo::kAuto;                            // HCCL_ALGO
  std::chrono::milliseconds exec_timeout{0};          // HCCL_EXEC_TIMEOUT (s); 0 = process-group timeout only
  std::chrono::milliseconds connect_timeout{120000};  // HCCL_CONNECT_TIMEOUT (s)
  std::size_t ring_bytes = 4u << 20;                  // HCCL_BUFFSIZE (MB), per peer ring, power of two
  TransportKind transport = TransportKind::kAuto;     // NPU_SIM_HCCL_TRANSPORT
  bool peer_read = true;                              // NPU_SIM_HCCL_PEER_READ (shm: peers' HBM mapped: peer reads, fullmesh)

  static HcclConfig from_env();  // throws CommError for malformed values
};

const char* transport_kind_name(TransportKind k);

}  // namespace hccl_sim
