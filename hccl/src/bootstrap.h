// The bootstrap behind HcclRootInfo (torch-free): HcclGetRootInfo starts a small key/value server on the
// root's process; every rank's HcclCommInitRootInfo connects to it and sets up its transports through it
// (addresses, shared-memory segment names, host identities), as HCCL's root does over TCP.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "transport.h"

namespace hccl_sim {

// What HcclRootInfo carries: the root server's address, its host identity and a random id.
struct RootAddress {
  std::string host_id;
  std::string ip;
  uint16_t port = 0;
  std::string id;
  std::string encode() const;
  // Throws CommError for anything that is not an encoded RootAddress.
  static RootAddress decode(const char* data, std::size_t len);
};

// Starts a server thread that serves until every rank of the communicator has finished its set-up, or
// until `idle_limit` passes without a request. It is detached: it owns its state and ends by itself.
RootAddress start_root_server(std::chrono::milliseconds idle_limit);

// One rank's connection to the root server. get() blocks until the key is set (bounded by the connect
// timeout, after which it throws CommError naming HCCL_CONNECT_TIMEOUT).
class BootstrapClient final : public Rendezvous {
 public:
  BootstrapClient(const RootAddress& root, int nranks, int rank, std::chrono::milliseconds connect_timeout);
  ~BootstrapClient() override;
  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key) override;
  bool try_get(const std::string& key, std::string* value) override;
  // This rank's set-up is over (successful or not); the server ends when every rank has said so.
  void done();

 private:
  std::string request(char op, const std::string& key, const std::string& value, bool* found);
  int fd_ = -1;
  std::string id_;
  std::chrono::milliseconds timeout_;
  bool done_ = false;
};

}  // namespace hccl_sim
