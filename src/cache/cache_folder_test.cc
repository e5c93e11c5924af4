// ferry cache's library side (include/ferry/cache/cache_folder.h) on a cache folder filled by a
// ShardCache: what it holds, verification against the index's digests, and removal that leaves
// what a reader has pinned.
#include "ferry/cache/cache_folder.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "cache/cache_layout.h"
#include "cache/eviction.h"
#include "cache/shard_cache_fixture_testutil.h"

namespace ferry::shard_cache_test {
namespace {

using ::testing::HasSubstr;

class CacheFolderTest : public ShardCacheTest {
 protected:
  // A cache folder with index.json and every shard downloaded.
  std::unique_ptr<ShardCache> Filled() {
    WriteRemote();
    EXPECT_TRUE(internal_cache::CreateCacheFolders(Cache()).ok());
    fs::copy_file(Remote() / "index.json", Cache() / "index.json");
    auto cache = Open();
    for (size_t k = 0; k < index_.shards.size(); ++k) EXPECT_TRUE(cache->Acquire(k).has_value());
    return cache;
  }
  size_t ShardFilesPresent() const {
    size_t n = 0;
    for (const ShardDescription& s : index_.shards) n += fs::exists(Cache() / s.raw_data.basename);
    return n;
  }
};

TEST_F(CacheFolderTest, InspectSaysWhatIsCachedAndWhoReads) {
  auto cache = Filled();
  auto info = InspectCacheFolder(Cache());
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->shards, index_.shards.size());
  EXPECT_EQ(info->cached_shards, index_.shards.size());
  uint64_t bytes = 0;
  for (const ShardDescription& s : index_.shards) bytes += s.raw_data.bytes;
  EXPECT_EQ(info->shard_bytes, bytes);
  ASSERT_EQ(info->processes.size(), 1u) << "this process, publishing while the cache is open";
  EXPECT_EQ(info->processes[0].pid, ::getpid());
  cache.reset();
  fs::remove(RawPath(1, Cache()));
  info = InspectCacheFolder(Cache());
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->cached_shards, index_.shards.size() - 1);
  EXPECT_TRUE(info->processes.empty());
}

TEST_F(CacheFolderTest, AFolderThatIsNoCacheIsAnErrorNamingIt) {
  auto missing = InspectCacheFolder(tmp_ / "nowhere");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  fs::create_directories(tmp_ / "empty");
  auto empty = InspectCacheFolder(tmp_ / "empty");
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), HasSubstr((tmp_ / "empty").string()));
}

TEST_F(CacheFolderTest, VerifyFindsAFlippedByteAndRemovesTheShardWhenAsked) {
  auto cache = Filled();
  cache.reset();
  FlipByte(RawPath(2, Cache()), 100);
  auto report = VerifyCacheFolder(Cache());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->checked, index_.shards.size());
  EXPECT_EQ(report->hashed, index_.shards.size());
  ASSERT_EQ(report->problems.size(), 1u);
  EXPECT_EQ(report->problems[0].file, index_.shards[2].raw_data.basename);
  EXPECT_THAT(report->problems[0].problem, HasSubstr("the index says"));
  EXPECT_TRUE(fs::exists(RawPath(2, Cache()))) << "only reported";
  report = VerifyCacheFolder(Cache(), /*remove_bad=*/true);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->removed, 1u);
  EXPECT_FALSE(fs::exists(RawPath(2, Cache())));
  report = VerifyCacheFolder(Cache());
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->problems.empty());
}

TEST_F(CacheFolderTest, ClearLeavesWhatAReaderHasPinned) {
  auto cache = Filled();
  auto pinned = cache->Acquire(0);
  ASSERT_TRUE(pinned.has_value());
  auto removal = ClearCacheFolder(Cache());
  ASSERT_TRUE(removal.ok()) << removal.status().ToString();
  EXPECT_EQ(removal->pinned_shards, 1u);
  EXPECT_EQ(removal->removed_shards, index_.shards.size() - 1);
  EXPECT_TRUE(fs::exists(RawPath(0, Cache())));
  EXPECT_EQ(ShardFilesPresent(), 1u);
  // The whole folder only when nobody reads it.
  auto everything = ClearCacheFolder(Cache(), /*everything=*/true);
  ASSERT_FALSE(everything.ok());
  EXPECT_EQ(everything.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(everything.status().message(), HasSubstr(std::to_string(::getpid())));
  EXPECT_TRUE(fs::exists(Cache() / "index.json"));
  pinned = Result<ShardHandle>(CancelledError("released"));
  cache.reset();
  everything = ClearCacheFolder(Cache(), /*everything=*/true);
  ASSERT_TRUE(everything.ok()) << everything.status().ToString();
  EXPECT_TRUE(fs::is_empty(Cache()));
}

TEST_F(CacheFolderTest, PruneRemovesTheLeastRecentlyUsedFirst) {
  auto cache = Filled();
  // Shard 3 used last.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(cache->Acquire(3).has_value());
  cache.reset();
  ASSERT_TRUE(InspectCacheFolder(Cache()).ok());  // writes the index's binary form, if missing
  const uint64_t other = internal_cache::MeasureOtherBytes(internal_cache::CacheLayout(Cache()));
  auto removal = PruneCacheFolder(Cache(), {.to_bytes = other + ShardBytes(3)});
  ASSERT_TRUE(removal.ok()) << removal.status().ToString();
  EXPECT_EQ(removal->removed_shards, index_.shards.size() - 1);
  EXPECT_TRUE(fs::exists(RawPath(3, Cache()))) << "the one used last stays";
  removal = PruneCacheFolder(Cache(), {.older_than = std::chrono::seconds(3600)});
  ASSERT_TRUE(removal.ok());
  EXPECT_EQ(removal->removed_shards, 0u) << "used a moment ago";
  removal = PruneCacheFolder(Cache(), {.older_than = std::chrono::seconds(0)});
  ASSERT_TRUE(removal.ok());
  EXPECT_EQ(removal->removed_shards, 1u);
}

TEST_F(CacheFolderTest, AnIndexNamingFilesOutsideTheShardsRemovesNothing) {
  auto cache = Filled();
  cache.reset();
  ASSERT_TRUE(InspectCacheFolder(Cache()).ok());
  // An index.json that names one of ferry's records as a shard file, or a file outside.
  std::string text = testing::FileText(Cache() / "index.json");
  const std::string name = index_.shards[0].raw_data.basename;
  for (const std::string evil : {".ferry/origin.json", "../outside"}) {
    std::string changed = text;
    changed.replace(changed.find(name), name.size(), evil);
    ASSERT_TRUE(WriteFileAtomically(Cache() / "index.json", changed).ok());
    fs::remove(Cache() / ".ferry" / "index.bin");
    auto removal = ClearCacheFolder(Cache());
    ASSERT_FALSE(removal.ok()) << evil;
    EXPECT_THAT(removal.status().message(), HasSubstr("index.json")) << evil;
    EXPECT_TRUE(fs::exists(RawPath(1, Cache()))) << "nothing removed";
  }
}

}  // namespace
}  // namespace ferry::shard_cache_test
