#include "cache/cache_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace ferry::internal_cache {
namespace {

TEST(CacheBudget, UnboundedWithoutALimitOrWhenEverythingFits) {
  const CacheBudget none;
  EXPECT_FALSE(none.limited());
  EXPECT_EQ(none.OpenBytesPerReader(2), UINT64_MAX);
  EXPECT_EQ(none.AheadBytesPerReader(2, 0), UINT64_MAX);
  const CacheBudget fits(1000, /*fits=*/true);
  EXPECT_FALSE(fits.limited());
  EXPECT_EQ(fits.OpenBytesPerReader(2), UINT64_MAX);
  // Nothing is evicted, but half the limit is plenty to have ahead, whoever reads.
  EXPECT_EQ(fits.AheadBytesPerReader(1, 0), 500u);
  EXPECT_EQ(fits.AheadBytesPerReader(4, 900), 500u);
}

TEST(CacheBudget, PartsAddUpToTheLimit) {
  const CacheBudget budget(1000, /*fits=*/false);
  ASSERT_TRUE(budget.limited());
  EXPECT_EQ(budget.WorkingSetRoom(), 500u);
  EXPECT_EQ(budget.LimitToHold(500), 1000u);
  // A working set that fills its room leaves the look-ahead a quarter, shared by the readers.
  EXPECT_EQ(budget.OpenBytesPerReader(1), 250u);
  EXPECT_EQ(budget.AheadBytesPerReader(1, 500), 250u);
  EXPECT_EQ(budget.OpenBytesPerReader(2), 125u);
  EXPECT_EQ(budget.AheadBytesPerReader(2, 500), 125u);
  EXPECT_LE(budget.WorkingSetRoom() + budget.OpenBytesPerReader(1) +
                budget.AheadBytesPerReader(1, budget.WorkingSetRoom()),
            1000u);
  // A small working set (py1s) leaves the look-ahead what the others do not use.
  EXPECT_EQ(budget.AheadBytesPerReader(1, 100), 650u);
  EXPECT_EQ(budget.AheadBytesPerReader(1, 0), 750u);
  // Never less than a quarter, even for a working set that did not fit.
  EXPECT_EQ(budget.AheadBytesPerReader(1, 5000), 250u);
}

// A shard of `raw` bytes, compressed to `zip` (0: not compressed).
ShardDescription Shard(std::string name, uint64_t raw, uint64_t zip = 0) {
  ShardDescription shard;
  shard.config = std::make_shared<const ShardConfig>();
  shard.raw_data = {.basename = name, .bytes = raw};
  if (zip > 0) shard.zip_data = FileInfo{.basename = name + ".zstd", .bytes = zip};
  return shard;
}

TEST(CheckCacheLimit, TheLimitMustExceedTheIndexFiles) {
  DatasetDescription a, b;
  a.shards = {Shard("shard.00000.mds", 10)};
  b.shards = {Shard("shard.00000.mds", 10)};
  const CacheFolder folders[] = {{.local = "/cache/a", .index_bytes = 300, .index = &a},
                                 {.local = "/cache/b", .index_bytes = 700, .index = &b}};
  // Mosaic's rule: the sum of the index files, equal included.
  const Status status = CheckCacheLimit(1000, folders);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              ::testing::ContainsRegex("Minimum cache usage .1000 bytes.*is larger than the cache "
                                       "limit .1000 bytes"));
  EXPECT_THAT(status.message(), ::testing::HasSubstr("/cache/b/index.json"));
  EXPECT_TRUE(CheckCacheLimit(1001, folders).ok());
}

TEST(CheckCacheLimit, TheLimitMustHoldFourOfTheLargestShardRawAndZipTogether) {
  DatasetDescription index;
  index.shards = {Shard("shard.00000.mds", 100, 50), Shard("shard.00001.mds", 120, 80)};
  const CacheFolder folders[] = {{.local = "/cache", .index_bytes = 10, .index = &index}};
  const Status status = CheckCacheLimit(4 * 200 - 1, folders);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), ::testing::ContainsRegex(
                                    "Cache limit .799 bytes. is too low. Increase the "
                                    "`cache_limit` to at least four times the largest shard size "
                                    ".200 bytes"));
  EXPECT_THAT(status.message(), ::testing::HasSubstr("/cache/shard.00001.mds"));
  EXPECT_TRUE(CheckCacheLimit(4 * 200, folders).ok());
  // No overflow for a shard past a quarter of the largest limit.
  index.shards = {Shard("huge", UINT64_MAX / 2)};
  EXPECT_FALSE(CheckCacheLimit(UINT64_MAX, folders).ok());
}

}  // namespace
}  // namespace ferry::internal_cache
