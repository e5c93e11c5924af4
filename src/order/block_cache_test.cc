// Tests of the per-cursor block cache: lookup by position, recency, and eviction that never goes
// below the working set.
#include "order/block_cache.h"

#include <gtest/gtest.h>

#include <memory>

namespace ferry::internal_order {
namespace {

std::shared_ptr<const SampleBlock> Block(uint32_t c, uint64_t begin, size_t n) {
  auto block = std::make_shared<SampleBlock>();
  block->canonical = c;
  block->begin = begin;
  block->samples.assign(n, 1000 * c + begin);
  return block;
}

TEST(BlockCache, FindsByNodeAndPosition) {
  BlockCache cache(4, 1 << 20);
  cache.Insert(Block(0, 0, 10));
  cache.Insert(Block(1, 0, 10));
  cache.Insert(Block(0, 10, 5));
  EXPECT_EQ(cache.Find(0, 9)->begin, 0u);
  EXPECT_EQ(cache.Find(0, 10)->begin, 10u);
  EXPECT_EQ(cache.Find(0, 14)->begin, 10u);
  EXPECT_EQ(cache.Find(0, 15), nullptr);
  EXPECT_EQ(cache.Find(1, 3)->canonical, 1u);
  EXPECT_EQ(cache.Find(2, 3), nullptr);
  // Find(0, 14) made [10, 15) the latest block of node 0.
  EXPECT_EQ(cache.Latest(0)->begin, 10u);
  EXPECT_EQ(cache.Latest(2), nullptr);
}

TEST(BlockCache, EvictsLeastRecentlyUsedOverBudgetButKeepsTheWorkingSet) {
  const size_t one = Block(0, 0, 100)->bytes();
  BlockCache cache(2, 3 * one);
  cache.Insert(Block(0, 0, 100));
  cache.Insert(Block(1, 0, 100));
  cache.Insert(Block(2, 0, 100));
  EXPECT_EQ(cache.size(), 3u);
  ASSERT_NE(cache.Find(0, 0), nullptr);  // node 0 is now the most recent
  cache.Insert(Block(3, 0, 100));
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.Find(1, 0), nullptr);  // the least recent went
  EXPECT_NE(cache.Find(0, 0), nullptr);

  // Blocks bigger than the budget: the minimum still stays.
  BlockCache small(2, 1);
  small.Insert(Block(0, 0, 100));
  small.Insert(Block(1, 0, 100));
  small.Insert(Block(2, 0, 100));
  EXPECT_EQ(small.size(), 2u);
  EXPECT_NE(small.Find(1, 0), nullptr);
  EXPECT_NE(small.Find(2, 0), nullptr);
}

}  // namespace
}  // namespace ferry::internal_order
