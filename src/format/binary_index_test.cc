// Tests of the binary index: every reference writer's index.json and a merged index of a
// thousand sub-indexes come back as the description the JSON parses to, shared configs stay
// shared, and a binary index of other JSON, cut short or damaged anywhere never decodes.
#include "format/binary_index.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "ferry/format/index.h"
#include "ferry/format/merge_index.h"
#include "format/fixture_testutil.h"

namespace ferry::internal_format {
namespace {

namespace fs = std::filesystem;

DatasetDescription Parsed(std::string_view text) {
  auto parsed = ParseIndexFile(text, "index.json");
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  return parsed.value_or(DatasetDescription{});
}

// Encodes the description `text` parses to and decodes it again.
DatasetDescription RoundTrip(std::string_view text) {
  const BinaryIndexSource source = DescribeIndexSource(text);
  const std::string binary = EncodeBinaryIndex(Parsed(text), source);
  auto decoded = DecodeBinaryIndex(binary, source, "index.bin");
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  return decoded.value_or(DatasetDescription{});
}

TEST(BinaryIndexTest, EveryReferenceIndexRoundTrips) {
  size_t indexes = 0;
  std::set<std::string> formats;
  bool compressed = false;
  bool companions = false;
  for (const auto& entry : fs::recursive_directory_iterator(testing::kFixtures.parent_path())) {
    if (entry.path().filename() != "index.json") continue;
    SCOPED_TRACE(entry.path().string());
    const std::string text = testing::FileText(entry.path());
    const DatasetDescription parsed = Parsed(text);
    ASSERT_FALSE(parsed.shards.empty());
    EXPECT_EQ(RoundTrip(text), parsed);
    ++indexes;
    for (const ShardDescription& shard : parsed.shards) {
      formats.insert(shard.format);
      compressed |= shard.zip_data.has_value();
      companions |= !shard.companions.empty();
    }
  }
  // The fixtures cover what the form must hold: MDS and Mosaic's split formats, compressed
  // shards and companion files.
  EXPECT_GE(indexes, 15u);
  EXPECT_EQ(formats, (std::set<std::string>{"csv", "json", "mds", "tsv"}));
  EXPECT_TRUE(compressed);
  EXPECT_TRUE(companions);
}

// An index of `shards` MDS shards under `folder`, in two writer runs with other columns.
std::string SubIndex(int folder, int shards) {
  DatasetDescription description;
  for (int run = 0; run < 2; ++run) {
    auto config = std::make_shared<ShardConfig>();
    config->column_names = {"id", run == 0 ? "image" : "text"};
    config->column_encodings = {*ColumnEncoding::Parse("int"),
                                *ColumnEncoding::Parse(run == 0 ? "jpeg" : "str")};
    config->column_sizes = {8, std::nullopt};
    config->hashes = {"sha1", "xxh64"};
    config->size_limit = uint64_t{1} << 26;
    for (int i = 0; i < shards; ++i) {
      ShardDescription shard;
      shard.config = config;
      shard.samples = 100 + folder + i;
      shard.raw_data = {.basename = RawShardBasename(run * shards + i),
                        .bytes = 100'000u + folder * 7u + i,
                        .hashes = {{"sha1", fmt::format("{:040x}", folder * 1000 + i)},
                                   {"xxh64", fmt::format("{:016x}", folder + i)}}};
      description.shards.push_back(std::move(shard));
    }
  }
  return SerializeIndex(description);
}

TEST(BinaryIndexTest, MergedIndexOfThousandSubIndexesRoundTrips) {
  std::vector<IndexPart> parts;
  for (int folder = 0; folder < 1000; ++folder) {
    parts.push_back({.origin = fmt::format("part_{}/index.json", folder),
                     .folder = fmt::format("part_{:04d}", folder),
                     .text = SubIndex(folder, 1)});
  }
  auto merged = MergeIndexParts(parts);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  const DatasetDescription parsed = Parsed(merged->text);
  ASSERT_EQ(parsed.shards.size(), 2000u);
  const DatasetDescription decoded = RoundTrip(merged->text);
  EXPECT_EQ(decoded, parsed);
  EXPECT_EQ(decoded.shards[1999].raw_data.basename, "part_0999/shard.00001.mds");
  EXPECT_EQ(decoded.num_samples(), parsed.num_samples());

  // Two configs in all, each one object shared by its shards: a process holds each once.
  std::set<const ShardConfig*> configs;
  for (const ShardDescription& shard : decoded.shards) configs.insert(shard.config.get());
  EXPECT_EQ(configs.size(), 2u);
}

TEST(BinaryIndexTest, MadeFromOtherJsonIsFailedPrecondition) {
  const std::string text = SubIndex(1, 2);
  const std::string binary = EncodeBinaryIndex(Parsed(text), DescribeIndexSource(text));
  const std::string other = SubIndex(2, 2);
  ASSERT_EQ(other.size(), text.size());  // the digest tells them apart, not the size
  auto decoded = DecodeBinaryIndex(binary, DescribeIndexSource(other), "/c/.ferry/index.bin");
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(decoded.status().message().find("/c/.ferry/index.bin"), std::string::npos);
}

TEST(BinaryIndexTest, CutShortOrDamagedNeverDecodes) {
  const std::string text = SubIndex(3, 2);
  const BinaryIndexSource source = DescribeIndexSource(text);
  const std::string binary = EncodeBinaryIndex(Parsed(text), source);
  for (size_t cut = 0; cut < binary.size(); ++cut) {
    auto decoded = DecodeBinaryIndex(binary.substr(0, cut), source, "index.bin");
    ASSERT_FALSE(decoded.ok()) << "cut at " << cut;
    EXPECT_EQ(decoded.status().code(), StatusCode::kDataLoss) << "cut at " << cut;
  }
  // A flipped bit anywhere but the source fields (which say "other JSON") is damage.
  for (size_t at = 0; at < binary.size(); ++at) {
    if (at >= 8 && at < 24) continue;
    std::string damaged = binary;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x10);
    auto decoded = DecodeBinaryIndex(damaged, source, "index.bin");
    ASSERT_FALSE(decoded.ok()) << "flipped at " << at;
    EXPECT_EQ(decoded.status().code(), StatusCode::kDataLoss) << "flipped at " << at;
  }
  EXPECT_TRUE(DecodeBinaryIndex(binary, source, "index.bin").ok());
}

}  // namespace
}  // namespace ferry::internal_format
