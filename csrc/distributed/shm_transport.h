// Shared-memory transport for ranks on one host: one POSIX segment per rank (0600, random name, unlinked
// as soon as every peer has mapped it) holding a single-producer/single-consumer byte ring per peer.
#pragma once

#include "distributed/transport.h"

namespace hccl_sim {

// Creates this rank's segment, exchanges names through `rv` under `prefix`, maps every peer's segment,
// waits until all have mapped, unlinks its own. `ring_bytes` is the per-peer ring (power of two).
std::unique_ptr<Transport> make_shm_transport(Rendezvous& rv, const std::string& prefix, int rank, int size,
                                              std::size_t ring_bytes);

}  // namespace hccl_sim
