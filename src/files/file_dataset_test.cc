// FileDataset over local folders: read in place, and a folder standing in for the remote (a
// FileStore, as a mounted volume is) with a separate cache folder. The same behaviour against
// S3 servers is in tests/integration/file_dataset_test.cc.
#include "ferry/files/file_dataset.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <thread>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "cache/cache_testutil.h"
#include "ferry/metrics/metrics.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

int64_t Metric(const std::string& name) {
  const auto values = metrics::Values();
  auto it = values.find(name);
  return it == values.end() ? 0 : it->second;
}

// A root of `classes` x `per_class` files of varied sizes; returns path -> contents.
std::map<std::string, std::string> MakeRoot(const fs::path& root, int classes, int per_class) {
  std::map<std::string, std::string> files;
  std::mt19937 random(3);
  for (int c = 0; c < classes; ++c) {
    for (int i = 0; i < per_class; ++i) {
      const std::string path = fmt::format("class{:02}/img{:03}.jpg", c, i);
      std::string data(500 + random() % 3000, '\0');
      for (char& ch : data) ch = static_cast<char>(random());
      fs::create_directories((root / path).parent_path());
      EXPECT_TRUE(WriteFileAtomically(root / path, data).ok());
      files[path] = data;
    }
  }
  return files;
}

std::vector<FileSample> ReadAll(FileDataset& ds, const FileIterateOptions& options) {
  auto it = ds.Iterate(options).value();
  std::vector<FileSample> out;
  while (true) {
    auto next = it->Next();
    EXPECT_TRUE(next.ok()) << next.status().ToString();
    if (!next.ok() || !next->has_value()) break;
    out.push_back(std::move(**next));
  }
  return out;
}

TEST(FileDataset, ReadsALocalRootInPlaceExactlyOncePerEpochAcrossTheWorld) {
  testing::TempDir tmp;
  const auto files = MakeRoot(tmp / "root", 3, 20);
  auto ds = FileDataset::Open({.root = (tmp / "root").string(), .shuffle = true}).value();
  ASSERT_EQ(ds->files().size(), 60u);
  EXPECT_THAT(ds->classes(), ::testing::ElementsAre("class00", "class01", "class02"));
  const WorldShape world{.nodes = 1, .ranks_per_node = 2, .workers_per_rank = 3};
  std::multiset<std::string> seen;
  std::vector<std::string> order;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    for (uint32_t w = 0; w < 3; ++w) {
      for (FileSample& s : ReadAll(*ds, {.world = world, .worker = {0, rank, w}, .epoch = 1})) {
        EXPECT_EQ(s.data, files.at(s.path)) << s.path;
        EXPECT_EQ(s.label, std::stoi(s.path.substr(5, 2)));
        seen.insert(s.path);
        order.push_back(s.path);
      }
    }
  }
  EXPECT_EQ(seen.size(), 60u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 60u) << "exactly once";
  EXPECT_FALSE(fs::exists(tmp / "root" / ".ferry")) << "reading in place writes nothing";
  // Same seed, same order; another epoch, another order.
  auto again = ReadAll(*ds, {.world = world, .worker = {0, 0, 0}, .epoch = 1});
  auto other = ReadAll(*ds, {.world = world, .worker = {0, 0, 0}, .epoch = 2});
  ASSERT_EQ(again.size(), 10u);
  for (size_t i = 0; i < again.size(); ++i) EXPECT_EQ(again[i].path, order[i]);
  std::vector<std::string> other_paths;
  for (auto& s : other) other_paths.push_back(s.path);
  EXPECT_NE(other_paths, std::vector<std::string>(order.begin(), order.begin() + 10));
  // Random access.
  auto one = ds->Get(5).value();
  EXPECT_EQ(one.data, files.at(one.path));
  EXPECT_EQ(ds->Get(60).error().code(), StatusCode::kOutOfRange);
}

TEST(FileDataset, EpochTwoComesFromTheCacheWithoutRemoteRequests) {
  testing::TempDir tmp;
  const auto files = MakeRoot(tmp / "remote", 4, 25);
  const FileDatasetOptions options{
      .root = (tmp / "remote").string(), .local = (tmp / "cache").string(), .concurrency = 16};
  auto ds = FileDataset::Open(options).value();
  EXPECT_TRUE(ds->listed());
  const int64_t requests0 = Metric("/ferry/storage/file/requests");
  auto epoch1 = ReadAll(*ds, {.epoch = 0});
  ASSERT_EQ(epoch1.size(), 100u);
  EXPECT_GE(Metric("/ferry/storage/file/requests") - requests0, 100);
  for (const auto& [path, data] : files) {
    EXPECT_EQ(ReadFileToString(tmp / "cache" / path).value(), data) << "cached under its path";
  }
  // A second open reuses the stored listing and the cache: no request at all.
  auto reopened = FileDataset::Open(options).value();
  EXPECT_FALSE(reopened->listed());
  const int64_t requests1 = Metric("/ferry/storage/file/requests");
  const int64_t hits1 = Metric("/ferry/cache/hits");
  auto epoch2 = ReadAll(*reopened, {.epoch = 1});
  ASSERT_EQ(epoch2.size(), 100u);
  for (auto& s : epoch2) EXPECT_EQ(s.data, files.at(s.path));
  EXPECT_EQ(Metric("/ferry/storage/file/requests"), requests1);
  EXPECT_EQ(Metric("/ferry/cache/hits") - hits1, 100);
}

TEST(FileDataset, RefreshListsAgainAndAChangedFileIsFetchedAgain) {
  testing::TempDir tmp;
  MakeRoot(tmp / "remote", 1, 5);
  FileDatasetOptions options{.root = (tmp / "remote").string(), .local = (tmp / "cache").string()};
  auto ds = FileDataset::Open(options).value();
  ReadAll(*ds, {});
  const std::string path = ds->files()[2].path;
  // Same size, new contents (and mtime): only a new listing can tell.
  std::string changed(ds->files()[2].size, 'Z');
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(WriteFileAtomically(tmp / "remote" / path, changed).ok());
  ds.reset();
  auto stale = FileDataset::Open(options).value();
  EXPECT_FALSE(stale->listed());
  EXPECT_NE(stale->Get(2).value().data, changed) << "the stored listing is reused";
  stale.reset();
  options.refresh = true;
  auto fresh = FileDataset::Open(options).value();
  EXPECT_TRUE(fresh->listed());
  EXPECT_EQ(fresh->Get(2).value().data, changed);
  // listing_max_age 0 relists too.
  options.refresh = false;
  options.listing_max_age = std::chrono::seconds(-1);
  EXPECT_TRUE(FileDataset::Open(options).value()->listed());
}

TEST(FileDataset, AVanishedFileIsAnErrorNamingItOrSkippedAndCounted) {
  testing::TempDir tmp;
  MakeRoot(tmp / "remote", 2, 10);
  FileDatasetOptions options{.root = (tmp / "remote").string(), .local = (tmp / "cache").string()};
  auto ds = FileDataset::Open(options).value();
  const std::string gone = ds->files()[7].path;
  fs::remove(tmp / "remote" / gone);
  auto it = ds->Iterate({}).value();
  Status error = Status::Ok();
  int delivered = 0;
  while (true) {
    auto next = it->Next();
    if (!next.ok()) {
      error = next.error();
      break;
    }
    if (!next->has_value()) break;
    ++delivered;
  }
  EXPECT_EQ(delivered, 7);
  EXPECT_EQ(error.code(), StatusCode::kNotFound);
  EXPECT_THAT(error.message(), HasSubstr(gone));
  EXPECT_FALSE(fs::exists(tmp / "cache" / gone));

  options.on_missing = OnMissing::kSkip;
  auto skipping = FileDataset::Open(options).value();
  const int64_t missing = Metric("/ferry/files/missing");
  auto all = ReadAll(*skipping, {});
  EXPECT_EQ(all.size(), 19u);
  EXPECT_EQ(Metric("/ferry/files/missing") - missing, 1);
}

TEST(FileDataset, StaysWithinTheCacheLimit) {
  testing::TempDir tmp;
  const auto files = MakeRoot(tmp / "remote", 2, 40);
  uint64_t total = 0, largest = 0;
  for (const auto& [path, data] : files) {
    total += data.size();
    largest = std::max<uint64_t>(largest, data.size());
  }
  const uint64_t limit = total / 4;
  auto ds = FileDataset::Open({.root = (tmp / "remote").string(),
                               .local = (tmp / "cache").string(),
                               .cache_limit = limit,
                               .concurrency = 4})
                .value();
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    auto samples = ReadAll(*ds, {.epoch = epoch});
    ASSERT_EQ(samples.size(), 80u);
    for (auto& s : samples) EXPECT_EQ(s.data, files.at(s.path));
  }
  uint64_t on_disk = 0;
  for (const auto& [path, data] : files) {
    std::error_code ec;
    if (fs::exists(tmp / "cache" / path, ec)) on_disk += fs::file_size(tmp / "cache" / path);
  }
  // Slack: the downloads in flight at once (docs/streaming.md).
  EXPECT_LE(on_disk, limit + 4 * largest);
  EXPECT_GT(Metric("/ferry/cache/evictions"), 0);
}

TEST(FileDataset, PackedEpochsReadLocalShardsOnly) {
  testing::TempDir tmp;
  const auto files = MakeRoot(tmp / "remote", 3, 30);
  const FileDatasetOptions options{.root = (tmp / "remote").string(),
                                   .local = (tmp / "cache").string(),
                                   .shuffle = true,
                                   .pack = true};
  auto ds = FileDataset::Open(options).value();
  const WorldShape world{.workers_per_rank = 2};
  for (uint32_t w = 0; w < 2; ++w) {
    auto samples = ReadAll(*ds, {.world = world, .worker = {0, 0, w}, .epoch = 0});
    ASSERT_EQ(samples.size(), 45u);
    for (auto& s : samples) EXPECT_EQ(s.data, files.at(s.path));
  }
  EXPECT_FALSE(fs::exists(tmp / "cache" / ds->files()[0].path)) << "packing keeps no copies";
  size_t packs = 0;
  for (const auto& e : fs::directory_iterator(tmp / "cache/.ferry/packs")) {
    EXPECT_TRUE(fs::exists(e.path() / "index.json")) << e.path();
    EXPECT_EQ(e.path().string().find(".tmp-"), std::string::npos);
    ++packs;
  }
  EXPECT_EQ(packs, 2u);
  // Epoch 2, another world shape, a new process: only the packs.
  auto reopened = FileDataset::Open(options).value();
  const int64_t requests = Metric("/ferry/storage/file/requests");
  const int64_t packed = Metric("/ferry/files/packed_reads");
  std::set<std::string> seen;
  for (uint32_t w = 0; w < 3; ++w) {
    for (auto& s :
         ReadAll(*reopened, {.world = {.workers_per_rank = 3}, .worker = {0, 0, w}, .epoch = 1})) {
      EXPECT_EQ(s.data, files.at(s.path));
      seen.insert(s.path);
    }
  }
  EXPECT_EQ(seen.size(), 90u);
  EXPECT_EQ(Metric("/ferry/storage/file/requests"), requests);
  EXPECT_EQ(Metric("/ferry/files/packed_reads") - packed, 90);
  EXPECT_EQ(reopened->Get(4).value().data, files.at(reopened->files()[4].path));
}

TEST(FileDataset, AnInterruptedPackLeavesNothingVisible) {
  testing::TempDir tmp;
  MakeRoot(tmp / "remote", 1, 30);
  const FileDatasetOptions options{
      .root = (tmp / "remote").string(), .local = (tmp / "cache").string(), .pack = true};
  auto ds = FileDataset::Open(options).value();
  {
    auto it = ds->Iterate({}).value();
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(it->Next().value().has_value());
  }
  std::error_code ec;
  EXPECT_TRUE(fs::is_empty(tmp / "cache/.ferry/packs", ec)) << "an unfinished pack is dropped";
  auto all = ReadAll(*ds, {});
  EXPECT_EQ(all.size(), 30u);
}

TEST(FileDataset, AKilledRunLeavesNoPartialFileAndTheNextRunCompletes) {
  testing::TempDir tmp;
  const auto files = MakeRoot(tmp / "remote", 10, 150);
  const FileDatasetOptions options{
      .root = (tmp / "remote").string(), .local = (tmp / "cache").string(), .concurrency = 64};
  ASSERT_TRUE(FileDataset::Open(options).ok());  // the listing, stored before the child runs
  testing::Children children;
  testing::Pipe started;
  const pid_t child = children.Spawn([&] {
    auto ds = FileDataset::Open(options);
    if (!ds) return 2;
    auto it = (*ds)->Iterate({});
    if (!it) return 3;
    for (int i = 0; i < 50; ++i) {
      if (!(*it)->Next().ok()) return 4;
    }
    started.Send();  // 64 downloads are in flight now
    while (true) {
      auto next = (*it)->Next();
      if (!next.ok() || !next->has_value()) return 5;
    }
  });
  started.CloseWrite();
  ASSERT_TRUE(started.Receive());
  children.Kill(child);
  size_t complete = 0;
  for (const auto& [path, data] : files) {
    std::error_code ec;
    const auto size = fs::file_size(tmp / "cache" / path, ec);
    if (ec) continue;
    EXPECT_EQ(size, data.size()) << path << ": a file under its own name is complete";
    ++complete;
  }
  EXPECT_GE(complete, 50u);
  EXPECT_LT(complete, files.size()) << "killed before the end (the test proves nothing otherwise)";
  // The next run reads everything, and leaves no temporary behind.
  auto ds = FileDataset::Open(options).value();
  auto all = ReadAll(*ds, {});
  ASSERT_EQ(all.size(), files.size());
  for (auto& sample : all) EXPECT_EQ(sample.data, files.at(sample.path));
  for (const auto& entry : fs::recursive_directory_iterator(tmp / "cache")) {
    EXPECT_EQ(entry.path().string().find(".ferry-tmp"), std::string::npos) << entry.path();
  }
}

TEST(FileDataset, NothingIsWrittenThroughASymlinkPlantedInTheCacheFolder) {
  testing::TempDir tmp;
  MakeRoot(tmp / "remote", 2, 3);
  const FileDatasetOptions options{.root = (tmp / "remote").string(),
                                   .local = (tmp / "cache").string()};
  auto ds = FileDataset::Open(options).value();
  fs::create_directories(tmp / "elsewhere");
  fs::create_directory_symlink(tmp / "elsewhere", tmp / "cache" / "class00");
  auto got = ds->Get(0);  // class00/img000.jpg
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(got.error().message(), HasSubstr("outside the cache folder"));
  EXPECT_TRUE(fs::is_empty(tmp / "elsewhere")) << "nothing written through the link";
  EXPECT_TRUE(ds->Get(3).ok()) << "class01 is a real folder";
}

TEST(FileDataset, ClearErrorsForBadOptions) {
  testing::TempDir tmp;
  MakeRoot(tmp / "a", 1, 2);
  MakeRoot(tmp / "b", 1, 2);
  ASSERT_TRUE(
      FileDataset::Open({.root = (tmp / "a").string(), .local = (tmp / "c").string()}).ok());
  auto other = FileDataset::Open({.root = (tmp / "b").string(), .local = (tmp / "c").string()});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(other.error().message(), HasSubstr("give each root its own `local`"));
  auto pack_in_place = FileDataset::Open({.root = (tmp / "a").string(), .pack = true});
  EXPECT_EQ(pack_in_place.error().code(), StatusCode::kInvalidArgument);
  auto too_small = FileDataset::Open({.root = (tmp / "a").string(),
                                      .local = (tmp / "d").string(),
                                      .cache_limit = 10,
                                      .pack = true});
  EXPECT_THAT(too_small.error().message(), HasSubstr("cache_limit"));
  auto missing = FileDataset::Open({.root = (tmp / "nope").string()});
  EXPECT_FALSE(missing.ok());
  auto zero = FileDataset::Open({.root = (tmp / "a").string(), .concurrency = 0});
  EXPECT_EQ(zero.error().code(), StatusCode::kInvalidArgument);
}

TEST(FileDataset, AStrayFileIsAnErrorNamingItOrLeftOutWithSkipOther) {
  testing::TempDir tmp;
  MakeRoot(tmp / "root", 2, 3);
  ASSERT_TRUE(WriteFileAtomically(tmp / "root" / "class01" / "notes.txt", "not an image").ok());
  auto refused = FileDataset::Open({.root = (tmp / "root").string()});
  ASSERT_FALSE(refused.ok()) << "one notes.txt must not turn the jpeg column into bytes";
  EXPECT_EQ(refused.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.error().message(), HasSubstr("1 of 7 files is not named like the jpeg"));
  EXPECT_THAT(refused.error().message(), HasSubstr("class01/notes.txt"));
  EXPECT_THAT(refused.error().message(), HasSubstr("skip_other=True"));
  EXPECT_THAT(refused.error().message(), HasSubstr("encoding=\"bytes\""));

  auto skipped = FileDataset::Open({.root = (tmp / "root").string(), .skip_other = true}).value();
  EXPECT_EQ(skipped->data_encoding(), "jpeg");
  EXPECT_EQ(skipped->skipped_other(), 1u);
  ASSERT_EQ(skipped->files().size(), 6u);
  for (const FileEntry& f : skipped->files()) EXPECT_TRUE(f.path.ends_with(".jpg")) << f.path;

  auto bytes =
      FileDataset::Open({.root = (tmp / "root").string(), .encoding = FileEncoding::kBytes})
          .value();
  EXPECT_EQ(bytes->data_encoding(), "bytes");
  EXPECT_EQ(bytes->files().size(), 7u);
  auto filtered = FileDataset::Open({.root = (tmp / "root").string(), .extensions = {"jpg"}});
  ASSERT_TRUE(filtered.ok()) << filtered.status().ToString();
  EXPECT_EQ((*filtered)->data_encoding(), "jpeg");
}

TEST(FileDataset, ARootHoldingAnMdsDatasetIsRefusedAtOpen) {
  testing::TempDir tmp;
  for (const char* dir : {"mds", "splits/train", "raw/k"}) fs::create_directories(tmp / dir);
  ASSERT_TRUE(WriteFileAtomically(tmp / "mds" / "index.json", "{}").ok());
  ASSERT_TRUE(WriteFileAtomically(tmp / "mds" / "shard.00000.mds", "x").ok());
  ASSERT_TRUE(WriteFileAtomically(tmp / "mds" / "shard.00001.mds.zstd", "x").ok());
  auto ds = FileDataset::Open({.root = (tmp / "mds").string()});
  ASSERT_FALSE(ds.ok()) << "not an empty dataset that fails on the first read";
  EXPECT_EQ(ds.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(ds.error().message(),
              HasSubstr("holds an MDS dataset (index.json): read it with StreamingDataset, or "
                        "point FileDataset at the raw files"));
  EXPECT_THAT(ds.error().message(), HasSubstr("mds"));
  // A split under the root is an MDS dataset too, not a class of shard files.
  ASSERT_TRUE(WriteFileAtomically(tmp / "splits" / "train" / "index.json", "{}").ok());
  ASSERT_TRUE(WriteFileAtomically(tmp / "splits" / "train" / "shard.00000.mds", "x").ok());
  auto split = FileDataset::Open({.root = (tmp / "splits").string()});
  ASSERT_FALSE(split.ok());
  EXPECT_THAT(split.error().message(), HasSubstr("splits/train holds an MDS dataset"));
  // An index.json among raw files (no shards) is just a file.
  ASSERT_TRUE(WriteFileAtomically(tmp / "raw" / "k" / "index.json", "{}").ok());
  EXPECT_TRUE(FileDataset::Open({.root = (tmp / "raw").string()}).ok());
}

}  // namespace
}  // namespace ferry
