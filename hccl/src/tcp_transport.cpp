// TCP transport (see tcp_transport.h). Sockets are non-blocking after set-up; a frame is the 32-byte
// MsgHeader then exactly `bytes` payload bytes. A bad magic, a size other than the receiver expects, or
// EOF inside a frame is a CommError; reads never go past the current frame, so nothing can overflow.
#include "tcp_transport.h"
#include "socket_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

namespace hccl_sim {

namespace {

constexpr uint32_t kHelloMagic = 0x48454c4fu;
constexpr std::size_t kStaging = 256 << 10;
constexpr std::size_t kMaxIo = 4 << 20;

struct Hello {
  uint32_t magic;
  int32_t rank;
  uint64_t token;  // random per communicator, so a stray connection is rejected
};

[[noreturn]] void fail(const std::string& what) { throw CommError("hccl(tcp): " + what + ": " + std::strerror(errno)); }

struct Peer {
  int fd = -1;
  std::size_t send_hdr_off = 0;
  MsgHeader recv_hdr;
  std::size_t recv_hdr_off = 0;
  std::vector<char> staging;
  std::size_t fill = 0;
};

class TcpTransport final : public StreamTransport {
 public:
  TcpTransport(int rank, int size, const std::vector<int>& remote)
      : StreamTransport(rank, size), peers_(size), remote_(size, 0) {
    for (int r : remote) if (r >= 0 && r < size && r != rank) remote_[r] = 1;
  }
  ~TcpTransport() override {
    for (auto& p : peers_) if (p.fd >= 0) close(p.fd);
  }
  const char* name() const override { return "tcp"; }

  void setup(Rendezvous& rv, const std::string& prefix, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    uint16_t my_port = 0;
    const int lfd = listen_any(size_, &my_port);
    struct Closer { int fd; ~Closer() { close(fd); } } closer{lfd};
    const uint64_t token = rank_ == 0 ? std::strtoull(random_hex(8).c_str(), nullptr, 16) : 0;
    if (rank_ == 0) rv.set(prefix + "/tcp/token", std::to_string(token));
    const uint64_t group_token = std::strtoull(rv.get(prefix + "/tcp/token").c_str(), nullptr, 10);
    const std::string me = host_identity();
    rv.set(prefix + "/tcp/" + std::to_string(rank_),
           me + " " + local_address() + " " + std::to_string(my_port));
    // Higher ranks connect to lower ones; the kernel's backlog completes connects before accept().
    for (int r = 0; r < rank_; ++r) {
      if (!remote_[r]) continue;
      std::istringstream in(rv.get(prefix + "/tcp/" + std::to_string(r)));
      std::string host, ip;
      int port = 0;
      in >> host >> ip >> port;
      if (!in || port <= 0 || port > 65535) throw CommError("hccl(tcp): malformed address from rank " + std::to_string(r));
      const std::string target = host == me ? "127.0.0.1" : ip;
      const int fd = connect_until(target, static_cast<uint16_t>(port), deadline);
      if (fd < 0) {
        throw CommError("hccl(tcp): cannot connect to rank " + std::to_string(r) + " at " + target + ":" +
                        std::to_string(port) + " within HCCL_CONNECT_TIMEOUT");
      }
      Hello h{kHelloMagic, rank_, group_token};
      if (!io_full(fd, &h, sizeof(h), true, deadline)) { close(fd); fail("hello to rank " + std::to_string(r)); }
      peers_[r].fd = fd;
    }
    int expected = 0;
    for (int r = rank_ + 1; r < size_; ++r) expected += remote_[r];
    for (int n = 0; n < expected; ++n) {
      pollfd pfd{lfd, POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || poll(&pfd, 1, static_cast<int>(left.count())) <= 0)
        throw CommError("hccl(tcp): rank " + std::to_string(rank_) + " timed out waiting for peers to connect (HCCL_CONNECT_TIMEOUT)");
      int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) fail("accept");
      Hello h{};
      if (!io_full(fd, &h, sizeof(h), false, deadline) || h.magic != kHelloMagic || h.token != group_token ||
          h.rank <= rank_ || h.rank >= size_ || !remote_[h.rank] || peers_[h.rank].fd >= 0) {
        close(fd);
        --n;  // not one of ours (or malformed): ignore it and keep waiting
        continue;
      }
      peers_[h.rank].fd = fd;
    }
    for (auto& p : peers_) {
      if (p.fd < 0) continue;
      int one = 1;
      setsockopt(p.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      int buf = 4 << 20;
      setsockopt(p.fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
      setsockopt(p.fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
      fcntl(p.fd, F_SETFL, fcntl(p.fd, F_GETFL) | O_NONBLOCK);
    }
  }

  uint32_t wait_token() override { return 0; }

  void idle_wait(uint32_t, const std::vector<Xfer*>& xfers, std::chrono::microseconds max_wait) override {
    std::vector<pollfd> fds;
    for (const Xfer* x : xfers) {
      if (x->finished) continue;
      if (x->peer < 0) {
        for (int r = 0; r < size_; ++r) if (peers_[r].fd >= 0) fds.push_back({peers_[r].fd, POLLIN, 0});
      } else {
        fds.push_back({peers_[x->peer].fd, static_cast<short>(x->is_send ? POLLOUT : POLLIN), 0});
      }
    }
    timespec ts{static_cast<time_t>(max_wait.count() / 1000000), static_cast<long>(max_wait.count() % 1000000) * 1000};
    ppoll(fds.data(), fds.size(), &ts, nullptr);
  }

  void check_peers() override {}

 private:
  [[noreturn]] void lost(int r, const char* what) {
    throw CommError(std::string("hccl(tcp): connection to rank ") + std::to_string(r) + " " + what +
                    " (peer exited or crashed?)", CommErrorKind::kPeerGone);
  }

  // Returns bytes moved, 0 if the socket would block; throws on EOF/errors.
  std::size_t io(int r, bool is_send, void* p, std::size_t n) {
    const ssize_t got = is_send ? ::send(peers_[r].fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT)
                                : ::recv(peers_[r].fd, p, n, MSG_DONTWAIT);
    if (got > 0) return static_cast<std::size_t>(got);
    if (got == 0 && !is_send) lost(r, "was closed inside or before a frame");
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
    lost(r, std::strerror(errno));
  }

  bool readable_from(int r) override {  // data, EOF or an error
    if (peers_[r].fd < 0) return false;
    char c;
    const ssize_t k = ::recv(peers_[r].fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return k >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }

  bool do_send(Xfer& x) override {
    Peer& p = peers_[x.peer];
    bool moved = false;
    if (!x.hdr_done) {
      const std::size_t n = io(x.peer, true, reinterpret_cast<char*>(&x.hdr) + p.send_hdr_off, sizeof(MsgHeader) - p.send_hdr_off);
      if (n == 0) return false;
      moved = true;
      p.send_hdr_off += n;
      if (p.send_hdr_off < sizeof(MsgHeader)) return true;
      p.send_hdr_off = 0;
      x.hdr_done = true;
    }
    while (x.done < x.hdr.bytes) {
      const std::size_t n = io(x.peer, true, const_cast<char*>(static_cast<const char*>(x.src)) + x.done,
                               std::min<std::size_t>(x.hdr.bytes - x.done, kMaxIo));
      if (n == 0) break;
      x.done += n;
      moved = true;
    }
    x.finished = x.done == x.hdr.bytes;
    return moved;
  }

  bool do_recv(Xfer& x) override {
    Peer& p = peers_[x.peer];
    bool moved = false;
    if (!x.hdr_done) {
      const std::size_t n = io(x.peer, false, reinterpret_cast<char*>(&p.recv_hdr) + p.recv_hdr_off, sizeof(MsgHeader) - p.recv_hdr_off);
      if (n == 0) return false;
      moved = true;
      p.recv_hdr_off += n;
      if (p.recv_hdr_off < sizeof(MsgHeader)) return true;
      p.recv_hdr_off = 0;
      validate_header(p.recv_hdr, x, x.peer);
      x.hdr_done = true;
      x.source = x.peer;
      p.fill = 0;
    }
    while (x.done < x.hdr.bytes) {
      const std::size_t remaining = x.hdr.bytes - x.done;
      if (x.dst) {
        const std::size_t n = io(x.peer, false, static_cast<char*>(x.dst) + x.done, std::min(remaining, kMaxIo));
        if (n == 0) break;
        x.done += n;
        moved = true;
        continue;
      }
      if (p.staging.size() < kStaging) p.staging.resize(kStaging);
      const std::size_t want = std::min(remaining - p.fill, kStaging - p.fill);
      const std::size_t n = io(x.peer, false, p.staging.data() + p.fill, want);
      if (n == 0) break;
      moved = true;
      p.fill += n;
      const std::size_t whole = p.fill == remaining ? p.fill : p.fill / x.elem * x.elem;
      if (whole > 0) {
        x.sink(p.staging.data(), x.done, whole);
        x.done += whole;
        std::memmove(p.staging.data(), p.staging.data() + whole, p.fill - whole);
        p.fill -= whole;
      }
    }
    x.finished = x.done == x.hdr.bytes;
    return moved;
  }

  std::vector<Peer> peers_;
  std::vector<char> remote_;  // ranks this transport connects to
};

}  // namespace

std::unique_ptr<Transport> make_tcp_transport(Rendezvous& rv, const std::string& prefix, int rank, int size,
                                              std::chrono::milliseconds connect_timeout, const std::vector<int>& remote) {
  auto t = std::make_unique<TcpTransport>(rank, size, remote);
  t->setup(rv, prefix, connect_timeout);
  return t;
}

}  // namespace hccl_sim
