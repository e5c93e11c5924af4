// Random access (Get, `ds[i]`) of samples whose shards are not local: read by range, not by
// fetching whole shards - until a shard is walked, or download_on_access asks for shards.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "base/temp_dir_testutil.h"
#include "ferry/format/mds_writer.h"
#include "ferry/storage/registry.h"
#include "ferry/stream/streaming_dataset.h"
#include "storage/forwarding_store_testutil.h"
#include "stream/stream_testutil.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;

// Every read of "logfile:///abs/path": its key and range.
struct LoggedRead {
  std::string key;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
};
std::mutex log_mu;
std::vector<LoggedRead> read_log;

class LoggingStore : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    {
      std::lock_guard lock(log_mu);
      read_log.push_back({std::string(key), range.offset, range.length});
    }
    return inner().Read(key, range, sink);
  }
};

Result<StoreAndKey> OpenLoggingStore(std::string_view url) {
  return testing::OpenWrapped<LoggingStore>(url, "log");
}
const StoreRegistration kLoggingStore("logfile", &OpenLoggingStore);

constexpr uint64_t kSamplesPerShard = 50;
constexpr uint64_t kShards = 12;
constexpr uint64_t kAllSamples = kShards * kSamplesPerShard;
constexpr uint64_t kRecordBlob = 2000;

std::string BlobOf(uint64_t i) { return std::string(kRecordBlob, static_cast<char>('a' + i % 26)); }

class RangedGetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto writer = MdsWriter::Create({.out = tmp_ / "remote",
                                     .columns = {{"id", "int"}, {"blob", "bytes"}},
                                     .size_limit = 300 + kSamplesPerShard * (kRecordBlob + 16)})
                      .value();
    for (uint64_t i = 0; i < kAllSamples; ++i) {
      const Value values[] = {Value(Bytes{BlobOf(i)}), Value(static_cast<int64_t>(i))};
      ASSERT_TRUE(writer->WriteValues(values).ok());
    }
    ASSERT_TRUE(writer->Finish().has_value());
    std::lock_guard lock(log_mu);
    read_log.clear();
  }

  std::shared_ptr<StreamingDataset> Open(bool download_on_access) {
    StreamingOptions o;
    o.streams = {
        {.remote = "logfile://" + (tmp_ / "remote").string(), .local = (tmp_ / "cache").string()}};
    o.download_on_access = download_on_access;
    auto ds = StreamingDataset::Open(o);
    EXPECT_TRUE(ds.has_value()) << ds.status().ToString();
    return ds.value_or(nullptr);
  }

  static void ExpectSample(StreamingDataset& ds, uint64_t id) {
    auto s = ds.Get(id, {});
    ASSERT_TRUE(s.has_value()) << s.status().ToString();
    EXPECT_EQ(s->id, id);
    EXPECT_EQ(testing::SampleId(*s), static_cast<int64_t>(id));
    EXPECT_EQ(s->fields[0], BlobOf(id));
  }

  // The reads of shard files so far: whole ones (no length, or the whole file) and the rest.
  struct ShardReads {
    int whole = 0;
    int ranged = 0;
    uint64_t ranged_bytes = 0;
  };
  ShardReads CountShardReads() {
    ShardReads out;
    std::lock_guard lock(log_mu);
    for (const LoggedRead& r : read_log) {
      if (!r.key.ends_with(".mds")) continue;
      const uint64_t size = fs::file_size(tmp_ / "remote" / fs::path(r.key).filename());
      if (!r.length || (r.offset == 0 && *r.length >= size)) {
        ++out.whole;
      } else {
        ++out.ranged;
        out.ranged_bytes += *r.length;
      }
    }
    return out;
  }

  size_t ShardFilesInCache() const {
    size_t n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(tmp_ / "cache", ec)) {
      n += e.path().extension() == ".mds";
    }
    return n;
  }

  ferry::testing::TempDir tmp_;
};

TEST_F(RangedGetTest, RandomAccessReadsSamplesByRangeWithoutWholeShards) {
  auto ds = Open(false);
  ASSERT_NE(ds, nullptr);
  // A sample of each of nine shards, out of order.
  const std::vector<uint64_t> ids = {450, 3, 199, 260, 599, 57, 333, 401, 100};
  for (const uint64_t id : ids) ExpectSample(*ds, id);
  const ShardReads reads = CountShardReads();
  EXPECT_EQ(reads.whole, 0);
  // One offset table per shard, then one request per sample.
  EXPECT_EQ(reads.ranged, 2 * static_cast<int>(ids.size()));
  EXPECT_LT(reads.ranged_bytes, ids.size() * (4 + 4 * (kSamplesPerShard + 1) + kRecordBlob + 100));
  EXPECT_EQ(ShardFilesInCache(), 0u);
}

TEST_F(RangedGetTest, AWalkedShardIsFetchedWhole) {
  auto ds = Open(false);
  ASSERT_NE(ds, nullptr);
  for (uint64_t id = 0; id < kRangedGetsPerShard; ++id) ExpectSample(*ds, id);
  EXPECT_EQ(CountShardReads().whole, 0);
  for (uint64_t id = kRangedGetsPerShard; id < kSamplesPerShard; ++id) ExpectSample(*ds, id);
  const ShardReads reads = CountShardReads();
  EXPECT_EQ(reads.whole, 1);
  EXPECT_EQ(reads.ranged, 1 + static_cast<int>(kRangedGetsPerShard));
  EXPECT_EQ(ShardFilesInCache(), 1u);
}

TEST_F(RangedGetTest, DownloadOnAccessFetchesTheShardAtTheFirstSample) {
  auto ds = Open(true);
  ASSERT_NE(ds, nullptr);
  ExpectSample(*ds, 450);
  ExpectSample(*ds, 451);
  const ShardReads reads = CountShardReads();
  EXPECT_EQ(reads.whole, 1);
  EXPECT_EQ(reads.ranged, 0);
  EXPECT_EQ(ShardFilesInCache(), 1u);
}

// A shard whose offset table does not describe it is refused by name, not read wrong.
TEST_F(RangedGetTest, ACorruptOffsetTableIsAnErrorNamingTheShard) {
  auto ds = Open(false);
  ASSERT_NE(ds, nullptr);
  {
    // Sample 1's offset points before sample 0's.
    std::fstream shard(tmp_ / "remote" / "shard.00001.mds",
                       std::ios::in | std::ios::out | std::ios::binary);
    shard.seekp(8);
    const char zero[4] = {0, 0, 0, 0};
    shard.write(zero, 4);
  }
  auto s = ds->Get(kSamplesPerShard + 5, {});
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.status().code(), StatusCode::kDataLoss) << s.status().ToString();
  EXPECT_NE(s.status().message().find("shard.00001.mds"), std::string::npos)
      << s.status().ToString();
}

}  // namespace
}  // namespace ferry
