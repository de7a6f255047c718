// The hierarchical transport of a job spanning hosts: shared memory to the ranks of this host, TCP to the
// others, behind the one Transport interface so every algorithm runs over it unchanged.
#pragma once

#include "transport.h"

namespace hccl_sim {

// `local[r]` is true for the ranks on this host (this rank included). Takes ownership of both transports:
// `shm` reaches exactly the local ranks, `tcp` exactly the others.
std::unique_ptr<Transport> make_hybrid_transport(int rank, int size, std::vector<char> local,
                                                 std::unique_ptr<Transport> shm, std::unique_ptr<Transport> tcp);

}  // namespace hccl_sim
