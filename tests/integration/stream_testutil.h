// Helpers of the `ferry stream` integration tests (stream_test.cc, stream_faults_test.cc): a
// shell, JSON lines, a dataset written and uploaded to s3rver or Azurite, and ferry-wan in front
// of a server.
#pragma once

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/format/mds_writer.h"
#include "storage/testing/store_conformance.h"
#include "tests/integration/server_env.h"

namespace ferry::testing {

inline std::string Quote(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

inline int Sh(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline std::vector<nlohmann::json> JsonLines(const std::filesystem::path& file) {
  std::vector<nlohmann::json> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.front() == '{') out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

struct Dataset {
  std::string url;
  DatasetDescription index;
  uint64_t samples = 0;
  uint64_t raw_bytes = 0;
};

enum class Server { kS3rver, kAzurite };

// Writes `samples` samples of ~`blob` bytes into shards of about `shard_bytes`, uploads them to
// s3rver (or Azurite) and returns the dataset's URL.
inline Dataset MakeRemoteDataset(const TempDir& tmp, const std::string& name, uint64_t samples,
                                 size_t blob, uint64_t shard_bytes,
                                 Server server = Server::kS3rver) {
  UseS3Server("S3RVER");
  UseAzurite();
  const auto local = tmp / ("src-" + name);
  auto writer = MdsWriter::Create({.out = local,
                                   .columns = {{"id", "int"}, {"blob", "bytes"}},
                                   .hashes = {"xxh64"},
                                   .size_limit = shard_bytes})
                    .value();
  for (uint64_t i = 0; i < samples; ++i) {
    const Value values[] = {Value(Bytes{TestBytes(blob, i)}), Value(static_cast<int64_t>(i))};
    EXPECT_TRUE(writer->WriteValues(values).ok());
  }
  Dataset d;
  d.index = writer->Finish().value();
  d.samples = samples;
  for (const auto& s : d.index.shards) d.raw_bytes += s.raw_data.bytes;
  d.url = server == Server::kS3rver
              ? fmt::format("s3://{}/stream/{}/{}", ServerEnv("S3RVER_BUCKET"), RunId(), name)
              : fmt::format("az://{}/stream/{}/{}", ServerEnv("AZURITE_CONTAINER"), RunId(), name);
  EXPECT_EQ(Sh(fmt::format("{} cp -r -q {} {} >/dev/null", FERRY_CLI_PATH, Quote(local), d.url)),
            0);
  return d;
}

// Starts ferry-wan in front of `server` with `args`; returns its endpoint, the server's with
// ferry-wan's address. It stops with the test's TempDir (StopWan).
inline std::string StartWan(const TempDir& tmp, const std::string& args,
                            Server server = Server::kS3rver) {
  const auto port_file = tmp / "port";
  const std::string endpoint =
      ServerEnv(server == Server::kS3rver ? "S3RVER_ENDPOINT" : "AZURITE_ENDPOINT");
  const size_t host = endpoint.find("://") + 3;
  const size_t path = std::min(endpoint.find('/', host), endpoint.size());
  const std::string target = endpoint.substr(host, path - host);
  const std::string wan = fmt::format("{}/bench/ferry-wan", FERRY_BUILD_DIR);
  EXPECT_EQ(Sh(fmt::format("{} --target {} {} --port-file {} > {} 2>&1 & echo $! > {}", wan, target,
                           args, Quote(port_file), Quote(tmp / "wan.log"), Quote(tmp / "wan.pid"))),
            0);
  // The port is whole once its line ends (the file exists a moment before it is written).
  std::string port;
  for (int i = 0; i < 500 && (port.empty() || port.back() != '\n'); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    port = ReadFileToString(port_file).value_or("");
  }
  EXPECT_FALSE(port.empty()) << "ferry-wan did not start";
  return "http://127.0.0.1:" + port.substr(0, port.find('\n')) + endpoint.substr(path);
}

// The environment that sends a `ferry` command to `server` through ferry-wan at `endpoint`.
inline std::string ThroughWan(Server server, const std::string& endpoint) {
  if (server == Server::kS3rver) return "AWS_ENDPOINT_URL=" + endpoint;
  std::string cs = ServerEnv("AZURITE_CONNECTION_STRING");
  const std::string direct = ServerEnv("AZURITE_ENDPOINT");
  cs.replace(cs.find(direct), direct.size(), endpoint);
  return "AZURE_STORAGE_CONNECTION_STRING='" + cs + "'";
}

inline void StopWan(const TempDir& tmp) {
  // The pid file goes with the process, so that a second call cannot hit a recycled pid.
  const std::string pid_file = Quote(tmp / "wan.pid");
  Sh(fmt::format("if [ -f {0} ]; then kill $(cat {0}) 2>/dev/null; rm -f {0}; fi", pid_file));
}

// Stops the ferry-wan that StartWan started in `tmp` and returns the totals it prints as it
// goes (connections, requests, bytes, faults by kind); null when none came within 4 s.
inline nlohmann::json StopWanAndReadTotals(const TempDir& tmp) {
  StopWan(tmp);
  for (int i = 0; i < 200; ++i) {
    auto lines = JsonLines(tmp / "wan.log");
    if (!lines.empty()) return lines.back();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return nullptr;
}

// Stops the ferry-wan that StartWan started in `tmp` at the end of the scope, also when an
// ASSERT ends the test early (stopping it twice is harmless).
class WanGuard {
 public:
  explicit WanGuard(const TempDir& tmp) : tmp_(tmp) {}
  ~WanGuard() { StopWan(tmp_); }
  WanGuard(const WanGuard&) = delete;
  WanGuard& operator=(const WanGuard&) = delete;

 private:
  const TempDir& tmp_;
};

}  // namespace ferry::testing
