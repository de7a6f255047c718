// gtests of the hccl backend's torch-free layers: the collectives' reductions (in place, out of place,
// fp16/bf16, concurrent callers), TCP framing (bad magic, truncated and oversized frames rejected), shm
// header checks (incl. forged peer-read frames), and 4 ranks as threads running the collectives over
// shm, shm with peer reads out of each other's device memory, the fullmesh over mapped peer memory and
// the hybrid shm+tcp transport (2 simulated hosts), checked exactly against reference values.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "collectives.h"
#include "hybrid_transport.h"
#include "shm_transport.h"
#include "tcp_transport.h"
#include "npu_kernels/dtype.h"
#include "npu_kernels/collective_math.h"
#include "npu_sim/runtime.h"

namespace {

using hccl_sim::CommError;
using hccl_sim::MsgHeader;
using hccl_sim::Xfer;
using npu_kernels::DType;
using npu_kernels::ReduceKind;

// Elements in device memory of `device` (the runtime's shareable HBM), as the torch layer hands them over.
template <typename T>
struct DeviceBuf {
  DeviceBuf(int device, std::size_t n) : n(n) {
    void* p = nullptr;
    if (npu_sim::malloc_device(device, &p, std::max<std::size_t>(1, n) * sizeof(T)) != npu_sim::Status::kSuccess)
      throw std::runtime_error("malloc_device failed: " + npu_sim::last_error_message());
    data = static_cast<T*>(p);
  }
  ~DeviceBuf() { npu_sim::free_device(data); }
  DeviceBuf(const DeviceBuf&) = delete;
  DeviceBuf& operator=(const DeviceBuf&) = delete;
  T& operator[](std::size_t i) { return data[i]; }
  T* data = nullptr;
  std::size_t n = 0;
};

// ---------------------------------------------------------------------------------------------- reductions

TEST(HcclReduce, Fp32InPlaceAndOutOfPlaceAtOddOffsets) {
  for (std::size_t n : {1u, 7u, 64u, 1031u}) {
    std::vector<float> a(n + 3), b(n + 3), out(n + 3, -1.f);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = float(i % 13) - 6.f, b[i] = float(i % 5) * 0.5f;
    npu_kernels::reduce_to(DType::kFloat32, ReduceKind::kSum, out.data() + 1, a.data() + 1, b.data() + 2, n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i + 1], a[i + 1] + b[i + 2]) << n << " " << i;
    EXPECT_EQ(out[0], -1.f);
    EXPECT_EQ(out[n + 1], -1.f);
    std::vector<float> ref = a;
    npu_kernels::reduce_into(DType::kFloat32, ReduceKind::kMax, a.data() + 1, b.data() + 1, n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(a[i + 1], std::max(ref[i + 1], b[i + 1]));
  }
}

// The streaming-store variant (large messages) gives exactly reduce_to's results: every dtype, a
// destination that is not 64-byte aligned (head, whole lines, tail), and in place.
TEST(HcclReduce, StreamingPieceMatchesPlainReduce) {
  const std::size_t big = npu_kernels::kStreamReduceBytes;
  for (DType t : {DType::kFloat32, DType::kBFloat16, DType::kFloat16, DType::kInt64, DType::kInt8, DType::kBool,
                  DType::kFloat64}) {
    const std::size_t esz = npu_kernels::dtype_size(t), n = 1000, bytes = (n + 80) * esz;
    std::vector<unsigned char> a(bytes), b(bytes), want(bytes), got(bytes), inplace;
    for (std::size_t i = 0; i < bytes; ++i) {
      a[i] = static_cast<unsigned char>((i * 37 + 11) % 7);  // small values: valid bools, no fp16 inf/nan
      b[i] = static_cast<unsigned char>((i * 13 + 5) % 3);
    }
    for (std::size_t off : {std::size_t(0), std::size_t(1), std::size_t(5)}) {
      const std::size_t o = off * esz;
      for (ReduceKind k : {ReduceKind::kSum, ReduceKind::kMax}) {
        npu_kernels::reduce_to(t, k, want.data() + o, a.data() + o, b.data(), n);
        npu_kernels::reduce_to_piece(t, k, got.data() + o, a.data() + o, b.data(), n, big);
        ASSERT_EQ(0, std::memcmp(want.data() + o, got.data() + o, n * esz)) << int(t) << " off " << off;
        inplace = a;
        npu_kernels::reduce_to_piece(t, k, inplace.data() + o, inplace.data() + o, b.data(), n, big);
        ASSERT_EQ(0, std::memcmp(want.data() + o, inplace.data() + o, n * esz)) << int(t) << " in place";
      }
    }
  }
}

// copy_piece with streaming stores (large messages) copies exactly: unaligned heads, whole lines, tails.
TEST(HcclReduce, StreamingCopyPieceIsExact) {
  std::vector<unsigned char> src(5000), dst(5200);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 31 + 7);
  for (std::size_t off : {0u, 1u, 63u}) {
    for (std::size_t len : {0u, 1u, 64u, 200u, 4999u}) {
      std::fill(dst.begin(), dst.end(), 0xAB);
      npu_kernels::copy_piece(dst.data() + off, src.data() + 1, len, npu_kernels::kStreamCopyBytes);
      ASSERT_EQ(0, std::memcmp(dst.data() + off, src.data() + 1, len)) << off << " " << len;
      ASSERT_EQ(dst[off + len], 0xAB) << "wrote past the end: " << off << " " << len;
      if (off) ASSERT_EQ(dst[off - 1], 0xAB) << "wrote before the start";
    }
  }
}

// copy_piece_to: three destinations at the same offset within a line (one streaming pass) and at
// different ones (a pass each), every length class; nothing written outside [off, off + len).
TEST(HcclReduce, StreamingCopyToSeveralDestinationsIsExact) {
  constexpr std::size_t kSpan = 5248;
  std::vector<unsigned char> src(5000), mem(3 * kSpan + 64);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 29 + 3);
  unsigned char* base = mem.data() + (64 - reinterpret_cast<std::uintptr_t>(mem.data()) % 64) % 64;
  for (bool same : {true, false}) {
    for (std::size_t off : {0u, 5u, 63u}) {
      for (std::size_t len : {0u, 1u, 64u, 130u, 4999u}) {
        std::fill(mem.begin(), mem.end(), 0xCD);
        std::size_t at[3];
        void* dst[3];
        for (std::size_t j = 0; j < 3; ++j) {
          at[j] = j * kSpan + off + (same ? 0 : j * 7);
          dst[j] = base + at[j];
        }
        npu_kernels::copy_piece_to(dst, 3, src.data() + 1, len, npu_kernels::kStreamCopyBytes);
        for (std::size_t j = 0; j < 3; ++j) {
          ASSERT_EQ(0, std::memcmp(dst[j], src.data() + 1, len)) << same << " " << off << " " << len << " " << j;
          ASSERT_EQ(base[at[j] + len], 0xCD) << "wrote past the end of destination " << j;
          if (at[j]) ASSERT_EQ(base[at[j] - 1], 0xCD) << "wrote before destination " << j;
        }
      }
    }
  }
}

TEST(HcclReduce, HalfAndBFloat16CombineInFloat) {
  const std::size_t n = 1000;
  std::vector<npu_kernels::Half> h(n), hs(n);
  std::vector<npu_kernels::BFloat16> bf(n), bs(n);
  for (std::size_t i = 0; i < n; ++i) {
    h[i] = npu_kernels::Half(float(i % 100));
    hs[i] = npu_kernels::Half(float(i % 7) - 3.f);
    bf[i] = npu_kernels::BFloat16(float(i % 50));
    bs[i] = npu_kernels::BFloat16(float(i % 3));
  }
  hs[5] = npu_kernels::Half(std::numeric_limits<float>::quiet_NaN());
  npu_kernels::reduce_into(DType::kFloat16, ReduceKind::kSum, h.data(), hs.data(), n);
  npu_kernels::reduce_into(DType::kBFloat16, ReduceKind::kSum, bf.data(), bs.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i == 5) {
      EXPECT_TRUE(std::isnan(static_cast<float>(h[i])));
      continue;
    }
    ASSERT_EQ(static_cast<float>(h[i]), float(i % 100) + float(i % 7) - 3.f) << i;
    ASSERT_EQ(static_cast<float>(bf[i]), float(i % 50) + float(i % 3)) << i;
  }
  // 2049 + 1 in fp16 is 2050 exactly; 2048 + 1 rounds to even (2048): one rounding after a float sum.
  npu_kernels::Half x[2] = {npu_kernels::Half(2048.f), npu_kernels::Half(2050.f)}, y[2] = {npu_kernels::Half(1.f), npu_kernels::Half(1.f)};
  npu_kernels::reduce_into(DType::kFloat16, ReduceKind::kSum, x, y, 2);
  EXPECT_EQ(static_cast<float>(x[0]), 2048.f);
  EXPECT_EQ(static_cast<float>(x[1]), 2052.f);
}

TEST(HcclReduce, ConcurrentCallersDoNotInterfere) {
  std::vector<std::thread> ts;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([t, &bad] {
      std::vector<int32_t> acc(4099, 0), add(4099);
      for (std::size_t i = 0; i < add.size(); ++i) add[i] = int32_t(i) * (t + 1);
      for (int it = 0; it < 200; ++it) npu_kernels::reduce_into(DType::kInt32, ReduceKind::kSum, acc.data(), add.data(), acc.size());
      for (std::size_t i = 0; i < acc.size(); ++i) bad[t] += acc[i] != int32_t(i) * (t + 1) * 200;
    });
  }
  for (auto& th : ts) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(bad[t], 0) << t;
}

// ---------------------------------------------------------------------------------------------- helpers

class MemRendezvous final : public hccl_sim::Rendezvous {
 public:
  void set(const std::string& k, const std::string& v) override {
    std::lock_guard<std::mutex> lk(mu_);
    kv_[k] = v;
    cv_.notify_all();
  }
  std::string get(const std::string& k) override {
    std::unique_lock<std::mutex> lk(mu_);
    if (!cv_.wait_for(lk, std::chrono::seconds(wait_s), [&] { return kv_.count(k) > 0; })) throw CommError("rendezvous timeout: " + k);
    return kv_[k];
  }
  bool try_get(const std::string& k, std::string* v) override {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = kv_.find(k);
    if (it == kv_.end()) return false;
    *v = it->second;
    return true;
  }
  int wait_s = 20;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> kv_;
};

const char* reduce_or_root_word(const std::string& what) { return what == "allreduce" ? "reduce_op=" : "root="; }

std::chrono::steady_clock::time_point soon(int s = 10) { return std::chrono::steady_clock::now() + std::chrono::seconds(s); }

MsgHeader hdr(uint64_t bytes, uint64_t numel = 4) {
  MsgHeader h;
  h.op = 1;
  h.dtype = 6;
  h.seq = 1;
  h.numel = numel;
  h.bytes = bytes;
  return h;
}

// Runs fn(rank) on `n` threads; returns the first exception message per rank ("" if none).
std::vector<std::string> on_ranks(int n, const std::function<void(int)>& fn) {
  std::vector<std::string> err(n);
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r) {
    ts.emplace_back([&, r] {
      try {
        fn(r);
      } catch (const std::exception& e) {
        err[r] = e.what();
      }
    });
  }
  for (auto& t : ts) t.join();
  return err;
}

// ---------------------------------------------------------------------------------------------- tcp framing

// Rank 0 is a real TcpTransport; "rank 1" is a raw socket that says hello and then writes `wire`.
std::string tcp_receive_from_raw_peer(const std::string& wire, uint64_t expect_bytes, std::vector<char>* got = nullptr) {
  MemRendezvous rv;
  std::string error;
  std::thread fake([&] {
    std::istringstream addr(rv.get("t/tcp/0"));
    std::string host, ip;
    int port = 0;
    addr >> host >> ip >> port;
    const uint64_t token = std::stoull(rv.get("t/tcp/token"));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
    struct { uint32_t magic; int32_t rank; uint64_t token; } hello{0x48454c4fu, 1, token};
    ASSERT_EQ(send(fd, &hello, sizeof(hello), 0), ssize_t(sizeof(hello)));
    if (!wire.empty()) ASSERT_EQ(send(fd, wire.data(), wire.size(), 0), ssize_t(wire.size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    close(fd);  // EOF after the bytes: a truncated frame must not hang the receiver
  });
  try {
    auto t = hccl_sim::make_tcp_transport(rv, "t", 0, 2, std::chrono::seconds(10), {0, 1});
    std::vector<char> buf(expect_bytes);
    Xfer x;
    x.peer = 1;
    x.hdr = hdr(expect_bytes);
    x.dst = buf.data();
    std::vector<Xfer*> xs{&x};
    hccl_sim::run_xfers(*t, xs, soon(), nullptr, "test");
    if (got) *got = buf;
  } catch (const CommError& e) {
    error = e.what();
  }
  fake.join();
  return error;
}

std::string frame(const MsgHeader& h, const std::string& payload) {
  std::string s(reinterpret_cast<const char*>(&h), sizeof(h));
  return s + payload;
}

TEST(HcclTcpFraming, ValidFrameIsDelivered) {
  std::vector<char> got;
  EXPECT_EQ(tcp_receive_from_raw_peer(frame(hdr(16), "0123456789abcdef"), 16, &got), "");
  EXPECT_EQ(std::string(got.begin(), got.end()), "0123456789abcdef");
}

TEST(HcclTcpFraming, BadMagicIsRejected) {
  MsgHeader h = hdr(16);
  h.magic = 0xdeadbeef;
  EXPECT_NE(tcp_receive_from_raw_peer(frame(h, std::string(16, 'x')), 16).find("malformed frame"), std::string::npos);
}

TEST(HcclTcpFraming, TruncatedFrameIsAnErrorNotAHang) {
  const std::string err = tcp_receive_from_raw_peer(frame(hdr(16), "01234567"), 16);
  EXPECT_NE(err.find("closed inside or before a frame"), std::string::npos) << err;
  const std::string half_header = frame(hdr(16), "").substr(0, 10);
  EXPECT_NE(tcp_receive_from_raw_peer(half_header, 16).find("closed"), std::string::npos);
}

TEST(HcclTcpFraming, OversizedOrMismatchedFrameIsRejected) {
  EXPECT_NE(tcp_receive_from_raw_peer(frame(hdr(uint64_t(1) << 40), "xx"), 16).find("size mismatch"), std::string::npos);
  EXPECT_NE(tcp_receive_from_raw_peer(frame(hdr(16, 5), std::string(16, 'x')), 16).find("desync"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------- shm checks

TEST(HcclShm, BadMagicAndDesyncAreRejected) {
  for (uint32_t magic : {hccl_sim::kMsgMagic, 0x12345678u}) {
    MemRendezvous rv;
    const auto err = on_ranks(2, [&](int r) {
      auto t = hccl_sim::make_shm_transport(rv, "s", r, 2, 1 << 20, {0, 1}, -1);
      std::vector<char> buf(64);
      Xfer x;
      x.peer = 1 - r;
      x.is_send = r == 1;
      x.hdr = hdr(64, r == 1 ? 5 : 4);  // rank 1 sends numel 5, rank 0 expects 4
      if (r == 1) x.hdr.magic = magic;
      x.src = buf.data();
      x.dst = buf.data();
      std::vector<Xfer*> xs{&x};
      hccl_sim::run_xfers(*t, xs, soon(r == 1 ? 1 : 10), nullptr, "test");
    });
    EXPECT_NE(err[0].find(magic == hccl_sim::kMsgMagic ? "desync" : "malformed frame"), std::string::npos) << err[0];
  }
}

// Ranks that disagree on a broadcast's root, or on an all_reduce's reduce op, fail with a typed desync
// error on every rank instead of finishing with different data (a one-way broadcast with two "roots"
// would otherwise complete on both).
TEST(HcclShm, RootAndReduceOpDisagreementIsADesyncOnEveryRank) {
  for (const char* what : {"broadcast", "gather", "scatter", "allreduce"}) {
    MemRendezvous rv;
    std::vector<hccl_sim::CommErrorKind> kinds(2, hccl_sim::CommErrorKind::kOther);
    const auto err = on_ranks(2, [&](int r) {
      auto t = hccl_sim::make_shm_transport(rv, "s", r, 2, 1 << 20, {0, 1}, -1);
      std::vector<char> scratch;
      std::vector<float> buf(16, float(r + 1)), other(16);
      MsgHeader h = hdr(0, 16);
      const bool reduce = std::string(what) == "allreduce";
      h.tag = hccl_sim::collective_tag(reduce ? r : -1, reduce ? -1 : r);  // each rank its own root / op
      hccl_sim::CommContext c{*t, h, soon(5), nullptr, hccl_sim::Algo::kAuto, "test", &scratch};
      try {
        if (std::string(what) == "broadcast") hccl_sim::broadcast(c, buf.data(), 64, r);
        if (std::string(what) == "gather") hccl_sim::gather(c, buf.data(), {buf.data(), other.data()}, 64, r);
        if (std::string(what) == "scatter") hccl_sim::scatter(c, {buf.data(), other.data()}, buf.data(), 64, r);
        if (reduce) hccl_sim::allreduce(c, buf.data(), 16, npu_kernels::DType::kFloat32, npu_kernels::ReduceKind::kSum);
      } catch (const CommError& e) {
        kinds[r] = e.kind;
        throw;
      }
    });
    for (int r = 0; r < 2; ++r) {
      EXPECT_NE(err[r].find("desync"), std::string::npos) << what << " rank " << r << ": " << err[r];
      EXPECT_NE(err[r].find(reduce_or_root_word(what)), std::string::npos) << err[r];
      EXPECT_EQ(kinds[r], hccl_sim::CommErrorKind::kDesync) << what;
    }
  }
}

// A rank that dies with its segment created and not yet unlinked leaves nothing in /dev/shm once the
// others' set-up fails (they unlink the names every rank publishes before creating its segment).
TEST(HcclShm, FailedSetupUnlinksAPeersPublishedSegment) {
  MemRendezvous rv;
  rv.wait_s = 1;  // rank 1 never publishes its descriptor
  const std::string name = "/npusim-hccl-" + hccl_sim::random_hex(16);
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);  // what the dead rank 1 left
  ASSERT_GE(fd, 0);
  close(fd);
  rv.set("s/shmname/1", name);
  EXPECT_THROW(hccl_sim::make_shm_transport(rv, "s", 0, 2, 1 << 20, {0, 1}, -1), CommError);
  EXPECT_EQ(shm_open(name.c_str(), O_RDWR, 0), -1) << name << " is still in /dev/shm";
  EXPECT_EQ(errno, ENOENT);
}

TEST(HcclShm, ForgedPeerReadFrameIsRejected) {
  // Rank 1 flags a message as a peer read although its payload is not in its device memory: rank 0 must
  // refuse the address rather than read through it.
  MemRendezvous rv;
  const auto err = on_ranks(2, [&](int r) {
    auto t = hccl_sim::make_shm_transport(rv, "s", r, 2, 1 << 20, {0, 1}, r);
    ASSERT_TRUE(hccl_sim::shm_peer_read_enabled(*t));
    std::vector<char> buf(256 << 10);
    Xfer x;
    x.peer = 1 - r;
    x.is_send = r == 1;
    x.hdr = hdr(buf.size(), buf.size());
    if (r == 1) x.hdr.flags = hccl_sim::kFlagPeerRead;
    x.src = buf.data();
    x.dst = buf.data();
    std::vector<Xfer*> xs{&x};
    hccl_sim::run_xfers(*t, xs, soon(r == 1 ? 1 : 10), nullptr, "test");
  });
  EXPECT_NE(err[0].find("malformed peer-read frame from rank 1"), std::string::npos) << err[0];
}

// ---------------------------------------------------------------------------------------------- collectives

enum class Kind { kShm, kShmPeerRead, kHybrid };

// 4 ranks on threads: all_reduce, reduce_scatter and all_gather of several sizes (one-shot and ring),
// each checked exactly (small integers in float).
void run_collectives(Kind kind) {
  constexpr int n = 4;
  MemRendezvous rv;
  const auto err = on_ranks(n, [&](int r) {
    std::unique_ptr<hccl_sim::Transport> t;
    if (kind == Kind::kHybrid) {
      std::vector<int> local, remote;
      std::vector<char> is_local(n);
      for (int p = 0; p < n; ++p) {
        is_local[p] = p / 2 == r / 2;
        (is_local[p] ? local : remote).push_back(p);
      }
      auto shm = hccl_sim::make_shm_transport(rv, "h", r, n, 1 << 20, local, -1);
      auto tcp = hccl_sim::make_tcp_transport(rv, "h", r, n, std::chrono::seconds(10), remote);
      t = hccl_sim::make_hybrid_transport(r, n, is_local, std::move(shm), std::move(tcp));
      ASSERT_STREQ(t->name(), "shm+tcp");
    } else {
      t = hccl_sim::make_shm_transport(rv, "s", r, n, 1 << 20, {0, 1, 2, 3}, kind == Kind::kShmPeerRead ? r : -1);
      ASSERT_EQ(hccl_sim::shm_peer_read_enabled(*t), kind == Kind::kShmPeerRead);
    }
    std::vector<char> scratch;
    uint32_t seq = 0;
    auto ctx = [&](std::size_t numel) {
      MsgHeader h;
      h.op = 1;
      h.dtype = static_cast<int8_t>(DType::kFloat32);
      h.seq = ++seq;
      h.numel = numel;
      return hccl_sim::CommContext{*t, h, soon(30), nullptr, hccl_sim::Algo::kAuto, "test", &scratch};
    };
    auto val = [](int rank, std::size_t i, int salt) { return float((i * 7 + rank * 3 + salt) % 11); };
    for (std::size_t count : {std::size_t(5), std::size_t(40000), std::size_t(300001)}) {
      DeviceBuf<float> buf(r, count);
      for (std::size_t i = 0; i < count; ++i) buf[i] = val(r, i, 0);
      auto c = ctx(count);
      hccl_sim::allreduce(c, buf.data, count, DType::kFloat32, ReduceKind::kSum);
      for (std::size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int p = 0; p < n; ++p) want += val(p, i, 0);
        ASSERT_EQ(buf[i], want) << "all_reduce count=" << count << " i=" << i;
      }
      DeviceBuf<float> in(r, count * n), out(r, count);
      std::vector<const void*> blocks;
      for (int p = 0; p < n; ++p) {
        for (std::size_t i = 0; i < count; ++i) in[p * count + i] = val(r, i, p);
        blocks.push_back(in.data + p * count);
      }
      auto c2 = ctx(count);
      hccl_sim::reduce_scatter(c2, blocks, out.data, count, DType::kFloat32, ReduceKind::kSum);
      for (std::size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int p = 0; p < n; ++p) want += val(p, i, r);
        ASSERT_EQ(out[i], want) << "reduce_scatter count=" << count << " i=" << i;
      }
      DeviceBuf<float> mine(r, count), all(r, count * n);
      for (std::size_t i = 0; i < count; ++i) mine[i] = val(r, i, 9);
      std::vector<void*> outs;
      for (int p = 0; p < n; ++p) outs.push_back(all.data + p * count);
      auto c3 = ctx(count);
      hccl_sim::allgather(c3, mine.data, outs, count * sizeof(float));
      for (int p = 0; p < n; ++p)
        for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(all[p * count + i], val(p, i, 9)) << "all_gather";
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(err[r], "") << "rank " << r;
}

// Forwards to a transport (peer memory included) and counts the payload bytes this rank sent: all of
// them, and those to ranks of other hosts.
class CountingTransport final : public hccl_sim::Transport {
 public:
  CountingTransport(std::unique_ptr<hccl_sim::Transport> inner, std::vector<int> host_of)
      : Transport(inner->rank(), inner->size()), inner_(std::move(inner)), host_of_(std::move(host_of)) {}
  const char* name() const override { return inner_->name(); }
  bool progress(std::vector<Xfer*>& xfers) override {
    std::vector<char> was(xfers.size());
    for (std::size_t i = 0; i < xfers.size(); ++i) was[i] = xfers[i]->finished;
    const bool moved = inner_->progress(xfers);
    for (std::size_t i = 0; i < xfers.size(); ++i) {
      const Xfer& x = *xfers[i];
      if (was[i] || !x.finished || !x.is_send) continue;
      sent_bytes += x.hdr.bytes;
      if (host_of_[x.peer] != host_of_[rank()]) cross_bytes += x.hdr.bytes;
    }
    return moved;
  }
  uint32_t wait_token() override { return inner_->wait_token(); }
  void idle_wait(uint32_t token, const std::vector<Xfer*>& xfers, std::chrono::microseconds max_wait) override {
    inner_->idle_wait(token, xfers, max_wait);
  }
  void check_peers() override { inner_->check_peers(); }
  bool maps_peer_memory() const override { return inner_->maps_peer_memory(); }
  uint64_t shareable_address(const void* p, std::size_t bytes) const override {
    return inner_->shareable_address(p, bytes);
  }
  char* peer_memory(int peer, uint64_t addr, std::size_t bytes) override {
    return inner_->peer_memory(peer, addr, bytes);
  }
  std::size_t sent_bytes = 0, cross_bytes = 0;

 private:
  std::unique_ptr<hccl_sim::Transport> inner_;
  std::vector<int> host_of_;
};

// 4 ranks on one host with mapped peer memory: all_reduce, all_gather, reduce_scatter and broadcast (fp32
// and bf16, sizes that do not split evenly) read and write the peers' buffers in place, so the only messages are
// the address exchange and the closing barrier. When one rank's buffer is not in its device memory,
// every rank falls back to the ring alike. Forcing the ring bypasses the direct path.
TEST(HcclCollectives, FullmeshOverPeerMemorySendsOnlyAddresses) {
  constexpr int n = 4;
  MemRendezvous rv;
  std::vector<std::string> log(n);
  const auto err = on_ranks(n, [&](int r) {
    CountingTransport t(hccl_sim::make_shm_transport(rv, "d", r, n, 1 << 20, {0, 1, 2, 3}, r), {0, 0, 0, 0});
    ASSERT_TRUE(t.maps_peer_memory());
    std::vector<char> scratch;
    uint32_t seq = 0;
    auto ctx = [&](std::size_t numel, DType dt, hccl_sim::Algo algo) {
      MsgHeader h;
      h.op = 1;
      h.dtype = static_cast<int8_t>(dt);
      h.seq = ++seq;
      h.numel = numel;
      return hccl_sim::CommContext{t, h, soon(30), nullptr, algo, "test", &scratch};
    };
    auto val = [](int rank, std::size_t i, int salt) { return float((i * 7 + rank * 3 + salt) % 11); };
    constexpr std::size_t count = 100003;
    for (auto algo : {hccl_sim::Algo::kAuto, hccl_sim::Algo::kMesh, hccl_sim::Algo::kRing}) {
      for (bool host_buffer_on_rank2 : {false, true}) {
        // all_reduce (bf16: chunks and pieces of 2-byte elements)
        DeviceBuf<npu_kernels::BFloat16> dev(r, count);
        std::vector<npu_kernels::BFloat16> host(count);
        npu_kernels::BFloat16* buf = host_buffer_on_rank2 && r == 2 ? host.data() : dev.data;
        for (std::size_t i = 0; i < count; ++i) buf[i] = npu_kernels::BFloat16(val(r, i, 0));
        std::size_t before = t.sent_bytes;
        auto c = ctx(count, DType::kBFloat16, algo);
        hccl_sim::allreduce(c, buf, count, DType::kBFloat16, ReduceKind::kSum);
        for (std::size_t i = 0; i < count; ++i) {
          float want = 0;
          for (int p = 0; p < n; ++p) want += val(p, i, 0);
          ASSERT_EQ(float(buf[i]), want) << "all_reduce i=" << i;
        }
        const bool direct = algo != hccl_sim::Algo::kRing && !host_buffer_on_rank2;
        if (direct) EXPECT_EQ(t.sent_bytes - before, (n - 1) * sizeof(uint64_t)) << "all_reduce";
        else EXPECT_GT(t.sent_bytes - before, count * 2 / 2) << "all_reduce";
        // reduce_scatter (fp32)
        DeviceBuf<float> in(r, count * n), out(r, count);
        std::vector<float> host_in(count * n);
        float* inp = host_buffer_on_rank2 && r == 2 ? host_in.data() : in.data;
        std::vector<const void*> blocks;
        for (int p = 0; p < n; ++p) {
          for (std::size_t i = 0; i < count; ++i) inp[p * count + i] = val(r, i, p);
          blocks.push_back(inp + p * count);
        }
        before = t.sent_bytes;
        auto c2 = ctx(count, DType::kFloat32, algo);
        hccl_sim::reduce_scatter(c2, blocks, out.data, count, DType::kFloat32, ReduceKind::kSum);
        for (std::size_t i = 0; i < count; ++i) {
          float want = 0;
          for (int p = 0; p < n; ++p) want += val(p, i, r);
          ASSERT_EQ(out[i], want) << "reduce_scatter i=" << i;
        }
        if (direct) EXPECT_EQ(t.sent_bytes - before, (n - 1) * n * sizeof(uint64_t)) << "reduce_scatter";
        else EXPECT_GT(t.sent_bytes - before, count * 4) << "reduce_scatter";
        // all_gather (fp32), in place for rank 1 (its input is its own output slot)
        DeviceBuf<float> mine(r, count), all(r, count * n);
        std::vector<float> host_all(count * n);
        float* allp = host_buffer_on_rank2 && r == 2 ? host_all.data() : all.data;
        float* src = r == 1 ? allp + count : mine.data;
        for (std::size_t i = 0; i < count; ++i) src[i] = val(r, i, 9);
        std::vector<void*> outs;
        for (int p = 0; p < n; ++p) outs.push_back(allp + p * count);
        before = t.sent_bytes;
        auto c3 = ctx(count, DType::kFloat32, algo);
        hccl_sim::allgather(c3, src, outs, count * sizeof(float));
        for (int p = 0; p < n; ++p)
          for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(allp[p * count + i], val(p, i, 9)) << "all_gather";
        if (direct) EXPECT_EQ(t.sent_bytes - before, (n - 1) * n * sizeof(uint64_t)) << "all_gather";
        else EXPECT_GT(t.sent_bytes - before, count * 4) << "all_gather";
        // broadcast from rank 1, large enough for the direct version (every rank copies a share)
        constexpr std::size_t big = (8u << 20) / sizeof(float) + 5;
        DeviceBuf<float> dev_b(r, big);
        std::vector<float> host_b(big);
        float* b = host_buffer_on_rank2 && r == 2 ? host_b.data() : dev_b.data;
        for (std::size_t i = 0; i < big; ++i) b[i] = r == 1 ? val(1, i, 5) : -1.f;
        before = t.sent_bytes;
        auto c4 = ctx(big, DType::kFloat32, algo);
        hccl_sim::broadcast(c4, b, big * sizeof(float), 1);
        for (std::size_t i = 0; i < big; ++i) ASSERT_EQ(b[i], val(1, i, 5)) << "broadcast i=" << i;
        if (direct) EXPECT_EQ(t.sent_bytes - before, (n - 1) * sizeof(uint64_t)) << "broadcast";
        else EXPECT_GE(t.sent_bytes - before, r == 1 ? big * 4 : 0) << "broadcast";
      }
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(err[r], "") << "rank " << r;
}

// 2 hosts x 2 ranks: the two-level all_reduce gives the exact sums and sends each rank's N/2 (not the
// flat ring's 1.5 N on the two host-crossing links) between hosts: 2 N in all instead of 3 N.
// Rank 0's transport, made to lose the race in which the peer writes its last frame and exits between rank
// 0's progress() and its liveness check: receives are held back until check_peers() has reported the exited
// peer once, so that report always comes while the peer's frame sits unread.
class PeerExitsAfterWritingTransport final : public hccl_sim::Transport {
 public:
  PeerExitsAfterWritingTransport(std::unique_ptr<hccl_sim::Transport> inner, const std::atomic<bool>& peer_exited)
      : Transport(inner->rank(), inner->size()), inner_(std::move(inner)), peer_exited_(peer_exited) {}
  const char* name() const override { return inner_->name(); }
  bool progress(std::vector<Xfer*>& xfers) override {
    if (reported_) return inner_->progress(xfers);
    std::vector<Xfer*> sends;
    for (Xfer* x : xfers) if (x->is_send) sends.push_back(x);
    return !sends.empty() && inner_->progress(sends);
  }
  uint32_t wait_token() override { return inner_->wait_token(); }
  void idle_wait(uint32_t token, const std::vector<Xfer*>& xfers, std::chrono::microseconds max_wait) override {
    inner_->idle_wait(token, xfers, std::min(max_wait, std::chrono::microseconds(1000)));
  }
  void check_peers() override {
    inner_->check_peers();
    if (!peer_exited_.load()) return;
    reported_ = true;
    throw CommError("hccl: rank 1 has exited; the collective cannot complete", hccl_sim::CommErrorKind::kPeerGone);
  }

 private:
  std::unique_ptr<hccl_sim::Transport> inner_;
  const std::atomic<bool>& peer_exited_;
  bool reported_ = false;
};

// A peer that finished its part of a collective and exited does not fail the ranks still reading its last
// frames (CI saw rank 0's barrier fail so); a peer that exited before writing them does, as a peer gone.
TEST(HcclShm, PeerThatExitsAfterItsLastFrameIsDrainedNotReported) {
  for (bool peer_finishes : {true, false}) {
    MemRendezvous rv;
    std::atomic<bool> exited{false};
    hccl_sim::CommErrorKind kind = hccl_sim::CommErrorKind::kOther;
    const auto err = on_ranks(2, [&](int r) {
      auto inner = hccl_sim::make_shm_transport(rv, "x", r, 2, 1 << 20, {0, 1}, -1);
      std::vector<char> scratch;
      if (r == 1) {
        if (peer_finishes) {
          hccl_sim::CommContext c{*inner, hdr(0, 0), soon(10), nullptr, hccl_sim::Algo::kAuto, "test", &scratch};
          hccl_sim::barrier(c);
        }
        exited = true;
        return;
      }
      PeerExitsAfterWritingTransport t(std::move(inner), exited);
      hccl_sim::CommContext c{t, hdr(0, 0), soon(10), nullptr, hccl_sim::Algo::kAuto, "test", &scratch};
      try {
        hccl_sim::barrier(c);
      } catch (const CommError& e) {
        kind = e.kind;
        throw;
      }
    });
    EXPECT_EQ(err[1], "");
    if (peer_finishes) {
      EXPECT_EQ(err[0], "");
    } else {
      EXPECT_NE(err[0].find("has exited"), std::string::npos) << err[0];
      EXPECT_EQ(kind, hccl_sim::CommErrorKind::kPeerGone);
    }
  }
}

TEST(HcclCollectives, TwoLevelAllReduceAcrossHosts) {
  constexpr int n = 4;
  constexpr std::size_t count = 300000;
  const std::vector<int> host_of{0, 0, 1, 1};
  MemRendezvous rv;
  std::vector<std::size_t> cross(2 * n, 0);
  const auto err = on_ranks(n, [&](int r) {
    std::vector<int> local, remote;
    std::vector<char> is_local(n);
    for (int p = 0; p < n; ++p) {
      is_local[p] = host_of[p] == host_of[r];
      (is_local[p] ? local : remote).push_back(p);
    }
    auto shm = hccl_sim::make_shm_transport(rv, "h", r, n, 1 << 20, local, r);
    auto tcp = hccl_sim::make_tcp_transport(rv, "h", r, n, std::chrono::seconds(10), remote);
    CountingTransport t(hccl_sim::make_hybrid_transport(r, n, is_local, std::move(shm), std::move(tcp)), host_of);
    std::vector<char> scratch;
    uint32_t seq = 0;
    for (auto algo : {hccl_sim::Algo::kAuto, hccl_sim::Algo::kRing}) {
      DeviceBuf<float> buf(r, count);
      for (std::size_t i = 0; i < count; ++i) buf[i] = float((i * 5 + r * 3) % 17);
      MsgHeader h;
      h.op = 1;
      h.dtype = static_cast<int8_t>(DType::kFloat32);
      h.seq = ++seq;
      h.numel = count;
      hccl_sim::CommContext c{t, h, soon(30), nullptr, algo, "test", &scratch, &host_of};
      const std::size_t before = t.cross_bytes;
      hccl_sim::allreduce(c, buf.data, count, DType::kFloat32, ReduceKind::kSum);
      cross[r * 2 + (algo == hccl_sim::Algo::kRing)] = t.cross_bytes - before;
      for (std::size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int p = 0; p < n; ++p) want += float((i * 5 + p * 3) % 17);
        ASSERT_EQ(buf[i], want) << "algo " << hccl_sim::algo_name(algo) << " i=" << i;
      }
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(err[r], "") << "rank " << r;
  std::size_t two_level = 0, flat = 0;
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(cross[r * 2], count * sizeof(float) / 2) << "rank " << r;  // N/2 per rank, every rank
    two_level += cross[r * 2];
    flat += cross[r * 2 + 1];
  }
  EXPECT_EQ(two_level, 2 * count * sizeof(float));
  EXPECT_EQ(flat, 3 * count * sizeof(float));
}

TEST(HcclCollectives, FourRanksOverShm) { run_collectives(Kind::kShm); }
TEST(HcclCollectives, FourRanksOverShmWithPeerReads) { run_collectives(Kind::kShmPeerRead); }
TEST(HcclCollectives, TwoHostsOfTwoRanksOverShmAndTcp) { run_collectives(Kind::kHybrid); }


// 2 ranks with mapped peer memory: all_gather keeps the ring's single step below kPairDirectAllgatherBytes
// per rank and pushes into both outputs from there on; reduce_scatter keeps the ring unless fullmesh is asked
// for, whose output then streams (kStreamReduceBytes) on both ranks. Values exact, uneven sizes.
TEST(HcclCollectives, TwoRanksPickRingOrFullmeshBySize) {
  constexpr int n = 2;
  MemRendezvous rv;
  const auto err = on_ranks(n, [&](int r) {
    CountingTransport t(hccl_sim::make_shm_transport(rv, "p", r, n, 1 << 20, {0, 1}, r), {0, 0});
    ASSERT_TRUE(t.maps_peer_memory());
    std::vector<char> scratch;
    uint32_t seq = 0;
    auto ctx = [&](std::size_t numel, hccl_sim::Algo algo) {
      MsgHeader h;
      h.op = 1;
      h.dtype = static_cast<int8_t>(DType::kFloat32);
      h.seq = ++seq;
      h.numel = numel;
      return hccl_sim::CommContext{t, h, soon(30), nullptr, algo, "test", &scratch};
    };
    auto val = [](int rank, std::size_t i, int salt) { return float((i * 5 + rank * 3 + salt) % 13); };
    const std::size_t small = (1u << 20) / sizeof(float) + 3;
    const std::size_t large = hccl_sim::kPairDirectAllgatherBytes / sizeof(float) + 3;
    for (std::size_t count : {small, large}) {
      DeviceBuf<float> mine(r, count), all(r, count * n);
      for (std::size_t i = 0; i < count; ++i) mine[i] = val(r, i, 1);
      std::vector<void*> outs{all.data, all.data + count};
      const std::size_t before = t.sent_bytes;
      auto c = ctx(count, hccl_sim::Algo::kAuto);
      hccl_sim::allgather(c, mine.data, outs, count * sizeof(float));
      for (int p = 0; p < n; ++p)
        for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(all[p * count + i], val(p, i, 1)) << "all_gather";
      if (count == large) EXPECT_EQ(t.sent_bytes - before, n * sizeof(uint64_t)) << "all_gather pushes";
      else EXPECT_EQ(t.sent_bytes - before, count * sizeof(float)) << "all_gather rings";
    }
    const std::size_t count = npu_kernels::kStreamReduceBytes / sizeof(float) + 7;
    for (auto algo : {hccl_sim::Algo::kAuto, hccl_sim::Algo::kMesh}) {
      DeviceBuf<float> in(r, count * n), out(r, count);
      for (int p = 0; p < n; ++p)
        for (std::size_t i = 0; i < count; ++i) in[p * count + i] = val(r, i, p);
      const std::size_t before = t.sent_bytes;
      auto c = ctx(count, algo);
      hccl_sim::reduce_scatter(c, {in.data, in.data + count}, out.data, count, DType::kFloat32, ReduceKind::kSum);
      for (std::size_t i = 0; i < count; ++i)
        ASSERT_EQ(out[i], val(0, i, r) + val(1, i, r)) << "reduce_scatter i=" << i;
      if (algo == hccl_sim::Algo::kMesh) EXPECT_EQ(t.sent_bytes - before, n * sizeof(uint64_t)) << "reduce_scatter";
      else EXPECT_EQ(t.sent_bytes - before, count * sizeof(float)) << "reduce_scatter";
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(err[r], "") << "rank " << r;
}

}  // namespace
