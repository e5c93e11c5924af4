#include "ferry/metrics/prometheus.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

namespace ferry::metrics {
namespace {

using ::testing::HasSubstr;

TEST(PrometheusText, CountersGetTotalGaugesDoNotAndStoresBecomeALabel) {
  const std::string text =
      PrometheusText({{"/ferry/cache/downloaded_bytes", 1234},
                      {"/ferry/stream/bytes_in_flight", 77},
                      {"/ferry/storage/s3/bytes_read", 10},
                      {"/ferry/storage/az/bytes_read", 20}},
                     {"/ferry/stream/bytes_in_flight"}, {{"folder", "/cache/\"a\""}});
  EXPECT_THAT(text, HasSubstr("# TYPE ferry_cache_downloaded_bytes_total counter\n"
                              "ferry_cache_downloaded_bytes_total{folder=\"/cache/\\\"a\\\"\"} "
                              "1234\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE ferry_stream_bytes_in_flight gauge\n"
                              "ferry_stream_bytes_in_flight{folder=\"/cache/\\\"a\\\"\"} 77\n"));
  // One TYPE line for both stores' samples.
  EXPECT_THAT(text, HasSubstr("# TYPE ferry_storage_bytes_read_total counter\n"
                              "ferry_storage_bytes_read_total{folder=\"/cache/\\\"a\\\"\","
                              "store=\"az\"} 20\n"
                              "ferry_storage_bytes_read_total{folder=\"/cache/\\\"a\\\"\","
                              "store=\"s3\"} 10\n"));
}

std::string Get(uint16_t port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "connect failed";
  }
  (void)::send(fd, request.data(), request.size(), 0);
  std::string response;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) response.append(buf, n);
  ::close(fd);
  return response;
}

TEST(MetricsServer, AnswersEachScrapeWithTheTextOfThatMoment) {
  std::atomic<int> scrapes{0};
  auto server = MetricsServer::Start(
      [&] { return "ferry_scrapes_total " + std::to_string(++scrapes) + "\n"; }, 0);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const uint16_t port = (*server)->port();
  ASSERT_NE(port, 0);
  const std::string first = Get(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(first, ::testing::StartsWith("HTTP/1.0 200 OK\r\n"));
  EXPECT_THAT(first, HasSubstr("Content-Type: text/plain; version=0.0.4"));
  EXPECT_THAT(first, ::testing::EndsWith("\r\n\r\nferry_scrapes_total 1\n"));
  EXPECT_THAT(Get(port, "GET /metrics HTTP/1.1\r\n\r\n"), HasSubstr("ferry_scrapes_total 2\n"));
  EXPECT_THAT(Get(port, "GET /secrets HTTP/1.1\r\n\r\n"),
              ::testing::StartsWith("HTTP/1.0 404 Not Found"));
  EXPECT_EQ(scrapes.load(), 2);
}

TEST(MetricsServer, APortInUseIsAnErrorNamingIt) {
  auto first = MetricsServer::Start([] { return std::string(); }, 0);
  ASSERT_TRUE(first.ok());
  auto second = MetricsServer::Start([] { return std::string(); }, (*first)->port());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(second.status().message(), HasSubstr(std::to_string((*first)->port())));
}

}  // namespace
}  // namespace ferry::metrics

namespace ferry::metrics {
namespace {

// The inodes of the sockets listening on `port` (/proc/net/tcp, state 0A).
std::set<std::string> ListeningSockets(uint16_t port) {
  std::set<std::string> inodes;
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
        timeout >> inode;
    const size_t colon = local.find(':');
    if (colon == std::string::npos || state != "0A") continue;
    if (std::stoul(local.substr(colon + 1), nullptr, 16) == port) inodes.insert(inode);
  }
  return inodes;
}

// Whether process `pid` holds one of the sockets `inodes`.
bool Holds(pid_t pid, const std::set<std::string>& inodes) {
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator(
           std::filesystem::path("/proc") / std::to_string(pid) / "fd", ec)) {
    const auto target = std::filesystem::read_symlink(fd.path(), ec).string();
    if (target.starts_with("socket:[") && inodes.contains(target.substr(8, target.size() - 9))) {
      return true;
    }
  }
  return false;
}

// A forked child (a DataLoader worker) does not keep the port: its server's listening socket is
// closed in the child, so once the parent closes its server nothing listens on the port. Checked
// on the child's own descriptors: a connection to the port could reach another process that
// took it since, under a parallel test run.
TEST(MetricsServer, AForkedChildDoesNotKeepThePort) {
  auto server = MetricsServer::Start([] { return std::string("x 1\n"); }, 0);
  ASSERT_TRUE(server.ok());
  const uint16_t port = (*server)->port();
  int release[2];
  ASSERT_EQ(::pipe(release), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    char byte;
    ::close(release[1]);
    (void)::read(release[0], &byte, 1);  // until the parent is done
    ::_exit(0);
  }
  ::close(release[0]);
  const std::set<std::string> listening = ListeningSockets(port);
  ASSERT_FALSE(listening.empty()) << "the server listens on " << port;
  EXPECT_TRUE(Holds(::getpid(), listening)) << "the parent's socket is seen";
  // The child closes it in its fork handler, which may run after the parent's fork returned.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (Holds(pid, listening) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(Holds(pid, listening)) << "the child kept the listening socket";
  server->reset();
  EXPECT_FALSE(Holds(::getpid(), listening));
  ::close(release[1]);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

}  // namespace
}  // namespace ferry::metrics
