// Tests of the WebDataset shard list (wids' index.json): what ferry writes reads back as the
// same description, index.json in either form reads through ParseIndexFile, and every shard list
// ferry cannot stream from is an error that says why and names the file.
#include "format/webdataset_index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/format/index.h"
#include "ferry/format/local_dataset.h"
#include "format/webdataset_fixture_testutil.h"

namespace ferry::internal_format {
namespace {

using ::testing::HasSubstr;

constexpr char kOrigin[] = "data/index.json";

DatasetDescription TwoShards() {
  auto config = std::make_shared<const ShardConfig>();
  DatasetDescription d;
  d.shards.push_back({.config = config,
                      .raw_data = {.basename = "train-000000.tar", .bytes = 10240},
                      .samples = 7,
                      .format = "webdataset"});
  d.shards.push_back({.config = config,
                      .raw_data = {.basename = "sub/train-000001.tar", .bytes = 20480},
                      .samples = 0,
                      .format = "webdataset"});
  return d;
}

TEST(WebDatasetIndex, WhatFerryWritesReadsBackAsTheSameDescription) {
  const std::string text = SerializeWebDatasetIndex(TwoShards());
  EXPECT_THAT(text, HasSubstr(R"("__kind__": "wids-shard-index-v1")"));
  EXPECT_TRUE(IsWebDatasetIndex(text));
  for (auto parsed : {ParseWebDatasetIndex(text, kOrigin), ParseIndexFile(text, kOrigin)}) {
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    ASSERT_EQ(parsed->shards.size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(parsed->shards[k].raw_data, TwoShards().shards[k].raw_data);
      EXPECT_EQ(parsed->shards[k].samples, TwoShards().shards[k].samples);
      EXPECT_EQ(parsed->shards[k].format, "webdataset");
      EXPECT_FALSE(parsed->shards[k].zip_data);
      EXPECT_TRUE(parsed->shards[k].config->column_names.empty());
    }
    EXPECT_EQ(parsed->num_samples(), 7u);
  }
}

TEST(WebDatasetIndex, AShardListAsWidsWritesItReads) {
  // wids' own keys beside the ones ferry needs (name, wids_version, a shard's dataset).
  const auto parsed = ParseIndexFile(
      R"({"__kind__": "wids-shard-index-v1", "wids_version": 1, "name": "laion",
          "shardlist": [{"url": "a.tar", "nsamples": 3, "filesize": 4096, "dataset": "x"}]})",
      kOrigin);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->shards.size(), 1u);
  EXPECT_EQ(parsed->shards[0].raw_data.basename, "a.tar");
  EXPECT_EQ(parsed->shards[0].raw_data.bytes, 4096u);
}

TEST(WebDatasetIndex, AGzippedTarIsFetchedCompressedAndKeptAsTheTarInside) {
  const auto parsed = ParseIndexFile(
      R"({"__kind__": "wids-shard-index-v1", "shardlist": [
          {"url": "a.tar.gz", "nsamples": 3, "filesize": 400, "raw_filesize": 10240},
          {"url": "sub/b.tgz", "nsamples": 2, "filesize": 300, "raw_filesize": 20480}]})",
      kOrigin);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->shards.size(), 2u);
  const ShardDescription& a = parsed->shards[0];
  EXPECT_EQ(a.raw_data.basename, "a.tar");
  EXPECT_EQ(a.raw_data.bytes, 10240u);
  ASSERT_TRUE(a.zip_data.has_value());
  EXPECT_EQ(a.zip_data->basename, "a.tar.gz");
  EXPECT_EQ(a.zip_data->bytes, 400u);
  EXPECT_EQ(a.config->compression, "gz");
  EXPECT_EQ(parsed->shards[1].raw_data.basename, "sub/b.tar");
  EXPECT_EQ(parsed->shards[1].zip_data->basename, "sub/b.tgz");
  // What ferry writes for them reads back the same.
  const auto again = ParseWebDatasetIndex(SerializeWebDatasetIndex(*parsed), kOrigin).value();
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(again.shards[k].raw_data, parsed->shards[k].raw_data);
    EXPECT_EQ(again.shards[k].zip_data, parsed->shards[k].zip_data);
    EXPECT_EQ(again.shards[k].samples, parsed->shards[k].samples);
  }
  EXPECT_EQ(TarOfGzip("x.tar"), std::nullopt);
}

TEST(WebDatasetIndex, AnMdsIndexIsNotAShardList) {
  EXPECT_FALSE(IsWebDatasetIndex(R"({"shards": [], "version": 2})"));
  EXPECT_FALSE(IsWebDatasetIndex(R"({"__kind__": "something else"})"));
  EXPECT_FALSE(IsWebDatasetIndex("not json __kind__"));
}

struct BadList {
  const char* text;
  StatusCode code;
  const char* says;
};

class WebDatasetIndexErrors : public ::testing::TestWithParam<BadList> {};

TEST_P(WebDatasetIndexErrors, SayWhyAndNameTheFile) {
  const auto parsed = ParseWebDatasetIndex(GetParam().text, kOrigin);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().code(), GetParam().code) << parsed.error().message();
  EXPECT_THAT(parsed.error().message(), HasSubstr(kOrigin));
  EXPECT_THAT(parsed.error().message(), HasSubstr(GetParam().says));
}

INSTANTIATE_TEST_SUITE_P(
    Lists, WebDatasetIndexErrors,
    ::testing::Values(BadList{"[1, 2]", StatusCode::kDataLoss, "not a JSON object"},
                      BadList{R"({"__kind__": "wids-shard-index-v1"})", StatusCode::kDataLoss,
                              "'shardlist'"},
                      BadList{R"({"__kind__": "wids-shard-index-v1", "base_path": "s3://b/x",
                    "shardlist": []})",
                              StatusCode::kInvalidArgument, "base_path"},
                      BadList{R"({"__kind__": "wids-shard-index-v1",
                    "shardlist": [{"url": "s3://b/a.tar", "nsamples": 1, "filesize": 9}]})",
                              StatusCode::kInvalidArgument, "beside the index"},
                      BadList{R"({"__kind__": "wids-shard-index-v1",
                    "shardlist": [{"url": "../a.tar", "nsamples": 1, "filesize": 9}]})",
                              StatusCode::kInvalidArgument, "shard 0"},
                      BadList{R"({"__kind__": "wids-shard-index-v1",
                    "shardlist": [{"url": "a.tar.gz", "nsamples": 1, "filesize": 9}]})",
                              StatusCode::kInvalidArgument, "'raw_filesize'"},
                      BadList{R"({"__kind__": "wids-shard-index-v1",
                    "shardlist": [{"url": "a.tgz", "nsamples": 1, "filesize": 9,
                                   "raw_filesize": "big"}]})",
                              StatusCode::kDataLoss, "'raw_filesize'"},
                      BadList{R"({"__kind__": "wids-shard-index-v1",
                    "shardlist": [{"url": "a.tar", "nsamples": 1}]})",
                              StatusCode::kInvalidArgument, "ferry index"},
                      BadList{R"({"__kind__": "wids-shard-index-v1",
                    "shardlist": [{"url": "a.tar", "nsamples": -1, "filesize": 9}]})",
                              StatusCode::kDataLoss, "'nsamples'"},
                      BadList{R"({"__kind__": "wids-shard-index-v1",
                    "shardlist": [{"url": 5, "nsamples": 1, "filesize": 9}]})",
                              StatusCode::kDataLoss, "'url'"}));

// A folder of tars without index.json is its shard list, counted in place: what ReadLocalIndex
// (and so every local reader) sees.
TEST(WebDatasetIndex, ALocalFolderOfTarsIsCountedInPlace) {
  for (const std::string name : {"tarwriter", "gnutar_gz"}) {
    const auto expected = testing::ExpectedWebDatasetShards(name);
    const auto folder = testing::WebDatasetFixtures() / name;
    auto counted = CountLocalTarShards(folder);
    ASSERT_TRUE(counted.ok()) << counted.status().ToString();
    ASSERT_TRUE(counted->has_value());
    auto read_index = ReadLocalIndex(folder);
    ASSERT_TRUE(read_index.ok()) << read_index.status().ToString();
    for (const DatasetDescription* read : {&**counted, &*read_index}) {
      ASSERT_EQ(read->shards.size(), expected.size()) << name;
      for (size_t k = 0; k < expected.size(); ++k) {
        const ShardDescription& shard = read->shards[k];
        const FileInfo& file = shard.zip_data ? *shard.zip_data : shard.raw_data;
        EXPECT_EQ(file.basename, expected[k].first);
        EXPECT_EQ(file.bytes, std::filesystem::file_size(folder / expected[k].first));
        EXPECT_EQ(shard.samples, expected[k].second.size()) << expected[k].first;
        EXPECT_EQ(shard.raw_data.bytes, testing::TarBytes(folder / expected[k].first).size());
      }
    }
  }
}

TEST(WebDatasetIndex, AFolderWithoutTarsOrIndexIsNoDatasetAndABrokenTarIsNamed) {
  testing::TempDir tmp;
  auto none = CountLocalTarShards(tmp.path());
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(WriteFileAtomically(tmp.path() / "notes.txt", "x").ok());
  EXPECT_THAT(ReadLocalIndex(tmp.path()).status().message(), HasSubstr("is not a dataset"));

  const auto shard = testing::WebDatasetFixtures() / "tarwriter" / "train-000001.tar";
  const std::string bytes = testing::FileText(shard);
  ASSERT_TRUE(
      WriteFileAtomically(tmp.path() / "a.tar", bytes.substr(0, bytes.size() / 2 + 100)).ok());
  auto broken = ReadLocalIndex(tmp.path());
  ASSERT_FALSE(broken.ok());
  EXPECT_THAT(broken.status().message(), HasSubstr((tmp.path() / "a.tar").string()));
}

}  // namespace
}  // namespace ferry::internal_format
