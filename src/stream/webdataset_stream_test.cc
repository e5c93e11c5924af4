// StreamingDataset over WebDataset tar shards described by a shard list (index.json as wids
// writes it): the fixture written by WebDataset's own TarWriter, as a "remote" folder streamed
// through a cache folder, read by every worker of a world exactly once, resumed, and served from
// the cache in epoch 2; beside an MDS stream in one dataset. Without the list, the folder's tars
// are listed and read once at the first open (UnlistedTarsTest).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/format/mds_writer.h"
#include "ferry/metrics/metrics.h"
#include "ferry/stream/streaming_dataset.h"
#include "format/fixture_testutil.h"
#include "format/hash.h"
#include "format/webdataset_fixture_testutil.h"
#include "format/webdataset_index.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kTarWriter = testing::WebDatasetFixtures() / "tarwriter";

// What WebDataset yields for one sample: its key, and each field's sha256.
struct Expected {
  std::string key;
  std::map<std::string, std::string> sha256;
};

class WebDatasetStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto expected = nlohmann::json::parse(testing::FileText(kTarWriter / "expected.json"));
    fs::create_directories(remote());
    DatasetDescription description;
    for (const auto& shard : expected["shards"]) {
      const std::string name = shard["shard"];
      fs::copy_file(kTarWriter / name, remote() / name);
      description.shards.push_back(
          {.config = std::make_shared<const ShardConfig>(),
           .raw_data = {.basename = name, .bytes = fs::file_size(remote() / name)},
           .samples = shard["samples"].size(),
           .format = "webdataset"});
      for (const auto& s : shard["samples"]) {
        Expected e{.key = s["__key__"]};
        for (const auto& [field, info] : s["fields"].items()) e.sha256[field] = info["sha256"];
        expected_.push_back(std::move(e));
      }
    }
    ASSERT_TRUE(WriteFileAtomically(remote() / "index.json",
                                    internal_format::SerializeWebDatasetIndex(description))
                    .ok());
    ASSERT_GT(expected_.size(), 20u);
  }
  fs::path remote() const { return tmp_.path() / "remote"; }
  StreamingOptions Options() const {
    StreamingOptions o;
    o.streams = {{.remote = remote().string(), .local = (tmp_.path() / "cache").string()}};
    return o;
  }
  // The sample's key, after checking that its fields are WebDataset's, byte for byte.
  std::string Check(const Sample& s) const {
    EXPECT_LT(s.id, expected_.size());
    if (s.id >= expected_.size()) return "";
    const Expected& want = expected_[s.id];
    EXPECT_EQ(s.config->column_names.at(0), "__key__");
    EXPECT_EQ(s.fields.at(0), want.key) << "sample " << s.id;
    EXPECT_EQ(s.fields.size() - 1, want.sha256.size()) << "sample " << s.id;
    for (size_t f = 1; f < s.fields.size(); ++f) {
      const std::string& name = s.config->column_names[f];
      EXPECT_EQ(HashHex("sha256", s.fields[f]).value(), want.sha256.at(name))
          << "sample " << s.id << " field " << name;
    }
    return std::string(s.fields[0]);
  }
  std::vector<uint64_t> ReadAll(SampleIterator& it) const {
    std::vector<uint64_t> ids;
    for (;;) {
      auto s = it.Next();
      EXPECT_TRUE(s.ok()) << s.status().ToString();
      if (!s || !*s) break;
      if ((*s)->stream == 0) Check(**s);  // the tar stream; an MDS one beside it is checked apart
      ids.push_back((*s)->id);
    }
    return ids;
  }

  testing::TempDir tmp_;
  std::vector<Expected> expected_;
};

TEST_F(WebDatasetStreamTest, TwoRanksOfTwoWorkersReadEverySampleOnce) {
  StreamingOptions o = Options();
  o.order.shuffle = true;
  o.order.num_canonical_nodes = 1;
  auto ds = StreamingDataset::Open(o);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  ASSERT_EQ((*ds)->num_samples(), expected_.size());
  const WorldShape world{1, 2, 2};
  std::map<uint64_t, int> seen;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    for (uint32_t worker = 0; worker < 2; ++worker) {
      auto it = (*ds)->Iterate({.world = world, .worker = {0, rank, worker}, .epoch = 0});
      ASSERT_TRUE(it.ok()) << it.status().ToString();
      for (uint64_t id : ReadAll(**it)) ++seen[id];
    }
  }
  ASSERT_EQ(seen.size(), expected_.size());
  int extra = 0;
  for (const auto& [id, count] : seen) extra += count - 1;
  EXPECT_LT(extra, 2) << "padding to whole ranks only";
}

TEST_F(WebDatasetStreamTest, ResumingContinuesTheOrderAndEpochTwoIsServedByTheCache) {
  StreamingOptions o = Options();
  o.order.shuffle = true;
  auto ds = StreamingDataset::Open(o).value();
  const int64_t before = metrics::Values()["/ferry/storage/file/requests"];
  const std::vector<uint64_t> whole = ReadAll(*ds->Iterate({.epoch = 0}).value());
  ASSERT_EQ(whole.size(), expected_.size());
  const int64_t after_first = metrics::Values()["/ferry/storage/file/requests"];
  EXPECT_GT(after_first, before);
  const uint64_t stop = whole.size() / 3;
  const std::vector<uint64_t> rest = ReadAll(*ds->Iterate({.epoch = 0, .skip = stop}).value());
  EXPECT_EQ(rest, std::vector<uint64_t>(whole.begin() + static_cast<ptrdiff_t>(stop), whole.end()));
  EXPECT_EQ(ReadAll(*ds->Iterate({.epoch = 1}).value()).size(), expected_.size());
  EXPECT_EQ(metrics::Values()["/ferry/storage/file/requests"], after_first)
      << "epochs after the first read the cache only";
}

TEST_F(WebDatasetStreamTest, RandomAccessAndAnMdsStreamBesideIt) {
  const fs::path mds = tmp_.path() / "mds";
  {
    auto writer = MdsWriter::Create({.out = mds, .columns = {{"n", "int"}}}).value();
    for (int64_t i = 0; i < 10; ++i) {
      const Value values[] = {Value(i)};
      ASSERT_TRUE(writer->WriteValues(values).ok());
    }
    ASSERT_TRUE(writer->Finish().ok());
  }
  StreamingOptions o = Options();
  o.streams.push_back({.remote = mds.string(), .local = (tmp_.path() / "mds-cache").string()});
  auto ds = StreamingDataset::Open(o);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  ASSERT_EQ((*ds)->num_samples(), expected_.size() + 10);
  const Sample tar = (*ds)->Get(5).value();
  EXPECT_EQ(Check(tar), expected_[5].key);
  const Sample row = (*ds)->Get(expected_.size() + 3).value();
  EXPECT_EQ(row.stream, 1u);
  EXPECT_EQ(row.config->column_names, std::vector<std::string>{"n"});
  int64_t n = 0;
  std::memcpy(&n, row.fields[0].data(), 8);
  EXPECT_EQ(n, 3);
  std::set<uint32_t> streams;
  for (uint64_t id : ReadAll(*(*ds)->Iterate({.epoch = 0}).value())) {
    streams.insert(id < expected_.size() ? 0 : 1);
  }
  EXPECT_EQ(streams.size(), 2u);
}

TEST_F(WebDatasetStreamTest, AShardUnlikeItsDescriptionIsDataLossNamingIt) {
  // The shard list says one sample more than the first tar holds.
  std::string text = ReadFileToString(remote() / "index.json").value();
  nlohmann::json doc = nlohmann::json::parse(text);
  doc["shardlist"][0]["nsamples"] = doc["shardlist"][0]["nsamples"].get<uint64_t>() + 1;
  ASSERT_TRUE(WriteFileAtomically(remote() / "index.json", doc.dump()).ok());
  auto ds = StreamingDataset::Open(Options()).value();
  auto sample = ds->Get(0);
  ASSERT_FALSE(sample.ok());
  EXPECT_EQ(sample.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(sample.error().message(), HasSubstr("train-000000.tar"));
  EXPECT_THAT(sample.error().message(), HasSubstr("description"));
}

// The same remote folder without its shard list: the tars are listed and each read once at the
// first open, through the cache, which keeps them and the list it made.
class UnlistedTarsTest : public WebDatasetStreamTest {
 protected:
  void SetUp() override {
    WebDatasetStreamTest::SetUp();
    fs::remove(remote() / "index.json");
  }
  fs::path cache() const { return tmp_.path() / "cache"; }
  static int64_t Requests() { return metrics::Values()["/ferry/storage/file/requests"]; }
};

TEST_F(UnlistedTarsTest, TheFirstOpenListsTheTarsAndTheEpochReadsNoMore) {
  auto ds = StreamingDataset::Open(Options());
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  ASSERT_EQ((*ds)->num_samples(), expected_.size());
  const std::string list = ReadFileToString(cache() / "index.json").value();
  EXPECT_TRUE(internal_format::IsWebDatasetIndex(list)) << list;
  EXPECT_FALSE(fs::exists(remote() / "index.json")) << "the remote folder is only read";
  for (const auto& entry : fs::directory_iterator(remote())) {
    const fs::path cached = cache() / entry.path().filename();
    ASSERT_TRUE(fs::exists(cached)) << cached;
    EXPECT_EQ(fs::file_size(cached), fs::file_size(entry.path()));
  }
  const int64_t before = Requests();
  std::map<uint64_t, int> seen;
  for (uint64_t id : ReadAll(*(*ds)->Iterate({.epoch = 0}).value())) ++seen[id];
  EXPECT_EQ(seen.size(), expected_.size());
  EXPECT_EQ(Requests(), before) << "the shards read to count them were kept";

  // Another process: one HEAD (no index.json) and one LIST, then the cached list.
  auto again = StreamingDataset::Open(Options());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(Requests(), before + 2);
  EXPECT_EQ((*again)->num_samples(), expected_.size());
  EXPECT_EQ(Check((*again)->Get(7).value()), expected_[7].key);
}

TEST_F(UnlistedTarsTest, AChangedFolderIsListedAgainReadingOnlyWhatChanged) {
  ASSERT_TRUE(StreamingDataset::Open(Options()).ok());
  std::vector<fs::path> tars;
  for (const auto& entry : fs::directory_iterator(remote())) tars.push_back(entry.path());
  std::sort(tars.begin(), tars.end());
  ASSERT_GE(tars.size(), 3u);
  // The first tar rewritten (with the last one's bytes, a newer time), the last one removed.
  const std::string last_name = tars.back().filename().string();
  const uint64_t last_samples =
      internal_format::CountTarSamples(ReadFileToString(tars.back()).value(), false, "")
          .value()
          .samples;
  const uint64_t first_samples =
      internal_format::CountTarSamples(ReadFileToString(tars[0]).value(), false, "")
          .value()
          .samples;
  const auto kept_time = fs::last_write_time(cache() / tars[1].filename());
  fs::copy_file(tars.back(), tars[0], fs::copy_options::overwrite_existing);
  fs::last_write_time(tars[0], fs::last_write_time(tars[0]) + std::chrono::seconds(5));
  fs::remove(tars.back());

  auto ds = StreamingDataset::Open(Options());
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ((*ds)->num_samples(), expected_.size() - last_samples - first_samples + last_samples);
  EXPECT_FALSE(fs::exists(cache() / last_name)) << "a shard gone from the folder leaves the cache";
  EXPECT_EQ(ReadFileToString(cache() / tars[0].filename()).value(),
            ReadFileToString(tars[0]).value())
      << "the rewritten shard was fetched again";
  EXPECT_EQ(fs::last_write_time(cache() / tars[1].filename()), kept_time)
      << "an unchanged shard stays as it was cached";
  const Sample first = (*ds)->Get(0).value();
  EXPECT_EQ(first.fields.at(0), expected_[expected_.size() - last_samples].key)
      << "the first shard now holds what the last one did";
}

TEST_F(UnlistedTarsTest, ABadTarIsAnErrorNamingItAndAFolderOfNeitherSaysSo) {
  fs::copy_file(testing::WebDatasetFixtures() / "bad_duplicate" / "bad-000000.tar",
                remote() / "bad-000000.tar");
  auto bad = StreamingDataset::Open(Options());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss) << bad.status().ToString();
  EXPECT_THAT(bad.status().message(), HasSubstr("bad-000000.tar"));
  EXPECT_FALSE(fs::exists(cache() / "index.json")) << "no list of a folder that cannot stream";

  const fs::path empty = tmp_.path() / "empty";
  fs::create_directories(empty);
  ASSERT_TRUE(WriteFileAtomically(empty / "notes.txt", "not a shard").ok());
  StreamingOptions o;
  o.streams = {{.remote = empty.string(), .local = (tmp_.path() / "empty-cache").string()}};
  auto neither = StreamingDataset::Open(o);
  ASSERT_FALSE(neither.ok());
  EXPECT_EQ(neither.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(neither.status().message(), HasSubstr("no index.json there"));
  EXPECT_THAT(neither.status().message(), HasSubstr("no .tar shards"));
}

// WebDataset's names for shards: a brace pattern, or a "::" list, of tars in one folder - read in
// the pattern's order, whether or not the folder has a list of its own.
TEST_F(WebDatasetStreamTest, APatternStreamsTheTarsItNamesInItsOrder) {
  std::map<std::string, uint64_t> first_id;  // the id, in the folder's order, of each tar's first
  uint64_t id = 0;
  for (const std::string name : {"train-000000.tar", "train-000001.tar", "train-000002.tar"}) {
    first_id[name] = id;
    id += internal_format::CountTarSamples(ReadFileToString(remote() / name).value(), false, "")
              .value()
              .samples;
  }
  ASSERT_EQ(id, expected_.size());
  const std::vector<std::string> patterns = {
      "/train-{000002,000000}.tar",
      "/train-000002.tar::" + remote().string() + "/train-000000.tar"};
  for (const std::string& pattern : patterns) {
    StreamingOptions o = Options();
    o.streams[0].remote = remote().string() + pattern;
    o.streams[0].local = (tmp_.path() / ("cache-" + std::to_string(pattern.size()))).string();
    auto ds = StreamingDataset::Open(o);
    ASSERT_TRUE(ds.ok()) << pattern << ": " << ds.status().ToString();
    const uint64_t in_first = first_id["train-000001.tar"] - first_id["train-000000.tar"];
    const uint64_t in_last = expected_.size() - first_id["train-000002.tar"];
    ASSERT_EQ((*ds)->num_samples(), in_first + in_last) << pattern;
    const Sample first = (*ds)->Get(0).value();
    EXPECT_EQ(first.fields.at(0), expected_[first_id["train-000002.tar"]].key) << pattern;
    const Sample later = (*ds)->Get(in_last).value();
    EXPECT_EQ(later.fields.at(0), expected_[0].key) << pattern;
    EXPECT_FALSE(fs::exists(o.streams[0].local + "/train-000001.tar")) << "not named, not read";
  }

  StreamingOptions o = Options();
  o.streams[0].remote = remote().string() + "/train-{000000..000005}.tar";
  auto missing = StreamingDataset::Open(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
  EXPECT_THAT(missing.status().message(), HasSubstr("train-000003.tar, train-000004.tar"));
  EXPECT_THAT(missing.status().message(), HasSubstr("not in the folder"));
  o.streams[0].remote = remote().string() + "/{index.json,train-000000.tar}";
  auto not_tar = StreamingDataset::Open(o);
  ASSERT_FALSE(not_tar.ok());
  EXPECT_EQ(not_tar.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(not_tar.status().message(), HasSubstr("index.json: a shard pattern names"));
  o.streams[0].remote = remote().string() + "/train-{000000,000001.tar";
  EXPECT_EQ(StreamingDataset::Open(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ferry
