// The `ferry` commands on datasets and copies in real stores (s3rver, Azurite):
//   - inspect, verify, cat and merge-index read (and merge-index writes) a dataset in a store and
//     say what they say of the same dataset on disk;
//   - a copy into a bucket or container that does not exist is one error, exit 3;
//   - Ctrl+C during a copy prints what was copied and the command that copies the rest, exits
//     130, and that command finishes the copy.
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/format/index.h"
#include "ferry/storage/registry.h"
#include "tests/integration/server_env.h"
#include "tests/integration/stream_testutil.h"

extern char** environ;

namespace ferry::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

CliRun Ferry(const TempDir& tmp, const std::string& args) {
  const int code = Sh(fmt::format("{} {} > {} 2> {}", FERRY_CLI_PATH, args, Quote(tmp / "out"),
                                  Quote(tmp / "err")));
  return {code, ReadFileToString(tmp / "out").value_or(""),
          ReadFileToString(tmp / "err").value_or("")};
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// What the command itself printed: without the log lines that FERRY_LOG=debug (the integration
// suite's setting) interleaves.
std::string WithoutLogLines(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    const std::string_view line(text.data() + start, end - start);
    if (line.find("] [ferry] [") == std::string_view::npos) out.append(line);
    start = end;
  }
  return out;
}

// `inspect --json` without the field that names where the dataset is.
nlohmann::json InspectJson(const std::string& out) {
  nlohmann::json j = nlohmann::json::parse(out);
  j.erase("dataset");
  return j;
}

TEST(CliStore, InspectVerifyAndCatReadADatasetInAStoreAsOnDisk) {
  for (Server server : {Server::kS3rver, Server::kAzurite}) {
    SCOPED_TRACE(server == Server::kS3rver ? "s3rver" : "azurite");
    TempDir tmp;
    const Dataset d = MakeRemoteDataset(tmp, "ds", 40, 700, 4000, server);
    const std::string local = Quote(tmp / "src-ds");
    ASSERT_GE(d.index.shards.size(), 4u);

    const CliRun remote_inspect = Ferry(tmp, "inspect --json " + d.url);
    ASSERT_EQ(remote_inspect.code, 0) << remote_inspect.err;
    EXPECT_EQ(InspectJson(remote_inspect.out),
              InspectJson(Ferry(tmp, "inspect --json " + local).out));
    EXPECT_EQ(nlohmann::json::parse(remote_inspect.out)["dataset"], d.url);
    EXPECT_EQ(nlohmann::json::parse(remote_inspect.out)["missing_shards"], 0);

    const CliRun verify = Ferry(tmp, "verify -q " + d.url);
    EXPECT_EQ(verify.code, 0) << verify.out << verify.err;
    EXPECT_THAT(verify.out, HasSubstr(fmt::format("ok: {}: {} shards, 40 samples", d.url,
                                                  d.index.shards.size())));

    const CliRun cat = Ferry(tmp, "cat --start 3 --count 30 " + d.url);
    ASSERT_EQ(cat.code, 0) << cat.err;
    EXPECT_EQ(Count(cat.out, "\n"), 30u);
    EXPECT_EQ(cat.out, Ferry(tmp, "cat --start 3 --count 30 " + local).out);
    EXPECT_EQ(Ferry(tmp, "cat " + d.url).out, Ferry(tmp, "cat " + local).out);

    if (server == Server::kS3rver) {
      // A server that cannot list (s3rver's anonymous http:// view): one HEAD per file instead.
      const std::string http =
          fmt::format("{}/{}{}", ServerEnv("S3RVER_ENDPOINT"), ServerEnv("S3RVER_BUCKET"),
                      d.url.substr(d.url.find('/', 5)));
      const CliRun inspect = Ferry(tmp, "inspect --json " + http);
      ASSERT_EQ(inspect.code, 0) << inspect.err;
      EXPECT_EQ(InspectJson(inspect.out), InspectJson(remote_inspect.out));
      const CliRun http_verify = Ferry(tmp, "verify -q " + http);
      EXPECT_EQ(http_verify.code, 0) << http_verify.out << http_verify.err;
      EXPECT_EQ(Ferry(tmp, "cat " + http).out, Ferry(tmp, "cat " + local).out);
      EXPECT_EQ(Ferry(tmp, "inspect " + http + "-not-there").code, 3);
    }

    // One shard replaced by garbage, one deleted: verify names both, inspect counts the missing.
    auto opened = OpenUrl(d.url);
    ASSERT_TRUE(opened.has_value());
    const std::string prefix = opened->key + "/";
    ASSERT_TRUE(opened->store->Put(prefix + d.index.shards[1].raw_data.basename, "garbage").ok());
    ASSERT_TRUE(opened->store->Remove(prefix + d.index.shards[3].raw_data.basename).ok());
    const CliRun bad = Ferry(tmp, "verify -q " + d.url);
    EXPECT_EQ(bad.code, 1) << bad.err;
    EXPECT_THAT(bad.out, HasSubstr(fmt::format("shard 1 {}: holds 7 bytes",
                                               d.index.shards[1].raw_data.basename)));
    EXPECT_THAT(bad.out, HasSubstr(fmt::format("shard 3 {}: {}/{}: not found",
                                               d.index.shards[3].raw_data.basename, d.url,
                                               d.index.shards[3].raw_data.basename)));
    EXPECT_THAT(bad.out, HasSubstr(fmt::format("FAILED: 2 of {} shards of {} are bad: 1, 3",
                                               d.index.shards.size(), d.url)));
    EXPECT_EQ(nlohmann::json::parse(Ferry(tmp, "inspect --json " + d.url).out)["missing_shards"],
              1);
    // cat names the store's files, not the temporary folder it reads them from.
    const CliRun cat_bad = Ferry(tmp, "cat " + d.url);
    EXPECT_EQ(cat_bad.code, 6) << cat_bad.err;
    EXPECT_THAT(cat_bad.err, HasSubstr(d.url + "/" + d.index.shards[1].raw_data.basename));
    EXPECT_THAT(cat_bad.err, Not(HasSubstr("ferry-cat")));
    const uint64_t shard3 =
        d.index.shards[0].samples + d.index.shards[1].samples + d.index.shards[2].samples;
    const CliRun cat_missing = Ferry(tmp, fmt::format("cat --start {} {}", shard3, d.url));
    EXPECT_EQ(cat_missing.code, 3) << cat_missing.err;
    EXPECT_THAT(cat_missing.err, HasSubstr(fmt::format("shard 3: {}/{} not found", d.url,
                                                       d.index.shards[3].raw_data.basename)));

    // Not there at all, and there but not a dataset: the answers a local folder gets.
    const CliRun missing = Ferry(tmp, "inspect " + d.url + "-not-there");
    EXPECT_EQ(missing.code, 3);
    EXPECT_THAT(missing.err, HasSubstr(d.url + "-not-there does not exist"));
    EXPECT_EQ(Ferry(tmp, "verify " + d.url + "-not-there").code, 3);
    const std::string parent = d.url.substr(0, d.url.rfind('/'));
    const CliRun not_dataset = Ferry(tmp, "cat " + parent);
    EXPECT_EQ(not_dataset.code, 2);
    EXPECT_THAT(not_dataset.err, HasSubstr("is not a dataset"));
  }
}

TEST(CliStore, MergeIndexMergesPartsInAStoreAsOnDisk) {
  TempDir tmp;
  UseS3Server("S3RVER");
  const Dataset a = MakeRemoteDataset(tmp, "a", 10, 300, 1500);
  const Dataset b = MakeRemoteDataset(tmp, "b", 7, 300, 1500);
  // Both parts below one root, locally and in the store.
  const std::string root = fmt::format("s3://{}/merge/{}", ServerEnv("S3RVER_BUCKET"), RunId());
  for (const char* part : {"a", "b"}) {
    fs::create_directories(tmp / "root");
    fs::rename(tmp / ("src-" + std::string(part)), tmp / "root" / part);
    ASSERT_EQ(
        Ferry(tmp, fmt::format("cp -r -q {} {}/{}", Quote(tmp / "root" / part), root, part)).code,
        0);
  }
  const CliRun merged = Ferry(tmp, "merge-index " + root);
  ASSERT_EQ(merged.code, 0) << merged.err;
  EXPECT_THAT(merged.out,
              HasSubstr(fmt::format("merged {} shards into {}/index.json",
                                    a.index.shards.size() + b.index.shards.size(), root)));
  ASSERT_EQ(Ferry(tmp, "merge-index " + Quote(tmp / "root")).code, 0);
  auto opened = OpenUrl(root + "/index.json");
  ASSERT_TRUE(opened.has_value());
  EXPECT_EQ(opened->store->Get(opened->key).value(),
            ReadFileToString(tmp / "root" / "index.json").value());
  // The merged dataset reads through the store.
  const CliRun verify = Ferry(tmp, "verify -q " + root);
  EXPECT_EQ(verify.code, 0) << verify.out << verify.err;
  EXPECT_THAT(verify.out, HasSubstr("17 samples"));

  const CliRun again = Ferry(tmp, "merge-index " + root);
  EXPECT_EQ(again.code, 4);
  EXPECT_THAT(again.err, HasSubstr("never overwrites"));
  const CliRun nothing = Ferry(tmp, "merge-index " + root + "/not-there");
  EXPECT_EQ(nothing.code, 3);
}

// An ImageFolder in a bucket converted by 4 `--part K/4` processes at once into another prefix,
// merged there with --parts 4: the same samples, in the same order, as one convert of the folder.
TEST(CliStore, ConvertPartsRunAtOnceMergeIntoOneConvertsDataset) {
  TempDir tmp;
  UseS3Server("S3RVER");
  for (int i = 0; i < 30; ++i) {
    const auto path = tmp / "images" / (i % 3 ? "cat" : "dog") / fmt::format("{:02}.bin", i);
    fs::create_directories(path.parent_path());
    ASSERT_TRUE(WriteFileAtomically(path, TestBytes(200 + i, i)).ok());
  }
  const std::string base = fmt::format("s3://{}/parts/{}", ServerEnv("S3RVER_BUCKET"), RunId());
  ASSERT_EQ(Ferry(tmp, fmt::format("cp -r -q {} {}/images", Quote(tmp / "images"), base)).code, 0);
  std::string command = "(";
  for (int k = 0; k < 4; ++k) {
    command += fmt::format(
        "{} convert -q --size-limit 1kb --part {}/4 {}/images {}/parts > {} "
        "2>&1 & ",
        FERRY_CLI_PATH, k, base, base, Quote(tmp / fmt::format("part{}", k)));
  }
  ASSERT_EQ(Sh(command + "wait)"), 0);
  for (int k = 0; k < 4; ++k) {
    EXPECT_THAT(ReadFileToString(tmp / fmt::format("part{}", k)).value_or(""),
                HasSubstr(fmt::format("part {} of 4", k)));
  }
  const CliRun merged = Ferry(tmp, fmt::format("merge-index {}/parts --parts 4", base));
  ASSERT_EQ(merged.code, 0) << merged.err;
  ASSERT_EQ(Ferry(tmp, fmt::format("convert -q --size-limit 1kb {}/images {}", base,
                                   Quote(tmp / "whole")))
                .code,
            0);
  ASSERT_EQ(Ferry(tmp, fmt::format("cp -r -q {}/parts {}", base, Quote(tmp / "parts"))).code, 0);
  EXPECT_EQ(ReadFileToString(tmp / "parts" / "classes.json").value_or(""),
            ReadFileToString(tmp / "whole" / "classes.json").value_or("?"));
  const CliRun whole = Ferry(tmp, "cat " + Quote(tmp / "whole"));
  const CliRun parts = Ferry(tmp, "cat " + Quote(tmp / "parts"));
  ASSERT_EQ(whole.code, 0) << whole.err;
  EXPECT_EQ(Count(whole.out, "\n"), 30u);
  EXPECT_EQ(parts.out, whole.out) << "sample for sample";
}

// WebDataset tars in a store without index.json, or named by a pattern: inspect, verify, cat
// and convert say of them what they say of the same tars on disk, and write nothing beside them.
TEST(CliStore, UnlistedTarsAndPatternsInAStoreReadAsOnDisk) {
  TempDir tmp;
  UseS3Server("S3RVER");
  const fs::path fixture = fs::path(FERRY_FIXTURES_DIR).parent_path() / "webdataset" / "tarwriter";
  fs::create_directories(tmp / "wds");
  for (const char* name : {"train-000000.tar", "train-000001.tar", "train-000002.tar"}) {
    fs::copy_file(fixture / name, tmp / "wds" / name);
  }
  const std::string url = fmt::format("s3://{}/wds/{}", ServerEnv("S3RVER_BUCKET"), RunId());
  ASSERT_EQ(Ferry(tmp, fmt::format("cp -r -q {} {}", Quote(tmp / "wds"), url)).code, 0);
  const std::string local = Quote(tmp / "wds");

  const CliRun inspect = Ferry(tmp, "inspect --json " + url);
  ASSERT_EQ(inspect.code, 0) << inspect.err;
  EXPECT_THAT(inspect.err, HasSubstr("ferry index " + url));
  EXPECT_EQ(InspectJson(inspect.out), InspectJson(Ferry(tmp, "inspect --json " + local).out));
  EXPECT_EQ(InspectJson(inspect.out)["samples"], 101);
  const CliRun verify = Ferry(tmp, "verify -q " + url);
  EXPECT_EQ(verify.code, 0) << verify.out << verify.err;
  EXPECT_EQ(Ferry(tmp, "cat " + url).out, Ferry(tmp, "cat " + local).out);

  const std::string pattern = "'" + url + "/train-{000002,000000}.tar'";
  const std::string local_pattern = "'" + (tmp / "wds").string() + "/train-{000002,000000}.tar'";
  const CliRun cat = Ferry(tmp, "cat " + pattern);
  ASSERT_EQ(cat.code, 0) << cat.err;
  EXPECT_EQ(cat.out, Ferry(tmp, "cat " + local_pattern).out);
  const nlohmann::json selected = InspectJson(Ferry(tmp, "inspect --json " + pattern).out);
  EXPECT_EQ(selected, InspectJson(Ferry(tmp, "inspect --json " + local_pattern).out));
  const int samples = selected["samples"].get<int>();
  EXPECT_GT(samples, 0);
  EXPECT_LT(samples, 101);
  EXPECT_EQ(Count(WithoutLogLines(cat.out), "\n"), static_cast<size_t>(samples));
  EXPECT_EQ(Ferry(tmp, "verify -q " + pattern).code, 0);

  // Into MDS from the pattern: the samples it names, in its order.
  const CliRun convert = Ferry(tmp, fmt::format("convert -q {} {}", pattern, Quote(tmp / "mds")));
  ASSERT_EQ(convert.code, 0) << convert.err;
  EXPECT_THAT(convert.out, HasSubstr(fmt::format("converted {} samples (webdataset)", samples)));
  auto listing = OpenUrl(url);
  ASSERT_TRUE(listing.has_value());
  auto objects = listing->store->List(listing->key + "/", /*recursive=*/true);
  ASSERT_TRUE(objects.has_value());
  EXPECT_EQ(objects->objects.size(), 3u);  // nothing written beside the tars
}

TEST(CliStore, CopyIntoAMissingBucketOrContainerIsOneError) {
  TempDir tmp;
  UseS3Server("S3RVER");
  UseAzurite();
  for (int i = 0; i < 300; ++i) {
    fs::create_directories(tmp / "src" / fmt::format("d{}", i % 3));
    ASSERT_TRUE(WriteFileAtomically(tmp / "src" / fmt::format("d{}/f{}", i % 3, i), "x").ok());
  }
  const std::string missing = "missing-" + RunId();
  for (const std::string scheme : {"s3", "az"}) {
    const std::string dst = fmt::format("{}://{}/x", scheme, missing);
    SCOPED_TRACE(dst);
    CliRun cp = Ferry(tmp, fmt::format("cp -r -q {} {}", Quote(tmp / "src"), dst));
    cp.err = WithoutLogLines(cp.err);
    EXPECT_EQ(cp.code, 3) << cp.out << cp.err;
    EXPECT_THAT(cp.out, Not(HasSubstr("FAILED")));
    EXPECT_EQ(Count(cp.err, "\n"), 1u) << cp.err;
    EXPECT_EQ(Count(cp.err, missing), 1u) << cp.err;
    EXPECT_THAT(cp.err, HasSubstr("cannot copy into " + dst));
    EXPECT_THAT(cp.err, HasSubstr("0 of 300 objects copied"));

    CliRun sync = Ferry(tmp, fmt::format("sync -q {} {}", Quote(tmp / "src"), dst));
    sync.err = WithoutLogLines(sync.err);
    EXPECT_EQ(sync.code, 3) << sync.out << sync.err;
    EXPECT_EQ(Count(sync.err, "\n"), 1u) << sync.err;
  }
}

// Starts `ferry args...` with stdout and stderr to files; its pid.
pid_t Spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  std::string program = FERRY_CLI_PATH;
  argv.push_back(program.data());
  std::vector<std::string> words = args;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

TEST(CliStore, CtrlCEndsACopyWithWhatWasCopiedAndTheCommandThatFinishesIt) {
  TempDir tmp;
  UseS3Server("S3RVER");
  constexpr int kObjects = 1000;
  fs::create_directories(tmp / "src");
  for (int i = 0; i < kObjects; ++i) {
    ASSERT_TRUE(WriteFileAtomically(tmp / "src" / fmt::format("f{:04}", i), "payload").ok());
  }
  const std::string dst = fmt::format("s3://{}/interrupt/{}", ServerEnv("S3RVER_BUCKET"), RunId());
  auto opened = OpenUrl(dst + "/");
  ASSERT_TRUE(opened.has_value());
  const pid_t pid =
      Spawn({"cp", "-r", "-q", "-j", "4", (tmp / "src").string(), dst}, tmp / "out", tmp / "err");
  ASSERT_GT(pid, 0);
  // Interrupt once the copy is under way (a first object arrived), as a user would.
  for (int i = 0; i < 600; ++i) {
    auto listing = opened->store->List(opened->key, true);
    if (listing.has_value() && !listing->objects.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  const std::string out = ReadFileToString(tmp / "out").value_or("");
  const std::string err = ReadFileToString(tmp / "err").value_or("");
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 130) << out << err;

  std::smatch copied;
  ASSERT_TRUE(std::regex_search(out, copied, std::regex("copied ([0-9]+) of 1000 objects"))) << out;
  const int done = std::stoi(copied[1]);
  EXPECT_GT(done, 0);
  EXPECT_LT(done, kObjects);
  EXPECT_THAT(err, HasSubstr(fmt::format("interrupted: {} of 1000 objects", kObjects - done)));
  std::smatch command;
  ASSERT_TRUE(
      std::regex_search(err, command, std::regex("run `ferry (sync [^`]+)` to copy the rest")))
      << err;
  EXPECT_THAT(command[1].str(), HasSubstr(dst));
  // What stopped is not half there: every object is whole or absent.
  auto listing = opened->store->List(opened->key, true);
  ASSERT_TRUE(listing.has_value());
  EXPECT_GE(listing->objects.size(), static_cast<size_t>(done));
  for (const ObjectInfo& obj : listing->objects) EXPECT_EQ(obj.size, 7u) << obj.key;

  // The command it names copies the rest, and only the rest.
  const CliRun rest = Ferry(tmp, command[1].str() + " -q");
  ASSERT_EQ(rest.code, 0) << rest.out << rest.err;
  EXPECT_THAT(rest.out, HasSubstr(fmt::format("{} unchanged", listing->objects.size())));
  EXPECT_EQ(opened->store->List(opened->key, true).value().objects.size(),
            static_cast<size_t>(kObjects));
}

}  // namespace
}  // namespace ferry::testing
