// The root info's key/value server and its client (see bootstrap.h). A request is
// [op u8][key length u32][value length u32][key][value]; get ('G') and check ('C') are answered with
// [found u8][value length u32][value]; set ('S'), hello ('H': value = "<id> <nranks>") and done ('D') are not.
#include "bootstrap.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "socket_util.h"

namespace hccl_sim {

namespace {

constexpr const char* kMagic = "npu_sim-hccl-root-v1";

struct Request {
  char op = 0;
  std::string key, value;
};

// One client's connection on the server: bytes received so far and the get it is blocked in, if any.
struct Conn {
  int fd = -1;
  std::string in;
  bool waiting = false;
  std::string waiting_for;
};

bool parse_request(std::string& in, Request* r) {
  if (in.size() < 9) return false;
  uint32_t klen = 0, vlen = 0;
  std::memcpy(&klen, in.data() + 1, 4);
  std::memcpy(&vlen, in.data() + 5, 4);
  if (in.size() < 9 + std::size_t{klen} + vlen) return false;
  r->op = in[0];
  r->key = in.substr(9, klen);
  r->value = in.substr(9 + klen, vlen);
  in.erase(0, 9 + std::size_t{klen} + vlen);
  return true;
}

std::string frame(char op, const std::string& key, const std::string& value) {
  std::string out(9, '\0');
  out[0] = op;
  const uint32_t klen = static_cast<uint32_t>(key.size()), vlen = static_cast<uint32_t>(value.size());
  std::memcpy(&out[1], &klen, 4);
  std::memcpy(&out[5], &vlen, 4);
  return out + key + value;
}

std::string answer(bool found, const std::string& value) {
  std::string out(5, '\0');
  out[0] = found ? 1 : 0;
  const uint32_t vlen = static_cast<uint32_t>(value.size());
  std::memcpy(&out[1], &vlen, 4);
  return out + value;
}

void send_all(int fd, const std::string& data) {
  // The answers are small and the client is blocked reading them: a bounded blocking send suffices.
  io_full(fd, const_cast<char*>(data.data()), data.size(), true,
          std::chrono::steady_clock::now() + std::chrono::seconds(5));
}

// The server loop: one thread, poll over the listener and the clients.
void serve(int lfd, std::string id, std::chrono::milliseconds idle_limit) {
  std::map<std::string, std::string> kv;
  std::vector<Conn> conns;
  int nranks = -1, finished = 0;
  auto last = std::chrono::steady_clock::now();
  while (nranks < 0 || finished < nranks) {
    if (std::chrono::steady_clock::now() - last > idle_limit) break;
    std::vector<pollfd> fds{{lfd, POLLIN, 0}};
    for (const Conn& c : conns) fds.push_back({c.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 200) <= 0) continue;
    if (fds[0].revents & POLLIN) {
      const int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        Conn c;
        c.fd = fd;
        conns.push_back(std::move(c));
      }
    }
    for (std::size_t i = 0; i < conns.size(); ++i) {
      if (i + 1 >= fds.size() || !(fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Conn& c = conns[i];
      char buf[4096];
      const ssize_t n = ::recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n <= 0) {  // the rank is gone (or said done and closed): forget it
        close(c.fd);
        c.fd = -1;
        continue;
      }
      last = std::chrono::steady_clock::now();
      c.in.append(buf, static_cast<std::size_t>(n));
      Request r;
      while (parse_request(c.in, &r)) {
        if (r.op == 'H') {
          std::istringstream is(r.value);
          std::string their_id;
          int n_ranks = -1;
          is >> their_id >> n_ranks;
          if (their_id != id) {  // a stray client (another communicator's root info): drop it
            close(c.fd);
            c.fd = -1;
            break;
          }
          if (nranks < 0) nranks = n_ranks;
        } else if (r.op == 'S') {
          kv[r.key] = r.value;
        } else if (r.op == 'D') {
          ++finished;
        } else if (r.op == 'C') {
          auto it = kv.find(r.key);
          send_all(c.fd, answer(it != kv.end(), it == kv.end() ? std::string() : it->second));
        } else if (r.op == 'G') {
          c.waiting = true;
          c.waiting_for = r.key;
        }
      }
    }
    for (Conn& c : conns) {  // answer the gets whose key has arrived
      if (c.fd < 0 || !c.waiting) continue;
      auto it = kv.find(c.waiting_for);
      if (it == kv.end()) continue;
      c.waiting = false;
      send_all(c.fd, answer(true, it->second));
    }
    std::vector<Conn> live;
    for (Conn& c : conns) if (c.fd >= 0) live.push_back(std::move(c));
    conns = std::move(live);
  }
  for (Conn& c : conns) close(c.fd);
  close(lfd);
}

}  // namespace

std::string RootAddress::encode() const {
  return std::string(kMagic) + " " + host_id + " " + ip + " " + std::to_string(port) + " " + id;
}

RootAddress RootAddress::decode(const char* data, std::size_t len) {
  std::istringstream is(std::string(data, strnlen(data, len)));
  std::string magic;
  RootAddress a;
  int port = 0;
  is >> magic >> a.host_id >> a.ip >> port >> a.id;
  if (!is || magic != kMagic || port <= 0 || port > 65535) {
    throw CommError("hccl: the root info is not one made by HcclGetRootInfo");
  }
  a.port = static_cast<uint16_t>(port);
  return a;
}

RootAddress start_root_server(std::chrono::milliseconds idle_limit) {
  RootAddress a;
  const int lfd = listen_any(128, &a.port);
  a.host_id = host_identity();
  a.ip = local_address();
  a.id = random_hex(16);
  std::thread(serve, lfd, a.id, idle_limit).detach();
  return a;
}

BootstrapClient::BootstrapClient(const RootAddress& root, int nranks, int rank, std::chrono::milliseconds connect_timeout)
    : id_(root.id), timeout_(connect_timeout) {
  const std::string ip = root.host_id == host_identity() ? "127.0.0.1" : root.ip;
  fd_ = connect_until(ip, root.port, std::chrono::steady_clock::now() + connect_timeout);
  if (fd_ < 0) {
    throw CommError("hccl: rank " + std::to_string(rank) + " cannot reach the root at " + ip + ":" +
                    std::to_string(root.port) + " within HCCL_CONNECT_TIMEOUT=" +
                    std::to_string(connect_timeout.count() / 1000) + " s", CommErrorKind::kTimeout);
  }
  const std::string hello = frame('H', "", id_ + " " + std::to_string(nranks));
  send_all(fd_, hello);
}

BootstrapClient::~BootstrapClient() {
  if (!done_) done();
  close(fd_);
}

void BootstrapClient::done() {
  done_ = true;
  send_all(fd_, frame('D', "", ""));
}

std::string BootstrapClient::request(char op, const std::string& key, const std::string& value, bool* found) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  const std::string req = frame(op, key, value);
  if (!io_full(fd_, const_cast<char*>(req.data()), req.size(), true, deadline)) {
    throw CommError("hccl: lost the connection to the root while setting up", CommErrorKind::kPeerGone);
  }
  if (op == 'S') return std::string();
  char head[5];
  if (!io_full(fd_, head, sizeof(head), false, deadline)) {
    const bool timed_out = std::chrono::steady_clock::now() >= deadline;
    if (timed_out) {
      throw CommError("hccl: rendezvous timed out waiting for '" + key + "' (a rank did not join within "
                      "HCCL_CONNECT_TIMEOUT=" + std::to_string(timeout_.count() / 1000) + " s)", CommErrorKind::kTimeout);
    }
    throw CommError("hccl: the root closed the bootstrap connection while this rank waited for '" + key +
                    "' (the root's process ended?)", CommErrorKind::kPeerGone);
  }
  uint32_t vlen = 0;
  std::memcpy(&vlen, head + 1, 4);
  std::string v(vlen, '\0');
  if (vlen && !io_full(fd_, &v[0], vlen, false, deadline)) {
    throw CommError("hccl: lost the connection to the root while setting up", CommErrorKind::kPeerGone);
  }
  *found = head[0] != 0;
  return v;
}

void BootstrapClient::set(const std::string& key, const std::string& value) {
  bool found = false;
  request('S', key, value, &found);
}

std::string BootstrapClient::get(const std::string& key) {
  bool found = false;
  return request('G', key, "", &found);
}

bool BootstrapClient::try_get(const std::string& key, std::string* value) {
  try {
    bool found = false;
    std::string v = request('C', key, "", &found);
    if (found) *value = std::move(v);
    return found;
  } catch (const CommError&) {  // the root is gone: nothing more to learn
    return false;
  }
}

}  // namespace hccl_sim
