// Tests of VerifyDataset: a good dataset passes with the right counts; each kind of damage to a
// copy is reported against the right shard and file while the other shards are still checked;
// payload-only damage is caught by decoding and only by decoding.
#include "ferry/format/verify.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <tuple>
#include <vector>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/format/index.h"
#include "ferry/format/mds_shard_reader.h"
#include "ferry/format/mds_writer.h"
#include "format/fixture_testutil.h"
#include "format/hash.h"
#include "image/image_testutil.h"
#include "image/jpeg_codec.h"
#include "image/png_codec.h"

namespace ferry {
namespace {

using testing::CopyFixture;
using testing::FileText;

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using OrderedJson = nlohmann::ordered_json;
namespace fs = std::filesystem;

using testing::kFixtures;

VerifyReport Verify(const fs::path& root, VerifyOptions options = {}) {
  auto report = VerifyDataset(root, options);
  EXPECT_TRUE(report.has_value()) << report.status().ToString();
  return report.value_or(VerifyReport{});
}

std::string Describe(const VerifyReport& report) {
  std::string out;
  for (const auto& p : report.problems) {
    out += "  shard " + std::to_string(p.shard) + " " + p.file + ": " + p.problem + "\n";
  }
  return out;
}

uint64_t SumOfFileSizes(const fs::path& folder) {
  uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string name = entry.path().filename();
    if (name.rfind("shard.", 0) == 0) total += fs::file_size(entry.path());
  }
  return total;
}

// Recomputes every hash of raw_data (and of zip_data) in index.json from the files on disk, so
// that only checks other than hashing can notice a change.
void RehashIndex(const fs::path& folder) {
  OrderedJson j = OrderedJson::parse(FileText(folder / "index.json"));
  for (auto& shard : j["shards"]) {
    for (const char* file : {"raw_data", "zip_data"}) {
      if (shard[file].is_null() ||
          !fs::exists(folder / shard[file]["basename"].get<std::string>())) {
        continue;
      }
      const std::string bytes = FileText(folder / shard[file]["basename"].get<std::string>());
      shard[file]["bytes"] = bytes.size();
      for (auto& [algo, digest] : shard[file]["hashes"].items())
        digest = HashHex(algo, bytes).value();
    }
  }
  ASSERT_TRUE(WriteFileAtomically(folder / "index.json", j.dump()).ok());
}

// ---------------------------------------------------------------------------------------------
// Good datasets

TEST(VerifyDataset, GoodRawDatasetWithCounts) {
  const fs::path root = kFixtures / "all_scalars";
  std::vector<std::tuple<size_t, size_t, uint64_t>> progress;
  VerifyOptions options;
  options.progress = [&](size_t done, size_t total, uint64_t bytes) {
    progress.emplace_back(done, total, bytes);
  };
  const VerifyReport report = Verify(root, options);
  EXPECT_TRUE(report.ok()) << Describe(report);
  EXPECT_EQ(report.shards, 9u);
  EXPECT_EQ(report.samples, 50u);
  EXPECT_EQ(report.bytes_read, SumOfFileSizes(root));
  EXPECT_TRUE(report.bad_shards().empty());
  ASSERT_EQ(progress.size(), 9u);
  for (size_t k = 0; k < progress.size(); ++k) {
    EXPECT_EQ(std::get<0>(progress[k]), k + 1);
    EXPECT_EQ(std::get<1>(progress[k]), 9u);
    if (k > 0) {
      EXPECT_GT(std::get<2>(progress[k]), std::get<2>(progress[k - 1]));
    }
  }
  EXPECT_EQ(std::get<2>(progress.back()), report.bytes_read);
}

TEST(VerifyDataset, GoodFixturesOfEveryKind) {
  struct Case {
    const char* name;
    size_t shards;
    uint64_t samples;
  };
  for (const Case& c :
       {Case{"compressed_br", 3, 200}, Case{"compressed_bz2", 3, 200},
        Case{"compressed_gz", 3, 200}, Case{"compressed_snappy", 3, 200},
        Case{"compressed_zstd", 3, 200}, Case{"compressed_zstd_7", 3, 200}, Case{"oversize", 5, 5},
        Case{"ndarray", 3, 40}, Case{"image_misc", 2, 8}, Case{"empty_and_edge", 1, 12},
        Case{"merged", 6, 45}, Case{"pickle", 1, 10}}) {
    const VerifyReport report = Verify(kFixtures / c.name);
    EXPECT_TRUE(report.ok()) << c.name << "\n" << Describe(report);
    EXPECT_EQ(report.shards, c.shards) << c.name;
    EXPECT_EQ(report.samples, c.samples) << c.name;
  }
  // Compressed datasets read only the compressed files.
  EXPECT_EQ(Verify(kFixtures / "compressed_gz").bytes_read,
            SumOfFileSizes(kFixtures / "compressed_gz"));
}

TEST(VerifyDataset, SplitAndMissingIndex) {
  testing::TempDir tmp;
  CopyFixture("oversize", tmp / "train");
  const VerifyReport report = Verify(tmp.path(), {.split = "train"});
  EXPECT_TRUE(report.ok()) << Describe(report);
  EXPECT_EQ(report.samples, 5u);

  auto missing = VerifyDataset(tmp.path(), {});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.error().message(), HasSubstr((tmp / "index.json").string()));

  ASSERT_TRUE(WriteFileAtomically(tmp / "train" / "index.json", "{").ok());
  auto broken = VerifyDataset(tmp.path(), {.split = "train"});
  ASSERT_FALSE(broken.has_value());
  EXPECT_EQ(broken.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(broken.error().message(), HasSubstr("index.json"));
}

// ---------------------------------------------------------------------------------------------
// Damaged copies

class VerifyDamage : public ::testing::Test {
 protected:
  void SetUp() override { CopyFixture("all_scalars", tmp_.path()); }  // 9 shards, [6 x 8, 2]
  fs::path Shard(int k) const { return tmp_ / RawShardBasename(static_cast<uint64_t>(k)); }
  void Rewrite(const fs::path& path, const std::function<void(std::string&)>& fn) {
    std::string bytes = FileText(path);
    fn(bytes);
    ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());
  }
  // Every problem is about `shard` and `file`, and at least one mentions `word`.
  static void ExpectOnly(const VerifyReport& report, size_t shard, const std::string& file,
                         const std::string& word) {
    EXPECT_FALSE(report.ok());
    EXPECT_THAT(report.bad_shards(), ElementsAre(shard)) << Describe(report);
    bool mentioned = false;
    for (const auto& p : report.problems) {
      EXPECT_EQ(p.shard, shard);
      EXPECT_EQ(p.file, file);
      mentioned = mentioned || p.problem.find(word) != std::string::npos;
    }
    EXPECT_TRUE(mentioned) << "no problem mentions '" << word << "'\n" << Describe(report);
    // The other shards were still checked.
    EXPECT_EQ(report.shards, 9u);
    EXPECT_GE(report.samples, shard == 8 ? 48u : 44u);
  }
  testing::TempDir tmp_;
};

TEST_F(VerifyDamage, FlippedByteInARawShard) {
  Rewrite(Shard(4), [](std::string& b) { b[b.size() - 10] ^= 0x40; });
  ExpectOnly(Verify(tmp_.path()), 4, "shard.00004.mds", "hash mismatch");
  const VerifyReport report = Verify(tmp_.path());
  ASSERT_FALSE(report.problems.empty());
  // Both listed hashes are named.
  EXPECT_THAT(report.problems[0].problem, HasSubstr("sha1"));
  EXPECT_THAT(report.problems[0].problem, HasSubstr("xxh64"));
}

TEST_F(VerifyDamage, TruncatedShard) {
  Rewrite(Shard(2), [](std::string& b) { b.resize(b.size() - 3); });
  ExpectOnly(Verify(tmp_.path()), 2, "shard.00002.mds", "bytes but the index says");
}

TEST_F(VerifyDamage, TruncatedShardWithRehashedIndexIsStillCaught) {
  Rewrite(Shard(2), [](std::string& b) { b.resize(b.size() - 3); });
  RehashIndex(tmp_.path());
  ExpectOnly(Verify(tmp_.path()), 2, "shard.00002.mds", "offsets");
}

TEST_F(VerifyDamage, DeletedShardFile) {
  fs::remove(Shard(7));
  ExpectOnly(Verify(tmp_.path()), 7, "shard.00007.mds", "open failed");
}

TEST_F(VerifyDamage, SeveralBadShardsAreAllListed) {
  Rewrite(Shard(0), [](std::string& b) { b[100] ^= 1; });
  fs::remove(Shard(8));
  Rewrite(Shard(5), [](std::string& b) { b += "x"; });
  const VerifyReport report = Verify(tmp_.path());
  EXPECT_THAT(report.bad_shards(), ElementsAre(0, 5, 8)) << Describe(report);
  EXPECT_EQ(report.shards, 9u);
  EXPECT_GE(report.samples, 36u);  // shards 1-4, 6, 7
}

TEST_F(VerifyDamage, VariableSizeTableCaughtWithoutDecoding) {
  // Shard 1's first record: grow the first variable size (the "Zeta" str column) by one, then
  // rehash so that only the record layout check can notice.
  const auto index = ParseIndex(FileText(tmp_ / "index.json"), "index.json").value();
  auto reader = MdsShardReader::Open(Shard(1), index.shards[1]).value();
  const size_t at = static_cast<size_t>(reader.record(0).data() - reader.data().data());
  Rewrite(Shard(1), [&](std::string& b) { b[at] = static_cast<char>(b[at] + 1); });
  RehashIndex(tmp_.path());
  for (bool decode : {true, false}) {
    ExpectOnly(Verify(tmp_.path(), {.decode_samples = decode}), 1, "shard.00001.mds", "sample 0");
  }
}

TEST(VerifyCompressed, RawDataBytesSmallerThanWhatTheShardDecompressesTo) {
  for (const char* name : {"compressed_gz", "compressed_zstd", "compressed_snappy"}) {
    SCOPED_TRACE(name);
    testing::TempDir tmp;
    CopyFixture(name, tmp.path());
    OrderedJson j = OrderedJson::parse(FileText(tmp / "index.json"));
    j["shards"][1]["raw_data"]["bytes"] = j["shards"][1]["raw_data"]["bytes"].get<uint64_t>() / 2;
    ASSERT_TRUE(WriteFileAtomically(tmp / "index.json", j.dump()).ok());
    const VerifyReport report = Verify(tmp.path());
    EXPECT_THAT(report.bad_shards(), ElementsAre(1)) << Describe(report);
    ASSERT_EQ(report.problems.size(), 1u) << Describe(report);
    EXPECT_EQ(report.problems[0].file, j["shards"][1]["zip_data"]["basename"].get<std::string>());
    EXPECT_THAT(report.problems[0].problem, HasSubstr("expands past"));
    EXPECT_EQ(report.samples, 200u - 98u);  // shards 0 and 2 were decoded
  }
}

TEST(VerifyCompressed, EmptyDataset) {
  testing::TempDir tmp;
  ASSERT_TRUE(WriteFileAtomically(tmp / "index.json", R"({"shards": [], "version": 2})").ok());
  const VerifyReport report = Verify(tmp.path());
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.shards, 0u);
  EXPECT_EQ(report.samples, 0u);
}

// ---------------------------------------------------------------------------------------------
// Payload-only damage: record sizes stay right, hashes are recomputed, only decoding can tell.

class VerifyPayloadDamage : public ::testing::Test {
 protected:
  void SetUp() override {
    auto writer = MdsWriter::Create({.out = tmp_.path(),
                                     .columns = {{"arr", "ndarray:uint8"}, {"id", "int"}},
                                     .hashes = {"sha1"},
                                     .size_limit = 400});
    ASSERT_TRUE(writer.has_value()) << writer.status().ToString();
    for (int i = 0; i < 30; ++i) {
      ASSERT_TRUE(
          (*writer)
              ->Write({{"arr", Value(NdArray{DType::kUInt8, {4}, "abcd"})}, {"id", Value(i)}})
              .ok());
    }
    index_ = (*writer)->Finish().value();
    ASSERT_GE(index_.shards.size(), 3u);
  }
  testing::TempDir tmp_;
  DatasetDescription index_;
};

TEST_F(VerifyPayloadDamage, OnlyDecodeCatchesAShapeThatNoLongerMatches) {
  ASSERT_TRUE(Verify(tmp_.path()).ok());
  // Shard 1, sample 2: record = [u32 size of arr][arr: shape byte 0x04, dim 4, "abcd"][id].
  // Change the dimension to 5: the record keeps its size but the array needs 5 bytes.
  const fs::path path = tmp_ / index_.shards[1].raw_data.basename;
  auto reader = MdsShardReader::Open(path, index_.shards[1]).value();
  const std::string_view record = reader.record(2);
  ASSERT_EQ(static_cast<uint8_t>(record[4]), 0x04);  // ndim 1, u8 words
  ASSERT_EQ(static_cast<uint8_t>(record[5]), 4);
  const size_t at = static_cast<size_t>(record.data() - reader.data().data()) + 5;
  std::string bytes = FileText(path);
  bytes[at] = 5;
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());
  RehashIndex(tmp_.path());

  const VerifyReport full = Verify(tmp_.path());
  EXPECT_FALSE(full.ok());
  EXPECT_THAT(full.bad_shards(), ElementsAre(1)) << Describe(full);
  ASSERT_EQ(full.problems.size(), 1u) << Describe(full);
  EXPECT_EQ(full.problems[0].file, index_.shards[1].raw_data.basename);
  EXPECT_THAT(full.problems[0].problem, HasSubstr("sample 2"));
  EXPECT_THAT(full.problems[0].problem, HasSubstr("column 'arr'"));
  EXPECT_THAT(full.problems[0].problem, HasSubstr("shape (5)"));
  EXPECT_EQ(full.shards, index_.shards.size());

  const VerifyReport layout_only = Verify(tmp_.path(), {.decode_samples = false});
  EXPECT_TRUE(layout_only.ok()) << Describe(layout_only);
  EXPECT_EQ(layout_only.samples, 30u);
}

TEST_F(VerifyPayloadDamage, CompressedShardDamage) {
  // The same dataset, compressed.
  testing::TempDir zipped;
  auto writer = MdsWriter::Create({.out = zipped.path(),
                                   .columns = {{"arr", "ndarray:uint8"}, {"id", "int"}},
                                   .compression = "zstd",
                                   .hashes = {"sha1", "xxh64"},
                                   .size_limit = 400});
  ASSERT_TRUE(writer.has_value());
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE((*writer)
                    ->Write({{"arr", Value(NdArray{DType::kUInt8, {4}, "abcd"})}, {"id", Value(i)}})
                    .ok());
  }
  const DatasetDescription index = (*writer)->Finish().value();
  const VerifyReport good = Verify(zipped.path());
  EXPECT_TRUE(good.ok()) << Describe(good);
  EXPECT_EQ(good.samples, 30u);

  // Overwrite the middle of shard 1's frame: the zip hashes catch it.
  const std::string zip_name = index.shards[1].zip_data->basename;
  std::string bytes = FileText(zipped / zip_name);
  for (size_t i = bytes.size() / 3; i < bytes.size() * 2 / 3; ++i) bytes[i] = 'Z';
  ASSERT_TRUE(WriteFileAtomically(zipped / zip_name, bytes).ok());
  const VerifyReport hashed = Verify(zipped.path());
  EXPECT_THAT(hashed.bad_shards(), ElementsAre(1)) << Describe(hashed);
  ASSERT_FALSE(hashed.problems.empty());
  EXPECT_EQ(hashed.problems[0].file, zip_name);
  EXPECT_THAT(hashed.problems[0].problem, HasSubstr("hash mismatch"));

  // With the zip hashes recomputed, decompression or the raw checks must still catch it.
  RehashIndex(zipped.path());
  const VerifyReport rehashed = Verify(zipped.path());
  EXPECT_THAT(rehashed.bad_shards(), ElementsAre(1)) << Describe(rehashed);
  ASSERT_FALSE(rehashed.problems.empty());
  EXPECT_EQ(rehashed.problems[0].file, zip_name);
  EXPECT_EQ(rehashed.shards, index.shards.size());
  EXPECT_GE(rehashed.samples, 30u - index.shards[1].samples);
}

TEST(VerifyImages, TwentyFiveGarbageBytesInAJpegColumnAreReported) {
  testing::TempDir tmp;
  const std::string jpeg = EncodeJpeg(internal_image_test::PatternImage("RGB", 40, 30), 90).value();
  auto writer = MdsWriter::Create(
      {.out = tmp.path(), .columns = {{"data", "jpeg"}, {"id", "int"}}, .hashes = {"sha1"}});
  ASSERT_TRUE(writer.has_value()) << writer.status().ToString();
  ASSERT_TRUE((*writer)->Write({{"data", Value(Bytes{jpeg})}, {"id", Value(0)}}).ok());
  ASSERT_TRUE(
      (*writer)->Write({{"data", Value(Bytes{std::string(25, 'x')})}, {"id", Value(1)}}).ok());
  (*writer)->Finish().value();

  const VerifyReport report = Verify(tmp.path());
  ASSERT_EQ(report.problems.size(), 1u) << Describe(report);
  EXPECT_THAT(report.problems[0].problem, HasSubstr("sample 1: column 'data'"));
  EXPECT_EQ(report.samples, 2u);

  const VerifyReport layout_only = Verify(tmp.path(), {.decode_samples = false});
  EXPECT_TRUE(layout_only.ok()) << Describe(layout_only);
}

TEST(VerifyImages, EachKindOfImageDamageIsFound) {
  const std::string jpeg = EncodeJpeg(internal_image_test::PatternImage("RGB", 40, 30), 90).value();
  const std::string png = EncodePng(internal_image_test::PatternImage("RGB", 8, 8)).value();
  struct Case {
    const char* column;
    const char* encoding;
    Value value;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"image", "jpeg", Value(Bytes{jpeg}), ""},
      {"image", "jpeg", Value(Bytes{std::string(25, 'x')}), "column 'image'"},
      {"image", "jpeg", Value(Bytes{jpeg.substr(0, jpeg.size() * 2 / 3)}), "column 'image'"},
      {"mask", "png", Value(Bytes{png}), ""},
      {"mask", "png", Value(Bytes{png.substr(0, png.size() - 20)}), "column 'mask'"},
      {"frames", "list[jpeg]", Value(ValueList{Value(Bytes{jpeg}), Value(Bytes{"\xFF\xD8\xFFx"})}),
       "element 1"},
      {"frames", "jpeg_array", Value(ValueList{Value(Bytes{std::string(9, 'y')})}), "element 0"},
      {"masks", "list[png]", Value(ValueList{Value(Bytes{png}), Value(Bytes{"nope"})}),
       "element 1"},
  };
  for (const Case& c : cases) {
    testing::TempDir tmp;
    auto writer = MdsWriter::Create({.out = tmp.path(), .columns = {{c.column, c.encoding}}});
    ASSERT_TRUE(writer.has_value()) << writer.status().ToString();
    ASSERT_TRUE((*writer)->Write({{c.column, c.value}}).ok()) << c.encoding;
    (*writer)->Finish().value();
    const VerifyReport report = Verify(tmp.path());
    if (std::string(c.want).empty()) {
      EXPECT_TRUE(report.ok()) << c.encoding << "\n" << Describe(report);
    } else {
      ASSERT_EQ(report.problems.size(), 1u) << c.encoding << " " << c.want;
      EXPECT_THAT(report.problems[0].problem, HasSubstr(c.want)) << c.encoding;
      EXPECT_TRUE(Verify(tmp.path(), {.decode_samples = false}).ok()) << c.encoding;
    }
  }
}

}  // namespace
}  // namespace ferry
