// Tests of the "webdataset" ShardFormat: every fixture shard, opened through the format seam as
// the stream layer opens it, yields what WebDataset itself yields (`__key__`, then each field's
// bytes by extension); a shard that differs from its description, or that WebDataset refuses,
// is kDataLoss naming it.
#include "format/webdataset_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "format/fixture_testutil.h"
#include "format/hash.h"
#include "format/webdataset_fixture_testutil.h"

namespace ferry::internal_format {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using testing::WebDatasetFixtures;

ShardDescription Describe(uint64_t bytes, uint64_t samples) {
  return {.config = std::make_shared<const ShardConfig>(),
          .raw_data = {.basename = "shard.tar", .bytes = bytes},
          .samples = samples,
          .format = "webdataset"};
}

// Opens `shard` as the cache leaves it: a .tar in place, a .tar.gz decompressed.
Result<std::unique_ptr<ShardReader>> OpenShard(const fs::path& shard, uint64_t samples) {
  const WebDatasetFormat format;
  if (shard.string().ends_with(".gz")) {
    std::string tar = testing::TarBytes(shard);
    const uint64_t bytes = tar.size();
    return format.FromBuffer(std::move(tar), Describe(bytes, samples), shard.string());
  }
  return format.Open(shard, Describe(fs::file_size(shard), samples));
}

class WebDatasetFormatFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(WebDatasetFormatFixture, EverySampleIsWhatWebDatasetYields) {
  for (const auto& [name, want] : testing::ExpectedWebDatasetShards(GetParam())) {
    SCOPED_TRACE(name);
    auto reader = OpenShard(WebDatasetFixtures() / GetParam() / name, want.size());
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    ASSERT_EQ((*reader)->num_samples(), want.size());
    SampleFields out;
    for (uint32_t i = 0; i < (*reader)->num_samples(); ++i) {
      ASSERT_TRUE((*reader)->ReadSample(i, out).ok());
      ASSERT_NE(out.config, nullptr);
      ASSERT_EQ(out.fields.size(), out.config->column_names.size());
      ASSERT_EQ(out.config->column_names[0], "__key__");
      EXPECT_EQ(out.config->column_encodings[0].text(), "str");
      EXPECT_EQ(out.fields[0], want[i].key) << "sample " << i;
      std::map<std::string, std::pair<uint64_t, std::string>> fields;
      for (size_t f = 1; f < out.fields.size(); ++f) {
        EXPECT_EQ(out.config->column_encodings[f].text(), "bytes");
        fields[out.config->column_names[f]] = {out.fields[f].size(),
                                               HashHex("sha256", out.fields[f]).value()};
      }
      EXPECT_EQ(fields, want[i].fields) << "sample " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, WebDatasetFormatFixture,
                         ::testing::Values("tarwriter", "gnutar", "gnutar_gz", "edge"));

TEST(WebDatasetFormat, SamplesWithTheSameFieldsShareAConfigAndOthersHaveTheirOwn) {
  std::set<const ShardConfig*> configs;
  std::set<std::set<std::string>> field_sets;
  for (const auto& [name, want] : testing::ExpectedWebDatasetShards("edge")) {
    auto reader = OpenShard(WebDatasetFixtures() / "edge" / name, want.size());
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    std::map<std::set<std::string>, const ShardConfig*> seen;
    SampleFields out;
    for (uint32_t i = 0; i < (*reader)->num_samples(); ++i) {
      ASSERT_TRUE((*reader)->ReadSample(i, out).ok());
      const std::set<std::string> names(out.config->column_names.begin(),
                                        out.config->column_names.end());
      auto [it, added] = seen.try_emplace(names, out.config);
      EXPECT_EQ(it->second, out.config) << "one config per set of fields in a shard";
      field_sets.insert(names);
      configs.insert(out.config);
    }
  }
  EXPECT_GT(field_sets.size(), 1u) << "the edge fixture mixes fields";
  EXPECT_GE(configs.size(), field_sets.size());
}

TEST(WebDatasetFormat, AShardUnlikeItsDescriptionIsDataLossNamingIt) {
  const fs::path shard = WebDatasetFixtures() / "tarwriter" / "train-000000.tar";
  const WebDatasetFormat format;
  const uint64_t bytes = fs::file_size(shard);
  auto opened = format.Open(shard, Describe(bytes, 9999));
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(opened.error().message(), HasSubstr("train-000000.tar"));
  EXPECT_THAT(opened.error().message(), HasSubstr("9999"));

  opened = format.Open(shard, Describe(bytes + 512, 9999));
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(opened.error().message(), HasSubstr("bytes"));

  std::string cut = testing::FileText(shard);
  cut.resize(cut.size() / 2);
  const uint64_t cut_bytes = cut.size();
  opened = format.FromBuffer(std::move(cut), Describe(cut_bytes, 1), "mem://cut.tar");
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(opened.error().message(), HasSubstr("mem://cut.tar"));
}

TEST(WebDatasetFormat, ATarWebDatasetRefusesIsDataLossNamingTheShardAndMember) {
  const fs::path shard = WebDatasetFixtures() / "bad_duplicate" / "bad-000000.tar";
  auto opened = WebDatasetFormat().Open(shard, Describe(fs::file_size(shard), 1));
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(opened.error().message(), HasSubstr("bad-000000.tar: k.jpg"));
}

TEST(WebDatasetFormat, CannotReadASampleByRange) {
  const RangeRead never = [](uint64_t, uint64_t) -> Result<std::string> {
    ADD_FAILURE() << "no range is read";
    return std::string();
  };
  auto ranged = WebDatasetFormat().ReadByRange(never, Describe(1024, 1), 0);
  ASSERT_TRUE(ranged.ok());
  EXPECT_FALSE(ranged->has_value());
}

}  // namespace
}  // namespace ferry::internal_format
