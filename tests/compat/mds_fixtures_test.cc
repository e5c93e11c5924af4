// Compatibility with Mosaic Streaming, checked against the datasets its real MDSWriter wrote
// (shared/fixtures/mds, see its README). The test walks the fixture folder, so a dataset added
// there is checked without code changes:
//   - every sample decodes to exactly the value in expected.json, and every stored record has
//     the SHA-256 expected.json gives;
//   - writing the decoded values again with the fixture's writer settings reproduces the raw
//     shards and index.json byte for byte (compressed bytes depend on codec versions and are
//     checked by value instead);
//   - merge-index over the fixture's parts reproduces the merged index.json byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "cli/sample_json.h"
#include "ferry/format/local_dataset.h"
#include "ferry/format/mds_shard_reader.h"
#include "ferry/format/mds_writer.h"
#include "ferry/format/merge_index.h"
#include "format/compression.h"
#include "format/fixture_testutil.h"
#include "format/hash.h"

namespace ferry {
namespace {

using testing::FileText;

using OrderedJson = nlohmann::ordered_json;

// Every folder below the fixtures root that holds an expected.json.
std::vector<std::string> FixtureNames() {
  std::vector<std::string> names;
  std::error_code ec;
  const auto root = testing::FixturesDir();
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename() == "expected.json") {
      names.push_back(it->path().parent_path().lexically_relative(root).generic_string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

OrderedJson LoadJson(const std::filesystem::path& path) {
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.has_value()) << text.status().ToString();
  return text ? OrderedJson::parse(*text) : OrderedJson();
}

// The raw shard bytes of a fixture or of our output, decompressing when needed.
std::string RawShard(const std::filesystem::path& folder, const ShardDescription& entry) {
  if (!entry.zip_data) return FileText(folder / entry.raw_data.basename);
  auto compression = Compression::Parse(*entry.config->compression);
  EXPECT_TRUE(compression.has_value());
  auto raw =
      compression->Decompress(FileText(folder / entry.zip_data->basename), entry.raw_data.bytes);
  EXPECT_TRUE(raw.has_value()) << raw.status().ToString();
  return raw.value_or("");
}

DatasetDescription LoadIndex(const std::filesystem::path& folder) {
  auto index = ParseIndex(FileText(folder / "index.json"), (folder / "index.json").string());
  EXPECT_TRUE(index.has_value()) << index.status().ToString();
  return index.value_or(DatasetDescription{});
}

// The fixtures that were written in parts and combined with merge_index.
std::vector<std::string> MergedFixtureNames() {
  std::vector<std::string> names;
  for (const auto& name : FixtureNames()) {
    auto text = ReadFileToString(testing::FixturesDir() / name / "expected.json");
    if (text && OrderedJson::parse(*text).contains("parts")) names.push_back(name);
  }
  return names;
}

class FixtureTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::filesystem::path folder() const { return testing::FixturesDir() / GetParam(); }
};

TEST(FixtureFolder, HoldsTheFixtures) {
  ASSERT_TRUE(std::filesystem::is_directory(testing::FixturesDir()))
      << "fixtures not found at " << testing::FixturesDir() << " (set FERRY_FIXTURES_DIR)";
  EXPECT_GE(FixtureNames().size(), 13u);
}

TEST_P(FixtureTest, DecodesToExpectedValues) {
  const OrderedJson expected = LoadJson(folder() / "expected.json");
  LocalDatasetOptions options;
  options.allow_unsafe_types = true;
  const DatasetDescription index = LoadIndex(folder());
  ASSERT_FALSE(index.shards.empty());
  if (!index.shards[0].config->hashes.empty()) {
    options.validate_hash = index.shards[0].config->hashes[0];
  }
  auto dataset = LocalDataset::Open(folder(), options);
  ASSERT_TRUE(dataset.has_value()) << dataset.status().ToString();
  const LocalDataset& ds = **dataset;

  ASSERT_EQ(ds.num_samples(), expected["num_samples"].get<uint64_t>());
  // Columns, in stored order.
  const ShardConfig& config = *ds.index().shards[0].config;
  const auto& columns = expected["columns"];
  ASSERT_EQ(config.column_names.size(), columns.size());
  for (size_t c = 0; c < columns.size(); ++c) {
    EXPECT_EQ(config.column_names[c], columns[c]["name"].get<std::string>());
    EXPECT_EQ(config.column_encodings[c].text(), columns[c]["encoding"].get<std::string>());
    EXPECT_EQ(config.column_sizes[c].has_value(), !columns[c]["size"].is_null());
    if (config.column_sizes[c]) {
      EXPECT_EQ(*config.column_sizes[c], columns[c]["size"].get<uint32_t>());
    }
  }
  // Shards.
  const auto& shards = expected["shards"];
  ASSERT_EQ(ds.index().shards.size(), shards.size());
  for (size_t k = 0; k < shards.size(); ++k) {
    const ShardDescription& s = ds.index().shards[k];
    EXPECT_EQ(s.raw_data.basename, shards[k]["raw_basename"].get<std::string>());
    EXPECT_EQ(s.zip_data.has_value(), !shards[k]["zip_basename"].is_null());
    if (s.zip_data) {
      EXPECT_EQ(s.zip_data->basename, shards[k]["zip_basename"].get<std::string>());
    }
    EXPECT_EQ(s.samples, shards[k]["samples"].get<uint64_t>());
  }
  // Every sample, value for value, and every record's bytes.
  const auto& samples = expected["samples"];
  const auto& record_sha = expected["record_sha256"];
  ASSERT_EQ(samples.size(), ds.num_samples());
  for (uint64_t i = 0; i < ds.num_samples(); ++i) {
    SCOPED_TRACE("sample " + std::to_string(i));
    auto where = ds.Locate(i);
    ASSERT_TRUE(where.has_value());
    auto opened = ds.Shard(where->first);
    ASSERT_TRUE(opened.has_value()) << opened.status().ToString();
    const auto* shard = dynamic_cast<const MdsShardReader*>(opened->get());
    ASSERT_NE(shard, nullptr) << "an MDS shard is read by MdsShardReader";
    EXPECT_EQ(HashHex("sha256", shard->record(where->second)).value(),
              record_sha[i].get<std::string>());
    auto fields = shard->Fields(where->second);
    ASSERT_TRUE(fields.has_value()) << fields.status().ToString();
    auto line = SampleJsonLine(shard->config(), *fields);
    ASSERT_TRUE(line.has_value()) << line.status().ToString();
    OrderedJson want = samples[i];
    for (size_t c = 0; c < config.column_names.size(); ++c) {
      // Only Python can produce repr(unpickled object); ferry never unpickles.
      if (config.column_encodings[c].unsafe()) want[config.column_names[c]].erase("repr");
    }
    EXPECT_EQ(OrderedJson::parse(*line), want);
    // The typed decoder accepts every stored value too.
    auto values = ds.Get(i);
    ASSERT_TRUE(values.has_value()) << values.status().ToString();
    EXPECT_EQ(values->size(), config.column_names.size());
  }
}

// Rewrites one dataset (the fixture folder `source`) with the writer arguments the fixture
// records, into `out`, and compares the result.
void RewriteAndCompare(const std::filesystem::path& source, const OrderedJson& writer_args,
                       const std::filesystem::path& out) {
  LocalDatasetOptions read_options;
  read_options.allow_unsafe_types = true;
  auto dataset = LocalDataset::Open(source, read_options);
  ASSERT_TRUE(dataset.has_value()) << dataset.status().ToString();

  MdsWriterOptions options;
  options.out = out;
  for (const auto& [name, encoding] : writer_args["columns"].items()) {
    options.columns.emplace_back(name, encoding.get<std::string>());
  }
  if (!writer_args["compression"].is_null()) {
    options.compression = writer_args["compression"].get<std::string>();
  }
  if (!writer_args["hashes"].is_null()) {
    options.hashes = writer_args["hashes"].get<std::vector<std::string>>();
  }
  const OrderedJson& limit = writer_args["size_limit"];
  if (limit.is_null()) {
    options.size_limit.reset();
  } else if (limit.is_number_integer()) {
    options.size_limit = limit.get<uint64_t>();
  } else if (limit.get<std::string>().starts_with("(default")) {
    options.size_limit = kDefaultSizeLimit;
  } else {
    auto resolved = ResolveSizeLimit(limit.get<std::string>());
    ASSERT_TRUE(resolved.has_value());
    options.size_limit = *resolved;
  }
  auto writer = MdsWriter::Create(options);
  ASSERT_TRUE(writer.has_value()) << writer.status().ToString();
  for (uint64_t i = 0; i < (*dataset)->num_samples(); ++i) {
    auto values = (*dataset)->Get(i);
    ASSERT_TRUE(values.has_value()) << values.status().ToString();
    Status s = (*writer)->WriteValues(*values);
    ASSERT_TRUE(s.ok()) << "sample " << i << ": " << s.ToString();
  }
  auto written = (*writer)->Finish();
  ASSERT_TRUE(written.has_value()) << written.status().ToString();

  const DatasetDescription theirs = LoadIndex(source);
  const DatasetDescription ours = LoadIndex(out);
  ASSERT_EQ(ours.shards.size(), theirs.shards.size());
  bool compressed = false;
  for (size_t k = 0; k < theirs.shards.size(); ++k) {
    SCOPED_TRACE("shard " + std::to_string(k));
    const ShardDescription& a = ours.shards[k];
    const ShardDescription& b = theirs.shards[k];
    EXPECT_EQ(*a.config, *b.config);
    EXPECT_EQ(a.samples, b.samples);
    EXPECT_EQ(a.raw_data, b.raw_data);  // name, size and every hash of the raw bytes
    EXPECT_EQ(RawShard(out, a), RawShard(source, b));
    ASSERT_EQ(a.zip_data.has_value(), b.zip_data.has_value());
    if (a.zip_data) {
      compressed = true;
      EXPECT_EQ(a.zip_data->basename, b.zip_data->basename);
      // Our compressed bytes differ by codec version; their digests must still be right.
      const std::string zipped = FileText(out / a.zip_data->basename);
      EXPECT_EQ(zipped.size(), a.zip_data->bytes);
      for (const auto& [algo, digest] : a.zip_data->hashes) {
        EXPECT_EQ(HashHex(algo, zipped).value(), digest) << algo;
      }
      EXPECT_FALSE(std::filesystem::exists(out / a.raw_data.basename))
          << "only the compressed file is written";
    }
  }
  if (!compressed) {
    EXPECT_EQ(FileText(out / "index.json"), FileText(source / "index.json"));
  }
  // Our index serializer reproduces theirs exactly, compressed or not.
  EXPECT_EQ(SerializeIndex(theirs), FileText(source / "index.json"));
}

TEST_P(FixtureTest, RewriteReproducesShardsAndIndex) {
  const OrderedJson expected = LoadJson(folder() / "expected.json");
  testing::TempDir tmp;
  if (expected.contains("parts")) {
    for (const auto& part : expected["parts"]) {
      SCOPED_TRACE(part["dir"].get<std::string>());
      const std::string dir = part["dir"].get<std::string>();
      RewriteAndCompare(folder() / dir, part["writer_args"], tmp / dir);
    }
    return;
  }
  RewriteAndCompare(folder(), expected["writer_args"], tmp / "out");
}

class MergedFixtureTest : public FixtureTest {};

TEST_P(MergedFixtureTest, MergeIndexReproducesMergedIndex) {
  const OrderedJson expected = LoadJson(folder() / "expected.json");
  testing::TempDir tmp;
  for (const auto& part : expected["parts"]) {
    const std::string dir = part["dir"].get<std::string>();
    std::filesystem::create_directories(tmp / dir);
    std::filesystem::copy_file(folder() / dir / "index.json", tmp / dir / "index.json");
  }
  auto merged = MergeIndexUnder(tmp.path());
  ASSERT_TRUE(merged.has_value()) << merged.status().ToString();
  EXPECT_EQ(*merged, LoadIndex(folder()).shards.size());
  EXPECT_EQ(FileText(tmp / "index.json"), FileText(folder() / "index.json"));
  // Never overwritten.
  auto again = MergeIndexUnder(tmp.path());
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code(), StatusCode::kAlreadyExists);
}

std::string TestName(const ::testing::TestParamInfo<std::string>& param_info) {
  std::string name = param_info.param;
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); },
      '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Mds, FixtureTest, ::testing::ValuesIn(FixtureNames()), TestName);
INSTANTIATE_TEST_SUITE_P(Mds, MergedFixtureTest, ::testing::ValuesIn(MergedFixtureNames()),
                         TestName);
// Without the fixture folder there is nothing to instantiate; HoldsTheFixtures fails instead.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FixtureTest);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MergedFixtureTest);

}  // namespace
}  // namespace ferry
