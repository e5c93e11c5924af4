// Each lie of the lying-server faults says what it should, and only where it fits.
#include "bench/wan/lying_reply.h"

#include <gtest/gtest.h>

#include <string>

namespace ferry::wan {
namespace {

constexpr std::string_view kRangeRequest =
    "GET /bucket/key HTTP/1.1\r\nHost: x\r\nRange: bytes=100-199\r\n\r\n";

HttpReply Ranged() {  // the honest reply to kRangeRequest, from a 1000-byte object
  std::string raw =
      "HTTP/1.1 206 Partial Content\r\nETag: \"0123456789abcdef0123456789abcdef\"\r\n"
      "Content-Range: bytes 100-199/1000\r\nContent-Length: 100\r\n\r\n";
  for (int i = 0; i < 100; ++i) raw += static_cast<char>('a' + i % 26);
  return ParseReply(raw).value().value();
}

TEST(LyingReply, ParsesAReplyOnlyWhenItIsWhole) {
  const std::string raw = "HTTP/1.1 200 OK\r\ncontent-length: 5\r\nX-A:  b \r\n\r\nhello";
  EXPECT_FALSE(ParseReply(raw.substr(0, 20)).value().has_value());
  EXPECT_FALSE(ParseReply(raw.substr(0, raw.size() - 1)).value().has_value());
  const HttpReply reply = ParseReply(raw + "next").value().value();
  EXPECT_EQ(reply.status(), 200);
  EXPECT_EQ(reply.body, "hello");
  EXPECT_EQ(reply.Header("X-a").value(), "b");
  EXPECT_EQ(ParseReply(reply.Serialize()).value().value().body, "hello");
  EXPECT_FALSE(ParseReply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n").ok());
  EXPECT_FALSE(ParseReply("SSH-2.0\r\n\r\n").ok());
}

TEST(LyingReply, AShortBodyHasAContentLengthThatAgrees) {
  const HttpReply lie = Lie(FaultKind::kShort, kRangeRequest, Ranged(), 1234).value();
  EXPECT_LT(lie.body.size(), 100u);
  EXPECT_EQ(lie.Header("Content-Length").value(), std::to_string(lie.body.size()));
  EXPECT_EQ(lie.Header("Content-Range").value(), "bytes 100-199/1000");  // the lie
  EXPECT_EQ(lie.body, Ranged().body.substr(0, lie.body.size()));
}

TEST(LyingReply, AnotherRangeSaysWhereItStarts) {
  const HttpReply lie = Lie(FaultKind::kOtherRange, kRangeRequest, Ranged(), 6).value();
  EXPECT_EQ(lie.status(), 206);
  EXPECT_EQ(lie.Header("Content-Range").value(), "bytes 107-199/1000");
  EXPECT_EQ(lie.body, Ranged().body.substr(7));
  // A whole object's 200 becomes a 206 that does not start at 0.
  HttpReply whole = ParseReply("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd").value().value();
  const HttpReply moved = Lie(FaultKind::kOtherRange, "GET / HTTP/1.1\r\n\r\n", whole, 0).value();
  EXPECT_EQ(moved.Header("Content-Range").value(), "bytes 1-3/4");
  EXPECT_EQ(moved.body, "bcd");
}

TEST(LyingReply, TheWholeObjectHoldsTheRangeInItsPlace) {
  const HttpReply lie = Lie(FaultKind::kWhole, kRangeRequest, Ranged(), 0).value();
  EXPECT_EQ(lie.status(), 200);
  EXPECT_FALSE(lie.Header("Content-Range").has_value());
  ASSERT_EQ(lie.body.size(), 1000u);
  EXPECT_EQ(lie.body.substr(100, 100), Ranged().body);
  EXPECT_EQ(lie.body.substr(0, 100), std::string(100, '\0'));
  // Not for a reply that is already whole.
  HttpReply whole = ParseReply("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd").value().value();
  EXPECT_FALSE(Lie(FaultKind::kWhole, "GET / HTTP/1.1\r\n\r\n", whole, 0).has_value());
}

TEST(LyingReply, AChangedObjectHasAnotherEtagOrFailsIfMatch) {
  const HttpReply lie = Lie(FaultKind::kEtag, kRangeRequest, Ranged(), 0).value();
  EXPECT_EQ(lie.Header("ETag").value(), "\"0123456789abcdef0123456789abcdea\"");
  EXPECT_EQ(lie.body, Ranged().body);
  const std::string pinned =
      "GET /k HTTP/1.1\r\nRange: bytes=100-199\r\nif-match: \"0123456789abcdef0123456789abcdef\""
      "\r\n\r\n";
  EXPECT_EQ(RequestHeader(pinned, "If-Match").value(), "\"0123456789abcdef0123456789abcdef\"");
  EXPECT_EQ(Lie(FaultKind::kEtag, pinned, Ranged(), 0).value().status(), 412);
}

TEST(LyingReply, AnHtmlPageAnswersAnything) {
  const HttpReply lie = Lie(FaultKind::kHtml, kRangeRequest, Ranged(), 0).value();
  EXPECT_EQ(lie.status(), 200);
  EXPECT_TRUE(lie.Header("Content-Type").value().starts_with("text/html"));
  EXPECT_TRUE(lie.body.starts_with("<!DOCTYPE html>"));
}

TEST(LyingReply, AnErrorReplyIsNotLiedAbout) {
  HttpReply missing =
      ParseReply("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n").value().value();
  for (FaultKind kind : {FaultKind::kShort, FaultKind::kOtherRange, FaultKind::kEtag}) {
    EXPECT_FALSE(Lie(kind, kRangeRequest, missing, 0).has_value());
  }
}

}  // namespace
}  // namespace ferry::wan
