// Folders of small files against real S3 servers: FileDataset against moto (the pytest suite
// runs it against s3rver), and `ferry convert` from a remote prefix and into one (S3, Azurite),
// which must write the very shards a local convert of the same folder writes.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <map>
#include <random>
#include <set>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/files/file_dataset.h"
#include "ferry/metrics/metrics.h"
#include "ferry/storage/registry.h"
#include "tests/integration/server_env.h"

namespace ferry::testing {
namespace {

namespace fs = std::filesystem;

int Sh(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int64_t Requests() {
  int64_t total = 0;
  for (const auto& [name, value] : metrics::Values()) {
    if (name.starts_with("/ferry/storage/s3") && name.ends_with("/requests")) total += value;
  }
  return total;
}

// `classes` x `per_class` random files under `root`; path -> contents.
std::map<std::string, std::string> MakeFiles(const fs::path& root, int classes, int per_class) {
  std::map<std::string, std::string> files;
  std::mt19937 random(9);
  for (int c = 0; c < classes; ++c) {
    for (int i = 0; i < per_class; ++i) {
      const std::string path = fmt::format("k{}/x{:03}.bin", c, i);
      std::string data(200 + random() % 2000, '\0');
      for (char& ch : data) ch = static_cast<char>(random());
      fs::create_directories((root / path).parent_path());
      EXPECT_TRUE(WriteFileAtomically(root / path, data).ok());
      files[path] = data;
    }
  }
  return files;
}

std::string Upload(const fs::path& folder, const std::string& name) {
  const std::string url =
      fmt::format("s3://{}/files/{}/{}", ServerEnv("MOTO_BUCKET"), RunId(), name);
  EXPECT_EQ(Sh(fmt::format("{} cp -r -q '{}' {} >/dev/null", FERRY_CLI_PATH, folder.string(), url)),
            0);
  return url;
}

TEST(FileDatasetOnMoto, EveryFileOncePerEpochAndEpochTwoFromTheCache) {
  UseS3Server("MOTO");
  TempDir tmp;
  const auto files = MakeFiles(tmp / "src", 4, 15);
  const std::string url = Upload(tmp / "src", "once");
  FileDatasetOptions options{.root = url, .local = (tmp / "cache").string(), .shuffle = true};
  auto ds = FileDataset::Open(options).value();
  ASSERT_EQ(ds->files().size(), 60u);
  const WorldShape world{.nodes = 1, .ranks_per_node = 2, .workers_per_rank = 2};
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    const int64_t before = Requests();
    std::multiset<std::string> seen;
    for (uint32_t rank = 0; rank < 2; ++rank) {
      for (uint32_t w = 0; w < 2; ++w) {
        auto it = ds->Iterate({.world = world, .worker = {0, rank, w}, .epoch = epoch}).value();
        while (auto sample = it->Next().value()) {
          EXPECT_EQ(sample->data, files.at(sample->path));
          seen.insert(sample->path);
        }
      }
    }
    EXPECT_EQ(seen.size(), 60u);
    EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 60u) << "exactly once";
    if (epoch == 0) {
      EXPECT_GE(Requests() - before, 60);
    } else {
      EXPECT_EQ(Requests(), before) << "epoch 2 makes no remote request";
    }
  }
}

TEST(FileDatasetOnMoto, WrongCredentialsAreAClearErrorWithoutTheSecret) {
  const std::string wrong = "wrong-secret-0123456789";
  UseS3Server("MOTO_AUTH", wrong);
  TempDir tmp;
  auto ds =
      FileDataset::Open({.root = fmt::format("s3://{}/files/none", ServerEnv("MOTO_AUTH_BUCKET")),
                         .local = (tmp / "cache").string()});
  ASSERT_FALSE(ds.ok());
  EXPECT_THAT(ds.error().code(),
              ::testing::AnyOf(StatusCode::kPermissionDenied, StatusCode::kUnauthenticated));
  EXPECT_THAT(ds.error().message(), ::testing::HasSubstr("files/none"));
  EXPECT_THAT(ds.error().message(), ::testing::Not(::testing::HasSubstr(wrong)));
  EXPECT_FALSE(fs::exists(tmp / "cache" / ".ferry" / "listing.json"));
}

TEST(ConvertFromAStore, WritesTheShardsALocalConvertWrites) {
  UseS3Server("MOTO");
  TempDir tmp;
  MakeFiles(tmp / "src", 3, 20);
  const std::string url = Upload(tmp / "src", "convert");
  ASSERT_EQ(Sh(fmt::format("{} convert -q --size-limit 20kb '{}' '{}' >/dev/null", FERRY_CLI_PATH,
                           (tmp / "src").string(), (tmp / "local").string())),
            0);
  ASSERT_EQ(Sh(fmt::format("{} convert -q --size-limit 20kb --jobs 8 {} '{}' >/dev/null",
                           FERRY_CLI_PATH, url, (tmp / "remote").string())),
            0);
  size_t compared = 0;
  for (const auto& entry : fs::directory_iterator(tmp / "local")) {
    const auto name = entry.path().filename();
    EXPECT_EQ(ReadFileToString(entry.path()).value(),
              ReadFileToString(tmp / "remote" / name).value_or("<missing>"))
        << name;
    ++compared;
  }
  EXPECT_GT(compared, 3u) << "index.json, classes.json and several shards";
}

// The objects under `url` (one level): name -> bytes.
std::map<std::string, std::string> ReadBack(const std::string& url) {
  auto opened = OpenUrl(url).value();
  const std::string folder = opened.key + "/";
  std::map<std::string, std::string> out;
  const ListResult listed = opened.store->List(folder, /*recursive=*/false).value();
  for (const ObjectInfo& o : listed.objects) {
    out[o.key.substr(folder.size())] = opened.store->Get(o.key).value();
  }
  return out;
}

std::map<std::string, std::string> ReadFolder(const fs::path& folder) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::directory_iterator(folder)) {
    out[entry.path().filename().string()] = ReadFileToString(entry.path()).value();
  }
  return out;
}

TEST(ConvertToAStore, AnS3PrefixIntoAzureIsTheDatasetALocalConvertWrites) {
  UseS3Server("MOTO");
  UseAzurite();
  TempDir tmp;
  MakeFiles(tmp / "src", 3, 20);
  const std::string src = Upload(tmp / "src", "to-azure");
  ASSERT_EQ(Sh(fmt::format("{} convert -q --size-limit 20kb '{}' '{}' >/dev/null", FERRY_CLI_PATH,
                           (tmp / "src").string(), (tmp / "local").string())),
            0);
  const std::string out =
      fmt::format("az://{}/convert/{}/shards", ServerEnv("AZURITE_CONTAINER"), RunId());
  fs::create_directories(tmp / "staging");
  const auto convert = [&](const std::string& size_limit) {
    return fmt::format("cd '{}' && TMPDIR='{}' {} convert -q --size-limit {} {} {}",
                       tmp.path().string(), (tmp / "staging").string(), FERRY_CLI_PATH, size_limit,
                       src, out);
  };
  ASSERT_EQ(Sh(convert("20kb") + fmt::format(" >'{}' 2>&1", (tmp / "log").string())), 0)
      << ReadFileToString(tmp / "log").value_or("");
  EXPECT_THAT(ReadFileToString(tmp / "log").value(), ::testing::HasSubstr("uploaded"));
  EXPECT_FALSE(fs::exists(tmp / "az:")) << "not a local folder";
  EXPECT_TRUE(fs::is_empty(tmp / "staging")) << "the staged shards are gone";
  const auto local = ReadFolder(tmp / "local");
  EXPECT_GT(local.size(), 4u) << "index.json, classes.json and several shards";
  EXPECT_EQ(ReadBack(out), local) << "the very bytes, and nothing else";

  // A dataset is there now: refused without --overwrite, naming the URL.
  EXPECT_EQ(Sh(convert("20kb") + fmt::format(" 2>'{}'", (tmp / "err").string())), 4);
  EXPECT_THAT(ReadFileToString(tmp / "err").value(),
              ::testing::HasSubstr(out + ": holds a dataset (index.json); pass --overwrite"));
  // Replaced with one shard: the old dataset's other shards go.
  ASSERT_EQ(Sh(convert("0") + " --overwrite >/dev/null"), 0);
  const auto replaced = ReadBack(out);
  std::set<std::string> names;
  for (const auto& [name, data] : replaced) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"classes.json", "index.json", "shard.00000.mds"}));
}

TEST(ConvertToAStore, AKeptStagingFolderIsTheUploadedDatasetAndAFailureNamesTheUrl) {
  UseS3Server("MOTO");
  TempDir tmp;
  MakeFiles(tmp / "src", 2, 10);
  const std::string out = fmt::format("s3://{}/convert/{}/kept", ServerEnv("MOTO_BUCKET"), RunId());
  ASSERT_EQ(Sh(fmt::format("{} convert -q --compression zstd --size-limit 8kb --local '{}' "
                           "--keep-local '{}' {} >/dev/null",
                           FERRY_CLI_PATH, (tmp / "stage").string(), (tmp / "src").string(), out)),
            0);
  const auto staged = ReadFolder(tmp / "stage");
  EXPECT_GT(staged.size(), 3u);
  EXPECT_EQ(ReadBack(out), staged);

  const std::string missing = fmt::format("s3://no-such-bucket-{}/x", RunId());
  const int code = Sh(fmt::format("{} convert -q '{}' {} 2>'{}'", FERRY_CLI_PATH,
                                  (tmp / "src").string(), missing, (tmp / "err").string()));
  EXPECT_NE(code, 0);
  EXPECT_THAT(ReadFileToString(tmp / "err").value(), ::testing::HasSubstr(missing + "/shard."));
}

}  // namespace
}  // namespace ferry::testing
