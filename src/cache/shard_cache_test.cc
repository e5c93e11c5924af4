// ShardCache: acquiring shards, one download across threads and processes, local datasets,
// the index, parallel parts, merged datasets and what Open refuses.
#include "ferry/cache/shard_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <thread>

#include "base/boot_time.h"
#include "base/file_util.h"
#include "base/holed_file_testutil.h"
#include "base/in_flight_counter_testutil.h"
#include "base/temp_dir_testutil.h"
#include "cache/cache_layout.h"
#include "cache/cache_testutil.h"
#include "cache/file_lock.h"
#include "cache/shard_cache_fixture_testutil.h"
#include "ferry/format/merge_index.h"
#include "ferry/metrics/metrics.h"
#include "ferry/storage/registry.h"
#include "format/fixture_testutil.h"
#include "storage/testing/stalling_server_testutil.h"

namespace ferry {
namespace {

using namespace shard_cache_test;  // NOLINT: the fixture and its helpers

namespace fs = std::filesystem;
using internal_cache::CacheLayout;
using internal_cache::FileLock;
using internal_cache::LockMode;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

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
        "/ferry/cache/hash_failures", "/ferry/cache/downloads", "/ferry/cache/damaged_copies"}) {
    EXPECT_TRUE(values.contains(name)) << name;
  }
}

// What a power cut can leave of an unflushed download that has no digest record (one written by
// a ferry that kept none, or with digest_records off): a file downloaded whole comes back short;
// one downloaded in ranged parts, given its full size first, comes back at the right size with a
// hole where data was lost (served, it would hand out zeros). Both are fetched again.
TEST_F(ShardCacheTest, WhatAPowerCutLeavesOfADownloadWithoutARecordIsFetchedAgain) {
  WriteRemote({.samples = 40, .sample_bytes = 20'000, .size_limit = 200'000});
  ASSERT_GT(ShardBytes(0), uint64_t{16 << 10});
  if (!testing::HoleShows(Remote(), ShardBytes(0), 4096, 12288)) {
    GTEST_SKIP() << "the test folder's filesystem shows no 4 KiB holes";
  }
  auto cache = Open({.digest_records = false});
  { ASSERT_TRUE(cache->Acquire(0).has_value()); }
  const fs::path raw = RawPath(0, Cache());
  const auto contents = ReadFileToString(raw);
  ASSERT_TRUE(contents.has_value());
  const std::vector<std::pair<std::string, std::function<bool()>>> damages = {
      {"short",
       [&] {
         fs::resize_file(raw, ShardBytes(0) / 2);
         return true;
       }},
      {"hole", [&] { return testing::WriteWithHole(raw, *contents, 4096, 12288); }}};
  int reads = 1;
  const uint64_t damaged_before = CounterValue("/ferry/cache/damaged_copies");
  {
    // A power cut means a reboot: the damage was done before it.
    const RebootedAfterThisTest rebooted;
    for (const auto& [name, damage] : damages) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(damage());
      EXPECT_FALSE(cache->IsLocal(0));
      auto again = cache->Acquire(0);
      ASSERT_TRUE(again.has_value()) << again.status().ToString();
      EXPECT_FALSE(again->was_cached());
      EXPECT_EQ(Reads("shard.00000.mds"), ++reads);
      EXPECT_TRUE(testing::RawShardIsIntact(again->path(), index_.shards[0]));
      EXPECT_EQ(ReadFileToString(raw).value_or(""), *contents);
    }
  }
  EXPECT_EQ(CounterValue("/ferry/cache/damaged_copies") - damaged_before, 2u);
  // A file changed since boot is in the page cache, whatever the disk holds: its holes are not
  // looked for (so a filesystem that stores zeros as holes costs no download on every hit).
  ASSERT_TRUE(testing::WriteWithHole(raw, *contents, 4096, 12288));
  EXPECT_TRUE(cache->IsLocal(0));
  auto trusted = cache->Acquire(0);
  ASSERT_TRUE(trusted.has_value()) << trusted.status().ToString();
  EXPECT_TRUE(trusted->was_cached());
  EXPECT_EQ(Reads("shard.00000.mds"), reads);
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

// 4 processes x 2 threads acquire every shard through one cache folder (options.local) at the
// same time; each gets every shard intact. With `spread`, each process starts a quarter of the
// shards further on, so that more downloads run at once.
void AcquireEveryShardInFourProcesses(const DatasetDescription& index,
                                      const std::shared_ptr<ObjectStore>& store,
                                      const std::string& prefix, const ShardCacheOptions& options,
                                      bool spread = false) {
  testing::Children children;
  testing::Pipe start;
  std::vector<pid_t> pids;
  for (int c = 0; c < 4; ++c) {
    pids.push_back(children.Spawn([&, c]() -> int {
      if (!start.Receive()) return 2;
      auto opened = ShardCache::Open(store, prefix, index, options);
      if (!opened) return 3;
      std::atomic<int> failures{0};
      auto acquire_all = [&](bool reverse) {
        std::vector<size_t> order = Iota(index.shards.size());
        if (reverse) std::reverse(order.begin(), order.end());
        if (spread) {
          std::rotate(order.begin(), order.begin() + static_cast<ptrdiff_t>(c * order.size() / 4),
                      order.end());
        }
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

// A TestStore that counts its reads in progress into `reads` (in memory that forked children
// share).
class ConcurrencyCountingStore : public testing::TestStore {
 public:
  ConcurrencyCountingStore(std::shared_ptr<ObjectStore> inner, testing::TestStoreOptions options,
                           testing::InFlightCounter* reads)
      : TestStore(std::move(inner), std::move(options)), reads_(reads) {}
  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    reads_->Enter();
    auto result = TestStore::Read(key, range, sink);
    reads_->Leave();
    return result;
  }

 private:
  testing::InFlightCounter* reads_;
};

TEST_F(ShardCacheTest, NodeDownloadConcurrencyBoundsTheDownloadsOfEveryProcess) {
  // Four processes, two threads each, acquire every shard of one cache folder at once, their
  // reads counted in shared memory. Without the limit the same run downloads more than two at
  // once: the bound below could fail.
  WriteRemote();
  ASSERT_GE(index_.shards.size(), 6u);
  void* shared = ::mmap(nullptr, sizeof(testing::InFlightCounter), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  for (const std::optional<uint32_t> limit :
       {std::optional<uint32_t>(2), std::optional<uint32_t>()}) {
    SCOPED_TRACE(limit ? "limit 2" : "no limit");
    fs::remove_all(Cache());
    auto* counts = new (shared) testing::InFlightCounter;
    StoreAndKey remote = testing::LocalRemote(Remote());
    prefix_ = remote.key;
    auto store = std::make_shared<ConcurrencyCountingStore>(
        remote.store,
        testing::TestStoreOptions{.chunk_bytes = 1024, .chunk_delay = milliseconds(2)}, counts);
    AcquireEveryShardInFourProcesses(index_, store, prefix_,
                                     {.local = Cache(), .node_download_concurrency = limit},
                                     /*spread=*/true);
    if (limit) {
      EXPECT_LE(counts->most.load(), 2);
      EXPECT_TRUE(fs::exists(CacheLayout(Cache()).SlotsDir() / "1"));
    } else {
      EXPECT_GT(counts->most.load(), 2);
      EXPECT_FALSE(fs::exists(CacheLayout(Cache()).SlotsDir()));
    }
    counts->~InFlightCounter();
  }
  ::munmap(shared, sizeof(testing::InFlightCounter));
}

TEST_F(ShardCacheTest, OpeningRemovesTheTemporariesOfKilledDownloadsOnly) {
  // A killed download leaves its preallocated temporary behind, which nothing counts against
  // cache_limit; one whose download lock is held is being written by a live download.
  WriteRemote();
  fs::create_directories(Cache());
  const fs::path killed = RawPath(0, Cache()).string() + ".ferry-tmp";
  const fs::path live = RawPath(1, Cache()).string() + ".ferry-tmp";
  std::ofstream(killed) << std::string(1000, 'x');
  std::ofstream(live) << std::string(1000, 'y');
  ASSERT_TRUE(fs::exists(killed));
  const internal_cache::CacheLayout layout(Cache());
  ASSERT_TRUE(layout.CreateLocksDir().ok());
  auto writing =
      internal_cache::FileLock::Lock(layout.DownloadLockPath(index_.shards[1].raw_data.basename),
                                     internal_cache::LockMode::kExclusive);
  ASSERT_TRUE(writing.has_value()) << writing.status().ToString();
  auto cache = Open();
  EXPECT_FALSE(fs::exists(killed));
  EXPECT_TRUE(fs::exists(live));
  writing = internal_cache::FileLock();  // that download ends
  auto shard = cache->Acquire(1);        // and the next fetch replaces what it left
  ASSERT_TRUE(shard.has_value()) << shard.status().ToString();
  EXPECT_TRUE(testing::RawShardIsIntact(shard->path(), index_.shards[1]));
  EXPECT_FALSE(fs::exists(live));
}

TEST_F(ShardCacheTest, OpeningFindsTheTemporariesInEachFolderOfAMergedDataset) {
  WriteRemote();
  // The shards of a merged dataset live in the folders of its parts.
  for (size_t k = 0; k < index_.shards.size(); ++k) {
    index_.shards[k].raw_data.basename = fmt::format("part_{}/{}", k % 2, RawShardBasename(k));
  }
  fs::create_directories(Cache() / "part_0");
  fs::create_directories(Cache() / "part_1");
  const fs::path in_part_0 = Cache() / "part_0" / (RawShardBasename(0) + ".ferry-tmp");
  const fs::path in_part_1 = Cache() / "part_1" / (RawShardBasename(1) + ".ferry-tmp");
  // Not of a shard the index describes: another dataset's, or the user's; left alone.
  const fs::path stranger = Cache() / "part_1" / "notes.txt.ferry-tmp";
  for (const fs::path& path : {in_part_0, in_part_1, stranger}) std::ofstream(path) << "x";
  auto cache = Open();
  EXPECT_FALSE(fs::exists(in_part_0));
  EXPECT_FALSE(fs::exists(in_part_1));
  EXPECT_TRUE(fs::exists(stranger));
}

// A reader that goes away (an iterator closed mid-epoch) stops its download at once; what it
// had written is removed, and the next Acquire downloads the shard whole.
TEST_F(ShardCacheTest, AStopRequestEndsADownloadAndPublishesNothing) {
  WriteRemote();
  // ~8 KB in 32-byte pieces 25 ms apart: six seconds, were it let run.
  auto cache = Open({}, Store({.chunk_bytes = 32, .chunk_delay = milliseconds(25)}));
  std::stop_source stop;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(milliseconds(200));
    stop.request_stop();
  });
  const auto start = std::chrono::steady_clock::now();
  auto handle = cache->Acquire(0, stop.get_token());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  ASSERT_FALSE(handle.has_value());
  EXPECT_EQ(handle.error().code(), StatusCode::kCancelled);
  EXPECT_THAT(handle.error().message(), HasSubstr(index_.shards[0].raw_data.basename));
  EXPECT_FALSE(fs::exists(RawPath(0, Cache())));
  EXPECT_THAT(Temporaries(Cache()), ::testing::IsEmpty());
  auto again = Open()->Acquire(0);
  ASSERT_TRUE(again.has_value()) << again.status().ToString();
  EXPECT_TRUE(testing::RawShardIsIntact(again->path(), index_.shards[0]));
}

TEST_F(ShardCacheTest, AStopAlreadyRequestedReadsOnlyWhatIsLocal) {
  // Random access from Python asks this way first, so that a local shard costs no thread.
  WriteRemote();
  auto cache = Open();
  std::stop_source stopped;
  stopped.request_stop();
  auto missing = cache->Acquire(1, stopped.get_token());
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kCancelled);
  EXPECT_THAT(missing.error().message(), HasSubstr(index_.shards[1].raw_data.basename));
  EXPECT_EQ(Reads(index_.shards[1].raw_data.basename), 0) << "no download was started";
  ASSERT_TRUE(cache->Acquire(1).has_value());
  auto local = cache->Acquire(1, stopped.get_token());
  ASSERT_TRUE(local.has_value()) << local.status().ToString();
  EXPECT_TRUE(testing::RawShardIsIntact(local->path(), index_.shards[1]));
}

// A connection that hangs (no bytes, no error) must not hold a reader that goes away until the
// stall timeout: the transport asks the download's sink whether to go on even while nothing
// arrives. Whole and in ranged parts.
TEST_F(ShardCacheTest, AStopRequestEndsADownloadFromAStalledConnection) {
  WriteRemote();
  for (const bool parts : {false, true}) {
    SCOPED_TRACE(parts ? "in parts" : "whole");
    const testing::StallingServer server(testing::StallingServer::Stall::kMidBody);
    auto remote = OpenUrl(server.Url("dataset"));
    ASSERT_TRUE(remote.has_value()) << remote.status().ToString();
    const fs::path cache_folder = Cache() / (parts ? "parts" : "whole");
    auto cache = ShardCache::Open(remote->store, remote->key, index_,
                                  {.local = cache_folder,
                                   .parallel_part_threshold = parts ? 1u : 1u << 30,
                                   .download_parts = 4});
    ASSERT_TRUE(cache.has_value()) << cache.status().ToString();
    std::stop_source stop;
    std::chrono::steady_clock::time_point stopped_at;
    std::jthread stopper([&] {
      // Every part's request in (or five seconds), and the download stalled on them.
      for (int i = 0; i < 500 && server.requests() < (parts ? 4 : 1); ++i) {
        std::this_thread::sleep_for(milliseconds(10));
      }
      std::this_thread::sleep_for(milliseconds(100));
      stopped_at = std::chrono::steady_clock::now();
      stop.request_stop();
    });
    auto handle = (*cache)->Acquire(0, stop.get_token());
    const auto returned_at = std::chrono::steady_clock::now();
    stopper.join();
    // libcurl wakes a stalled transfer about once a second; the stall timeout is 30 s.
    EXPECT_LT(returned_at - stopped_at, std::chrono::seconds(10));
    ASSERT_FALSE(handle.has_value());
    EXPECT_EQ(handle.error().code(), StatusCode::kCancelled) << handle.error().ToString();
    EXPECT_EQ(server.requests(), parts ? 4 : 1);
    EXPECT_FALSE(fs::exists(RawPath(0, cache_folder)));
    EXPECT_THAT(Temporaries(cache_folder), ::testing::IsEmpty());
  }
}

TEST_F(ShardCacheTest, AStopRequestEndsTheWaitForAnotherProcesssDownload) {
  WriteRemote();
  auto cache = Open();
  const CacheLayout layout(Cache());
  auto elsewhere =
      FileLock::Lock(layout.DownloadLockPath(index_.shards[1].raw_data.basename),
                     LockMode::kExclusive);  // flock: as good as another process's lock
  ASSERT_TRUE(elsewhere.has_value()) << elsewhere.status().ToString();
  std::stop_source stop;
  std::atomic<bool> returned{false};
  std::jthread stopper([&] {
    std::this_thread::sleep_for(milliseconds(100));
    stop.request_stop();
    for (int i = 0; i < 500 && !returned; ++i) std::this_thread::sleep_for(milliseconds(10));
    *elsewhere = FileLock();  // a wait deaf to the stop would download now, and fail the test
  });
  auto handle = cache->Acquire(1, stop.get_token());
  returned = true;
  ASSERT_FALSE(handle.has_value());
  EXPECT_EQ(handle.error().code(), StatusCode::kCancelled);
  EXPECT_EQ(Reads(index_.shards[1].raw_data.basename), 0);
}

TEST_F(ShardCacheTest, ShardPastTheIndexIsOutOfRange) {
  WriteRemote();
  auto cache = Open();
  auto handle = cache->Acquire(index_.shards.size());
  ASSERT_FALSE(handle.has_value());
  EXPECT_EQ(handle.error().code(), StatusCode::kOutOfRange);
}

TEST_F(ShardCacheTest, ProcessesDownloadEachShardExactlyOnce) {
  WriteRemote();
  auto store = Store({.chunk_bytes = 2048, .chunk_delay = std::chrono::microseconds(1000)});
  AcquireEveryShardInFourProcesses(index_, store, prefix_, {.local = Cache()});
  for (size_t k = 0; k < index_.shards.size(); ++k) {
    EXPECT_EQ(Reads(Fetched(k).basename), 1) << Fetched(k).basename;
    EXPECT_TRUE(testing::RawShardIsIntact(RawPath(k, Cache()), index_.shards[k]));
  }
  EXPECT_THAT(Temporaries(Cache()), ::testing::IsEmpty());
}

TEST_F(ShardCacheTest, ProcessesDownloadEachCompressedShardExactlyOnce) {
  WriteRemote({.compression = "zstd"});
  auto store = Store({.chunk_bytes = 2048, .chunk_delay = std::chrono::microseconds(1000)});
  AcquireEveryShardInFourProcesses(index_, store, prefix_, {.local = Cache()});
  for (size_t k = 0; k < index_.shards.size(); ++k) {
    EXPECT_EQ(Reads(Fetched(k).basename), 1) << Fetched(k).basename;
    EXPECT_TRUE(testing::RawShardIsIntact(RawPath(k, Cache()), index_.shards[k]));
    EXPECT_FALSE(fs::exists(Cache() / index_.shards[k].zip_data->basename));  // no keep_zip
  }
  EXPECT_THAT(Temporaries(Cache()), ::testing::IsEmpty());
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
  EXPECT_FALSE(fs::exists(Remote() / ".ferry")) << "refused, but wrote into the dataset first";

  DatasetDescription escaping = index_;
  escaping.shards[0].raw_data.basename = "../outside.mds";
  auto outside = ShardCache::Open(store, prefix_, escaping, {.local = Cache()});
  ASSERT_FALSE(outside.has_value());
  EXPECT_EQ(outside.error().code(), StatusCode::kInvalidArgument);

  DatasetDescription reserved = index_;
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

namespace ferry::shard_cache_test {
namespace {

unsigned ModeOf(const fs::path& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

// FERRY_CACHE_MODE is unset in the tests: private, whatever the umask allowed.
TEST_F(ShardCacheTest, WhatTheCacheCreatesIsPrivateToTheUser) {
  WriteRemote();
  auto cache = Open({.local = Cache() / "deep" / "er"});
  ASSERT_NE(cache, nullptr);
  auto shard = cache->Acquire(0);
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  EXPECT_EQ(ModeOf(Cache() / "deep"), 0700u);
  EXPECT_EQ(ModeOf(Cache() / "deep" / "er"), 0700u);
  EXPECT_EQ(ModeOf(Cache() / "deep" / "er" / ".ferry" / "locks"), 0700u);
  EXPECT_EQ(ModeOf(shard->path()), 0600u);
  for (const auto& entry : fs::directory_iterator(Cache() / "deep" / "er" / ".ferry" / "locks")) {
    EXPECT_EQ(ModeOf(entry.path()), 0600u) << entry.path();
  }
}

}  // namespace
}  // namespace ferry::shard_cache_test
