#include "cli/top_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace ferry::cli {
namespace {

using ::testing::HasSubstr;

metrics::ProcessMetrics Process(int64_t pid, std::string label, int64_t samples, int64_t bytes,
                                int64_t wait_ns) {
  return {.pid = pid,
          .label = std::move(label),
          .started_unix_ms = 1000 + pid,
          .updated_unix_ms = 0,
          .values = {{"/ferry/stream/samples", samples},
                     {"/ferry/storage/s3/bytes_read", bytes},
                     {"/ferry/storage/s3/requests", bytes / 1'000'000},
                     {"/ferry/storage/s3/in_flight", 3},
                     {"/ferry/stream/wait_ns", wait_ns},
                     {"/ferry/cache/limit_bytes", int64_t{10} << 30}}};
}

// As ReadNodeMetrics combines them: the cache_limit is a setting (the largest counts), the rest
// are summed.
metrics::NodeMetrics Node(std::vector<metrics::ProcessMetrics> processes) {
  metrics::NodeMetrics node;
  for (const auto& p : processes) {
    for (const auto& [name, value] : p.values) {
      int64_t& total = node.values[name];
      total = name == "/ferry/cache/limit_bytes" ? std::max(total, value) : total + value;
    }
  }
  node.processes = std::move(processes);
  return node;
}

TopFrame TwoReadings() {
  TopReading before{.node = Node({Process(10, "python3 worker 0/2", 100, 10'000'000, 0),
                                  Process(11, "python3 worker 1/2", 100, 10'000'000, 0)}),
                    .at_s = 50,
                    .cache_bytes = 1'500'000'000};
  TopReading now{.node = Node({Process(10, "python3 worker 0/2", 300, 30'000'000, 500'000'000),
                               Process(11, "python3 worker 1/2", 500, 50'000'000, 0)}),
                 .at_s = 52,
                 .cache_bytes = uint64_t{3} << 29};
  return {.folder = "/cache/imagenet", .now = std::move(now), .before = std::move(before)};
}

TEST(TopView, RatesPerProcessAndForTheNodeComeFromTheTwoReadings) {
  const std::vector<std::string> lines = RenderTop(TwoReadings());
  ASSERT_GE(lines.size(), 7u);
  EXPECT_THAT(lines[0], HasSubstr("/cache/imagenet"));
  EXPECT_THAT(lines[0], HasSubstr("2 processes"));
  EXPECT_THAT(lines[1], HasSubstr("cache 1.5 GiB of 10.0 GiB"));
  EXPECT_THAT(lines[3], HasSubstr("s3 MB/s"));
  // Worker 0: 200 samples and 20 MB in 2 s, waiting a quarter of the time for shards.
  EXPECT_THAT(lines[4], HasSubstr("worker 0/2"));
  EXPECT_THAT(lines[4], ::testing::MatchesRegex(".* 100 +10\\.0 +10 +3 .* 0\\.25 .*"));
  EXPECT_THAT(lines[5], ::testing::MatchesRegex(".*worker 1/2 .* 200 +20\\.0 +20 +3 .*"));
  EXPECT_THAT(lines[6], ::testing::MatchesRegex("node +300 +30\\.0 +30 +6 .* 0\\.25 .*"));
}

TEST(TopView, TheFirstReadingHasNoRatesAndANewProcessHasNoneYet) {
  TopFrame frame = TwoReadings();
  frame.before->node.processes.pop_back();  // worker 1 started since
  std::vector<std::string> lines = RenderTop(frame);
  EXPECT_THAT(lines[4], ::testing::MatchesRegex(".*worker 0/2 +100 .*"));
  EXPECT_THAT(lines[5], ::testing::MatchesRegex(".*worker 1/2 +- +- +- +3 .*"));
  frame.before.reset();
  lines = RenderTop(frame);
  EXPECT_THAT(lines[6], ::testing::MatchesRegex("node +- +- +- +6 .*"));
}

TEST(TopView, JsonHoldsValuesAndRates) {
  const nlohmann::ordered_json j = TopJson(TwoReadings());
  EXPECT_EQ(j["folder"], "/cache/imagenet");
  EXPECT_EQ(j["cache"]["bytes"], uint64_t{3} << 29);
  EXPECT_EQ(j["cache"]["limit"], int64_t{10} << 30);
  ASSERT_EQ(j["processes"].size(), 2u);
  EXPECT_EQ(j["processes"][0]["pid"], 10);
  EXPECT_DOUBLE_EQ(j["processes"][0]["rates"]["samples_per_s"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(j["processes"][0]["rates"]["waiting_s_per_s"]["shard"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(j["node"]["rates"]["read_bytes_per_s"]["s3"].get<double>(), 30e6);
  EXPECT_EQ(j["node"]["values"]["/ferry/stream/samples"], 800);
  TopFrame first = TwoReadings();
  first.before.reset();
  EXPECT_FALSE(TopJson(first)["node"].contains("rates"));
}

}  // namespace
}  // namespace ferry::cli
