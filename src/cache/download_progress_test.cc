#include "cache/download_progress.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "base/temp_dir_testutil.h"

namespace ferry::internal_cache {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr uint64_t kSize = 1000;

// A download in the making: its temporary (preallocated, as ranged parts write it) and the bytes
// it will hold.
class DownloadProgressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = dir_.path() / "shard.mds.tmp";
    record_ = dir_.path() / "shard.progress";
    for (uint64_t i = 0; i < kSize; ++i) bytes_.push_back(static_cast<char>('a' + i % 26));
    fd_ = ::open(tmp_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ASSERT_GE(fd_, 0);
    ASSERT_EQ(::ftruncate(fd_, kSize), 0);
  }
  void TearDown() override { ::close(fd_); }

  // Writes bytes [begin, end) into the temporary, as a part's chunk.
  void Write(uint64_t begin, uint64_t end) {
    ASSERT_EQ(::pwrite(fd_, bytes_.data() + begin, end - begin, static_cast<off_t>(begin)),
              static_cast<ssize_t>(end - begin));
  }

  std::unique_ptr<DownloadProgressReader> OpenReader() {
    auto reader = DownloadProgressReader::Open(record_, tmp_);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    if (!reader.ok() || !*reader) return nullptr;
    return std::move(**reader);
  }

  static steady_clock::time_point In(milliseconds ms) { return steady_clock::now() + ms; }

  testing::TempDir dir_;
  fs::path tmp_;
  fs::path record_;
  std::string bytes_;
  int fd_ = -1;
};

TEST_F(DownloadProgressTest, ServesWhatLandedAndWaitsForTheRest) {
  auto writer = DownloadProgressWriter::Create(record_, fd_, kSize, {{0, 500}, {500, 1000}});
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  auto reader = OpenReader();
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->size(), kSize);
  EXPECT_FALSE(reader->Landed(0, 1));

  Write(0, 200);
  (*writer)->Landed(0, 200);
  Write(500, 600);
  (*writer)->Landed(1, 600);
  EXPECT_TRUE(reader->Landed(0, 200));
  EXPECT_TRUE(reader->Landed(520, 80));
  EXPECT_FALSE(reader->Landed(150, 100));  // past part 0's mark
  EXPECT_FALSE(reader->Landed(450, 100));  // spans both parts: part 0 not there
  auto head = reader->Read(10, 50, In(milliseconds(0)));
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(*head, bytes_.substr(10, 50));
  auto second = reader->Read(550, 50, In(milliseconds(0)));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, bytes_.substr(550, 50));

  // Not there yet: the deadline ends the wait.
  auto early = reader->Read(300, 10, In(milliseconds(30)));
  EXPECT_EQ(early.status().code(), StatusCode::kDeadlineExceeded) << early.status().ToString();

  // Landing while the reader sleeps wakes it.
  std::jthread land([&] {
    std::this_thread::sleep_for(milliseconds(50));
    Write(200, 500);
    (*writer)->Landed(0, 500);
  });
  const auto start = steady_clock::now();
  auto waited = reader->Read(250, 300, In(milliseconds(10'000)));  // both parts, both landed
  ASSERT_TRUE(waited.ok()) << waited.status().ToString();
  EXPECT_EQ(*waited, bytes_.substr(250, 300));
  EXPECT_LT(steady_clock::now() - start, milliseconds(5'000));
  EXPECT_FALSE(reader->Ended());
}

TEST_F(DownloadProgressTest, AFailedDownloadEndsTheWaitWithAnError) {
  auto writer = DownloadProgressWriter::Create(record_, fd_, kSize, {{0, 1000}});
  ASSERT_TRUE(writer.ok());
  auto reader = OpenReader();
  ASSERT_NE(reader, nullptr);
  Write(0, 100);
  (*writer)->Landed(0, 100);
  std::jthread fail([&] {
    std::this_thread::sleep_for(milliseconds(30));
    (*writer)->Finish(false);
  });
  auto read = reader->Read(50, 100, In(milliseconds(10'000)));
  EXPECT_EQ(read.status().code(), StatusCode::kUnavailable) << read.status().ToString();
  EXPECT_NE(read.status().message().find(tmp_.string()), std::string::npos);
  EXPECT_TRUE(reader->Ended());
  // What landed before the failure is still served.
  auto landed = reader->Read(0, 100, In(milliseconds(0)));
  ASSERT_TRUE(landed.ok());
  EXPECT_EQ(*landed, bytes_.substr(0, 100));
}

TEST_F(DownloadProgressTest, ACompleteDownloadServesEverythingAndRemovesItsRecord) {
  auto writer = DownloadProgressWriter::Create(record_, fd_, kSize, {{0, 1000}});
  ASSERT_TRUE(writer.ok());
  auto reader = OpenReader();
  ASSERT_NE(reader, nullptr);
  Write(0, kSize);
  (*writer)->Finish(true);
  writer->reset();
  EXPECT_FALSE(fs::exists(record_));
  // The reader holds the temporary: renamed into place (published), it still reads.
  ASSERT_EQ(::rename(tmp_.c_str(), (dir_.path() / "shard.mds").c_str()), 0);
  auto all = reader->Read(0, 2000, In(milliseconds(0)));  // clipped to the object
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(*all, bytes_);
  // A reader that comes now finds nothing to read from.
  auto late = DownloadProgressReader::Open(record_, tmp_);
  ASSERT_TRUE(late.ok());
  EXPECT_FALSE(late->has_value());
}

TEST_F(DownloadProgressTest, IgnoresARecordOfAnotherTemporary) {
  auto writer = DownloadProgressWriter::Create(record_, fd_, kSize, {{0, 1000}});
  ASSERT_TRUE(writer.ok());
  // The temporary was replaced (a later download): its inode is not the record's.
  ASSERT_EQ(::unlink(tmp_.c_str()), 0);
  const int other = ::open(tmp_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  ASSERT_GE(other, 0);
  ::close(other);
  auto reader = DownloadProgressReader::Open(record_, tmp_);
  ASSERT_TRUE(reader.ok());
  EXPECT_FALSE(reader->has_value());
  // No record at all: nothing either.
  auto none = DownloadProgressReader::Open(dir_.path() / "missing.progress", tmp_);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

// The downloading process is killed while a reader serves bytes that landed: the reader gets
// those bytes and an error for the rest, never bytes that did not land; a reader that comes
// after finds nothing to read from.
TEST_F(DownloadProgressTest, AKilledDownloaderEndsTheWaitAndIsNotReadAfter) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto writer = DownloadProgressWriter::Create(record_, fd_, kSize, {{0, 1000}});
    if (!writer.ok()) ::_exit(1);
    Write(0, 400);
    (*writer)->Landed(0, 400);
    // Bytes written but not yet marked: a reader must not serve them.
    ::pwrite(fd_, "XXXXXXXXXX", 10, 400);
    const char c = 'r';
    if (::write(ready[1], &c, 1) != 1) ::_exit(1);
    ::pause();  // until killed
    ::_exit(0);
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  auto reader = OpenReader();
  ASSERT_NE(reader, nullptr);
  auto landed = reader->Read(100, 300, In(milliseconds(0)));
  ASSERT_TRUE(landed.ok()) << landed.status().ToString();
  EXPECT_EQ(*landed, bytes_.substr(100, 300));

  std::jthread killer([&] {
    std::this_thread::sleep_for(milliseconds(50));
    ::kill(child, SIGKILL);
  });
  const auto start = steady_clock::now();
  auto rest = reader->Read(395, 20, In(milliseconds(10'000)));
  EXPECT_EQ(rest.status().code(), StatusCode::kUnavailable) << rest.status().ToString();
  EXPECT_LT(steady_clock::now() - start, milliseconds(5'000));
  killer.join();
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);

  auto late = DownloadProgressReader::Open(record_, tmp_);
  ASSERT_TRUE(late.ok());
  EXPECT_FALSE(late->has_value());
}

TEST_F(DownloadProgressTest, RefusesMorePartsThanARecordHolds) {
  std::vector<DownloadPart> parts;
  for (uint64_t p = 0; p <= kMaxProgressParts; ++p) parts.push_back({p, p + 1});
  EXPECT_EQ(DownloadProgressWriter::Create(record_, fd_, kSize, parts).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(record_));
}

}  // namespace
}  // namespace ferry::internal_cache
