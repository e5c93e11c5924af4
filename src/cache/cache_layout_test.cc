#include "cache/cache_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace ferry::internal_cache {
namespace {

using ::testing::HasSubstr;

TEST(CacheLayout, ShardFilesMirrorTheIndexAndTemporariesSitBesideThem) {
  const CacheLayout layout("/cache");
  EXPECT_EQ(layout.IndexPath(), "/cache/index.json");
  EXPECT_EQ(layout.FilePath("shard.00000.mds"), "/cache/shard.00000.mds");
  EXPECT_EQ(layout.FilePath("part_a/shard.00000.mds.zstd"), "/cache/part_a/shard.00000.mds.zstd");
  EXPECT_EQ(layout.TemporaryPath("part_a/shard.00000.mds"),
            "/cache/part_a/shard.00000.mds.ferry-tmp");
  EXPECT_EQ(layout.TemporaryPath("a/b").parent_path(), layout.FilePath("a/b").parent_path());
}

TEST(CacheLayout, LockFilesAreFlatUnderDotFerry) {
  const CacheLayout layout("/cache");
  EXPECT_EQ(layout.LocksDir(), "/cache/.ferry/locks");
  EXPECT_EQ(layout.UseLockPath("shard.00000.mds"), "/cache/.ferry/locks/shard.00000.mds.use");
  EXPECT_EQ(layout.DownloadLockPath("part_a/shard.00000.mds"),
            "/cache/.ferry/locks/part_a%2Fshard.00000.mds.dl");
  EXPECT_EQ(layout.CacheLockPath(), "/cache/.ferry/locks/cache.lock");
}

TEST(LockName, EscapesReversiblySoDistinctBasenamesGetDistinctNames) {
  EXPECT_EQ(LockName("a/b"), "a%2Fb");
  EXPECT_EQ(LockName("a%2Fb"), "a%252Fb");
  EXPECT_EQ(LockName("a~b"), "a%7Eb");
  const std::set<std::string> names = {LockName("a/b"), LockName("a%2Fb"), LockName("a_b"),
                                       LockName("a%b"), LockName("a/b/c"), LockName("a%2Fb/c")};
  EXPECT_EQ(names.size(), 6u);
}

TEST(LockName, LongBasenamesAreHashedIntoOneComponent) {
  const std::string deep = std::string(150, 'a') + "/" + std::string(150, 'b');
  const std::string other = std::string(150, 'a') + "/" + std::string(149, 'b') + "c";
  const std::string name = LockName(deep);
  EXPECT_LE(name.size() + 4, 255u);
  EXPECT_EQ(name.find('/'), std::string::npos);
  EXPECT_THAT(name, HasSubstr("~"));
  EXPECT_NE(name, LockName(other));
  EXPECT_EQ(name, LockName(deep));
}

TEST(CheckBasenameIsNotReserved, RefusesFerrysOwnNames) {
  EXPECT_TRUE(CheckBasenameIsNotReserved("shard.00000.mds").ok());
  EXPECT_TRUE(CheckBasenameIsNotReserved("x/.ferry/shard.00000.mds").ok());
  EXPECT_EQ(CheckBasenameIsNotReserved(".ferry/locks/cache.lock").code(),
            StatusCode::kInvalidArgument);
  EXPECT_THAT(CheckBasenameIsNotReserved("shard.00000.mds.ferry-tmp").message(),
              HasSubstr("shard.00000.mds.ferry-tmp"));
}

}  // namespace
}  // namespace ferry::internal_cache
