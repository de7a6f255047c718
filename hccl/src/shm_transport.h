// Shared-memory transport for ranks on one host: one POSIX segment per rank (0600, random name, unlinked
// as soon as every peer has mapped it) holding a single-producer/single-consumer byte ring per peer.
#pragma once

#include "transport.h"

namespace hccl_sim {

// Creates this rank's segment, exchanges names through `rv` under `prefix`, maps the segments of the
// ranks in `local` (this host; other ranks are not reachable through it), waits until they have mapped,
// unlinks its own. `ring_bytes` is the per-peer ring (power of two). `hbm_device` >= 0: large messages
// from that device's memory are read by the receiver straight out of the sender's HBM (single copy),
// provided every local rank could map every other's (checked at set-up; the ring is used otherwise).
std::unique_ptr<Transport> make_shm_transport(Rendezvous& rv, const std::string& prefix, int rank, int size,
                                              std::size_t ring_bytes, const std::vector<int>& local, int hbm_device);
// True if `t` is a shared-memory transport that moves large messages by peer reads.
bool shm_peer_read_enabled(const Transport& t);

}  // namespace hccl_sim
