#include "cache/shard_downloader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <set>
#include <sstream>
#include <stop_token>
#include <thread>

#include "base/crc.h"
#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "cache/cache_testutil.h"
#include "format/fixture_testutil.h"

namespace ferry::internal_cache {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string RandomBytes(size_t n) {
  std::mt19937_64 random(7);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(random());
  return out;
}

class DownloadToFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(tmp_ / "remote");
    data_ = RandomBytes(100'003);
    ASSERT_TRUE(WriteFileAtomically(tmp_ / "remote" / "blob", data_).ok());
    remote_ = testing::LocalRemote(tmp_ / "remote");
  }
  std::shared_ptr<testing::TestStore> Store(testing::TestStoreOptions options = {}) {
    options.log = tmp_ / "reads.log";
    return std::make_shared<testing::TestStore>(remote_.store, std::move(options));
  }
  std::string Key() const { return remote_.key + "/blob"; }
  fs::path Tmp() const { return tmp_ / "blob.ferry-tmp"; }

  testing::TempDir tmp_;
  std::string data_;
  StoreAndKey remote_;
};

TEST(CheckDownloadParts, AcceptsOneToTheMostAndNamesTheRange) {
  EXPECT_TRUE(CheckDownloadParts(1).ok());
  EXPECT_TRUE(CheckDownloadParts(kMaxDownloadParts).ok());
  for (uint32_t parts : {0u, kMaxDownloadParts + 1}) {
    const Status status = CheckDownloadParts(parts);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), ::testing::HasSubstr("download_parts must be 1 to 64"));
  }
}

TEST_F(DownloadToFileTest, SmallObjectsComeInOneRead) {
  auto store = Store();
  ASSERT_TRUE(DownloadToFile(*store, Key(), Tmp(), data_.size(), {}).ok());
  EXPECT_EQ(testing::FileText(Tmp()), data_);
  EXPECT_EQ(testing::CountLogged(tmp_ / "reads.log")[Key()], 1);
}

TEST_F(DownloadToFileTest, LargeObjectsComeInRangedPartsWrittenAtTheirOffsets) {
  auto store = Store({.chunk_bytes = 4096});  // parts arrive interleaved
  ASSERT_TRUE(DownloadToFile(*store, Key(), Tmp(), data_.size(),
                             {.parallel_part_threshold = 50'000, .download_parts = 4})
                  .ok());
  EXPECT_EQ(testing::FileText(Tmp()), data_);
  // No HEAD first: the parts' own responses say the object's size and version.
  EXPECT_EQ(testing::CountLogged(tmp_ / "reads.log", "head")[Key()], 0);
  std::ifstream log(tmp_ / "reads.log");
  std::string op, key, length;
  uint64_t offset;
  std::set<uint64_t> offsets;
  while (log >> op >> key) {
    if (op != "read") continue;
    log >> offset >> length;
    offsets.insert(offset);
    EXPECT_EQ(length, offset == 75'003 ? "25000" : "25001");
  }
  EXPECT_EQ(offsets, (std::set<uint64_t>{0, 25'001, 50'002, 75'003}));
}

TEST_F(DownloadToFileTest, MorePartsThanBytesIsFine) {
  ASSERT_TRUE(WriteFileAtomically(tmp_ / "remote" / "blob", "abc").ok());
  auto store = Store();
  ASSERT_TRUE(
      DownloadToFile(*store, Key(), Tmp(), 3, {.parallel_part_threshold = 1, .download_parts = 8})
          .ok());
  EXPECT_EQ(testing::FileText(Tmp()), "abc");
}

TEST_F(DownloadToFileTest, ASizeOtherThanTheIndexSaysIsDataLossAndLeavesNothing) {
  auto store = Store();
  for (const PartOptions& parts :
       {PartOptions{}, PartOptions{.parallel_part_threshold = 1, .download_parts = 3}}) {
    for (const uint64_t expected : {data_.size() - 1, data_.size() + 1}) {
      const Status status = DownloadToFile(*store, Key(), Tmp(), expected, parts).status();
      EXPECT_EQ(status.code(), StatusCode::kDataLoss) << status.ToString();
      EXPECT_THAT(status.message(), HasSubstr("remote/blob"));
      EXPECT_FALSE(fs::exists(Tmp()));
    }
  }
}

TEST_F(DownloadToFileTest, AFailingPartFailsTheDownloadWithItsOwnError) {
  auto store = Store({.chunk_bytes = 1024,
                      .chunk_delay = std::chrono::microseconds(500),
                      .fail_read = [](std::string_view, const ByteRange& range) -> Status {
                        if (range.offset > 0 && range.offset < 30'000) {
                          return PermissionDeniedError("injected failure");
                        }
                        return Status::Ok();
                      }});
  const Status status = DownloadToFile(*store, Key(), Tmp(), data_.size(),
                                       {.parallel_part_threshold = 1, .download_parts = 4})
                            .status();
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied) << status.ToString();
  EXPECT_FALSE(fs::exists(Tmp()));
}

TEST_F(DownloadToFileTest, AStopRequestEndsEveryPartAndLeavesNothing) {
  // 100 KB in 4 parts of 1 KB pieces 100 ms apart: 2.5 s a part, were they let run.
  auto store = Store({.chunk_bytes = 1024, .chunk_delay = std::chrono::milliseconds(100)});
  std::stop_source stop;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    stop.request_stop();
  });
  const auto start = std::chrono::steady_clock::now();
  const Status status =
      DownloadToFile(*store, Key(), Tmp(), data_.size(),
                     {.parallel_part_threshold = 1, .download_parts = 4}, stop.get_token())
          .status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
  EXPECT_EQ(status.code(), StatusCode::kCancelled) << status.ToString();
  EXPECT_THAT(status.message(), ::testing::HasSubstr("stopped")) << status.ToString();
  EXPECT_FALSE(fs::exists(Tmp()));
}

TEST_F(DownloadToFileTest, AMissingObjectIsNotFound) {
  auto store = Store();
  const Status status = DownloadToFile(*store, remote_.key + "/nope", Tmp(), 10, {}).status();
  EXPECT_EQ(status.code(), StatusCode::kNotFound) << status.ToString();
  EXPECT_FALSE(fs::exists(Tmp()));
}

TEST_F(DownloadToFileTest, ExistingTemporaryIsNotOverwritten) {
  // Removing leftovers is the caller's job, done under the download lock.
  ASSERT_TRUE(WriteFileAtomically(Tmp(), "stale").ok());
  auto store = Store();
  EXPECT_EQ(DownloadToFile(*store, Key(), Tmp(), data_.size(), {}).status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(testing::FileText(Tmp()), "stale");
}

// The digests follow the bytes as they land, in file order, whichever order the parts land in.
TEST_F(DownloadToFileTest, DigestsTheBytesInFileOrderWhateverOrderThePartsLandIn) {
  const FileDigests want = DigestOf(data_, ChecksumKind::kMd5);
  ASSERT_EQ(want.checksum.size(), 32u);
  for (const uint32_t parts : {1u, 3u, 8u}) {
    for (const bool md5_expected : {true, false}) {
      SCOPED_TRACE(fmt::format("{} parts, md5 expected {}", parts, md5_expected));
      const ChecksumKind expected = md5_expected ? ChecksumKind::kMd5 : ChecksumKind::kCrc32c;
      fs::remove(Tmp());
      // Later parts land faster than earlier ones: the follower waits at part 0.
      auto store = Store({.chunk_bytes = 997,
                          .chunk_delay = std::chrono::microseconds(200),
                          .md5 = [](std::string_view) { return std::string("given"); }});
      auto got = DownloadToFile(*store, Key(), Tmp(), data_.size(),
                                {.parallel_part_threshold = 1, .download_parts = parts}, {}, {},
                                {.digest = true,
                                 .store_checksum = true,
                                 .expected_whole = expected,
                                 .expected_ranged = expected});
      ASSERT_TRUE(got.has_value()) << got.status().ToString();
      ASSERT_TRUE(got->digests.has_value());
      EXPECT_EQ(got->digests->xxh3, want.xxh3);
      // Computed on the way, or in one more pass once the store turned out to send one.
      EXPECT_EQ(got->digests->checksum_kind, ChecksumKind::kMd5);
      EXPECT_EQ(got->digests->checksum, want.checksum);
      EXPECT_EQ(got->store_checksum.hex, "given");
      EXPECT_EQ(got->store_checksum.from, "test");
      EXPECT_EQ(got->ranged, parts > 1);
      EXPECT_EQ(testing::FileText(Tmp()), data_);
    }
  }
}

// The CRCs S3 and GCS keep, computed as the bytes land (or after, when another kind came) and
// spelled as the stores send them: big-endian hex.
TEST_F(DownloadToFileTest, ComputesTheStoresCrcOnTheWayOrAfter) {
  const std::vector<std::pair<ChecksumKind, std::string>> crcs = {
      {ChecksumKind::kCrc32, fmt::format("{:08x}", Crc32(0, data_))},
      {ChecksumKind::kCrc32c, fmt::format("{:08x}", Crc32c(0, data_))},
      {ChecksumKind::kCrc64Nvme, fmt::format("{:016x}", Crc64Nvme(0, data_))}};
  for (const auto& [kind, hex] : crcs) {
    for (const uint32_t parts : {1u, 4u}) {
      for (const ChecksumKind expected : {kind, ChecksumKind::kMd5}) {
        SCOPED_TRACE(fmt::format("{} in {} parts, {} expected", ChecksumName(kind), parts,
                                 ChecksumName(expected)));
        fs::remove(Tmp());
        auto store =
            Store({.chunk_bytes = 4093, .checksum = [&](std::string_view, const ByteRange&) {
                     return ObjectChecksum{.kind = kind, .hex = hex, .from = "test"};
                   }});
        auto got = DownloadToFile(
            *store, Key(), Tmp(), data_.size(),
            {.parallel_part_threshold = 1, .download_parts = parts}, {}, {},
            {.store_checksum = true, .expected_whole = expected, .expected_ranged = expected});
        ASSERT_TRUE(got.has_value()) << got.status().ToString();
        ASSERT_TRUE(got->digests.has_value());
        EXPECT_EQ(got->digests->checksum_kind, kind);
        EXPECT_EQ(got->digests->checksum, hex);
        EXPECT_EQ(got->store_checksum.kind, kind);
      }
    }
  }
}

TEST_F(DownloadToFileTest, NoChecksAskedForDigestsNothing) {
  auto got = DownloadToFile(*Store(), Key(), Tmp(), data_.size(), {});
  ASSERT_TRUE(got.has_value()) << got.status().ToString();
  EXPECT_FALSE(got->digests.has_value());
  // MD5 only where the store sends one to check.
  fs::remove(Tmp());
  got = DownloadToFile(*Store(), Key(), Tmp(), data_.size(), {}, {}, {},
                       {.digest = true, .store_checksum = true});
  ASSERT_TRUE(got.has_value()) << got.status().ToString();
  ASSERT_TRUE(got->digests.has_value());
  EXPECT_EQ(got->digests->xxh3, DigestOf(data_, ChecksumKind::kNone).xxh3);
  EXPECT_TRUE(got->digests->checksum.empty());
}

TEST_F(DownloadToFileTest, AFailedDownloadStopsItsDigestAndLeavesNothing) {
  auto store = Store({.chunk_bytes = 1024,
                      .chunk_delay = std::chrono::microseconds(300),
                      .fail_read = [](std::string_view, const ByteRange& range) -> Status {
                        if (range.offset > 0) return UnavailableError("injected failure");
                        return Status::Ok();
                      }});
  const auto got = DownloadToFile(*store, Key(), Tmp(), data_.size(),
                                  {.parallel_part_threshold = 1, .download_parts = 4}, {}, {},
                                  {.digest = true,
                                   .store_checksum = true,
                                   .expected_whole = ChecksumKind::kMd5,
                                   .expected_ranged = ChecksumKind::kMd5});
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable) << got.status().ToString();
  EXPECT_FALSE(fs::exists(Tmp()));
}

}  // namespace
}  // namespace ferry::internal_cache
