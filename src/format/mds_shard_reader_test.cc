// Tests of MdsShardReader (spec §4, §5.1, §9): a valid shard gives its records and fields;
// every malformed shard is kDataLoss naming the file and the field at fault, and is caught at
// Open (or at the access, for a record's own size table), never by reading outside the data.
#include "ferry/format/mds_shard_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/little_endian.h"
#include "base/temp_dir_testutil.h"
#include "format/fixture_testutil.h"

namespace ferry {
namespace {

using testing::FileText;

using ::testing::HasSubstr;

using testing::kFixtures;
constexpr char kShardOrigin[] = "data/shard.00000.mds";

// The spec §4 worked example: columns {id: int, text: str}, hashes ["sha1"], samples
// {id 5, text "hi"} and {id -1, text ""}; 233 bytes.
constexpr char kSpecConfig[] =
    R"({"column_encodings": ["int", "str"], "column_names": ["id", "text"], )"
    R"("column_sizes": [8, null], "compression": null, "format": "mds", "hashes": ["sha1"], )"
    R"("size_limit": 67108864, "version": 2})";

std::string SpecShard() {
  std::string s("\x02\x00\x00\x00\xcf\x00\x00\x00\xdd\x00\x00\x00\xe9\x00\x00\x00", 16);
  s += kSpecConfig;
  s += std::string("\x02\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00hi", 14);
  s += std::string("\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff", 12);
  return s;
}

ShardDescription SpecEntry() {
  auto config = std::make_shared<ShardConfig>();
  config->column_names = {"id", "text"};
  config->column_encodings = {ColumnEncoding::Parse("int").value(),
                              ColumnEncoding::Parse("str").value()};
  config->column_sizes = {8, std::nullopt};
  config->hashes = {"sha1"};
  config->size_limit = 67108864;
  ShardDescription entry;
  entry.config = config;
  entry.raw_data = {"shard.00000.mds", 233, {{"sha1", "unchecked"}}};
  entry.samples = 2;
  return entry;
}

void PutU32(std::string& s, size_t pos, uint32_t v) { StoreU32LE(s.data() + pos, v); }

// Opens `bytes` with `entry` and expects kDataLoss whose message names the origin and contains
// every word.
void ExpectDataLoss(std::string bytes, const ShardDescription& entry,
                    const std::vector<std::string>& words) {
  auto reader = MdsShardReader::FromBuffer(std::move(bytes), entry, kShardOrigin);
  ASSERT_FALSE(reader.has_value()) << "accepted; expected " << words.front();
  EXPECT_EQ(reader.error().code(), StatusCode::kDataLoss) << reader.error().ToString();
  EXPECT_THAT(reader.error().message(), HasSubstr(kShardOrigin));
  for (const auto& w : words) EXPECT_THAT(reader.error().message(), HasSubstr(w));
}

// The entry for a copy of the spec shard whose size is `bytes`.
ShardDescription EntryWithBytes(uint64_t bytes) {
  ShardDescription e = SpecEntry();
  e.raw_data.bytes = bytes;
  return e;
}

// ---------------------------------------------------------------------------------------------
// Valid shards

TEST(MdsShardReader, ReadsTheSpecWorkedExample) {
  const std::string bytes = SpecShard();
  ASSERT_EQ(bytes.size(), 233u);
  auto reader = MdsShardReader::FromBuffer(bytes, SpecEntry(), kShardOrigin);
  ASSERT_TRUE(reader.has_value()) << reader.status().ToString();
  EXPECT_EQ(reader->num_samples(), 2u);
  EXPECT_EQ(reader->num_columns(), 2u);
  EXPECT_EQ(reader->origin(), kShardOrigin);
  EXPECT_EQ(reader->data(), bytes);
  EXPECT_EQ(reader->config(), *SpecEntry().config);
  EXPECT_EQ(reader->record(0), bytes.substr(207, 14));
  EXPECT_EQ(reader->record(1), bytes.substr(221, 12));

  auto f0 = reader->Fields(0);
  ASSERT_TRUE(f0.has_value()) << f0.status().ToString();
  ASSERT_EQ(f0->size(), 2u);
  EXPECT_EQ((*f0)[0], std::string("\x05\0\0\0\0\0\0\0", 8));
  EXPECT_EQ((*f0)[1], "hi");
  // Views into the shard, not copies.
  EXPECT_EQ((*f0)[1].data(), reader->data().data() + 219);

  std::array<std::string_view, 2> f1;
  ASSERT_TRUE(reader->ReadFields(1, f1).ok());
  EXPECT_EQ(f1[0], std::string(8, '\xff'));
  EXPECT_EQ(f1[1], "");
}

TEST(MdsShardReader, OpenMapsAFileAndNamesItInErrors) {
  testing::TempDir tmp;
  const auto path = tmp / "shard.00000.mds";
  ASSERT_TRUE(WriteFileAtomically(path, SpecShard()).ok());
  auto reader = MdsShardReader::Open(path, SpecEntry());
  ASSERT_TRUE(reader.has_value()) << reader.status().ToString();
  EXPECT_EQ(reader->origin(), path.string());
  EXPECT_EQ(reader->Fields(0).value()[1], "hi");

  // The same file cut inside record 0.
  ASSERT_TRUE(WriteFileAtomically(path, SpecShard().substr(0, 215)).ok());
  auto cut = MdsShardReader::Open(path, EntryWithBytes(215));
  ASSERT_FALSE(cut.has_value());
  EXPECT_EQ(cut.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(cut.error().message(), HasSubstr(path.string()));
  EXPECT_THAT(cut.error().message(), HasSubstr("past the end"));

  // An empty file.
  ASSERT_TRUE(WriteFileAtomically(path, "").ok());
  auto empty = MdsShardReader::Open(path, EntryWithBytes(0));
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(empty.error().message(), HasSubstr(path.string()));

  // A missing file.
  auto missing = MdsShardReader::Open(tmp / "nope.mds", SpecEntry());
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.error().message(), HasSubstr("nope.mds"));
}

TEST(MdsShardReader, ViewsOutliveTheReaderWhileTheOwnerIsHeld) {
  std::shared_ptr<const void> owner;
  std::string_view text;
  {
    auto reader = MdsShardReader::FromBuffer(SpecShard(), SpecEntry(), kShardOrigin);
    ASSERT_TRUE(reader.has_value());
    owner = reader->owner();
    text = reader->Fields(0).value()[1];
  }
  // Under ASan a freed buffer would be reported here.
  EXPECT_EQ(text, "hi");
  EXPECT_NE(owner, nullptr);
}

TEST(MdsShardReader, EmptyShardOfTheOversizeFixture) {
  auto index = ParseIndex(FileText(kFixtures / "oversize" / "index.json"), "oversize");
  ASSERT_TRUE(index.has_value());
  ASSERT_EQ(index->shards[0].samples, 0u);
  auto reader = MdsShardReader::Open(kFixtures / "oversize" / "shard.00000.mds", index->shards[0]);
  ASSERT_TRUE(reader.has_value()) << reader.status().ToString();
  EXPECT_EQ(reader->num_samples(), 0u);
  // Every shard of the fixture opens and splits.
  for (const auto& shard : index->shards) {
    auto r = MdsShardReader::Open(kFixtures / "oversize" / shard.raw_data.basename, shard);
    ASSERT_TRUE(r.has_value()) << r.status().ToString();
    EXPECT_EQ(r->num_samples(), shard.samples);
    for (uint32_t i = 0; i < r->num_samples(); ++i) EXPECT_TRUE(r->Fields(i).has_value());
  }
}

TEST(MdsShardReader, SeveralVariableColumns) {
  // Columns a: bytes, b: str, c: int -> record = [len a][len b][a][b][c].
  auto config = std::make_shared<ShardConfig>();
  config->column_names = {"a", "b", "c"};
  config->column_encodings = {ColumnEncoding::Parse("bytes").value(),
                              ColumnEncoding::Parse("str").value(),
                              ColumnEncoding::Parse("int").value()};
  config->column_sizes = {std::nullopt, std::nullopt, 8};
  const std::string block = SerializeShardConfig(*config);
  std::string record(
      "\x03\x00\x00\x00\x02\x00\x00\x00"
      "xyz"
      "hi"
      "\x07\0\0\0\0\0\0\0",
      21);
  std::string shard(12, '\0');
  PutU32(shard, 0, 1);
  PutU32(shard, 4, static_cast<uint32_t>(12 + block.size()));
  PutU32(shard, 8, static_cast<uint32_t>(12 + block.size() + record.size()));
  shard += block + record;
  ShardDescription entry{
      .config = config, .raw_data = {"s.mds", shard.size(), {}}, .zip_data = {}, .samples = 1};
  auto reader = MdsShardReader::FromBuffer(shard, entry, kShardOrigin);
  ASSERT_TRUE(reader.has_value()) << reader.status().ToString();
  auto fields = reader->Fields(0);
  ASSERT_TRUE(fields.has_value()) << fields.status().ToString();
  EXPECT_EQ((*fields)[0], "xyz");
  EXPECT_EQ((*fields)[1], "hi");
  EXPECT_EQ((*fields)[2], std::string("\x07\0\0\0\0\0\0\0", 8));

  // The second size claims one byte more: the int column comes up short.
  std::string bad = shard;
  PutU32(bad, 12 + block.size() + 4, 3);
  auto r = MdsShardReader::FromBuffer(bad, entry, kShardOrigin);
  ASSERT_TRUE(r.has_value());
  const auto f = r->Fields(0);
  ASSERT_FALSE(f.has_value());
  EXPECT_EQ(f.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(f.error().message(), HasSubstr(kShardOrigin));
  EXPECT_THAT(f.error().message(), HasSubstr("sample 0"));
  EXPECT_THAT(f.error().message(), HasSubstr("column 'c'"));
}

// ---------------------------------------------------------------------------------------------
// Malformed shards

TEST(MdsShardReaderCorrupt, TruncatedShard) {
  struct Case {
    size_t keep;
    const char* where;
    const char* word;
  };
  const std::vector<Case> cases = {
      {0, "empty", "cannot hold a shard header"},
      {3, "inside N", "cannot hold a shard header"},
      {6, "inside offsets[0]", "cannot hold a shard header"},
      {10, "inside the offset table", "offset table of 2 samples runs past the end"},
      {15, "inside offsets[2]", "offset table of 2 samples runs past the end"},
      {16, "at the config", "offsets[0] = 207"},
      {100, "inside the config", "offsets[0] = 207"},
      {206, "one byte short of the config", "offsets[0] = 207"},
      {207, "after the config", "offsets[1] = 221 is past the end"},
      {215, "inside record 0", "offsets[1] = 221 is past the end"},
      {225, "inside record 1", "offsets[2] = 233 is past the end"},
      {232, "one byte short", "offsets[2] = 233 is past the end"},
  };
  const std::string full = SpecShard();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.where);
    // The index still says 233 bytes: the size check catches it first.
    ExpectDataLoss(full.substr(0, c.keep), SpecEntry(),
                   {"file holds " + std::to_string(c.keep) + " bytes but the index says 233"});
    // The index agrees with the short file: the structure checks must catch it.
    ExpectDataLoss(full.substr(0, c.keep), EntryWithBytes(c.keep), {c.word});
  }
}

TEST(MdsShardReaderCorrupt, FileSizeDifferentFromRawDataBytes) {
  ExpectDataLoss(SpecShard(), EntryWithBytes(234), {"233 bytes", "index says 234"});
  ExpectDataLoss(SpecShard(), EntryWithBytes(232), {"233 bytes", "index says 232"});
  // One extra byte at the end, and an index that agrees: offsets[N] must be the file size.
  ExpectDataLoss(SpecShard() + "x", EntryWithBytes(234), {"offsets[2] = 233", "234 bytes"});
}

TEST(MdsShardReaderCorrupt, HeaderSampleCountDisagreesWithTheIndex) {
  std::string s = SpecShard();
  PutU32(s, 0, 3);
  ExpectDataLoss(s, SpecEntry(), {"header counts 3 samples", "index says 2"});
  PutU32(s, 0, 1);
  ExpectDataLoss(s, SpecEntry(), {"header counts 1 samples", "index says 2"});
  ShardDescription none = SpecEntry();
  none.samples = 0;
  ExpectDataLoss(SpecShard(), none, {"header counts 2 samples", "index says 0"});
}

TEST(MdsShardReaderCorrupt, HugeSampleCountInATinyFile) {
  std::string tiny(64, '\0');
  PutU32(tiny, 0, 0xffffffffu);
  ShardDescription entry = EntryWithBytes(64);
  entry.samples = 0xffffffffu;
  ExpectDataLoss(tiny, entry, {"offset table of 4294967295 samples runs past the end", "64 bytes"});
  // With the index's count right for a real shard, the header alone is caught.
  std::string lie = SpecShard();
  PutU32(lie, 0, 0xffffffffu);
  ExpectDataLoss(lie, SpecEntry(), {"header counts 4294967295 samples"});
}

TEST(MdsShardReaderCorrupt, FirstOffsetOutsideItsRange) {
  for (uint32_t first : {0u, 8u, 15u, 234u, 0xffffffffu}) {
    std::string s = SpecShard();
    PutU32(s, 4, first);
    ExpectDataLoss(s, SpecEntry(), {"offsets[0] = " + std::to_string(first)});
  }
}

TEST(MdsShardReaderCorrupt, OffsetsBeyondTheFile) {
  std::string s = SpecShard();
  PutU32(s, 8, 300);
  ExpectDataLoss(s, SpecEntry(), {"offsets[1] = 300 is past the end of the file (233 bytes)"});
  s = SpecShard();
  PutU32(s, 12, 0xffffffffu);
  ExpectDataLoss(s, SpecEntry(), {"offsets[2] = 4294967295 is past the end"});
}

TEST(MdsShardReaderCorrupt, OffsetsNotIncreasing) {
  std::string s = SpecShard();
  PutU32(s, 8, 206);
  ExpectDataLoss(s, SpecEntry(), {"offsets[1] = 206 is smaller than offsets[0] = 207"});
  s = SpecShard();
  PutU32(s, 8, 233);
  PutU32(s, 12, 221);
  ExpectDataLoss(s, SpecEntry(), {"offsets[2] = 221 is smaller than offsets[1] = 233"});
}

TEST(MdsShardReaderCorrupt, RecordShorterThanItsColumnsNeed) {
  // Each record needs 4 (text size) + 8 (id) bytes.
  std::string s = SpecShard();
  PutU32(s, 8, 215);
  ExpectDataLoss(s, SpecEntry(), {"sample 0 is 8 bytes", "12"});
  s = SpecShard();
  PutU32(s, 8, 207);  // an empty record 0
  ExpectDataLoss(s, SpecEntry(), {"sample 0 is 0 bytes"});
}

TEST(MdsShardReaderCorrupt, EmbeddedConfigDiffersFromTheIndex) {
  ShardDescription other = SpecEntry();
  auto config = std::make_shared<ShardConfig>(*other.config);
  config->hashes = {};
  other.config = config;
  ExpectDataLoss(SpecShard(), other, {"config", "differs"});

  std::string s = SpecShard();
  const size_t at = s.find("67108864");
  ASSERT_NE(at, std::string::npos);
  s[at + 7] = '5';  // size_limit 67108865, same length
  ExpectDataLoss(s, SpecEntry(), {"config", "differs"});

  s = SpecShard();
  s[16] = 'x';  // the config block is no longer JSON
  ExpectDataLoss(s, SpecEntry(), {"config block", "JSON"});

  s = SpecShard();
  const size_t fmt = s.find("\"mds\"");
  s.replace(fmt, 5, "\"tar\"");
  ExpectDataLoss(s, SpecEntry(), {"config block", "format"});
}

TEST(MdsShardReaderCorrupt, VariableSizeTableClaimsMoreThanTheRecordHolds) {
  for (uint32_t claim : {3u, 100u, 0xffffffffu}) {
    std::string s = SpecShard();
    PutU32(s, 207, claim);  // record 0's text size (really 2)
    auto reader = MdsShardReader::FromBuffer(s, SpecEntry(), kShardOrigin);
    ASSERT_TRUE(reader.has_value()) << reader.status().ToString();
    auto fields = reader->Fields(0);
    ASSERT_FALSE(fields.has_value()) << claim;
    EXPECT_EQ(fields.error().code(), StatusCode::kDataLoss);
    EXPECT_THAT(fields.error().message(), HasSubstr(kShardOrigin));
    EXPECT_THAT(fields.error().message(),
                HasSubstr("sample 0: column 'text' claims " + std::to_string(claim) +
                          " bytes but only 2 remain in its 14-byte record"));
    // The other record is unaffected.
    EXPECT_TRUE(reader->Fields(1).has_value());
  }
}

TEST(MdsShardReaderCorrupt, TrailingBytesInARecord) {
  std::string s = SpecShard();
  PutU32(s, 207, 1);  // text size 1: one byte left over
  auto reader = MdsShardReader::FromBuffer(s, SpecEntry(), kShardOrigin);
  ASSERT_TRUE(reader.has_value());
  std::array<std::string_view, 2> fields;
  const Status status = reader->ReadFields(0, fields);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr(kShardOrigin));
  EXPECT_THAT(status.message(), HasSubstr("sample 0: record has 1 bytes after its last column"));
  // Sample 1 with a text size of 0 but 4 extra bytes at the end of the shard is caught too.
  std::string longer = SpecShard() + "abcd";
  PutU32(longer, 12, 237);
  auto r2 = MdsShardReader::FromBuffer(longer, EntryWithBytes(237), kShardOrigin);
  ASSERT_TRUE(r2.has_value()) << r2.status().ToString();
  EXPECT_THAT(r2->Fields(1).status().message(), HasSubstr("4 bytes after its last column"));
}

TEST(MdsShardReaderCorrupt, EveryByteFlipIsSafe) {
  // Flip every byte of the header, offsets and records in turn: Open and field access must
  // either succeed or return kDataLoss, never read outside the buffer (ASan watches).
  const std::string good = SpecShard();
  int errors = 0;
  for (size_t pos = 0; pos < good.size(); ++pos) {
    if (pos >= 16 && pos < 207) continue;  // config text: covered by the config tests
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::string s = good;
      s[pos] = static_cast<char>(s[pos] ^ mask);
      auto reader = MdsShardReader::FromBuffer(s, SpecEntry(), kShardOrigin);
      if (!reader.has_value()) {
        EXPECT_EQ(reader.error().code(), StatusCode::kDataLoss);
        ++errors;
        continue;
      }
      for (uint32_t i = 0; i < reader->num_samples(); ++i) {
        auto fields = reader->Fields(i);
        if (!fields.has_value()) {
          EXPECT_EQ(fields.error().code(), StatusCode::kDataLoss);
          ++errors;
        }
      }
    }
  }
  EXPECT_GT(errors, 40);
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

TEST(SplitRecord, SplitsLikeTheReaderAndRejectsBadTables) {
  ShardConfig config;
  config.column_names = {"id", "text"};
  config.column_encodings = {ColumnEncoding::Parse("int").value(),
                             ColumnEncoding::Parse("str").value()};
  config.column_sizes = {8, std::nullopt};
  // Record 0 of the spec's worked example: u32 2, i64 5, "hi".
  const std::string record("\x02\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00hi", 14);
  std::string_view fields[2];
  ASSERT_TRUE(SplitRecord(config, record, fields).ok());
  EXPECT_EQ(fields[0].size(), 8u);
  EXPECT_EQ(fields[1], "hi");
  EXPECT_EQ(SplitRecord(config, record.substr(0, 13), fields).code(), StatusCode::kDataLoss);
  EXPECT_EQ(SplitRecord(config, record + "x", fields).code(), StatusCode::kDataLoss);
  EXPECT_EQ(SplitRecord(config, record.substr(0, 3), fields).code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace ferry
