// Transport-independent pieces: header checks, the stream transports' progress pass, the progress loop
// with spin-then-sleep and timeouts, host identity and random names.
#include "transport.h"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "npu_kernels/collective_math.h"

namespace hccl_sim {

const char* comm_error_kind_name(CommErrorKind k) {
  switch (k) {
    case CommErrorKind::kOther: return "error";
    case CommErrorKind::kTimeout: return "timeout";
    case CommErrorKind::kPeerGone: return "peer gone";
    case CommErrorKind::kDesync: return "desync";
    case CommErrorKind::kAborted: return "aborted";
  }
  return "?";
}

bool StreamTransport::progress(std::vector<Xfer*>& xfers) {
  bool moved = false;
  send_busy_.assign(size_, 0);
  recv_busy_.assign(size_, 0);
  for (Xfer* x : xfers) {
    if (x->finished) continue;
    for (int r = 0; r < size_ && x->peer < 0; ++r) {
      if (!recv_busy_[r] && readable_from(r)) x->peer = r;
    }
    if (x->peer < 0) continue;  // any source, nothing to read yet
    auto& busy = x->is_send ? send_busy_ : recv_busy_;
    if (busy[x->peer]) continue;
    moved |= x->is_send ? do_send(*x) : do_recv(*x);
    if (!x->finished) busy[x->peer] = 1;
  }
  return moved;
}

std::string describe(const MsgHeader& h) {
  std::ostringstream os;
  os << "op=" << h.op << " dtype=" << int(h.dtype) << " numel=" << h.numel << " seq=" << h.seq;
  if (h.seq != 0) {  // a collective: the tag holds its reduce op and root
    os << " reduce_op=" << ((h.tag >> 24) - 1) << " root=" << ((h.tag & 0xffffff) - 1);
  } else {
    os << " tag=" << h.tag;
  }
  os << " bytes=" << h.bytes;
  return os.str();
}

char* Transport::peer_memory(int peer, uint64_t, std::size_t) {
  throw CommError("hccl: the " + std::string(name()) + " transport cannot reach rank " + std::to_string(peer) +
                  "'s device memory");
}

void validate_header(const MsgHeader& got, const Xfer& x, int from) {
  if (got.magic != kMsgMagic) {
    throw CommError("hccl: malformed frame from rank " + std::to_string(from) + " (bad magic 0x" +
                    [&] { std::ostringstream o; o << std::hex << got.magic; return o.str(); }() + ")");
  }
  const MsgHeader& want = x.hdr;
  if (x.check_desync && (got.op != want.op || got.dtype != want.dtype || got.numel != want.numel ||
                         got.seq != want.seq || got.tag != want.tag)) {
    throw CommError("hccl: collective mismatch between ranks (desync): this rank expects {" + describe(want) +
                    "} but rank " + std::to_string(from) + " sent {" + describe(got) +
                    "}; every rank must call the same collectives in the same order with the same "
                    "dtypes, sizes, reduce ops and roots", CommErrorKind::kDesync);
  }
  if (!x.check_desync && got.tag != want.tag) {
    throw CommError("hccl: p2p tag mismatch: expected tag " + std::to_string(want.tag) + " from rank " +
                    std::to_string(from) + ", got tag " + std::to_string(got.tag));
  }
  if (got.bytes != want.bytes) {
    throw CommError("hccl: size mismatch: expected a message of " + std::to_string(want.bytes) +
                    " bytes from rank " + std::to_string(from) + ", its frame says " +
                    std::to_string(got.bytes) + " bytes {" + describe(got) + "}", CommErrorKind::kDesync);
  }
}

namespace {
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
}  // namespace

void run_xfers(Transport& t, std::vector<Xfer*>& xfers, std::chrono::steady_clock::time_point deadline,
               const std::atomic<bool>* abort, const char* what) {
  constexpr int kSpins = 4000;
  static constexpr std::size_t kLocalPiece = 512 << 10;
  std::vector<Xfer*> remote, local;
  for (Xfer* x : xfers) (x->peer == t.rank() ? local : remote).push_back(x);
  // A piece of the first unfinished local copy; they run while the transport has nothing to do.
  auto local_step = [&local]() {
    for (Xfer* x : local) {
      if (x->finished) continue;
      const std::size_t len = std::min<std::size_t>(x->hdr.bytes - x->done, kLocalPiece);
      if (len) {
        npu_kernels::copy_piece(static_cast<char*>(x->dst) + x->done, static_cast<const char*>(x->src) + x->done, len,
                                x->hdr.bytes);
      }
      x->done += len;
      x->finished = x->done == x->hdr.bytes;
      return true;
    }
    return false;
  };
  int idle = 0;
  for (;;) {
    bool all_done = true;
    for (Xfer* x : xfers) all_done = all_done && x->finished;
    if (all_done) return;
    const uint32_t token = t.wait_token();
    if ((!remote.empty() && t.progress(remote)) || local_step()) {
      idle = 0;
      continue;
    }
    if (++idle < kSpins) {
      // Mostly pause; now and then give the core away, since on an oversubscribed host the peer (or
      // this rank's own compute) may be waiting for exactly this core.
      if (idle % 32 == 0) std::this_thread::yield();
      else cpu_relax();
      continue;
    }
    if (abort && abort->load(std::memory_order_relaxed)) {
      throw CommError(std::string("hccl: ") + what + " aborted", CommErrorKind::kAborted);
    }
    if (check_peers_or_drain(t, remote)) {
      idle = 0;
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::string waiting;  // the peers whose messages are still unfinished
      for (Xfer* x : remote) {
        if (x->finished) continue;
        const std::string r = x->peer < 0 ? "any rank" : "rank " + std::to_string(x->peer);
        if (waiting.find(r) == std::string::npos) waiting += (waiting.empty() ? "" : ", ") + r;
      }
      throw CommError(std::string("hccl: ") + what + " timed out on rank " + std::to_string(t.rank()) +
                      " waiting for " + waiting + " (a peer is not participating: dead, hung or desynchronised; "
                      "see HCCL_EXEC_TIMEOUT and the process group timeout)", CommErrorKind::kTimeout);
    }
    t.idle_wait(token, remote, std::chrono::microseconds(idle < kSpins + 200 ? 50 : 2000));
  }
}

bool check_peers_or_drain(Transport& t, std::vector<Xfer*>& xfers) {
  try {
    t.check_peers();
    return false;
  } catch (const CommError& e) {
    if (e.kind != CommErrorKind::kPeerGone || xfers.empty() || !t.progress(xfers)) throw;
    return true;
  }
}

std::string host_identity() {
  if (const char* id = std::getenv("NPU_SIM_HOST_ID"); id && *id) return std::string("sim:") + id;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string boot;
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::getline(f, boot);
  return std::string(host) + "/" + boot;
}

std::string random_hex(std::size_t n) {
  std::vector<unsigned char> b(n);
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = getrandom(b.data() + got, n - got, 0);
    if (r <= 0) throw CommError("hccl: getrandom failed");
    got += static_cast<std::size_t>(r);
  }
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (unsigned char c : b) {
    s.push_back(digits[c >> 4]);
    s.push_back(digits[c & 15]);
  }
  return s;
}

}  // namespace hccl_sim
