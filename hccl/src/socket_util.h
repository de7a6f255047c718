// Blocking-with-deadline socket helpers shared by the TCP transport and the bootstrap (torch-free).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace hccl_sim {

// This host's IPv4 address for peers (NPU_SIM_HCCL_SOCKET_ADDR overrides), "127.0.0.1" if none resolves.
std::string local_address();
// Sends or receives exactly n bytes before `deadline`; false on timeout, EOF or a socket error.
bool io_full(int fd, void* buf, std::size_t n, bool is_send, std::chrono::steady_clock::time_point deadline);
// A listening socket on all interfaces and an ephemeral port (written to *port). Throws CommError.
int listen_any(int backlog, uint16_t* port);
// A connected socket to ip:port, retrying until `deadline` (the listener may not be up yet); -1 on timeout.
int connect_until(const std::string& ip, uint16_t port, std::chrono::steady_clock::time_point deadline);

}  // namespace hccl_sim
