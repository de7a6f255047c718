// Socket helpers (see socket_util.h).
#include "socket_util.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "transport.h"

namespace hccl_sim {

std::string local_address() {
  if (const char* a = std::getenv("NPU_SIM_HCCL_SOCKET_ADDR")) return a;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  std::string out = "127.0.0.1";
  if (getaddrinfo(host, nullptr, &hints, &res) == 0 && res) {
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof(buf));
    out = buf;
    freeaddrinfo(res);
  }
  return out;
}

bool io_full(int fd, void* buf, std::size_t n, bool is_send, std::chrono::steady_clock::time_point deadline) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    pollfd pfd{fd, static_cast<short>(is_send ? POLLOUT : POLLIN), 0};
    // Rounded up: a false return with time left means EOF or an error, never a timeout (callers tell them apart).
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || poll(&pfd, 1, static_cast<int>(left.count())) <= 0) return false;
    const ssize_t r = is_send ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
    if (r <= 0) {
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      return false;
    }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

int listen_any(int backlog, uint16_t* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw CommError(std::string("hccl: socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, backlog) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    throw CommError("hccl: cannot listen on a TCP port: " + why);
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

int connect_until(const std::string& ip, uint16_t port, std::chrono::steady_clock::time_point deadline) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  if (inet_pton(AF_INET, ip.c_str(), &to.sin_addr) != 1) throw CommError("hccl: bad IPv4 address '" + ip + "'");
  for (;;) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw CommError(std::string("hccl: socket: ") + std::strerror(errno));
    if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) == 0) return fd;
    close(fd);
    if (std::chrono::steady_clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace hccl_sim
