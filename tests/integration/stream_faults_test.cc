// The streaming engine under faults and hostile conditions, through `ferry stream`:
//   - faults and lies injected by ferry-wan between ferry and s3rver or Azurite cost retries,
//     never a wrong or missing sample (the fault suite);
//   - throttling costs time, never a sample;
//   - a shard that index.json lists and the store lacks is a clear error naming it;
//   - a read-only cache folder is a clear error (or, complete, read in place);
//   - temporaries never go to TMPDIR.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string_view>
#include <utility>

#include "format/hash.h"
#include "tests/integration/stream_testutil.h"

namespace ferry::testing {
namespace {

using ::testing::HasSubstr;

// The fault suite: a dataset streamed through ferry-wan injecting one kind of fault (then all
// kinds mixed). Body faults (cut, reset, stalled, flipped, slowed bodies) hit a share of the
// connections, request faults (refused, 503 SlowDown / ServerBusy, 500) and lies (a short body
// with a Content-Length that agrees, another range, the whole object for a range, an HTML page
// with 200, another ETag or 412 to If-Match) a share of the requests; either way at least a
// tenth of the requests the proxy saw were faulted. Every run must read every sample with the
// shards' bytes checked against their xxh64 (--validate-hash; one run without it, where the MD5
// the store sends with each body catches the flipped bits) and fetch each byte once (a cut, reset
// or slowed body resumes for its missing range only; a corruption or a lie costs a download) - or
// stop with an error naming the shard (or index.json): only when corruptions or lies spoil every
// download of one shard, or when one request's retries are all spent. Every shard left in the
// cache must be whole.
struct FaultRun {
  std::string kinds;
  double rate;
  // Off: only the MD5 the store sends with each body (its ETag) stands between a flipped bit
  // and the cache.
  bool validate_hash = true;
};

bool HasLies(std::string_view kinds) {
  for (std::string_view lie : {"short", "range", "whole", "html", "etag"}) {
    if (kinds.find(lie) != std::string_view::npos) return true;
  }
  return false;
}

void RunFaultSuite(Server server, const std::vector<FaultRun>& runs) {
  TempDir tmp;
  const Dataset d = MakeRemoteDataset(tmp, "faults", 800, 10000, 256 << 10, server);
  const std::string store = server == Server::kS3rver ? "s3rver" : "azurite";
  uint64_t total_faults = 0, total_requests = 0;
  for (size_t k = 0; k < runs.size(); ++k) {
    const FaultRun& r = runs[k];
    const std::string label = r.kinds + (r.validate_hash ? "" : ",unhashed");
    SCOPED_TRACE(store + " " + label);
    const auto run = tmp / fmt::format("run{}", k);
    std::filesystem::create_directories(run);
    TempDir wan_dir;
    // A slowed connection trickles at 1 KiB/s; ferry drops one that brings under 4 KiB/s for a
    // second (30 s by default) and resumes the read on another.
    const std::string endpoint =
        StartWan(wan_dir,
                 fmt::format("--fault-rate {} --fault-kinds {} --fault-seed {} "
                             "--fault-max-offset 150000 --fault-stall-ms 200 --fault-slow-bps 1024",
                             r.rate, r.kinds, k + 1),
                 server);
    const WanGuard wan_process(wan_dir);
    const int code = Sh(
        fmt::format("{} FERRY_LOW_SPEED_LIMIT=4096 FERRY_LOW_SPEED_TIME=1 {} stream {} --local {} "
                    "{} --touch --json > {} 2>&1",
                    ThroughWan(server, endpoint), FERRY_CLI_PATH, d.url, Quote(run / "cache"),
                    r.validate_hash ? "--validate-hash xxh64" : "", Quote(run / "out")));
    const nlohmann::json wan = StopWanAndReadTotals(wan_dir);
    ASSERT_FALSE(wan.is_null()) << "ferry-wan printed no totals";
    uint64_t fired = 0;
    for (const auto& [name, count] : wan["faults"].items()) fired += count.get<uint64_t>();
    const uint64_t seen = wan["requests"].get<uint64_t>();
    EXPECT_GE(fired * 10, seen) << fired << " faults in " << seen << " requests";
    total_faults += fired;
    const std::string out = ReadFileToString(run / "out").value_or("");
    if (code == 0) {
      auto lines = JsonLines(run / "out");
      ASSERT_EQ(lines.size(), 1u) << out;
      EXPECT_EQ(lines[0]["samples"], d.samples);
      total_requests += lines[0]["remote_requests"].get<uint64_t>();
      if (r.kinds.find("flip") == std::string::npos && !HasLies(r.kinds)) {
        // A body cut short is resumed for its missing range only: not one byte twice.
        EXPECT_EQ(lines[0]["bytes_fetched"], d.raw_bytes);
      }
      std::cerr << store << " " << label << ": " << fired << " faults, " << seen
                << " requests seen by the proxy, " << lines[0]["remote_requests"] << " requests, "
                << lines[0]["bytes_fetched"] << " bytes fetched of " << d.raw_bytes << "\n";
    } else {
      // Only corruptions or lies that spoiled every download of a shard (or every fetch of
      // index.json) - the error names it and how many times it was fetched - or a request
      // whose every attempt was faulted may end a run.
      const bool spent_downloads =
          out.find("shard.") != std::string::npos && out.find("(downloaded ") != std::string::npos;
      const bool spent_fetches = out.find("index.json") != std::string::npos &&
                                 out.find("(fetched 3 times)") != std::string::npos;
      EXPECT_TRUE(
          ((r.kinds.find("flip") != std::string::npos || HasLies(r.kinds)) &&
           (spent_downloads || spent_fetches)) ||
          (out.find("attempts") != std::string::npos && out.find("shard.") != std::string::npos))
          << out;
      std::cerr << store << " " << label << ": " << fired << " faults, " << seen
                << " requests seen by the proxy, ended with a clear error: "
                << out.substr(0, out.find('\n')) << "\n";
    }
    for (const auto& s : d.index.shards) {
      const auto path = run / "cache" / s.raw_data.basename;
      if (!std::filesystem::exists(path)) continue;
      const std::string data = ReadFileToString(path).value();
      EXPECT_EQ(HashHex("xxh64", data).value(), *s.raw_data.FindHash("xxh64")) << path;
    }
  }
  std::cerr << "fault suite " << store << ": " << runs.size() << " runs, " << total_faults
            << " faults injected, " << total_requests << " remote requests in completed runs\n";
}

// Rates: a request fault costs the request one of its 8 attempts, so at 0.3 all 8 fail with
// 0.3^8 (7e-5 per request); a cut or slowed body resumes for what is missing, and a stall or a
// flip leaves the connection up, so body faults get most connections.
// make test runs the kinds that take the paths no other kind does (a body cut short, one that
// stalls, one corrupted) alone and the mixed run; FERRY_FAULT_SUITE=full (make reliability)
// runs every kind alone.
TEST(Stream, FaultsCostRetriesNeverWrongOrMissingSamples) {
  std::vector<FaultRun> runs = {{"truncate", 0.6},
                                {"stall", 0.9},
                                {"flip", 0.9},
                                {"flip", 0.9, /*validate_hash=*/false},
                                {"truncate,reset,stall,slow,refuse,http503,busy,http500,flip", 0.3},
                                {"truncate,short,range,whole,html,etag", 0.2}};
  if (const char* suite = std::getenv("FERRY_FAULT_SUITE");
      suite != nullptr && std::string_view(suite) == "full") {
    // The lies alone; those told only of ranges (the whole object for one, 412 to a resume
    // pinned with If-Match) come with cut bodies, whose resumes are the range requests here.
    runs.insert(runs.begin(), {{"reset", 0.6},
                               {"slow", 0.5},
                               {"refuse", 0.3},
                               {"http503", 0.3},
                               {"busy", 0.3},
                               {"http500", 0.3},
                               {"short", 0.15},
                               {"range", 0.2},
                               {"html", 0.15},
                               {"truncate,whole", 0.4},
                               {"truncate,etag", 0.4}});
  }
  RunFaultSuite(Server::kS3rver, runs);
}

// The same against Azure's emulator: its store maps ServerBusy, resumes and checks etags its
// own way. make test runs the mixed run only (Azurite is slow: ~10 s a run); make reliability
// sets FERRY_FAULT_SUITE=full for every kind alone too.
TEST(Stream, FaultsOnAzureCostRetriesToo) {
  const char* suite = std::getenv("FERRY_FAULT_SUITE");
  std::vector<FaultRun> runs = {{"truncate,reset,stall,slow,refuse,busy,http500,flip", 0.3}};
  if (suite != nullptr && std::string_view(suite) == "full") {
    runs.insert(runs.begin(), {{"truncate", 0.6},
                               {"slow", 0.5},
                               {"busy", 0.3},
                               {"refuse", 0.3},
                               {"truncate,short,range,whole,html,etag", 0.2}});
  }
  RunFaultSuite(Server::kAzurite, runs);
}

// Throttling: ferry-wan answers requests beyond a rate as the service throttles (S3's 503
// SlowDown, Azure's ServerBusy), with Retry-After: 1. Two processes stream at once through it,
// with more downloads in flight than the rate allows; they share the throttle through the
// node-wide table. Throttling costs time, never a sample or an error. make test runs a short
// version against s3rver; FERRY_FAULT_SUITE=full (make reliability) a longer one and Azurite.
void RunThrottleSuite(Server server, uint64_t samples, double rate) {
  TempDir tmp;
  const Dataset d = MakeRemoteDataset(tmp, "throttled", samples, 4000, 64 << 10, server);
  const std::string store = server == Server::kS3rver ? "s3rver" : "azurite";
  TempDir wan_dir;
  const std::string endpoint =
      StartWan(wan_dir,
               fmt::format("--throttle-rps {} --throttle-reply {} --throttle-retry-after 1", rate,
                           server == Server::kS3rver ? "s3" : "azure"),
               server);
  const WanGuard wan_process(wan_dir);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> commands;
  for (int p = 0; p < 2; ++p) {
    commands.push_back(
        fmt::format("{} {} stream {} --local {} --concurrency 32 --touch --json > {} 2>&1",
                    ThroughWan(server, endpoint), FERRY_CLI_PATH, d.url,
                    Quote(tmp / fmt::format("cache{}", p)), Quote(tmp / fmt::format("out{}", p))));
  }
  EXPECT_EQ(Sh(fmt::format("({}) & ({}) & wait %1 && wait %2", commands[0], commands[1])), 0);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const nlohmann::json wan = StopWanAndReadTotals(wan_dir);
  ASSERT_FALSE(wan.is_null()) << "ferry-wan printed no totals";
  const uint64_t replies = wan["faults"]["throttle"].get<uint64_t>();
  const uint64_t seen = wan["requests"].get<uint64_t>();
  EXPECT_GT(replies, 0u) << "the rate never throttled";
  uint64_t throttled = 0;
  double waited = 0;
  for (int p = 0; p < 2; ++p) {
    const auto out = tmp / fmt::format("out{}", p);
    auto lines = JsonLines(out);
    ASSERT_EQ(lines.size(), 1u) << ReadFileToString(out).value_or("");
    EXPECT_EQ(lines[0]["samples"], d.samples);
    EXPECT_EQ(lines[0]["bytes_fetched"], d.raw_bytes);  // no shard fetched twice
    throttled += lines[0]["throttled"].get<uint64_t>();
    waited += lines[0]["throttle_wait_s"].get<double>();
  }
  EXPECT_EQ(throttled, replies);  // every throttle reply was seen as one, none became an error
  EXPECT_GT(waited, 0);
  std::cerr << fmt::format(
      "throttle suite {}: {} shards at {} requests/s, 2 processes x 32 downloads: {} throttle "
      "replies of {} requests seen, {:.0f} request-seconds waited at the gates, {:.1f} s in "
      "all\n",
      store, d.index.shards.size(), rate, replies, seen, waited, seconds);
}

TEST(Stream, ThrottlingCostsTimeNeverSamples) {
  const char* suite = std::getenv("FERRY_FAULT_SUITE");
  const bool full = suite != nullptr && std::string_view(suite) == "full";
  RunThrottleSuite(Server::kS3rver, full ? 3000 : 800, 20);
  if (full) RunThrottleSuite(Server::kAzurite, 1500, 20);
}

// An index.json that lists a shard the store does not have: a clear error naming the shard's
// URL and what must have happened, at once (kNotFound is not retried), and nothing left under
// its name.
TEST(Stream, AShardTheIndexListsAndTheStoreLacksIsNamed) {
  TempDir tmp;
  const Dataset d = MakeRemoteDataset(tmp, "lacking", 200, 10000, 256 << 10);
  ASSERT_GE(d.index.shards.size(), 3u);
  const auto local = tmp / "src-lacking";
  const std::string lost = d.index.shards[2].raw_data.basename;
  std::filesystem::remove(local / lost);
  const std::string url = d.url + "-lacking";
  ASSERT_EQ(Sh(fmt::format("{} cp -r -q {} {} >/dev/null", FERRY_CLI_PATH, Quote(local), url)), 0);
  const int code = Sh(fmt::format("{} stream {} --local {} > {} 2>&1", FERRY_CLI_PATH, url,
                                  Quote(tmp / "cache"), Quote(tmp / "out")));
  const std::string out = ReadFileToString(tmp / "out").value_or("");
  EXPECT_EQ(code, 3) << out;  // not found
  EXPECT_THAT(out, HasSubstr(url + "/" + lost)) << out;
  EXPECT_THAT(out, HasSubstr("index.json names this shard but the remote does not have it")) << out;
  EXPECT_FALSE(std::filesystem::exists(tmp / "cache" / lost));
}

// Runs `command` as an unprivileged user when this process is root (for whom permission bits
// do not stop anything), as itself otherwise.
std::string Unprivileged(const std::string& command) {
  return ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " + command
                          : command;
}

// A cache folder that cannot be written - the user may not, or its file system is read-only:
// empty, it is a clear error naming it and nothing is written; holding the whole dataset, it is
// read in place with no remote request.
TEST(Stream, AReadOnlyCacheFolderIsAClearErrorOrReadInPlace) {
  TempDir tmp;
  std::filesystem::permissions(tmp.path(), std::filesystem::perms::all &
                                               ~std::filesystem::perms::group_write &
                                               ~std::filesystem::perms::others_write);
  const Dataset d = MakeRemoteDataset(tmp, "readonly", 200, 10000, 256 << 10);
  // The unprivileged user may not reach the build folder (a checkout under /root): it runs a
  // copy of the command (linked against system libraries only) from the test's folder.
  const auto cli = tmp / "ferry";
  std::filesystem::copy_file(FERRY_CLI_PATH, cli);
  std::filesystem::permissions(
      cli, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
               std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
               std::filesystem::perms::others_exec);
  const auto empty = tmp / "empty";
  std::filesystem::create_directories(empty);
  std::filesystem::permissions(
      empty, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec |
                 std::filesystem::perms::others_read | std::filesystem::perms::others_exec);
  const int code = Sh(Unprivileged(fmt::format("{} stream {} --local {} > {} 2>&1", Quote(cli),
                                               d.url, Quote(empty), Quote(tmp / "out-empty"))));
  const std::string out = ReadFileToString(tmp / "out-empty").value_or("");
  EXPECT_NE(code, 0) << out;
  EXPECT_THAT(out, HasSubstr(empty.string())) << out;
  EXPECT_THAT(out, HasSubstr("Permission denied")) << out;
  EXPECT_TRUE(std::filesystem::is_empty(empty)) << "nothing was written";

  const auto full = tmp / "full";
  ASSERT_EQ(
      Sh(fmt::format("{} stream {} --local {} > /dev/null", FERRY_CLI_PATH, d.url, Quote(full))),
      0);
  ASSERT_EQ(Sh(fmt::format("chmod -R a+rX,a-w {}", Quote(full))), 0);
  ASSERT_EQ(Sh(Unprivileged(fmt::format("{} stream {} --local {} --json > {} 2>&1", Quote(cli),
                                        d.url, Quote(full), Quote(tmp / "out-full")))),
            0)
      << ReadFileToString(tmp / "out-full").value_or("");
  const auto lines = JsonLines(tmp / "out-full");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["samples"], d.samples);
  EXPECT_EQ(lines[0]["remote_requests"], 0);

  // The same on a read-only file system - a read-only bind mount in a mount namespace of the
  // command's own - where every write fails with EROFS, not EACCES.
  const auto script = tmp / "read-only.sh";
  std::ofstream(script) << "set -e\nmount --bind \"$1\" \"$1\"\n"
                           "mount -o remount,bind,ro \"$1\"\n"
                           "exec \"$2\" stream \"$3\" --local \"$1\" --json\n";
  for (const auto& [folder, whole] : {std::pair{full, true}, std::pair{empty, false}}) {
    SCOPED_TRACE(folder.string());
    const auto out_file = tmp / fmt::format("out-ro-{}", whole);
    const int ro =
        Sh(fmt::format("unshare --user --map-root-user --mount sh {} {} {} {} > {} 2>&1",
                       Quote(script), Quote(folder), FERRY_CLI_PATH, d.url, Quote(out_file)));
    const std::string said = ReadFileToString(out_file).value_or("");
    ASSERT_THAT(said, ::testing::Not(HasSubstr("mount:"))) << "no read-only mount to be had";
    if (whole) {
      ASSERT_EQ(ro, 0) << said;
      const auto read = JsonLines(out_file);
      ASSERT_EQ(read.size(), 1u) << said;
      EXPECT_EQ(read[0]["samples"], d.samples);
      EXPECT_EQ(read[0]["remote_requests"], 0);
    } else {
      EXPECT_NE(ro, 0) << said;
      EXPECT_THAT(said, HasSubstr(folder.string())) << said;
      EXPECT_THAT(said, HasSubstr("Read-only file system")) << said;
      EXPECT_TRUE(std::filesystem::is_empty(folder));
    }
  }
}

// ferry writes its temporaries beside the files they become, inside the cache folder - never
// into TMPDIR, which may be another filesystem (a rename across filesystems fails, or copies).
TEST(Stream, TemporariesStayInTheCacheFolderWhateverTmpdirSays) {
  TempDir tmp;
  const Dataset d = MakeRemoteDataset(tmp, "tmpdir", 200, 10000, 256 << 10);
  // Another filesystem when there is one: tmpfs under /dev/shm.
  const std::filesystem::path elsewhere =
      std::filesystem::is_directory("/dev/shm") ? std::filesystem::path("/dev/shm") : tmp.path();
  const auto tmpdir = elsewhere / fmt::format("ferry-tmpdir-{}", RunId());
  std::filesystem::create_directories(tmpdir);
  const int code =
      Sh(fmt::format("TMPDIR={} {} stream {} --local {} --json > {} 2>&1", Quote(tmpdir),
                     FERRY_CLI_PATH, d.url, Quote(tmp / "cache"), Quote(tmp / "out")));
  const bool untouched = std::filesystem::is_empty(tmpdir);
  std::filesystem::remove_all(tmpdir);
  ASSERT_EQ(code, 0) << ReadFileToString(tmp / "out").value_or("");
  EXPECT_TRUE(untouched) << "nothing was written to TMPDIR";
  EXPECT_EQ(JsonLines(tmp / "out")[0]["samples"], d.samples);
  for (const auto& s : d.index.shards) {
    EXPECT_EQ(std::filesystem::file_size(tmp / "cache" / s.raw_data.basename), s.raw_data.bytes);
  }
}

}  // namespace
}  // namespace ferry::testing
