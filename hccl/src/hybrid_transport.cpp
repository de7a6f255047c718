// Hybrid (hierarchical) transport (see hybrid_transport.h): each xfer goes to the transport that reaches
// its peer; a receive from any source is offered to both. Idle waits sleep on the shm doorbell when only
// local peers are pending, poll the sockets when only remote ones are, and poll briefly when both are.
#include "hybrid_transport.h"

#include <algorithm>

namespace hccl_sim {

namespace {

class HybridTransport final : public Transport {
 public:
  HybridTransport(int rank, int size, std::vector<char> local, std::unique_ptr<Transport> shm,
                  std::unique_ptr<Transport> tcp)
      : Transport(rank, size), local_(std::move(local)), shm_(std::move(shm)), tcp_(std::move(tcp)) {}
  const char* name() const override { return "shm+tcp"; }

  bool progress(std::vector<Xfer*>& xfers) override {
    split(xfers);
    bool moved = false;
    if (!near_.empty()) moved |= shm_->progress(near_);
    // Any-source receives the shm side did not match go on to the sockets.
    for (Xfer* x : any_) if (!x->finished && x->peer < 0) far_.push_back(x);
    if (!far_.empty()) moved |= tcp_->progress(far_);
    return moved;
  }

  uint32_t wait_token() override { return shm_->wait_token(); }

  void idle_wait(uint32_t token, const std::vector<Xfer*>& xfers, std::chrono::microseconds max_wait) override {
    split(xfers);
    const bool near = !near_.empty(), far = !far_.empty() || !any_.empty();
    if (near && !far) return shm_->idle_wait(token, near_, max_wait);
    for (Xfer* x : any_) far_.push_back(x);
    tcp_->idle_wait(0, far_, near ? std::min(max_wait, std::chrono::microseconds(100)) : max_wait);
  }

  void check_peers() override {
    shm_->check_peers();
    tcp_->check_peers();
  }

 private:
  // near_: xfers to local peers (and any-source receives, tried on shm first); far_: to remote peers.
  void split(const std::vector<Xfer*>& xfers) {
    near_.clear();
    far_.clear();
    any_.clear();
    for (Xfer* x : xfers) {
      if (x->finished) continue;
      if (x->peer < 0) {
        near_.push_back(x);
        any_.push_back(x);
      } else if (local_[x->peer]) {
        near_.push_back(x);
      } else {
        far_.push_back(x);
      }
    }
  }

  std::vector<char> local_;
  std::unique_ptr<Transport> shm_, tcp_;
  std::vector<Xfer*> near_, far_, any_;
};

}  // namespace

std::unique_ptr<Transport> make_hybrid_transport(int rank, int size, std::vector<char> local,
                                                 std::unique_ptr<Transport> shm, std::unique_ptr<Transport> tcp) {
  return std::make_unique<HybridTransport>(rank, size, std::move(local), std::move(shm), std::move(tcp));
}

}  // namespace hccl_sim
