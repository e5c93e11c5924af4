#include "storage/object_key.h"

#include <gtest/gtest.h>

namespace ferry {
namespace {

TEST(JoinKey, JoinsWithExactlyOneSlash) {
  EXPECT_EQ(JoinKey("", "index.json"), "index.json");
  EXPECT_EQ(JoinKey("data/set", "a/shard.00000.mds"), "data/set/a/shard.00000.mds");
  EXPECT_EQ(JoinKey("data/set/", "index.json"), "data/set/index.json");
  EXPECT_EQ(JoinKey("data", ""), "data/");
  EXPECT_EQ(JoinKey("", ""), "");
}

TEST(JoinKey, TakesTheNameAsItIs) {
  // Only the one separator is added: a name's own slashes and a prefix's doubled ones stay, as
  // they are distinct keys in every store.
  EXPECT_EQ(JoinKey("data", "/abs"), "data//abs");
  EXPECT_EQ(JoinKey("data//", "x"), "data//x");
  EXPECT_EQ(JoinKey("/", "x"), "/x");
}

TEST(FolderKey, EndsInOneSlashExceptAtTheRoot) {
  EXPECT_EQ(FolderKey("a/b"), "a/b/");
  EXPECT_EQ(FolderKey("a/b/"), "a/b/");
  EXPECT_EQ(FolderKey(""), "");
  EXPECT_EQ(FolderKey("a b?#%"), "a b?#%/");
}

}  // namespace
}  // namespace ferry
