// The memory work of a 2-rank collective with nothing communicated (torch-free): two threads, as the two
// ranks, run the kernels the direct (fullmesh) collectives run on each other's buffers, with no address
// exchange and no messages, only a spin barrier after each call. What it reaches is the bound
// the shared memory bus puts on hccl's 2-rank collectives on this machine. Prints
// "<collective> <size bytes> <best seconds>" per line (size as bench_hccl.py counts it) for 1 MiB up to
// argv[1] MiB (default 256); asserts nothing.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "npu_kernels/collective_math.h"

namespace {

using npu_kernels::DType;
using npu_kernels::ReduceKind;
constexpr std::size_t kPiece = 64 << 10;  // as direct_collectives.cpp

struct Buf {
  explicit Buf(std::size_t bytes)
      : p(static_cast<char*>(std::aligned_alloc(4096, std::max<std::size_t>(bytes, 4096)))) {
    // 1.0f everywhere, as bench_hccl.py's torch.ones: faults every page in before timing, and the data is
    // not zero (on the development VM, copies of all-zero pages ran up to 1.5x faster).
    std::fill(reinterpret_cast<float*>(p), reinterpret_cast<float*>(p) + bytes / sizeof(float), 1.0f);
  }
  ~Buf() { std::free(p); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  char* p;
};

// Seconds per call of `work`, as bench_hccl.py times the collectives: the best of 3 rounds, each the mean
// of `iters` calls on both threads started together (the slower thread's time). The threads meet after
// every call, as ranks must (no rank may reuse a buffer before its peer is done with it).
double best_pair(const std::function<void(int)>& work, int iters) {
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {
    std::atomic<int> arrived{0};
    double secs[2] = {0, 0};
    auto meet = [&arrived](int generation) {  // spin barrier: the generation-th meeting of the two threads
      arrived.fetch_add(1);
      while (arrived.load() < 2 * generation) {
      }
    };
    auto body = [&](int r) {
      meet(1);
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) {
        work(r);
        meet(i + 2);
      }
      secs[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    work(0);  // warm-up (bench_hccl.py warms up each timed run)
    std::thread other(body, 1);
    body(0);
    other.join();
    best = std::min(best, std::max(secs[0], secs[1]) / iters);
  }
  return best;
}

// Calls fn(offset, length) for the 64 KiB pieces of [begin, end).
template <typename F>
void pieces(std::size_t begin, std::size_t end, F fn) {
  for (std::size_t off = begin; off < end; off += kPiece) fn(off, std::min(kPiece, end - off));
}

}  // namespace

int main(int argc, char** argv) {
  const float f = sizeof(float);
  const std::size_t max_mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256;
  for (std::size_t size = std::size_t{1} << 20; size <= (max_mib << 20); size *= 4) {
    const std::size_t half = size / 2;
    const int iters = static_cast<int>(std::max<std::size_t>(3, std::min<std::size_t>(200, (128 << 20) / size)));
    {  // all_reduce of `size` per rank: rank r reduces chunk r of both buffers into its own, copies it over
      // (max rather than sum keeps the repeated in-place results at 1.0; the memory traffic is the same)
      Buf b0(size), b1(size);
      char* buf[2] = {b0.p, b1.p};
      const double t = best_pair([&](int r) {
        pieces(r * half, (r + 1) * half, [&](std::size_t off, std::size_t len) {
          npu_kernels::reduce_to(DType::kFloat32, ReduceKind::kMax, buf[r] + off, buf[r] + off, buf[1 - r] + off,
                                 len / f);
          std::memcpy(buf[1 - r] + off, buf[r] + off, len);
        });
      }, iters);
      std::printf("all_reduce %zu %.9f\n", size, t);
    }
    {  // all_gather into `size` per rank: rank r pushes its half into slot r of both outputs in one pass
      Buf i0(half), i1(half), o0(size), o1(size);
      char* in[2] = {i0.p, i1.p};
      char* out[2] = {o0.p, o1.p};
      const double t = best_pair([&](int r) {
        pieces(0, half, [&](std::size_t off, std::size_t len) {
          void* dst[2] = {out[r] + r * half + off, out[1 - r] + r * half + off};
          npu_kernels::copy_piece_to(dst, 2, in[r] + off, len, size);
        });
      }, iters);
      std::printf("all_gather %zu %.9f\n", size, t);
    }
    {  // reduce_scatter of `size` per rank: rank r reduces block r of both inputs into its output
      Buf i0(size), i1(size), o0(half), o1(half);
      char* in[2] = {i0.p, i1.p};
      char* out[2] = {o0.p, o1.p};
      const double t = best_pair([&](int r) {
        pieces(0, half, [&](std::size_t off, std::size_t len) {
          npu_kernels::reduce_to_piece(DType::kFloat32, ReduceKind::kSum, out[r] + off, in[r] + r * half + off,
                                       in[1 - r] + r * half + off, len / f, half);
        });
      }, iters);
      std::printf("reduce_scatter %zu %.9f\n", size, t);
    }
    {  // broadcast of `size` from rank 0: rank r copies chunk r of the root's buffer into rank 1's
      Buf b0(size), b1(size);
      const double t = best_pair([&](int r) {
        pieces(r * half, (r + 1) * half, [&](std::size_t off, std::size_t len) {
          npu_kernels::copy_piece(b1.p + off, b0.p + off, len, size);
        });
      }, iters);
      std::printf("broadcast %zu %.9f\n", size, t);
    }
  }
  return 0;
}
