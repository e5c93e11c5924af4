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
#include <string>

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

// A forked child (a DataLoader worker) does not keep the port: once the parent closes its server
// the port is free again, while the child still lives.
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
  server->reset();
  // Nobody listens on the port any more: a connection is refused. (Not a second server on the
  // port: under a parallel test run, another process's outgoing connection may take it.)
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_NE(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(errno, ECONNREFUSED);
  ::close(fd);
  ::close(release[1]);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

}  // namespace
}  // namespace ferry::metrics
