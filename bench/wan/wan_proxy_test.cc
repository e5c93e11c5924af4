// The WAN emulator does what the benchmarks rely on: a round trip through it takes at least
// 2 x delay; a long transfer pays the delay once, not per chunk; a bandwidth cap holds.
#include "bench/wan/wan_proxy.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace ferry::wan {
namespace {

using Clock = std::chrono::steady_clock;

// A listening socket on 127.0.0.1, on a port the OS picks (stored in `*port`).
int ListenOnLoopback(uint16_t* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::listen(fd, 16);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

// A socket connected to 127.0.0.1:port (-1 if the connection failed).
int ConnectTo(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A server on 127.0.0.1 that runs `serve` on each connection it accepts, one at a time, then
// closes it.
class Server {
 public:
  explicit Server(std::function<void(int fd)> serve) : serve_(std::move(serve)) {
    fd_ = ListenOnLoopback(&port_);
    thread_ = std::jthread([this](std::stop_token stop) {
      while (!stop.stop_requested()) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        serve_(c);
        ::close(c);
      }
    });
  }
  // Reads 1 byte, then sends `reply_bytes` bytes of 'x'.
  explicit Server(size_t reply_bytes)
      : Server([reply = std::string(reply_bytes, 'x')](int c) {
          char b;
          if (::read(c, &b, 1) != 1) return;
          for (size_t sent = 0; sent < reply.size();) {
            const ssize_t n = ::send(c, reply.data() + sent, reply.size() - sent, MSG_NOSIGNAL);
            if (n <= 0) break;
            sent += static_cast<size_t>(n);
          }
        }) {}
  ~Server() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
  }
  uint16_t port() const { return port_; }

 private:
  std::function<void(int)> serve_;
  int fd_;
  uint16_t port_;
  std::jthread thread_;
};

// Sends `request` (one byte by default) to 127.0.0.1:port and returns everything read until the
// peer closes.
std::string ExchangeData(uint16_t port, std::string_view request = "?") {
  const int fd = ConnectTo(port);
  EXPECT_GE(fd, 0);
  (void)!::write(fd, request.data(), request.size());
  std::string out, buf(1 << 16, '\0');
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n <= 0) break;
    out.append(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

// Sends one byte to 127.0.0.1:port and reads until the peer closes; returns (bytes, seconds).
std::pair<size_t, double> Exchange(uint16_t port) {
  const auto start = Clock::now();
  const size_t bytes = ExchangeData(port).size();
  return {bytes, std::chrono::duration<double>(Clock::now() - start).count()};
}

TEST(WanProxy, ARoundTripTakesAtLeastTwiceTheDelay) {
  Server server(100);
  auto proxy = WanProxy::Start(
                   {.target_port = server.port(), .one_way_delay = std::chrono::milliseconds(40)})
                   .value();
  const auto [bytes, seconds] = Exchange(proxy->port());
  EXPECT_EQ(bytes, 100u);
  EXPECT_GE(seconds, 0.080);  // request 40 ms there, reply 40 ms back
  EXPECT_LT(seconds, 1.0);
  const auto stats = proxy->Stats();
  EXPECT_EQ(stats.connections, 1u);
  EXPECT_EQ(stats.bytes_to_client, 100u);
  EXPECT_EQ(stats.bytes_to_server, 1u);
}

TEST(WanProxy, ALongTransferPaysTheDelayOnce) {
  Server server(64 << 20);
  auto proxy = WanProxy::Start(
                   {.target_port = server.port(), .one_way_delay = std::chrono::milliseconds(30)})
                   .value();
  const auto [bytes, seconds] = Exchange(proxy->port());
  EXPECT_EQ(bytes, size_t{64} << 20);
  // 64 MiB in 256 KiB chunks: stop-and-wait would take 256 x 60 ms = 15 s.
  EXPECT_LT(seconds, 5.0);
}

TEST(WanProxy, ABandwidthCapHolds) {
  Server server(8 << 20);
  auto proxy =
      WanProxy::Start({.target_port = server.port(), .per_connection_bytes_per_s = 20e6}).value();
  const auto [bytes, seconds] = Exchange(proxy->port());
  EXPECT_EQ(bytes, size_t{8} << 20);
  const double rate = static_cast<double>(bytes) / seconds;
  EXPECT_LT(rate, 20e6 * 1.1);
  EXPECT_GT(rate, 20e6 * 0.7);
}

WanOptions Faulty(uint16_t port, FaultKind kind) {
  WanOptions options{.target_port = port};
  options.faults = {.rate = 1.0,
                    .kinds = {kind},
                    .seed = 3,
                    .max_offset = 50000,
                    .stall = std::chrono::milliseconds(300)};
  return options;
}

TEST(WanProxyFaults, TruncateEndsTheReplyEarly) {
  Server server(100000);
  auto proxy = WanProxy::Start(Faulty(server.port(), FaultKind::kTruncate)).value();
  const std::string got = ExchangeData(proxy->port());
  EXPECT_LT(got.size(), 50000u);
  EXPECT_EQ(proxy->Stats().faults[static_cast<int>(FaultKind::kTruncate)], 1u);
}

TEST(WanProxyFaults, ResetEndsTheReplyWithAnRst) {
  Server server(100000);
  auto proxy = WanProxy::Start(Faulty(server.port(), FaultKind::kReset)).value();
  const int fd = ConnectTo(proxy->port());
  ASSERT_GE(fd, 0);
  (void)!::write(fd, "?", 1);
  size_t got = 0;
  int error = 0;
  std::string buf(1 << 16, '\0');
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) error = errno;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  EXPECT_EQ(error, ECONNRESET) << "the reply ends with a reset, not an end of stream";
  EXPECT_LT(got, 50000u);
  EXPECT_EQ(proxy->Stats().faults[static_cast<int>(FaultKind::kReset)], 1u);
}

TEST(WanProxyFaults, EachFlipChangesExactlyOneByte) {
  Server server(100000);
  auto proxy = WanProxy::Start(Faulty(server.port(), FaultKind::kFlip)).value();
  const std::string got = ExchangeData(proxy->port());
  ASSERT_EQ(got.size(), 100000u);
  // At rate 1 a flip re-arms after it fires, so how many land depends on how the reply was
  // chunked: each one that fired changed exactly one byte.
  const auto fired = proxy->Stats().faults[static_cast<int>(FaultKind::kFlip)];
  EXPECT_GE(fired, 1u);
  EXPECT_EQ(static_cast<uint64_t>(got.size() - std::count(got.begin(), got.end(), 'x')), fired);
}

TEST(WanProxyFaults, StallDelaysButDelivers) {
  Server server(100000);
  auto proxy = WanProxy::Start(Faulty(server.port(), FaultKind::kStall)).value();
  const auto [bytes, seconds] = Exchange(proxy->port());
  EXPECT_EQ(bytes, 100000u);
  EXPECT_GE(seconds, 0.3);
}

TEST(WanProxyFaults, SlowTricklesTheRestOfTheReply) {
  Server server(8000);
  WanOptions options = Faulty(server.port(), FaultKind::kSlow);
  options.faults.max_offset = 1000;
  options.faults.slow_bytes_per_s = 8000;
  auto proxy = WanProxy::Start(options).value();
  const auto [bytes, seconds] = Exchange(proxy->port());
  EXPECT_EQ(bytes, 8000u);
  EXPECT_GE(seconds, 0.8);  // at least 7,000 bytes at 8,000 per second
  EXPECT_EQ(proxy->Stats().faults[static_cast<int>(FaultKind::kSlow)], 1u);
}

constexpr std::string_view kRequest = "GET /bucket/key HTTP/1.1\r\nHost: x\r\n\r\n";

TEST(WanProxyFaults, RefuseAndErrorRepliesNeverReachTheServer) {
  Server server(100);
  auto refusing = WanProxy::Start(Faulty(server.port(), FaultKind::kRefuse)).value();
  EXPECT_EQ(ExchangeData(refusing->port(), kRequest), "");
  EXPECT_EQ(refusing->Stats().faults[static_cast<int>(FaultKind::kRefuse)], 1u);
  auto throttling = WanProxy::Start(Faulty(server.port(), FaultKind::kHttp503)).value();
  const std::string reply = ExchangeData(throttling->port(), kRequest);
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 503 Slow Down\r\n")) << reply;
  EXPECT_NE(reply.find("<Code>SlowDown</Code>"), std::string::npos);
  EXPECT_EQ(throttling->Stats().faults[static_cast<int>(FaultKind::kHttp503)], 1u);
  EXPECT_EQ(throttling->Stats().requests, 1u);
  EXPECT_EQ(throttling->Stats().bytes_to_server, 0u);
  auto busy = WanProxy::Start(Faulty(server.port(), FaultKind::kServerBusy)).value();
  EXPECT_NE(ExchangeData(busy->port(), kRequest).find("<Code>ServerBusy</Code>"),
            std::string::npos);
  auto failing = WanProxy::Start(Faulty(server.port(), FaultKind::kHttp500)).value();
  EXPECT_TRUE(ExchangeData(failing->port(), kRequest).starts_with("HTTP/1.1 500 "));
  // Bytes that do not start a request are not drawn for.
  EXPECT_EQ(ExchangeData(failing->port()), std::string(100, 'x'));
}

// Requests beyond the rate get the throttled service's reply, with its Retry-After; the bucket
// holds one second's worth, so a burst of 25 at 10 per second lets about 10 through.
TEST(WanProxyFaults, RequestsBeyondTheThrottleRateGetTheServicesThrottleReply) {
  Server server(100);
  for (const auto& [reply_kind, status, code] :
       {std::tuple{"s3", "HTTP/1.1 503 Slow Down\r\n", "<Code>SlowDown</Code>"},
        std::tuple{"azure", "HTTP/1.1 503 Server Busy\r\n", "x-ms-error-code: ServerBusy"},
        std::tuple{"gcs", "HTTP/1.1 429 Too Many Requests\r\n", "rate limit exceeded"}}) {
    SCOPED_TRACE(reply_kind);
    WanOptions options;
    options.target_port = server.port();
    options.throttle = {.requests_per_s = 10, .reply = reply_kind, .retry_after_s = 2};
    auto proxy = WanProxy::Start(options).value();
    int passed = 0, throttled = 0;
    for (int i = 0; i < 25; ++i) {
      const std::string reply = ExchangeData(proxy->port(), kRequest);
      if (reply == std::string(100, 'x')) {
        ++passed;
      } else {
        ++throttled;
        EXPECT_TRUE(reply.starts_with(status)) << reply;
        EXPECT_NE(reply.find(code), std::string::npos) << reply;
        EXPECT_NE(reply.find("Retry-After: 2\r\n"), std::string::npos) << reply;
      }
    }
    EXPECT_GE(passed, 10);
    EXPECT_LE(passed, 14);  // the bucket refills at 10/s while the burst runs
    EXPECT_EQ(proxy->Stats().faults[static_cast<int>(FaultKind::kThrottle)],
              static_cast<uint64_t>(throttled));
  }
  EXPECT_FALSE(ParseFaultKind("throttle").has_value());  // a rate, not a drawn fault
}

// With bursts, the rate holds only during them: after the first half second of every 100 s,
// nothing is throttled.
TEST(WanProxyFaults, ThrottlingInBurstsHoldsOnlyDuringThem) {
  Server server(100);
  WanOptions options;
  options.target_port = server.port();
  options.throttle = {.requests_per_s = 1, .burst_s = 0.5, .every_s = 100};
  auto proxy = WanProxy::Start(options).value();
  const auto started = Clock::now();
  int in_burst = 0, after = 0;
  for (int i = 0; i < 5; ++i) in_burst += ExchangeData(proxy->port(), kRequest).size() == 100;
  ASSERT_LT(Clock::now() - started, std::chrono::milliseconds(400)) << "too slow to tell";
  std::this_thread::sleep_until(started + std::chrono::milliseconds(600));
  for (int i = 0; i < 5; ++i) after += ExchangeData(proxy->port(), kRequest).size() == 100;
  EXPECT_LE(in_burst, 2);
  EXPECT_EQ(after, 5);
}

// Keep-alive HTTP: answers every request on the connection with "ok" until it closes.
void AnswerEveryRequest(int c, std::atomic<int>* requests = nullptr) {
  std::string in, buf(4096, '\0');
  for (;;) {
    const ssize_t n = ::read(c, buf.data(), buf.size());
    if (n <= 0) return;
    in.append(buf.data(), static_cast<size_t>(n));
    for (size_t end; (end = in.find("\r\n\r\n")) != std::string::npos;) {
      in.erase(0, end + 4);
      if (requests != nullptr) requests->fetch_add(1);
      constexpr std::string_view kOk = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
      (void)!::send(c, kOk.data(), kOk.size(), MSG_NOSIGNAL);
    }
  }
}

TEST(WanProxyFaults, RequestFaultsAreDrawnPerRequestOnAKeptConnection) {
  Server server([](int c) { AnswerEveryRequest(c); });
  WanOptions options = Faulty(server.port(), FaultKind::kHttp503);
  options.faults.rate = 0.3;
  auto proxy = WanProxy::Start(options).value();
  // 60 requests, each on the same connection as the one before until a fault closes it.
  int fd = -1, throttled = 0, most_on_one_connection = 0, on_this_connection = 0;
  for (int i = 0; i < 60; ++i) {
    if (fd < 0) {
      fd = ConnectTo(proxy->port());
      ASSERT_GE(fd, 0);
      on_this_connection = 0;
    }
    ASSERT_EQ(::write(fd, kRequest.data(), kRequest.size()), static_cast<ssize_t>(kRequest.size()));
    std::string reply, buf(4096, '\0');
    while (!reply.ends_with("ok") && !reply.ends_with("</Error>")) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      ASSERT_GT(n, 0) << "request " << i << " got no whole reply: " << reply;
      reply.append(buf.data(), static_cast<size_t>(n));
    }
    most_on_one_connection = std::max(most_on_one_connection, ++on_this_connection);
    if (reply.starts_with("HTTP/1.1 503 ")) {
      ++throttled;
      ::close(fd);
      fd = -1;
    } else {
      EXPECT_TRUE(reply.starts_with("HTTP/1.1 200 ")) << reply;
    }
  }
  if (fd >= 0) ::close(fd);
  EXPECT_EQ(proxy->Stats().requests, 60u);
  EXPECT_EQ(proxy->Stats().faults[static_cast<int>(FaultKind::kHttp503)],
            static_cast<uint64_t>(throttled));
  EXPECT_GT(throttled, 6);  // about 18 expected at 0.3
  EXPECT_LT(throttled, 40);
  EXPECT_GT(most_on_one_connection, 1) << "a connection carried several requests";
}

// A keep-alive HTTP server on 127.0.0.1 that serves every connection at once (a lie's
// connection to the server opens while the client's is held), each answered as
// AnswerEveryRequest does; counts the requests.
class ConcurrentServer {
 public:
  ConcurrentServer() {
    fd_ = ListenOnLoopback(&port_);
    acceptor_ = std::jthread([this](std::stop_token stop) {
      while (!stop.stop_requested()) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        connections_.emplace_back([this, c] {
          AnswerEveryRequest(c, &requests_);
          ::close(c);
        });
      }
    });
  }
  ~ConcurrentServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    acceptor_.join();
  }
  uint16_t port() const { return port_; }
  int requests() const { return requests_.load(); }

 private:
  int fd_;
  uint16_t port_;
  std::atomic<int> requests_{0};
  std::vector<std::jthread> connections_;  // before acceptor_: joined after it
  std::jthread acceptor_;
};

// A lie is told of the server's honest reply, fetched on the proxy's own connection: the
// request reaches the server once, and the client gets the rewritten reply, then the close.
TEST(WanProxyFaults, ALieIsToldOfTheServersOwnReply) {
  ConcurrentServer server;
  auto proxy = WanProxy::Start(Faulty(server.port(), FaultKind::kShort)).value();
  const std::string reply = ExchangeData(proxy->port(), kRequest);
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 200 OK\r\n")) << reply;
  EXPECT_TRUE(reply.ends_with("Content-Length: 0\r\nConnection: close\r\n\r\n") ||
              reply.ends_with("Content-Length: 1\r\nConnection: close\r\n\r\no"))
      << reply;
  EXPECT_EQ(proxy->Stats().faults[static_cast<int>(FaultKind::kShort)], 1u);
  EXPECT_EQ(server.requests(), 1);
  auto html = WanProxy::Start(Faulty(server.port(), FaultKind::kHtml)).value();
  EXPECT_NE(ExchangeData(html->port(), kRequest).find("<html>"), std::string::npos);
  EXPECT_EQ(server.requests(), 1);  // a page of the proxy's own
  // A lie that does not fit the reply (no whole object to make of a 200) is neither told nor
  // counted: the honest reply goes back.
  auto whole = WanProxy::Start(Faulty(server.port(), FaultKind::kWhole)).value();
  const int fd = ConnectTo(whole->port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, kRequest.data(), kRequest.size()), static_cast<ssize_t>(kRequest.size()));
  std::string honest, buf(4096, '\0');
  while (!honest.ends_with("\r\n\r\nok")) {  // the connection is kept: no end to wait for
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    ASSERT_GT(n, 0) << honest;
    honest.append(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  EXPECT_EQ(whole->Stats().faults[static_cast<int>(FaultKind::kWhole)], 0u);
  EXPECT_EQ(server.requests(), 2);  // the honest reply went back: the GET reached it once
}

TEST(WanProxyFaults, ARateBelowOneFaultsSomeConnectionsBySeed) {
  Server server(1000);
  WanOptions options = Faulty(server.port(), FaultKind::kTruncate);
  options.faults.rate = 0.5;
  options.faults.max_offset = 500;
  auto proxy = WanProxy::Start(options).value();
  int short_replies = 0;
  for (int i = 0; i < 40; ++i) short_replies += ExchangeData(proxy->port()).size() < 1000;
  EXPECT_GT(short_replies, 5);
  EXPECT_LT(short_replies, 35);
  EXPECT_EQ(proxy->Stats().faults[static_cast<int>(FaultKind::kTruncate)],
            static_cast<uint64_t>(short_replies));
}

}  // namespace
}  // namespace ferry::wan
