// StreamingDataset over Mosaic's JSON, CSV and TSV datasets (../shared/fixtures/split, written by
// Mosaic's own writers): each a "remote" folder streamed through a cache folder, every sample
// decoded as ferry hands it out (the field encodings the Python package decodes by) and compared
// with what Mosaic's StreamingDataset returned; the .meta of each shard fetched, decompressed,
// kept and evicted with its data file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/format/encoding.h"
#include "ferry/format/index.h"
#include "ferry/metrics/metrics.h"
#include "ferry/storage/registry.h"
#include "ferry/stream/streaming_dataset.h"
#include "format/fixture_testutil.h"
#include "stream/stream_testutil.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kSplitFixtures = testing::FixturesDir().parent_path() / "split";
const std::vector<std::string> kFixtureNames = {"json_plain", "json_zstd_sha1", "csv_plain",
                                                "csv_gz_md5", "tsv_plain"};

// A field as the Python package finishes it: str as is, str_int by int(), str_float by float(),
// json by json.loads - here into the JSON value Mosaic's expected.json holds.
nlohmann::json FieldValue(const ColumnEncoding& encoding, std::string_view field) {
  auto value = DecodeValue(encoding, field);
  EXPECT_TRUE(value.ok()) << value.status().ToString();
  if (!value) return nullptr;
  if (const auto* s = std::get_if<std::string>(&*value)) return *s;
  if (const auto* i = std::get_if<int64_t>(&*value)) return *i;
  if (const auto* u = std::get_if<uint64_t>(&*value)) return *u;
  if (const auto* d = std::get_if<double>(&*value)) return *d;
  if (const auto* j = std::get_if<Json>(&*value)) return nlohmann::json::parse(j->text);
  ADD_FAILURE() << encoding.text() << " gave an unexpected value";
  return nullptr;
}

nlohmann::json SampleJson(const Sample& s) {
  nlohmann::json obj = nlohmann::json::object();
  for (size_t c = 0; c < s.fields.size(); ++c) {
    obj[s.config->column_names[c]] = FieldValue(s.config->column_encodings[c], s.fields[c]);
  }
  return obj;
}

using testing::FileRequests;

class SplitStreamTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    fs::create_directories(remote().parent_path());
    fs::copy(kSplitFixtures / GetParam(), remote(), fs::copy_options::recursive);
    expected_ = nlohmann::json::parse(testing::FileText(remote() / "expected.json"));
    fs::remove(remote() / "expected.json");
  }
  fs::path remote() const { return tmp_.path() / "remote" / GetParam(); }
  fs::path cache() const { return tmp_.path() / "cache"; }
  StreamingOptions Options() const {
    StreamingOptions o;
    o.streams = {{.remote = remote().string(), .local = cache().string()}};
    return o;
  }
  // Every sample of an epoch in order, each checked against Mosaic's.
  void ReadAndCompare(StreamingDataset& ds, uint64_t epoch) const {
    auto it = ds.Iterate({.epoch = epoch});
    ASSERT_TRUE(it.ok()) << it.status().ToString();
    uint64_t n = 0;
    for (;; ++n) {
      auto s = (*it)->Next();
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      if (!*s) break;
      ASSERT_EQ((*s)->id, n);
      ASSERT_LT(n, expected_["samples"].size());
      EXPECT_EQ(SampleJson(**s), expected_["samples"][n]) << GetParam() << " sample " << n;
    }
    EXPECT_EQ(n, expected_["samples"].size());
  }

  testing::TempDir tmp_;
  nlohmann::json expected_;
};

TEST_P(SplitStreamTest, StreamsWhatMosaicReadsAndEpochTwoReadsTheCache) {
  auto ds = StreamingDataset::Open(Options());
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  ASSERT_EQ((*ds)->num_samples(), expected_["samples"].size());
  ReadAndCompare(**ds, 0);
  const int64_t after_first = FileRequests();
  ReadAndCompare(**ds, 1);
  EXPECT_EQ(FileRequests(), after_first) << "epoch 2 reads the cache only";
  // Each shard is its data file and its .meta, both raw in the cache.
  const auto index = ParseIndexFile(testing::FileText(remote() / "index.json"), "index.json");
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  for (const ShardDescription& shard : index->shards) {
    EXPECT_EQ(shard.format, expected_["format"]);
    ASSERT_EQ(shard.companions.size(), 1u);
    EXPECT_EQ(fs::file_size(cache() / shard.raw_data.basename), shard.raw_data.bytes);
    EXPECT_EQ(fs::file_size(cache() / shard.companions[0].raw.basename),
              shard.companions[0].raw.bytes);
  }
}

TEST_P(SplitStreamTest, ALocalDatasetIsReadInPlace) {
  StreamingOptions o;
  o.streams = {{.local = remote().string()}};
  auto ds = StreamingDataset::Open(o);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  ReadAndCompare(**ds, 0);
}

TEST_P(SplitStreamTest, AnEvictedShardTakesItsMetaWithIt) {
  const auto index = ParseIndexFile(testing::FileText(remote() / "index.json"), "index.json");
  ASSERT_TRUE(index.ok());
  auto remote_store = OpenUrl(remote().string());
  ASSERT_TRUE(remote_store.ok());
  ShardCacheOptions options;
  options.local = cache();
  auto opened = ShardCache::Open(remote_store->store, remote_store->key, *index, options);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ShardCache& shards = **opened;
  const ShardDescription& shard = index->shards[0];
  ASSERT_TRUE(shards.Acquire(0).ok());
  EXPECT_TRUE(shards.IsLocal(0));
  auto freed = shards.Evict(0);
  ASSERT_TRUE(freed.ok()) << freed.status().ToString();
  EXPECT_EQ(*freed, shard.raw_bytes());
  EXPECT_FALSE(fs::exists(cache() / shard.raw_data.basename));
  EXPECT_FALSE(fs::exists(cache() / shard.companions[0].raw.basename));
  // A .meta alone is not a cached shard: it is fetched again with its data.
  ASSERT_TRUE(shards.Acquire(0).ok());
  fs::remove(cache() / shard.companions[0].raw.basename);
  EXPECT_FALSE(shards.IsLocal(0));
  ASSERT_TRUE(shards.Acquire(0).ok());
  EXPECT_TRUE(fs::exists(cache() / shard.companions[0].raw.basename));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SplitStreamTest, ::testing::ValuesIn(kFixtureNames));

// A .meta missing from the remote, or one that does not match the index, is an error naming it.
TEST(SplitStream, AMissingOrDamagedMetaIsNamed) {
  testing::TempDir tmp;
  const fs::path remote = tmp.path() / "remote";
  fs::copy(kSplitFixtures / "csv_plain", remote, fs::copy_options::recursive);
  fs::remove(remote / "shard.00001.csv.meta");
  StreamingOptions o;
  o.streams = {{.remote = remote.string(), .local = (tmp.path() / "cache").string()}};
  auto ds = StreamingDataset::Open(o).value();
  auto it = ds->Iterate({.epoch = 0}).value();
  Status error;
  for (;;) {
    auto s = it->Next();
    if (!s.ok()) {
      error = s.status();
      break;
    }
    if (!*s) break;
  }
  ASSERT_FALSE(error.ok()) << "a shard without its .meta was read";
  EXPECT_THAT(error.message(), HasSubstr("shard.00001.csv.meta"));

  // In a local dataset, read in place: a .meta cut short.
  const fs::path local = tmp.path() / "local";
  fs::copy(kSplitFixtures / "csv_plain", local, fs::copy_options::recursive);
  for (const auto& entry : fs::directory_iterator(local)) {
    fs::permissions(entry.path(), fs::perms::owner_write, fs::perm_options::add);
  }
  fs::resize_file(local / "shard.00000.csv.meta", 100);
  StreamingOptions lo;
  lo.streams = {{.local = local.string()}};
  auto next = StreamingDataset::Open(lo).value()->Iterate({.epoch = 0}).value()->Next();
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(next.status().message(), HasSubstr("shard.00000.csv.meta"));
}

}  // namespace
}  // namespace ferry
