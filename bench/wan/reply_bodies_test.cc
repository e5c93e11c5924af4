#include "bench/wan/reply_bodies.h"

#include <gtest/gtest.h>

#include <string>

namespace ferry::wan {
namespace {

// Feeds `wire` in pieces of `step` bytes, as a connection's writes split it.
uint64_t Count(const std::string& wire, const std::vector<std::string>& methods, size_t step) {
  ReplyBodies bodies;
  for (const std::string& method : methods) bodies.Asked(method);
  for (size_t at = 0; at < wire.size(); at += step) bodies.Sent(wire.substr(at, step));
  return bodies.body_bytes();
}

TEST(ReplyBodiesTest, CountsContentLengthChunkedAndHeadReplies) {
  const std::string wire =
      "HTTP/1.1 206 Partial Content\r\nContent-Length: 10\r\nETag: \"x\"\r\n\r\n0123456789"
      "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"
      "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"  // HEAD: the length, no body
      "HTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n"
      "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody";
  const std::vector<std::string> methods = {"GET", "GET", "HEAD", "PUT", "GET"};
  for (size_t step : {1, 2, 3, 7, 64, 4096}) {
    EXPECT_EQ(Count(wire, methods, step), 10u + 5 + 3 + 4) << "in pieces of " << step;
  }
}

TEST(ReplyBodiesTest, ABodyWithoutLengthRunsToTheEndAndACutReplyCountsWhatCame) {
  EXPECT_EQ(Count("HTTP/1.0 200 OK\r\n\r\nall of it", {"GET"}, 3), 9u);
  // Truncated mid-body: the bytes that went out.
  EXPECT_EQ(Count("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123", {"GET"}, 5), 4u);
  // Not HTTP: nothing is counted.
  EXPECT_EQ(Count("garbage without a status\r\n\r\nbody", {"GET"}, 4), 0u);
}

TEST(ReplyBodiesTest, AddsToASharedTotal) {
  std::atomic<uint64_t> total{0};
  ReplyBodies a(&total), b(&total);
  a.Asked("GET");
  b.Asked("GET");
  a.Sent("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nab");
  b.Sent("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_EQ(total.load(), 5u);
  EXPECT_EQ(a.body_bytes(), 2u);
}

}  // namespace
}  // namespace ferry::wan
