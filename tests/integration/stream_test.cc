// The streaming engine against a real S3 server (s3rver), through the `ferry stream` command,
// several processes at once (faults and hostile conditions: stream_faults_test.cc):
//   - processes of two jobs sharing one cache folder download each shard exactly once;
//   - a process killed in the middle of a download leaves nothing a later run takes for a
//     complete shard, and the next run completes;
//   - disk use under a cache_limit stays within the limit plus the documented slack;
//   - a corrupted shard is caught by hash validation with an error naming it;
//   - --download-parts sets the ranged requests of a large shard; unset, the engine raises them
//     where each connection is capped.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/format/mds_writer.h"
#include "format/hash.h"
#include "storage/testing/store_conformance.h"
#include "tests/integration/server_env.h"
#include "tests/integration/stream_testutil.h"

namespace ferry::testing {
namespace {

using ::testing::HasSubstr;

TEST(Stream, ProcessesOfTwoJobsShareOneCacheAndDownloadEachShardOnce) {
  TempDir tmp;
  const Dataset d = MakeRemoteDataset(tmp, "shared", 3000, 10000, 1 << 20);
  ASSERT_GE(d.index.shards.size(), 20u);
  const auto cache = tmp / "cache";
  // Job A: four processes; job B: two more with another order, all at the same time.
  std::string command = "(";
  for (int p = 0; p < 6; ++p) {
    command += fmt::format("{} stream {} --local {} --json {} --seed {} > {} 2>&1 & ",
                           FERRY_CLI_PATH, d.url, Quote(cache), p < 4 ? "" : "--shuffle", p,
                           Quote(tmp / fmt::format("out{}", p)));
  }
  command += "wait)";
  ASSERT_EQ(Sh(command), 0);
  uint64_t misses = 0, fetched = 0;  // misses: shards downloaded
  for (int p = 0; p < 6; ++p) {
    auto lines = JsonLines(tmp / fmt::format("out{}", p));
    ASSERT_EQ(lines.size(), 1u) << ReadFileToString(tmp / fmt::format("out{}", p)).value_or("");
    EXPECT_EQ(lines[0]["samples"], d.samples);
    misses += lines[0]["downloads"].get<uint64_t>();
    fetched += lines[0]["bytes_fetched"].get<uint64_t>();
  }
  EXPECT_EQ(misses, d.index.shards.size()) << "each shard downloaded exactly once";
  EXPECT_EQ(fetched, d.raw_bytes);
  // A second epoch, or a new process, needs no remote request at all.
  ASSERT_EQ(Sh(fmt::format("{} stream {} --local {} --json > {}", FERRY_CLI_PATH, d.url,
                           Quote(cache), Quote(tmp / "again"))),
            0);
  auto again = JsonLines(tmp / "again");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0]["remote_requests"], 0);
  EXPECT_EQ(again[0]["cache_misses"], 0);
}

// A world of 2 nodes x 2 ranks x 2 workers run as 4 processes at once, each node with its own
// cache folder: every sample read once per epoch (ceil padding aside), every rank the same count,
// and each node downloads each of its shards once (2 epochs: the second from the cache).
TEST(Stream, RanksRunAsSeparateProcessesCoverTheEpochAndShareTheirNodesCache) {
  TempDir tmp;
  const Dataset d = MakeRemoteDataset(tmp, "world", 1003, 2000, 64 << 10);
  ASSERT_GE(d.index.shards.size(), 20u);
  std::string command = "(";
  for (int rank = 0; rank < 4; ++rank) {
    command += fmt::format(
        "{} stream {} --local {} --world 2,2,2 --rank {} --shuffle --epochs 2 --json "
        "--sample-ids {} > {} 2>&1 & ",
        FERRY_CLI_PATH, d.url, Quote(tmp / fmt::format("node{}", rank / 2)), rank,
        Quote(tmp / fmt::format("ids{}", rank)), Quote(tmp / fmt::format("out{}", rank)));
  }
  command += "wait)";
  ASSERT_EQ(Sh(command), 0);
  std::map<uint64_t, std::map<uint64_t, int>> seen;  // epoch -> sample -> times
  std::map<int, uint64_t> downloads;                 // node -> shards downloaded, both epochs
  std::map<int, std::set<size_t>> shards_read;       // node -> shards its ranks read
  std::vector<size_t> shard_of;                      // sample -> shard
  for (size_t s = 0; s < d.index.shards.size(); ++s) {
    shard_of.insert(shard_of.end(), d.index.shards[s].samples, s);
  }
  ASSERT_EQ(shard_of.size(), d.samples);
  std::vector<uint64_t> per_rank;
  for (int rank = 0; rank < 4; ++rank) {
    const auto out = tmp / fmt::format("out{}", rank);
    auto lines = JsonLines(out);
    ASSERT_EQ(lines.size(), 2u) << ReadFileToString(out).value_or("");
    per_rank.push_back(lines[0]["samples"].get<uint64_t>());
    EXPECT_EQ(lines[1]["samples"], lines[0]["samples"]);
    for (const auto& line : lines) downloads[rank / 2] += line["downloads"].get<uint64_t>();
    std::ifstream ids(tmp / fmt::format("ids{}", rank));
    uint64_t epoch = 0, id = 0;
    while (ids >> epoch >> id) {
      ++seen[epoch][id];
      ASSERT_LT(id, d.samples);
      shards_read[rank / 2].insert(shard_of[id]);
    }
  }
  EXPECT_EQ(per_rank, std::vector<uint64_t>(4, (d.samples + 3) / 4)) << "ceil(samples / ranks)";
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    ASSERT_EQ(seen[epoch].size(), d.samples) << "every sample in epoch " << epoch;
    int repeats = 0;
    for (const auto& [id, times] : seen[epoch]) repeats += times - 1;
    EXPECT_LE(repeats, 3);
  }
  // Each node's ranks share its cache: a shard its ranks read is downloaded to it once over
  // both epochs, whichever rank or worker needs it first; and a node reads its own part.
  for (int node = 0; node < 2; ++node) {
    EXPECT_EQ(downloads[node], shards_read[node].size()) << "node " << node;
    EXPECT_LT(shards_read[node].size(), d.index.shards.size()) << "node " << node;
  }
}

// --download-parts sets how many ranged requests fetch a large shard: each part is one.
TEST(Stream, DownloadPartsSetsTheRangedRequestsOfALargeShard) {
  TempDir tmp;
  const Dataset d = MakeRemoteDataset(tmp, "parts", 12, 4'000'000, 64 << 20);
  ASSERT_EQ(d.index.shards.size(), 1u);
  ASSERT_GE(d.raw_bytes, uint64_t{32} << 20);  // large enough to come in parts
  std::map<int, uint64_t> requests;
  for (int parts : {1, 4}) {
    const auto out = tmp / fmt::format("out{}", parts);
    ASSERT_EQ(Sh(fmt::format("{} stream {} --local {} --download-parts {} --json > {} 2>&1",
                             FERRY_CLI_PATH, d.url, Quote(tmp / fmt::format("cache{}", parts)),
                             parts, Quote(out))),
              0)
        << ReadFileToString(out).value_or("");
    const auto lines = JsonLines(out);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0]["samples"], d.samples);
    EXPECT_GE(lines[0]["bytes_fetched"].get<uint64_t>(), d.raw_bytes);
    requests[parts] = lines[0]["remote_requests"].get<uint64_t>();
  }
  EXPECT_EQ(requests[4], requests[1] + 3) << "four ranged requests instead of one";
}

// By default the engine chooses the parts itself: through a link that caps each connection,
// the downloads' rates show that more connections add up, and it rises from 4 to its top, 8.
// One shard at a time, so that the shards after the first decisions come in the parts chosen,
// and a cap low enough that this machine is never the limit, even with the suite running.
TEST(Stream, AutoPartsRiseWhereEachConnectionIsCapped) {
  TempDir tmp;
  const Dataset d = MakeRemoteDataset(tmp, "autoparts", 170, 1'000'000, 34'500'000);
  ASSERT_EQ(d.index.shards.size(), 5u);
  for (const auto& s : d.index.shards) ASSERT_GE(s.raw_data.bytes, uint64_t{32} << 20);
  const std::string capped = "AWS_ENDPOINT_URL=" + StartWan(tmp, "--conn-mbps 10");
  const WanGuard wan_process(tmp);
  const auto out = tmp / "out";
  ASSERT_EQ(Sh(fmt::format("{} {} stream {} --local {} --concurrency 1 --json > {} 2>&1", capped,
                           FERRY_CLI_PATH, d.url, Quote(tmp / "cache"), Quote(out))),
            0)
      << ReadFileToString(out).value_or("");
  const auto lines = JsonLines(out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["samples"], d.samples);
  EXPECT_EQ(lines[0]["bytes_fetched"].get<uint64_t>(), d.raw_bytes);
  EXPECT_EQ(lines[0]["download_parts"], 8) << lines[0].dump();
  // Besides index.json and the first sample's two ranged reads: the first shards in 4 parts,
  // the later ones in 8 - more ranged requests than 4 per shard.
  EXPECT_GT(lines[0]["remote_requests"].get<uint64_t>(), 4 * d.index.shards.size() + 3);
}

TEST(Stream, AKilledDownloadLeavesNothingThatPassesForAShard) {
  TempDir tmp;
  const Dataset d = MakeRemoteDataset(tmp, "crash", 96, 1 << 20, 40 << 20);
  const auto cache = tmp / "cache";
  // Slow the link down so that the kill lands in the middle of a download.
  const std::string slow = "AWS_ENDPOINT_URL=" + StartWan(tmp, "--conn-mbps 20");
  const WanGuard wan_process(tmp);
  for (int round = 0; round < 3; ++round) {
    Sh(
        fmt::format("{} timeout -s KILL 1.5 {} stream {} --local {} --validate-hash xxh64 "
                    ">/dev/null 2>&1",
                    slow, FERRY_CLI_PATH, d.url, Quote(cache)));
    // Whatever the kill left: every file under a shard's name is that whole shard.
    for (const auto& s : d.index.shards) {
      const auto path = cache / s.raw_data.basename;
      if (!std::filesystem::exists(path)) continue;
      const std::string data = ReadFileToString(path).value();
      EXPECT_EQ(data.size(), s.raw_data.bytes) << path;
      EXPECT_EQ(HashHex("xxh64", data).value(), *s.raw_data.FindHash("xxh64")) << path;
    }
  }
  StopWan(tmp);
  ASSERT_EQ(Sh(fmt::format("{} stream {} --local {} --validate-hash xxh64 --json > {} 2>&1",
                           FERRY_CLI_PATH, d.url, Quote(cache), Quote(tmp / "final"))),
            0)
      << ReadFileToString(tmp / "final").value_or("");
  EXPECT_EQ(JsonLines(tmp / "final")[0]["samples"], d.samples);
}

// The kill suite: `ferry stream` over compressed shards with a cache_limit (so downloads,
// decompressions, renames, evictions and the index write all happen) is SIGKILLed at a random
// moment, FERRY_KILL_ROUNDS times (12 in make test, 50 in make reliability). After every kill
// the cache folder must be consistent - every file under a shard's name is exactly that file,
// index.json is whole - and the next round must be able to use it (no lock outlives its
// process); at the end an uninterrupted run reads the epoch.
TEST(Stream, SurvivesRepeatedKillsAtRandomMoments) {
  const char* env_rounds = std::getenv("FERRY_KILL_ROUNDS");
  const int rounds = env_rounds ? std::atoi(env_rounds) : 12;
  TempDir tmp;
  UseS3Server("S3RVER");
  const auto local = tmp / "src";
  auto writer = MdsWriter::Create({.out = local,
                                   .columns = {{"id", "int"}, {"blob", "bytes"}},
                                   .compression = "zstd:1",
                                   .hashes = {"xxh64"},
                                   .size_limit = 512 << 10})
                    .value();
  for (uint64_t i = 0; i < 1500; ++i) {
    const Value values[] = {Value(Bytes{TestBytes(4000, i)}), Value(static_cast<int64_t>(i))};
    ASSERT_TRUE(writer->WriteValues(values).ok());
  }
  const DatasetDescription index = writer->Finish().value();
  const std::string url =
      fmt::format("s3://{}/stream/{}/kill", ServerEnv("S3RVER_BUCKET"), RunId());
  ASSERT_EQ(Sh(fmt::format("{} cp -r -q {} {} >/dev/null", FERRY_CLI_PATH, Quote(local), url)), 0);
  const std::string index_text = ReadFileToString(local / "index.json").value();
  uint64_t raw_bytes = 0, largest = 0;
  std::map<std::string, const FileInfo*> files;  // every shard file by basename
  for (const auto& shard : index.shards) {
    raw_bytes += shard.raw_data.bytes;
    largest = std::max(largest, shard.raw_data.bytes + shard.zip_data->bytes);
    files[shard.raw_data.basename] = &shard.raw_data;
    if (shard.zip_data) files[shard.zip_data->basename] = &*shard.zip_data;
  }
  // Half the dataset, or the least a cache_limit may be (index.json and four of the largest
  // shard, raw and compressed, as Mosaic requires): either way it evicts.
  const uint64_t limit = std::max(raw_bytes / 2, index_text.size() + 4 * largest);
  ASSERT_LT(limit, raw_bytes);
  const auto cache = tmp / "cache";
  const auto command = [&](const std::filesystem::path& folder, int seed) {
    return fmt::format(
        "{} stream {} --local {} --cache-limit {} --shuffle --seed {} --validate-hash xxh64 "
        "--touch > /dev/null 2>&1",
        FERRY_CLI_PATH, url, Quote(folder), limit, seed);
  };
  // The moments are drawn within what an epoch takes on this machine, timed once in a folder
  // of its own (a later round, half cached, is quicker: up to 60 % of it).
  const auto timing_start = std::chrono::steady_clock::now();
  ASSERT_EQ(Sh(command(tmp / "timing", 0)), 0);
  const int epoch_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::chrono::steady_clock::now() - timing_start)
                                            .count());
  const int latest_ms = std::max(60, epoch_ms * 6 / 10);
  std::mt19937 random(20261201);
  int killed = 0, checked = 0;
  for (int round = 0; round < rounds; ++round) {
    const int delay_ms = 20 + static_cast<int>(random() % static_cast<unsigned>(latest_ms - 20));
    const int code =
        Sh(fmt::format("timeout -s KILL {:.3f} {}", delay_ms / 1000.0, command(cache, round)));
    if (code == 137) ++killed;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(cache, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      const auto relative = std::filesystem::relative(it->path(), cache).generic_string();
      if (relative.starts_with(".ferry") || !it->is_regular_file() ||
          relative.ends_with(".ferry-tmp")) {
        continue;
      }
      const std::string data = ReadFileToString(it->path()).value_or("<unreadable>");
      if (relative == "index.json") {
        EXPECT_EQ(data, index_text) << "round " << round << ": index.json is whole";
      } else {
        auto f = files.find(relative);
        ASSERT_NE(f, files.end()) << "round " << round << ": a stray file " << relative;
        EXPECT_EQ(data.size(), f->second->bytes) << "round " << round << ": " << relative;
        EXPECT_EQ(HashHex("xxh64", data).value_or(""), *f->second->FindHash("xxh64"))
            << "round " << round << ": " << relative;
      }
      ++checked;
    }
  }
  ASSERT_EQ(Sh(fmt::format("{} stream {} --local {} --cache-limit {} --validate-hash xxh64 "
                           "--touch --json > {} 2>&1",
                           FERRY_CLI_PATH, url, Quote(cache), limit, Quote(tmp / "final"))),
            0)
      << ReadFileToString(tmp / "final").value_or("");
  EXPECT_EQ(JsonLines(tmp / "final")[0]["samples"], 1500);
  EXPECT_GE(killed, rounds / 2) << "most rounds must be killed mid-epoch to prove anything";
  std::cerr << "kill suite: " << rounds << " rounds, " << killed << " killed mid-epoch (an epoch "
            << epoch_ms << " ms), " << checked << " cached files checked whole after the kills\n";
}

// Samples the bytes of shard files (temporaries included) under `folder` every 10 ms until
// Stop, which returns the most it saw.
class DiskUseSampler {
 public:
  // `settle`: what is used before it has passed is not counted.
  explicit DiskUseSampler(std::filesystem::path folder,
                          std::chrono::milliseconds settle = std::chrono::milliseconds(0))
      : thread_([this, folder = std::move(folder), settle](std::stop_token stop) {
          const auto counted_from = std::chrono::steady_clock::now() + settle;
          while (!stop.stop_requested()) {
            uint64_t used = 0;
            std::error_code ec;
            for (auto it = std::filesystem::recursive_directory_iterator(folder, ec);
                 !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
              if (it->is_regular_file(ec) && it->path().filename().string().starts_with("shard.")) {
                std::error_code size_ec;  // the file may be evicted between listing and stat
                const uint64_t size = std::filesystem::file_size(it->path(), size_ec);
                if (!size_ec) used += size;
              }
            }
            if (std::chrono::steady_clock::now() >= counted_from) peak_ = std::max(peak_, used);
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
        }) {}

  uint64_t Stop() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
    return peak_;
  }

 private:
  uint64_t peak_ = 0;  // written by the thread until Stop joins it
  std::jthread thread_;
};

TEST(Stream, DiskUseStaysWithinTheCacheLimit) {
  TempDir tmp;
  const Dataset d = MakeRemoteDataset(tmp, "evict", 1000, 10000, 512 << 10);
  const auto cache = tmp / "cache";
  const uint64_t limit = d.raw_bytes / 4;
  // Slack (docs/streaming.md): the shards downloading at once beyond the first, here 1.
  uint64_t largest = 0;
  for (const auto& s : d.index.shards) largest = std::max(largest, s.raw_data.bytes);
  const uint64_t slack = 1 * largest;
  DiskUseSampler sampler(cache);
  const int code = Sh(fmt::format(
      "{} stream {} --local {} --cache-limit {} --epochs 2 --shuffle --shuffle-algo py1s "
      "--validate-hash xxh64 --concurrency 2 --json "
      "> {} 2>&1",
      FERRY_CLI_PATH, d.url, Quote(cache), limit, Quote(tmp / "out")));
  const uint64_t peak = sampler.Stop();
  ASSERT_EQ(code, 0) << ReadFileToString(tmp / "out").value_or("");
  auto lines = JsonLines(tmp / "out");
  ASSERT_EQ(lines.size(), 2u);
  for (const auto& l : lines) EXPECT_EQ(l["samples"], d.samples);
  EXPECT_GT(lines[1]["evictions"].get<int64_t>() + lines[0]["evictions"].get<int64_t>(), 0);
  EXPECT_LE(peak, limit + slack) << "limit " << limit << ", slack " << slack;
  EXPECT_GT(peak, limit / 2) << "the cache was used";
}

// The race suite in small: eight processes with different orders through one cache folder with a
// tight limit, each with the default (auto) look-ahead. Every one must finish its epoch with
// every sample read (--touch reads every byte, so a shard deleted or cut under a reader would
// show), and the folder must stay within the limit plus the documented slack: one shard per
// download in flight beyond the first. That holds because the readers of a folder share what
// they may pin: half the limit ahead of them, a quarter behind. Each taking half the limit for
// itself, as it did, eight pinned four times the limit - the whole dataset here.
TEST(Stream, EightProcessesShareATightCacheWithoutHarm) {
  TempDir tmp;
  const Dataset d = MakeRemoteDataset(tmp, "race", 1024, 4000, 64 << 10);
  ASSERT_GE(d.index.shards.size(), 60u);
  const auto cache = tmp / "cache";
  uint64_t largest = 0;
  for (const auto& s : d.index.shards) largest = std::max(largest, s.raw_data.bytes);
  constexpr int kProcesses = 8;
  // 32 shards: each reader may have 2 ahead (16 / 8; in flight, then pinned) beside the one it
  // reads and one a quarter of the limit keeps open behind it - 32 pinned at most, which the
  // limit holds - so eviction always finds room, and 16 downloads may be in flight at once.
  const uint64_t limit = 32 * largest;
  ASSERT_LT(limit, d.raw_bytes * 3 / 5);
  const uint64_t slack = (2 * kProcesses - 1) * largest;
  // From one second on: a reader that starts before the others have registered takes a larger
  // share until its next count (within 250 ms), and what it pinned then drains as it reads
  // (docs/streaming.md).
  DiskUseSampler sampler(cache, std::chrono::milliseconds(1000));
  std::string command = "(";
  for (int p = 0; p < kProcesses; ++p) {
    command += fmt::format(
        "{} stream {} --local {} --cache-limit {} --shuffle --seed {} --validate-hash xxh64 "
        "--touch --json > {} 2>&1 & ",
        FERRY_CLI_PATH, d.url, Quote(cache), limit, p, Quote(tmp / fmt::format("race{}", p)));
  }
  command += "wait)";
  ASSERT_EQ(Sh(command), 0);
  const uint64_t peak = sampler.Stop();
  uint64_t evictions = 0;
  for (int p = 0; p < kProcesses; ++p) {
    auto lines = JsonLines(tmp / fmt::format("race{}", p));
    ASSERT_EQ(lines.size(), 1u) << ReadFileToString(tmp / fmt::format("race{}", p)).value_or("");
    EXPECT_EQ(lines[0]["samples"], d.samples) << "process " << p;
    evictions += lines[0]["evictions"].get<uint64_t>();
  }
  EXPECT_GT(evictions, 0u) << "the limit was tight enough to evict";
  EXPECT_LE(peak, limit + slack) << "limit " << limit << ", slack " << slack;
  std::cerr << "race: " << kProcesses << " processes, " << evictions << " evictions, peak " << peak
            << " bytes of a limit of " << limit << "\n";
}

TEST(Stream, ACorruptedShardIsDataLossNamingIt) {
  TempDir tmp;
  const Dataset d = MakeRemoteDataset(tmp, "corrupt", 500, 1000, 100000);
  // Replace one shard on the server with a copy that has one byte flipped.
  const ShardDescription& victim = d.index.shards[1];
  std::string data = ReadFileToString(tmp / "src-corrupt" / victim.raw_data.basename).value();
  data[data.size() / 2] ^= 0x20;
  ASSERT_TRUE(WriteFileAtomically(tmp / "bad", data).ok());
  ASSERT_EQ(Sh(fmt::format("{} cp -q {} {}/{} > /dev/null", FERRY_CLI_PATH, Quote(tmp / "bad"),
                           d.url, victim.raw_data.basename)),
            0);
  const int code = Sh(fmt::format("{} stream {} --local {} --validate-hash xxh64 > {} 2>&1",
                                  FERRY_CLI_PATH, d.url, Quote(tmp / "cache"), Quote(tmp / "out")));
  EXPECT_EQ(code, 6);  // corrupt data
  const std::string out = ReadFileToString(tmp / "out").value_or("");
  EXPECT_THAT(out, HasSubstr(victim.raw_data.basename));
  EXPECT_THAT(out, HasSubstr("xxh64"));
  EXPECT_FALSE(std::filesystem::exists(tmp / "cache" / victim.raw_data.basename));
}

// ferry doctor through a link with a 50 ms round trip: it measures at least that, and its
// advice for the dataset is consistent with what it measured.
TEST(Doctor, MeasuresTheLinkAndAdvisesForTheDataset) {
  TempDir tmp;
  const Dataset d = MakeRemoteDataset(tmp, "doctor", 400, 10000, 1 << 20);
  const std::string endpoint = StartWan(tmp, "--delay-ms 25");
  const WanGuard wan_process(tmp);
  ASSERT_EQ(Sh(fmt::format("AWS_ENDPOINT_URL={} {} doctor {} --dataset --json --requests 5 "
                           "--connections 4 --bytes 4mb --local {} > {} 2> {}",
                           endpoint, FERRY_CLI_PATH, d.url, Quote(tmp.path()), Quote(tmp / "out"),
                           Quote(tmp / "err"))),
            0)
      << ReadFileToString(tmp / "err").value_or("");
  StopWan(tmp);
  auto lines = JsonLines(tmp / "out");
  ASSERT_EQ(lines.size(), 1u);
  const auto& j = lines[0];
  EXPECT_GE(j["rtt_s"].get<double>(), 0.05);
  EXPECT_LT(j["rtt_s"].get<double>(), 2.0);
  EXPECT_GT(j["aggregate_bytes_per_s"].get<double>(), 0);
  EXPECT_GT(j["small_requests_per_s"].get<double>(), 0);
  // Little's law on what it measured.
  EXPECT_NEAR(j["window_bytes"].get<double>(),
              j["aggregate_bytes_per_s"].get<double>() * j["rtt_s"].get<double>() * 2, 1.0);
  const uint64_t per_shard = d.samples / d.index.shards.size();
  EXPECT_EQ(j["predownload"].get<uint64_t>(),
            j["download_concurrency"].get<uint64_t>() * per_shard);
  EXPECT_GE(j["cache_limit_bytes"].get<uint64_t>(), d.raw_bytes);
  EXPECT_GT(j["epoch1_s"].get<double>(), 2 * j["rtt_s"].get<double>());
  EXPECT_TRUE(j.contains("epoch2_s"));
  EXPECT_EQ(j["reasoning"].size(), 8u);
}

}  // namespace
}  // namespace ferry::testing
