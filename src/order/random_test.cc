// Tests of the deterministic randomness under every order: known SplitMix64 values, unbiased
// bounded draws, Fisher-Yates and the Feistel permutation as bijections.
#include "order/random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "order/feistel_permutation.h"

namespace ferry::internal_order {
namespace {

TEST(Random, StreamValueIsSplitMix64) {
  // The first outputs of the reference splitmix64.c seeded with 0 and with 1234567.
  EXPECT_EQ(StreamValue(0, 0), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(StreamValue(0, 1), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(StreamValue(1234567, 0), 6457827717110365317ULL);
  EXPECT_EQ(StreamValue(1234567, 1), 3203168211198807973ULL);
}

TEST(Random, DeriveKeyIsInjectivePerKey) {
  std::set<uint64_t> seen;
  for (uint64_t v = 0; v < 10000; ++v) seen.insert(DeriveKey(42, v));
  EXPECT_EQ(seen.size(), 10000u);
  EXPECT_NE(DeriveKey(1, 2), DeriveKey(2, 1));
}

TEST(Random, BoundedStaysInRangeAndIsRoughlyUniform) {
  Rng rng(7);
  EXPECT_EQ(rng.Bounded(1), 0u);
  std::vector<int> counts(3);
  constexpr int kDraws = 30000;
  for (int i = 0; i < kDraws; ++i) {
    const uint64_t v = rng.Bounded(3);
    ASSERT_LT(v, 3u);
    ++counts[v];
  }
  // Expected 10000 each, standard deviation ~82.
  for (int c : counts) EXPECT_NEAR(c, kDraws / 3, 400);
  // A bound near 2^64 exercises the rejection path.
  const uint64_t big = (uint64_t{1} << 63) + 12345;
  for (int i = 0; i < 1000; ++i) ASSERT_LT(rng.Bounded(big), big);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t v = rng.Between(5, 9);
    ASSERT_GE(v, 5u);
    ASSERT_LE(v, 9u);
  }
}

TEST(Random, RngIsDeterministic) {
  Rng a(99), b(99), c(100);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    differs |= x != c.Next();
  }
  EXPECT_TRUE(differs);
}

TEST(Random, ShuffleGivesEveryPermutationEvenly) {
  std::map<std::vector<int>, int> counts;
  constexpr int kTrials = 6000;
  for (int t = 0; t < kTrials; ++t) {
    std::vector<int> v = {0, 1, 2};
    Rng rng(DeriveKey(5, t));
    Shuffle(std::span<int>(v), rng);
    ++counts[v];
  }
  ASSERT_EQ(counts.size(), 6u);
  for (const auto& [perm, n] : counts) EXPECT_NEAR(n, kTrials / 6, 150);
}

TEST(Random, ShuffleIsAPermutation) {
  std::vector<uint64_t> v(5000);
  std::iota(v.begin(), v.end(), 0);
  Rng rng(3);
  Shuffle(std::span<uint64_t>(v), rng);
  std::vector<uint64_t> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (uint64_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i);
  // Not the identity (the chance of that is 1/5000!).
  EXPECT_FALSE(std::is_sorted(v.begin(), v.end()));
}

TEST(FeistelPermutation, IsABijectionForAnySize) {
  for (uint64_t n : {1u, 2u, 3u, 4u, 5u, 17u, 64u, 1000u, 4097u}) {
    const FeistelPermutation p(n, 11);
    std::vector<bool> hit(n);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t v = p(i);
      ASSERT_LT(v, n) << n;
      ASSERT_FALSE(hit[v]) << "n=" << n << " i=" << i;
      hit[v] = true;
    }
  }
}

TEST(FeistelPermutation, DependsOnTheKeyAndMixes) {
  const uint64_t n = 10000;
  const FeistelPermutation a(n, 1), b(n, 2);
  int same = 0, fixed = 0;
  double displacement = 0;
  for (uint64_t i = 0; i < n; ++i) {
    same += a(i) == b(i);
    fixed += a(i) == i;
    displacement += std::abs(static_cast<double>(a(i)) - static_cast<double>(i));
  }
  EXPECT_LT(same, 20);
  EXPECT_LT(fixed, 20);
  // A uniform permutation moves an element by n/3 on average.
  EXPECT_NEAR(displacement / n, n / 3.0, n / 20.0);
}

TEST(FeistelPermutation, WorksNearTheTopOfTheRange) {
  const uint64_t n = (uint64_t{1} << 62) + 3;
  const FeistelPermutation p(n, 5);
  std::set<uint64_t> seen;
  for (uint64_t i = n - 1000; i < n; ++i) {
    const uint64_t v = p(i);
    ASSERT_LT(v, n);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

}  // namespace
}  // namespace ferry::internal_order
