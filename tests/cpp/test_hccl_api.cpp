// gtests of the collective library's C API (hccl/hccl.h), ranks as threads on devices 0..n-1: every
// collective and send/recv checked exactly against host-computed values, groups, argument errors with
// their codes and messages, and the failure paths (desync, timeout, abort, use after a failure) that
// must fail the stream and the communicator instead of leaving stale data looking valid.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "hccl/hccl.h"
#include "npu_sim/runtime.h"

namespace {

#define ASSERT_HCCL(expr)                                                                     \
  do {                                                                                        \
    const HcclResult r_ = (expr);                                                             \
    ASSERT_EQ(r_, HCCL_SUCCESS) << #expr << ": " << HcclGetErrorString(r_) << ": " << HcclGetLastErrorMessage(); \
  } while (0)

// Device memory of `device` holding n values (host-addressable, as the simulated HBM is).
template <typename T>
struct DevBuf {
  DevBuf(int device, std::size_t n) : n(n) {
    void* p = nullptr;
    EXPECT_EQ(npu_sim::malloc_device(device, &p, std::max<std::size_t>(1, n) * sizeof(T)), npu_sim::Status::kSuccess);
    data = static_cast<T*>(p);
  }
  ~DevBuf() { npu_sim::free_device(data); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  T& operator[](std::size_t i) { return data[i]; }
  T* data = nullptr;
  std::size_t n;
};

struct Rank {
  int rank;
  int size;
  HcclComm comm;
  npu_sim::Stream stream;
};

// Runs body on n threads, rank r on device r with its own communicator and stream.
// `op_timeout_ms`: the per-operation timeout of the communicators (0: the default).
void run_ranks(int n, const std::function<void(Rank&)>& body, uint32_t op_timeout_ms = 0) {
  HcclRootInfo info;
  ASSERT_HCCL(HcclGetRootInfo(&info));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      HcclCommConfig cfg;
      HcclCommConfigInit(&cfg);
      cfg.npuSimDevice = r;
      cfg.npuSimOpTimeoutMs = op_timeout_ms;
      Rank me{r, n, nullptr, nullptr};
      const HcclResult res = HcclCommInitRootInfoConfig(n, &info, r, &cfg, &me.comm);
      EXPECT_EQ(res, HCCL_SUCCESS) << HcclGetLastErrorMessage();
      if (res != HCCL_SUCCESS) {
        failures.fetch_add(1);
        return;
      }
      EXPECT_EQ(npu_sim::stream_create(r, &me.stream), npu_sim::Status::kSuccess);
      body(me);
      if (me.comm != nullptr) EXPECT_EQ(HcclCommDestroy(me.comm), HCCL_SUCCESS);
      EXPECT_EQ(npu_sim::stream_destroy(me.stream), npu_sim::Status::kSuccess);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

float value(int rank, std::size_t i) { return static_cast<float>((rank + 1) * 1000 + static_cast<int>(i % 997)); }

npu_sim::Status sync(const Rank& me) { return npu_sim::stream_synchronize(me.stream); }

// Acknowledges the sticky error a test provoked on its ranks' devices.
void restart_devices(int n) {
  for (int d = 0; d < n; ++d) EXPECT_EQ(npu_sim::device_restart(d), npu_sim::Status::kSuccess);
}

TEST(HcclApi, CollectivesMatchHostReference) {
  constexpr int kRanks = 4;
  constexpr std::size_t kCount = 100003;  // odd: every chunking path has a remainder
  run_ranks(kRanks, [&](Rank& me) {
    const int n = me.size, r = me.rank;
    uint32_t got = 0;
    ASSERT_HCCL(HcclGetRankSize(me.comm, &got));
    EXPECT_EQ(got, static_cast<uint32_t>(n));
    ASSERT_HCCL(HcclGetRankId(me.comm, &got));
    EXPECT_EQ(got, static_cast<uint32_t>(r));

    // all_reduce, in place and out of place (the input stays unchanged)
    DevBuf<float> a(r, kCount), b(r, kCount);
    for (std::size_t i = 0; i < kCount; ++i) a[i] = value(r, i);
    ASSERT_HCCL(HcclAllReduce(a.data, b.data, kCount, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, me.comm, me.stream));
    ASSERT_HCCL(HcclAllReduce(a.data, a.data, kCount, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MAX, me.comm, me.stream));
    ASSERT_EQ(sync(me), npu_sim::Status::kSuccess);
    for (std::size_t i = 0; i < kCount; ++i) {
      float sum = 0;
      for (int p = 0; p < n; ++p) sum += value(p, i);
      ASSERT_EQ(b[i], sum) << i;
      ASSERT_EQ(a[i], value(n - 1, i)) << i;
    }

    // broadcast from rank 2
    DevBuf<int64_t> c(r, kCount);
    for (std::size_t i = 0; i < kCount; ++i) c[i] = r == 2 ? static_cast<int64_t>(i) * 7 : -1;
    ASSERT_HCCL(HcclBroadcast(c.data, kCount, HCCL_DATA_TYPE_INT64, 2, me.comm, me.stream));
    ASSERT_EQ(sync(me), npu_sim::Status::kSuccess);
    for (std::size_t i = 0; i < kCount; ++i) ASSERT_EQ(c[i], static_cast<int64_t>(i) * 7);

    // all_gather and reduce_scatter
    DevBuf<float> in(r, kCount), all(r, kCount * n), rs(r, kCount);
    for (std::size_t i = 0; i < kCount; ++i) in[i] = value(r, i);
    ASSERT_HCCL(HcclAllGather(in.data, all.data, kCount, HCCL_DATA_TYPE_FP32, me.comm, me.stream));
    ASSERT_HCCL(HcclReduceScatter(all.data, rs.data, kCount / n, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, me.comm, me.stream));
    ASSERT_EQ(sync(me), npu_sim::Status::kSuccess);
    for (int p = 0; p < n; ++p) {
      for (std::size_t i = 0; i < kCount; ++i) ASSERT_EQ(all[p * kCount + i], value(p, i));
    }
    for (std::size_t i = 0; i < kCount / n; ++i) ASSERT_EQ(rs[i], n * all[r * (kCount / n) + i]);

    // reduce to rank 1: the others' inputs stay unchanged
    DevBuf<int32_t> x(r, 1000), y(r, 1000);
    for (int i = 0; i < 1000; ++i) x[i] = r * 10 + i;
    ASSERT_HCCL(HcclReduce(x.data, y.data, 1000, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, 1, me.comm, me.stream));
    ASSERT_EQ(sync(me), npu_sim::Status::kSuccess);
    for (int i = 0; i < 1000; ++i) {
      ASSERT_EQ(x[i], r * 10 + i);
      if (r == 1) ASSERT_EQ(y[i], 60 + 4 * i);
    }

    // scatter from rank 3, gather to rank 0
    DevBuf<double> sc(r, 64 * n), part(r, 64), ga(r, 64 * n);
    for (int i = 0; i < 64 * n; ++i) sc[i] = r == 3 ? i * 0.5 : -1;
    ASSERT_HCCL(HcclScatter(sc.data, part.data, 64, HCCL_DATA_TYPE_FP64, 3, me.comm, me.stream));
    ASSERT_HCCL(HcclGather(part.data, ga.data, 64, HCCL_DATA_TYPE_FP64, 0, me.comm, me.stream));
    ASSERT_EQ(sync(me), npu_sim::Status::kSuccess);
    for (int i = 0; i < 64; ++i) ASSERT_EQ(part[i], (r * 64 + i) * 0.5);
    if (r == 0) {
      for (int i = 0; i < 64 * n; ++i) ASSERT_EQ(ga[i], i * 0.5);
    }

    // all-to-all with uneven counts: rank r sends p + r + 1 elements to rank p
    std::vector<uint64_t> scnt(n), sdis(n), rcnt(n), rdis(n);
    uint64_t so = 0, ro = 0;
    for (int p = 0; p < n; ++p) {
      scnt[p] = p + r + 1;
      rcnt[p] = r + p + 1;
      sdis[p] = so;
      rdis[p] = ro;
      so += scnt[p];
      ro += rcnt[p];
    }
    DevBuf<int16_t> s2(r, so), r2(r, ro);
    for (int p = 0; p < n; ++p) {
      for (uint64_t i = 0; i < scnt[p]; ++i) s2[sdis[p] + i] = static_cast<int16_t>(r * 100 + p * 10 + i);
    }
    ASSERT_HCCL(HcclAlltoAllV(s2.data, scnt.data(), sdis.data(), HCCL_DATA_TYPE_INT16, r2.data, rcnt.data(), rdis.data(),
                              HCCL_DATA_TYPE_INT16, me.comm, me.stream));
    ASSERT_HCCL(HcclBarrier(me.comm, me.stream));
    ASSERT_EQ(sync(me), npu_sim::Status::kSuccess);
    for (int p = 0; p < n; ++p) {
      for (uint64_t i = 0; i < rcnt[p]; ++i) ASSERT_EQ(r2[rdis[p] + i], static_cast<int16_t>(p * 100 + r * 10 + i));
    }
    HcclResult err = HCCL_E_INTERNAL;
    ASSERT_HCCL(HcclGetCommAsyncError(me.comm, &err));
    EXPECT_EQ(err, HCCL_SUCCESS);
  });
}

// A pair exchanges 8 MiB both ways. Outside a group each send/recv is its own stream task, so the two
// directions go on separate streams; in a group both are one task on one stream. Neither deadlocks.
TEST(HcclApi, SendRecvBothWaysOnSeparateStreamsAndInAGroup) {
  constexpr std::size_t kCount = 2 << 20;
  run_ranks(2, [&](Rank& me) {
    const int peer = 1 - me.rank;
    DevBuf<float> out(me.rank, kCount), in(me.rank, kCount), in2(me.rank, kCount);
    for (std::size_t i = 0; i < kCount; ++i) out[i] = value(me.rank, i);
    npu_sim::Stream recv_stream = nullptr;
    ASSERT_EQ(npu_sim::stream_create(me.rank, &recv_stream), npu_sim::Status::kSuccess);
    ASSERT_HCCL(HcclSend(out.data, kCount, HCCL_DATA_TYPE_FP32, peer, me.comm, me.stream));
    ASSERT_HCCL(HcclRecv(in.data, kCount, HCCL_DATA_TYPE_FP32, peer, me.comm, recv_stream));
    ASSERT_EQ(npu_sim::stream_synchronize(recv_stream), npu_sim::Status::kSuccess);
    ASSERT_EQ(sync(me), npu_sim::Status::kSuccess);
    ASSERT_HCCL(HcclGroupStart());
    ASSERT_HCCL(HcclSend(out.data, kCount, HCCL_DATA_TYPE_FP32, peer, me.comm, me.stream));
    ASSERT_HCCL(HcclRecv(in2.data, kCount, HCCL_DATA_TYPE_FP32, peer, me.comm, me.stream));
    ASSERT_HCCL(HcclGroupEnd());
    ASSERT_EQ(sync(me), npu_sim::Status::kSuccess);
    for (std::size_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(in[i], value(peer, i));
      ASSERT_EQ(in2[i], value(peer, i));
    }
    // From any source: the source rank is reported.
    uint32_t src = 99;
    if (me.rank == 0) ASSERT_HCCL(HcclRecvAny(in.data, 16, HCCL_DATA_TYPE_FP32, &src, me.comm, me.stream));
    else ASSERT_HCCL(HcclSend(out.data, 16, HCCL_DATA_TYPE_FP32, 0, me.comm, me.stream));
    ASSERT_EQ(sync(me), npu_sim::Status::kSuccess);
    if (me.rank == 0) EXPECT_EQ(src, 1u);
    npu_sim::stream_destroy(recv_stream);
  });
}

TEST(HcclApi, BadArgumentsAreRefusedWithCodeAndMessage) {
  run_ranks(2, [&](Rank& me) {
    DevBuf<float> a(me.rank, 8);
    EXPECT_EQ(HcclAllReduce(a.data, a.data, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, nullptr, me.stream), HCCL_E_PTR);
    EXPECT_NE(std::string(HcclGetLastErrorMessage()).find("comm is null"), std::string::npos);
    EXPECT_EQ(HcclAllReduce(nullptr, a.data, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, me.comm, me.stream), HCCL_E_PTR);
    EXPECT_NE(std::string(HcclGetLastErrorMessage()).find("sendBuf is null"), std::string::npos);
    EXPECT_EQ(HcclAllReduce(a.data, a.data, 8, HCCL_DATA_TYPE_UINT32, HCCL_REDUCE_SUM, me.comm, me.stream),
              HCCL_E_NOT_SUPPORT);
    EXPECT_EQ(HcclAllReduce(a.data, a.data, 4, HCCL_DATA_TYPE_SIM_COMPLEX64, HCCL_REDUCE_MAX, me.comm, me.stream),
              HCCL_E_NOT_SUPPORT);
    EXPECT_NE(std::string(HcclGetLastErrorMessage()).find("not defined for complex64"), std::string::npos)
        << HcclGetLastErrorMessage();
    EXPECT_EQ(HcclBroadcast(a.data, 8, HCCL_DATA_TYPE_FP32, 2, me.comm, me.stream), HCCL_E_PARA);
    EXPECT_NE(std::string(HcclGetLastErrorMessage()).find("root 2 is not a rank"), std::string::npos);
    EXPECT_EQ(HcclSend(a.data, 8, HCCL_DATA_TYPE_FP32, me.rank, me.comm, me.stream), HCCL_E_PARA);
    EXPECT_EQ(HcclGroupEnd(), HCCL_E_PARA);
    EXPECT_EQ(HcclCommSetOpTimeout(me.comm, 0), HCCL_E_PARA);
    EXPECT_NE(std::string(HcclGetLastErrorMessage()).find("timeoutMs must be positive"), std::string::npos);
    // Refused calls enqueue nothing and break nothing.
    HcclResult err = HCCL_E_INTERNAL;
    ASSERT_HCCL(HcclGetCommAsyncError(me.comm, &err));
    EXPECT_EQ(err, HCCL_SUCCESS);
    ASSERT_HCCL(HcclAllReduce(a.data, a.data, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, me.comm, me.stream));
    EXPECT_EQ(sync(me), npu_sim::Status::kSuccess);
  });
  HcclRootInfo junk;
  std::memset(&junk, 'x', sizeof(junk));
  HcclComm comm = nullptr;
  EXPECT_EQ(HcclCommInitRootInfo(2, &junk, 0, &comm), HCCL_E_PARA);
  EXPECT_NE(std::string(HcclGetLastErrorMessage()).find("not one made by HcclGetRootInfo"), std::string::npos);
  EXPECT_EQ(comm, nullptr);
}

// Ranks disagreeing on the reduce op: every rank's stream fails, the communicator reports HCCL_E_PARA
// with a message naming the desync, and the next operation fails at once instead of running.
TEST(HcclApi, DesyncFailsTheStreamAndBreaksTheCommunicator) {
  run_ranks(2, [&](Rank& me) {
    DevBuf<float> a(me.rank, 1024);
    for (int i = 0; i < 1024; ++i) a[i] = 1.0f;
    ASSERT_HCCL(HcclAllReduce(a.data, a.data, 1024, HCCL_DATA_TYPE_FP32, me.rank == 0 ? HCCL_REDUCE_SUM : HCCL_REDUCE_MAX,
                              me.comm, me.stream));
    ASSERT_HCCL(HcclAllReduce(a.data, a.data, 1024, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, me.comm, me.stream));
    EXPECT_EQ(sync(me), npu_sim::Status::kCommError);
    HcclResult err = HCCL_SUCCESS;
    ASSERT_HCCL(HcclGetCommAsyncError(me.comm, &err));
    EXPECT_EQ(err, HCCL_E_PARA);
    const std::string msg = HcclGetCommAsyncErrorString(me.comm);
    EXPECT_NE(msg.find("hccl: allreduce #1 on rank " + std::to_string(me.rank) + " failed (desync)"), std::string::npos) << msg;
  });
  restart_devices(2);
}

// A rank that never joins the collective: the other's times out within its op timeout (HCCL_E_TIMEOUT)
// and the next operation fails at once with the same error.
TEST(HcclApi, TimeoutWhenAPeerNeverJoins) {
  std::atomic<bool> finished{false};
  run_ranks(2, [&](Rank& me) {
    if (me.rank == 1) {  // stays alive, in no collective, until rank 0 is done
      while (!finished.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
    DevBuf<float> a(me.rank, 256);
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_HCCL(HcclAllReduce(a.data, a.data, 256, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, me.comm, me.stream));
    EXPECT_EQ(sync(me), npu_sim::Status::kCommError);
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_GE(took, std::chrono::milliseconds(1400));
    EXPECT_LT(took, std::chrono::seconds(5));
    HcclResult err = HCCL_SUCCESS;
    ASSERT_HCCL(HcclGetCommAsyncError(me.comm, &err));
    EXPECT_EQ(err, HCCL_E_TIMEOUT) << HcclGetCommAsyncErrorString(me.comm);
    const std::string first = HcclGetCommAsyncErrorString(me.comm);
    EXPECT_NE(first.find("hccl: allreduce #1 on rank 0 failed (timeout)"), std::string::npos) << first;
    ASSERT_HCCL(HcclBarrier(me.comm, me.stream));  // fails fast, naming the first failure
    const auto t1 = std::chrono::steady_clock::now();
    EXPECT_EQ(sync(me), npu_sim::Status::kCommError);
    EXPECT_LT(std::chrono::steady_clock::now() - t1, std::chrono::milliseconds(500));  // no second timeout
    EXPECT_EQ(HcclGetCommAsyncErrorString(me.comm), first);  // the first failure stays the communicator's
    finished.store(true);
  }, /*op_timeout_ms=*/1500);
  restart_devices(2);
}

// HcclCommAbort from another thread ends a pending collective at once (HCCL_E_SUSPENDING).
TEST(HcclApi, AbortEndsAPendingCollective) {
  std::atomic<bool> finished{false};
  run_ranks(2, [&](Rank& me) {
    if (me.rank == 1) {
      while (!finished.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
    DevBuf<float> a(me.rank, 256);
    ASSERT_HCCL(HcclBroadcast(a.data, 256, HCCL_DATA_TYPE_FP32, 1, me.comm, me.stream));  // rank 1 never sends
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      EXPECT_EQ(HcclCommAbort(me.comm), HCCL_SUCCESS);
    });
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(sync(me), npu_sim::Status::kCommError);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    aborter.join();
    HcclResult err = HCCL_SUCCESS;
    ASSERT_HCCL(HcclGetCommAsyncError(me.comm, &err));
    EXPECT_EQ(err, HCCL_E_SUSPENDING) << HcclGetCommAsyncErrorString(me.comm);
    finished.store(true);
  }, /*op_timeout_ms=*/60000);
  restart_devices(2);
}

// Two communicators over the same ranks (two process groups) used at once from two threads per rank:
// each keeps its own sequence numbers, transports and results.
TEST(HcclApi, TwoCommunicatorsConcurrently) {
  constexpr int kRanks = 2;
  constexpr std::size_t kCount = 1 << 16;
  HcclRootInfo infos[2];
  ASSERT_HCCL(HcclGetRootInfo(&infos[0]));
  ASSERT_HCCL(HcclGetRootInfo(&infos[1]));
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    for (int g = 0; g < 2; ++g) {
      threads.emplace_back([&, r, g] {
        HcclCommConfig cfg;
        HcclCommConfigInit(&cfg);
        cfg.npuSimDevice = r;
        HcclComm comm = nullptr;
        ASSERT_HCCL(HcclCommInitRootInfoConfig(kRanks, &infos[g], r, &cfg, &comm));
        npu_sim::Stream s = nullptr;
        ASSERT_EQ(npu_sim::stream_create(r, &s), npu_sim::Status::kSuccess);
        DevBuf<int32_t> a(r, kCount);
        for (int iter = 0; iter < 20; ++iter) {
          for (std::size_t i = 0; i < kCount; ++i) a[i] = (r + 1) * (g + 1) * static_cast<int32_t>(i % 100 + iter);
          ASSERT_HCCL(HcclAllReduce(a.data, a.data, kCount, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comm, s));
          ASSERT_EQ(npu_sim::stream_synchronize(s), npu_sim::Status::kSuccess);
          for (std::size_t i = 0; i < kCount; i += 97) ASSERT_EQ(a[i], 3 * (g + 1) * static_cast<int32_t>(i % 100 + iter));
        }
        EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
        npu_sim::stream_destroy(s);
      });
    }
  }
  for (auto& t : threads) t.join();
}

// Four ranks pass a block around the ring in both directions in one group on one stream each.
TEST(HcclApi, GroupOfSendsAndReceivesWithSeveralPeers) {
  constexpr std::size_t kCount = 1 << 20;
  run_ranks(4, [&](Rank& me) {
    const int next = (me.rank + 1) % me.size, prev = (me.rank + me.size - 1) % me.size;
    DevBuf<float> out(me.rank, kCount), from_prev(me.rank, kCount), from_next(me.rank, kCount);
    for (std::size_t i = 0; i < kCount; ++i) out[i] = value(me.rank, i);
    ASSERT_HCCL(HcclGroupStart());
    ASSERT_HCCL(HcclSend(out.data, kCount, HCCL_DATA_TYPE_FP32, next, me.comm, me.stream));
    ASSERT_HCCL(HcclSend(out.data, kCount, HCCL_DATA_TYPE_FP32, prev, me.comm, me.stream));
    ASSERT_HCCL(HcclRecv(from_prev.data, kCount, HCCL_DATA_TYPE_FP32, prev, me.comm, me.stream));
    ASSERT_HCCL(HcclRecv(from_next.data, kCount, HCCL_DATA_TYPE_FP32, next, me.comm, me.stream));
    ASSERT_HCCL(HcclGroupEnd());
    ASSERT_EQ(sync(me), npu_sim::Status::kSuccess);
    for (std::size_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(from_prev[i], value(prev, i));
      ASSERT_EQ(from_next[i], value(next, i));
    }
  });
}

// Destroying a communicator with a receive that will never match fails that receive's stream at once
// (no hang, and the buffer is not reported as received).
TEST(HcclApi, DestroyFailsPendingReceives) {
  std::atomic<bool> finished{false};
  run_ranks(2, [&](Rank& me) {
    if (me.rank == 1) {  // alive, never sending
      while (!finished.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
    DevBuf<float> in(me.rank, 64);
    npu_sim::Stream s = nullptr;
    ASSERT_EQ(npu_sim::stream_create(0, &s), npu_sim::Status::kSuccess);
    ASSERT_HCCL(HcclRecv(in.data, 64, HCCL_DATA_TYPE_FP32, 1, me.comm, s));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_HCCL(HcclCommDestroy(me.comm));
    me.comm = nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(npu_sim::stream_synchronize(s), npu_sim::Status::kCommError);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    EXPECT_NE(npu_sim::last_error_message().find("destroyed with p2p operations pending"), std::string::npos)
        << npu_sim::last_error_message();
    npu_sim::stream_destroy(s);
    finished.store(true);
  });
  restart_devices(1);
}

// A rank whose peers never join fails with HCCL_E_TIMEOUT naming HCCL_CONNECT_TIMEOUT, in about that time
// (not reported as the root having gone away).
TEST(HcclApi, SetupTimesOutWhenAPeerNeverJoins) {
  setenv("HCCL_CONNECT_TIMEOUT", "1", 1);
  HcclRootInfo info;
  ASSERT_HCCL(HcclGetRootInfo(&info));
  HcclCommConfig cfg;
  HcclCommConfigInit(&cfg);
  HcclComm comm = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(HcclCommInitRootInfoConfig(2, &info, 0, &cfg, &comm), HCCL_E_TIMEOUT);
  const auto took = std::chrono::steady_clock::now() - t0;
  unsetenv("HCCL_CONNECT_TIMEOUT");
  EXPECT_EQ(comm, nullptr);
  EXPECT_GE(took, std::chrono::milliseconds(900));
  EXPECT_LT(took, std::chrono::seconds(4));
  const std::string msg = HcclGetLastErrorMessage();
  EXPECT_NE(msg.find("did not join within HCCL_CONNECT_TIMEOUT=1 s"), std::string::npos) << msg;
}

}  // namespace
