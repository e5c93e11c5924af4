#include "ferry/format/mds_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <map>
#include <random>

#include "base/file_util.h"
#include "base/float16.h"
#include "base/mutex.h"
#include "base/temp_dir_testutil.h"
#include "ferry/format/local_dataset.h"
#include "ferry/format/verify.h"
#include "format/fixture_testutil.h"
#include "image/jpeg_codec.h"
#include "image/png_codec.h"

namespace ferry {
namespace {

using testing::FileText;

using ::testing::HasSubstr;

std::unique_ptr<MdsWriter> MakeWriter(MdsWriterOptions options) {
  auto writer = MdsWriter::Create(std::move(options));
  EXPECT_TRUE(writer.has_value()) << writer.status().ToString();
  return writer ? std::move(*writer) : nullptr;
}

std::vector<uint64_t> ShardSamples(const DatasetDescription& index) {
  std::vector<uint64_t> out;
  for (const auto& s : index.shards) out.push_back(s.samples);
  return out;
}

// Spec §4 worked example: the exact 233 bytes of a two-sample shard.
TEST(MdsWriter, WritesTheSpecWorkedExampleByteForByte) {
  testing::TempDir tmp;
  auto writer = MakeWriter(
      {.out = tmp.path(), .columns = {{"text", "str"}, {"id", "int"}}, .hashes = {"sha1"}});
  ASSERT_TRUE(writer->Write({{"id", Value(5)}, {"text", Value("hi")}}).ok());
  ASSERT_TRUE(writer->Write({{"id", Value(-1)}, {"text", Value("")}, {"extra", Value(1)}}).ok());
  auto index = writer->Finish();
  ASSERT_TRUE(index.has_value()) << index.status().ToString();

  const std::string config =
      R"({"column_encodings": ["int", "str"], "column_names": ["id", "text"], )"
      R"("column_sizes": [8, null], "compression": null, "format": "mds", "hashes": ["sha1"], )"
      R"("size_limit": 67108864, "version": 2})";
  ASSERT_EQ(config.size(), 191u);
  std::string expected("\x02\x00\x00\x00\xcf\x00\x00\x00\xdd\x00\x00\x00\xe9\x00\x00\x00", 16);
  expected += config;
  expected += std::string("\x02\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00hi", 14);
  expected += std::string("\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff", 12);
  ASSERT_EQ(expected.size(), 233u);
  EXPECT_EQ(FileText(tmp / "shard.00000.mds"), expected);
  ASSERT_EQ(index->shards.size(), 1u);
  EXPECT_EQ(index->shards[0].raw_data.bytes, 233u);
  EXPECT_EQ(index->shards[0].samples, 2u);
}

// Records of `n` bytes: a bytes column holding n - 4 bytes after its 4-byte size slot.
Value BlobOfRecordSize(size_t n) { return Value(Bytes{std::string(n - 4, 'x')}); }

class RolloverTest : public ::testing::Test {
 protected:
  // Shard header of this schema: 8 + config length.
  uint64_t ShardOverhead(uint64_t limit) {
    ShardConfig c;
    c.column_names = {"b"};
    c.column_encodings = {ColumnEncoding::Parse("bytes").value()};
    c.column_sizes = {std::nullopt};
    c.size_limit = limit;
    return 8 + SerializeShardConfig(c).size();
  }
  DatasetDescription WriteRecords(uint64_t limit, const std::vector<size_t>& record_sizes) {
    auto writer =
        MakeWriter({.out = tmp_.path(), .columns = {{"b", "bytes"}}, .size_limit = limit});
    for (size_t n : record_sizes) {
      const Value v = BlobOfRecordSize(n);
      EXPECT_TRUE(writer->WriteValues(std::span<const Value>(&v, 1)).ok());
    }
    return writer->Finish().value();
  }
  testing::TempDir tmp_;
};

TEST_F(RolloverTest, SampleExactlyAtTheLimitStaysInTheShard) {
  const uint64_t limit = 1000;
  const uint64_t room = limit - ShardOverhead(limit);  // bytes left for records + offset slots
  // Two records whose (record + 4) sum to exactly `room`: no rollover.
  const size_t first = 100;
  const size_t second = room - (first + 4) - 4;
  DatasetDescription index = WriteRecords(limit, {first, second});
  EXPECT_THAT(ShardSamples(index), ::testing::ElementsAre(2));
  EXPECT_EQ(index.shards[0].raw_data.bytes, limit);
}

TEST_F(RolloverTest, OneByteOverTheLimitStartsANewShard) {
  const uint64_t limit = 1000;
  const uint64_t room = limit - ShardOverhead(limit);
  const size_t first = 100;
  const size_t second = room - (first + 4) - 4 + 1;
  DatasetDescription index = WriteRecords(limit, {first, second});
  EXPECT_THAT(ShardSamples(index), ::testing::ElementsAre(1, 1));
}

TEST_F(RolloverTest, OversizeFirstSampleLeavesAnEmptyFirstShardLikeTheReference) {
  const uint64_t limit = 512;
  DatasetDescription index = WriteRecords(limit, {600, 20, 20, 700, 20});
  EXPECT_THAT(ShardSamples(index), ::testing::ElementsAre(0, 1, 2, 1, 1));
  EXPECT_EQ(index.shards[0].raw_data.bytes, ShardOverhead(limit));  // a valid N = 0 shard
  EXPECT_GT(index.shards[1].raw_data.bytes, limit);                 // oversize sample alone
  // Readers accept the empty shard and find every sample.
  auto ds = LocalDataset::Open(tmp_.path());
  ASSERT_TRUE(ds.has_value()) << ds.status().ToString();
  ASSERT_EQ((*ds)->num_samples(), 5u);
  EXPECT_EQ((*ds)->Locate(0).value(), std::make_pair(size_t{1}, uint32_t{0}));
  auto v = (*ds)->Get(3);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(std::get<Bytes>((*v)[0]).data.size(), 696u);
}

TEST_F(RolloverTest, NoLimitMeansOneShard) {
  auto writer =
      MakeWriter({.out = tmp_.path(), .columns = {{"b", "bytes"}}, .size_limit = std::nullopt});
  for (int i = 0; i < 50; ++i) {
    const Value v = BlobOfRecordSize(10000);
    ASSERT_TRUE(writer->WriteValues(std::span<const Value>(&v, 1)).ok());
  }
  DatasetDescription index = writer->Finish().value();
  EXPECT_THAT(ShardSamples(index), ::testing::ElementsAre(50));
  EXPECT_THAT(FileText(tmp_ / "index.json"), HasSubstr(R"("size_limit": null)"));
}

TEST(MdsWriter, EmptyDatasetHasNoShards) {
  testing::TempDir tmp;
  auto writer = MakeWriter({.out = tmp.path(), .columns = {{"x", "int"}}});
  DatasetDescription index = writer->Finish().value();
  EXPECT_TRUE(index.shards.empty());
  EXPECT_EQ(FileText(tmp / "index.json"), R"({"shards": [], "version": 2})");
  EXPECT_FALSE(std::filesystem::exists(tmp / "shard.00000.mds"));
  auto ds = LocalDataset::Open(tmp.path());
  ASSERT_TRUE(ds.has_value());
  EXPECT_EQ((*ds)->num_samples(), 0u);
}

TEST(MdsWriter, RejectsBadOptions) {
  testing::TempDir tmp;
  auto code = [&](MdsWriterOptions o) {
    o.out = tmp / "out";
    auto w = MdsWriter::Create(std::move(o));
    return w ? StatusCode::kOk : w.error().code();
  };
  EXPECT_EQ(code({.columns = {{"x", "nope"}}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.columns = {{"x", "int"}, {"x", "str"}}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.columns = {{"x", "int"}}, .compression = "zstd:99"}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.columns = {{"x", "int"}}, .hashes = {"sha1", "md5"}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.columns = {{"x", "int"}}, .hashes = {"crc32"}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.columns = {{"x", "int"}}, .size_limit = uint64_t{1} << 32}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.columns = {{"x", "int"}}, .size_limit = (uint64_t{1} << 32) - 1}),
            StatusCode::kOk);
}

TEST(MdsWriter, ResolvesSizeLimitsLikeTheReference) {
  EXPECT_EQ(ResolveSizeLimit("8kb").value(), 8192u);
  EXPECT_EQ(ResolveSizeLimit("64mb").value(), uint64_t{1} << 26);
  EXPECT_EQ(ResolveSizeLimit("0").value(), std::nullopt);
  EXPECT_FALSE(ResolveSizeLimit("4gb").has_value());
  EXPECT_FALSE(ResolveSizeLimit("lots").has_value());
}

TEST(MdsWriter, RejectsBadValuesWithTheColumnNamed) {
  testing::TempDir tmp;
  auto writer = MakeWriter({.out = tmp.path(), .columns = {{"small", "uint8"}, {"name", "str"}}});
  Status s = writer->Write({{"small", Value(256)}, {"name", Value("a")}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'small'"));
  EXPECT_THAT(s.message(), HasSubstr("256"));
  s = writer->Write({{"small", Value(1)}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'name'"));
  s = writer->Write({{"small", Value(1)}, {"name", Value(3)}});
  EXPECT_THAT(s.message(), HasSubstr("takes a string"));
  // A rejected sample leaves nothing behind: the next good one is sample 0.
  ASSERT_TRUE(writer->Write({{"small", Value(7)}, {"name", Value("ok")}}).ok());
  DatasetDescription index = writer->Finish().value();
  EXPECT_EQ(index.num_samples(), 1u);
  EXPECT_EQ(writer->Write({{"small", Value(1)}, {"name", Value("late")}}).code(),
            StatusCode::kFailedPrecondition);
}

TEST(MdsWriter, RefusesANonEmptyFolderUnlessAllowed) {
  testing::TempDir tmp;
  {
    auto writer = MakeWriter({.out = tmp.path(), .columns = {{"x", "int"}}, .size_limit = 300});
    for (int i = 0; i < 40; ++i) ASSERT_TRUE(writer->Write({{"x", Value(i)}}).ok());
    ASSERT_GT(writer->Finish().value().shards.size(), 2u);
  }
  auto again = MdsWriter::Create({.out = tmp.path(), .columns = {{"x", "int"}}});
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(again.error().message(), HasSubstr(tmp.path().string()));
  EXPECT_THAT(again.error().message(), HasSubstr("Directory is not empty"));  // the reference's

  ASSERT_TRUE(WriteFileAtomically(tmp / "notes.txt", "keep me").ok());
  auto writer = MakeWriter({.out = tmp.path(), .columns = {{"x", "int"}}, .exist_ok = true});
  ASSERT_TRUE(writer->Write({{"x", Value(1)}}).ok());
  ASSERT_EQ(writer->Finish().value().shards.size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(tmp / "shard.00001.mds"));  // old shards are gone
  EXPECT_EQ(FileText(tmp / "notes.txt"), "keep me");               // other files are not
}

TEST(MdsWriter, FlushShardEndsTheShardAndNeverWritesAnEmptyOne) {
  testing::TempDir tmp;
  auto writer = MakeWriter({.out = tmp.path(), .columns = {{"x", "int"}}});
  ASSERT_TRUE(writer->FlushShard().ok());  // nothing pending: no empty first shard
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(writer->Write({{"x", Value(i)}}).ok());
  ASSERT_TRUE(writer->FlushShard().ok());
  ASSERT_TRUE(writer->FlushShard().ok());  // again, with nothing new: no empty shard either
  ASSERT_TRUE(writer->Write({{"x", Value(3)}}).ok());
  const DatasetDescription index = writer->Finish().value();
  EXPECT_EQ(ShardSamples(index), (std::vector<uint64_t>{3, 1}));
  EXPECT_EQ(writer->FlushShard().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(SerializeShardConfig(writer->config()), SerializeShardConfig(*index.shards[0].config));
}

TEST(MdsWriter, WritesOnlyTheCompressedFileAndItsHashes) {
  testing::TempDir tmp;
  auto writer = MakeWriter({.out = tmp.path(),
                            .columns = {{"t", "str"}},
                            .compression = "zstd:7",
                            .hashes = {"sha256", "xxh3_64"},
                            .size_limit = 4096});
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(writer->Write({{"t", Value("sample text number " + std::to_string(i))}}).ok());
  }
  DatasetDescription index = writer->Finish().value();
  ASSERT_GT(index.shards.size(), 1u);
  for (const auto& s : index.shards) {
    ASSERT_TRUE(s.zip_data.has_value());
    EXPECT_EQ(s.zip_data->basename, s.raw_data.basename + ".zstd");
    EXPECT_TRUE(std::filesystem::exists(tmp / s.zip_data->basename));
    EXPECT_FALSE(std::filesystem::exists(tmp / s.raw_data.basename));
    EXPECT_EQ(s.raw_data.hashes.size(), 2u);
  }
  EXPECT_THAT(FileText(tmp / "index.json"), HasSubstr(R"("compression": "zstd:7")"));
  auto report = VerifyDataset(tmp.path(), {});
  ASSERT_TRUE(report.has_value());
  EXPECT_TRUE(report->ok());
  EXPECT_EQ(report->samples, 300u);
}

// ---- Round trips over random schemas and values -------------------------------------------

class RandomSamples {
 public:
  explicit RandomSamples(uint64_t seed) : rng_(seed) {}

  size_t Below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  std::string RandomBytes(size_t max) {
    std::string s(Below(max + 1), '\0');
    for (char& c : s) c = static_cast<char>(Below(256));
    return s;
  }
  std::string RandomText(size_t max) {
    static const std::vector<std::string> kPieces = {
        "a", "Z", " ", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "\n", "\"", "\\", "0"};
    std::string s;
    const size_t n = Below(max + 1);
    for (size_t i = 0; i < n; ++i) s += kPieces[Below(kPieces.size())];
    return s;
  }

  // A small image file of random pixels: verify decodes jpeg and png payloads.
  std::string RandomImageFile(bool png) {
    PilImage image{static_cast<uint32_t>(Below(4) + 1), static_cast<uint32_t>(Below(4) + 1), "RGB",
                   ""};
    image.pixels = std::string(3 * image.width * image.height, '\0');
    for (char& c : image.pixels) c = static_cast<char>(Below(256));
    return png ? EncodePng(image).value() : EncodeJpeg(image).value();
  }

  // A value of `encoding` in the form DecodeValue returns, so a round trip compares equal.
  Value ValueFor(const ColumnEncoding& e) {
    std::uniform_int_distribution<int64_t> any_i64;
    std::uniform_int_distribution<uint64_t> any_u64;
    switch (e.kind()) {
      case EncodingKind::kBytes:
      case EncodingKind::kPkl:
        return Value(Bytes{RandomBytes(64)});
      case EncodingKind::kJpeg:
      case EncodingKind::kPng:
        return Value(Bytes{RandomImageFile(e.kind() == EncodingKind::kPng)});
      case EncodingKind::kStr:
        return Value(RandomText(20));
      case EncodingKind::kInt:
      case EncodingKind::kInt64:
        return Value(any_i64(rng_));
      case EncodingKind::kInt8:
        return Value(static_cast<int64_t>(static_cast<int8_t>(any_i64(rng_))));
      case EncodingKind::kInt16:
        return Value(static_cast<int64_t>(static_cast<int16_t>(any_i64(rng_))));
      case EncodingKind::kInt32:
        return Value(static_cast<int64_t>(static_cast<int32_t>(any_i64(rng_))));
      case EncodingKind::kUInt8:
        return Value(uint64_t{static_cast<uint8_t>(any_u64(rng_))});
      case EncodingKind::kUInt16:
        return Value(uint64_t{static_cast<uint16_t>(any_u64(rng_))});
      case EncodingKind::kUInt32:
        return Value(uint64_t{static_cast<uint32_t>(any_u64(rng_))});
      case EncodingKind::kUInt64:
        return Value(any_u64(rng_));
      case EncodingKind::kFloat16: {
        double v;
        do v = HalfToDouble(static_cast<uint16_t>(any_u64(rng_)));
        while (std::isnan(v));
        return Value(v);
      }
      case EncodingKind::kFloat32: {
        float f;
        do f = std::bit_cast<float>(static_cast<uint32_t>(any_u64(rng_)));
        while (std::isnan(f));
        return Value(static_cast<double>(f));
      }
      case EncodingKind::kFloat64:
      case EncodingKind::kStrFloat: {
        double d;
        do d = std::bit_cast<double>(any_u64(rng_));
        while (std::isnan(d));
        return Value(d);
      }
      case EncodingKind::kStrInt:
        if (Below(3) == 0) return Value(NumberText{"-" + std::string(30, '9')});
        return Value(any_i64(rng_));
      case EncodingKind::kStrDecimal: {
        static const std::vector<std::string> kDecimals = {
            "123.4500", "1E+3", "-0", "0E-10", "NaN", "-Infinity", "0.001", "1E-7"};
        return Value(NumberText{kDecimals[Below(kDecimals.size())]});
      }
      case EncodingKind::kJson: {
        static const std::vector<std::string> kJson = {
            R"({"b": [1, 2.5, null, true], "a": "\u00e9"})",
            "[]",
            "{}",
            "null",
            "\"\"",
            "1180591620717411303424",
            "1e-07",
            R"([{"k": -0.0}])"};
        return Value(Json{kJson[Below(kJson.size())]});
      }
      case EncodingKind::kPil:
        return Value(RandomPil());
      case EncodingKind::kListPil: {
        ValueList items;
        for (size_t i = Below(3); i > 0; --i) items.emplace_back(RandomPil());
        return Value(std::move(items));
      }
      case EncodingKind::kListJpeg:
      case EncodingKind::kListPng:
      case EncodingKind::kJpegArray: {
        ValueList items;
        for (size_t i = Below(3) + (e.kind() == EncodingKind::kJpegArray); i > 0; --i) {
          items.emplace_back(Bytes{RandomImageFile(e.kind() == EncodingKind::kListPng)});
        }
        return Value(std::move(items));
      }
      case EncodingKind::kNdArray: {
        NdArray a;
        a.dtype = e.static_dtype().value_or(static_cast<DType>(
            std::vector<uint8_t>{8, 9, 16, 17, 18, 32, 33, 34, 64, 65, 66}[Below(11)]));
        a.shape = e.static_shape();
        if (a.shape.empty()) {
          for (size_t d = Below(3) + 1; d > 0; --d) a.shape.push_back(Below(4) + 1);
          if (Below(8) == 0) a.shape = {300};  // u16 shape words
        }
        uint64_t n = 1;
        for (auto d : a.shape) n *= d;
        a.data = RandomBytes(0);
        for (uint64_t i = 0; i < n * DTypeSize(a.dtype); ++i)
          a.data += static_cast<char>(Below(256));
        return Value(std::move(a));
      }
    }
    return Value();
  }

 private:
  PilImage RandomPil() {
    static const std::vector<std::pair<std::string, uint32_t>> kModes = {
        {"L", 1}, {"RGB", 3}, {"RGBA", 4}};
    const auto& [mode, channels] = kModes[Below(kModes.size())];
    PilImage p{static_cast<uint32_t>(Below(4) + 1), static_cast<uint32_t>(Below(4) + 1), mode, ""};
    p.pixels = std::string(p.width * p.height * channels, '\0');
    for (char& c : p.pixels) c = static_cast<char>(Below(256));
    return p;
  }
  std::mt19937_64 rng_;
};

TEST(MdsWriterProperty, RandomSchemasRoundTripThroughTheReader) {
  static const std::vector<std::string> kEncodings = {"bytes",
                                                      "str",
                                                      "int",
                                                      "uint8",
                                                      "uint16",
                                                      "uint32",
                                                      "uint64",
                                                      "int8",
                                                      "int16",
                                                      "int32",
                                                      "int64",
                                                      "float16",
                                                      "float32",
                                                      "float64",
                                                      "str_int",
                                                      "str_float",
                                                      "str_decimal",
                                                      "json",
                                                      "pil",
                                                      "jpeg",
                                                      "png",
                                                      "list[pil]",
                                                      "list[jpeg]",
                                                      "list[png]",
                                                      "jpeg_array",
                                                      "jpegarray",
                                                      "ndarray",
                                                      "ndarray:float32",
                                                      "ndarray:int16:3,4",
                                                      "ndarray:uint8:2,2,2"};
  static const std::vector<std::optional<std::string>> kCompressions = {
      std::nullopt, "zstd", "zstd:1", "gz:1", "br:4", "bz2:1", "snappy"};
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    RandomSamples random(seed);
    MdsWriterOptions options;
    testing::TempDir tmp;
    options.out = tmp.path();
    const size_t num_columns = random.Below(6) + 1;
    for (size_t c = 0; c < num_columns; ++c) {
      options.columns.emplace_back("col" + std::to_string(c) + (c % 2 ? "\xc3\xa9" : ""),
                                   kEncodings[random.Below(kEncodings.size())]);
    }
    options.compression = kCompressions[random.Below(kCompressions.size())];
    options.hashes =
        random.Below(2) ? std::vector<std::string>{"md5", "xxh64"} : std::vector<std::string>{};
    options.size_limit = random.Below(4) == 0 ? std::optional<uint64_t>()
                                              : std::optional<uint64_t>(300 + random.Below(3000));
    auto writer = MakeWriter(options);
    ASSERT_NE(writer, nullptr);
    std::vector<std::vector<Value>> written;
    const size_t n = random.Below(60);
    for (size_t i = 0; i < n; ++i) {
      std::vector<Value> sample;
      for (const auto& name : writer->column_names()) {
        for (const auto& [cname, enc] : options.columns) {
          if (cname == name) sample.push_back(random.ValueFor(ColumnEncoding::Parse(enc).value()));
        }
      }
      ASSERT_TRUE(writer->WriteValues(sample).ok());
      written.push_back(std::move(sample));
    }
    DatasetDescription index = writer->Finish().value();
    ASSERT_EQ(index.num_samples(), n);

    auto ds = LocalDataset::Open(tmp.path());
    ASSERT_TRUE(ds.has_value()) << ds.status().ToString();
    for (size_t i = 0; i < n; ++i) {
      auto values = (*ds)->Get(i);
      ASSERT_TRUE(values.has_value()) << values.status().ToString();
      EXPECT_EQ(*values, written[i]) << "sample " << i;
    }
    // Every shard obeys the rollover rule: within the limit unless it holds one sample.
    for (const auto& s : index.shards) {
      if (options.size_limit && s.samples > 1) {
        EXPECT_LE(s.raw_data.bytes, *options.size_limit);
      }
    }
    auto report = VerifyDataset(tmp.path(), {});
    ASSERT_TRUE(report.has_value());
    EXPECT_TRUE(report->ok()) << report->problems.front().problem;
  }
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

// Finish must wait for every shard still queued for the flush threads, not drop them.
TEST(MdsWriter, FinishWritesEveryQueuedShard) {
  testing::TempDir tmp;
  auto writer = MakeWriter({.out = tmp.path(),
                            .columns = {{"x", "str"}},
                            .hashes = {"sha256"},
                            .size_limit = 300,
                            .max_pending_shards = 64,
                            .flush_threads = 1});
  for (int i = 0; i < 3000; ++i) {
    ASSERT_TRUE(
        writer->Write({{"x", Value(std::string(40, static_cast<char>('a' + i % 26)))}}).ok());
  }
  DatasetDescription index = writer->Finish().value();
  EXPECT_EQ(index.num_samples(), 3000u);
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(tmp.path())) {
    files += entry.path().filename().string().starts_with("shard.");
  }
  EXPECT_EQ(files, index.shards.size());
  auto report = VerifyDataset(tmp.path(), {});
  ASSERT_TRUE(report.has_value());
  EXPECT_TRUE(report->ok());
  EXPECT_EQ(report->samples, 3000u);
}

TEST(MdsWriter, ReportsEachShardFileOnceItIsCompleteUnderItsName) {
  testing::TempDir tmp;
  Mutex mu;
  std::map<std::string, uint64_t> seen;  // basename -> size on disk when reported
  auto writer = MakeWriter(
      {.out = tmp.path(),
       .columns = {{"x", "str"}},
       .compression = "zstd",
       .size_limit = 300,
       .flush_threads = 2,
       .on_shard_written = [&](const std::string& basename) {
         MutexLock lock(mu);
         EXPECT_TRUE(
             seen.emplace(basename, std::filesystem::file_size(tmp.path() / basename)).second)
             << basename << " reported twice";
       }});
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(
        writer->Write({{"x", Value(std::string(40, static_cast<char>('a' + i % 26)))}}).ok());
  }
  const DatasetDescription index = writer->Finish().value();
  ASSERT_GT(index.shards.size(), 3u);
  MutexLock lock(mu);
  EXPECT_EQ(seen.size(), index.shards.size()) << "every shard, and never index.json";
  for (const ShardDescription& shard : index.shards) {
    ASSERT_TRUE(shard.zip_data.has_value());
    EXPECT_EQ(seen[shard.zip_data->basename], shard.zip_data->bytes) << "complete when reported";
  }
}

}  // namespace
}  // namespace ferry
