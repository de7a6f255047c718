// backend_sim: launch records (per-launch GM bytes and FLOPs, the bounded buffer, totals, failures).
#include <chrono>
#include <thread>
#include <vector>

#include "test_backend_sim_util.h"

using namespace npu_sim;

namespace {

// Recording on with an empty buffer for the test; off (and the default bound) afterwards.
class LaunchRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(device_synchronize(0));
    ASSERT_OK(set_launch_recording(true));
    clear_launch_records();
  }
  void TearDown() override {
    EXPECT_OK(set_launch_recording(false));
    clear_launch_records();
  }
};

// Every block reports 100 B read, 10 B written, 1000 Cube FLOPs and 1 Vector FLOP.
Status launch_known(Stream s, std::uint32_t blocks) {
  return launch_kernel(s, "rec_known", blocks, [](const BlockContext& ctx) { record_traffic(ctx, 100, 10, 1000, 1); });
}

}  // namespace

TEST_F(LaunchRecordTest, RecordsTheTrafficOfALaunch) {
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  ASSERT_OK(launch_known(s, 8));
  ASSERT_OK(stream_synchronize(s));
  std::vector<LaunchRecord> recs = get_launch_records();
  ASSERT_EQ(recs.size(), 1u);
  const LaunchRecord& r = recs[0];
  EXPECT_EQ(r.kernel, "rec_known");
  EXPECT_EQ(r.device, 0);
  EXPECT_EQ(r.stream, s);
  EXPECT_EQ(r.block_dim, 8u);
  EXPECT_EQ(r.gm_read, 800u);
  EXPECT_EQ(r.gm_write, 80u);
  EXPECT_EQ(r.cube_flops, 8000u);
  EXPECT_EQ(r.vector_flops, 8u);
  EXPECT_FALSE(r.failed);
  const LaunchTotals t = get_launch_totals();
  EXPECT_EQ(t.launches, 1u);
  EXPECT_EQ(t.gm_read, 800u);
  EXPECT_EQ(t.dropped, 0u);

  // Off: blocks see no accumulators and nothing is appended.
  ASSERT_OK(set_launch_recording(false));
  EXPECT_FALSE(launch_recording());
  std::atomic<int> with_record{0};
  ASSERT_OK(launch_kernel(s, "rec_off", 4, [&](const BlockContext& ctx) {
    if (ctx.record != nullptr) with_record.fetch_add(1);
    record_traffic(ctx, 1, 1, 1, 1);  // a no-op
  }));
  ASSERT_OK(stream_synchronize(s));
  EXPECT_EQ(with_record.load(), 0);
  EXPECT_EQ(get_launch_records().size(), 1u);
  EXPECT_EQ(get_launch_totals().launches, 1u);
  ASSERT_OK(stream_destroy(s));
}

TEST_F(LaunchRecordTest, ConcurrentLaunchesFromTwoStreams) {
  constexpr int kLaunches = 300;
  Stream s[2] = {nullptr, nullptr};
  ASSERT_OK(stream_create(0, &s[0]));
  ASSERT_OK(stream_create(0, &s[1]));
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kLaunches; ++i) EXPECT_OK(launch_known(s[t], 1 + (i % 5)));
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_OK(stream_synchronize(s[0]));
  ASSERT_OK(stream_synchronize(s[1]));
  const std::vector<LaunchRecord> recs = get_launch_records();
  ASSERT_EQ(recs.size(), 2u * kLaunches);
  std::uint64_t last_seq[2] = {0, 0};
  int count[2] = {0, 0};
  std::uint64_t blocks = 0;
  for (const LaunchRecord& r : recs) {
    ASSERT_TRUE(r.stream == s[0] || r.stream == s[1]);
    const int k = r.stream == s[0] ? 0 : 1;
    EXPECT_GT(r.launch_seq, last_seq[k]) << "one stream's records are in launch order";
    last_seq[k] = r.launch_seq;
    EXPECT_EQ(r.block_dim, std::uint32_t(1 + count[k] % 5));
    EXPECT_EQ(r.gm_read, 100u * r.block_dim);
    ++count[k];
    blocks += r.block_dim;
  }
  EXPECT_EQ(count[0], kLaunches);
  EXPECT_EQ(count[1], kLaunches);
  const LaunchTotals t = get_launch_totals();
  EXPECT_EQ(t.launches, 2u * kLaunches);
  EXPECT_EQ(t.gm_read, 100u * blocks);
  EXPECT_EQ(t.gm_write, 10u * blocks);
  EXPECT_EQ(t.cube_flops, 1000u * blocks);
  EXPECT_EQ(t.vector_flops, blocks);
  ASSERT_OK(stream_destroy(s[0]));
  ASSERT_OK(stream_destroy(s[1]));
}

TEST_F(LaunchRecordTest, AFailedKernelIsRecordedAsFailed) {
  constexpr int kDev = 1;  // its sticky error is cleared below
  Stream s = nullptr;
  ASSERT_OK(stream_create(kDev, &s));
  ASSERT_OK(launch_kernel(s, "rec_fails", 1, [](const BlockContext& ctx) {
    record_traffic(ctx, 64, 0, 0, 0);  // read its input, then failed
    throw KernelError("bad input");
  }));
  ASSERT_OK(launch_known(s, 2));  // later work still runs and is recorded
  EXPECT_EQ(stream_synchronize(s), Status::kKernelError);
  const std::vector<LaunchRecord> recs = get_launch_records();
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].kernel, "rec_fails");
  EXPECT_EQ(recs[0].device, kDev);
  EXPECT_TRUE(recs[0].failed);
  EXPECT_EQ(recs[0].gm_read, 64u);
  EXPECT_EQ(recs[1].kernel, "rec_known");
  EXPECT_FALSE(recs[1].failed);
  const LaunchTotals t = get_launch_totals();
  EXPECT_EQ(t.launches, 2u);
  EXPECT_EQ(t.failed, 1u);
  EXPECT_EQ(t.gm_read, 64u + 200u);
  ASSERT_OK(stream_destroy(s));
  ASSERT_OK(device_restart(kDev));
}

TEST_F(LaunchRecordTest, TheBufferKeepsTheNewestRecords) {
  ASSERT_OK(set_launch_recording(true, 8));
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  for (std::uint32_t i = 1; i <= 20; ++i) ASSERT_OK(launch_known(s, i));
  ASSERT_OK(stream_synchronize(s));
  std::vector<LaunchRecord> recs = get_launch_records();
  ASSERT_EQ(recs.size(), 8u);
  for (std::uint32_t i = 0; i < 8; ++i) EXPECT_EQ(recs[i].block_dim, 13 + i);  // launches 13..20
  LaunchTotals t = get_launch_totals();
  EXPECT_EQ(t.launches, 20u);
  EXPECT_EQ(t.dropped, 12u);
  EXPECT_EQ(t.gm_read, 100u * (20 * 21 / 2));  // totals count the dropped records too
  // A smaller bound drops the oldest records at once; clearing zeroes everything.
  ASSERT_OK(set_launch_recording(true, 3));
  recs = get_launch_records();
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0].block_dim, 18u);
  EXPECT_EQ(get_launch_totals().dropped, 17u);
  EXPECT_EQ(set_launch_recording(true, 0), Status::kInvalidValue);
  clear_launch_records();
  EXPECT_TRUE(get_launch_records().empty());
  t = get_launch_totals();
  EXPECT_EQ(t.launches, 0u);
  EXPECT_EQ(t.dropped, 0u);
  ASSERT_OK(stream_destroy(s));
}

// Each record carries when its worker ran it (wall clock) and the launching thread's tag at launch time,
// even when the stream runs it later on another thread.
TEST_F(LaunchRecordTest, RecordsTimesAndTheLaunchingThreadsTag) {
  using namespace std::chrono;
  Stream s = nullptr;
  ASSERT_OK(stream_create(0, &s));
  const auto wall = [] { return duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count(); };
  const std::int64_t before = wall();
  set_launch_tag(41);
  ASSERT_OK(launch_kernel(s, "tagged", 1, [](const BlockContext&) { std::this_thread::sleep_for(milliseconds(5)); }));
  set_launch_tag(0);
  ASSERT_OK(launch_known(s, 1));
  std::thread other([s] {  // tags are per thread
    EXPECT_EQ(launch_tag(), 0u);
    set_launch_tag(7);
    EXPECT_OK(launch_known(s, 2));
  });
  other.join();
  EXPECT_EQ(launch_tag(), 0u);
  ASSERT_OK(stream_synchronize(s));
  const std::int64_t after = wall();
  std::vector<LaunchRecord> recs = get_launch_records();
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0].tag, 41u);
  EXPECT_EQ(recs[1].tag, 0u);
  EXPECT_EQ(recs[2].tag, 7u);
  EXPECT_GE(recs[0].start_ns, before);
  EXPECT_GE(recs[0].end_ns - recs[0].start_ns, 5'000'000);
  for (const auto& r : recs) {
    EXPECT_LE(r.start_ns, r.end_ns);
    EXPECT_LE(r.end_ns, after);
  }
  EXPECT_LE(recs[0].end_ns, recs[1].start_ns);  // one stream runs in order
  ASSERT_OK(stream_destroy(s));
}

// The roofline: the slowest of HBM traffic, Cube and Vector work, on the whole chip.
TEST(LaunchRecordModel, ModeledTimeIsTheRooflineBound) {
  const Roofline r = roofline();
  EXPECT_DOUBLE_EQ(r.hbm_bytes_per_s, 1.6e12);
  EXPECT_DOUBLE_EQ(r.cube_flops_per_s, 313e12);
  EXPECT_DOUBLE_EQ(r.vector_flops_per_s, 9.8e12);
  LaunchRecord rec{};
  rec.block_dim = 2;
  rec.gm_read = 1'200'000'000;
  rec.gm_write = 400'000'000;  // 1.6 GB: 1 ms of HBM
  EXPECT_NEAR(modeled_time_ns(rec), 1e6, 1);
  rec.cube_flops = 626'000'000'000;  // 2 ms of Cube
  EXPECT_NEAR(modeled_time_ns(rec), 2e6, 1);
  rec.block_dim = 1000;  // the simulator's slicing does not change the model
  EXPECT_NEAR(modeled_time_ns(rec), 2e6, 1);
  rec.vector_flops = 98'000'000'000;  // 10 ms of Vector
  EXPECT_NEAR(modeled_time_ns(rec), 1e7, 1);
}
