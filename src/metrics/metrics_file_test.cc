#include "metrics/metrics_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "base/temp_dir_testutil.h"

namespace ferry::metrics {
namespace {

namespace fs = std::filesystem;

Result<MetricsFileContents> Read(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InternalError("open " + path.string());
  auto contents = ReadMetricsFile(fd, path);
  ::close(fd);
  return contents;
}

TEST(MetricsFile, AReaderSeesWhatTheWriterPublishesLessTheBaseOfCounters) {
  testing::TempDir tmp;
  auto writer = MetricsFileWriter::Create(tmp.path(), "trainer rank 0");
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  EXPECT_TRUE(writer->path().filename().string().starts_with("proc."));
  writer->Publish({{.name = "/a/bytes", .gauge = false, .value = 100},
                   {.name = "/a/in_flight", .gauge = true, .value = 7}},
                  {{"/a/bytes", 40}, {"/a/in_flight", 5}});
  auto first = Read(writer->path());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->pid, ::getpid());
  EXPECT_EQ(first->label, "trainer rank 0");
  EXPECT_EQ(first->counters, (std::map<std::string, int64_t>{{"/a/bytes", 60}}));
  EXPECT_EQ(first->gauges, (std::map<std::string, int64_t>{{"/a/in_flight", 7}}));

  // A later publication updates values in place and appends new names.
  writer->Publish({{.name = "/a/bytes", .gauge = false, .value = 140},
                   {.name = "/a/in_flight", .gauge = true, .value = 0},
                   {.name = "/b/requests", .gauge = false, .value = 3}},
                  {{"/a/bytes", 40}});
  auto second = Read(writer->path());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->counters,
            (std::map<std::string, int64_t>{{"/a/bytes", 100}, {"/b/requests", 3}}));
  EXPECT_EQ(second->gauges, (std::map<std::string, int64_t>{{"/a/in_flight", 0}}));
  EXPECT_GE(second->updated_unix_ms, first->started_unix_ms);
}

TEST(MetricsFile, TheWriterHoldsItsFileLockedUntilClosed) {
  testing::TempDir tmp;
  auto writer = MetricsFileWriter::Create(tmp.path(), "x");
  ASSERT_TRUE(writer.ok());
  const int fd = ::open(writer->path().c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_NE(::flock(fd, LOCK_SH | LOCK_NB), 0) << "a live writer's file is locked";
  writer->Close();
  EXPECT_EQ(::flock(fd, LOCK_SH | LOCK_NB), 0) << "a closed writer's file is not";
  ::close(fd);
}

TEST(MetricsFile, NamesTooLongAreLeftOutAndTheRestStays) {
  testing::TempDir tmp;
  auto writer = MetricsFileWriter::Create(tmp.path(), "x");
  ASSERT_TRUE(writer.ok());
  const std::string long_name(kMetricsFileMaxName + 1, 'n');
  const std::string longest(kMetricsFileMaxName, 'm');
  writer->Publish({{.name = long_name, .gauge = false, .value = 1},
                   {.name = longest, .gauge = false, .value = 2}},
                  {});
  auto contents = Read(writer->path());
  ASSERT_TRUE(contents.ok());
  EXPECT_EQ(contents->counters, (std::map<std::string, int64_t>{{longest, 2}}));
}

TEST(MetricsFile, AFileOfAnotherKindIsDataLossNamingIt) {
  testing::TempDir tmp;
  const fs::path path = tmp / "proc.1.2.3";
  std::ofstream(path) << std::string(kMetricsFileSize, 'x');
  auto contents = Read(path);
  ASSERT_FALSE(contents.ok());
  EXPECT_EQ(contents.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(contents.status().message().find(path.string()), std::string::npos);

  std::ofstream(path, std::ios::trunc) << "short";
  auto short_file = Read(path);
  ASSERT_FALSE(short_file.ok());
  EXPECT_EQ(short_file.status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace ferry::metrics
