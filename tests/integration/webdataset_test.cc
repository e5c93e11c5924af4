// WebDataset tar shards end to end: `ferry index` writes the shard list of a folder (local or in
// a store) and refuses to replace an MDS index, and a WebDataset dataset on the S3 test server
// streams through the shared cache - every sample exactly once per epoch across 2 ranks x 2
// workers, a resumed worker continuing its uninterrupted order, epoch 2 without a remote request;
// without a list, the folder is listed and each tar read once at the first open.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/metrics/metrics.h"
#include "ferry/stream/streaming_dataset.h"
#include "format/fixture_testutil.h"
#include "format/hash.h"
#include "format/webdataset_fixture_testutil.h"
#include "tests/integration/stream_testutil.h"

namespace ferry::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kTarWriter = WebDatasetFixtures() / "tarwriter";

// Per shard, its sample count; per key, each field's sha256: what WebDataset itself read.
struct Expected {
  std::map<std::string, uint64_t> shard_samples;
  std::map<std::string, std::map<std::string, std::string>> fields;
};

Expected ReadExpected() {
  Expected e;
  const auto doc = nlohmann::json::parse(FileText(kTarWriter / "expected.json"));
  for (const auto& shard : doc["shards"]) {
    e.shard_samples[shard["shard"]] = shard["samples"].size();
    for (const auto& s : shard["samples"]) {
      for (const auto& [field, info] : s["fields"].items())
        e.fields[s["__key__"]][field] = info["sha256"];
    }
  }
  return e;
}

fs::path CopyShards(const fs::path& to) {
  fs::create_directories(to);
  for (const auto& entry : fs::directory_iterator(kTarWriter)) {
    if (entry.path().extension() == ".tar")
      fs::copy_file(entry.path(), to / entry.path().filename());
  }
  return to;
}

int64_t RemoteRequests() {
  int64_t n = 0;
  for (const auto& [name, v] : metrics::Values()) {
    if (name.starts_with("/ferry/storage/") && name.ends_with("/requests")) n += v;
  }
  return n;
}

TEST(FerryIndex, ListsEveryShardWithItsSamplesAndSize) {
  TempDir tmp;
  const fs::path folder = CopyShards(tmp / "wds");
  ASSERT_EQ(Sh(fmt::format("{} index {} --jobs 2 > {}", FERRY_CLI_PATH, Quote(folder),
                           Quote(tmp / "out"))),
            0);
  EXPECT_THAT(FileText(tmp / "out"), ::testing::HasSubstr("indexed 3 shards"));
  const auto doc = nlohmann::json::parse(FileText(folder / "index.json"));
  EXPECT_EQ(doc["__kind__"], "wids-shard-index-v1");
  const Expected expected = ReadExpected();
  ASSERT_EQ(doc["shardlist"].size(), expected.shard_samples.size());
  for (const auto& shard : doc["shardlist"]) {
    const std::string url = shard["url"];
    EXPECT_EQ(shard["nsamples"].get<uint64_t>(), expected.shard_samples.at(url)) << url;
    EXPECT_EQ(shard["filesize"].get<uint64_t>(), fs::file_size(folder / url)) << url;
  }
}

TEST(FerryIndex, NeverReplacesAnMdsIndexAndNamesABadShard) {
  TempDir tmp;
  const fs::path folder = CopyShards(tmp / "wds");
  const std::string mds_index = R"({"shards": [], "version": 2})";
  ASSERT_TRUE(WriteFileAtomically(folder / "index.json", mds_index).ok());
  EXPECT_EQ(Sh(fmt::format("{} index {} 2>{}", FERRY_CLI_PATH, Quote(folder), Quote(tmp / "err"))),
            4);
  EXPECT_THAT(FileText(tmp / "err"), ::testing::HasSubstr("not a WebDataset shard list"));
  EXPECT_EQ(FileText(folder / "index.json"), mds_index);

  const fs::path bad = tmp / "bad";
  fs::create_directories(bad);
  fs::copy_file(kTarWriter.parent_path() / "bad_duplicate" / "bad-000000.tar", bad / "b.tar");
  EXPECT_EQ(Sh(fmt::format("{} index {} 2>{}", FERRY_CLI_PATH, Quote(bad), Quote(tmp / "err"))), 6);
  EXPECT_THAT(FileText(tmp / "err"), ::testing::HasSubstr("b.tar"));
  EXPECT_FALSE(fs::exists(bad / "index.json"));
  EXPECT_EQ(Sh(fmt::format("{} index {} 2>/dev/null", FERRY_CLI_PATH, Quote(tmp / "empty"))), 3);
}

TEST(FerryIndex, GzippedTarsAreListedWithTheTarInsideAndStreamAsTheyAre) {
  TempDir tmp;
  const fs::path fixture = kTarWriter.parent_path() / "gnutar_gz";
  const fs::path folder = tmp / "gz";
  fs::create_directories(folder);
  for (const auto& entry : fs::directory_iterator(fixture)) {
    if (entry.path().string().ends_with(".tar.gz")) {
      fs::copy_file(entry.path(), folder / entry.path().filename());
    }
  }
  ASSERT_EQ(Sh(fmt::format("{} index {} >/dev/null", FERRY_CLI_PATH, Quote(folder))), 0);
  const auto doc = nlohmann::json::parse(FileText(folder / "index.json"));
  const auto expected = nlohmann::json::parse(FileText(fixture / "expected.json"));
  ASSERT_EQ(doc["shardlist"].size(), expected["shards"].size());
  std::map<std::string, std::map<std::string, std::string>> want;  // key -> field -> sha256
  for (size_t k = 0; k < expected["shards"].size(); ++k) {
    const auto& shard = expected["shards"][k];
    EXPECT_EQ(doc["shardlist"][k]["url"], shard["shard"]);
    EXPECT_EQ(doc["shardlist"][k]["nsamples"].get<uint64_t>(), shard["samples"].size());
    EXPECT_GT(doc["shardlist"][k]["raw_filesize"].get<uint64_t>(),
              doc["shardlist"][k]["filesize"].get<uint64_t>());
    for (const auto& s : shard["samples"]) {
      for (const auto& [field, info] : s["fields"].items())
        want[s["__key__"]][field] = info["sha256"];
    }
  }
  StreamingOptions options;
  options.streams = {{.remote = folder.string(), .local = (tmp / "cache").string()}};
  auto ds = StreamingDataset::Open(options);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  auto it = (*ds)->Iterate({}).value();
  size_t read = 0;
  while (auto sample = it->Next().value()) {
    const std::string key(sample->fields.at(0));
    ASSERT_EQ(want.count(key), 1u) << key;
    for (size_t f = 1; f < sample->fields.size(); ++f) {
      EXPECT_EQ(HashHex("sha256", sample->fields[f]).value(),
                want[key].at(sample->config->column_names[f]))
          << key;
    }
    ++read;
  }
  EXPECT_EQ(read, want.size());
  EXPECT_TRUE(fs::exists(tmp / "cache" / "shard-0000.tar")) << "the cache keeps the tar inside";
}

TEST(WebDatasetOnS3, TwoRanksOfTwoWorkersResumeAndEpochTwoFromTheCache) {
  UseS3Server("MOTO");
  TempDir tmp;
  const std::string url =
      fmt::format("s3://{}/webdataset/{}/train", ServerEnv("MOTO_BUCKET"), RunId());
  ASSERT_EQ(Sh(fmt::format("{} cp -r -q {} {} >/dev/null", FERRY_CLI_PATH,
                           Quote(CopyShards(tmp / "src")), url)),
            0);
  ASSERT_EQ(Sh(fmt::format("{} index {} >/dev/null", FERRY_CLI_PATH, url)), 0);
  const Expected expected = ReadExpected();

  StreamingOptions options;
  options.streams = {{.remote = url, .local = (tmp / "cache").string()}};
  options.order.shuffle = true;
  options.order.seed = 7;
  auto ds = StreamingDataset::Open(options);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  ASSERT_EQ((*ds)->num_samples(), expected.fields.size());
  const WorldShape world{.nodes = 1, .ranks_per_node = 2, .workers_per_rank = 2};
  auto read = [&](uint32_t rank, uint32_t worker, uint64_t epoch, uint64_t skip) {
    std::vector<std::string> keys;
    auto it =
        (*ds)->Iterate({.world = world, .worker = {0, rank, worker}, .epoch = epoch, .skip = skip});
    EXPECT_TRUE(it.ok()) << it.status().ToString();
    if (!it.ok()) return keys;
    for (;;) {
      auto s = (*it)->Next();
      EXPECT_TRUE(s.ok()) << s.status().ToString();
      if (!s.ok() || !*s) break;
      const std::string key((*s)->fields.at(0));
      const auto& want = expected.fields.at(key);
      EXPECT_EQ((*s)->fields.size() - 1, want.size()) << key;
      for (size_t f = 1; f < (*s)->fields.size(); ++f) {
        EXPECT_EQ(HashHex("sha256", (*s)->fields[f]).value(),
                  want.at((*s)->config->column_names[f]))
            << key;
      }
      keys.push_back(key);
    }
    return keys;
  };
  std::map<std::pair<uint32_t, uint32_t>, std::vector<std::string>> first;
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    const int64_t before = RemoteRequests();
    std::multiset<std::string> seen;
    for (uint32_t rank = 0; rank < 2; ++rank) {
      for (uint32_t worker = 0; worker < 2; ++worker) {
        const auto keys = read(rank, worker, epoch, 0);
        if (epoch == 0) first[{rank, worker}] = keys;
        seen.insert(keys.begin(), keys.end());
      }
    }
    const std::set<std::string> distinct(seen.begin(), seen.end());
    EXPECT_EQ(distinct.size(), expected.fields.size()) << "epoch " << epoch;
    EXPECT_LE(seen.size() - distinct.size(), 1u) << "padding to whole ranks only";
    if (epoch == 0) {
      EXPECT_GT(RemoteRequests(), before);
    } else {
      EXPECT_EQ(RemoteRequests(), before) << "epoch 2 makes no remote request";
    }
  }
  // A worker resumed at a random point continues its uninterrupted order.
  std::mt19937 random(11);
  for (const auto& [who, keys] : first) {
    const uint64_t stop = random() % keys.size();
    EXPECT_EQ(read(who.first, who.second, 0, stop),
              std::vector<std::string>(keys.begin() + static_cast<ptrdiff_t>(stop), keys.end()));
  }
}

// The keys and fields a StreamingDataset yields in one pass, checked against `want` (key ->
// field -> sha256).
size_t ReadChecked(StreamingDataset& ds,
                   const std::map<std::string, std::map<std::string, std::string>>& want,
                   uint32_t rank = 0, uint32_t worker = 0) {
  const WorldShape world{.nodes = 1, .ranks_per_node = 2, .workers_per_rank = 2};
  auto it = ds.Iterate({.world = world, .worker = {0, rank, worker}, .epoch = 0}).value();
  size_t read = 0;
  while (auto sample = it->Next().value()) {
    const std::string key(sample->fields.at(0));
    EXPECT_EQ(want.count(key), 1u) << key;
    if (want.count(key) == 0) continue;
    for (size_t f = 1; f < sample->fields.size(); ++f) {
      EXPECT_EQ(HashHex("sha256", sample->fields[f]).value(),
                want.at(key).at(sample->config->column_names[f]))
          << key;
    }
    ++read;
  }
  return read;
}

TEST(WebDatasetOnS3, AFolderWithoutAListIsListedOnceAndStreamsFromTheCache) {
  UseS3Server("MOTO");
  TempDir tmp;
  const std::string url =
      fmt::format("s3://{}/webdataset/{}/unlisted", ServerEnv("MOTO_BUCKET"), RunId());
  ASSERT_EQ(Sh(fmt::format("{} cp -r -q {} {} >/dev/null", FERRY_CLI_PATH,
                           Quote(CopyShards(tmp / "src")), url)),
            0);
  const Expected expected = ReadExpected();
  StreamingOptions options;
  options.streams = {{.remote = url, .local = (tmp / "cache").string()}};
  options.order.shuffle = true;
  auto ds = StreamingDataset::Open(options);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  ASSERT_EQ((*ds)->num_samples(), expected.fields.size());
  const int64_t before = RemoteRequests();
  size_t read = 0;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    for (uint32_t worker = 0; worker < 2; ++worker)
      read += ReadChecked(**ds, expected.fields, rank, worker);
  }
  EXPECT_GE(read, expected.fields.size());
  EXPECT_EQ(RemoteRequests(), before) << "the tars read to count them were kept";
  auto again = StreamingDataset::Open(options);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(RemoteRequests(), before + 2) << "a HEAD of index.json and a LIST, no shard";

  // Gzipped tars: read into memory to be counted, then fetched into the cache to stream.
  const fs::path fixture = kTarWriter.parent_path() / "gnutar_gz";
  const std::string gz_url =
      fmt::format("s3://{}/webdataset/{}/unlisted-gz", ServerEnv("MOTO_BUCKET"), RunId());
  ASSERT_EQ(Sh(fmt::format("{} cp -r -q {} {} >/dev/null", FERRY_CLI_PATH, Quote(fixture), gz_url)),
            0);
  std::map<std::string, std::map<std::string, std::string>> want;
  const auto gz_expected = nlohmann::json::parse(FileText(fixture / "expected.json"));
  for (const auto& shard : gz_expected["shards"]) {
    for (const auto& s : shard["samples"]) {
      for (const auto& [field, info] : s["fields"].items())
        want[s["__key__"]][field] = info["sha256"];
    }
  }
  options.streams = {{.remote = gz_url, .local = (tmp / "gz-cache").string()}};
  options.order.shuffle = false;
  auto gz = StreamingDataset::Open(options);
  ASSERT_TRUE(gz.ok()) << gz.status().ToString();
  EXPECT_EQ((*gz)->num_samples(), want.size());
  size_t gz_read = 0;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    for (uint32_t worker = 0; worker < 2; ++worker)
      gz_read += ReadChecked(**gz, want, rank, worker);
  }
  EXPECT_GE(gz_read, want.size());
}

}  // namespace
}  // namespace ferry::testing
