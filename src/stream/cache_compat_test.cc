// The cache as Mosaic Streaming users see it: cache_limit counts index.json and is checked at
// Open, a shard deleted under the readers is fetched again, `remote == local` reads the folder in
// place, and the cache by hand (CacheUsage, PrepareShard, EvictShard, EvictColdestShard).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "base/temp_dir_testutil.h"
#include "ferry/format/mds_writer.h"
#include "ferry/metrics/metrics.h"
#include "ferry/stream/streaming_dataset.h"
#include "stream/stream_testutil.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// `n` samples {id: int, blob: bytes of `blob`} in shards of at most `size_limit` bytes.
DatasetDescription Write(const fs::path& out, uint64_t n, uint64_t blob, uint64_t size_limit,
                         std::optional<std::string> compression = std::nullopt) {
  auto writer = MdsWriter::Create({.out = out,
                                   .columns = {{"id", "int"}, {"blob", "bytes"}},
                                   .compression = compression,
                                   .hashes = {"xxh64"},
                                   .size_limit = size_limit})
                    .value();
  for (uint64_t i = 0; i < n; ++i) {
    const Value values[] = {Value(Bytes{std::string(blob, static_cast<char>('a' + i % 26))}),
                            Value(static_cast<int64_t>(i))};
    EXPECT_TRUE(writer->WriteValues(values).ok());
  }
  return writer->Finish().value();
}

using testing::SampleId;

int64_t Counter(const std::string& name) { return metrics::Values()[name]; }

// Bytes of every regular file below `folder`, ferry's own records included.
uint64_t FolderBytes(const fs::path& folder) {
  uint64_t total = 0;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    if (entry.is_regular_file()) total += entry.file_size();
  }
  return total;
}

size_t ShardFiles(const fs::path& folder, uint64_t* bytes = nullptr) {
  size_t n = 0;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.path().extension() != ".mds") continue;
    ++n;
    if (bytes != nullptr) *bytes += entry.file_size();
  }
  return n;
}

class CacheCompatTest : public ::testing::Test {
 protected:
  // Random access fetches whole shards, as Mosaic's does (by default ferry reads by range).
  StreamingOptions Remote() const {
    StreamingOptions o;
    o.streams = {{.remote = (tmp_ / "remote").string(), .local = (tmp_ / "cache").string()}};
    o.download_on_access = true;
    return o;
  }
  // Waits up to 20 s for the download of `file` to be published. Until then a sample of it may
  // come from the bytes the download has landed, not from the file: on a loaded machine the
  // second sample still did.
  static bool WaitForFile(const fs::path& file) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!fs::exists(file) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return fs::exists(file);
  }
  testing::TempDir tmp_;
};

// Mosaic's tests/test_eviction.py dataset: 5,000 one-byte samples in shards of 500 bytes, whose
// index.json is more than a third of a 100 KiB limit. Counted with it, the shards get what it
// leaves (Mosaic keeps 129 of the 139); counted without, all 139 stayed and the folder went
// over the limit by four shards. Two readers fetching one shard each at a time may overshoot by
// one shard, the documented slack of concurrent downloads (include/ferry/cache/shard_cache.h).
TEST_F(CacheCompatTest, TheFolderStaysWithinTheLimitCountingIndexJson) {
  auto writer =
      MdsWriter::Create({.out = tmp_ / "remote", .columns = {{"data", "bytes"}}, .size_limit = 500})
          .value();
  for (int i = 0; i < 5000; ++i) {
    const Value values[] = {Value(Bytes{std::string(1, '\0')})};
    ASSERT_TRUE(writer->WriteValues(values).ok());
  }
  const DatasetDescription index = writer->Finish().value();
  ASSERT_EQ(index.shards.size(), 139u);
  const uint64_t index_bytes = fs::file_size(tmp_ / "remote" / "index.json");
  StreamingOptions o = Remote();
  o.cache_limit = 100 << 10;
  o.download_concurrency = 1;
  auto ds = StreamingDataset::Open(o).value();
  const WorldShape world{.nodes = 1, .ranks_per_node = 1, .workers_per_rank = 2};
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    std::atomic<uint64_t> read{0};
    std::vector<std::jthread> workers;
    for (uint32_t w = 0; w < 2; ++w) {
      workers.emplace_back([&, w] {
        auto it = ds->Iterate({.world = world, .worker = {.worker = w}, .epoch = epoch}).value();
        while (it->Next().value()) ++read;
      });
    }
    workers.clear();
    EXPECT_EQ(read.load(), 5000u);
  }
  const uint64_t slack = index.shards[0].raw_data.bytes;  // one download in flight elsewhere
  EXPECT_LE(FolderBytes(tmp_ / "cache"), *o.cache_limit + slack);
  const uint64_t shard_room = *o.cache_limit - index_bytes;
  EXPECT_LE(ShardFiles(tmp_ / "cache"), shard_room / index.shards[0].raw_data.bytes + 1);
  uint64_t shard_bytes = 0;
  ShardFiles(tmp_ / "cache", &shard_bytes);
  EXPECT_EQ(ds->CacheUsage(), index_bytes + shard_bytes);
}

TEST_F(CacheCompatTest, OpenRefusesALimitTheIndexFilesFill) {
  Write(tmp_ / "remote", 1000, 10, 2048);
  StreamingOptions o = Remote();
  o.cache_limit = 2048;  // Mosaic's test_cache_limit_lower_than_index_json
  auto ds = StreamingDataset::Open(o);
  ASSERT_FALSE(ds.has_value());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(ds.status().message(), HasSubstr("Minimum cache usage ("));
  EXPECT_THAT(ds.status().message(), HasSubstr("is larger than the cache limit (2048 bytes)"));
  EXPECT_THAT(ds.status().message(), HasSubstr((tmp_ / "cache" / "index.json").string()));
}

TEST_F(CacheCompatTest, OpenRefusesALimitBelowFourOfTheLargestShard) {
  const DatasetDescription index = Write(tmp_ / "remote", 1000, 10, 2048, "zstd:7");
  uint64_t largest = 0;
  for (const ShardDescription& shard : index.shards) {
    largest = std::max(largest, shard.raw_data.bytes + shard.zip_data->bytes);
  }
  StreamingOptions o = Remote();
  o.cache_limit = 4 * largest - 1;
  auto ds = StreamingDataset::Open(o);
  ASSERT_FALSE(ds.has_value());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(ds.status().message(),
              HasSubstr("is too low. Increase the `cache_limit` to at least four times the "
                        "largest shard size (" +
                        std::to_string(largest) + " bytes"));
  o.cache_limit = 4 * largest + fs::file_size(tmp_ / "cache" / "index.json");
  EXPECT_TRUE(StreamingDataset::Open(o).has_value());
}

// Mosaic's test_accidental_shard_delete: the shard being read is deleted from the cache; it is
// back when the epoch ends, the epoch whole and right.
TEST_F(CacheCompatTest, AShardDeletedWhileReadIsFetchedAgainInThatEpoch) {
  Write(tmp_ / "remote", 1000, 100, 4096);
  auto ds = StreamingDataset::Open(Remote()).value();
  auto it = ds->Iterate({.epoch = 0}).value();
  const fs::path shard0 = tmp_ / "cache" / "shard.00000.mds";
  const int64_t downloads = Counter("/ferry/cache/downloads");
  std::vector<int64_t> ids;
  while (auto sample = it->Next().value()) {
    ids.push_back(SampleId(*sample));
    if (ids.size() == 2) {  // the first comes by range, the next from the download
      ASSERT_TRUE(WaitForFile(shard0));
      ASSERT_TRUE(fs::remove(shard0));  // heard at once: the next samples drain the deletions
    }
  }
  ASSERT_EQ(ids.size(), 1000u);
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(ids[i], i);
  EXPECT_TRUE(fs::exists(shard0)) << "read on from the mapping, never fetched again";
  EXPECT_GE(Counter("/ferry/cache/downloads") - downloads, 1);
  // Random access to it: the open copy is dropped again, and the shard fetched.
  ASSERT_TRUE(fs::remove(shard0));
  std::this_thread::sleep_for(std::chrono::milliseconds(1));  // random access drains every 20 us
  auto sample = ds->Get(3);
  ASSERT_TRUE(sample.has_value()) << sample.status().ToString();
  EXPECT_EQ(SampleId(*sample), 3);
  EXPECT_TRUE(fs::exists(shard0));
}

TEST_F(CacheCompatTest, AShardDeletedFromALocalDatasetIsNotFoundNamingIt) {
  Write(tmp_ / "data", 1000, 100, 4096);
  StreamingOptions o;
  o.streams = {{.local = (tmp_ / "data").string()}};
  auto ds = StreamingDataset::Open(o).value();
  ASSERT_TRUE(ds->Get(0).has_value());
  const fs::path last = tmp_ / "data" / ds->indexes()[0]->shards.back().raw_data.basename;
  ASSERT_TRUE(fs::remove(last));
  auto sample = ds->Get(999);
  EXPECT_EQ(sample.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(sample.status().message(), HasSubstr(last.string()));
}

// Mosaic reads `remote == local` in place; ferry refused it. It is no remote: nothing is copied,
// and nothing of it is ever evicted - its files are the only copy.
TEST_F(CacheCompatTest, ARemoteThatIsTheLocalFolderIsReadInPlace) {
  const DatasetDescription index = Write(tmp_ / "data", 300, 100, 2048, "zstd");
  for (const std::string& remote : {(tmp_ / "data").string(), "file://" + (tmp_ / "data").string(),
                                    (tmp_ / "data").string() + "/"}) {
    StreamingOptions o;
    o.streams = {{.remote = remote, .local = (tmp_ / "data").string()}};
    o.cache_limit = 4 * (index.shards[0].raw_data.bytes + index.shards[0].zip_data->bytes) +
                    fs::file_size(tmp_ / "data" / "index.json");
    auto ds = StreamingDataset::Open(o);
    ASSERT_TRUE(ds.has_value()) << remote << ": " << ds.status().ToString();
    uint64_t n = 0;
    auto it = (*ds)->Iterate({.epoch = 0}).value();
    while (it->Next().value()) ++n;
    EXPECT_EQ(n, 300u) << remote;
    EXPECT_EQ((*ds)->EvictShard(0).code(), StatusCode::kFailedPrecondition) << remote;
    EXPECT_EQ((*ds)->EvictColdestShard().status().code(), StatusCode::kInvalidArgument) << remote;
  }
  for (const ShardDescription& shard : index.shards) {
    EXPECT_TRUE(fs::exists(tmp_ / "data" / shard.zip_data->basename)) << shard.zip_data->basename;
  }
  EXPECT_FALSE(fs::exists(tmp_ / "data" / ".ferry" / "origin.json")) << "treated as a cache";
}

TEST_F(CacheCompatTest, TheCacheByHand) {
  const DatasetDescription index = Write(tmp_ / "remote", 1000, 100, 4096);
  auto ds = StreamingDataset::Open(Remote()).value();
  const uint64_t index_bytes = fs::file_size(tmp_ / "cache" / "index.json");
  const auto bytes = [&](size_t k) { return index.shards[k].raw_data.bytes; };
  EXPECT_EQ(ds->CacheUsage(), index_bytes);
  ASSERT_TRUE(ds->Get(0).has_value());  // shard 0, now open in the dataset
  ASSERT_TRUE(ds->PrepareShard(2, /*blocking=*/true).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(ds->PrepareShard(1, /*blocking=*/false).ok());
  EXPECT_EQ(ds->CacheUsage(), index_bytes + bytes(0) + bytes(1) + bytes(2));
  // The dataset's own open copy of shard 0 does not keep it.
  ASSERT_TRUE(ds->EvictShard(0).ok());
  EXPECT_FALSE(fs::exists(tmp_ / "cache" / index.shards[0].raw_data.basename));
  EXPECT_TRUE(ds->EvictShard(0).ok()) << "not local: nothing to do";
  // Least recently used first: 2, then 1.
  EXPECT_EQ(ds->EvictColdestShard().value(), 2u);
  EXPECT_EQ(ds->EvictColdestShard().value(), 1u);
  EXPECT_EQ(ds->CacheUsage(), index_bytes);
  auto none = ds->EvictColdestShard();
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(none.status().message(), HasSubstr("no shards present locally to evict"));
  EXPECT_EQ(ds->PrepareShard(index.shards.size(), true).code(), StatusCode::kOutOfRange);
  // Fetched again when read.
  auto sample = ds->Get(0);
  ASSERT_TRUE(sample.has_value()) << sample.status().ToString();
  EXPECT_EQ(SampleId(*sample), 0);
}

TEST_F(CacheCompatTest, AShardAnIteratorIsReadingIsNotEvicted) {
  Write(tmp_ / "remote", 1000, 100, 4096);
  auto ds = StreamingDataset::Open(Remote()).value();
  auto it = ds->Iterate({.epoch = 0}).value();
  // Reading shard 0: the first sample comes by range, the next from its download; once the
  // file is published, the one after from the file, which the iterator then holds.
  ASSERT_TRUE(it->Next().value().has_value());
  ASSERT_TRUE(WaitForFile(tmp_ / "cache" / "shard.00000.mds"));
  ASSERT_TRUE(it->Next().value().has_value());
  const Status refused = ds->EvictShard(0);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("shard.00000.mds"));
  EXPECT_TRUE(fs::exists(tmp_ / "cache" / "shard.00000.mds"));
}

}  // namespace
}  // namespace ferry
