// The collective algorithms (torch-free) over a Transport: ring, halving-doubling (HCCL's "H-D_R") and
// mesh/one-shot, plus the data-movement collectives. Buffers are raw pointers to device memory.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "transport.h"
#include "npu_kernels/collective_math.h"

namespace hccl_sim {

enum class Algo { kAuto, kRing, kHalvingDoubling, kMesh };
const char* algo_name(Algo a);
// HCCL_ALGO: bare names ("ring", "H-D_R", "fullmesh"/"mesh"/"oneshot") or HCCL's
// "level0:NA;level1:ring" form (the level1 entry wins). Unknown names throw CommError.
Algo parse_algo(const std::string& value);
// The algorithm an all_reduce of `bytes` on `ranks` ranks uses when nothing is forced (within one host;
// across hosts with several ranks each, unforced all_reduces above the mesh size run two-level, see
// allreduce()).
Algo choose_allreduce_algo(Algo forced, std::size_t bytes, int ranks);

struct CommContext {
  Transport& t;
  MsgHeader base;  // op, dtype, numel, seq of the current collective
  std::chrono::steady_clock::time_point deadline;
  const std::atomic<bool>* abort;
  Algo algo;
  const char* what;  // collective name for errors
  std::vector<char>* scratch = nullptr;  // the communicator's reusable staging buffer (see scratch())
  // host_of[r]: host index of rank r (equal = shared memory), or null when every rank is on one host.
  const std::vector<int>* host_of = nullptr;
};

// A staging buffer of at least `bytes`, kept by the communicator between collectives (they run one at a
// time on its communication stream), so large reduce-scatters do not page-fault a fresh buffer each call.
char* scratch(CommContext& c, std::size_t bytes);

using npu_kernels::DType;
using npu_kernels::ReduceKind;

// Across hosts with the same number L >= 2 of ranks on each of H >= 2 hosts, an unforced all_reduce above
// the mesh size is two-level, as HCCL's level0/level1 split: ring reduce-scatter inside the host (shm),
// ring all_reduce of this rank's 1/L chunk with the ranks of the same local index on the other hosts
// (one TCP ring per local index, all running at once), ring all-gather inside the host.
void allreduce(CommContext& c, void* buf, std::size_t count, DType dt, ReduceKind op);
void broadcast(CommContext& c, void* buf, std::size_t bytes, int root);
// out[r] receives rank r's `bytes`; `in` may alias out[rank].
// Two ranks on one host with peer memory switch from the ring to the direct all_gather (push our input
// into both outputs) at this many bytes per rank, where what both ranks touch outgrows the L3.
constexpr std::size_t kPairDirectAllgatherBytes = std::size_t{8} << 20;
void allgather(CommContext& c, const void* in, const std::vector<void*>& out, std::size_t bytes);
// out = op over ranks r of rank r's in[rank()]; in[p] is this rank's block for rank p (`count` elements
// each, left unchanged; out must not alias them).
void reduce_scatter(CommContext& c, const std::vector<const void*>& in, void* out, std::size_t count, DType dt,
                    ReduceKind op);
// Rank r's send[p] goes to rank p's recv[r] (sizes may differ per pair).
void alltoallv(CommContext& c, const std::vector<const void*>& send, const std::vector<std::size_t>& send_bytes,
               const std::vector<void*>& recv, const std::vector<std::size_t>& recv_bytes);
void gather(CommContext& c, const void* in, const std::vector<void*>& out, std::size_t bytes, int root);
void scatter(CommContext& c, const std::vector<const void*>& in, void* out, std::size_t bytes, int root);
void barrier(CommContext& c);

}  // namespace hccl_sim
