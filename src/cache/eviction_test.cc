#include "cache/eviction.h"

#include <gtest/gtest.h>

#include <vector>

namespace ferry::internal_cache {
namespace {

std::vector<size_t> Order(std::vector<EvictionCandidate> candidates,
                          const std::vector<size_t>& positions) {
  OrderVictims(candidates, positions);
  std::vector<size_t> shards;
  for (const auto& c : candidates) shards.push_back(c.shard);
  return shards;
}

TEST(UpcomingPositions, FirstOccurrenceWinsAndStrangersAreIgnored) {
  const std::vector<size_t> upcoming = {3, 1, 3, 9, 0};
  const auto positions = UpcomingPositions(upcoming, 5);
  EXPECT_EQ(positions, (std::vector<size_t>{4, 1, kNotUpcoming, 0, kNotUpcoming}));
}

TEST(OrderVictims, WithoutAScheduleLeastRecentlyUsedGoesFirst) {
  EXPECT_EQ(Order({{0, 30}, {1, 10}, {2, 20}, {3, 10}}, {}), (std::vector<size_t>{1, 3, 2, 0}));
}

TEST(OrderVictims, UnneededShardsGoFirstThenTheOneNeededLast) {
  // Shard 2 is needed next, shard 0 after it; 1 and 3 are not needed: they go first, by age,
  // and shard 2 - the most recently used of all - is only evicted after 0.
  const auto positions = UpcomingPositions(std::vector<size_t>{2, 0}, 4);
  EXPECT_EQ(Order({{0, 1}, {1, 30}, {2, 2}, {3, 20}}, positions),
            (std::vector<size_t>{3, 1, 0, 2}));
}

TEST(OrderVictims, ShardsPastTheScheduleCountAsUnneeded) {
  const auto positions = UpcomingPositions(std::vector<size_t>{0}, 1);
  EXPECT_EQ(Order({{0, 1}, {7, 5}}, positions), (std::vector<size_t>{7, 0}));
}

}  // namespace
}  // namespace ferry::internal_cache
