#include "format/webdataset_samples.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "format/fixture_testutil.h"
#include "format/hash.h"
#include "format/tar_scan.h"
#include "format/webdataset_fixture_testutil.h"

namespace ferry::internal_format {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using testing::TarBytes;
using testing::WebDatasetFixtures;

class WebDatasetFixture : public ::testing::TestWithParam<std::string> {};

// Every shard yields what WebDataset itself yields: the same samples in the same order, each
// with the same fields, sizes and bytes.
TEST_P(WebDatasetFixture, YieldsWhatWebDatasetYields) {
  for (const auto& [name, want] : testing::ExpectedWebDatasetShards(GetParam())) {
    SCOPED_TRACE(name);
    const std::string tar = TarBytes(WebDatasetFixtures() / GetParam() / name);
    auto samples = ReadWebDatasetSamples(tar, name);
    ASSERT_TRUE(samples.ok()) << samples.status().ToString();
    ASSERT_EQ(samples->size(), want.size());
    for (size_t i = 0; i < samples->size(); ++i) {
      const WebDatasetSample& got = (*samples)[i];
      EXPECT_EQ(got.key, want[i].key) << "sample " << i;
      std::map<std::string, std::pair<uint64_t, std::string>> fields;
      for (const WebDatasetField& f : got.fields) {
        fields[f.name] = {
            f.size, HashHex("sha256", std::string_view(tar).substr(f.offset, f.size)).value_or("")};
      }
      EXPECT_EQ(fields, want[i].fields) << "sample " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, WebDatasetFixture,
                         ::testing::Values("tarwriter", "gnutar", "gnutar_gz", "edge"));

TEST(WebDatasetSamples, ARepeatedFieldIsAnErrorNamingTheShardAndMember) {
  const fs::path shard = WebDatasetFixtures() / "bad_duplicate" / "bad-000000.tar";
  auto samples = ReadWebDatasetSamples(TarBytes(shard), "bad-000000.tar");
  ASSERT_FALSE(samples.ok());
  EXPECT_EQ(samples.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(samples.status().message(), HasSubstr("bad-000000.tar: k.jpg"));
  EXPECT_THAT(samples.status().message(), HasSubstr("duplicate file name in tar file"));
}

TEST(WebDatasetSamples, KeysSplitAtTheFirstDotOfTheLastComponent) {
  const std::vector<TarMember> members = {
      {"a.b/c.d.E", 0, 1}, {"a.b/c.x", 1, 1},   {"noext", 2, 1},   {".hidden", 3, 1},
      {"__meta__", 4, 1},  {"d/__x__.y", 5, 1}, {"a.b/c.y", 6, 1},
  };
  auto samples = GroupWebDatasetSamples(members, "s.tar");
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  ASSERT_EQ(samples->size(), 3u);
  EXPECT_EQ((*samples)[0].key, "a.b/c");
  ASSERT_EQ((*samples)[0].fields.size(), 2u);
  EXPECT_EQ((*samples)[0].fields[0].name, "d.e");
  EXPECT_EQ((*samples)[0].fields[1].name, "x");
  EXPECT_EQ((*samples)[1].key, "d/__x__");  // "__*__" is skipped at the top level only
  EXPECT_EQ((*samples)[2].key, "a.b/c");    // a key that comes back starts a new sample
  EXPECT_EQ((*samples)[2].fields[0].offset, 6u);
}

}  // namespace
}  // namespace ferry::internal_format
