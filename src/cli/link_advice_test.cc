// The doctor's advice on recorded measurements.
#include "cli/link_advice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ferry::cli {
namespace {

constexpr double kMB = 1e6;
constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(AdviseLink, CrossCloudLinkNeedsAWindowOfBandwidthTimesRtt) {
  // RTT 100 ms, 40 MB/s per connection, 1 GB/s with many connections.
  const LinkMeasurements m{.rtt_s = 0.1,
                           .connection_bytes_per_s = 40 * kMB,
                           .aggregate_bytes_per_s = 1000 * kMB,
                           .aggregate_connections = 32,
                           .small_requests_per_s = 500};
  const LinkAdvice a = AdviseLink(m, std::nullopt);
  EXPECT_EQ(a.window_bytes, 200'000'000u);  // 1 GB/s x 0.1 s x 2
  EXPECT_EQ(a.connections, 25u);            // 1000 / 40
  EXPECT_EQ(a.shard_bytes, 64 * kMiB);      // >= 9 x 0.1 s x 40 MB/s = 36 MB
  EXPECT_EQ(a.parts_per_shard, 8u);         // ceil(25 / 3), at most 8
  EXPECT_EQ(a.shards_in_flight, 4u);        // max(ceil(25 / 8), ceil(200 MB / 64 MiB), 2)
  EXPECT_FALSE(a.predownload_samples.has_value());
  ASSERT_EQ(a.reasoning.size(), 5u);
  EXPECT_THAT(a.reasoning[0], ::testing::HasSubstr("100 ms x 2"));
}

TEST(AdviseLink, WithADatasetItPredictsEpochsAndSizesTheCache) {
  const LinkMeasurements m{.rtt_s = 0.05,
                           .connection_bytes_per_s = 100 * kMB,
                           .aggregate_bytes_per_s = 400 * kMB,
                           .aggregate_connections = 16,
                           .small_requests_per_s = 800,
                           .local_read_bytes_per_s = 2000 * kMB};
  const DatasetShape d{.samples = 10'000, .bytes = 1'000'000'000, .shards = 20};
  const LinkAdvice a = AdviseLink(m, d);
  EXPECT_EQ(a.shard_bytes, 50'000'000u);  // the dataset's
  EXPECT_EQ(a.window_bytes, 40'000'000u);
  EXPECT_EQ(a.connections, 4u);
  EXPECT_EQ(a.parts_per_shard, 2u);   // ceil(4 / max(ceil(40 / 50), 2))
  EXPECT_EQ(a.shards_in_flight, 2u);  // max(ceil(4 / 2), ceil(40 / 50), 2)
  EXPECT_EQ(a.predownload_samples, 1000u);
  EXPECT_EQ(a.cache_limit_bytes, 1'100'000'000u);
  ASSERT_TRUE(a.epoch1_s.has_value());
  EXPECT_NEAR(*a.epoch1_s, 0.1 + 1e9 / (400 * kMB), 1e-9);
  EXPECT_NEAR(*a.epoch2_s, 0.5, 1e-9);
}

// One connection carries nearly the whole link (as the benchmarks' emulator path does: 470 MB/s
// of 600): one part per shard, since more connections only cost.
TEST(AdviseLink, WhereOneConnectionCarriesTheLinkShardsComeWhole) {
  const LinkMeasurements m{
      .rtt_s = 0.1, .connection_bytes_per_s = 470 * kMB, .aggregate_bytes_per_s = 600 * kMB};
  const DatasetShape d{.samples = 10'000, .bytes = 18 * 64 * kMiB, .shards = 18};
  const LinkAdvice a = AdviseLink(m, d);
  EXPECT_EQ(a.connections, 2u);
  EXPECT_EQ(a.parts_per_shard, 1u);   // ceil(2 / max(ceil(120 MB / 64 MiB), 2))
  EXPECT_EQ(a.shards_in_flight, 2u);  // max(2 connections, ceil(120 MB / 64 MiB) = 2)
  EXPECT_THAT(a.reasoning[3], ::testing::HasSubstr("one connection carries the link"));
}

TEST(AdviseLink, SmallShardsOnALongLinkAreCalledOut) {
  const LinkMeasurements m{
      .rtt_s = 0.15, .connection_bytes_per_s = 25 * kMB, .aggregate_bytes_per_s = 250 * kMB};
  const DatasetShape d{.samples = 1000, .bytes = 100 * 4 * kMiB, .shards = 100};
  const LinkAdvice a = AdviseLink(m, d);
  EXPECT_EQ(a.parts_per_shard, 1u);
  EXPECT_EQ(a.shards_in_flight, 18u);  // max(10 connections, ceil(75 MB / 4 MiB) = 18)
  EXPECT_THAT(a.reasoning[2], ::testing::HasSubstr("too small"));
  EXPECT_THAT(a.reasoning[2], ::testing::HasSubstr("64.0 MiB"));
}

// The smallest cache that reads an epoch without fetching a shard twice follows from the
// shuffle's working set, not from one shard: twice it (and 4 windows for the look-ahead).
TEST(AdviseLink, TheSmallestCacheHoldsTwiceTheShufflesWorkingSet) {
  const LinkMeasurements m{.rtt_s = 0.05,
                           .connection_bytes_per_s = 100 * kMB,
                           .aggregate_bytes_per_s = 400 * kMB,
                           .aggregate_connections = 16};
  DatasetShape d{.samples = 10'000,
                 .bytes = 1'000'000'000,
                 .shards = 20,
                 .working_set_bytes = 300'000'000,
                 .order = "py1e, shuffle_block_size 2000, 1 worker",
                 .py1s_working_set_bytes = 50'000'000};
  const auto cache_line = [](const LinkAdvice& advice) {
    for (const std::string& line : advice.reasoning) {
      if (line.starts_with("cache_limit")) return line;
    }
    return std::string();
  };
  LinkAdvice a = AdviseLink(m, d);
  EXPECT_EQ(a.min_cache_limit_bytes, 600'000'000u);  // 2 x 300 MB > 4 x 40 MB windows
  EXPECT_THAT(cache_line(a), ::testing::HasSubstr("down to 572.2 MiB"));
  EXPECT_THAT(cache_line(a), ::testing::HasSubstr("py1e, shuffle_block_size 2000"));
  EXPECT_THAT(cache_line(a), ::testing::HasSubstr("py1s, 152.6 MiB"));  // 4 windows
  // A working set of most of the dataset: only the dataset itself is enough.
  d.working_set_bytes = 900'000'000;
  a = AdviseLink(m, d);
  EXPECT_EQ(a.min_cache_limit_bytes, a.cache_limit_bytes);
  EXPECT_THAT(cache_line(a), ::testing::HasSubstr("would fetch shards again"));
}

}  // namespace
}  // namespace ferry::cli
