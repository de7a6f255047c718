// Collective algorithms (see collectives.h). Each step is a set of Xfers run concurrently by run_xfers;
// results are identical on every rank (mesh reduces in rank order; ring and H-D reduce each element on
// one rank and then copy it), which the bit-exact tests rely on.
#include "collectives.h"
#include "direct_collectives.h"
#include "xfer_steps.h"

#include <algorithm>
#include <cstring>

namespace hccl_sim {

namespace {

constexpr std::size_t kMeshBytes = 64 << 10;  // one-shot below this (latency-bound: 2 alpha)
// Below this a broadcast is one round trip (receivers pull from the root); from here on the copying is
// shared among all ranks, which pays for the second round trip of the direct version.
constexpr std::size_t kDirectBroadcastBytes = 8 << 20;

Xfer recv_reduce(const CommContext& c, int peer, void* p, std::size_t bytes, DType dt, ReduceKind op) {
  Xfer x = recv_copy(c, peer, nullptr, bytes);
  const std::size_t esz = npu_kernels::dtype_size(dt);
  x.elem = esz;
  char* base = static_cast<char*>(p);
  x.sink = [base, esz, dt, op](const void* d, std::size_t off, std::size_t len) {
    npu_kernels::reduce_into(dt, op, base + off, d, len / esz);
  };
  return x;
}

// Rooted collectives move data one way: ranks that disagree on the root could each finish (or each wait)
// without ever reading the other's frames. A zero-byte exchange around the ring first carries every rank's
// root in the header tag, so a disagreement anywhere fails validate_header as a desync on both sides of it.
void agree_on_root(CommContext& c) {
  const int n = c.t.size(), me = c.t.rank();
  if (n == 1) return;
  std::vector<Xfer> xs{send_to(c, mod(me + 1, n), nullptr, 0), recv_copy(c, mod(me - 1, n), nullptr, 0)};
  run(c, xs);
}

// in -> out on this rank, overlapped with the step's transfers (see run_xfers); overlapping ranges are
// moved at once instead.
void add_local_copy(const CommContext& c, std::vector<Xfer>& xs, void* out, const void* in, std::size_t bytes) {
  if (out == in || !bytes) return;
  if (ranges_overlap(out, in, bytes)) return static_cast<void>(std::memmove(out, in, bytes));
  Xfer x = recv_copy(c, c.t.rank(), out, bytes);
  x.src = in;
  xs.push_back(std::move(x));
}

void allreduce_mesh(CommContext& c, char* buf, std::size_t count, DType dt, ReduceKind op) {
  const int n = c.t.size(), me = c.t.rank();
  const std::size_t bytes = count * npu_kernels::dtype_size(dt);
  std::vector<char> staging(bytes * n);
  std::vector<Xfer> xs;
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    xs.push_back(send_to(c, r, buf, bytes));
    xs.push_back(recv_copy(c, r, staging.data() + bytes * r, bytes));
  }
  run(c, xs);
  std::memcpy(staging.data() + bytes * me, buf, bytes);
  for (int r = 1; r < n; ++r) npu_kernels::reduce_into(dt, op, staging.data(), staging.data() + bytes * r, count);
  std::memcpy(buf, staging.data(), bytes);
}

// A ring over some of the communicator's ranks: ranks[i] is the global rank at position i, me our position.
struct Ring {
  std::vector<int> ranks;
  int me = 0;
  int size() const { return static_cast<int>(ranks.size()); }
  int at(int pos) const { return ranks[mod(pos, size())]; }
};

Ring world_ring(const CommContext& c) {
  Ring g;
  for (int r = 0; r < c.t.size(); ++r) g.ranks.push_back(r);
  g.me = c.t.rank();
  return g;
}

// Ring reduce-scatter leaving the fully reduced chunk g.me (chunk i of the g.size()-way split) in buf.
void ring_reduce_scatter(CommContext& c, const Ring& g, char* buf, std::size_t count, DType dt, ReduceKind op) {
  const int n = g.size(), me = g.me;
  const std::size_t esz = npu_kernels::dtype_size(dt);
  for (int s = 0; s < n - 1; ++s) {
    const int si = mod(me - s - 1, n), ri = mod(me - s - 2, n);
    const std::size_t sb = chunk_begin(count, n, si), se = chunk_begin(count, n, si + 1);
    const std::size_t rb = chunk_begin(count, n, ri), re = chunk_begin(count, n, ri + 1);
    std::vector<Xfer> xs{send_to(c, g.at(me + 1), buf + sb * esz, (se - sb) * esz),
                         recv_reduce(c, g.at(me - 1), buf + rb * esz, (re - rb) * esz, dt, op)};
    run(c, xs);
  }
}

// Ring all-gather of the g.size() chunks of buf, each rank starting with chunk g.me.
void ring_allgather_chunks(CommContext& c, const Ring& g, char* buf, std::size_t count, std::size_t esz) {
  const int n = g.size(), me = g.me;
  for (int s = 0; s < n - 1; ++s) {
    const int si = mod(me - s, n), ri = mod(me - s - 1, n);
    const std::size_t sb = chunk_begin(count, n, si), se = chunk_begin(count, n, si + 1);
    const std::size_t rb = chunk_begin(count, n, ri), re = chunk_begin(count, n, ri + 1);
    std::vector<Xfer> xs{send_to(c, g.at(me + 1), buf + sb * esz, (se - sb) * esz),
                         recv_copy(c, g.at(me - 1), buf + rb * esz, (re - rb) * esz)};
    run(c, xs);
  }
}

// The two rings of the two-level all_reduce: the ranks of this host, and the ranks with our local index on
// every host (hosts in order of their lowest rank). False unless H >= 2 hosts hold L >= 2 ranks each.
bool two_level_rings(const CommContext& c, Ring* local, Ring* cross) {
  if (c.host_of == nullptr) return false;
  const std::vector<int>& host = *c.host_of;
  const int n = c.t.size(), me = c.t.rank();
  std::vector<std::vector<int>> members;  // per host, ascending ranks
  std::vector<int> index(n, -1);          // host -> position in members
  for (int r = 0; r < n; ++r) {
    const int h = host[r];
    if (h < 0 || h >= n) return false;
    if (index[h] < 0) {
      index[h] = static_cast<int>(members.size());
      members.emplace_back();
    }
    members[index[h]].push_back(r);
  }
  const std::size_t per_host = members[0].size();
  if (members.size() < 2 || per_host < 2) return false;
  for (const auto& m : members) if (m.size() != per_host) return false;
  const std::vector<int>& mine = members[index[host[me]]];
  local->ranks = mine;
  local->me = static_cast<int>(std::find(mine.begin(), mine.end(), me) - mine.begin());
  cross->ranks.clear();
  for (const auto& m : members) {
    if (&m == &mine) cross->me = cross->size();
    cross->ranks.push_back(m[local->me]);
  }
  return true;
}

void allreduce_two_level(CommContext& c, const Ring& local, const Ring& cross, char* buf, std::size_t count,
                         DType dt, ReduceKind op) {
  const std::size_t esz = npu_kernels::dtype_size(dt);
  ring_reduce_scatter(c, local, buf, count, dt, op);
  const std::size_t b = chunk_begin(count, local.size(), local.me), e = chunk_begin(count, local.size(), local.me + 1);
  ring_reduce_scatter(c, cross, buf + b * esz, e - b, dt, op);
  ring_allgather_chunks(c, cross, buf + b * esz, e - b, esz);
  ring_allgather_chunks(c, local, buf, count, esz);
}

void allreduce_hd(CommContext& c, char* buf, std::size_t count, DType dt, ReduceKind op) {
  const int n = c.t.size(), me = c.t.rank();
  const std::size_t esz = npu_kernels::dtype_size(dt);
  std::size_t lo = 0, hi = count;
  std::vector<std::pair<std::size_t, std::size_t>> parents;
  for (int mask = n / 2; mask >= 1; mask /= 2) {
    const int partner = me ^ mask;
    const std::size_t mid = lo + (hi - lo) / 2;
    const bool upper = (me & mask) != 0;
    const std::size_t kb = upper ? mid : lo, ke = upper ? hi : mid;
    const std::size_t sb = upper ? lo : mid, se = upper ? mid : hi;
    std::vector<Xfer> xs{send_to(c, partner, buf + sb * esz, (se - sb) * esz),
                         recv_reduce(c, partner, buf + kb * esz, (ke - kb) * esz, dt, op)};
    run(c, xs);
    parents.emplace_back(lo, hi);
    lo = kb;
    hi = ke;
  }
  for (int mask = 1; mask < n; mask *= 2) {
    const int partner = me ^ mask;
    const auto [plo, phi] = parents.back();
    parents.pop_back();
    const std::size_t ob = lo == plo ? hi : plo, oe = lo == plo ? phi : lo;  // the sibling half
    std::vector<Xfer> xs{send_to(c, partner, buf + lo * esz, (hi - lo) * esz),
                         recv_copy(c, partner, buf + ob * esz, (oe - ob) * esz)};
    run(c, xs);
    lo = plo;
    hi = phi;
  }
}

bool is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace

const char* algo_name(Algo a) {
  switch (a) {
    case Algo::kAuto: return "auto";
    case Algo::kRing: return "ring";
    case Algo::kHalvingDoubling: return "H-D_R";
    case Algo::kMesh: return "fullmesh";
  }
  return "?";
}

Algo parse_algo(const std::string& value) {
  std::string v = value;
  if (v.empty()) return Algo::kAuto;
  if (v.find(':') != std::string::npos) {  // "level0:NA;level1:ring"
    std::string chosen;
    std::size_t pos = 0;
    while (pos <= v.size()) {
      const std::size_t end = std::min(v.find(';', pos), v.size());
      const std::string item = v.substr(pos, end - pos);
      const std::size_t colon = item.find(':');
      if (colon == std::string::npos) throw CommError("HCCL_ALGO: malformed entry '" + item + "' in '" + value + "'");
      const std::string level = item.substr(0, colon), name = item.substr(colon + 1);
      if (level != "level0" && level != "level1" && level != "level2")
        throw CommError("HCCL_ALGO: unknown level '" + level + "' in '" + value + "'");
      if (name != "NA" && (chosen.empty() || level == "level1")) chosen = name;
      pos = end + 1;
    }
    v = chosen;
    if (v.empty()) return Algo::kAuto;
  }
  if (v == "ring" || v == "NHR" || v == "NB" || v == "pipeline") return Algo::kRing;
  if (v == "H-D_R" || v == "H-D" || v == "hd" || v == "halving-doubling") return Algo::kHalvingDoubling;
  if (v == "fullmesh" || v == "mesh" || v == "oneshot" || v == "one-shot" || v == "pairwise") return Algo::kMesh;
  if (v == "auto") return Algo::kAuto;
  throw CommError("HCCL_ALGO: unknown algorithm '" + v + "' (expected ring, H-D_R, fullmesh, or the form "
                  "level0:NA;level1:ring)");
}

Algo choose_allreduce_algo(Algo forced, std::size_t bytes, int ranks) {
  if (forced == Algo::kHalvingDoubling && !is_pow2(ranks)) return Algo::kRing;  // as HCCL: H-D needs 2^k
  if (forced != Algo::kAuto) return forced;
  if (bytes <= kMeshBytes) return Algo::kMesh;
  if (is_pow2(ranks) && ranks > 2 && bytes <= (4u << 20)) return Algo::kHalvingDoubling;
  return Algo::kRing;
}

void allreduce(CommContext& c, void* buf, std::size_t count, DType dt, ReduceKind op) {
  if (c.t.size() == 1 || count == 0) return;
  const std::size_t esz = npu_kernels::dtype_size(dt);
  Ring local, cross;
  if (c.algo == Algo::kAuto && count * esz > kMeshBytes && two_level_rings(c, &local, &cross))
    return allreduce_two_level(c, local, cross, static_cast<char*>(buf), count, dt, op);
  if (count * esz > kMeshBytes && direct_available(c) && direct_allreduce(c, static_cast<char*>(buf), count, dt, op))
    return;
  switch (choose_allreduce_algo(c.algo, count * esz, c.t.size())) {
    case Algo::kMesh: return allreduce_mesh(c, static_cast<char*>(buf), count, dt, op);
    case Algo::kHalvingDoubling: return allreduce_hd(c, static_cast<char*>(buf), count, dt, op);
    default: {
      const Ring world = world_ring(c);
      ring_reduce_scatter(c, world, static_cast<char*>(buf), count, dt, op);
      ring_allgather_chunks(c, world, static_cast<char*>(buf), count, esz);
    }
  }
}

void broadcast(CommContext& c, void* buf, std::size_t bytes, int root) {
  const int n = c.t.size(), me = c.t.rank();
  agree_on_root(c);
  if (bytes >= kDirectBroadcastBytes && direct_available(c) && direct_broadcast(c, buf, bytes, root)) return;
  std::vector<Xfer> xs;
  if (me == root) {
    for (int r = 0; r < n; ++r) if (r != me) xs.push_back(send_to(c, r, buf, bytes));
  } else {
    xs.push_back(recv_copy(c, root, buf, bytes));
  }
  run(c, xs);
}

void allgather(CommContext& c, const void* in, const std::vector<void*>& out, std::size_t bytes) {
  const int n = c.t.size(), me = c.t.rank();
  if (n == 1) {
    if (out[me] != in && bytes) std::memmove(out[me], in, bytes);
    return;
  }
  // From three ranks on the direct version saves steps. Two ranks keep the ring's one step (pull the
  // peer's input, copy our own) while what they touch fits the L3: it takes one round trip instead of
  // two (2 MiB per rank: 136 vs 155-181 us). Beyond, memory bandwidth bounds them, and pushing our input
  // into both outputs reads it once instead of twice (8 MiB per rank 1.36-1.39 -> 1.24 ms; 128 MiB
  // 21.6-22.9 -> 19.6-20.0 ms, with copy_piece_to's single pass).
  const bool direct = n > 2 || c.algo == Algo::kMesh || bytes >= kPairDirectAllgatherBytes;
  if (direct && bytes * n > kMeshBytes && direct_available(c) && direct_allgather(c, in, out, bytes)) return;
  if (c.algo == Algo::kMesh || (c.algo == Algo::kAuto && bytes * n <= kMeshBytes)) {
    std::vector<Xfer> xs;
    add_local_copy(c, xs, out[me], in, bytes);
    for (int r = 0; r < n; ++r) {
      if (r == me) continue;
      xs.push_back(send_to(c, r, in, bytes));
      xs.push_back(recv_copy(c, r, out[r], bytes));
    }
    return run(c, xs);
  }
  const int right = mod(me + 1, n), left = mod(me - 1, n);
  for (int s = 0; s < n - 1; ++s) {
    std::vector<Xfer> xs{send_to(c, right, s == 0 ? in : out[mod(me - s, n)], bytes),
                         recv_copy(c, left, out[mod(me - s - 1, n)], bytes)};
    if (s == 0) add_local_copy(c, xs, out[me], in, bytes);
    run(c, xs);
  }
}

char* scratch(CommContext& c, std::size_t bytes) {
  if (c.scratch->size() < bytes) c.scratch->resize(bytes);
  return c.scratch->data();
}

void reduce_scatter(CommContext& c, const std::vector<const void*>& in, void* out, std::size_t count, DType dt,
                    ReduceKind op) {
  const int n = c.t.size(), me = c.t.rank();
  const std::size_t esz = npu_kernels::dtype_size(dt), bytes = count * esz;
  if (!bytes) return;
  if (n == 1) return static_cast<void>(std::memmove(out, in[me], bytes));
  // Two ranks keep the ring's single step unless fullmesh is asked for: it reads and writes the same bytes
  // as the direct version (at any size) in one round trip instead of two.
  const bool direct = n > 2 || c.algo == Algo::kMesh;
  if (direct && bytes * n > kMeshBytes && direct_available(c) && direct_reduce_scatter(c, in, out, count, dt, op))
    return;
  if (c.algo == Algo::kMesh || (c.algo == Algo::kAuto && bytes * n <= kMeshBytes)) {
    char* staging = scratch(c, bytes * n);
    std::vector<Xfer> xs;
    for (int r = 0; r < n; ++r) {
      if (r == me) continue;
      xs.push_back(send_to(c, r, in[r], bytes));
      xs.push_back(recv_copy(c, r, staging + bytes * r, bytes));
    }
    run(c, xs);
    std::memcpy(staging + bytes * me, in[me], bytes);  // rank order, as the mesh all_reduce
    for (int r = 1; r < n; ++r) npu_kernels::reduce_into(dt, op, staging, staging + bytes * r, count);
    std::memcpy(out, staging, bytes);
    return;
  }
  // Ring: step s sends the partial of block me-s-1 (its own input block at s = 0) and turns the partial
  // of block me-s-2 it receives into (own input block) op (received), in one of two ping-pong slots; the
  // last step's block is this rank's and lands in out. The inputs are read in place, never copied whole.
  char* slot = scratch(c, 2 * bytes);
  const int right = mod(me + 1, n), left = mod(me - 1, n);
  for (int s = 0; s < n - 1; ++s) {
    const int si = mod(me - s - 1, n), ri = mod(me - s - 2, n);
    const void* src = s == 0 ? in[si] : slot + bytes * ((s - 1) & 1);
    char* dst = s == n - 2 ? static_cast<char*>(out) : slot + bytes * (s & 1);
    const char* mine = static_cast<const char*>(in[ri]);
    Xfer rx = recv_copy(c, left, nullptr, bytes);
    rx.elem = esz;
    // The last step writes the output, which nothing reads soon: streaming stores for large messages.
    const std::size_t stream_bytes = s == n - 2 ? bytes : 0;
    rx.sink = [dst, mine, esz, dt, op, stream_bytes](const void* d, std::size_t off, std::size_t len) {
      npu_kernels::reduce_to_piece(dt, op, dst + off, mine + off, d, len / esz, stream_bytes);
    };
    std::vector<Xfer> xs{send_to(c, right, src, bytes), std::move(rx)};
    run(c, xs);
  }
}

void alltoallv(CommContext& c, const std::vector<const void*>& send, const std::vector<std::size_t>& send_bytes,
               const std::vector<void*>& recv, const std::vector<std::size_t>& recv_bytes) {
  const int n = c.t.size(), me = c.t.rank();
  if (send_bytes[me] != recv_bytes[me])
    throw CommError("hccl: alltoall: this rank sends itself " + std::to_string(send_bytes[me]) +
                    " bytes but expects " + std::to_string(recv_bytes[me]));
  if (send_bytes[me]) std::memmove(recv[me], send[me], send_bytes[me]);
  std::vector<Xfer> xs;
  for (int k = 1; k < n; ++k) {  // staggered so that every rank starts with a different peer
    xs.push_back(send_to(c, mod(me + k, n), send[mod(me + k, n)], send_bytes[mod(me + k, n)]));
    xs.push_back(recv_copy(c, mod(me - k, n), recv[mod(me - k, n)], recv_bytes[mod(me - k, n)]));
  }
  run(c, xs);
}

void gather(CommContext& c, const void* in, const std::vector<void*>& out, std::size_t bytes, int root) {
  const int n = c.t.size(), me = c.t.rank();
  agree_on_root(c);
  std::vector<Xfer> xs;
  if (me == root) {
    if (bytes && out[me] != in) std::memmove(out[me], in, bytes);
    for (int r = 0; r < n; ++r) if (r != me) xs.push_back(recv_copy(c, r, out[r], bytes));
  } else {
    xs.push_back(send_to(c, root, in, bytes));
  }
  run(c, xs);
}

void scatter(CommContext& c, const std::vector<const void*>& in, void* out, std::size_t bytes, int root) {
  const int n = c.t.size(), me = c.t.rank();
  agree_on_root(c);
  std::vector<Xfer> xs;
  if (me == root) {
    if (bytes && out != in[me]) std::memmove(out, in[me], bytes);
    for (int r = 0; r < n; ++r) if (r != me) xs.push_back(send_to(c, r, in[r], bytes));
  } else {
    xs.push_back(recv_copy(c, root, out, bytes));
  }
  run(c, xs);
}

void barrier(CommContext& c) {
  const int n = c.t.size(), me = c.t.rank();
  std::vector<Xfer> xs;
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    xs.push_back(send_to(c, r, nullptr, 0));
    xs.push_back(recv_copy(c, r, nullptr, 0));
  }
  run(c, xs);
}

}  // namespace hccl_sim
