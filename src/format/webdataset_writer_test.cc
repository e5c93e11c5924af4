// Tests of WebDatasetWriter and TarWriter: what they write reads back through the "webdataset"
// format (the reader streaming uses) as the same samples, in shards within the size limit, with
// long names in ustar prefixes and PAX headers; samples WebDataset could not read back as written
// are refused, naming the key.
#include "format/webdataset_writer.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "format/tar_scan.h"
#include "format/webdataset_format.h"
#include "format/webdataset_index.h"

namespace ferry::internal_format {
namespace {

using ::testing::HasSubstr;

struct Written {
  std::string key;
  std::vector<std::pair<std::string, std::string>> fields;
};

std::vector<Written> Samples(size_t n) {
  std::mt19937 random(5);
  std::vector<Written> out;
  for (size_t i = 0; i < n; ++i) {
    std::string image(random() % 3000, '\0');
    for (char& c : image) c = static_cast<char>(random());
    out.push_back({fmt::format("part{}/sample{:05}", i % 3, i),
                   {{"jpg", image}, {"cls", std::to_string(i % 10)}, {"seg.png", ""}}});
  }
  return out;
}

Status Write(WebDatasetWriter& writer, const Written& s) {
  std::vector<WebDatasetFieldData> fields;
  for (const auto& [name, data] : s.fields) fields.emplace_back(name, data);
  return writer.Write(s.key, fields);
}

TEST(WebDatasetWriter, WhatItWritesReadsBackAsTheSameSamplesInShardsWithinTheLimit) {
  testing::TempDir tmp;
  const auto samples = Samples(60);
  auto writer = WebDatasetWriter::Create({.out = tmp.path(), .size_limit = 40 << 10}).value();
  for (const Written& s : samples) ASSERT_TRUE(Write(*writer, s).ok());
  const DatasetDescription written = writer->Finish().value();
  ASSERT_GE(written.shards.size(), 3u);
  EXPECT_EQ(written.num_samples(), samples.size());

  const DatasetDescription listed =
      ParseWebDatasetIndex(ReadFileToString(tmp.path() / "index.json").value(), "index.json")
          .value();
  ASSERT_EQ(listed.shards.size(), written.shards.size());
  size_t next = 0;
  for (const ShardDescription& shard : listed.shards) {
    EXPECT_EQ(shard.raw_data.bytes % 10240, 0u) << "padded to whole records";
    EXPECT_EQ(std::filesystem::file_size(tmp.path() / shard.raw_data.basename),
              shard.raw_data.bytes);
    auto reader = WebDatasetFormat().Open(tmp.path() / shard.raw_data.basename, shard);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    SampleFields out;
    for (uint32_t i = 0; i < (*reader)->num_samples(); ++i, ++next) {
      ASSERT_TRUE((*reader)->ReadSample(i, out).ok());
      const Written& want = samples.at(next);
      EXPECT_EQ(out.fields[0], want.key);
      ASSERT_EQ(out.fields.size(), want.fields.size() + 1);
      for (size_t f = 0; f < want.fields.size(); ++f) {
        EXPECT_EQ(out.config->column_names[f + 1], want.fields[f].first);
        EXPECT_EQ(out.fields[f + 1], want.fields[f].second) << want.key;
      }
    }
  }
  EXPECT_EQ(next, samples.size());
}

TEST(WebDatasetWriter, ASampleLargerThanTheLimitGetsAShardOfItsOwn) {
  testing::TempDir tmp;
  auto writer = WebDatasetWriter::Create({.out = tmp.path(), .size_limit = 2048}).value();
  const std::string big(10000, 'x');
  const std::string small(10, 'y');
  int n = 0;
  for (const std::string* data : {&small, &big, &small}) {
    const WebDatasetFieldData fields[] = {{"bin", *data}};
    ASSERT_TRUE(writer->Write(fmt::format("k{}", n++), fields).ok());
  }
  const DatasetDescription d = writer->Finish().value();
  ASSERT_EQ(d.shards.size(), 3u);
  for (const ShardDescription& s : d.shards) EXPECT_EQ(s.samples, 1u);
}

TEST(TarWriter, LongNamesGoInTheUstarPrefixOrAPaxHeader) {
  testing::TempDir tmp;
  const std::string split = std::string(120, 'd') + "/" + std::string(90, 'f') + ".bin";
  const std::string pax = std::string(300, 'p') + ".bin";  // no '/' to split at
  auto tar = TarWriter::Create(tmp.path() / "t.tar").value();
  ASSERT_TRUE(tar.Add("short.txt", "a").ok());
  ASSERT_TRUE(tar.Add(split, "bb").ok());
  ASSERT_TRUE(tar.Add(pax, "ccc").ok());
  ASSERT_TRUE(tar.Finish().ok());
  const std::string bytes = ReadFileToString(tmp.path() / "t.tar").value();
  const auto members = ScanTar(bytes, "t.tar").value();
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[0].name, "short.txt");
  EXPECT_EQ(members[1].name, split);
  EXPECT_EQ(members[2].name, pax);
  EXPECT_EQ(bytes.substr(members[2].offset, members[2].size), "ccc");
  EXPECT_FALSE(TarHeader("", 1).ok());
  EXPECT_FALSE(TarHeader("big", uint64_t{1} << 33).ok());
}

TEST(WebDatasetWriter, RefusesWhatWebDatasetWouldNotReadBackAsWritten) {
  testing::TempDir tmp;
  auto writer = WebDatasetWriter::Create({.out = tmp.path()}).value();
  const WebDatasetFieldData ok[] = {{"jpg", "x"}};
  ASSERT_TRUE(writer->Write("a", ok).ok());
  struct Case {
    std::string key;
    std::vector<WebDatasetFieldData> fields;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"b.c", {{"jpg", "x"}}, "'.'"},
      {"a", {{"jpg", "x"}}, "the same key"},
      {"d/", {{"jpg", "x"}}, "after its last '/'"},
      {"e", {}, "no fields"},
      {"f", {{"JPG", "x"}}, "upper-case"},
      {"g", {{"__key__", "x"}}, "__key__"},
      {"h", {{"jpg", "x"}, {"jpg", "y"}}, "twice"},
  };
  for (const Case& c : cases) {
    const Status s = writer->Write(c.key, c.fields);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.key;
    EXPECT_THAT(s.message(), HasSubstr(c.says)) << c.key;
    EXPECT_THAT(s.message(), HasSubstr("'" + c.key + "'"));
  }
  EXPECT_EQ(writer->Finish().value().num_samples(), 1u);
  auto again = WebDatasetWriter::Create({.out = tmp.path()});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(WebDatasetWriter::Create({.out = tmp.path(), .exist_ok = true}).ok());
}

}  // namespace
}  // namespace ferry::internal_format
