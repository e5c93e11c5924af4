// ShardCache when things go wrong: killed downloads, corrupt shards and zips, digests, and
// kept compressed files.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <numeric>
#include <random>
#include <thread>

#include "base/boot_time.h"
#include "base/file_util.h"
#include "base/holed_file_testutil.h"
#include "base/temp_dir_testutil.h"
#include "cache/cache_layout.h"
#include "cache/cache_testutil.h"
#include "cache/digest_record.h"
#include "cache/download_digest.h"
#include "cache/file_lock.h"
#include "cache/shard_cache_fixture_testutil.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/format/merge_index.h"
#include "ferry/metrics/metrics.h"
#include "format/fixture_testutil.h"

namespace ferry {
namespace {

using namespace shard_cache_test;  // NOLINT: the fixture and its helpers

namespace fs = std::filesystem;
using ferry::ShardFile;
using internal_cache::CacheLayout;
using internal_cache::FileLock;
using internal_cache::LockMode;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

// A child downloading shard 0 from a slow remote is SIGKILLed once its temporary has bytes.
void KillMidDownload(const std::shared_ptr<ObjectStore>& slow, const DatasetDescription& index,
                     const std::string& prefix, const fs::path& cache, const fs::path& temporary) {
  testing::Children children;
  const pid_t child = children.Spawn([&]() -> int {
    auto opened = ShardCache::Open(slow, prefix, index, {.local = cache});
    if (!opened) return 3;
    return (*opened)->Acquire(0).has_value() ? 0 : 4;
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::error_code ec;
  while (!(fs::exists(temporary, ec) && fs::file_size(temporary, ec) > 0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  children.Kill(child);
  EXPECT_TRUE(fs::exists(temporary)) << "the download was not caught in the middle";
}

void ExpectRecoveryAfterKill(const DatasetDescription& index,
                             const std::shared_ptr<ObjectStore>& store, const std::string& prefix,
                             const fs::path& cache) {
  const CacheLayout layout(cache);
  const std::string& raw = index.shards[0].raw_data.basename;
  EXPECT_FALSE(fs::exists(layout.FilePath(raw)));
  // The locks died with the process.
  for (const fs::path& lock : {layout.DownloadLockPath(raw), layout.UseLockPath(raw)}) {
    auto tried = FileLock::TryLock(lock, LockMode::kExclusive);
    ASSERT_TRUE(tried.has_value());
    EXPECT_TRUE(tried->has_value()) << lock;
  }
  // A new process gets the shard, whole.
  testing::Children children;
  const pid_t child = children.Spawn([&]() -> int {
    auto opened = ShardCache::Open(store, prefix, index, {.local = cache});
    if (!opened) return 3;
    auto handle = (*opened)->Acquire(0);
    if (!handle) return 4;
    return testing::RawShardIsIntact(handle->path(), index.shards[0]) ? 0 : 5;
  });
  EXPECT_EQ(children.Wait(child, std::chrono::seconds(10)), 0);
  EXPECT_TRUE(testing::RawShardIsIntact(layout.FilePath(raw), index.shards[0]));
  EXPECT_THAT(Temporaries(cache), ::testing::IsEmpty());
}

TEST_F(ShardCacheTest, AKilledDownloadLeavesNoShardAndNoLock) {
  WriteRemote();
  const auto slow = Store({.chunk_bytes = 512, .chunk_delay = milliseconds(20)});
  const fs::path temporary = Cache() / (index_.shards[0].raw_data.basename + ".ferry-tmp");
  KillMidDownload(slow, index_, prefix_, Cache(), temporary);
  ExpectRecoveryAfterKill(index_, Store(), prefix_, Cache());
}

TEST_F(ShardCacheTest, AKilledCompressedDownloadLeavesNoShardAndNoLock) {
  WriteRemote({.compression = "zstd"});
  const auto slow = Store({.chunk_bytes = 512, .chunk_delay = milliseconds(20)});
  const fs::path temporary = Cache() / (index_.shards[0].zip_data->basename + ".ferry-tmp");
  KillMidDownload(slow, index_, prefix_, Cache(), temporary);
  EXPECT_FALSE(fs::exists(Cache() / index_.shards[0].zip_data->basename));
  ExpectRecoveryAfterKill(index_, Store(), prefix_, Cache());
}

void ExpectCorruptShardFails(ShardCache& cache, const DatasetDescription& index,
                             const fs::path& folder) {
  const ShardDescription& shard = index.shards[1];
  const FileInfo& fetched = shard.zip_data ? *shard.zip_data : shard.raw_data;
  const uint64_t failures = CounterValue("/ferry/cache/hash_failures");
  auto handle = cache.Acquire(1);
  ASSERT_FALSE(handle.has_value());
  EXPECT_EQ(handle.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(handle.error().message(), HasSubstr(fetched.basename));
  EXPECT_THAT(handle.error().message(), HasSubstr("xxh64"));
  EXPECT_EQ(CounterValue("/ferry/cache/hash_failures") - failures, 2u);
  EXPECT_FALSE(fs::exists(folder / shard.raw_data.basename));
  EXPECT_FALSE(fs::exists(folder / fetched.basename));
  EXPECT_THAT(Temporaries(folder), ::testing::IsEmpty());
  // The other shards are fine.
  auto other = cache.Acquire(0);
  ASSERT_TRUE(other.has_value()) << other.status().ToString();
  EXPECT_TRUE(testing::RawShardIsIntact(other->path(), index.shards[0]));
}

TEST_F(ShardCacheTest, ACorruptRemoteShardIsFetchedTwiceThenDataLoss) {
  WriteRemote();
  FlipByte(Remote() / Fetched(1).basename, Fetched(1).bytes / 2);
  auto cache = Open({.validate_hash = "xxh64"});
  ExpectCorruptShardFails(*cache, index_, Cache());
  EXPECT_EQ(Reads(Fetched(1).basename), 2);
}

TEST_F(ShardCacheTest, ACorruptRemoteCompressedShardIsFetchedTwiceThenDataLoss) {
  WriteRemote({.compression = "zstd"});
  FlipByte(Remote() / Fetched(1).basename, Fetched(1).bytes / 2);
  auto cache = Open({.keep_zip = true, .validate_hash = "xxh64"});
  ExpectCorruptShardFails(*cache, index_, Cache());
  EXPECT_EQ(Reads(Fetched(1).basename), 2);
}

TEST_F(ShardCacheTest, ValidateHashMustBeOneTheIndexHas) {
  WriteRemote({.hashes = {"sha1"}});
  auto missing =
      ShardCache::Open(Store(), prefix_, index_, {.local = Cache(), .validate_hash = "xxh64"});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.error().message(), HasSubstr("xxh64"));
  EXPECT_THAT(missing.error().message(), HasSubstr("shard.00000.mds"));
  auto unknown =
      ShardCache::Open(Store(), prefix_, index_, {.local = Cache(), .validate_hash = "crc99"});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.error().message(), HasSubstr("crc99"));
}

TEST_F(ShardCacheTest, GoodDigestsPass) {
  WriteRemote({.compression = "zstd"});
  const uint64_t failures = CounterValue("/ferry/cache/hash_failures");
  auto cache = Open({.validate_hash = "sha1"});
  for (size_t k = 0; k < index_.shards.size(); ++k) {
    auto handle = cache->Acquire(k);
    ASSERT_TRUE(handle.has_value()) << handle.status().ToString();
    EXPECT_TRUE(testing::RawShardIsIntact(handle->path(), index_.shards[k]));
  }
  EXPECT_EQ(CounterValue("/ferry/cache/hash_failures"), failures);
}

TEST_F(ShardCacheTest, KeepZipKeepsTheCompressedFileAndReusesIt) {
  WriteRemote({.compression = "zstd"});
  const ShardDescription& shard = index_.shards[0];
  auto store = Store();
  {
    auto plain = Open({.local = Cache() / "plain"}, store);
    ASSERT_TRUE(plain->Acquire(0).has_value());
    EXPECT_TRUE(fs::exists(Cache() / "plain" / shard.raw_data.basename));
    EXPECT_FALSE(fs::exists(Cache() / "plain" / shard.zip_data->basename));
  }
  const fs::path kept = Cache() / "kept";
  {
    auto cache = Open({.local = kept, .keep_zip = true}, store);
    ASSERT_TRUE(cache->Acquire(0).has_value());
    EXPECT_EQ(cache->DiskUsage(), shard.raw_data.bytes + shard.zip_data->bytes);
  }
  const int downloads = Reads(shard.zip_data->basename);
  EXPECT_EQ(downloads, 2);
  // The raw file goes (an eviction elsewhere, a user): the zip is decompressed, not fetched.
  fs::remove(kept / shard.raw_data.basename);
  {
    auto cache = Open({.local = kept, .keep_zip = true}, store);
    auto handle = cache->Acquire(0);
    ASSERT_TRUE(handle.has_value()) << handle.status().ToString();
    EXPECT_FALSE(handle->was_cached());
    EXPECT_TRUE(testing::RawShardIsIntact(handle->path(), shard));
    EXPECT_TRUE(fs::exists(kept / shard.zip_data->basename));
  }
  fs::remove(kept / shard.raw_data.basename);
  {
    auto cache = Open({.local = kept, .validate_hash = "xxh64"}, store);  // no keep_zip now
    auto handle = cache->Acquire(0);
    ASSERT_TRUE(handle.has_value()) << handle.status().ToString();
    EXPECT_TRUE(testing::RawShardIsIntact(handle->path(), shard));
    EXPECT_FALSE(fs::exists(kept / shard.zip_data->basename));
  }
  EXPECT_EQ(Reads(shard.zip_data->basename), downloads);
}

TEST_F(ShardCacheTest, ACorruptKeptZipIsReplacedByADownload) {
  WriteRemote({.compression = "zstd"});
  const ShardDescription& shard = index_.shards[0];
  auto store = Store();
  {
    auto cache = Open({.keep_zip = true}, store);
    ASSERT_TRUE(cache->Acquire(0).has_value());
  }
  fs::remove(Cache() / shard.raw_data.basename);
  FlipByte(Cache() / shard.zip_data->basename, 10);
  auto cache = Open({.keep_zip = true, .validate_hash = "xxh64"}, store);
  auto handle = cache->Acquire(0);
  ASSERT_TRUE(handle.has_value()) << handle.status().ToString();
  EXPECT_TRUE(testing::RawShardIsIntact(handle->path(), shard));
  EXPECT_EQ(Reads(shard.zip_data->basename), 2);
}

// A power cut may leave anything of an unflushed download the disk had not got: a short file, a
// hole, a block of other bytes, a damaged record. After the reboot each is caught by the file's
// digest record on first use and fetched again; a whole file is read once and trusted from then
// on, without a download.
TEST_F(ShardCacheTest, APowerCutsDamageIsFoundByTheDigestRecordAndFetchedAgain) {
  WriteRemote({.samples = 40, .sample_bytes = 20'000, .size_limit = 200'000});
  auto cache = Open();
  { ASSERT_TRUE(cache->Acquire(0).has_value()); }
  const fs::path raw = RawPath(0, Cache());
  const fs::path record = CacheLayout(Cache()).DigestPath(index_.shards[0].raw_data.basename);
  const auto contents = ReadFileToString(raw);
  ASSERT_TRUE(contents.has_value());
  {
    const auto written = internal_cache::ReadDigestRecord(record);
    ASSERT_TRUE(written.has_value() && written->has_value()) << record;
    EXPECT_EQ((*written)->bytes, contents->size());
    EXPECT_EQ((*written)->xxh3, internal_cache::DigestOf(*contents, ChecksumKind::kNone).xxh3);
    EXPECT_TRUE((*written)->verified_boot.empty());
  }
  const auto rewrite = [&](std::string bytes) {
    return WriteFileAtomically(raw, bytes, 0600).ok();
  };
  const std::vector<std::pair<std::string, std::function<bool()>>> damages = {
      {"short", [&] { return rewrite(contents->substr(0, contents->size() / 2)); }},
      {"one byte flipped",
       [&] {
         std::string bytes = *contents;
         bytes[bytes.size() / 3] ^= 0x10;
         return rewrite(std::move(bytes));
       }},
      {"a block of zeros",
       [&] {
         std::string bytes = *contents;
         std::fill_n(bytes.begin() + 8192, 4096, '\0');
         return rewrite(std::move(bytes));
       }},
      {"a hole", [&] { return testing::WriteWithHole(raw, *contents, 4096, 12288); }},
      {"a garbled record",
       [&] {
         fs::resize_file(record, 7);
         return true;
       }},
      {"no record... but not at the size",
       [&] {
         fs::remove(record);
         return rewrite(*contents + "x");
       }},
  };
  int reads = Reads("shard.00000.mds");
  const uint64_t damaged_before = CounterValue("/ferry/cache/damaged_copies");
  const uint64_t reverified_before = CounterValue("/ferry/cache/reverified_files");
  {
    const RebootedAfterThisTest rebooted;
    for (const auto& [name, damage] : damages) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(damage());
      auto again = cache->Acquire(0);
      ASSERT_TRUE(again.has_value()) << again.status().ToString();
      EXPECT_FALSE(again->was_cached());
      EXPECT_EQ(Reads("shard.00000.mds"), ++reads);
      EXPECT_EQ(ReadFileToString(raw).value_or(""), *contents);
      EXPECT_TRUE(fs::exists(record));
    }
    EXPECT_EQ(CounterValue("/ferry/cache/damaged_copies") - damaged_before, damages.size());
    EXPECT_EQ(CounterValue("/ferry/cache/reverified_files"), reverified_before);

    // Whole, and written before the (simulated) boot: read once, not fetched, noted.
    EXPECT_TRUE(cache->IsLocal(0));
    for (int use = 0; use < 3; ++use) {
      auto hit = cache->Acquire(0);
      ASSERT_TRUE(hit.has_value()) << hit.status().ToString();
      EXPECT_TRUE(hit->was_cached());
    }
    EXPECT_EQ(Reads("shard.00000.mds"), reads);
    EXPECT_EQ(CounterValue("/ferry/cache/reverified_files") - reverified_before, 1u);
    const auto noted = internal_cache::ReadDigestRecord(record);
    ASSERT_TRUE(noted.has_value() && noted->has_value());
    EXPECT_EQ((*noted)->verified_boot, BootId());
  }
  // Evicted, the record goes with the file.
  ASSERT_TRUE(cache->Evict(0).has_value());
  EXPECT_FALSE(fs::exists(raw));
  EXPECT_FALSE(fs::exists(record));
}

// Every raw file gets a record: companions, and files decompressed from a zip.
TEST_F(ShardCacheTest, EveryRawFileItWritesGetsADigestRecord) {
  WriteRemote({.compression = "zstd"});
  auto cache = Open();
  ASSERT_TRUE(cache->Acquire(1).has_value());
  const CacheLayout layout(Cache());
  for (const ShardFile& file : index_.shards[1].files()) {
    const auto record = internal_cache::ReadDigestRecord(layout.DigestPath(file.raw->basename));
    ASSERT_TRUE(record.has_value() && record->has_value()) << file.raw->basename;
    const auto contents = ReadFileToString(layout.FilePath(file.raw->basename));
    ASSERT_TRUE(contents.has_value());
    EXPECT_EQ((*record)->xxh3, internal_cache::DigestOf(*contents, ChecksumKind::kNone).xxh3);
  }
  // With digest_records off, none (and none of an earlier copy survives a download).
  ASSERT_TRUE(cache->Evict(1).has_value());
  auto plain = Open({.digest_records = false});
  ASSERT_TRUE(plain->Acquire(1).has_value());
  EXPECT_FALSE(fs::exists(layout.DigestPath(index_.shards[1].raw_data.basename)));
}

// A body damaged on the way, which the store's free MD5 catches: fetched again, and counted.
TEST_F(ShardCacheTest, ADownloadThatDisagreesWithTheStoresMd5IsFetchedAgain) {
  WriteRemote();
  Store();  // sets prefix_
  const auto md5_of = [&](size_t k) {
    const auto contents = ReadFileToString(Remote() / index_.shards[k].raw_data.basename);
    return internal_cache::DigestOf(contents.value_or(""), ChecksumKind::kMd5).checksum;
  };
  std::map<std::string, std::string> md5;
  std::map<std::string, size_t> shard_of;
  for (size_t k = 0; k < 2; ++k) {
    md5[prefix_ + "/" + index_.shards[k].raw_data.basename] = md5_of(k);
    shard_of[prefix_ + "/" + index_.shards[k].raw_data.basename] = k;
  }
  std::atomic<int> bodies{0};
  auto store = Store({.md5 = [&](std::string_view key) { return md5[std::string(key)]; },
                      .mangle =
                          [&](std::string_view key, uint64_t offset, std::string& bytes) {
                            if (offset != 0) return;
                            // Shard 0's first body, and every body of shard 1, each differently.
                            const int body = bodies.fetch_add(1);
                            if (shard_of[std::string(key)] == 1 || body == 0) {
                              bytes[static_cast<size_t>(body) % bytes.size()] ^= 1;
                            }
                          }});
  const uint64_t checked = CounterValue("/ferry/cache/checksummed_downloads");
  const uint64_t failed = CounterValue("/ferry/cache/checksum_failures");
  auto cache = Open({}, store);
  auto handle = cache->Acquire(0);
  ASSERT_TRUE(handle.has_value()) << handle.status().ToString();
  EXPECT_EQ(
      internal_cache::DigestOf(ReadFileToString(handle->path()).value_or(""), ChecksumKind::kMd5)
          .checksum,
      md5_of(0));
  EXPECT_EQ(Reads(index_.shards[0].raw_data.basename), 2);
  EXPECT_EQ(CounterValue("/ferry/cache/checksum_failures") - failed, 1u);
  EXPECT_EQ(CounterValue("/ferry/cache/checksummed_downloads") - checked, 1u);

  // Damaged every time, differently each time (the way's fault, not the object's): downloaded
  // 6 times, then a clear error naming the object and both digests, and nothing left.
  auto failing = cache->Acquire(1);
  ASSERT_FALSE(failing.has_value());
  EXPECT_EQ(failing.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(failing.status().message(), HasSubstr(index_.shards[1].raw_data.basename));
  EXPECT_THAT(failing.status().message(), HasSubstr("the store sent test " + md5_of(1)));
  EXPECT_THAT(failing.status().message(), HasSubstr("(downloaded 6 times)"));
  EXPECT_FALSE(cache->IsLocal(1));
  EXPECT_EQ(Reads(index_.shards[1].raw_data.basename), 6);
}

// A "checksum" that is not the object's MD5 (an S3-compatible store's ETag that only looks like
// one): two downloads agree with each other and not with it, so it is what is wrong - the bytes
// are kept, and the header is not checked again.
TEST_F(ShardCacheTest, AStoreChecksumThatIsNotTheObjectsMd5IsDroppedAfterTwoAgreeingDownloads) {
  WriteRemote();
  auto store = Store({.md5 = [](std::string_view) { return std::string(32, 'a'); }});
  auto cache = Open({}, store);
  auto first = cache->Acquire(0);
  ASSERT_TRUE(first.has_value()) << first.status().ToString();
  EXPECT_EQ(Reads(index_.shards[0].raw_data.basename), 2);
  ASSERT_TRUE(cache->Acquire(1).has_value());
  EXPECT_EQ(Reads(index_.shards[1].raw_data.basename), 1);  // not checked any more
  // Off altogether: one download each.
  auto unchecked = Open({.local = tmp_ / "other", .store_checksums = false}, store);
  ASSERT_TRUE(unchecked->Acquire(2).has_value());
  EXPECT_EQ(Reads(index_.shards[2].raw_data.basename), 1);
}

// S3 sends its CRCs only with replies of whole objects: a shard that comes in ranged parts
// without one, after small whole ones that came with one, is not suspect - it is downloaded
// once. A whole one without, after those, is (its header may have been damaged on the way).
TEST_F(ShardCacheTest, AChecksumIsExpectedOnlyOfDownloadsOfTheShapeThatCarriedOne) {
  WriteRemote({.samples = 70, .sample_bytes = 4000, .size_limit = 64 << 10});
  const size_t last = index_.shards.size() - 1;
  ASSERT_LT(ShardBytes(last), ShardBytes(0));
  Store();  // sets prefix_
  const std::string last_key = prefix_ + "/" + index_.shards[last].raw_data.basename;
  const std::string crc =
      internal_cache::DigestOf(
          ReadFileToString(Remote() / index_.shards[last].raw_data.basename).value_or(""),
          ChecksumKind::kCrc64Nvme)
          .checksum;
  auto store = Store({.checksum = [&](std::string_view key, const ByteRange& range) {
    if (range.offset != 0 || range.length || key != last_key) return ObjectChecksum{};
    return ObjectChecksum{.kind = ChecksumKind::kCrc64Nvme, .hex = crc, .from = "test"};
  }});
  // The full shards are fetched in 4 parts, the last (smaller) one whole.
  auto cache = Open({.parallel_part_threshold = ShardBytes(0), .download_parts = 4}, store);
  const uint64_t checked = CounterValue("/ferry/cache/checksummed_downloads");
  ASSERT_TRUE(cache->Acquire(last).has_value());
  EXPECT_EQ(Reads(index_.shards[last].raw_data.basename), 1);
  EXPECT_EQ(CounterValue("/ferry/cache/checksummed_downloads") - checked, 1u);
  ASSERT_TRUE(cache->Acquire(0).has_value());
  EXPECT_EQ(Reads(index_.shards[0].raw_data.basename), 4) << "one download, in 4 parts";
  // Whole, and without the checksum whole replies have carried: downloaded again to compare.
  auto whole = Open({.local = tmp_ / "whole"}, store);
  ASSERT_TRUE(whole->Acquire(last).has_value());
  ASSERT_TRUE(whole->Acquire(1).has_value());
  EXPECT_EQ(Reads(index_.shards[1].raw_data.basename), 2);
}

}  // namespace
}  // namespace ferry

namespace ferry::shard_cache_test {
namespace {

// A full disk, as this machine can make one without privileges: a file size limit in a child
// process (writes past it fail with EFBIG, as they would with ENOSPC). The download fails with
// an error naming the shard's file, and leaves neither a shard nor a temporary behind; with
// the room back, the same cache fetches it.
TEST_F(ShardCacheTest, AFullDiskIsAClearErrorAndLeavesNothingBehind) {
  WriteRemote({.samples = 80, .sample_bytes = 4000, .size_limit = 64 << 10});
  const auto store = Store();  // (sets prefix_)
  testing::Children children;
  testing::Pipe report;
  const pid_t child = children.Spawn([&] {
    report.CloseRead();
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{.rlim_cur = 16 << 10, .rlim_max = 16 << 10};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 10;
    auto cache = ShardCache::Open(store, prefix_, index_, {.local = Cache()});
    if (!cache) return 11;
    auto handle = (*cache)->Acquire(0);
    if (handle) return 12;
    const std::string message = handle.error().message();
    (void)!::write(report.write_fd(), message.data(), message.size());
    return 0;
  });
  report.CloseWrite();
  std::string message;
  char buffer[512];
  for (ssize_t n; (n = ::read(report.read_fd(), buffer, sizeof buffer)) > 0;) {
    message.append(buffer, static_cast<size_t>(n));
  }
  ASSERT_EQ(children.Wait(child), 0) << "the download must fail past the size limit";
  EXPECT_THAT(message, HasSubstr(index_.shards[0].raw_data.basename));
  EXPECT_THAT(message, HasSubstr("too large"));  // EFBIG's text; ENOSPC names itself likewise
  EXPECT_FALSE(fs::exists(Cache() / index_.shards[0].raw_data.basename));
  EXPECT_THAT(Temporaries(Cache()), ::testing::IsEmpty());
  auto cache = Open();
  auto handle = cache->Acquire(0);
  ASSERT_TRUE(handle.has_value()) << handle.status().ToString();
  EXPECT_TRUE(testing::RawShardIsIntact(handle->path(), index_.shards[0]));
}

// A disk that fills before the cache_limit does (here there is none): what the schedule allows
// is evicted to make room on the disk, and the download goes on. When nothing may go (every
// shard pinned), a clear error names the folder, the free space and the cache_limit that would
// fit, and nothing partial is left. The disk is a tmpfs of four shards' size, mounted in the
// child's own mount namespace.
TEST_F(ShardCacheTest, AFullDiskEvictsToMakeRoomOrSaysWhatWouldFit) {
  WriteRemote({.samples = 160, .sample_bytes = 4000, .size_limit = 64 << 10});
  ASSERT_GE(index_.shards.size(), 8u);
  const auto store = Store();  // (sets prefix_)
  const fs::path disk = tmp_ / "tiny-disk";
  fs::create_directories(disk);
  testing::Children children;
  testing::Pipe report;
  const pid_t child = children.Spawn([&]() -> int {
    report.CloseRead();
    const auto say = [&](const std::string& text) {
      (void)!::write(report.write_fd(), text.data(), text.size());
    };
    if (std::string why = testing::MountTinyTmpfs(disk, 4 * ShardBytes(0)); !why.empty()) {
      say(why);
      return 20;
    }
    const fs::path folder = disk / "cache";
    auto cache = ShardCache::Open(store, prefix_, index_, {.local = folder});
    if (!cache) {
      say(cache.status().ToString());
      return 11;
    }
    const uint64_t evicted = CounterValue("/ferry/cache/evictions");
    for (size_t k = 0; k < index_.shards.size(); ++k) {  // one at a time
      auto handle = (*cache)->Acquire(k);
      if (!handle || !testing::RawShardIsIntact(handle->path(), index_.shards[k])) {
        say(fmt::format("shard {}: {}", k, handle ? "damaged" : handle.status().ToString()));
        return 12;
      }
    }
    if (CounterValue("/ferry/cache/evictions") == evicted) return 13;  // the disk never filled
    std::vector<ShardHandle> held;  // now every shard pinned, until the disk is full
    for (size_t k = 0; k < index_.shards.size(); ++k) {
      auto handle = (*cache)->Acquire(k);
      if (handle) {
        held.push_back(std::move(*handle));
        continue;
      }
      if (!Temporaries(folder).empty()) return 14;
      if (fs::exists(folder / index_.shards[k].raw_data.basename)) return 15;
      say(handle.status().ToString());
      return 0;
    }
    return 16;  // never full
  });
  report.CloseWrite();
  std::string message;
  char buffer[1024];
  for (ssize_t n; (n = ::read(report.read_fd(), buffer, sizeof buffer)) > 0;) {
    message.append(buffer, static_cast<size_t>(n));
  }
  const int code = children.Wait(child);
  if (code == 20) GTEST_SKIP() << "no tmpfs to be had here: " << message;
  ASSERT_EQ(code, 0) << message;
  EXPECT_THAT(message, HasSubstr("RESOURCE_EXHAUSTED"));
  EXPECT_THAT(message, HasSubstr((disk / "cache").string() + ": the disk is full fetching"));
  EXPECT_THAT(message, HasSubstr("free of"));
  EXPECT_THAT(message, HasSubstr("A cache_limit of at most"));
}

}  // namespace
}  // namespace ferry::shard_cache_test
