// StreamInterleave against its contract (src/order/stream_interleave.h): every item of every
// sequence once, each sequence in its own order; the proportions held within every block; a
// uniform interleaving when one block holds it all; determinism per key and lane.
#include "order/stream_interleave.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>
#include <vector>

namespace ferry::internal_order {
namespace {

using ::testing::HasSubstr;

StreamInterleave Make(std::vector<uint64_t> counts, uint64_t key) {
  auto made = StreamInterleave::Make(std::move(counts), key);
  EXPECT_TRUE(made.has_value()) << made.status().ToString();
  return *made;
}

std::vector<StreamInterleave::Item> All(const StreamInterleave& il, uint32_t lane) {
  std::vector<StreamInterleave::Item> out;
  StreamInterleave::Cache cache;
  for (uint64_t t = 0; t < il.size(); ++t) out.push_back(il.At(lane, t, &cache));
  return out;
}

TEST(StreamInterleave, EveryItemOnceEachSequenceInItsOwnOrder) {
  const std::vector<std::vector<uint64_t>> cases = {
      {5},        {3, 0, 4},          {1, 1},          {100, 1},
      {0, 0, 7},  {2000, 3000, 1000}, {9000, 4, 333},  {1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
      {12345, 0}, {50000, 20000},     {4096, 4096, 1},
  };
  for (const auto& counts : cases) {
    const StreamInterleave il = Make(counts, 7);
    ASSERT_EQ(il.size(), std::accumulate(counts.begin(), counts.end(), uint64_t{0}));
    for (uint32_t lane : {0u, 3u}) {
      std::vector<uint64_t> next(counts.size(), 0);
      for (const StreamInterleave::Item& item : All(il, lane)) {
        ASSERT_LT(item.sequence, counts.size());
        ASSERT_EQ(item.index, next[item.sequence]) << "sequence " << item.sequence;
        ++next[item.sequence];
      }
      EXPECT_EQ(next, counts);
    }
  }
}

TEST(StreamInterleave, RandomAccessWithoutACacheAgreesWithAWalk) {
  const StreamInterleave il = Make({30000, 11000, 500}, 99);
  const std::vector<StreamInterleave::Item> walk = All(il, 1);
  for (uint64_t t = 0; t < il.size(); t += 97) {
    EXPECT_EQ(il.At(1, t, nullptr), walk[t]) << t;
  }
  // A cache last used by another lane is not mistaken for this one's.
  StreamInterleave::Cache cache;
  il.At(0, 5, &cache);
  EXPECT_EQ(il.At(1, 5, &cache), walk[5]);
}

TEST(StreamInterleave, EveryBlockHoldsTheProportionsWithinOne) {
  const std::vector<uint64_t> counts = {700000, 250000, 49999, 1};
  const StreamInterleave il = Make(counts, 3);
  const uint64_t total = il.size();
  const uint64_t k = il.block_size();
  ASSERT_GT(total / k, 100u) << "the test wants many blocks";
  const std::vector<StreamInterleave::Item> walk = All(il, 0);
  for (uint64_t begin = 0; begin < total; begin += k) {
    std::vector<double> seen(counts.size(), 0);
    const uint64_t end = std::min(total, begin + k);
    for (uint64_t t = begin; t < end; ++t) ++seen[walk[t].sequence];
    for (size_t s = 0; s < counts.size(); ++s) {
      const double ideal = static_cast<double>(end - begin) * static_cast<double>(counts[s]) /
                           static_cast<double>(total);
      EXPECT_LT(std::abs(seen[s] - ideal), 2.0) << "block at " << begin << ", sequence " << s;
    }
  }
}

TEST(StreamInterleave, OneBlockIsAUniformInterleaving) {
  // {2, 2}: six interleavings, each drawn about 1/6 of the time over many keys.
  std::map<std::vector<uint32_t>, int> seen;
  constexpr int kKeys = 6000;
  for (int key = 0; key < kKeys; ++key) {
    std::vector<uint32_t> pattern;
    for (const auto& item : All(Make({2, 2}, key), 0)) pattern.push_back(item.sequence);
    ++seen[pattern];
  }
  ASSERT_EQ(seen.size(), 6u);
  for (const auto& [pattern, n] : seen) {
    EXPECT_GT(n, 850);  // 1000 expected; 5 standard deviations is about 150
    EXPECT_LT(n, 1150);
  }
}

TEST(StreamInterleave, DeterministicPerKeyAndLane) {
  const std::vector<uint64_t> counts = {300, 200, 100};
  const auto a = All(Make(counts, 5), 0);
  EXPECT_EQ(a, All(Make(counts, 5), 0));
  EXPECT_NE(a, All(Make(counts, 6), 0));
  EXPECT_NE(a, All(Make(counts, 5), 1));
}

TEST(StreamInterleave, TooManyItemsIsAnError) {
  auto made = StreamInterleave::Make({uint64_t{1} << 51, uint64_t{1} << 51, 1}, 0);
  ASSERT_FALSE(made.has_value());
  EXPECT_EQ(made.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(made.status().message(), HasSubstr("past 2^52"));
}

}  // namespace
}  // namespace ferry::internal_order
