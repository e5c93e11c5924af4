#include "base/file_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "base/holed_file_testutil.h"
#include "base/mapped_file.h"
#include "base/temp_dir_testutil.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// Each test gets its own fresh folder under /tmp, removed afterwards.
class FileUtilTest : public ::testing::Test {
 protected:
  // Names in the test folder, so that a leftover temporary file shows up.
  std::set<std::string> Listing() const {
    std::set<std::string> names;
    for (const fs::directory_entry& e : fs::directory_iterator(dir_)) {
      names.insert(e.path().filename().string());
    }
    return names;
  }

  // Reads a file without the code under test.
  static std::string Slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  static void Spit(const fs::path& path, std::string_view contents) {
    std::ofstream out(path, std::ios::binary);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  }

  // Bytes of every value, NULs included, longer than one 64 KiB read.
  static std::string BinaryBlob(size_t size) {
    std::mt19937 rng(7);
    std::string s(size, '\0');
    for (char& c : s) c = static_cast<char>(rng() & 0xFF);
    return s;
  }

  ferry::testing::TempDir tmp_;
  const fs::path dir_ = tmp_.path();
};

TEST_F(FileUtilTest, WriteFileAtomicallyWritesExactlyTheContents) {
  const fs::path path = dir_ / "index.json";
  const std::string contents = BinaryBlob(200'001);
  ASSERT_TRUE(WriteFileAtomically(path, contents).ok());
  EXPECT_EQ(fs::file_size(path), contents.size());
  EXPECT_EQ(Slurp(path), contents);
  EXPECT_THAT(Listing(), ElementsAre("index.json"));
}

TEST_F(FileUtilTest, WriteFileAtomicallyWritesAnEmptyFile) {
  const fs::path path = dir_ / "empty";
  ASSERT_TRUE(WriteFileAtomically(path, "").ok());
  ASSERT_TRUE(fs::is_regular_file(path));
  EXPECT_EQ(fs::file_size(path), 0u);
  EXPECT_THAT(Listing(), ElementsAre("empty"));
}

TEST_F(FileUtilTest, WriteFileAtomicallyReplacesAnExistingFile) {
  const fs::path path = dir_ / "shard.00000.mds";
  Spit(path, "a much longer old content that must not survive in any part");
  ASSERT_TRUE(WriteFileAtomically(path, "new").ok());
  EXPECT_EQ(Slurp(path), "new");
  ASSERT_TRUE(WriteFileAtomically(path, std::string("\0\1", 2)).ok());
  EXPECT_EQ(Slurp(path), std::string("\0\1", 2));
  EXPECT_THAT(Listing(), ElementsAre("shard.00000.mds"));
}

TEST_F(FileUtilTest, WriteFileAtomicallyLeavesNoTemporaryFiles) {
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(WriteFileAtomically(dir_ / "a", std::to_string(i)).ok());
    ASSERT_TRUE(WriteFileAtomically(dir_ / "b", std::string(100 * i, 'x')).ok());
  }
  EXPECT_THAT(Listing(), ElementsAre("a", "b"));
  EXPECT_EQ(Slurp(dir_ / "a"), "19");
  EXPECT_EQ(Slurp(dir_ / "b"), std::string(1900, 'x'));
}

TEST_F(FileUtilTest, ALeftoverTemporaryIsNeverReusedNorInTheWay) {
  // A killed process leaves its temporary behind; the next writer must neither fail on it
  // (O_EXCL) nor write into it. The next few names this process would draw are taken here.
  const fs::path path = dir_ / "index.json";
  const std::string probe = TemporaryPathFor(path).string();
  const std::string prefix = probe.substr(0, probe.rfind('.') + 1);
  const uint64_t next = std::stoull(probe.substr(probe.rfind('.') + 1)) + 1;
  std::set<std::string> leftovers;
  for (uint64_t i = next; i < next + 5; ++i) {
    std::ofstream(prefix + std::to_string(i)) << "leftover";
    leftovers.insert(fs::path(prefix + std::to_string(i)).filename().string());
  }
  ASSERT_TRUE(WriteFileAtomically(path, "{}").ok());
  EXPECT_EQ(Slurp(path), "{}");
  for (const auto& name : leftovers) EXPECT_EQ(Slurp(dir_ / name), "leftover") << name;
  auto created = AtomicFile::Create(path);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(leftovers.count(created->temporary().filename().string()), 0u);
}

TEST_F(FileUtilTest, AnAtomicFileAppearsWholeOnCommitAndNotAtAllWithout) {
  const fs::path path = dir_ / "data.bin";
  {
    auto dropped = AtomicFile::Create(path);
    ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
    ASSERT_TRUE(dropped->Write("half of it").ok());
    EXPECT_TRUE(fs::exists(dropped->temporary()));
  }  // an error on the way: dropped uncommitted
  EXPECT_THAT(Listing(), IsEmpty());

  auto file = AtomicFile::Create(path, 0600);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_TRUE(file->Write("all ").ok());
  ASSERT_TRUE(file->Write("of it").ok());
  EXPECT_FALSE(fs::exists(path));
  ASSERT_TRUE(file->Commit().ok());
  EXPECT_EQ(Slurp(path), "all of it");
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_THAT(Listing(), ElementsAre("data.bin"));
  EXPECT_EQ(file->Write("more").code(), StatusCode::kFailedPrecondition);
}

TEST_F(FileUtilTest, TemporaryNamesCarryMoreThanThePid) {
  // A container restarted gets its pid again: pid and counter alone would repeat the names of
  // the run before, whose leftovers are still there.
  const std::string name = TemporaryPathFor(dir_ / "x").filename().string();
  EXPECT_THAT(name, ::testing::MatchesRegex("x\\.tmp\\." + std::to_string(::getpid()) +
                                            "\\.[0-9a-f]{8}\\.[0-9]+"));
}

TEST_F(FileUtilTest, WriteFileAtomicallyIntoAMissingFolderNamesThePath) {
  const fs::path path = dir_ / "missing" / "index.json";
  const Status s = WriteFileAtomically(path, "{}");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr(path.string()));
  EXPECT_FALSE(fs::exists(path));
  EXPECT_THAT(Listing(), IsEmpty());
}

TEST_F(FileUtilTest, WriteFileAtomicallyOverAFolderFailsAndCleansUp) {
  // The temporary is written fine, then the rename onto a directory fails: the temporary must
  // be removed and the directory left alone.
  const fs::path path = dir_ / "target";
  ASSERT_TRUE(fs::create_directory(path));
  const Status s = WriteFileAtomically(path, "data");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);  // EISDIR
  EXPECT_THAT(s.message(), HasSubstr(path.string()));
  EXPECT_THAT(s.message(), HasSubstr("rename"));
  EXPECT_TRUE(fs::is_directory(path));
  EXPECT_THAT(Listing(), ElementsAre("target"));
}

TEST_F(FileUtilTest, TemporaryPathForIsUniqueAndBesideThePath) {
  const fs::path path = dir_ / "shard.00000.mds";
  const fs::path a = TemporaryPathFor(path);
  const fs::path b = TemporaryPathFor(path);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.parent_path(), dir_);  // same folder, so the rename is atomic
  EXPECT_EQ(b.parent_path(), dir_);
  EXPECT_THAT(a.filename().string(),
              StartsWith("shard.00000.mds.tmp." + std::to_string(::getpid()) + "."));
  // A bare file name stays a bare file name (the current folder).
  EXPECT_FALSE(TemporaryPathFor("x.json").has_parent_path());
}

TEST_F(FileUtilTest, IsRegularFileFollowsLinksAndRefusesEverythingElse) {
  Spit(dir_ / "file", "x");
  fs::create_directory(dir_ / "folder");
  fs::create_symlink(dir_ / "file", dir_ / "link");
  fs::create_symlink(dir_ / "missing", dir_ / "dangling");
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0) << std::strerror(errno);
  EXPECT_TRUE(IsRegularFile(dir_ / "file"));
  EXPECT_TRUE(IsRegularFile(dir_ / "link"));
  EXPECT_FALSE(IsRegularFile(dir_ / "folder"));
  EXPECT_FALSE(IsRegularFile(dir_ / "dangling"));
  EXPECT_FALSE(IsRegularFile(dir_ / "fifo"));
  EXPECT_FALSE(IsRegularFile(dir_ / "missing"));
}

TEST_F(FileUtilTest, ReadFileToStringReadsEveryByte) {
  const std::string contents = BinaryBlob(3 * 65536 + 17);
  Spit(dir_ / "blob", contents);
  const Result<std::string> r = ReadFileToString(dir_ / "blob");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(*r, contents);
}

TEST_F(FileUtilTest, ReadFileToStringOfAnEmptyFile) {
  Spit(dir_ / "empty", "");
  const Result<std::string> r = ReadFileToString(dir_ / "empty");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(*r, "");
}

TEST_F(FileUtilTest, ReadFileToStringReadsFilesThatReportSizeZero) {
  // procfs files stat as empty but have contents: reading must go to end of file, not st_size.
  if (!fs::exists("/proc/self/status")) GTEST_SKIP() << "no procfs";
  const Result<std::string> r = ReadFileToString("/proc/self/status");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_THAT(*r, HasSubstr("Pid:"));
}

TEST_F(FileUtilTest, ReadFileToStringOfAMissingFileIsNotFound) {
  const fs::path path = dir_ / "no_such_file.json";
  const Result<std::string> r = ReadFileToString(path);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(r.error().message(), HasSubstr(path.string()));
}

TEST_F(FileUtilTest, ReadFileToStringOfAFolderIsAnError) {
  const Result<std::string> r = ReadFileToString(dir_);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.error().message(), HasSubstr(dir_.string()));
}

TEST_F(FileUtilTest, StatFileExtentFindsTheFirstUnwrittenRange) {
  const std::string contents = BinaryBlob(64 << 10);
  const fs::path whole = dir_ / "whole";
  Spit(whole, contents);
  const auto full = StatFileExtent(whole);
  ASSERT_TRUE(full.has_value()) << full.status().ToString();
  EXPECT_EQ(full->size, contents.size());
  EXPECT_EQ(full->first_hole, contents.size());

  // Allocated at full size, 2 MiB in the middle never written: zeros the file does not hold.
  // (Aligned to 2 MiB, so that a tmpfs with huge pages shows the same hole.)
  const std::string large = BinaryBlob(6 << 20);
  const fs::path holed = dir_ / "holed";
  ASSERT_TRUE(testing::WriteWithHole(holed, large, 2 << 20, 4 << 20));
  const auto partial = StatFileExtent(holed);
  ASSERT_TRUE(partial.has_value()) << partial.status().ToString();
  EXPECT_EQ(partial->size, large.size());
  EXPECT_EQ(partial->first_hole, uint64_t{2 << 20})
      << "expected on ext4, XFS, btrfs and tmpfs; TMPDIR is elsewhere?";

  Spit(dir_ / "empty", "");
  const auto empty = StatFileExtent(dir_ / "empty");
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->size, 0u);
  EXPECT_EQ(empty->first_hole, 0u);
}

TEST_F(FileUtilTest, StatFileExtentOfWhatIsNoRegularFileSaysSo) {
  const auto missing = StatFileExtent(dir_ / "missing");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.error().message(), HasSubstr((dir_ / "missing").string()));
  const auto folder = StatFileExtent(dir_);
  ASSERT_FALSE(folder.has_value());
  EXPECT_EQ(folder.error().code(), StatusCode::kInvalidArgument);
  // A FIFO under the name is refused, not waited on.
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto pipe = StatFileExtent(fifo);
  ASSERT_FALSE(pipe.has_value());
  EXPECT_EQ(pipe.error().code(), StatusCode::kInvalidArgument);
}

TEST(ErrnoToStatusTest, MessageNamesPathOperationAndReason) {
  const Status s = ErrnoToStatus(ENOENT, "open", "/data/index.json");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), std::string("/data/index.json: open failed: ") + std::strerror(ENOENT));
}

TEST(ErrnoToStatusTest, MapsErrnoToCanonicalCodes) {
  const std::pair<int, StatusCode> kCases[] = {
      {ENOENT, StatusCode::kNotFound},
      {ENOTDIR, StatusCode::kNotFound},
      {EACCES, StatusCode::kPermissionDenied},
      {EPERM, StatusCode::kPermissionDenied},
      {EROFS, StatusCode::kPermissionDenied},
      {ENOSPC, StatusCode::kResourceExhausted},
      {EDQUOT, StatusCode::kResourceExhausted},
      {EMFILE, StatusCode::kResourceExhausted},
      {ENFILE, StatusCode::kResourceExhausted},
      {ENOMEM, StatusCode::kResourceExhausted},
      {EEXIST, StatusCode::kAlreadyExists},
      {EINTR, StatusCode::kUnavailable},
      {EAGAIN, StatusCode::kUnavailable},
      {EIO, StatusCode::kUnavailable},
      {EISDIR, StatusCode::kInvalidArgument},
      {EINVAL, StatusCode::kInvalidArgument},
      {ENAMETOOLONG, StatusCode::kInvalidArgument},
      {EBADF, StatusCode::kInternal},
      {ENOSYS, StatusCode::kInternal},
      {EXDEV, StatusCode::kInternal},
  };
  for (const auto& [error_number, code] : kCases) {
    const Status s = ErrnoToStatus(error_number, "write", "f");
    EXPECT_EQ(s.code(), code) << std::strerror(error_number);
    EXPECT_THAT(s.message(), StartsWith("f: write failed: ")) << std::strerror(error_number);
  }
  // Only the transient ones are retried.
  EXPECT_TRUE(IsRetryable(ErrnoToStatus(EIO, "read", "f").code()));
  EXPECT_FALSE(IsRetryable(ErrnoToStatus(ENOSPC, "write", "f").code()));
}

// --- MappedFile ----------------------------------------------------------------------------

TEST_F(FileUtilTest, MappedFileMapsTheBytes) {
  const fs::path path = dir_ / "shard.00000.mds";
  const std::string contents = BinaryBlob(100'003);
  Spit(path, contents);
  Result<MappedFile> m = MappedFile::Open(path);
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  EXPECT_EQ(m->size(), contents.size());
  EXPECT_EQ(m->data(), contents);
  EXPECT_EQ(m->path(), path);
}

TEST_F(FileUtilTest, MappedFileOfAnEmptyFileIsAnEmptyView) {
  Spit(dir_ / "empty", "");
  Result<MappedFile> m = MappedFile::Open(dir_ / "empty");
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  EXPECT_EQ(m->size(), 0u);
  EXPECT_TRUE(m->data().empty());
}

TEST_F(FileUtilTest, MappedFileOutlivesTheFileName) {
  const fs::path path = dir_ / "gone";
  Spit(path, "still here");
  Result<MappedFile> m = MappedFile::Open(path);
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  fs::remove(path);
  EXPECT_EQ(m->data(), "still here");
}

TEST_F(FileUtilTest, MappedFileOfAMissingFileIsNotFound) {
  const fs::path path = dir_ / "missing.mds";
  Result<MappedFile> m = MappedFile::Open(path);
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(m.error().message(), HasSubstr(path.string()));
}

TEST_F(FileUtilTest, MappedFileOfAFolderIsInvalidArgument) {
  Result<MappedFile> m = MappedFile::Open(dir_);
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(m.error().message(), HasSubstr(dir_.string()));
}

TEST_F(FileUtilTest, MappedFileMoveConstructionTransfersTheMapping) {
  Spit(dir_ / "a", "alpha");
  Result<MappedFile> opened = MappedFile::Open(dir_ / "a");
  ASSERT_TRUE(opened.has_value()) << opened.error().ToString();
  MappedFile a = std::move(opened).value();
  const char* bytes = a.data().data();

  MappedFile b = std::move(a);
  EXPECT_EQ(b.data(), "alpha");
  EXPECT_EQ(b.data().data(), bytes);  // the same mapping, not a copy
  EXPECT_EQ(b.path(), dir_ / "a");
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): the moved-from state is defined
  EXPECT_TRUE(a.data().empty());
}

TEST_F(FileUtilTest, MappedFileMoveAssignmentReplacesTheMapping) {
  Spit(dir_ / "a", "alpha");
  Spit(dir_ / "b", "bravo!");
  Result<MappedFile> ra = MappedFile::Open(dir_ / "a");
  Result<MappedFile> rb = MappedFile::Open(dir_ / "b");
  ASSERT_TRUE(ra.has_value() && rb.has_value());
  MappedFile a = std::move(ra).value();
  MappedFile b = std::move(rb).value();

  a = std::move(b);  // a's old mapping is released, b's moves over
  EXPECT_EQ(a.data(), "bravo!");
  EXPECT_EQ(a.size(), 6u);
  EXPECT_EQ(a.path(), dir_ / "b");
  EXPECT_EQ(b.size(), 0u);  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(b.data().empty());

  MappedFile& alias = a;
  a = std::move(alias);  // self-move keeps the mapping
  EXPECT_EQ(a.data(), "bravo!");

  // A moved-from object can take a mapping again.
  b = std::move(a);
  EXPECT_EQ(b.data(), "bravo!");
}

}  // namespace
}  // namespace ferry
