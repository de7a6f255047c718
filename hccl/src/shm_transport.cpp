// Shared-memory transport (see shm_transport.h). Ring protocol: the writer owns `head`, the reader owns
// `tail`, both are byte counters published with release and read with acquire. Every message starts
// with a 64-byte header slot and is padded to 64 bytes, so ring positions stay 64-byte aligned and every
// piece handed to a reduction is made of whole elements. Waiting: spin in run_xfers, then sleep on this
// rank's futex doorbell, which every peer bumps (and wakes when we sleep) after it moved bytes for us.
// Peer reads: each rank maps its peers' device memory (the runtime's shareable HBM arena, opened through
// /proc/<pid>/fd). A message of kPeerReadMin bytes or more whose payload lies in the sender's
// HBM is sent as its header slot only, carrying the payload's address; the receiver copies (or reduces)
// it straight out of its mapping of the sender's HBM, as NPUs of one server read each other's memory, and
// then bumps the pair's ack counter, which is when the send completes. One copy instead of two.
// The same mappings serve the direct collectives (direct_collectives.h), which also write into them.
#include "shm_transport.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <climits>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "npu_kernels/collective_math.h"
#include "npu_sim/runtime.h"

namespace hccl_sim {

namespace {

constexpr std::size_t kSlot = 64;
constexpr std::size_t kPiece = 256 << 10;  // publish at least every 256 KiB so the reader can pipeline
constexpr uint32_t kSegMagic = 0x53484d31u;
constexpr std::size_t kPeerReadMin = 128 << 10;  // smaller messages go through the ring (lower latency)
constexpr std::size_t kPullPiece = 1 << 20;      // bytes per peer-read step (progress stays interleaved)

struct alignas(64) SegHeader {
  std::atomic<uint32_t> doorbell;
  std::atomic<uint32_t> sleeping;
  uint32_t magic;
};
struct alignas(64) RingCtl {
  std::atomic<uint64_t> head;  // written by the sender
  char pad0[56];
  std::atomic<uint64_t> tail;  // written by the receiver (the segment's owner) ...
  std::atomic<uint64_t> acks;  // ... as is the count of peer-read messages it has finished reading
  char pad1[48];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared-memory rings need lock-free atomics");

inline std::size_t round_up(std::size_t v) { return (v + kSlot - 1) & ~(kSlot - 1); }

std::size_t segment_bytes(int size, std::size_t ring) {
  return sizeof(SegHeader) + sizeof(RingCtl) * size + ring * size;
}

// Gone or a zombie (killed but not yet reaped by its parent): either way it will never write again.
bool process_alive(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (!f) return true;  // no procfs: rely on kill() and the timeout
  char buf[512];
  const std::size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* close_paren = std::strrchr(buf, ')');
  return !(close_paren && close_paren[1] == ' ' && (close_paren[2] == 'Z' || close_paren[2] == 'X'));
}

long futex(std::atomic<uint32_t>* addr, int op, uint32_t val, const timespec* ts) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), op, val, ts, nullptr, 0);
}

struct Segment {
  void* base = nullptr;
  std::size_t bytes = 0;
  std::size_t ring = 0;
  pid_t pid = 0;
  // The rank's device memory: its address range in the owner, and (for peers) our mapping of it.
  uintptr_t hbm_base = 0;
  std::size_t hbm_size = 0;
  char* hbm_view = nullptr;
  SegHeader* hdr() const { return static_cast<SegHeader*>(base); }
  RingCtl* ctl(int src) const {
    return reinterpret_cast<RingCtl*>(static_cast<char*>(base) + sizeof(SegHeader)) + src;
  }
  char* data(int src, int size) const {
    return static_cast<char*>(base) + sizeof(SegHeader) + sizeof(RingCtl) * size + ring * src;
  }
};

class ShmTransport final : public StreamTransport {
 public:
  ShmTransport(int rank, int size, const std::vector<int>& local, int hbm_device)
      : StreamTransport(rank, size), segs_(size), local_(size, 0), peer_read_(hbm_device >= 0), rdv_sent_(size, 0) {
    for (int r : local) if (r >= 0 && r < size && r != rank) local_[r] = 1;
    npu_sim::SharedRegion hbm{};
    if (peer_read_ && npu_sim::device_memory_region(hbm_device, &hbm) == npu_sim::Status::kSuccess) {
      hbm_fd_ = hbm.fd;
      segs_[rank].hbm_base = reinterpret_cast<uintptr_t>(hbm.base);
      segs_[rank].hbm_size = hbm.size;
    } else {
      peer_read_ = false;
    }
  }
  ~ShmTransport() override {
    for (int r = 0; r < size_; ++r) {
      Segment& s = segs_[r];
      if (s.base) munmap(s.base, s.bytes);
      if (r != rank_ && s.hbm_view) munmap(s.hbm_view, s.hbm_size);
    }
    if (!own_name_.empty()) shm_unlink(own_name_.c_str());  // only if set-up failed before the unlink
  }
  const char* name() const override { return peer_read_ ? "shm+peer-read" : "shm"; }

  // Creates this rank's segment and maps every local peer's. If that fails (a peer died or never came),
  // the segments of peers that died before unlinking theirs are unlinked here, so nothing stays in
  // /dev/shm: every rank publishes its segment's name before creating it.
  void setup(Rendezvous& rv, const std::string& prefix, std::size_t ring) {
    try {
      setup_segments(rv, prefix, ring);
    } catch (const CommError&) {
      for (int r = 0; r < size_; ++r) {
        std::string name;
        if (local_[r] && rv.try_get(prefix + "/shmname/" + std::to_string(r), &name) &&
            name.rfind("/npusim-hccl-", 0) == 0) {
          shm_unlink(name.c_str());  // ENOENT when its owner unlinked it already
        }
      }
      throw;
    }
  }

  void setup_segments(Rendezvous& rv, const std::string& prefix, std::size_t ring) {
    // The creator's pid is in the name, so a segment left behind can be traced to the process that made it.
    own_name_ = "/npusim-hccl-" + std::to_string(getpid()) + "-" + random_hex(16);
    rv.set(prefix + "/shmname/" + std::to_string(rank_), own_name_);
    const std::size_t bytes = segment_bytes(size_, ring);
    int fd = shm_open(own_name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) throw CommError("hccl: shm_open(" + own_name_ + ") failed: " + std::strerror(errno));
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      const int e = errno;
      close(fd);
      throw CommError("hccl: ftruncate of the shared segment failed (/dev/shm full?): " + std::string(std::strerror(e)));
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) throw CommError("hccl: mmap of the shared segment failed: " + std::string(std::strerror(errno)));
    // Fault injection for the clean-up test: die with the segment created and not yet unlinked.
    if (const char* f = std::getenv("NPU_SIM_FAULT_HCCL_SETUP"); f && std::string(f) == "kill") raise(SIGKILL);
    Segment& me = segs_[rank_];
    me.base = p;
    me.bytes = bytes;
    me.ring = ring;
    me.pid = getpid();
    segs_[rank_].hdr()->magic = kSegMagic;
    std::ostringstream desc;
    desc << own_name_ << ' ' << getpid() << ' ' << ring << ' ' << hbm_fd_ << ' ' << segs_[rank_].hbm_base << ' '
         << segs_[rank_].hbm_size;
    rv.set(prefix + "/shm/" + std::to_string(rank_), desc.str());
    bool can_read = peer_read_;
    for (int r = 0; r < size_; ++r) {
      if (!local_[r]) continue;
      std::istringstream in(rv.get(prefix + "/shm/" + std::to_string(r)));
      std::string peer_name;
      long pid = 0;
      std::size_t peer_ring = 0, hbm_size = 0;
      int hbm_fd = -1;
      uintptr_t hbm_base = 0;
      in >> peer_name >> pid >> peer_ring >> hbm_fd >> hbm_base >> hbm_size;
      if (!in || peer_name.rfind("/npusim-hccl-", 0) != 0 || peer_ring < 4096 || (peer_ring & (peer_ring - 1)))
        throw CommError("hccl: malformed shared-memory descriptor from rank " + std::to_string(r));
      const std::size_t peer_bytes = segment_bytes(size_, peer_ring);
      int pfd = shm_open(peer_name.c_str(), O_RDWR, 0);
      if (pfd < 0) throw CommError("hccl: cannot open rank " + std::to_string(r) + "'s segment " + peer_name + ": " + std::strerror(errno));
      struct stat st{};
      if (fstat(pfd, &st) != 0 || static_cast<std::size_t>(st.st_size) != peer_bytes) {
        close(pfd);
        throw CommError("hccl: rank " + std::to_string(r) + "'s segment has an unexpected size");
      }
      void* pp = mmap(nullptr, peer_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, pfd, 0);
      close(pfd);
      if (pp == MAP_FAILED) throw CommError("hccl: mmap of rank " + std::to_string(r) + "'s segment failed");
      segs_[r] = Segment{pp, peer_bytes, peer_ring, static_cast<pid_t>(pid)};
      if (segs_[r].hdr()->magic != kSegMagic) throw CommError("hccl: rank " + std::to_string(r) + "'s segment is not initialised");
      if (can_read && !map_peer_hbm(segs_[r], hbm_fd, hbm_base, hbm_size)) can_read = false;
    }
    // Unlink as soon as everyone has mapped: from then on nothing can leak, even after SIGKILL. Peer reads
    // are used only if every rank of the host can read every other's device memory.
    rv.set(prefix + "/mapped/" + std::to_string(rank_), can_read ? "1" : "0");
    for (int r = 0; r < size_; ++r)
      if (local_[r] && rv.get(prefix + "/mapped/" + std::to_string(r)) != "1") can_read = false;
    peer_read_ = can_read;
    shm_unlink(own_name_.c_str());
    own_name_.clear();
  }

  uint32_t wait_token() override { return segs_[rank_].hdr()->doorbell.load(std::memory_order_seq_cst); }

  void idle_wait(uint32_t token, const std::vector<Xfer*>&, std::chrono::microseconds max_wait) override {
    SegHeader* h = segs_[rank_].hdr();
    h->sleeping.store(1, std::memory_order_seq_cst);
    if (h->doorbell.load(std::memory_order_seq_cst) == token) {
      timespec ts{static_cast<time_t>(max_wait.count() / 1000000), static_cast<long>(max_wait.count() % 1000000) * 1000};
      futex(&h->doorbell, FUTEX_WAIT, token, &ts);
    }
    h->sleeping.store(0, std::memory_order_relaxed);
  }

  bool peer_read() const { return peer_read_; }

  // Direct access needs every rank on this host (set-up agreed on peer_read_ among exactly those).
  bool maps_peer_memory() const override {
    for (int r = 0; r < size_; ++r) if (r != rank_ && !local_[r]) return false;
    return peer_read_;
  }
  uint64_t shareable_address(const void* p, std::size_t bytes) const override {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    return peer_read_ && in_hbm(segs_[rank_], a, bytes) ? a : 0;
  }
  char* peer_memory(int peer, uint64_t addr, std::size_t bytes) override {
    if (!peer_read_ || peer < 0 || peer >= size_ || !local_[peer] || !in_hbm(segs_[peer], addr, bytes))
      throw CommError("hccl: malformed address from rank " + std::to_string(peer) + " (" + std::to_string(bytes) +
                      " bytes outside its device memory)");
    return segs_[peer].hbm_view + (addr - segs_[peer].hbm_base);
  }

  void check_peers() override {
    for (int r = 0; r < size_; ++r) {
      if (!local_[r]) continue;
      if (!process_alive(segs_[r].pid)) {
        throw CommError("hccl: rank " + std::to_string(r) + " (pid " + std::to_string(segs_[r].pid) +
                        ") has exited; the collective cannot complete", CommErrorKind::kPeerGone);
      }
    }
  }

 private:
  void ring_bell(int r) {
    SegHeader* h = segs_[r].hdr();
    h->doorbell.fetch_add(1, std::memory_order_seq_cst);
    if (h->sleeping.load(std::memory_order_seq_cst)) futex(&h->doorbell, FUTEX_WAKE, INT_MAX, nullptr);
  }

  bool do_send(Xfer& x) override {
    const Segment& s = segs_[x.peer];
    RingCtl* c = s.ctl(rank_);
    char* data = s.data(rank_, size_);
    const std::size_t mask = s.ring - 1;
    uint64_t head = c->head.load(std::memory_order_relaxed);
    std::size_t free = s.ring - static_cast<std::size_t>(head - c->tail.load(std::memory_order_acquire));
    bool moved = false;
    if (!x.hdr_done) {
      if (free < kSlot) return false;
      MsgHeader h = x.hdr;
      if (peer_read_ && h.bytes >= kPeerReadMin && in_hbm(segs_[rank_], reinterpret_cast<uintptr_t>(x.src), h.bytes))
        h.flags |= kFlagPeerRead;
      std::memcpy(data + (head & mask), &h, sizeof(MsgHeader));
      if (h.flags & kFlagPeerRead) {
        const uint64_t addr = reinterpret_cast<uintptr_t>(x.src);
        std::memcpy(data + (head & mask) + sizeof(MsgHeader), &addr, sizeof(addr));
        x.remote = ++rdv_sent_[x.peer];  // the ack count that completes this send
        x.done = x.hdr.bytes;
      }
      head += kSlot;
      free -= kSlot;
      x.hdr_done = true;
      moved = true;
    }
    if (x.remote) {  // peer read: done when the receiver has acknowledged
      if (moved) {
        c->head.store(head, std::memory_order_release);
        ring_bell(x.peer);
      }
      x.finished = c->acks.load(std::memory_order_acquire) >= x.remote;
      return moved || x.finished;
    }
    while (x.done < x.hdr.bytes && free > 0) {
      const std::size_t pos = head & mask;
      std::size_t len = std::min({free, s.ring - pos, static_cast<std::size_t>(x.hdr.bytes) - x.done, kPiece});
      std::memcpy(data + pos, static_cast<const char*>(x.src) + x.done, len);
      x.done += len;
      if (x.done == x.hdr.bytes) len = round_up(len);
      head += len;
      free -= len;
      moved = true;
      if (len >= kPiece) break;  // publish now so the reader can start on this piece
    }
    if (moved) {
      c->head.store(head, std::memory_order_release);
      ring_bell(x.peer);
    }
    if (x.hdr_done && x.done == x.hdr.bytes) x.finished = true;
    return moved;
  }

  bool do_recv(Xfer& x) override {
    const Segment& s = segs_[rank_];
    RingCtl* c = s.ctl(x.peer);
    const char* data = s.data(x.peer, size_);
    const std::size_t mask = s.ring - 1;
    uint64_t tail = c->tail.load(std::memory_order_relaxed);
    std::size_t avail = static_cast<std::size_t>(c->head.load(std::memory_order_acquire) - tail);
    bool moved = false;
    if (!x.hdr_done) {
      if (avail < kSlot) return false;
      MsgHeader got;
      std::memcpy(&got, data + (tail & mask), sizeof(got));
      if (got.bytes > (uint64_t(1) << 48)) throw CommError("hccl: malformed frame from rank " + std::to_string(x.peer));
      validate_header(got, x, x.peer);
      if (got.flags & kFlagPeerRead) {
        std::memcpy(&x.remote, data + (tail & mask) + sizeof(MsgHeader), sizeof(x.remote));
        if (!peer_read_ || !in_hbm(segs_[x.peer], x.remote, got.bytes))
          throw CommError("hccl: malformed peer-read frame from rank " + std::to_string(x.peer) +
                          " (payload outside its device memory)");
      }
      tail += kSlot;
      avail -= kSlot;
      x.hdr_done = true;
      x.source = x.peer;
      moved = true;
      if (x.remote) {
        c->tail.store(tail, std::memory_order_release);
        ring_bell(x.peer);
      }
    }
    if (x.remote) return pull(x, c) || moved;
    while (x.done < x.hdr.bytes && avail > 0) {
      const std::size_t pos = tail & mask;
      std::size_t len = std::min({avail, s.ring - pos, static_cast<std::size_t>(x.hdr.bytes) - x.done});
      if (x.dst) std::memcpy(static_cast<char*>(x.dst) + x.done, data + pos, len);
      else x.sink(data + pos, x.done, len);
      x.done += len;
      if (x.done == x.hdr.bytes) len = round_up(len);
      tail += len;
      avail -= len;
      moved = true;
    }
    if (moved) {
      c->tail.store(tail, std::memory_order_release);
      ring_bell(x.peer);
    }
    if (x.hdr_done && x.done == x.hdr.bytes) x.finished = true;
    return moved;
  }

  // One piece of a peer-read message, copied or reduced straight out of our view of the sender's device
  // memory; the last piece acknowledges the message.
  bool pull(Xfer& x, RingCtl* c) {
    const Segment& peer = segs_[x.peer];
    const std::size_t len = std::min<std::size_t>(x.hdr.bytes - x.done, kPullPiece);
    const char* from = peer.hbm_view + (x.remote - peer.hbm_base) + x.done;
    if (x.dst) npu_kernels::copy_piece(static_cast<char*>(x.dst) + x.done, from, len, x.hdr.bytes);
    else x.sink(from, x.done, len);
    x.done += len;
    if (x.done == x.hdr.bytes) {
      c->acks.fetch_add(1, std::memory_order_release);
      ring_bell(x.peer);
      x.finished = true;
    }
    return true;
  }

  static bool in_hbm(const Segment& s, uintptr_t addr, uint64_t bytes) {
    return s.hbm_size != 0 && addr >= s.hbm_base && bytes <= s.hbm_size && addr - s.hbm_base <= s.hbm_size - bytes;
  }

  // Maps rank `s`'s device memory (read-write) through its memfd (the runtime's HBM arena).
  bool map_peer_hbm(Segment& s, int fd, uintptr_t base, std::size_t size) {
    if (fd < 0 || base == 0 || size == 0) return false;
    const std::string path = "/proc/" + std::to_string(s.pid) + "/fd/" + std::to_string(fd);
    const int pfd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (pfd < 0) return false;
    struct stat st{};
    void* view = MAP_FAILED;
    if (fstat(pfd, &st) == 0 && static_cast<std::size_t>(st.st_size) == size)
      view = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, pfd, 0);
    close(pfd);
    if (view == MAP_FAILED) return false;
    s.hbm_base = base;
    s.hbm_size = size;
    s.hbm_view = static_cast<char*>(view);
    return true;
  }

  bool readable_from(int r) override {
    if (!local_[r]) return false;
    RingCtl* c = segs_[rank_].ctl(r);
    return c->head.load(std::memory_order_acquire) - c->tail.load(std::memory_order_relaxed) >= kSlot;
  }

  std::vector<Segment> segs_;
  std::vector<char> local_;  // ranks reachable through shared memory (this host, not this rank)
  bool peer_read_;
  std::vector<uint64_t> rdv_sent_;  // peer-read messages sent per peer (their acks complete the sends)
  int hbm_fd_ = -1;                 // the runtime's memfd of our device memory (owned by the runtime)
  std::string own_name_;
};

}  // namespace

std::unique_ptr<Transport> make_shm_transport(Rendezvous& rv, const std::string& prefix, int rank, int size,
                                              std::size_t ring_bytes, const std::vector<int>& local, int hbm_device) {
  auto t = std::make_unique<ShmTransport>(rank, size, local, hbm_device);
  t->setup(rv, prefix, ring_bytes);
  return t;
}

bool shm_peer_read_enabled(const Transport& t) {
  const auto* s = dynamic_cast<const ShmTransport*>(&t);
  return s && s->peer_read();
}

}  // namespace hccl_sim
