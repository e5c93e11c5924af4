#include "ferry/format/split_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/temp_dir_testutil.h"
#include "ferry/format/index.h"
#include "format/compression.h"
#include "format/fixture_testutil.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kSplitFixtures = testing::FixturesDir().parent_path() / "split";

// The writer's options that made `index`'s first shard: what Mosaic's writer was given.
SplitWriterOptions OptionsOf(const nlohmann::json& shard, const fs::path& out) {
  SplitWriterOptions o{.out = out, .format = shard["format"], .newline = shard["newline"]};
  if (shard.contains("columns")) {
    for (const auto& [name, encoding] : shard["columns"].items()) {
      o.columns.emplace_back(name, encoding.get<std::string>());
    }
  } else {
    for (size_t i = 0; i < shard["column_names"].size(); ++i) {
      o.columns.emplace_back(shard["column_names"][i], shard["column_encodings"][i]);
    }
  }
  if (!shard["compression"].is_null()) o.compression = shard["compression"];
  o.hashes = shard["hashes"].get<std::vector<std::string>>();
  o.size_limit = shard["size_limit"].get<uint64_t>();
  return o;
}

Value ValueOf(const nlohmann::json& v) {
  if (v.is_string()) return Value(v.get<std::string>());
  if (v.is_number_integer()) return Value(v.get<int64_t>());
  return Value(v.get<double>());
}

// A file of the dataset in `dir` as raw bytes: decompressed when only its compressed form is
// there.
std::string RawFile(const fs::path& dir, const nlohmann::json& shard, const std::string& raw,
                    const std::string& zip) {
  if (shard[zip].is_null()) return testing::FileText(dir / shard[raw]["basename"]);
  auto compression = Compression::Parse(shard["compression"].get<std::string>());
  auto bytes = compression->Decompress(testing::FileText(dir / shard[zip]["basename"]),
                                       shard[raw]["bytes"].get<uint64_t>());
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.value_or("");
}

class SplitWriterFixture : public ::testing::TestWithParam<std::string> {};

// The samples Mosaic read back, written again with the settings Mosaic's writer had, give the
// same shards: the same raw data and .meta files byte for byte, and index.json byte for byte
// (for the compressed datasets, apart from the compressed files, whose bytes depend on the
// compressor's build and, for gzip, on the time).
TEST_P(SplitWriterFixture, RewritesMosaicsDatasetByteForByte) {
  const fs::path theirs = kSplitFixtures / GetParam();
  const auto index = nlohmann::json::parse(testing::FileText(theirs / "index.json"));
  const auto expected = nlohmann::json::parse(testing::FileText(theirs / "expected.json"));
  testing::TempDir tmp;
  auto writer = SplitWriter::Create(OptionsOf(index["shards"][0], tmp.path()));
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  for (const auto& sample : expected["samples"]) {
    std::vector<Value> values;
    for (const std::string& name : (*writer)->column_names())
      values.push_back(ValueOf(sample[name]));
    ASSERT_TRUE((*writer)->WriteValues(values).ok());
  }
  ASSERT_TRUE((*writer)->Finish().ok());
  const auto ours = nlohmann::json::parse(testing::FileText(tmp.path() / "index.json"));
  ASSERT_EQ(ours["shards"].size(), index["shards"].size());
  if (index["shards"][0]["compression"].is_null()) {
    EXPECT_EQ(testing::FileText(tmp.path() / "index.json"),
              testing::FileText(theirs / "index.json"));
  }
  for (size_t k = 0; k < index["shards"].size(); ++k) {
    const auto& shard = index["shards"][k];
    SCOPED_TRACE(shard["raw_data"]["basename"].get<std::string>());
    for (const char* key : {"raw_data", "raw_meta", "samples"}) {
      EXPECT_EQ(ours["shards"][k][key], shard[key]) << key;
    }
    EXPECT_EQ(RawFile(tmp.path(), ours["shards"][k], "raw_data", "zip_data"),
              RawFile(theirs, shard, "raw_data", "zip_data"));
    EXPECT_EQ(RawFile(tmp.path(), ours["shards"][k], "raw_meta", "zip_meta"),
              RawFile(theirs, shard, "raw_meta", "zip_meta"));
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SplitWriterFixture,
                         ::testing::Values("json_plain", "json_zstd_sha1", "csv_plain",
                                           "csv_gz_md5", "tsv_plain"));

TEST(SplitWriter, ValuesThatWouldNotReadBackAreRefused) {
  testing::TempDir tmp;
  auto writer = SplitWriter::Create({.out = tmp.path(),
                                     .format = "csv",
                                     .columns = {{"n", "int"}, {"s", "str"}, {"x", "float"}}})
                    .value();
  EXPECT_EQ(writer->column_names(), (std::vector<std::string>{"n", "s", "x"}));
  const std::vector<std::pair<std::vector<Value>, std::string>> bad = {
      {{Value(int64_t{1}), Value(std::string("a,b")), Value(1.5)}, "separator"},
      {{Value(int64_t{1}), Value(std::string("a\nb")), Value(1.5)}, "newline"},
      {{Value(1.5), Value(std::string("a")), Value(1.5)}, "column 'n' is int"},
      {{Value(int64_t{1}), Value(int64_t{2}), Value(1.5)}, "column 's' is str"},
      {{Value(int64_t{1}), Value(std::string("a")), Value(int64_t{2})}, "column 'x' is float"},
      {{Value(int64_t{1})}, "1 values for 3 columns"}};
  for (const auto& [values, message] : bad) {
    const Status status = writer->WriteValues(values);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << message;
    EXPECT_THAT(status.message(), HasSubstr(message));
  }
  EXPECT_EQ(writer->samples_written(), 0u);
  ASSERT_TRUE(
      writer->WriteValues({{Value(int64_t{-3}), Value(std::string("é")), Value(0.1)}}).ok());
  auto index = writer->Finish();
  ASSERT_TRUE(index.ok());
  ASSERT_EQ(index->shards.size(), 1u);
  EXPECT_EQ(testing::FileText(tmp.path() / "shard.00000.csv"), "n,s,x\n-3,é,0.1\n");
  EXPECT_EQ(
      SplitWriter::Create({.out = tmp.path() / "x", .format = "xsv", .columns = {{"a", "str"}}})
          .status()
          .code(),
      StatusCode::kInvalidArgument);
  EXPECT_THAT(
      SplitWriter::Create({.out = tmp.path() / "y", .format = "json", .columns = {{"a", "bytes"}}})
          .status()
          .message(),
      HasSubstr("column 'a'"));
  // A non-empty folder needs exist_ok, which replaces the dataset in it.
  EXPECT_EQ(SplitWriter::Create({.out = tmp.path(), .format = "csv", .columns = {{"a", "str"}}})
                .status()
                .code(),
            StatusCode::kAlreadyExists);
}

}  // namespace
}  // namespace ferry
