#include "cache/eviction.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "base/temp_dir_testutil.h"
#include "cache/file_lock.h"

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

// Ten cached files of 100 bytes named f0..f9, under an index of those names.
DatasetDescription TenFiles(const CacheLayout& layout) {
  DatasetDescription index;
  auto config = std::make_shared<const ShardConfig>();
  EXPECT_TRUE(layout.CreateLocksDir().ok());
  for (int i = 0; i < 10; ++i) {
    const std::string name = "f" + std::to_string(i);
    std::ofstream(layout.FilePath(name)) << std::string(100, 'x');
    index.shards.push_back({.config = config, .raw_data = {.basename = name, .bytes = 100}});
  }
  return index;
}

TEST(MakeRoom, TheLedgerAnswersWithoutAScanWhileFreshAndTheDownloadFits) {
  ferry::testing::TempDir tmp;
  const CacheLayout layout(tmp.path());
  const DatasetDescription index = TenFiles(layout);
  // The first call scans (no ledger yet): 1000 bytes there, 50 more fit under 2000.
  auto first = MakeRoom(layout, index, {}, {.limit = 2000, .needed = 50}).value();
  EXPECT_TRUE(first.scanned);
  EXPECT_EQ(first.used_before, 1000u);
  // A file added behind the ledger's back is not seen while the ledger is fresh...
  std::ofstream(layout.FilePath("f0"), std::ios::app) << std::string(500, 'y');
  auto second = MakeRoom(layout, index, {}, {.limit = 2000, .needed = 50}).value();
  EXPECT_FALSE(second.scanned);
  EXPECT_EQ(second.used_before, 1050u) << "the scan's bytes plus the reservation since";
  // ...but a download that does not fit by the ledger makes it scan, and evict for real.
  // (ledger 1100 + 950 > 2000; really 1500 + 950: five files of 100 must go.)
  auto third = MakeRoom(layout, index, {}, {.limit = 2000, .needed = 950}).value();
  EXPECT_TRUE(third.scanned);
  EXPECT_EQ(third.used_before, 1500u);
  EXPECT_EQ(third.evicted_shards, 5u);
  EXPECT_EQ(third.used_after, 1000u);
  EXPECT_TRUE(third.fits);
}

TEST(MakeRoom, HeadroomEvictsMoreOnceEvictionRuns) {
  ferry::testing::TempDir tmp;
  const CacheLayout layout(tmp.path());
  const DatasetDescription index = TenFiles(layout);
  // 1000 used, limit 1000, 100 needed: 1 file must go; a headroom of 300 takes 3 more.
  auto room = MakeRoom(layout, index, {}, {.limit = 1000, .needed = 100, .headroom = 300}).value();
  EXPECT_EQ(room.evicted_shards, 4u);
  EXPECT_EQ(room.used_after, 600u);
  // The ledger now says 700: three more downloads fit it without a scan, the fourth does not.
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(MakeRoom(layout, index, {}, {.limit = 1000, .needed = 100, .headroom = 300})
                     .value()
                     .scanned);
  }
  EXPECT_TRUE(
      MakeRoom(layout, index, {}, {.limit = 1000, .needed = 100, .headroom = 300}).value().scanned);
}

TEST(MakeRoom, NeverEvictsAShardNeededSoonerThanTheOneFetched) {
  ferry::testing::TempDir tmp;
  const CacheLayout layout(tmp.path());
  DatasetDescription index = TenFiles(layout);
  // f0..f9 are local and upcoming in that order; f10 (not local) is fetched, needed after f4.
  index.shards.push_back(
      {.config = index.shards[0].config, .raw_data = {.basename = "f10", .bytes = 100}});
  const auto positions =
      UpcomingPositions(std::vector<size_t>{0, 1, 2, 3, 4, 10, 5, 6, 7, 8, 9}, 11);
  // 300 bytes must go: f9, f8 and f7, needed after f10 (furthest first).
  auto room =
      MakeRoom(layout, index, positions, {.limit = 1000, .needed = 300, .for_shard = 10}).value();
  EXPECT_EQ(room.evicted_shards, 3u);
  EXPECT_TRUE(room.fits);
  EXPECT_FALSE(std::filesystem::exists(layout.FilePath("f7")));
  EXPECT_TRUE(std::filesystem::exists(layout.FilePath("f6")));
  // Then 300 more: f6 and f5 may go, f0..f4 are needed before f10 and stay - it does not fit.
  room = MakeRoom(layout, index, positions, {.limit = 700, .needed = 500, .for_shard = 10}).value();
  EXPECT_EQ(room.evicted_shards, 2u);
  EXPECT_FALSE(room.fits);
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(std::filesystem::exists(layout.FilePath("f" + std::to_string(i)))) << i;
  }
  // A shard fetched for a reader waiting on it (not in the list) may evict any of them.
  room = MakeRoom(layout, index, UpcomingPositions(std::vector<size_t>{0, 1, 2, 3, 4}, 11),
                  {.limit = 500, .needed = 100, .for_shard = 10})
             .value();
  EXPECT_EQ(room.evicted_shards, 1u);
  EXPECT_FALSE(std::filesystem::exists(layout.FilePath("f4"))) << "the one needed last";
}

TEST(MakeRoom, CountsDownloadsBeingWrittenAndSweepsWhatKilledOnesLeft) {
  ferry::testing::TempDir tmp;
  const CacheLayout layout(tmp.path());
  DatasetDescription index = TenFiles(layout);
  // f8 and f9 are being fetched again: f8 by a live download (its lock held), 30 of its 100
  // bytes landed; f9's download died.
  for (const char* name : {"f8", "f9"}) {
    std::filesystem::remove(layout.FilePath(name));
    std::ofstream(layout.TemporaryPath(name)) << std::string(30, 't');
  }
  auto live = FileLock::Lock(layout.DownloadLockPath("f8"), LockMode::kExclusive).value();
  // 800 bytes of shards, and f8 counted whole: 50 more fit a limit of 1000 without evicting.
  auto room = MakeRoom(layout, index, {}, {.limit = 1000, .needed = 50, .for_shard = 9}).value();
  EXPECT_EQ(room.used_before, 900u);
  EXPECT_EQ(room.evicted_shards, 0u);
  EXPECT_TRUE(std::filesystem::exists(layout.TemporaryPath("f8")));
  // The fetch's own temporary is its business; another shard's dead one is swept.
  EXPECT_TRUE(std::filesystem::exists(layout.TemporaryPath("f9")));
  EXPECT_EQ(SweepTemporaries(layout, index), 100u);
  EXPECT_FALSE(std::filesystem::exists(layout.TemporaryPath("f9")));
  // 900 in use and 100 more do not fit 900: one shard goes.
  room = MakeRoom(layout, index, {}, {.limit = 900, .needed = 100, .for_shard = 9}).value();
  EXPECT_TRUE(room.scanned);
  EXPECT_EQ(room.used_before, 900u);
  EXPECT_EQ(room.evicted_shards, 1u);
  EXPECT_TRUE(room.fits);
}

TEST(MeasureOtherBytes, CountsTheIndexTheRecordsAndTheLedger) {
  ferry::testing::TempDir tmp;
  const CacheLayout layout(tmp.path());
  ASSERT_TRUE(layout.CreateLocksDir().ok());
  // The ledger's bytes count before it is written: the first download writes it.
  EXPECT_EQ(MeasureOtherBytes(layout), kLedgerBytes);
  std::ofstream(layout.IndexPath()) << std::string(1000, 'i');
  std::ofstream(layout.OriginPath()) << std::string(30, 'o');
  EXPECT_EQ(MeasureOtherBytes(layout), 1000 + 30 + kLedgerBytes);
  std::ofstream(layout.MirrorsPath()) << std::string(70, 'm');
  EXPECT_EQ(MeasureOtherBytes(layout), 1000 + 30 + 70 + kLedgerBytes);
}

TEST(MeasureOtherBytes, CountsTheMetricsFilesAndRoomForTheirTotals) {
  ferry::testing::TempDir tmp;
  const CacheLayout layout(tmp.path());
  ASSERT_TRUE(layout.CreateLocksDir().ok());
  ASSERT_TRUE(CreateCacheFolders(layout.MetricsDir()).ok());
  // The totals are counted before they are written: a process leaving writes them.
  EXPECT_EQ(MeasureOtherBytes(layout), kLedgerBytes + kMetricsTotalsBytes);
  std::ofstream(layout.MetricsDir() / "proc.1.2.3") << std::string(8192, 'p');
  std::ofstream(layout.MetricsDir() / "totals.json") << std::string(100, 't');
  EXPECT_EQ(MeasureOtherBytes(layout), kLedgerBytes + 8192 + kMetricsTotalsBytes);
  std::ofstream(layout.MetricsDir() / "totals.json") << std::string(5000, 't');
  EXPECT_EQ(MeasureOtherBytes(layout), kLedgerBytes + 8192 + 5000);
}

TEST(EvictShard, DeletesAnUnpinnedShardAndLowersTheLedger) {
  ferry::testing::TempDir tmp;
  const CacheLayout layout(tmp.path());
  const DatasetDescription index = TenFiles(layout);
  ASSERT_TRUE(MakeRoom(layout, index, {}, {.limit = 2000, .needed = 0}).value().scanned);
  auto evicted = EvictShard(layout, index, 3).value();
  EXPECT_FALSE(evicted.pinned);
  EXPECT_EQ(evicted.freed, 100u);
  EXPECT_FALSE(std::filesystem::exists(layout.FilePath("f3")));
  // The ledger answers the next download without a scan, 100 bytes lower.
  auto next = MakeRoom(layout, index, {}, {.limit = 2000, .needed = 0}).value();
  EXPECT_FALSE(next.scanned);
  EXPECT_EQ(next.used_before, 900u);
  // Gone already: nothing freed, no error.
  EXPECT_EQ(EvictShard(layout, index, 3).value().freed, 0u);
  EXPECT_EQ(EvictShard(layout, index, 10).status().code(), StatusCode::kOutOfRange);
}

TEST(EvictShard, LeavesAPinnedShard) {
  ferry::testing::TempDir tmp;
  const CacheLayout layout(tmp.path());
  const DatasetDescription index = TenFiles(layout);
  auto pin = FileLock::Lock(layout.UseLockPath("f5"), LockMode::kShared).value();
  auto evicted = EvictShard(layout, index, 5).value();
  EXPECT_TRUE(evicted.pinned);
  EXPECT_EQ(evicted.freed, 0u);
  EXPECT_TRUE(std::filesystem::exists(layout.FilePath("f5")));
}

TEST(LocalShards, ListsTheShardsWithAFileAndTheirLastUse) {
  ferry::testing::TempDir tmp;
  const CacheLayout layout(tmp.path());
  const DatasetDescription index = TenFiles(layout);
  std::filesystem::remove(layout.FilePath("f2"));
  auto stamp = [&](const std::string& name) {
    auto lock = FileLock::Lock(layout.UseLockPath(name), LockMode::kShared).value();
    ASSERT_TRUE(StampLastUse(lock.fd()).ok());
  };
  stamp("f7");
  stamp("f4");  // used after f7
  const std::vector<EvictionCandidate> local = LocalShards(layout, index);
  ASSERT_EQ(local.size(), 9u);
  std::map<size_t, int64_t> last_use;
  for (const EvictionCandidate& c : local) last_use[c.shard] = c.last_use_ns;
  EXPECT_EQ(last_use.count(2), 0u) << "its file is gone";
  EXPECT_LT(last_use[7], last_use[4]);
}

}  // namespace
}  // namespace ferry::internal_cache
