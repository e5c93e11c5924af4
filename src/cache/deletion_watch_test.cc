#include "cache/deletion_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "base/temp_dir_testutil.h"

namespace ferry::internal_cache {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

void Touch(const fs::path& path) { std::ofstream(path) << "x"; }

std::vector<std::string> Heard(DeletionWatch& watch) {
  std::vector<std::string> heard;
  watch.Drain([&](const fs::path& path) { heard.push_back(path.string()); });
  return heard;
}

std::set<std::string> Drained(DeletionWatch& watch) {
  const std::vector<std::string> heard = Heard(watch);
  return {heard.begin(), heard.end()};
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

int InotifyInstances() {
  int n = 0;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    n += fs::read_symlink(entry.path(), ec).string() == "anon_inode:inotify";
  }
  return n;
}

// The watches of a process share one inotify instance (a per-user resource of the node), each
// hears the deletions in its own folders, and the instance closes with the last of them.
TEST(DeletionWatch, WatchesShareOneInstanceAndEachHearsItsOwnFolders) {
  testing::TempDir tmp;
  const fs::path a = tmp.path() / "a", b = tmp.path() / "b";
  fs::create_directories(a);
  fs::create_directories(b);
  for (const fs::path& f : {a / "1.mds", a / "2.mds", b / "3.mds"}) std::ofstream(f) << "x";
  const int before = InotifyInstances();
  auto first = DeletionWatch::Start({a});
  auto second = DeletionWatch::Start({a, b});
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ(InotifyInstances(), before + 1);
  fs::remove(a / "1.mds");
  fs::remove(b / "3.mds");
  // The first drain reads both watches' events; the second watch gets its own at its drain.
  EXPECT_THAT(Heard(**first), ::testing::ElementsAre((a / "1.mds").string()));
  EXPECT_THAT(Heard(**second),
              ::testing::ElementsAre((a / "1.mds").string(), (b / "3.mds").string()));
  first->reset();
  fs::remove(a / "2.mds");  // folder a is still watched, for the second
  EXPECT_THAT(Heard(**second), ::testing::ElementsAre((a / "2.mds").string()));
  second->reset();
  EXPECT_EQ(InotifyInstances(), before);
}

// A forked child (a DataLoader worker) gets an instance of its own: what it drains is not taken
// from the parent's watches.
TEST(DeletionWatch, AForkedChildWatchesWithItsOwnInstance) {
  testing::TempDir tmp;
  const fs::path folder = tmp.path() / "f";
  fs::create_directories(folder);
  std::ofstream(folder / "p.mds") << "x";
  std::ofstream(folder / "c.mds") << "x";
  auto parent = DeletionWatch::Start({folder});
  ASSERT_TRUE(parent.has_value());
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto child = DeletionWatch::Start({folder});
    if (!child.has_value()) ::_exit(2);
    fs::remove(folder / "c.mds");
    const auto heard = Heard(**child);
    ::_exit(heard == std::vector<std::string>{(folder / "c.mds").string()} ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  fs::remove(folder / "p.mds");
  EXPECT_THAT(Heard(**parent),
              ::testing::ElementsAre((folder / "c.mds").string(), (folder / "p.mds").string()));
}

}  // namespace
}  // namespace ferry::internal_cache
