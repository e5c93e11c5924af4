#include "cache/part_tuner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <vector>

#include "ferry/metrics/metrics.h"

namespace ferry::internal_cache {
namespace {

using Clock = PartTuner::Clock;
using namespace std::chrono_literals;

constexpr double kLink = 800e6;  // bytes/s all connections together can reach
constexpr double kCap = 25e6;    // bytes/s one connection may carry under a cap

double SharedLink(double k) { return kLink / k; }
double CappedConnections(double k) { return std::min(kCap, kLink / k); }

std::vector<BodySample> Samples(const std::vector<double>& counts,
                                const std::function<double(double)>& rate) {
  std::vector<BodySample> out;
  for (double k : counts) out.push_back({.bytes_per_s = rate(k), .concurrency = k});
  return out;
}

TEST(ConnectionElasticityTest, IsZeroWhereConnectionsSplitOneLimit) {
  EXPECT_NEAR(ConnectionElasticity(Samples({2, 4, 8, 16, 32, 6, 12}, SharedLink)), 0, 1e-9);
}

TEST(ConnectionElasticityTest, IsOneWhereEachConnectionHasItsOwnLimit) {
  EXPECT_NEAR(ConnectionElasticity(Samples({2, 4, 8, 16, 3, 6, 12}, CappedConnections)), 1, 1e-9);
}

TEST(ConnectionElasticityTest, IsUnknownWithoutEnoughSamplesOrSpread) {
  EXPECT_TRUE(std::isnan(ConnectionElasticity(Samples({2, 8, 32}, SharedLink))));
  EXPECT_TRUE(std::isnan(ConnectionElasticity(Samples({8, 8, 8, 8, 8, 8, 8, 8}, SharedLink))));
  EXPECT_TRUE(std::isnan(ConnectionElasticity(Samples({8, 8.5, 8, 8.5, 8, 8.5}, SharedLink))));
}

// Feeds the tuner `rounds` rounds of a simulated link: in each, bodies(round, tuner.parts())
// bodies start together, every one arriving at rate(bodies). Returns the part count after each
// round.
std::vector<uint32_t> Simulate(PartTuner& tuner, const std::function<double(double)>& rate,
                               const std::function<uint32_t(int, uint32_t)>& bodies_of,
                               int rounds) {
  std::vector<uint32_t> chosen;
  auto t = Clock::now() + 1s;
  for (int round = 0; round < rounds; ++round) {
    const uint32_t k = bodies_of(round, tuner.parts());
    constexpr uint64_t kBytes = 8 << 20;
    std::vector<PartTuner::Body> bodies;
    bodies.reserve(k);
    for (uint32_t i = 0; i < k; ++i) {
      bodies.push_back(tuner.Track());
      bodies.back().Received(kBytes, t);
    }
    t += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(static_cast<double>(kBytes) / rate(k)));
    for (auto& body : bodies) body.Finish(t);
    t += 1ms;
    chosen.push_back(tuner.parts());
  }
  return chosen;
}

// Two to four shards in flight, each in parts.
uint32_t TwoToFourShards(int round, uint32_t parts) { return (2 + round % 3) * parts; }

TEST(PartTunerTest, FallsToOnePartWhereOneConnectionCarriesTheLink) {
  PartTuner tuner;
  EXPECT_EQ(tuner.parts(), 4u);
  const auto chosen = Simulate(tuner, SharedLink, TwoToFourShards, 12);
  EXPECT_EQ(chosen.back(), 1u);
  // Once there it stays: nothing says more connections would add anything.
  EXPECT_EQ(std::count(chosen.end() - 4, chosen.end(), 1u), 4);
  EXPECT_EQ(metrics::GetGauge("/ferry/cache/download_parts").value(), 1);
}

TEST(PartTunerTest, RisesToTheMostPartsUnderAPerConnectionCap) {
  PartTuner tuner;
  const auto chosen = Simulate(tuner, CappedConnections, TwoToFourShards, 12);
  EXPECT_EQ(chosen.back(), 8u);
  EXPECT_EQ(metrics::GetGauge("/ferry/cache/download_parts").value(), 8);
}

TEST(PartTunerTest, ProbesWhenTheCountNeverChangesByItself) {
  // Always two shards in flight: only the tuner's own changes move the count of bodies.
  auto two = [](int, uint32_t parts) { return 2 * parts; };
  PartTuner capped({.initial = 1});
  EXPECT_EQ(Simulate(capped, CappedConnections, two, 20).back(), 8u);
  PartTuner shared({.initial = 1});
  const auto chosen = Simulate(shared, SharedLink, two, 20);
  EXPECT_GT(*std::max_element(chosen.begin(), chosen.end()), 1u);  // it did probe
  EXPECT_EQ(chosen.back(), 1u);
}

TEST(PartTunerTest, StaysAtTheMostPartsWhenTheyDoNotChangeTheCount) {
  // The prefetcher fetches fewer shards at once when each comes in more parts: 24 bodies always.
  auto steady = [](int, uint32_t) { return 24u; };
  PartTuner tuner;
  const auto chosen = Simulate(tuner, CappedConnections, steady, 12);
  EXPECT_EQ(std::count(chosen.begin() + 4, chosen.end(), 8u), 8) << "no back and forth";
}

TEST(PartTunerTest, StaysWithinItsBounds) {
  PartTuner tuner({.initial = 3, .min_parts = 2, .max_parts = 6});
  EXPECT_EQ(tuner.parts(), 3u);
  for (uint32_t parts : Simulate(tuner, SharedLink, TwoToFourShards, 10)) {
    EXPECT_GE(parts, 2u);
    EXPECT_LE(parts, 6u);
  }
  EXPECT_EQ(tuner.parts(), 2u);
  PartTuner capped({.initial = 3, .min_parts = 2, .max_parts = 6});
  EXPECT_EQ(Simulate(capped, CappedConnections, TwoToFourShards, 10).back(), 6u);
}

TEST(PartTunerTest, MeasuresEachBodysRateAndTheBodiesInFlightWithIt) {
  PartTuner tuner;
  const auto t = Clock::now() + 1s;
  auto a = tuner.Track();
  auto b = tuner.Track();
  a.Received(1'000'000, t);
  b.Received(0, t);  // the transport asking while b awaits its first byte: b has not started
  b.Received(500'000, t + 1s);  // b arrives during the second half of a
  b.Received(500'000, t + 2s);
  a.Finish(t + 2s);
  b.Finish(t + 2s);
  const auto samples = tuner.RecentSamples();
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_DOUBLE_EQ(samples[0].bytes_per_s, 500'000);  // 1 MB in 2 s
  EXPECT_DOUBLE_EQ(samples[0].concurrency, 1.5);      // alone, then with b
  EXPECT_DOUBLE_EQ(samples[1].bytes_per_s, 1'000'000);
  EXPECT_DOUBLE_EQ(samples[1].concurrency, 2);
}

TEST(PartTunerTest, AFailedBodyRecordsNothingAndLeavesTheCountRight) {
  PartTuner tuner;
  const auto t = Clock::now() + 1s;
  {
    auto failed = tuner.Track();
    failed.Received(1000, t);
    auto never_started = tuner.Track();
  }  // dropped unfinished: a failed read
  EXPECT_TRUE(tuner.RecentSamples().empty());
  auto lone = tuner.Track();
  const auto later = Clock::now() + 2s;
  lone.Received(1'000'000, later);
  lone.Finish(later + 1s);
  const auto samples = tuner.RecentSamples();
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_DOUBLE_EQ(samples[0].concurrency, 1);
}

TEST(PartTunerTest, KeepsTheLastWindowOfSamplesOldestFirst) {
  PartTuner tuner({.window = 3, .decide_every = 100});
  auto t = Clock::now() + 1s;
  for (int i = 1; i <= 5; ++i) {
    auto body = tuner.Track();
    body.Received(static_cast<uint64_t>(i) * 1000, t);
    t += 1s;
    body.Finish(t);
  }
  const auto samples = tuner.RecentSamples();
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_DOUBLE_EQ(samples[0].bytes_per_s, 3000);
  EXPECT_DOUBLE_EQ(samples[2].bytes_per_s, 5000);
}

}  // namespace
}  // namespace ferry::internal_cache
