// TCP transport for ranks on different hosts (or forced with NPU_SIM_HCCL_TRANSPORT=tcp): one connection
// per pair, addresses exchanged through the rendezvous, every message framed by a validated MsgHeader.
#pragma once

#include "transport.h"

namespace hccl_sim {

// `connect_timeout` bounds listening, connecting and the hello exchange. Connects to the ranks in
// `remote` only (all others when it lists every rank).
std::unique_ptr<Transport> make_tcp_transport(Rendezvous& rv, const std::string& prefix, int rank, int size,
                                              std::chrono::milliseconds connect_timeout, const std::vector<int>& remote);

}  // namespace hccl_sim
