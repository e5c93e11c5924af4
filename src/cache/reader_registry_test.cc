#include "cache/reader_registry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "base/temp_dir_testutil.h"
#include "cache/cache_testutil.h"

namespace ferry::internal_cache {
namespace {

uint32_t Count(const CacheLayout& layout,
               std::chrono::seconds stale_after = std::chrono::seconds(10)) {
  auto n = CountReaders(layout, stale_after);
  EXPECT_TRUE(n.has_value()) << n.status().ToString();
  return n.value_or(0);
}

size_t ReaderFiles(const CacheLayout& layout) {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(layout.ReadersDir())) {
    n += entry.path().filename().string().starts_with("reader.");
  }
  return n;
}

TEST(ReaderRegistry, CountsTheReadersThatLive) {
  testing::TempDir tmp;
  const CacheLayout layout(tmp / "cache");
  EXPECT_EQ(Count(layout), 0u);  // no folder yet
  std::vector<ReaderRegistration> readers;
  for (int i = 0; i < 3; ++i) {
    auto r = RegisterReader(layout);
    ASSERT_TRUE(r.has_value()) << r.status().ToString();
    readers.push_back(std::move(*r));
  }
  EXPECT_EQ(Count(layout), 3u);
  readers.pop_back();
  EXPECT_EQ(Count(layout), 2u);
  ReaderRegistration moved = std::move(readers[0]);  // the registration travels with the object
  EXPECT_TRUE(moved.registered());
  EXPECT_FALSE(readers[0].registered());
  EXPECT_EQ(Count(layout), 2u);
  readers.clear();
  moved = ReaderRegistration();
  EXPECT_EQ(Count(layout), 0u);
  EXPECT_EQ(ReaderFiles(layout), 0u) << "a reader that leaves removes its file";
}

// A reader killed with SIGKILL leaves its file but not its lock: it is not counted, and once old
// enough its file is removed.
TEST(ReaderRegistry, AKilledReaderIsNotCountedAndItsFileGoes) {
  testing::TempDir tmp;
  const CacheLayout layout(tmp / "cache");
  auto mine = RegisterReader(layout);
  ASSERT_TRUE(mine.has_value()) << mine.status().ToString();
  testing::Children children;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = children.Spawn([&] {
    auto r = RegisterReader(layout);
    const char c = r.has_value() ? 'y' : 'n';
    if (::write(ready[1], &c, 1) != 1) return 2;
    ::pause();  // until killed
    return 0;
  });
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  ASSERT_EQ(c, 'y');
  EXPECT_EQ(Count(layout), 2u);  // the other process's reader counts
  children.Kill(child);
  EXPECT_EQ(Count(layout), 1u);
  EXPECT_EQ(ReaderFiles(layout), 2u) << "too fresh to tell from a registration in progress";
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(Count(layout, std::chrono::seconds(0)), 1u);
  EXPECT_EQ(ReaderFiles(layout), 1u) << "the dead reader's file is removed";
}

}  // namespace
}  // namespace ferry::internal_cache
