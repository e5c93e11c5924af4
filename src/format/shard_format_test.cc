// Tests of the format seam: the registry finds formats by name and refuses others, and the "mds"
// format read through it (a local file, a buffer, a sample by range) gives what MdsShardReader
// gives, with every malformed input a kDataLoss rather than a read outside the data.
#include "ferry/format/shard_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/little_endian.h"
#include "base/temp_dir_testutil.h"
#include "ferry/format/mds_shard_reader.h"
#include "ferry/format/mds_writer.h"

namespace ferry {
namespace {

using ::testing::HasSubstr;

class ShardFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto writer = MdsWriter::Create({.out = tmp_.path(),
                                     .columns = {{"id", "int"}, {"text", "str"}},
                                     .size_limit = 1 << 10})
                      .value();
    for (int i = 0; i < 60; ++i) {
      const Value values[] = {Value(int64_t{i}), Value(std::string(i % 7, 'a' + i % 26))};
      ASSERT_TRUE(writer->WriteValues(values).ok());
    }
    index_ = writer->Finish().value();
    ASSERT_GE(index_.shards.size(), 2u);
    mds_ = FindShardFormat("mds").value();
  }
  std::filesystem::path Path(size_t k) const {
    return tmp_.path() / index_.shards[k].raw_data.basename;
  }
  std::string Bytes(size_t k) const { return ReadFileToString(Path(k)).value(); }

  testing::TempDir tmp_;
  DatasetDescription index_;
  const ShardFormat* mds_ = nullptr;
};

TEST(ShardFormatRegistryTest, FindsMdsAndNamesTheKnownOnesForAnUnknownName) {
  ASSERT_TRUE(FindShardFormat("mds").ok());
  EXPECT_EQ(FindShardFormat("mds").value()->name(), "mds");
  const auto unknown = FindShardFormat("parquet");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.error().message(), HasSubstr("'parquet'"));
  EXPECT_THAT(unknown.error().message(), HasSubstr("mds"));
  EXPECT_FALSE(FindShardFormat("file").ok()) << "a FileDataset reads its files itself";
  EXPECT_EQ(ShardFormatNames(),
            (std::vector<std::string_view>{"csv", "json", "mds", "tsv", "webdataset"}));
}

TEST_F(ShardFormatTest, ReadsEverySampleAsMdsShardReaderDoes) {
  for (size_t k = 0; k < index_.shards.size(); ++k) {
    const ShardDescription& shard = index_.shards[k];
    auto reader = mds_->Open(Path(k), shard).value();
    const MdsShardReader direct = MdsShardReader::Open(Path(k), shard).value();
    ASSERT_EQ(reader->num_samples(), shard.samples);
    EXPECT_EQ(reader->origin(), Path(k).string());
    SampleFields out;
    for (uint32_t i = 0; i < reader->num_samples(); ++i) {
      ASSERT_TRUE(reader->ReadSample(i, out).ok());
      EXPECT_EQ(out.config, shard.config.get());
      EXPECT_EQ(out.fields, direct.Fields(i).value()) << "shard " << k << " sample " << i;
    }
  }
}

TEST_F(ShardFormatTest, ABufferReadsAsTheFileAndAWrongSizeNamesItsOrigin) {
  const ShardDescription& shard = index_.shards[1];
  auto reader = mds_->FromBuffer(Bytes(1), shard, "mem://one").value();
  EXPECT_EQ(reader->origin(), "mem://one");
  SampleFields out;
  ASSERT_TRUE(reader->ReadSample(0, out).ok());
  EXPECT_EQ(out.fields.size(), 2u);

  const auto cut = mds_->FromBuffer(Bytes(1).substr(1), shard, "mem://cut");
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(cut.error().message(), HasSubstr("mem://cut"));
}

TEST_F(ShardFormatTest, AMissingFileIsNotFound) {
  std::filesystem::remove(Path(0));
  const auto opened = mds_->Open(Path(0), index_.shards[0]);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().code(), StatusCode::kNotFound);
}

TEST_F(ShardFormatTest, ASampleByRangeIsTwoReadsAndEqualsTheLocalRead) {
  const ShardDescription& shard = index_.shards[0];
  const std::string bytes = Bytes(0);
  int reads = 0;
  const RangeRead read = [&](uint64_t offset, uint64_t length) -> Result<std::string> {
    ++reads;
    return bytes.substr(offset, length);
  };
  auto local = mds_->Open(Path(0), shard).value();
  for (uint32_t i : {0u, 3u, static_cast<uint32_t>(shard.samples - 1)}) {
    reads = 0;
    auto ranged = mds_->ReadByRange(read, shard, i).value();
    ASSERT_TRUE(ranged.has_value());
    EXPECT_EQ(reads, 2) << "its two offsets, then its record";
    SampleFields want;
    ASSERT_TRUE(local->ReadSample(i, want).ok());
    EXPECT_EQ(ranged->sample.fields, want.fields) << "sample " << i;
    EXPECT_EQ(ranged->sample.config, shard.config.get());
  }
}

TEST_F(ShardFormatTest, ARangedSampleOutsideTheShardIsDataLoss) {
  const ShardDescription& shard = index_.shards[0];
  std::string bytes = Bytes(0);
  StoreU32LE(bytes.data() + 8, static_cast<uint32_t>(bytes.size() + 10));  // offsets[1]
  const RangeRead read = [&](uint64_t offset, uint64_t length) -> Result<std::string> {
    return bytes.substr(offset, length);
  };
  const auto ranged = mds_->ReadByRange(read, shard, 0);
  ASSERT_FALSE(ranged.ok());
  EXPECT_EQ(ranged.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(ranged.error().message(), HasSubstr("not inside the shard"));

  const RangeRead short_read = [&](uint64_t, uint64_t) -> Result<std::string> {
    return std::string("\x01", 1);
  };
  const auto cut = mds_->ReadByRange(short_read, shard, 0);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().code(), StatusCode::kDataLoss);
}

TEST_F(ShardFormatTest, SpansAreOneReadAndSplitAsTheLocalRead) {
  for (size_t k = 0; k < index_.shards.size(); ++k) {
    const ShardDescription& shard = index_.shards[k];
    const std::string bytes = Bytes(k);
    int reads = 0;
    const RangeRead read = [&](uint64_t offset, uint64_t length) -> Result<std::string> {
      ++reads;
      return bytes.substr(offset, length);
    };
    auto spans = mds_->ReadSpans(read, shard).value();
    ASSERT_NE(spans, nullptr);
    EXPECT_EQ(reads, 1) << "the offset table, once";
    ASSERT_EQ(spans->samples(), shard.samples);
    auto local = mds_->Open(Path(k), shard).value();
    for (uint32_t i = 0; i < shard.samples; ++i) {
      const auto [begin, end] = spans->Span(i);
      ASSERT_LE(begin, end);
      ASSERT_LE(end, bytes.size());
      SampleFields got;
      ASSERT_TRUE(spans->Split(i, std::string_view(bytes).substr(begin, end - begin), got).ok());
      SampleFields want;
      ASSERT_TRUE(local->ReadSample(i, want).ok());
      EXPECT_EQ(got.fields, want.fields) << "shard " << k << " sample " << i;
      EXPECT_EQ(got.config, shard.config.get());
    }
  }
}

TEST_F(ShardFormatTest, SpansOfATableThatIsNotOneAreDataLoss) {
  const ShardDescription& shard = index_.shards[0];
  const auto spans_of = [&](std::string bytes) {
    const RangeRead read = [bytes](uint64_t offset, uint64_t length) -> Result<std::string> {
      return bytes.substr(offset, length);
    };
    return mds_->ReadSpans(read, shard);
  };
  std::string wrong_count = Bytes(0);
  StoreU32LE(wrong_count.data(), shard.samples + 1);
  std::string backwards = Bytes(0);
  StoreU32LE(backwards.data() + 8, LoadU32LE(backwards.data() + 4) - 1);  // offsets[1] < [0]
  std::string past_end = Bytes(0);
  StoreU32LE(past_end.data() + 4 + 4 * shard.samples, static_cast<uint32_t>(past_end.size() + 1));
  for (const auto& [bytes, says] :
       {std::pair{wrong_count, "index.json says"}, std::pair{backwards, "not an MDS offset table"},
        std::pair{past_end, "not an MDS offset table"},
        std::pair{Bytes(0).substr(0, 6), "cut short"}}) {
    const auto spans = spans_of(bytes);
    ASSERT_FALSE(spans.ok()) << says;
    EXPECT_EQ(spans.error().code(), StatusCode::kDataLoss);
    EXPECT_THAT(spans.error().message(), HasSubstr(says));
  }
}

TEST_F(ShardFormatTest, AReadErrorPassesThrough) {
  const RangeRead failing = [](uint64_t, uint64_t) -> Result<std::string> {
    return UnavailableError("link down");
  };
  const auto ranged = mds_->ReadByRange(failing, index_.shards[0], 0);
  ASSERT_FALSE(ranged.ok());
  EXPECT_EQ(ranged.error().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace ferry
