// The building blocks the collective algorithms share (torch-free): Xfer builders for the current
// collective's messages, running one step of them, the chunking of a buffer among ranks, overlap checks.
#pragma once

#include <vector>

#include "collectives.h"

namespace hccl_sim {

inline Xfer send_to(const CommContext& c, int peer, const void* p, std::size_t bytes) {
  Xfer x;
  x.peer = peer;
  x.is_send = true;
  x.hdr = c.base;
  x.hdr.bytes = bytes;
  x.src = p;
  return x;
}

inline Xfer recv_copy(const CommContext& c, int peer, void* p, std::size_t bytes) {
  Xfer x;
  x.peer = peer;
  x.hdr = c.base;
  x.hdr.bytes = bytes;
  x.dst = p;
  return x;
}

// Runs one step: every xfer of `xs` concurrently, until all are done (see run_xfers).
inline void run(CommContext& c, std::vector<Xfer>& xs) {
  std::vector<Xfer*> ptrs;
  ptrs.reserve(xs.size());
  for (auto& x : xs) ptrs.push_back(&x);
  run_xfers(c.t, ptrs, c.deadline, c.abort, c.what);
}

// Element range [begin, end) of chunk i when `count` is split into n nearly equal chunks.
inline std::size_t chunk_begin(std::size_t count, int n, int i) { return count * static_cast<std::size_t>(i) / n; }

inline int mod(int a, int n) { return ((a % n) + n) % n; }

// True if the `bytes` at a and at b share any byte.
inline bool ranges_overlap(const void* a, const void* b, std::size_t bytes) {
  const char *x = static_cast<const char*>(a), *y = static_cast<const char*>(b);
  return x < y + bytes && y < x + bytes;
}

}  // namespace hccl_sim
