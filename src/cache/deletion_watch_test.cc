#include "cache/deletion_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "base/temp_dir_testutil.h"

namespace ferry::internal_cache {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

void Touch(const fs::path& path) { std::ofstream(path) << "x"; }

std::set<std::string> Drained(DeletionWatch& watch) {
  std::set<std::string> heard;
  watch.Drain([&](const fs::path& path) { heard.insert(path.string()); });
  return heard;
}

TEST(DeletionWatch, HearsFilesDeletedOrRenamedAwayInEachWatchedFolderAtTheNextDrain) {
  testing::TempDir tmp;
  const fs::path top = tmp.path() / "cache";
  fs::create_directories(top / "part");
  for (const char* name : {"a.mds", "b.mds", "c.mds", "part/d.mds"}) Touch(top / name);
  auto watch = DeletionWatch::Start({top, top / "part"});
  ASSERT_TRUE(watch.has_value()) << watch.status().ToString();
  EXPECT_THAT(Drained(**watch), IsEmpty());
  Touch(top / "new.mds");                       // created: not a deletion
  fs::rename(top / "c.mds", top / "c2.mds");    // renamed within: c.mds is gone
  fs::remove(top / "a.mds");                    // deleted
  fs::rename(top / "b.mds", tmp.path() / "b");  // moved out of the folder
  fs::remove(top / "part" / "d.mds");           // in a watched subfolder
  // Heard at once, with no thread in between: the kernel queued them.
  EXPECT_THAT(Drained(**watch),
              ElementsAre((top / "a.mds").string(), (top / "b.mds").string(),
                          (top / "c.mds").string(), (top / "part" / "d.mds").string()));
  EXPECT_THAT(Drained(**watch), IsEmpty()) << "each deletion is heard once";
}

TEST(DeletionWatch, AFolderThatCannotBeWatchedIsAnErrorNamingIt) {
  testing::TempDir tmp;
  auto watch = DeletionWatch::Start({tmp.path() / "missing"});
  ASSERT_FALSE(watch.has_value());
  EXPECT_EQ(watch.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(watch.status().message(), ::testing::HasSubstr("missing"));
}

}  // namespace
}  // namespace ferry::internal_cache
