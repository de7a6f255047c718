// HCCL's fullmesh inside one server for large messages (torch-free): with every rank on this host and the
// peers' device memory mapped (Transport::maps_peer_memory), a collective reads and writes the peers'
// buffers in place, as NPUs of one server do over their mesh links, instead of sending messages.
#pragma once

#include <vector>

#include "collectives.h"

namespace hccl_sim {

// True when the direct collectives may run for `c` (same answer on every rank): peer memory mapped, all
// ranks on one host, and the algorithm is auto or fullmesh.
bool direct_available(const CommContext& c);

// Each starts by exchanging buffer addresses, which also tells every rank that every other has entered
// the collective; they end with a barrier, after which no rank touches another's buffers. They return
// false (on every rank alike, having moved no data) when some rank's buffer is not in its shareable
// device memory; the caller then runs a message-based algorithm.
//
// all_reduce: rank r reduces chunk r of all ranks' buffers into its own (its own first, then the others
// in rank order) and copies the result into theirs: per rank, one read and one write of the buffer's
// bytes (the ring: 1.5 reads and 1 write).
bool direct_allreduce(CommContext& c, char* buf, std::size_t count, DType dt, ReduceKind op);
// all_gather: rank r writes its input into slot r of every rank's output: one read, n writes.
bool direct_allgather(CommContext& c, const void* in, const std::vector<void*>& out, std::size_t bytes);
// reduce_scatter: rank r reduces block r of every rank's input (its own first, then the others in rank
// order) into its output.
bool direct_reduce_scatter(CommContext& c, const std::vector<const void*>& in, void* out, std::size_t count,
                           DType dt, ReduceKind op);
// broadcast: rank r copies the root's chunk r into every other rank's buffer, so that all ranks share
// the copying (the root included).
bool direct_broadcast(CommContext& c, void* buf, std::size_t bytes, int root);

}  // namespace hccl_sim
