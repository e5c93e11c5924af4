#include "base/boot_time.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"

namespace ferry {
namespace {

using std::chrono::system_clock;

TEST(BootTimeTest, IsInThePastAndBeforeAFileWrittenNow) {
  const system_clock::time_point boot = BootTime();
  EXPECT_LT(boot, system_clock::now());
  EXPECT_GT(boot, system_clock::now() - std::chrono::hours(24 * 365 * 10));
  testing::TempDir tmp;
  std::ofstream(tmp / "new") << "x";
  struct stat st {};
  ASSERT_EQ(::stat((tmp / "new").c_str(), &st), 0);
  EXPECT_LT(boot, FileTime(st.st_ctim));
}

TEST(BootTimeTest, TestsCanMoveItAndPutItBack) {
  const system_clock::time_point real = BootTime();
  const system_clock::time_point later = system_clock::now() + std::chrono::hours(1);
  SetBootTimeForTesting(later);
  EXPECT_EQ(BootTime(), later);
  SetBootTimeForTesting(std::nullopt);
  EXPECT_EQ(BootTime(), real);
}

}  // namespace
}  // namespace ferry
