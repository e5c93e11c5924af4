// Tests of LocalDataset: opening (index errors, split, unsafe columns), locating samples across
// empty shards, decoding, in-memory decompression that leaves the dataset folder untouched, hash
// validation, the bound on decompressed size, and concurrent reads through a small shard cache.
#include "ferry/format/local_dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/format/mds_writer.h"
#include "format/compression.h"
#include "format/fixture_testutil.h"

namespace ferry {
namespace {

using testing::CopyFixture;
using testing::FileText;

using ::testing::HasSubstr;
using OrderedJson = nlohmann::ordered_json;
namespace fs = std::filesystem;

using testing::kFixtures;

// The sorted names of the files in `folder`.
std::set<std::string> Listing(const fs::path& folder) {
  std::set<std::string> out;
  for (const auto& entry : fs::directory_iterator(folder)) out.insert(entry.path().filename());
  return out;
}

void EditIndex(const fs::path& folder, const std::function<void(OrderedJson&)>& fn) {
  OrderedJson j = OrderedJson::parse(FileText(folder / "index.json"));
  fn(j);
  ASSERT_TRUE(WriteFileAtomically(folder / "index.json", j.dump()).ok());
}

std::unique_ptr<LocalDataset> OpenOk(const fs::path& root, LocalDatasetOptions options = {}) {
  auto ds = LocalDataset::Open(root, std::move(options));
  EXPECT_TRUE(ds.has_value()) << ds.status().ToString();
  return ds.has_value() ? std::move(*ds) : nullptr;
}

// ---------------------------------------------------------------------------------------------
// Open

TEST(LocalDatasetOpen, MissingIndexIsInvalidArgumentAndMissingFolderNotFound) {
  testing::TempDir tmp;
  auto ds = LocalDataset::Open(tmp.path());
  ASSERT_FALSE(ds.has_value());
  EXPECT_EQ(ds.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(ds.error().message(), HasSubstr((tmp / "index.json").string()));
  EXPECT_THAT(ds.error().message(), HasSubstr("does not exist"));

  auto no_folder = LocalDataset::Open(tmp / "nowhere");
  ASSERT_FALSE(no_folder.has_value());
  EXPECT_EQ(no_folder.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(no_folder.error().message(), HasSubstr((tmp / "nowhere").string()));
  EXPECT_THAT(no_folder.error().message(), HasSubstr("nowhere"));
}

TEST(LocalDatasetOpen, MalformedIndexNamesTheFile) {
  testing::TempDir tmp;
  const auto index_path = tmp / "index.json";
  for (const char* text : {"not json", "[]", R"({"shards": [{}], "version": 2})"}) {
    ASSERT_TRUE(WriteFileAtomically(index_path, text).ok());
    auto ds = LocalDataset::Open(tmp.path());
    ASSERT_FALSE(ds.has_value()) << text;
    EXPECT_EQ(ds.error().code(), StatusCode::kDataLoss) << text;
    EXPECT_THAT(ds.error().message(), HasSubstr(index_path.string())) << text;
  }
  ASSERT_TRUE(WriteFileAtomically(index_path, R"({"shards": [], "version": 3})").ok());
  auto v3 = LocalDataset::Open(tmp.path());
  ASSERT_FALSE(v3.has_value());
  EXPECT_EQ(v3.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(v3.error().message(), HasSubstr(index_path.string()));
}

TEST(LocalDatasetOpen, SplitSubFolder) {
  testing::TempDir tmp;
  CopyFixture("oversize", tmp / "train");
  auto ds = OpenOk(tmp.path(), {.split = "train"});
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(ds->folder(), tmp / "train");
  EXPECT_EQ(ds->num_samples(), 5u);
  EXPECT_TRUE(ds->Get(4).has_value());
  // Without the split the root has no index.
  auto root = LocalDataset::Open(tmp.path());
  ASSERT_FALSE(root.has_value());
  EXPECT_EQ(root.error().code(), StatusCode::kInvalidArgument);
  // A split that does not exist names its folder.
  auto other = LocalDataset::Open(tmp.path(), {.split = "val"});
  ASSERT_FALSE(other.has_value());
  EXPECT_THAT(other.error().message(), HasSubstr((tmp / "val" / "index.json").string()));
}

TEST(LocalDatasetOpen, PickleColumnsAreRefusedUnlessAllowed) {
  const fs::path root = kFixtures / "pickle";
  auto refused = LocalDataset::Open(root);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.error().message(), HasSubstr("pkl"));
  EXPECT_THAT(refused.error().message(), HasSubstr("contains an unsafe type"));  // as Mosaic's
  EXPECT_THAT(refused.error().message(), HasSubstr("allow_unsafe_types"));
  EXPECT_THAT(refused.error().message(), HasSubstr((root / "index.json").string()));

  auto ds = OpenOk(root, {.allow_unsafe_types = true});
  ASSERT_NE(ds, nullptr);
  auto sample = ds->Get(0);
  ASSERT_TRUE(sample.has_value()) << sample.status().ToString();
  ASSERT_EQ(sample->size(), 2u);  // id, obj
  EXPECT_EQ((*sample)[0], Value(int64_t{0}));
  // The pickle is handed out as its raw bytes, never unpickled.
  const auto& pickle = std::get<Bytes>((*sample)[1]).data;
  EXPECT_EQ(pickle.substr(0, 2), "\x80\x04");
  EXPECT_EQ(pickle.size(), 36u);
}

TEST(LocalDatasetOpen, UnknownValidateHashIsRejectedAtOpen) {
  auto ds = LocalDataset::Open(kFixtures / "oversize", {.validate_hash = "crc32"});
  ASSERT_FALSE(ds.has_value());
  EXPECT_EQ(ds.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(ds.error().message(), HasSubstr("crc32"));
}

// ---------------------------------------------------------------------------------------------
// Locate and Get

TEST(LocalDatasetLocate, SkipsEmptyShards) {
  // oversize: shard sample counts [0, 1, 2, 1, 1].
  auto ds = OpenOk(kFixtures / "oversize");
  ASSERT_NE(ds, nullptr);
  ASSERT_EQ(ds->num_samples(), 5u);
  const std::vector<std::pair<size_t, uint32_t>> expected = {
      {1, 0}, {2, 0}, {2, 1}, {3, 0}, {4, 0}};
  for (uint64_t i = 0; i < expected.size(); ++i) {
    auto where = ds->Locate(i);
    ASSERT_TRUE(where.has_value()) << i;
    EXPECT_EQ(*where, expected[i]) << i;
  }
  for (uint64_t past : {uint64_t{5}, uint64_t{6}, UINT64_MAX}) {
    auto where = ds->Locate(past);
    ASSERT_FALSE(where.has_value()) << past;
    EXPECT_EQ(where.error().code(), StatusCode::kOutOfRange);
    EXPECT_THAT(where.error().message(), HasSubstr(std::to_string(past)));
    EXPECT_EQ(ds->Get(past).status().code(), StatusCode::kOutOfRange);
  }
  // The empty shard itself opens and holds nothing.
  auto empty = ds->Shard(0);
  ASSERT_TRUE(empty.has_value()) << empty.status().ToString();
  EXPECT_EQ((*empty)->num_samples(), 0u);
  EXPECT_EQ(ds->Shard(5).status().code(), StatusCode::kOutOfRange);
}

TEST(LocalDatasetLocate, RunsOfEmptyShardsAnywhere) {
  // Only the index is needed to locate samples; shard files are opened on first use.
  testing::TempDir tmp;
  auto config = std::make_shared<ShardConfig>();
  config->column_names = {"x"};
  config->column_encodings = {ColumnEncoding::Parse("int").value()};
  config->column_sizes = {8};
  DatasetDescription index;
  for (uint64_t samples : {0, 0, 2, 0, 0, 1, 0, 3, 0}) {
    ShardDescription e;
    e.config = config;
    e.raw_data = {RawShardBasename(index.shards.size()), 1000, {}};
    e.samples = samples;
    index.shards.push_back(e);
  }
  ASSERT_TRUE(WriteFileAtomically(tmp / "index.json", SerializeIndex(index)).ok());
  auto ds = OpenOk(tmp.path());
  ASSERT_NE(ds, nullptr);
  ASSERT_EQ(ds->num_samples(), 6u);
  const std::vector<std::pair<size_t, uint32_t>> expected = {{2, 0}, {2, 1}, {5, 0},
                                                             {7, 0}, {7, 1}, {7, 2}};
  for (uint64_t i = 0; i < expected.size(); ++i) EXPECT_EQ(ds->Locate(i).value(), expected[i]);
  EXPECT_EQ(ds->Locate(6).status().code(), StatusCode::kOutOfRange);
  // The shard files are missing: Get says which one.
  auto missing = ds->Get(2);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.error().message(), HasSubstr("shard.00005.mds"));
}

TEST(LocalDatasetGet, DecodesWhatTheWriterWrote) {
  testing::TempDir tmp;
  auto writer = MdsWriter::Create({.out = tmp.path(),
                                   .columns = {{"id", "int"},
                                               {"name", "str"},
                                               {"score", "float32"},
                                               {"big", "str_int"},
                                               {"vec", "ndarray:uint16"},
                                               {"meta", "json"}},
                                   .hashes = {"sha1"},
                                   .size_limit = 600});
  ASSERT_TRUE(writer.has_value()) << writer.status().ToString();
  std::vector<std::vector<Value>> written;
  for (int i = 0; i < 40; ++i) {
    std::map<std::string, Value, std::less<>> sample = {
        {"id", Value(i * 1000 - 7)},
        {"name", Value("n\xc3\xa9" + std::to_string(i))},
        {"score", Value(i + 0.5)},
        {"big", Value(NumberText{std::to_string(i + 1) + "00000000000000000000000"})},
        {"vec", Value(NdArray{DType::kUInt16, {2}, std::string{static_cast<char>(i), 0, 1, 2}})},
        {"meta", Value(Json{"{\"i\": " + std::to_string(i) + "}"})},
    };
    ASSERT_TRUE((*writer)->Write(sample).ok());
    // Column order is sorted: big, id, meta, name, score, vec.
    written.push_back({sample["big"], Value(int64_t{i * 1000 - 7}), sample["meta"], sample["name"],
                       Value(i + 0.5), sample["vec"]});
  }
  const DatasetDescription index = (*writer)->Finish().value();
  ASSERT_GT(index.shards.size(), 3u);
  auto ds = OpenOk(tmp.path(), {.validate_hash = "sha1"});
  ASSERT_NE(ds, nullptr);
  ASSERT_EQ(ds->num_samples(), 40u);
  for (uint64_t i = 0; i < 40; ++i) {
    auto values = ds->Get(i);
    ASSERT_TRUE(values.has_value()) << i << ": " << values.status().ToString();
    EXPECT_EQ(*values, written[i]) << i;
  }
}

TEST(LocalDatasetGet, DecodeErrorNamesFileSampleAndColumn) {
  testing::TempDir own;
  auto writer = MdsWriter::Create({.out = own.path(), .columns = {{"t", "str"}}});
  ASSERT_TRUE(writer.has_value());
  ASSERT_TRUE((*writer)->Write({{"t", Value("hello")}}).ok());
  ASSERT_TRUE((*writer)->Finish().has_value());
  std::string shard = FileText(own / "shard.00000.mds");
  shard[shard.size() - 1] = '\xff';  // "hell\xff"
  ASSERT_TRUE(WriteFileAtomically(own / "shard.00000.mds", shard).ok());
  auto ds = OpenOk(own.path());
  ASSERT_NE(ds, nullptr);
  auto v = ds->Get(0);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(v.error().message(), HasSubstr("shard.00000.mds"));
  EXPECT_THAT(v.error().message(), HasSubstr("sample 0"));
  EXPECT_THAT(v.error().message(), HasSubstr("column 't'"));
  EXPECT_THAT(v.error().message(), HasSubstr("UTF-8"));
}

TEST(LocalDatasetGet, CorruptShardIsReportedAtFirstUse) {
  testing::TempDir tmp;
  CopyFixture("all_scalars", tmp.path());
  // Truncate shard 3: the other shards still read.
  const auto path = tmp / "shard.00003.mds";
  const std::string bytes = FileText(path);
  ASSERT_TRUE(WriteFileAtomically(path, bytes.substr(0, bytes.size() / 2)).ok());
  auto ds = OpenOk(tmp.path());
  ASSERT_NE(ds, nullptr);
  EXPECT_TRUE(ds->Get(0).has_value());
  EXPECT_TRUE(ds->Get(49).has_value());
  auto bad = ds->Get(18);  // shard 3 holds samples 18..23
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(bad.error().message(), HasSubstr(path.string()));
  EXPECT_THAT(bad.error().message(), HasSubstr("index says"));
}

// ---------------------------------------------------------------------------------------------
// Compressed shards

const char* const kCompressed[] = {"compressed_br",     "compressed_bz2",  "compressed_gz",
                                   "compressed_snappy", "compressed_zstd", "compressed_zstd_7"};

TEST(LocalDatasetCompressed, DecompressesInMemoryWithoutWritingIntoTheFolder) {
  // All six fixtures hold the same 200 samples.
  std::vector<std::vector<Value>> reference;
  for (const char* name : kCompressed) {
    SCOPED_TRACE(name);
    const fs::path root = kFixtures / name;
    const auto before = Listing(root);
    auto ds = OpenOk(root);
    ASSERT_NE(ds, nullptr);
    ASSERT_EQ(ds->num_samples(), 200u);
    for (uint64_t i = 0; i < 200; ++i) {
      auto v = ds->Get(i);
      ASSERT_TRUE(v.has_value()) << i << ": " << v.status().ToString();
      if (reference.size() < 200) {
        reference.push_back(*v);
      } else {
        EXPECT_EQ(*v, reference[i]) << i;
      }
    }
    auto shard = ds->Shard(1);
    ASSERT_TRUE(shard.has_value());
    EXPECT_EQ((*shard)->num_samples(), ds->index().shards[1].samples);
    EXPECT_THAT((*shard)->origin(), HasSubstr(ds->index().shards[1].zip_data->basename));
    EXPECT_EQ(Listing(root), before) << "nothing may be written next to the dataset";
  }
  // Spot values from expected.json.
  EXPECT_EQ(reference[0][1], Value(int64_t{-274365479215}));
  EXPECT_EQ(std::get<std::string>(reference[0][2]).substr(0, 16), "lima papa quebec");
}

TEST(LocalDatasetCompressed, RawDataBytesSmallerThanTheDecompressedShard) {
  for (const char* name : kCompressed) {
    SCOPED_TRACE(name);
    testing::TempDir tmp;
    CopyFixture(name, tmp.path());
    EditIndex(tmp.path(), [](OrderedJson& j) {
      j["shards"][0]["raw_data"]["bytes"] =
          j["shards"][0]["raw_data"]["bytes"].get<uint64_t>() - 100;
    });
    auto ds = OpenOk(tmp.path());
    ASSERT_NE(ds, nullptr);
    auto v = ds->Get(0);
    ASSERT_FALSE(v.has_value());
    EXPECT_EQ(v.error().code(), StatusCode::kDataLoss);
    EXPECT_THAT(v.error().message(), HasSubstr("shard.00000.mds."));
    EXPECT_THAT(v.error().message(), HasSubstr("expands past"));
    EXPECT_TRUE(ds->Get(199).has_value()) << "the other shards still read";
  }
}

TEST(LocalDatasetCompressed, CorruptOrMissingCompressedShard) {
  testing::TempDir tmp;
  CopyFixture("compressed_gz", tmp.path());
  const auto zip = tmp / "shard.00001.mds.gz";
  std::string bytes = FileText(zip);
  bytes[bytes.size() / 2] ^= 0x55;
  ASSERT_TRUE(WriteFileAtomically(zip, bytes).ok());
  fs::remove(tmp / "shard.00002.mds.gz");
  auto ds = OpenOk(tmp.path());
  ASSERT_NE(ds, nullptr);
  auto corrupt = ds->Get(100);
  ASSERT_FALSE(corrupt.has_value());
  EXPECT_EQ(corrupt.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(corrupt.error().message(), HasSubstr(zip.string()));
  auto missing = ds->Get(199);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.error().message(), HasSubstr("shard.00002.mds.gz"));
  // A truncated compressed file disagrees with zip_data.bytes.
  const auto zip0 = tmp / "shard.00000.mds.gz";
  ASSERT_TRUE(WriteFileAtomically(zip0, FileText(zip0).substr(0, 100)).ok());
  auto cut = ds->Get(0);
  ASSERT_FALSE(cut.has_value());
  EXPECT_EQ(cut.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(cut.error().message(), HasSubstr(zip0.string()));
}

TEST(LocalDatasetCompressed, RawFileNextToTheCompressedOneIsUsedAsIs) {
  testing::TempDir tmp;
  CopyFixture("compressed_zstd", tmp.path());
  auto ds = OpenOk(tmp.path());
  ASSERT_NE(ds, nullptr);
  const ShardDescription& entry = ds->index().shards[0];
  const std::string raw =
      Compression::Parse(*entry.config->compression)
          .value()
          .Decompress(testing::FileText(tmp / entry.zip_data->basename), entry.raw_data.bytes)
          .value();
  // Put the raw shard beside it and remove the compressed one: still readable.
  ASSERT_TRUE(WriteFileAtomically(tmp / "shard.00000.mds", raw).ok());
  fs::remove(tmp / "shard.00000.mds.zstd");
  auto again = OpenOk(tmp.path());
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->Get(5).value(), ds->Get(5).value());
  EXPECT_EQ(again->Shard(0).value()->origin(), (tmp / "shard.00000.mds").string());
}

// ---------------------------------------------------------------------------------------------
// validate_hash

TEST(LocalDatasetValidateHash, RawShards) {
  testing::TempDir tmp;
  CopyFixture("all_scalars", tmp.path());  // hashes: sha1, xxh64
  // Change one byte of the last record of shard 2 (samples 12..17) without touching the layout:
  // the last column is u8, a fixed single byte.
  const auto path = tmp / "shard.00002.mds";
  std::string bytes = FileText(path);
  bytes.back() = static_cast<char>(bytes.back() ^ 0x01);
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());

  // Without validation the reference reads it, and so do we.
  auto plain = OpenOk(tmp.path());
  ASSERT_NE(plain, nullptr);
  EXPECT_TRUE(plain->Get(17).has_value());

  for (const char* algo : {"sha1", "xxh64"}) {
    auto ds = OpenOk(tmp.path(), {.validate_hash = algo});
    ASSERT_NE(ds, nullptr);
    EXPECT_TRUE(ds->Get(0).has_value()) << algo;
    auto v = ds->Get(12);
    ASSERT_FALSE(v.has_value()) << algo;
    EXPECT_EQ(v.error().code(), StatusCode::kDataLoss);
    EXPECT_THAT(v.error().message(), HasSubstr(path.string()));
    EXPECT_THAT(v.error().message(), HasSubstr(algo));
    EXPECT_THAT(v.error().message(), HasSubstr("digest"));
  }
  // An algorithm the index does not list.
  auto md5 = OpenOk(tmp.path(), {.validate_hash = "md5"});
  ASSERT_NE(md5, nullptr);
  auto v = md5->Get(0);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(v.error().message(), HasSubstr("'md5'"));
  EXPECT_THAT(v.error().message(), HasSubstr("shard.00000.mds"));
}

TEST(LocalDatasetValidateHash, CompressedShardsCheckTheCompressedFile) {
  testing::TempDir tmp;
  CopyFixture("compressed_zstd", tmp.path());  // hashes: sha256, xxh3_64
  auto good = OpenOk(tmp.path(), {.validate_hash = "xxh3_64"});
  ASSERT_NE(good, nullptr);
  EXPECT_TRUE(good->Get(0).has_value());

  // Same size, one byte changed near the end of the frame.
  const auto zip = tmp / "shard.00001.mds.zstd";
  std::string bytes = FileText(zip);
  bytes[bytes.size() - 3] ^= 0x20;
  ASSERT_TRUE(WriteFileAtomically(zip, bytes).ok());
  auto ds = OpenOk(tmp.path(), {.validate_hash = "sha256"});
  ASSERT_NE(ds, nullptr);
  auto v = ds->Get(100);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(v.error().message(), HasSubstr(zip.string()));
  EXPECT_THAT(v.error().message(), HasSubstr("sha256"));

  auto sha1 = OpenOk(tmp.path(), {.validate_hash = "sha1"});
  ASSERT_NE(sha1, nullptr);
  EXPECT_EQ(sha1->Get(0).status().code(), StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Concurrency

TEST(LocalDatasetConcurrency, FourThreadsWithTwoOpenShardsMatchASerialRead) {
  for (const char* name : {"all_scalars", "compressed_zstd"}) {
    SCOPED_TRACE(name);
    const fs::path root = kFixtures / name;
    auto serial_ds = OpenOk(root);
    ASSERT_NE(serial_ds, nullptr);
    const uint64_t n = serial_ds->num_samples();
    std::vector<std::vector<Value>> serial(n);
    for (uint64_t i = 0; i < n; ++i) serial[i] = serial_ds->Get(i).value();

    auto ds = OpenOk(root, {.max_open_shards = 2});
    ASSERT_NE(ds, nullptr);
    constexpr int kThreads = 4;
    // Each thread walks all samples twice in its own order (steps coprime to n), so that the
    // two cache slots keep being evicted and shards are opened by several threads at once.
    constexpr uint64_t kSteps[kThreads] = {1, 3, 7, 11};
    std::vector<int> failures(kThreads, 0), mismatches(kThreads, 0), reads(kThreads, 0);
    {
      std::vector<std::jthread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
          for (uint64_t k = 0; k < 2 * n; ++k) {
            const uint64_t i = (k * kSteps[t] + static_cast<uint64_t>(t) * 13) % n;
            auto v = ds->Get(i);
            ++reads[t];
            if (!v.has_value()) {
              ++failures[t];
            } else if (*v != serial[i]) {
              ++mismatches[t];
            }
          }
        });
      }
    }
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_EQ(reads[t], static_cast<int>(2 * n)) << "thread " << t;
      EXPECT_EQ(failures[t], 0) << "thread " << t;
      EXPECT_EQ(mismatches[t], 0) << "thread " << t;
    }
  }
}

TEST(LocalDatasetConcurrency, ReadersHandedOutStayValidAfterEviction) {
  auto ds = OpenOk(kFixtures / "all_scalars", {.max_open_shards = 1});
  ASSERT_NE(ds, nullptr);
  auto first = ds->Shard(0);
  ASSERT_TRUE(first.has_value());
  SampleFields sample;
  ASSERT_TRUE((*first)->ReadSample(0, sample).ok());
  const std::string_view record = sample.fields.at(0);
  const std::string copy(record);
  for (size_t k = 1; k < ds->index().shards.size(); ++k) ASSERT_TRUE(ds->Shard(k).has_value());
  EXPECT_EQ(record, copy);  // still mapped: the caller holds the reader
  EXPECT_EQ((*first)->num_samples(), 6u);
}

}  // namespace
}  // namespace ferry
