// Tests of index.json and the shard config block (spec §3, §4): byte-exact round trips of the
// fixtures written by Mosaic's writer, and strict rejection of malformed or unsafe indexes.
#include "ferry/format/index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/little_endian.h"
#include "format/fixture_testutil.h"

namespace ferry {
namespace {

using testing::FileText;

using ::testing::HasSubstr;
using OrderedJson = nlohmann::ordered_json;

using testing::kFixtures;
constexpr std::string_view kOrigin = "some/dataset/index.json";

DatasetDescription LoadFixtureIndex(const std::string& name) {
  const auto path = kFixtures / name / "index.json";
  auto index = ParseIndex(FileText(path), path.string());
  EXPECT_TRUE(index.has_value()) << index.status().ToString();
  return index.value_or(DatasetDescription{});
}

// The config block embedded in a raw shard file.
std::string EmbeddedConfig(const std::string& shard_bytes) {
  const uint64_t n = LoadU32LE(shard_bytes.data());
  const uint64_t begin = 4 + 4 * (n + 1);
  const uint64_t end = LoadU32LE(shard_bytes.data() + 4);
  return shard_bytes.substr(begin, end - begin);
}

// ---------------------------------------------------------------------------------------------
// Round trips of the fixtures

const char* const kWriterFixtures[] = {
    "all_scalars",     "compressed_br",     "compressed_bz2", "compressed_gz", "compressed_snappy",
    "compressed_zstd", "compressed_zstd_7", "empty_and_edge", "image_misc",    "images",
    "merged/part_a",   "merged/part_b",     "ndarray",        "oversize",      "pickle",
};

TEST(IndexRoundTrip, SerializeOfParseIsTheFixtureTextByteForByte) {
  for (const char* name : kWriterFixtures) {
    const auto path = kFixtures / name / "index.json";
    const std::string text = FileText(path);
    auto index = ParseIndex(text, path.string());
    ASSERT_TRUE(index.has_value()) << name << ": " << index.status().ToString();
    EXPECT_EQ(SerializeIndex(*index), text) << name;
  }
}

TEST(IndexRoundTrip, MergedRootIndexParsesThoughItsKeyOrderDiffers) {
  const std::string text = FileText(kFixtures / "merged" / "index.json");
  ASSERT_EQ(text.substr(0, 13), R"({"version": 2)");
  auto index = ParseIndex(text, "merged/index.json");
  ASSERT_TRUE(index.has_value()) << index.status().ToString();
  ASSERT_EQ(index->shards.size(), 6u);
  EXPECT_EQ(index->num_samples(), 45u);
  EXPECT_EQ(index->shards[0].raw_data.basename, "part_a/shard.00000.mds");
  EXPECT_FALSE(index->shards[0].zip_data.has_value());
  EXPECT_EQ(index->shards[3].raw_data.basename, "part_b/shard.00000.mds");
  ASSERT_TRUE(index->shards[3].zip_data.has_value());
  EXPECT_EQ(index->shards[3].zip_data->basename, "part_b/shard.00000.mds.zstd");
  // Re-serialized in the writer's (sorted) form: same content, different bytes.
  const std::string sorted = SerializeIndex(*index);
  EXPECT_NE(sorted, text);
  EXPECT_EQ(sorted.substr(0, 12), R"({"shards": [)");
  EXPECT_EQ(sorted.size(), text.size());
  auto again = ParseIndex(sorted, "sorted");
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(SerializeIndex(*again), sorted);
}

TEST(ShardConfig, SerializeEqualsTheBlockEmbeddedInFixtureShards) {
  for (const char* name : {"all_scalars", "empty_and_edge", "ndarray", "image_misc", "oversize",
                           "pickle", "merged/part_a"}) {
    const DatasetDescription index = LoadFixtureIndex(name);
    ASSERT_FALSE(index.shards.empty()) << name;
    for (const auto& shard : index.shards) {
      const std::string bytes = FileText(kFixtures / name / shard.raw_data.basename);
      const std::string block = EmbeddedConfig(bytes);
      EXPECT_EQ(SerializeShardConfig(*shard.config), block)
          << name << " " << shard.raw_data.basename;
      auto parsed = ParseShardConfig(block);
      ASSERT_TRUE(parsed.has_value()) << name << ": " << parsed.status().ToString();
      EXPECT_EQ(*parsed, *shard.config) << name;
    }
  }
}

TEST(ShardConfig, NonAsciiColumnNameIsEscaped) {
  const DatasetDescription index = LoadFixtureIndex("empty_and_edge");
  const ShardConfig& config = *index.shards[0].config;
  EXPECT_EQ(config.column_names.back(),
            "\xc3\xbcn\xc3\xaf"
            "code \xe5\x90\x8d\xe5\x89\x8d");
  EXPECT_THAT(SerializeShardConfig(config), HasSubstr(R"("\u00fcn\u00efcode \u540d\u524d"])"));
  EXPECT_TRUE(config.hashes.empty());
  EXPECT_TRUE(index.shards[0].raw_data.hashes.empty());
  EXPECT_EQ(config.size_limit, 67108864u);
}

TEST(ShardConfig, SpecWorkedExampleText) {
  ShardConfig c;
  c.column_names = {"id", "text"};
  c.column_encodings = {ColumnEncoding::Parse("int").value(), ColumnEncoding::Parse("str").value()};
  c.column_sizes = {8, std::nullopt};
  c.hashes = {"sha1"};
  c.size_limit = 67108864;
  const std::string text = SerializeShardConfig(c);
  EXPECT_EQ(
      text,
      R"({"column_encodings": ["int", "str"], "column_names": ["id", "text"], )"
      R"("column_sizes": [8, null], "compression": null, "format": "mds", "hashes": ["sha1"], )"
      R"("size_limit": 67108864, "version": 2})");
  EXPECT_EQ(text.size(), 191u);
  c.compression = "zstd:7";
  c.size_limit.reset();
  EXPECT_THAT(SerializeShardConfig(c), HasSubstr(R"("compression": "zstd:7")"));
  EXPECT_THAT(SerializeShardConfig(c), HasSubstr(R"("size_limit": null)"));
  EXPECT_EQ(ParseShardConfig(SerializeShardConfig(c)).value(), c);
}

TEST(ShardConfig, ParseErrorsAreDataLoss) {
  const std::string good = SerializeShardConfig(*LoadFixtureIndex("oversize").shards[0].config);
  auto mutate = [&](const std::function<void(OrderedJson&)>& fn) {
    OrderedJson j = OrderedJson::parse(good);
    fn(j);
    return j.dump();
  };
  struct Case {
    std::string text;
    const char* word;
  };
  const std::vector<Case> cases = {
      {"", "not valid JSON"},
      {"{", "not valid JSON"},
      {"[]", "object"},
      {mutate([](OrderedJson& j) { j.erase("hashes"); }), "missing key 'hashes'"},
      {mutate([](OrderedJson& j) { j["samples"] = 1; }), "unexpected key 'samples'"},
      {mutate([](OrderedJson& j) { j["version"] = 3; }), "version"},
      {mutate([](OrderedJson& j) { j["format"] = "tar"; }), "format"},
      {mutate([](OrderedJson& j) { j["column_encodings"][0] = "nope"; }), "nope"},
      {mutate([](OrderedJson& j) { j["column_sizes"][1] = 4; }), "column_sizes"},
  };
  for (const auto& c : cases) {
    auto parsed = ParseShardConfig(c.text);
    ASSERT_FALSE(parsed.has_value()) << c.text;
    EXPECT_EQ(parsed.error().code(), StatusCode::kDataLoss) << c.text;
    EXPECT_THAT(parsed.error().message(), HasSubstr(c.word)) << c.text;
  }
}

// ---------------------------------------------------------------------------------------------
// Small accessors

TEST(DatasetDescription, NumSamplesAndSharedConfigs) {
  const DatasetDescription scalars = LoadFixtureIndex("all_scalars");
  ASSERT_EQ(scalars.shards.size(), 9u);
  EXPECT_EQ(scalars.num_samples(), 50u);
  for (const auto& shard : scalars.shards) {
    EXPECT_EQ(shard.config.get(), scalars.shards[0].config.get()) << "one writer, one config";
  }
  const DatasetDescription oversize = LoadFixtureIndex("oversize");
  std::vector<uint64_t> counts;
  for (const auto& s : oversize.shards) counts.push_back(s.samples);
  EXPECT_EQ(counts, (std::vector<uint64_t>{0, 1, 2, 1, 1}));
  EXPECT_EQ(oversize.num_samples(), 5u);
  EXPECT_EQ(DatasetDescription{}.num_samples(), 0u);

  // Merged: two writer runs with different configs; each part's shards share one object.
  auto merged = ParseIndex(FileText(kFixtures / "merged" / "index.json"), "merged");
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(merged->shards[0].config.get(), merged->shards[2].config.get());
  EXPECT_EQ(merged->shards[3].config.get(), merged->shards[5].config.get());
  EXPECT_NE(merged->shards[0].config.get(), merged->shards[3].config.get());
  EXPECT_EQ(merged->shards[3].config->compression, "zstd");
  EXPECT_FALSE(merged->shards[0].config->compression.has_value());
}

TEST(DatasetDescription, EmptyDataset) {
  auto index = ParseIndex(R"({"shards": [], "version": 2})", kOrigin);
  ASSERT_TRUE(index.has_value());
  EXPECT_TRUE(index->shards.empty());
  EXPECT_EQ(SerializeIndex(*index), R"({"shards": [], "version": 2})");
}

TEST(DatasetDescription, Accessors) {
  const DatasetDescription scalars = LoadFixtureIndex("all_scalars");
  const ShardDescription& s = scalars.shards[0];
  ASSERT_NE(s.raw_data.FindHash("sha1"), nullptr);
  EXPECT_EQ(s.raw_data.FindHash("sha1")->size(), 40u);
  EXPECT_EQ(s.raw_data.FindHash("xxh64")->size(), 16u);
  EXPECT_EQ(s.raw_data.FindHash("md5"), nullptr);
  EXPECT_EQ(s.config->ColumnIndex("ID"), 0u);
  EXPECT_EQ(s.config->ColumnIndex("u8"), s.config->column_names.size() - 1);
  EXPECT_FALSE(s.config->ColumnIndex("id").has_value());  // case matters
  EXPECT_FALSE(s.config->HasUnsafeColumn());
  EXPECT_TRUE(LoadFixtureIndex("pickle").shards[0].config->HasUnsafeColumn());
  const DatasetDescription zstd7 = LoadFixtureIndex("compressed_zstd_7");
  const ShardDescription& zipped = zstd7.shards[1];
  ASSERT_TRUE(zipped.zip_data.has_value());
  EXPECT_EQ(zipped.zip_data->basename, "shard.00001.mds.zstd");
  EXPECT_EQ(zipped.config->compression, "zstd:7");
  EXPECT_NE(zipped.zip_data->FindHash("xxh128"), nullptr);
}

TEST(RawShardBasename, ZeroPaddedToAtLeastFiveDigits) {
  EXPECT_EQ(RawShardBasename(0), "shard.00000.mds");
  EXPECT_EQ(RawShardBasename(42), "shard.00042.mds");
  EXPECT_EQ(RawShardBasename(99999), "shard.99999.mds");
  EXPECT_EQ(RawShardBasename(100000), "shard.100000.mds");
  EXPECT_EQ(RawShardBasename(1234567), "shard.1234567.mds");
}

// ---------------------------------------------------------------------------------------------
// Basenames

TEST(ValidateBasename, AcceptsRelativePathsInsideTheFolder) {
  for (const char* name : {"shard.00000.mds", "part_a/shard.00000.mds", "a/b/c/shard.mds.zstd",
                           "..shard", "shard..", "...", ".hidden", "a/.b"}) {
    EXPECT_TRUE(ValidateBasename(name).ok()) << name << ": " << ValidateBasename(name).ToString();
  }
}

TEST(ValidateBasename, RejectsPathsThatLeaveTheFolder) {
  struct Case {
    std::string name;
    const char* word;
  };
  const std::vector<Case> cases = {
      {"", "empty"},
      {"/etc/passwd", "absolute"},
      {"/shard.00000.mds", "absolute"},
      {"..", ".."},
      {"../shard.00000.mds", ".."},
      {"part/../../x", ".."},
      {"part/..", ".."},
      {".", "'.'"},
      {"./shard.00000.mds", "'.'"},
      {"a/./b", "'.'"},
      {"a//b", "empty"},
      {"a/", "empty"},
      {"part\\shard.mds", "backslash"},
      {"..\\..\\x", "backslash"},
      {std::string("shard\0.mds", 10), "NUL"},
  };
  for (const auto& c : cases) {
    const Status s = ValidateBasename(c.name);
    ASSERT_FALSE(s.ok()) << "'" << c.name << "' was accepted";
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(s.message(), HasSubstr(c.word)) << c.name;
  }
}

// ---------------------------------------------------------------------------------------------
// Malformed indexes

class MalformedIndex : public ::testing::Test {
 protected:
  // A raw (oversize) or compressed (compressed_zstd) fixture index, changed by `fn`.
  static std::string Mutated(const std::function<void(OrderedJson&)>& fn,
                             const char* fixture = "oversize") {
    OrderedJson j = OrderedJson::parse(FileText(kFixtures / fixture / "index.json"));
    fn(j);
    return j.dump();
  }
  static void ExpectError(const std::string& text, StatusCode code,
                          std::vector<std::string> words) {
    auto index = ParseIndex(text, kOrigin);
    ASSERT_FALSE(index.has_value()) << text.substr(0, 200);
    EXPECT_EQ(index.error().code(), code) << index.error().ToString();
    words.push_back(std::string(kOrigin));
    for (const auto& w : words) {
      EXPECT_THAT(index.error().message(), HasSubstr(w));
    }
  }
};

TEST_F(MalformedIndex, NotJsonOrNotAnIndexObject) {
  ExpectError("", StatusCode::kDataLoss, {"not valid JSON"});
  ExpectError("{\"shards\": [", StatusCode::kDataLoss, {"not valid JSON"});
  ExpectError("not json", StatusCode::kDataLoss, {"not valid JSON"});
  ExpectError("[]", StatusCode::kDataLoss, {"not a JSON object"});
  ExpectError("2", StatusCode::kDataLoss, {"not a JSON object"});
  ExpectError(R"({"shards": []})", StatusCode::kDataLoss, {"version"});
  ExpectError(R"({"version": 2})", StatusCode::kDataLoss, {"shards"});
  ExpectError(R"({"version": 2, "shards": {}})", StatusCode::kDataLoss, {"shards"});
  ExpectError(R"({"version": 2, "shards": [1]})", StatusCode::kDataLoss, {"shard 0", "object"});
}

TEST_F(MalformedIndex, DeeplyNestedJsonIsAnErrorNotACrash) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  ExpectError(deep, StatusCode::kDataLoss, {"not a JSON object"});
  ExpectError(R"({"version": 2, "shards": )" + deep + "}", StatusCode::kDataLoss, {"shard 0"});
  auto config = ParseShardConfig(deep);
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().code(), StatusCode::kDataLoss);
}

TEST_F(MalformedIndex, VersionOtherThanTwo) {
  ExpectError(R"({"shards": [], "version": 3})", StatusCode::kInvalidArgument, {"version", "3"});
  ExpectError(R"({"shards": [], "version": 1})", StatusCode::kInvalidArgument, {"version"});
  ExpectError(R"({"shards": [], "version": "2"})", StatusCode::kInvalidArgument, {"version"});
  ExpectError(R"({"shards": [], "version": 2.0})", StatusCode::kInvalidArgument, {"version"});
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][2]["version"] = 1; }),
              StatusCode::kInvalidArgument, {"shard 2", "'version'"});
  // Mosaic's generic XSV writer (any separator) is not among the formats ferry reads.
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][0]["format"] = "xsv"; }),
              StatusCode::kInvalidArgument, {"shard 0", "'format'", "mds, json, csv, tsv"});
  // An MDS entry that says json is read as Mosaic's JSON format, whose keys it lacks.
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][0]["format"] = "json"; }),
              StatusCode::kDataLoss, {"shard 0", "missing key 'columns'"});
}

TEST_F(MalformedIndex, MissingAndExtraShardKeys) {
  for (const char* key :
       {"column_encodings", "column_names", "column_sizes", "compression", "format", "hashes",
        "raw_data", "samples", "size_limit", "version", "zip_data"}) {
    ExpectError(Mutated([&](OrderedJson& j) { j["shards"][1].erase(key); }), StatusCode::kDataLoss,
                {"shard 1", std::string("missing key '") + key + "'"});
  }
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][3]["extra"] = nullptr; }),
              StatusCode::kDataLoss, {"shard 3", "unexpected key 'extra'"});
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][0]["raw_data"].erase("hashes"); }),
              StatusCode::kDataLoss, {"shard 0", "raw_data", "missing key 'hashes'"});
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][0]["raw_data"]["size"] = 1; }),
              StatusCode::kDataLoss, {"shard 0", "raw_data", "unexpected key 'size'"});
  ExpectError(
      Mutated([](OrderedJson& j) { j["shards"][0]["zip_data"].erase("bytes"); }, "compressed_zstd"),
      StatusCode::kDataLoss, {"shard 0", "zip_data", "missing key 'bytes'"});
}

TEST_F(MalformedIndex, WrongTypes) {
  struct Case {
    std::function<void(OrderedJson&)> fn;
    const char* field;
  };
  const std::vector<Case> cases = {
      {[](OrderedJson& j) { j["shards"][1]["samples"] = "1"; }, "'samples'"},
      {[](OrderedJson& j) { j["shards"][1]["samples"] = -1; }, "'samples'"},
      {[](OrderedJson& j) { j["shards"][1]["samples"] = 1.5; }, "'samples'"},
      {[](OrderedJson& j) { j["shards"][1]["samples"] = nullptr; }, "'samples'"},
      {[](OrderedJson& j) { j["shards"][1]["column_names"] = "blob"; }, "'column_names'"},
      {[](OrderedJson& j) { j["shards"][1]["column_names"][0] = 1; }, "'column_names'"},
      {[](OrderedJson& j) { j["shards"][1]["column_encodings"] = nullptr; }, "'column_encodings'"},
      {[](OrderedJson& j) { j["shards"][1]["column_sizes"] = 8; }, "'column_sizes'"},
      {[](OrderedJson& j) { j["shards"][1]["column_sizes"][1] = "8"; }, "'column_sizes'"},
      {[](OrderedJson& j) { j["shards"][1]["column_sizes"][1] = -8; }, "'column_sizes'"},
      {[](OrderedJson& j) { j["shards"][1]["compression"] = 5; }, "'compression'"},
      {[](OrderedJson& j) { j["shards"][1]["hashes"] = "sha1"; }, "'hashes'"},
      {[](OrderedJson& j) { j["shards"][1]["size_limit"] = "8kb"; }, "'size_limit'"},
      {[](OrderedJson& j) { j["shards"][1]["size_limit"] = -1; }, "'size_limit'"},
      {[](OrderedJson& j) { j["shards"][1]["raw_data"] = "shard.00001.mds"; }, "'raw_data'"},
      {[](OrderedJson& j) { j["shards"][1]["raw_data"]["basename"] = 1; }, "'basename'"},
      {[](OrderedJson& j) { j["shards"][1]["raw_data"]["bytes"] = "811"; }, "'bytes'"},
      {[](OrderedJson& j) { j["shards"][1]["raw_data"]["bytes"] = -811; }, "'bytes'"},
      {[](OrderedJson& j) { j["shards"][1]["raw_data"]["hashes"] = OrderedJson::array(); },
       "'hashes'"},
      {[](OrderedJson& j) { j["shards"][1]["raw_data"]["hashes"]["sha1"] = 1; }, "'hashes'"},
  };
  for (const auto& c : cases) {
    ExpectError(Mutated(c.fn), StatusCode::kDataLoss, {"shard 1", c.field});
  }
}

TEST_F(MalformedIndex, ZipDataAndCompressionMustAgree) {
  ExpectError(
      Mutated([](OrderedJson& j) { j["shards"][1]["zip_data"] = j["shards"][1]["raw_data"]; }),
      StatusCode::kDataLoss, {"shard 1", "zip_data", "no compression"});
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][2]["compression"] = "zstd"; }),
              StatusCode::kDataLoss, {"shard 2", "zip_data", "zstd"});
  ExpectError(
      Mutated([](OrderedJson& j) { j["shards"][0]["zip_data"] = nullptr; }, "compressed_gz"),
      StatusCode::kDataLoss, {"shard 0", "zip_data", "gz"});
  ExpectError(
      Mutated([](OrderedJson& j) { j["shards"][0]["compression"] = nullptr; }, "compressed_gz"),
      StatusCode::kDataLoss, {"shard 0", "zip_data", "no compression"});
}

TEST_F(MalformedIndex, ColumnsThatDisagree) {
  // oversize: column_names ["blob", "n"], encodings ["bytes", "int"], sizes [null, 8].
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][1]["column_sizes"][1] = 4; }),
              StatusCode::kDataLoss, {"shard 1", "column_sizes", "'n'", "4", "8"});
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][1]["column_sizes"][0] = 8; }),
              StatusCode::kDataLoss, {"shard 1", "column_sizes", "'blob'", "null"});
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][1]["column_sizes"][1] = nullptr; }),
              StatusCode::kDataLoss, {"column_sizes", "'n'"});
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][1]["column_sizes"].push_back(nullptr); }),
              StatusCode::kDataLoss, {"shard 1", "column_sizes"});
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][1]["column_encodings"].push_back("int"); }),
              StatusCode::kDataLoss, {"shard 1", "2 column names but 3 encodings"});
  ExpectError(Mutated([](OrderedJson& j) {
                j["shards"][1]["column_names"] = {"n", "n"};
              }),
              StatusCode::kDataLoss, {"shard 1", "column_names", "twice"});
}

TEST_F(MalformedIndex, UnknownEncodingCompressionOrHash) {
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][1]["column_encodings"][0] = "bytez"; }),
              StatusCode::kInvalidArgument, {"shard 1", "'blob'", "bytez"});
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][1]["column_encodings"][0] = "str:x"; }),
              StatusCode::kInvalidArgument, {"shard 1", "str:x"});
  ExpectError(
      Mutated([](OrderedJson& j) { j["shards"][0]["compression"] = "lz4"; }, "compressed_zstd"),
      StatusCode::kInvalidArgument, {"shard 0", "lz4"});
  ExpectError(
      Mutated([](OrderedJson& j) { j["shards"][0]["compression"] = "zstd:23"; }, "compressed_zstd"),
      StatusCode::kInvalidArgument, {"shard 0", "zstd:23"});
  ExpectError(Mutated([](OrderedJson& j) {
                j["shards"][4]["hashes"] = {"sha512_256"};
                j["shards"][4]["raw_data"]["hashes"] = {{"sha512_256", "00"}};
              }),
              StatusCode::kInvalidArgument, {"shard 4", "hashes", "sha512_256"});
  // A listed hash without a digest in a file's hashes.
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][2]["raw_data"]["hashes"].erase("sha1"); }),
              StatusCode::kDataLoss, {"shard 2", "raw_data", "no 'sha1' digest"});
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][2]["zip_data"]["hashes"].erase("sha256"); },
                      "compressed_zstd"),
              StatusCode::kDataLoss, {"shard 2", "zip_data", "no 'sha256' digest"});
}

TEST_F(MalformedIndex, UnsafeBasenames) {
  for (const std::string name : {"/etc/passwd", "../shard.00001.mds", "a/../../b", "",
                                 "./shard.00001.mds", "a/./b", "a\\b", "a//b"}) {
    auto raw = ParseIndex(
        Mutated([&](OrderedJson& j) { j["shards"][1]["raw_data"]["basename"] = name; }), kOrigin);
    ASSERT_FALSE(raw.has_value()) << "'" << name << "' accepted";
    EXPECT_EQ(raw.error().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(raw.error().message(), HasSubstr(kOrigin));
    EXPECT_THAT(raw.error().message(), HasSubstr("shard 1"));
    EXPECT_THAT(raw.error().message(), HasSubstr("raw_data"));
    EXPECT_THAT(raw.error().message(), HasSubstr("basename '" + name + "'"));

    auto zip =
        ParseIndex(Mutated([&](OrderedJson& j) { j["shards"][2]["zip_data"]["basename"] = name; },
                           "compressed_zstd"),
                   kOrigin);
    ASSERT_FALSE(zip.has_value()) << "'" << name << "' accepted";
    EXPECT_EQ(zip.error().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(zip.error().message(), HasSubstr("zip_data"));
  }
}

TEST_F(MalformedIndex, SizesBeyondWhatAShardCanHold) {
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][1]["raw_data"]["bytes"] = 1ull << 32; }),
              StatusCode::kDataLoss, {"shard 1", "4 GiB"});
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][1]["samples"] = 4294967295u; }),
              StatusCode::kDataLoss, {"shard 1", "4294967295 samples"});
  ExpectError(Mutated([](OrderedJson& j) { j["shards"][1]["samples"] = 1000; }),
              StatusCode::kDataLoss, {"shard 1", "1000 samples"});
}

TEST_F(MalformedIndex, AnyValidJsonIsAccepted) {
  // The reference reader uses json.load: whitespace, key order and escapes do not matter.
  OrderedJson j = OrderedJson::parse(FileText(kFixtures / "oversize" / "index.json"));
  const std::string pretty = j.dump(2);
  auto index = ParseIndex(pretty, kOrigin);
  ASSERT_TRUE(index.has_value()) << index.status().ToString();
  EXPECT_EQ(SerializeIndex(*index), FileText(kFixtures / "oversize" / "index.json"));
}

}  // namespace
}  // namespace ferry
