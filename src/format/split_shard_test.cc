#include "format/split_shard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "base/little_endian.h"
#include "format/compression.h"
#include "format/fixture_testutil.h"

namespace ferry::internal_format {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Mosaic's split fixtures sit beside the MDS ones (FERRY_FIXTURES_DIR names the MDS folder).
fs::path SplitFixtures() { return testing::FixturesDir().parent_path() / "split"; }

// One of a shard's files: the raw one when it is there, else the compressed one unpacked.
std::string ShardFile(const fs::path& dir, const nlohmann::json& shard, const std::string& raw,
                      const std::string& zip) {
  if (fs::exists(dir / shard[raw]["basename"].get<std::string>())) {
    return testing::FileText(dir / shard[raw]["basename"].get<std::string>());
  }
  auto compression = Compression::Parse(shard["compression"].get<std::string>());
  EXPECT_TRUE(compression.ok());
  auto bytes = compression->Decompress(
      testing::FileText(dir / shard[zip]["basename"].get<std::string>()), uint64_t{1} << 30);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.value_or("");
}

SplitShardConfig ConfigOf(const nlohmann::json& shard) {
  SplitShardConfig config{.format = shard["format"], .newline = shard["newline"]};
  if (shard.contains("column_names")) {
    config.column_names = shard["column_names"].get<std::vector<std::string>>();
    config.column_encodings = shard["column_encodings"].get<std::vector<std::string>>();
  }
  return config;
}

class SplitFixture : public ::testing::TestWithParam<std::string> {};

// Every sample of every shard, in order, is what Mosaic's StreamingDataset returns.
TEST_P(SplitFixture, DecodesWhatMosaicReadsBack) {
  const fs::path dir = SplitFixtures() / GetParam();
  const auto index = nlohmann::json::parse(testing::FileText(dir / "index.json"));
  const auto expected = nlohmann::json::parse(testing::FileText(dir / "expected.json"));
  size_t next = 0;
  for (const auto& entry : index["shards"]) {
    const std::string name = entry["raw_data"]["basename"];
    SCOPED_TRACE(name);
    EXPECT_EQ(entry["format"], expected["format"]);
    auto shard =
        SplitShard::Open(ShardFile(dir, entry, "raw_data", "zip_data"),
                         ShardFile(dir, entry, "raw_meta", "zip_meta"), ConfigOf(entry), name);
    ASSERT_TRUE(shard.ok()) << shard.status().ToString();
    ASSERT_EQ(shard->num_samples(), entry["samples"].get<uint32_t>());
    for (uint32_t i = 0; i < shard->num_samples(); ++i, ++next) {
      auto sample = shard->Decode(i);
      ASSERT_TRUE(sample.ok()) << sample.status().ToString();
      ASSERT_LT(next, expected["samples"].size());
      EXPECT_EQ(*sample, expected["samples"][next]) << "sample " << i;
    }
  }
  EXPECT_EQ(next, expected["samples"].size());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SplitFixture,
                         ::testing::Values("json_plain", "json_zstd_sha1", "csv_plain",
                                           "csv_gz_md5", "tsv_plain"));

// A shard of `lines` (each ending in "\n") after a header, and its .meta.
std::pair<std::string, std::string> Shard(const std::vector<std::string>& lines) {
  std::string data = "a,b\n";
  std::string meta;
  AppendLE<uint32_t>(meta, static_cast<uint32_t>(lines.size()));
  AppendLE<uint32_t>(meta, static_cast<uint32_t>(data.size()));
  for (const std::string& line : lines) {
    data += line;
    AppendLE<uint32_t>(meta, static_cast<uint32_t>(data.size()));
  }
  return {data, meta};
}

const SplitShardConfig kCsv{
    .format = "csv", .column_names = {"a", "b"}, .column_encodings = {"int", "float"}};

TEST(SplitShard, BadSamplesAreDataLossNamingTheShardAndSample) {
  auto [data, meta] = Shard({"1,2.5\n", "x,1\n", "1\n", "1,2,3\n", "4,5"});
  auto shard = SplitShard::Open(data, meta, kCsv, "s.csv");
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  EXPECT_EQ(shard->Decode(0).value(), (nlohmann::json{{"a", 1}, {"b", 2.5}}));
  const std::vector<std::pair<uint32_t, std::string>> bad = {
      {1, "s.csv: sample 1: column a: 'x' is not an int"},
      {2, "s.csv: sample 2: 1 fields, not 2"},
      {3, "s.csv: sample 3: more than 2 fields"},
      {4, "s.csv: sample 4: does not end with its newline"}};
  for (const auto& [i, message] : bad) {
    auto sample = shard->Decode(i);
    ASSERT_FALSE(sample.ok()) << i;
    EXPECT_EQ(sample.status().code(), StatusCode::kDataLoss);
    EXPECT_THAT(sample.status().message(), HasSubstr(message));
  }
  EXPECT_EQ(shard->Decode(5).status().code(), StatusCode::kOutOfRange);
}

TEST(SplitShard, AMetaThatDoesNotFitItsDataIsRefused) {
  auto [data, meta] = Shard({"1,2\n", "3,4\n"});
  auto short_meta = SplitShard::Open(data, meta.substr(0, 8), kCsv, "s.csv");
  EXPECT_THAT(short_meta.status().message(), HasSubstr("too few for 2 samples"));
  auto past = SplitShard::Open(data.substr(0, data.size() - 2), meta, kCsv, "s.csv");
  EXPECT_THAT(past.status().message(), HasSubstr("past the data"));
  std::string backwards = meta;
  StoreU32LE(backwards.data() + 8, 100);
  EXPECT_THAT(SplitShard::Open(data, backwards, kCsv, "s.csv").status().message(),
              HasSubstr("goes backwards"));
  EXPECT_EQ(SplitShard::Open(data, meta, {.format = "xml"}, "s.xml").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(SplitShard, JsonSamplesMustBeObjects) {
  std::string data = "[1]\n";
  std::string meta;
  AppendLE<uint32_t>(meta, 1);
  AppendLE<uint32_t>(meta, 0);
  AppendLE<uint32_t>(meta, 4);
  auto shard = SplitShard::Open(data, meta, {.format = "json"}, "s.json");
  ASSERT_TRUE(shard.ok());
  EXPECT_THAT(shard->Decode(0).status().message(), HasSubstr("s.json: sample 0: is not a JSON"));
}

// A JSON shard's fields are each column's value as JSON text, whatever the key order, spacing
// or escapes; keys that are not columns, repeated, or missing are errors naming the sample.
TEST(SplitShard, JsonFieldsAreEachColumnsValueText) {
  const std::vector<std::string> lines = {R"({"b": [1, {"x": "]}"}], "a": "q\"uote"})"
                                          "\n",
                                          R"(  { "\u0061" :-1.5e3 ,"b":{"k":[]}}  )"
                                          "\n",
                                          R"({"a": 1, "b": 2, "c": 3})"
                                          "\n",
                                          R"({"a": 1, "a": 2, "b": 3})"
                                          "\n",
                                          R"({"a": 1})"
                                          "\n",
                                          "[1]\n",
                                          "{\"a\": tru}\n"};
  std::string data;
  std::string meta;
  AppendLE<uint32_t>(meta, static_cast<uint32_t>(lines.size()));
  AppendLE<uint32_t>(meta, 0);
  for (const std::string& line : lines) {
    data += line;
    AppendLE<uint32_t>(meta, static_cast<uint32_t>(data.size()));
  }
  auto shard = SplitShard::Open(
      data, meta,
      {.format = "json", .column_names = {"a", "b"}, .column_encodings = {"str", "int"}}, "s.json");
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  std::vector<std::string_view> fields;
  ASSERT_TRUE(shard->Fields(0, fields).ok());
  EXPECT_THAT(fields, ::testing::ElementsAre(R"("q\"uote")", R"([1, {"x": "]}"}])"));
  ASSERT_TRUE(shard->Fields(1, fields).ok());
  EXPECT_THAT(fields, ::testing::ElementsAre("-1.5e3", R"({"k":[]})"));
  const std::vector<std::pair<uint32_t, std::string>> bad = {
      {2, "s.json: sample 2: 'c' is not a column of the shard"},
      {3, "s.json: sample 3: 'a' appears twice"},
      {4, "s.json: sample 4: has no 'b'"},
      {5, "s.json: sample 5: is not a JSON object"},
      {6, "s.json: sample 6: is not valid JSON"}};
  for (const auto& [i, message] : bad) {
    const Status status = shard->Fields(i, fields);
    EXPECT_EQ(status.code(), StatusCode::kDataLoss) << i;
    EXPECT_THAT(status.message(), HasSubstr(message));
  }
}

}  // namespace
}  // namespace ferry::internal_format
