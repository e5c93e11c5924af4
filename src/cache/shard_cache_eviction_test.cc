// ShardCache under cache_limit: pinned shards are never evicted, disk use stays within the
// limit plus the documented slack, and knowing the next epoch beats LRU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <random>
#include <thread>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "cache/cache_layout.h"
#include "cache/cache_testutil.h"
#include "cache/eviction.h"
#include "cache/file_lock.h"
#include "cache/shard_cache_fixture_testutil.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/format/merge_index.h"
#include "ferry/metrics/metrics.h"
#include "format/fixture_testutil.h"
#include "metrics/metrics_file.h"

namespace ferry {
namespace {

using namespace shard_cache_test;  // NOLINT: the fixture and its helpers

namespace fs = std::filesystem;
using internal_cache::CacheLayout;
using internal_cache::FileLock;
using internal_cache::LockMode;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

TEST_F(ShardCacheTest, APinnedShardIsNeverEvicted) {
  WriteRemote();
  const size_t n = index_.shards.size();
  auto cache = Open({.cache_limit = 1});
  auto pinned = cache->Acquire(0);
  ASSERT_TRUE(pinned.has_value());
  for (size_t k = 1; k < n; ++k) {
    ASSERT_TRUE(cache->Acquire(k).has_value());
    EXPECT_TRUE(cache->IsLocal(0)) << "after shard " << k;
  }
  // Each download evicted the one before it, never the pinned shard.
  EXPECT_EQ(cache->DiskUsage(), ShardBytes(0) + ShardBytes(n - 1));
  *pinned = ShardHandle();
  ASSERT_TRUE(cache->Acquire(1).has_value());
  EXPECT_FALSE(cache->IsLocal(0));
  EXPECT_EQ(cache->DiskUsage(), ShardBytes(1));
}

TEST_F(ShardCacheTest, AShardPinnedByAnotherProcessIsNeverEvicted) {
  WriteRemote();
  auto store = Store();
  testing::Children children;
  testing::Pipe pinned, release, released;
  const pid_t child = children.Spawn([&]() -> int {
    auto cache = ShardCache::Open(store, prefix_, index_, {.local = Cache()});
    if (!cache) return 3;
    auto handle = (*cache)->Acquire(0);
    if (!handle) return 4;
    pinned.Send();
    if (!release.Receive()) return 5;
    *handle = ShardHandle();  // unpinned while the process lives on
    released.Send();
    return release.Receive() ? 0 : 6;
  });
  ASSERT_TRUE(pinned.Receive());
  auto cache = Open({.cache_limit = 1}, store);
  for (size_t k = 1; k < index_.shards.size(); ++k) {
    ASSERT_TRUE(cache->Acquire(k).has_value());
    EXPECT_TRUE(cache->IsLocal(0)) << "after shard " << k;
  }
  release.Send();
  ASSERT_TRUE(released.Receive());
  ASSERT_TRUE(cache->Acquire(1).has_value());
  EXPECT_FALSE(cache->IsLocal(0));
  release.Send();
  EXPECT_EQ(children.Wait(child), 0);
}

TEST_F(ShardCacheTest, AForkedChildDroppingItsCopyOfAHandleKeepsTheParentsPin) {
  WriteRemote();
  auto cache = Open();
  auto handle = cache->Acquire(0);
  ASSERT_TRUE(handle.has_value());
  testing::Children children;
  // As a torch DataLoader worker would: the child inherits the handle and destroys it.
  const pid_t child = children.Spawn([&]() -> int {
    *handle = ShardHandle();
    return 0;
  });
  ASSERT_EQ(children.Wait(child), 0);
  const CacheLayout layout(Cache());
  auto evict = FileLock::TryLock(layout.UseLockPath(index_.shards[0].raw_data.basename),
                                 LockMode::kExclusive);
  ASSERT_TRUE(evict.has_value());
  EXPECT_FALSE(evict->has_value()) << "the parent's pin was released by the child";
  *handle = ShardHandle();
  evict = FileLock::TryLock(layout.UseLockPath(index_.shards[0].raw_data.basename),
                            LockMode::kExclusive);
  ASSERT_TRUE(evict.has_value());
  EXPECT_TRUE(evict->has_value());
}

TEST_F(ShardCacheTest, EverythingPinnedGoesOverTheLimitInsteadOfFailing) {
  WriteRemote();
  const size_t n = index_.shards.size();
  auto cache = Open({.cache_limit = 1});
  std::vector<ShardHandle> held;
  uint64_t total = 0;
  for (size_t k = 0; k + 1 < n; ++k) {
    auto handle = cache->Acquire(k);
    ASSERT_TRUE(handle.has_value()) << handle.status().ToString();
    held.push_back(std::move(*handle));
    total += ShardBytes(k);
  }
  EXPECT_EQ(cache->DiskUsage(), total);
  held.clear();
  ASSERT_TRUE(cache->Acquire(n - 1).has_value());
  EXPECT_EQ(cache->DiskUsage(), ShardBytes(n - 1));
}

// Iterates the dataset in several orders with `threads` threads, each holding one shard at a
// time, while a sampler watches the bytes in the cache folder (temporaries included).
void IterateUnderLimit(ShardCache& cache, const DatasetDescription& index, const fs::path& folder,
                       int threads, uint64_t bound) {
  std::atomic<uint64_t> most{0};
  std::atomic<int> bad{0};
  {
    std::jthread sampler([&](std::stop_token stop) {
      while (!stop.stop_requested()) {
        const uint64_t now = testing::BytesIn(folder);
        if (now > most) most = now;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
    std::vector<std::jthread> readers;
    for (int r = 0; r < threads; ++r) {
      readers.emplace_back([&, r] {
        std::mt19937 random(r);
        for (int pass = 0; pass < 4; ++pass) {
          std::vector<size_t> order = Iota(index.shards.size());
          if (pass == 1) std::reverse(order.begin(), order.end());
          if (pass >= 2) std::shuffle(order.begin(), order.end(), random);
          for (const size_t k : order) {
            auto handle = cache.Acquire(k);
            if (!handle || !testing::RawShardIsIntact(handle->path(), index.shards[k])) ++bad;
          }
        }
      });
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_LE(most, bound) << "the folder held " << most << " bytes";
  EXPECT_GT(most, 0u);
}

TEST_F(ShardCacheTest, CacheLimitBoundsDiskUseOfOneReader) {
  WriteRemote({.samples = 60});
  const uint64_t evictions = CounterValue("/ferry/cache/evictions");
  // Not a multiple of the shard size, so that a download counted short would show.
  const uint64_t limit = 5 * LargestPeak() / 2;
  auto cache = Open({.cache_limit = limit});
  // One reader holding one shard at a time: room is made before each download for its peak,
  // so the folder never goes over the limit at all.
  IterateUnderLimit(*cache, index_, Cache(), 1, limit);
  EXPECT_LE(cache->DiskUsage(), limit);
  EXPECT_GT(CounterValue("/ferry/cache/evictions"), evictions);
}

TEST_F(ShardCacheTest, CacheLimitBoundsDiskUseOfCompressedShardsKeptZipped) {
  WriteRemote({.samples = 60, .compression = "zstd"});
  // Not a multiple of the shard size, so that a download counted short would show.
  const uint64_t limit = 5 * LargestPeak() / 2;
  auto cache = Open({.cache_limit = limit, .keep_zip = true});
  IterateUnderLimit(*cache, index_, Cache(), 1, limit);
  EXPECT_LE(cache->DiskUsage(), limit);
}

TEST_F(ShardCacheTest, CacheLimitBoundsDiskUseOfConcurrentReadersUpToTheDocumentedSlack) {
  WriteRemote({.samples = 60, .compression = "zstd"});
  const int threads = 3;
  const uint64_t limit = 4 * LargestPeak();
  auto cache = Open({.cache_limit = limit},
                    Store({.chunk_bytes = 4096, .chunk_delay = std::chrono::microseconds(200)}));
  // Slack: each download counts the folder but not the other downloads in flight (one per
  // reader), each at most the largest peak. The pins (one per other reader) fit beside it.
  IterateUnderLimit(*cache, index_, Cache(), threads, limit + (threads - 1) * LargestPeak());
}

TEST_F(ShardCacheTest, KnowingTheNextEpochRefetchesLessThanLru) {
  WriteRemote({.samples = 50});
  const size_t n = index_.shards.size();
  uint64_t largest = 0;
  for (size_t k = 0; k < n; ++k) largest = std::max(largest, ShardBytes(k));
  auto second_pass_downloads = [&](const std::string& name, bool schedule) {
    auto cache = Open({.local = Cache() / name, .cache_limit = 4 * largest});
    if (schedule) cache->SetUpcoming(Iota(n));  // the next epoch visits the shards in order
    for (size_t k = 0; k < n; ++k) EXPECT_TRUE(cache->Acquire(k).has_value());
    const uint64_t before = CounterValue("/ferry/cache/downloads");
    for (size_t k = 0; k < n; ++k) EXPECT_TRUE(cache->Acquire(k).has_value());
    return CounterValue("/ferry/cache/downloads") - before;
  };
  const uint64_t lru = second_pass_downloads("lru", false);
  const uint64_t scheduled = second_pass_downloads("scheduled", true);
  // A cyclic pass over more shards than fit is LRU's worst case: it always evicted the shard
  // needed next. Knowing the order keeps the first shards of the next pass.
  EXPECT_EQ(lru, n);
  EXPECT_LT(scheduled, lru);
  EXPECT_LE(scheduled, n - 3);
}

// The limit governs the folder, not only its shards: index.json (which LoadIndex keeps there)
// takes its share, as in Mosaic's accounting.
TEST_F(ShardCacheTest, CacheLimitHoldsIndexJsonBesideTheShards) {
  WriteRemote({.samples = 60, .sample_bytes = 100, .size_limit = 1024});
  ASSERT_TRUE(internal_cache::CreateCacheFolders(Cache()).ok());
  fs::copy_file(Remote() / "index.json", Cache() / "index.json");
  const uint64_t index_bytes = fs::file_size(Cache() / "index.json");
  // Counted short by index.json, the shards alone would fill a third shard's worth more.
  ASSERT_GE(index_bytes, LargestPeak() / 2);
  const uint64_t limit = index_bytes + 5 * LargestPeak() / 2;
  auto cache = Open({.cache_limit = limit});
  // And this process's node-wide metrics file, and room for the totals of exited ones.
  EXPECT_EQ(cache->OtherBytes(), index_bytes + internal_cache::kLedgerBytes +
                                     metrics::kMetricsFileSize +
                                     internal_cache::kMetricsTotalsBytes);
  IterateUnderLimit(*cache, index_, Cache(), 1, limit);
  EXPECT_LE(cache->DiskUsage() + index_bytes, limit);
}

TEST_F(ShardCacheTest, EvictDeletesAnUnpinnedShardAndRefusesAPinnedOne) {
  WriteRemote();
  auto cache = Open();
  auto pinned = cache->Acquire(0);
  ASSERT_TRUE(pinned.has_value());
  ASSERT_TRUE(cache->Acquire(1).has_value());  // unpinned again at once
  auto freed = cache->Evict(1);
  ASSERT_TRUE(freed.has_value()) << freed.status().ToString();
  EXPECT_EQ(*freed, ShardBytes(1));
  EXPECT_FALSE(cache->IsLocal(1));
  auto refused = cache->Evict(0);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr(index_.shards[0].raw_data.basename));
  EXPECT_TRUE(cache->IsLocal(0));
  EXPECT_EQ(cache->Evict(2).value(), 0u) << "not local: nothing to free";
  EXPECT_EQ(cache->Evict(index_.shards.size()).status().code(), StatusCode::kOutOfRange);
  // What is left is what an LRU eviction chooses from.
  const auto local = cache->LocalShards();
  ASSERT_EQ(local.size(), 1u);
  EXPECT_EQ(local[0].first, 0u);
}

TEST_F(ShardCacheTest, EvictNeverDeletesTheOnlyCopy) {
  WriteRemote();
  auto cache = ShardCache::Open(nullptr, "", index_, {.local = Remote()}).value();
  auto refused = cache->Evict(0);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("only copy"));
  EXPECT_TRUE(fs::exists(RawPath(0, Remote())));
}

TEST_F(ShardCacheTest, PrepareWithoutBlockingLeavesADownloadInProgressToItsOwner) {
  WriteRemote();
  auto cache = Open();
  const CacheLayout layout(Cache());
  {
    // Another process's download of shard 0 holds its download lock.
    auto downloading = FileLock::Lock(layout.DownloadLockPath(index_.shards[0].raw_data.basename),
                                      LockMode::kExclusive)
                           .value();
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(cache->Prepare(0, /*blocking=*/false).ok());
    EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(500));
    EXPECT_FALSE(cache->IsLocal(0));
  }
  ASSERT_TRUE(cache->Prepare(0, /*blocking=*/false).ok());
  EXPECT_TRUE(cache->IsLocal(0));
  ASSERT_TRUE(cache->Prepare(1, /*blocking=*/true).ok());
  EXPECT_TRUE(cache->IsLocal(1));
  // Prepared shards are not pinned: they can be evicted.
  EXPECT_EQ(cache->Evict(1).value(), ShardBytes(1));
}

TEST_F(ShardCacheTest, AFolderDeletedWhileOpenIsStartedAgain) {
  WriteRemote();
  auto cache = Open();
  ASSERT_TRUE(cache->Acquire(0).has_value());
  fs::remove_all(Cache());  // a user clearing the cache under a running job
  auto again = cache->Acquire(0);
  ASSERT_TRUE(again.has_value()) << again.status().ToString();
  EXPECT_TRUE(testing::RawShardIsIntact(again->path(), index_.shards[0]));
}

}  // namespace
}  // namespace ferry
