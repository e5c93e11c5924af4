#include "ferry/stream/shard_cache.h"

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
#include "cache/file_lock.h"
#include "ferry/format/merge_index.h"
#include "ferry/metrics/metrics.h"
#include "format/fixture_testutil.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;
using internal_cache::CacheLayout;
using internal_cache::FileLock;
using internal_cache::LockMode;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

uint64_t CounterValue(std::string_view name) { return metrics::GetCounter(name).value(); }

// Names of files in the cache folder that are temporaries.
std::vector<std::string> Temporaries(const fs::path& folder) {
  std::vector<std::string> out;
  for (const auto& [name, size] : testing::FilesIn(folder)) {
    if (name.ends_with(".ferry-tmp")) out.push_back(name);
  }
  return out;
}

void FlipByte(const fs::path& path, size_t offset) {
  std::string text = testing::FileText(path);
  ASSERT_LT(offset, text.size());
  text[offset] = static_cast<char>(text[offset] ^ 0x5a);
  ASSERT_TRUE(WriteFileAtomically(path, text).ok());
}

std::vector<size_t> Iota(size_t n) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  return order;
}

// A remote dataset (a FileStore folder seen through a recording TestStore) and a cache folder.
class ShardCacheTest : public ::testing::Test {
 protected:
  fs::path Remote() const { return tmp_ / "remote"; }
  fs::path Cache() const { return tmp_ / "cache"; }
  fs::path ReadLog() const { return tmp_ / "reads.log"; }

  const Index& WriteRemote(const testing::DatasetSpec& spec = {}) {
    index_ = testing::WriteDataset(Remote(), spec);
    EXPECT_GE(index_.shards.size(), 4u);
    return index_;
  }

  std::shared_ptr<ObjectStore> Store(testing::TestStoreOptions options = {}) {
    if (options.log.empty()) options.log = ReadLog();
    StoreAndKey remote = testing::LocalRemote(Remote());
    prefix_ = remote.key;
    return std::make_shared<testing::TestStore>(remote.store, std::move(options));
  }

  std::unique_ptr<ShardCache> Open(ShardCacheOptions options = {},
                                   std::shared_ptr<ObjectStore> store = nullptr) {
    if (options.local.empty()) options.local = Cache();
    if (store == nullptr) store = Store();
    auto cache = ShardCache::Open(std::move(store), prefix_, index_, std::move(options));
    EXPECT_TRUE(cache.has_value()) << cache.status().ToString();
    return cache.has_value() ? std::move(*cache) : nullptr;
  }

  // Reads of the remote file `basename` logged so far (every process appends to one log).
  int Reads(const std::string& basename) const {
    return testing::CountLogged(ReadLog())[prefix_ + "/" + basename];
  }
  // The file a shard's download fetches.
  const FileInfo& Fetched(size_t k) const {
    const ShardEntry& shard = index_.shards[k];
    return shard.zip_data ? *shard.zip_data : shard.raw_data;
  }
  uint64_t ShardBytes(size_t k) const { return index_.shards[k].raw_data.bytes; }
  // The most one download adds to the folder: both files while a compressed one is unpacked.
  uint64_t LargestPeak() const {
    uint64_t peak = 0;
    for (const ShardEntry& s : index_.shards) {
      peak = std::max(peak, s.raw_data.bytes + (s.zip_data ? s.zip_data->bytes : 0));
    }
    return peak;
  }
  fs::path RawPath(size_t k, const fs::path& folder) const {
    return folder / index_.shards[k].raw_data.basename;
  }

  testing::TempDir tmp_;
  Index index_;
  std::string prefix_;
};

TEST_F(ShardCacheTest, AcquireDownloadsOnceThenHits) {
  WriteRemote();
  auto cache = Open();
  const uint64_t hits = CounterValue("/ferry/cache/hits");
  const uint64_t misses = CounterValue("/ferry/cache/misses");
  const uint64_t bytes = CounterValue("/ferry/cache/downloaded_bytes");
  const uint64_t waited = CounterValue("/ferry/cache/wait_ns");

  EXPECT_FALSE(cache->IsLocal(0));
  auto first = cache->Acquire(0);
  ASSERT_TRUE(first.has_value()) << first.status().ToString();
  EXPECT_FALSE(first->was_cached());
  EXPECT_EQ(first->shard(), 0u);
  EXPECT_EQ(first->path(), RawPath(0, Cache()));
  EXPECT_TRUE(testing::RawShardIsIntact(first->path(), index_.shards[0]));
  EXPECT_TRUE(cache->IsLocal(0));
  EXPECT_FALSE(cache->IsLocal(1));
  EXPECT_FALSE(cache->IsLocal(index_.shards.size()));

  auto second = cache->Acquire(0);
  ASSERT_TRUE(second.has_value());
  EXPECT_TRUE(second->was_cached());
  EXPECT_EQ(Reads("shard.00000.mds"), 1);
  EXPECT_EQ(cache->DiskUsage(), ShardBytes(0));
  EXPECT_EQ(testing::FilesIn(Cache()).size(), 1u);  // the shard, no temporary

  EXPECT_EQ(CounterValue("/ferry/cache/hits") - hits, 1u);
  EXPECT_EQ(CounterValue("/ferry/cache/misses") - misses, 1u);
  EXPECT_EQ(CounterValue("/ferry/cache/downloaded_bytes") - bytes, ShardBytes(0));
  EXPECT_GT(CounterValue("/ferry/cache/wait_ns"), waited);
  const auto values = metrics::Values();
  for (const char* name :
       {"/ferry/cache/hits", "/ferry/cache/misses", "/ferry/cache/evictions",
        "/ferry/cache/evicted_bytes", "/ferry/cache/downloaded_bytes", "/ferry/cache/wait_ns",
        "/ferry/cache/hash_failures", "/ferry/cache/downloads"}) {
    EXPECT_TRUE(values.contains(name)) << name;
  }
}

// What a power cut can leave of an unflushed download: the file under its name, but short.
TEST_F(ShardCacheTest, AShortCachedShardIsFetchedAgain) {
  WriteRemote();
  auto cache = Open();
  { ASSERT_TRUE(cache->Acquire(0).has_value()); }
  std::filesystem::resize_file(RawPath(0, Cache()), ShardBytes(0) / 2);
  EXPECT_FALSE(cache->IsLocal(0));

  auto again = cache->Acquire(0);
  ASSERT_TRUE(again.has_value()) << again.status().ToString();
  EXPECT_FALSE(again->was_cached());
  EXPECT_EQ(Reads("shard.00000.mds"), 2);
  EXPECT_TRUE(testing::RawShardIsIntact(again->path(), index_.shards[0]));
  EXPECT_EQ(std::filesystem::file_size(again->path()), ShardBytes(0));
}

TEST_F(ShardCacheTest, ThreadsAskingForOneShardShareOneDownload) {
  WriteRemote();
  auto cache =
      Open({}, Store({.chunk_bytes = 1024, .chunk_delay = std::chrono::microseconds(1000)}));
  std::atomic<int> ok{0};
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back([&] {
        auto handle = cache->Acquire(1);
        if (handle && testing::RawShardIsIntact(handle->path(), index_.shards[1])) ++ok;
      });
    }
  }
  EXPECT_EQ(ok, 8);
  EXPECT_EQ(Reads("shard.00001.mds"), 1);
}

TEST_F(ShardCacheTest, ShardPastTheIndexIsOutOfRange) {
  WriteRemote();
  auto cache = Open();
  auto handle = cache->Acquire(index_.shards.size());
  ASSERT_FALSE(handle.has_value());
  EXPECT_EQ(handle.error().code(), StatusCode::kOutOfRange);
}

// 4 processes x 2 threads acquire every shard through one cache folder at the same time.
void ExpectOneDownloadPerShardAcrossProcesses(const Index& index,
                                              const std::shared_ptr<ObjectStore>& store,
                                              const std::string& prefix, const fs::path& cache) {
  testing::Children children;
  testing::Pipe start;
  std::vector<pid_t> pids;
  for (int c = 0; c < 4; ++c) {
    pids.push_back(children.Spawn([&, c]() -> int {
      if (!start.Receive()) return 2;
      auto opened = ShardCache::Open(store, prefix, index, {.local = cache});
      if (!opened) return 3;
      std::atomic<int> failures{0};
      auto acquire_all = [&](bool reverse) {
        std::vector<size_t> order = Iota(index.shards.size());
        if (reverse) std::reverse(order.begin(), order.end());
        std::vector<ShardHandle> held;  // pinned until the end
        for (const size_t k : order) {
          auto handle = (*opened)->Acquire(k);
          if (!handle || !testing::RawShardIsIntact(handle->path(), index.shards[k])) {
            ++failures;
          } else {
            held.push_back(std::move(*handle));
          }
        }
      };
      {
        std::jthread other(acquire_all, c % 2 == 1);
        acquire_all(c >= 2);
      }
      return failures == 0 ? 0 : 4;
    }));
  }
  for (size_t i = 0; i < pids.size(); ++i) start.Send();
  for (const pid_t pid : pids) EXPECT_EQ(children.Wait(pid), 0);
}

TEST_F(ShardCacheTest, ProcessesDownloadEachShardExactlyOnce) {
  WriteRemote();
  auto store = Store({.chunk_bytes = 2048, .chunk_delay = std::chrono::microseconds(1000)});
  ExpectOneDownloadPerShardAcrossProcesses(index_, store, prefix_, Cache());
  for (size_t k = 0; k < index_.shards.size(); ++k) {
    EXPECT_EQ(Reads(Fetched(k).basename), 1) << Fetched(k).basename;
    EXPECT_TRUE(testing::RawShardIsIntact(RawPath(k, Cache()), index_.shards[k]));
  }
  EXPECT_THAT(Temporaries(Cache()), ::testing::IsEmpty());
}

TEST_F(ShardCacheTest, ProcessesDownloadEachCompressedShardExactlyOnce) {
  WriteRemote({.compression = "zstd"});
  auto store = Store({.chunk_bytes = 2048, .chunk_delay = std::chrono::microseconds(1000)});
  ExpectOneDownloadPerShardAcrossProcesses(index_, store, prefix_, Cache());
  for (size_t k = 0; k < index_.shards.size(); ++k) {
    EXPECT_EQ(Reads(Fetched(k).basename), 1) << Fetched(k).basename;
    EXPECT_TRUE(testing::RawShardIsIntact(RawPath(k, Cache()), index_.shards[k]));
    EXPECT_FALSE(fs::exists(Cache() / index_.shards[k].zip_data->basename));  // no keep_zip
  }
  EXPECT_THAT(Temporaries(Cache()), ::testing::IsEmpty());
}

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
void IterateUnderLimit(ShardCache& cache, const Index& index, const fs::path& folder, int threads,
                       uint64_t bound) {
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

// A child downloading shard 0 from a slow remote is SIGKILLed once its temporary has bytes.
void KillMidDownload(const std::shared_ptr<ObjectStore>& slow, const Index& index,
                     const std::string& prefix, const fs::path& cache, const fs::path& temporary) {
  testing::Children children;
  const pid_t child = children.Spawn([&]() -> int {
    auto opened = ShardCache::Open(slow, prefix, index, {.local = cache});
    if (!opened) return 3;
    return (*opened)->Acquire(0).has_value() ? 0 : 4;
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::error_code ec;
  while (!(fs::exists(temporary, ec) && fs::file_size(temporary, ec) > 0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  children.Kill(child);
  EXPECT_TRUE(fs::exists(temporary)) << "the download was not caught in the middle";
}

void ExpectRecoveryAfterKill(const Index& index, const std::shared_ptr<ObjectStore>& store,
                             const std::string& prefix, const fs::path& cache) {
  const CacheLayout layout(cache);
  const std::string& raw = index.shards[0].raw_data.basename;
  EXPECT_FALSE(fs::exists(layout.FilePath(raw)));
  // The locks died with the process.
  for (const fs::path& lock : {layout.DownloadLockPath(raw), layout.UseLockPath(raw)}) {
    auto tried = FileLock::TryLock(lock, LockMode::kExclusive);
    ASSERT_TRUE(tried.has_value());
    EXPECT_TRUE(tried->has_value()) << lock;
  }
  // A new process gets the shard, whole.
  testing::Children children;
  const pid_t child = children.Spawn([&]() -> int {
    auto opened = ShardCache::Open(store, prefix, index, {.local = cache});
    if (!opened) return 3;
    auto handle = (*opened)->Acquire(0);
    if (!handle) return 4;
    return testing::RawShardIsIntact(handle->path(), index.shards[0]) ? 0 : 5;
  });
  EXPECT_EQ(children.Wait(child, std::chrono::seconds(10)), 0);
  EXPECT_TRUE(testing::RawShardIsIntact(layout.FilePath(raw), index.shards[0]));
  EXPECT_THAT(Temporaries(cache), ::testing::IsEmpty());
}

TEST_F(ShardCacheTest, AKilledDownloadLeavesNoShardAndNoLock) {
  WriteRemote();
  const auto slow = Store({.chunk_bytes = 512, .chunk_delay = milliseconds(20)});
  const fs::path temporary = Cache() / (index_.shards[0].raw_data.basename + ".ferry-tmp");
  KillMidDownload(slow, index_, prefix_, Cache(), temporary);
  ExpectRecoveryAfterKill(index_, Store(), prefix_, Cache());
}

TEST_F(ShardCacheTest, AKilledCompressedDownloadLeavesNoShardAndNoLock) {
  WriteRemote({.compression = "zstd"});
  const auto slow = Store({.chunk_bytes = 512, .chunk_delay = milliseconds(20)});
  const fs::path temporary = Cache() / (index_.shards[0].zip_data->basename + ".ferry-tmp");
  KillMidDownload(slow, index_, prefix_, Cache(), temporary);
  EXPECT_FALSE(fs::exists(Cache() / index_.shards[0].zip_data->basename));
  ExpectRecoveryAfterKill(index_, Store(), prefix_, Cache());
}

void ExpectCorruptShardFails(ShardCache& cache, const Index& index, const fs::path& folder) {
  const ShardEntry& shard = index.shards[1];
  const FileInfo& fetched = shard.zip_data ? *shard.zip_data : shard.raw_data;
  const uint64_t failures = CounterValue("/ferry/cache/hash_failures");
  auto handle = cache.Acquire(1);
  ASSERT_FALSE(handle.has_value());
  EXPECT_EQ(handle.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(handle.error().message(), HasSubstr(fetched.basename));
  EXPECT_THAT(handle.error().message(), HasSubstr("xxh64"));
  EXPECT_EQ(CounterValue("/ferry/cache/hash_failures") - failures, 2u);
  EXPECT_FALSE(fs::exists(folder / shard.raw_data.basename));
  EXPECT_FALSE(fs::exists(folder / fetched.basename));
  EXPECT_THAT(Temporaries(folder), ::testing::IsEmpty());
  // The other shards are fine.
  auto other = cache.Acquire(0);
  ASSERT_TRUE(other.has_value()) << other.status().ToString();
  EXPECT_TRUE(testing::RawShardIsIntact(other->path(), index.shards[0]));
}

TEST_F(ShardCacheTest, ACorruptRemoteShardIsFetchedTwiceThenDataLoss) {
  WriteRemote();
  FlipByte(Remote() / Fetched(1).basename, Fetched(1).bytes / 2);
  auto cache = Open({.validate_hash = "xxh64"});
  ExpectCorruptShardFails(*cache, index_, Cache());
  EXPECT_EQ(Reads(Fetched(1).basename), 2);
}

TEST_F(ShardCacheTest, ACorruptRemoteCompressedShardIsFetchedTwiceThenDataLoss) {
  WriteRemote({.compression = "zstd"});
  FlipByte(Remote() / Fetched(1).basename, Fetched(1).bytes / 2);
  auto cache = Open({.keep_zip = true, .validate_hash = "xxh64"});
  ExpectCorruptShardFails(*cache, index_, Cache());
  EXPECT_EQ(Reads(Fetched(1).basename), 2);
}

TEST_F(ShardCacheTest, ValidateHashMustBeOneTheIndexHas) {
  WriteRemote({.hashes = {"sha1"}});
  auto missing =
      ShardCache::Open(Store(), prefix_, index_, {.local = Cache(), .validate_hash = "xxh64"});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.error().message(), HasSubstr("xxh64"));
  EXPECT_THAT(missing.error().message(), HasSubstr("shard.00000.mds"));
  auto unknown =
      ShardCache::Open(Store(), prefix_, index_, {.local = Cache(), .validate_hash = "crc99"});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.error().message(), HasSubstr("crc99"));
}

TEST_F(ShardCacheTest, GoodDigestsPass) {
  WriteRemote({.compression = "zstd"});
  const uint64_t failures = CounterValue("/ferry/cache/hash_failures");
  auto cache = Open({.validate_hash = "sha1"});
  for (size_t k = 0; k < index_.shards.size(); ++k) {
    auto handle = cache->Acquire(k);
    ASSERT_TRUE(handle.has_value()) << handle.status().ToString();
    EXPECT_TRUE(testing::RawShardIsIntact(handle->path(), index_.shards[k]));
  }
  EXPECT_EQ(CounterValue("/ferry/cache/hash_failures"), failures);
}

TEST_F(ShardCacheTest, KeepZipKeepsTheCompressedFileAndReusesIt) {
  WriteRemote({.compression = "zstd"});
  const ShardEntry& shard = index_.shards[0];
  auto store = Store();
  {
    auto plain = Open({.local = Cache() / "plain"}, store);
    ASSERT_TRUE(plain->Acquire(0).has_value());
    EXPECT_TRUE(fs::exists(Cache() / "plain" / shard.raw_data.basename));
    EXPECT_FALSE(fs::exists(Cache() / "plain" / shard.zip_data->basename));
  }
  const fs::path kept = Cache() / "kept";
  {
    auto cache = Open({.local = kept, .keep_zip = true}, store);
    ASSERT_TRUE(cache->Acquire(0).has_value());
    EXPECT_EQ(cache->DiskUsage(), shard.raw_data.bytes + shard.zip_data->bytes);
  }
  const int downloads = Reads(shard.zip_data->basename);
  EXPECT_EQ(downloads, 2);
  // The raw file goes (an eviction elsewhere, a user): the zip is decompressed, not fetched.
  fs::remove(kept / shard.raw_data.basename);
  {
    auto cache = Open({.local = kept, .keep_zip = true}, store);
    auto handle = cache->Acquire(0);
    ASSERT_TRUE(handle.has_value()) << handle.status().ToString();
    EXPECT_FALSE(handle->was_cached());
    EXPECT_TRUE(testing::RawShardIsIntact(handle->path(), shard));
    EXPECT_TRUE(fs::exists(kept / shard.zip_data->basename));
  }
  fs::remove(kept / shard.raw_data.basename);
  {
    auto cache = Open({.local = kept, .validate_hash = "xxh64"}, store);  // no keep_zip now
    auto handle = cache->Acquire(0);
    ASSERT_TRUE(handle.has_value()) << handle.status().ToString();
    EXPECT_TRUE(testing::RawShardIsIntact(handle->path(), shard));
    EXPECT_FALSE(fs::exists(kept / shard.zip_data->basename));
  }
  EXPECT_EQ(Reads(shard.zip_data->basename), downloads);
}

TEST_F(ShardCacheTest, ACorruptKeptZipIsReplacedByADownload) {
  WriteRemote({.compression = "zstd"});
  const ShardEntry& shard = index_.shards[0];
  auto store = Store();
  {
    auto cache = Open({.keep_zip = true}, store);
    ASSERT_TRUE(cache->Acquire(0).has_value());
  }
  fs::remove(Cache() / shard.raw_data.basename);
  FlipByte(Cache() / shard.zip_data->basename, 10);
  auto cache = Open({.keep_zip = true, .validate_hash = "xxh64"}, store);
  auto handle = cache->Acquire(0);
  ASSERT_TRUE(handle.has_value()) << handle.status().ToString();
  EXPECT_TRUE(testing::RawShardIsIntact(handle->path(), shard));
  EXPECT_EQ(Reads(shard.zip_data->basename), 2);
}

TEST_F(ShardCacheTest, ALocalDatasetIsReadInPlaceAndNeverTouched) {
  const fs::path folder = tmp_ / "local";
  index_ = testing::WriteDataset(folder, {});
  const auto before = testing::FilesIn(folder);
  auto cache = ShardCache::Open(nullptr, "", index_, {.local = folder, .cache_limit = 1});
  ASSERT_TRUE(cache.has_value()) << cache.status().ToString();
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t k = 0; k < index_.shards.size(); ++k) {
      auto handle = (*cache)->Acquire(k);
      ASSERT_TRUE(handle.has_value()) << handle.status().ToString();
      EXPECT_TRUE(handle->was_cached());
      EXPECT_EQ(handle->path(), RawPath(k, folder));
    }
  }
  EXPECT_EQ(testing::FilesIn(folder), before);
  EXPECT_FALSE(fs::exists(folder / ".ferry"));  // a plain read leaves no trace
}

TEST_F(ShardCacheTest, ALocalCompressedDatasetIsDecompressedBesideItsZips) {
  const fs::path folder = tmp_ / "local";
  index_ = testing::WriteDataset(folder, {.compression = "zstd"});
  const auto before = testing::FilesIn(folder);
  auto cache = ShardCache::Open(nullptr, "", index_,
                                {.local = folder, .cache_limit = 1, .validate_hash = "xxh64"});
  ASSERT_TRUE(cache.has_value()) << cache.status().ToString();
  uint64_t total = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t k = 0; k < index_.shards.size(); ++k) {
      auto handle = (*cache)->Acquire(k);
      ASSERT_TRUE(handle.has_value()) << handle.status().ToString();
      EXPECT_EQ(handle->was_cached(), pass == 1);
      EXPECT_TRUE(testing::RawShardIsIntact(handle->path(), index_.shards[k]));
      if (pass == 0) total += index_.shards[k].raw_data.bytes + index_.shards[k].zip_data->bytes;
    }
  }
  // Every original file is still there, unchanged, beside the new raw files.
  const auto after = testing::FilesIn(folder);
  for (const auto& [name, size] : before) {
    ASSERT_TRUE(after.contains(name)) << name;
    EXPECT_EQ(after.at(name), size) << name;
  }
  EXPECT_EQ(after.size(), before.size() + index_.shards.size());
  EXPECT_EQ((*cache)->DiskUsage(), total);
  EXPECT_THAT(Temporaries(folder), ::testing::IsEmpty());
}

TEST_F(ShardCacheTest, ALocalDatasetWithAMissingShardIsNotFound) {
  const fs::path folder = tmp_ / "local";
  index_ = testing::WriteDataset(folder, {});
  fs::remove(RawPath(2, folder));
  auto cache = ShardCache::Open(nullptr, "", index_, {.local = folder});
  ASSERT_TRUE(cache.has_value());
  auto handle = (*cache)->Acquire(2);
  ASSERT_FALSE(handle.has_value());
  EXPECT_EQ(handle.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(handle.error().message(), HasSubstr(RawPath(2, folder).string()));
}

TEST_F(ShardCacheTest, LoadIndexFetchesOnceAndRefreshesOnRequest) {
  WriteRemote();
  auto store = Store();
  auto loaded = LoadIndex(store.get(), prefix_, Cache());
  ASSERT_TRUE(loaded.has_value()) << loaded.status().ToString();
  EXPECT_EQ(loaded->shards.size(), index_.shards.size());
  EXPECT_EQ(testing::FileText(Cache() / "index.json"), testing::FileText(Remote() / "index.json"));
  EXPECT_EQ(Reads("index.json"), 1);
  ASSERT_TRUE(LoadIndex(store.get(), prefix_, Cache()).has_value());
  EXPECT_EQ(Reads("index.json"), 1);  // the local copy
  ASSERT_TRUE(LoadIndex(store.get(), prefix_, Cache(), /*refresh=*/true).has_value());
  EXPECT_EQ(Reads("index.json"), 2);
  EXPECT_THAT(Temporaries(Cache()), ::testing::IsEmpty());
  // Without a remote the folder's own index.json is read.
  auto local = LoadIndex(nullptr, "", Remote());
  ASSERT_TRUE(local.has_value()) << local.status().ToString();
  EXPECT_EQ(local->shards.size(), index_.shards.size());
}

TEST_F(ShardCacheTest, LoadIndexErrorsNameTheUrl) {
  WriteRemote();
  auto store = Store();
  auto missing = LoadIndex(store.get(), prefix_ + "/nope", Cache() / "a");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.error().message(), HasSubstr("remote/nope/index.json"));

  fs::create_directories(Remote() / "broken");
  ASSERT_TRUE(WriteFileAtomically(Remote() / "broken" / "index.json", "{").ok());
  auto broken = LoadIndex(store.get(), prefix_ + "/broken", Cache() / "b");
  ASSERT_FALSE(broken.has_value());
  EXPECT_EQ(broken.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(broken.error().message(), HasSubstr("file:///"));
  EXPECT_THAT(broken.error().message(), HasSubstr("broken/index.json"));
  EXPECT_FALSE(fs::exists(Cache() / "b" / "index.json"));  // a broken index never lands
}

TEST_F(ShardCacheTest, LargeShardsComeInParallelParts) {
  WriteRemote({.samples = 40, .sample_bytes = 20'000, .size_limit = 200'000});
  const uint64_t size = ShardBytes(0);
  ASSERT_GT(size, 100'000u);
  auto cache = Open({.parallel_part_threshold = 64 << 10, .download_parts = 4});
  auto handle = cache->Acquire(0);
  ASSERT_TRUE(handle.has_value()) << handle.status().ToString();
  EXPECT_TRUE(testing::RawShardIsIntact(handle->path(), index_.shards[0]));
  EXPECT_EQ(Reads(index_.shards[0].raw_data.basename), 4);
  EXPECT_EQ(
      testing::CountLogged(ReadLog(), "head")[prefix_ + "/" + index_.shards[0].raw_data.basename],
      0);
}

TEST_F(ShardCacheTest, AFailingPartFailsTheWholeDownloadCleanly) {
  WriteRemote({.samples = 40, .sample_bytes = 20'000, .size_limit = 200'000});
  const ShardCacheOptions parts = {.parallel_part_threshold = 64 << 10, .download_parts = 4};
  auto failing = Open(parts, Store({.chunk_bytes = 4096,
                                    .chunk_delay = milliseconds(1),
                                    .fail_read = [](std::string_view, const ByteRange& range) {
                                      return range.offset > 0
                                                 ? PermissionDeniedError("injected failure")
                                                 : Status::Ok();
                                    }}));
  auto handle = failing->Acquire(0);
  ASSERT_FALSE(handle.has_value());
  EXPECT_EQ(handle.error().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(handle.error().message(), HasSubstr("injected failure"));
  EXPECT_FALSE(fs::exists(RawPath(0, Cache())));
  EXPECT_THAT(Temporaries(Cache()), ::testing::IsEmpty());
  // Nothing stays locked or half-written: a working remote gets the shard.
  auto working = Open(parts);
  auto retried = working->Acquire(0);
  ASSERT_TRUE(retried.has_value()) << retried.status().ToString();
  EXPECT_TRUE(testing::RawShardIsIntact(retried->path(), index_.shards[0]));
}

TEST_F(ShardCacheTest, MergedDatasetsKeepTheirSubfolders) {
  testing::WriteDataset(Remote() / "part_a", {});
  testing::WriteDataset(Remote() / "part_b", {.compression = "zstd"});
  ASSERT_TRUE(
      MergeIndexFiles({Remote() / "part_a" / "index.json", Remote() / "part_b" / "index.json"},
                      Remote())
          .has_value());
  auto store = Store();
  auto loaded = LoadIndex(store.get(), prefix_, Cache());
  ASSERT_TRUE(loaded.has_value()) << loaded.status().ToString();
  index_ = *loaded;
  auto cache = Open({.cache_limit = 3 * LargestPeak(), .validate_hash = "xxh64"}, store);
  for (size_t k = 0; k < index_.shards.size(); ++k) {
    auto handle = cache->Acquire(k);
    ASSERT_TRUE(handle.has_value()) << handle.status().ToString();
    EXPECT_TRUE(testing::RawShardIsIntact(handle->path(), index_.shards[k]));
    EXPECT_EQ(handle->path(), RawPath(k, Cache()));
  }
  EXPECT_TRUE(fs::exists(Cache() / ".ferry" / "locks" / "part_a%2Fshard.00000.mds.use"));
  EXPECT_TRUE(fs::is_directory(Cache() / "part_b"));
}

TEST_F(ShardCacheTest, OpenRefusesWhatCouldHarmTheDataset) {
  WriteRemote();
  auto store = Store();
  auto same = ShardCache::Open(store, prefix_, index_, {.local = Remote()});
  ASSERT_FALSE(same.has_value());
  EXPECT_EQ(same.error().code(), StatusCode::kInvalidArgument);

  Index escaping = index_;
  escaping.shards[0].raw_data.basename = "../outside.mds";
  auto outside = ShardCache::Open(store, prefix_, escaping, {.local = Cache()});
  ASSERT_FALSE(outside.has_value());
  EXPECT_EQ(outside.error().code(), StatusCode::kInvalidArgument);

  Index reserved = index_;
  reserved.shards[0].raw_data.basename = ".ferry/locks/cache.lock";
  EXPECT_FALSE(ShardCache::Open(store, prefix_, reserved, {.local = Cache()}).has_value());

  EXPECT_FALSE(ShardCache::Open(store, prefix_, index_, {}).has_value());
  EXPECT_FALSE(ShardCache::Open(store, prefix_, index_, {.local = Cache(), .download_parts = 0})
                   .has_value());
  auto no_folder = ShardCache::Open(nullptr, "", index_, {.local = tmp_ / "absent"});
  ASSERT_FALSE(no_folder.has_value());
  EXPECT_EQ(no_folder.error().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ferry
