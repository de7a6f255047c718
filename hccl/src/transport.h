// The byte-moving layer under the collectives (torch-free): framed point-to-point messages between the
// ranks of one communicator, progressed without blocking so that any set of sends and receives can run
// concurrently on one thread (ring steps, all-to-all, batched p2p).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace hccl_sim {

// What went wrong, so the torch layer can raise a typed error: a peer gone is a network failure
// (DistNetworkError); a timeout, a desync or an abort are backend failures (DistBackendError).
enum class CommErrorKind { kOther, kTimeout, kPeerGone, kDesync, kAborted };
const char* comm_error_kind_name(CommErrorKind k);

// A communication failure (dead peer, timeout, malformed frame, collective mismatch).
struct CommError : std::runtime_error {
  explicit CommError(const std::string& msg, CommErrorKind k = CommErrorKind::kOther)
      : std::runtime_error(msg), kind(k) {}
  CommErrorKind kind;
};

constexpr uint32_t kMsgMagic = 0x4843434cu;  // "HCCL"
// MsgHeader::flags: the payload is not in the frame; the receiver reads it straight from the sender's
// memory (shm transport with peer reads, see shm_transport.cpp) and acknowledges when done.
constexpr uint8_t kFlagPeerRead = 1;

// Travels before every message. The receiver checks it against what it expects: that is the cheap
// per-collective desync check (op, dtype, numel, sequence number) and the frame-size validation.
struct MsgHeader {
  uint32_t magic = kMsgMagic;
  uint16_t op = 0;       // collective kind (c10d::OpType value)
  int8_t dtype = -1;     // element type (c10::ScalarType value), -1 for raw bytes
  uint8_t flags = 0;
  uint32_t seq = 0;      // collective sequence number in the communicator (0 for p2p)
  int32_t tag = 0;       // p2p: the tag; collectives: collective_tag() of the reduce op and root (desync check)
  uint64_t bytes = 0;    // payload bytes that follow
  uint64_t numel = 0;    // elements of the whole collective (desync check)
};
static_assert(sizeof(MsgHeader) == 32, "MsgHeader is a wire format");

// The tag a collective's frames carry: its reduce op (-1: none) and root rank (-1: none), so ranks that
// disagree on either fail with a desync error instead of computing different results.
constexpr int32_t collective_tag(int reduce_op, int root) { return ((reduce_op + 1) << 24) | ((root + 1) & 0xffffff); }

// Consumes a received payload piece [offset, offset + len) of the message; pieces arrive in order and are
// whole elements (multiples of Xfer::elem) except possibly the last.
using Sink = std::function<void(const void* data, std::size_t offset, std::size_t len)>;

// One message in flight. Sends read `src`; receives deliver to `dst` (plain copy) or to `sink`.
struct Xfer {
  int peer = -1;          // -1: receive from any source (p2p recvAnysource)
  bool is_send = false;
  MsgHeader hdr;          // send: header to send; recv: the expected header
  const void* src = nullptr;
  void* dst = nullptr;
  Sink sink;
  std::size_t elem = 1;   // element size: receive pieces are multiples of it
  bool check_desync = true;  // recv: compare op/dtype/numel/seq (false for p2p: tag and size only)
  // progress state, owned by the transport
  bool hdr_done = false;
  bool finished = false;
  std::size_t done = 0;
  int source = -1;        // rank the message came from (recv)
  uint64_t remote = 0;    // peer-read receive: the payload's address in the sender; send: ack ticket
};

std::string describe(const MsgHeader& h);
// Validates a received header against the expectation; throws CommError naming both sides.
void validate_header(const MsgHeader& got, const Xfer& x, int from_rank);

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Moves as many bytes as possible for the unfinished xfers without blocking; xfers to the same peer
  // and direction are served in list order. Returns true if anything moved. Throws CommError.
  virtual bool progress(std::vector<Xfer*>& xfers) = 0;
  // A token read before progress(); idle_wait(token) returns early when activity happened since.
  virtual uint32_t wait_token() = 0;
  virtual void idle_wait(uint32_t token, const std::vector<Xfer*>& xfers, std::chrono::microseconds max_wait) = 0;
  // Throws CommError if a peer is known to be gone.
  virtual void check_peers() = 0;

  // Direct access to the peers' device memory (shm with mapped HBM arenas): every rank of a communicator
  // has it, or none has.
  virtual bool maps_peer_memory() const { return false; }
  // The address peers pass to peer_memory() for `bytes` at `p` in this rank's device memory, or 0 when
  // they cannot reach that range.
  virtual uint64_t shareable_address(const void* /*p*/, std::size_t /*bytes*/) const { return 0; }
  // This rank's read-write view of `bytes` at `addr` (the peer's shareable_address()) in `peer`'s device
  // memory. Throws CommError when the range is not in that peer's device memory (a malformed address).
  virtual char* peer_memory(int peer, uint64_t addr, std::size_t bytes);

 protected:
  Transport(int rank, int size) : rank_(rank), size_(size) {}
  int rank_;
  int size_;
};

// A transport with one ordered byte stream per peer and direction (shm rings, tcp sockets): progress()
// serves the xfers in list order, at most one unfinished xfer per stream so frames never interleave. A
// receive from any source takes the first peer whose stream to this rank has something to read.
class StreamTransport : public Transport {
 public:
  bool progress(std::vector<Xfer*>& xfers) final;

 protected:
  using Transport::Transport;
  // Moves what it can of x's frame without blocking; returns true if anything moved. Throws CommError.
  virtual bool do_send(Xfer& x) = 0;
  virtual bool do_recv(Xfer& x) = 0;
  // Whether peer r's stream to this rank has data, an end or an error to read now.
  virtual bool readable_from(int r) = 0;

 private:
  std::vector<char> send_busy_, recv_busy_;  // per peer: an unfinished xfer was served in this pass
};

// The key/value rendezvous a transport sets itself up through (the c10d Store in practice).
class Rendezvous {
 public:
  virtual ~Rendezvous() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  // Blocks until the key exists (bounded by the connect timeout); throws CommError on timeout.
  virtual std::string get(const std::string& key) = 0;
  // The key's value if it exists now, without waiting (clean-up after a failed set-up).
  virtual bool try_get(const std::string& /*key*/, std::string* /*value*/) { return false; }
};

// Runs xfers to completion: spin, then sleep in the transport's wait; throws CommError when `deadline`
// passes (naming `what`), when a peer is gone, or when *abort becomes true. An xfer whose peer is this
// rank is a local copy (src -> dst, hdr.bytes, no overlap), done piecewise while the transport is idle.
void run_xfers(Transport& t, std::vector<Xfer*>& xfers, std::chrono::steady_clock::time_point deadline,
               const std::atomic<bool>* abort, const char* what);

// t.check_peers() for a rank whose last progress() moved nothing. A peer may have written its last frames
// for these xfers and exited between that progress() and the check: its frames stay readable, so a peer gone
// is reported only once progress() moves nothing more. Returns true if it moved something (keep going).
bool check_peers_or_drain(Transport& t, std::vector<Xfer*>& xfers);

// Host identity "hostname/boot_id" (or NPU_SIM_HOST_ID when set, to simulate several hosts on one
// machine): equal identities can share memory.
std::string host_identity();
// Hex string of n random bytes from getrandom().
std::string random_hex(std::size_t n);

}  // namespace hccl_sim
