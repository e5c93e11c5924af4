#include "storage/http/resumable_get.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "storage/http/recording_transport.h"

namespace ferry::http {
namespace {

using ::testing::HasSubstr;

const std::string kObject = "0123456789abcdefghij";  // 20 bytes

// A server for kObject that honours Range/If-Match and can cut bodies short.
class FakeServer {
 public:
  // Bytes to drop from the end of the next `cuts` responses (a broken connection that the
  // transport did not notice).
  int cuts = 0;
  size_t cut_bytes = 0;
  std::string etag = "v1";
  bool ignore_range = false;
  bool widen_to_end = false;  // answer every range up to the end of the object (s3rver's "0-0")

  Result<Response> operator()(const RecordedRequest& r) {
    Response response;
    if (auto im = r.headers.Get("If-Match"); im && *im != "\"" + etag + "\"") {
      response.status = 412;
      return response;
    }
    size_t begin = 0, end = kObject.size();
    auto range = r.headers.Get("Range");
    if (range && !ignore_range) {
      std::string spec(range->substr(6));  // "bytes="
      const size_t dash = spec.find('-');
      begin = std::stoul(spec.substr(0, dash));
      if (dash + 1 < spec.size() && !widen_to_end) {
        end = std::min(end, std::stoul(spec.substr(dash + 1)) + 1);
      }
      response.status = 206;
      response.headers.Add("Content-Range",
                           fmt::format("bytes {}-{}/{}", begin, end - 1, kObject.size()));
    } else {
      response.status = 200;
    }
    response.headers.Add("Content-Length", std::to_string(end - begin));
    response.headers.Add("ETag", "\"" + etag + "\"");
    response.body = kObject.substr(begin, end - begin);
    if (cuts > 0) {
      --cuts;
      response.body.resize(response.body.size() - std::min(cut_bytes, response.body.size()));
    }
    return response;
  }
};

ResumableGetOptions Options() {
  ResumableGetOptions o;
  o.url = "http://example/key";
  o.retry = RetryPolicy{.max_attempts = 5,
                        .initial_backoff = std::chrono::milliseconds(1),
                        .max_backoff = std::chrono::milliseconds(1)};
  o.build = [](const GetAttempt&, Headers headers) -> Result<Request> {
    Request r;
    r.url = "http://example/key";
    r.headers = std::move(headers);
    return r;
  };
  o.map_error = [](const Response& r) {
    return StatusFromHttp(r.status, "http://example/key", "");
  };
  return o;
}

struct Collected {
  std::string bytes;
  ByteSink sink() {
    return [this](std::string_view c) {
      bytes.append(c);
      return Status::Ok();
    };
  }
};

TEST(ResumableGet, ReadsAWholeObject) {
  FakeServer server;
  RecordingTransport transport(std::ref(server));
  Collected out;
  auto info = ResumableGet(transport, Options(), ByteRange{}, out.sink());
  ASSERT_TRUE(info.has_value()) << info.status().ToString();
  EXPECT_EQ(out.bytes, kObject);
  EXPECT_EQ(info->size, 20u);
  EXPECT_EQ(info->etag, "v1");
  ASSERT_EQ(transport.requests().size(), 1u);
  EXPECT_FALSE(transport.requests()[0].headers.Get("Range").has_value());
}

TEST(ResumableGet, ReadsARange) {
  FakeServer server;
  RecordingTransport transport(std::ref(server));
  Collected out;
  auto info = ResumableGet(transport, Options(), ByteRange{5, 4}, out.sink());
  ASSERT_TRUE(info.has_value()) << info.status().ToString();
  EXPECT_EQ(out.bytes, "5678");
  EXPECT_EQ(info->size, 20u);
  EXPECT_EQ(transport.requests()[0].headers.Get("Range").value(), "bytes=5-8");
  // A range running past the end stops at the end.
  Collected tail;
  ASSERT_TRUE(ResumableGet(transport, Options(), ByteRange{18, 10}, tail.sink()).has_value());
  EXPECT_EQ(tail.bytes, "ij");
}

TEST(ResumableGet, ResumesOnlyTheMissingBytesPinnedToTheEtag) {
  FakeServer server;
  server.cuts = 2;
  server.cut_bytes = 7;
  RecordingTransport transport(std::ref(server));
  Collected out;
  auto info = ResumableGet(transport, Options(), ByteRange{}, out.sink());
  ASSERT_TRUE(info.has_value()) << info.status().ToString();
  EXPECT_EQ(out.bytes, kObject);  // every byte exactly once
  const auto requests = transport.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].headers.Get("Range").value(), "bytes=13-");
  EXPECT_EQ(requests[1].headers.Get("If-Match").value(), "\"v1\"");
  // The second response (7 bytes) lost all 7: the third asks for the same bytes again.
  EXPECT_EQ(requests[2].headers.Get("Range").value(), "bytes=13-");
}

TEST(ResumableGet, AConnectionLostAfterTheLastByteIsNotAskedAgain) {
  // All 20 bytes arrive, then the exchange breaks (a stall or reset before the end of the
  // response): a second request would ask for bytes=20-, which servers refuse with 416.
  FakeServer server;
  RecordingTransport transport([&](const RecordedRequest& r) -> Result<Response> {
    auto response = server(r);
    if (response) {
      response->headers.Add(std::string(RecordingTransport::kBreakAfterHeader),
                            std::to_string(kObject.size()));
    }
    return response;
  });
  Collected out;
  auto info = ResumableGet(transport, Options(), ByteRange{}, out.sink());
  ASSERT_TRUE(info.has_value()) << info.status().ToString();
  EXPECT_EQ(out.bytes, kObject);
  EXPECT_EQ(transport.requests().size(), 1u);
  // The same for a range that ends before the object does.
  Collected part;
  ASSERT_TRUE(ResumableGet(transport, Options(), ByteRange{4, 6}, part.sink()).has_value());
  EXPECT_EQ(part.bytes, "456789");
  EXPECT_EQ(transport.requests().size(), 2u);
}

TEST(ResumableGet, WithoutAnEtagAResumeIsPinnedToLastModified) {
  int calls = 0;
  std::string modified = "Wed, 02 Dec 2026 10:00:00 GMT";
  RecordingTransport transport([&](const RecordedRequest& r) -> Result<Response> {
    ++calls;
    Response response;
    if (auto since = r.headers.Get("If-Unmodified-Since"); since && *since != modified) {
      response.status = 412;
      return response;
    }
    response.status = calls == 1 ? 200 : 206;
    const size_t begin = calls == 1 ? 0 : 10;
    if (calls > 1) response.headers.Add("Content-Range", fmt::format("bytes 10-19/20"));
    response.headers.Add("Content-Length", std::to_string(kObject.size() - begin));
    response.headers.Add("Last-Modified", modified);
    response.body = kObject.substr(begin, calls == 1 ? 10 : std::string::npos);  // 1st: cut
    return response;
  });
  Collected out;
  auto info = ResumableGet(transport, Options(), ByteRange{}, out.sink());
  ASSERT_TRUE(info.has_value()) << info.status().ToString();
  EXPECT_EQ(out.bytes, kObject);
  const auto requests = transport.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_FALSE(requests[0].headers.Get("If-Unmodified-Since").has_value());
  EXPECT_EQ(requests[1].headers.Get("If-Unmodified-Since").value(), modified);
  EXPECT_FALSE(requests[1].headers.Get("If-Match").has_value());

  // The same break, but the file was replaced in between: an error, not a splice.
  calls = 0;
  Collected replaced;
  auto second = ResumableGet(transport, Options(), ByteRange{}, [&](std::string_view c) {
    modified = "Wed, 02 Dec 2026 10:00:05 GMT";  // replaced once the first bytes have come
    return replaced.sink()(c);
  });
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("changed while it was being read"));
}

TEST(ResumableGet, AConnectionLostMidBodyResumesPinnedToTheEtag) {
  FakeServer server;
  int calls = 0;
  RecordingTransport transport([&](const RecordedRequest& r) {
    auto response = server(r);
    if (++calls == 1)
      response->headers.Add(std::string(RecordingTransport::kBreakAfterHeader), "6");
    return response;
  });
  Collected out;
  auto info = ResumableGet(transport, Options(), ByteRange{}, out.sink());
  ASSERT_TRUE(info.has_value()) << info.status().ToString();
  EXPECT_EQ(out.bytes, kObject);
  const auto requests = transport.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].headers.Get("Range").value(), "bytes=6-");
  // Learned from the broken response's headers, before its body failed.
  EXPECT_EQ(requests[1].headers.Get("If-Match").value(), "\"v1\"");
}

TEST(ResumableGet, AnObjectReplacedAfterAConnectionLossIsAnError) {
  FakeServer server;
  int calls = 0;
  RecordingTransport transport([&](const RecordedRequest& r) {
    auto response = server(r);
    if (++calls == 1) {
      response->headers.Add(std::string(RecordingTransport::kBreakAfterHeader), "6");
      server.etag = "v2";  // replaced (same size) while the connection was down
    }
    return response;
  });
  Collected out;
  auto info = ResumableGet(transport, Options(), ByteRange{}, out.sink());
  ASSERT_FALSE(info.has_value());
  EXPECT_EQ(info.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(out.bytes, kObject.substr(0, 6));
}

TEST(ResumableGet, AResumedRangeKeepsItsEnd) {
  FakeServer server;
  server.cuts = 1;
  server.cut_bytes = 3;
  RecordingTransport transport(std::ref(server));
  Collected out;
  ASSERT_TRUE(ResumableGet(transport, Options(), ByteRange{2, 10}, out.sink()).has_value());
  EXPECT_EQ(out.bytes, "23456789ab");
  EXPECT_EQ(transport.requests()[1].headers.Get("Range").value(), "bytes=9-11");
}

TEST(ResumableGet, AnObjectReplacedMidReadIsAnErrorNotASplice) {
  FakeServer server;
  server.cuts = 1;
  server.cut_bytes = 5;
  RecordingTransport transport([&](const RecordedRequest& r) {
    auto response = server(r);
    server.etag = "v2";  // replaced after the first response
    return response;
  });
  Collected out;
  auto info = ResumableGet(transport, Options(), ByteRange{}, out.sink());
  ASSERT_FALSE(info.has_value());
  EXPECT_EQ(info.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(info.error().message(), HasSubstr("changed while it was being read"));
  EXPECT_EQ(out.bytes, kObject.substr(0, 15));
}

TEST(ResumableGet, GivesUpWhenTheBodyKeepsBreaking) {
  FakeServer server;
  server.cuts = 100;
  server.cut_bytes = 20;  // nothing ever arrives
  RecordingTransport transport(std::ref(server));
  Collected out;
  auto info = ResumableGet(transport, Options(), ByteRange{}, out.sink());
  ASSERT_FALSE(info.has_value());
  EXPECT_EQ(info.error().code(), StatusCode::kUnavailable);
  EXPECT_THAT(info.error().message(), HasSubstr("gave up after 5 attempts"));
  EXPECT_THAT(info.error().message(), HasSubstr("http://example/key"));
  EXPECT_EQ(transport.requests().size(), 5u);
}

TEST(ResumableGet, ErrorsGoThroughTheStoreMapping) {
  RecordingTransport transport([](const RecordedRequest&) -> Result<Response> {
    return Response{404, {}, "<Error><Code>NoSuchKey</Code></Error>"};
  });
  Collected out;
  auto info = ResumableGet(transport, Options(), ByteRange{}, out.sink());
  ASSERT_FALSE(info.has_value());
  EXPECT_EQ(info.error().code(), StatusCode::kNotFound);
  EXPECT_TRUE(out.bytes.empty());
  EXPECT_EQ(transport.requests().size(), 1u);  // not retried
}

TEST(ResumableGet, ExtraBytesFromAServerThatWidensTheRangeAreCutOff) {
  FakeServer server;
  server.widen_to_end = true;
  RecordingTransport transport(std::ref(server));
  Collected out;
  ASSERT_TRUE(ResumableGet(transport, Options(), ByteRange{0, 1}, out.sink()).has_value());
  EXPECT_EQ(out.bytes, "0");
  Collected mid;
  ASSERT_TRUE(ResumableGet(transport, Options(), ByteRange{4, 3}, mid.sink()).has_value());
  EXPECT_EQ(mid.bytes, "456");
}

TEST(ResumableGet, AWholeObjectAnswerServesARangeThatStartsAtZero) {
  FakeServer server;
  server.ignore_range = true;
  RecordingTransport transport(std::ref(server));
  Collected out;
  auto info = ResumableGet(transport, Options(), ByteRange{0, 5}, out.sink());
  ASSERT_TRUE(info.has_value()) << info.status().ToString();
  EXPECT_EQ(out.bytes, "01234");
  Collected mid;
  auto bad = ResumableGet(transport, Options(), ByteRange{3, 5}, mid.sink());
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(mid.bytes.empty());
}

TEST(ResumableGet, AServerIgnoringRangeOnAResumeIsDataLoss) {
  FakeServer server;
  server.cuts = 1;
  server.cut_bytes = 5;
  server.ignore_range = true;
  RecordingTransport transport(std::ref(server));
  Collected out;
  auto info = ResumableGet(transport, Options(), ByteRange{}, out.sink());
  ASSERT_FALSE(info.has_value());
  EXPECT_EQ(info.error().code(), StatusCode::kDataLoss);
}

TEST(ResumableGet, ASinkErrorStopsTheRead) {
  FakeServer server;
  RecordingTransport transport(std::ref(server));
  auto info = ResumableGet(transport, Options(), ByteRange{},
                           [](std::string_view) { return ResourceExhaustedError("disk full"); });
  ASSERT_FALSE(info.has_value());
  EXPECT_EQ(info.error().code(), StatusCode::kResourceExhausted);
}

TEST(ResumableGet, ZeroLengthRangeMakesNoRequest) {
  RecordingTransport transport;
  Collected out;
  ASSERT_TRUE(ResumableGet(transport, Options(), ByteRange{3, 0}, out.sink()).has_value());
  EXPECT_TRUE(transport.requests().empty());
}

TEST(ContentHelpers, ParseTotalsAndEtags) {
  EXPECT_EQ(TotalFromContentRange("bytes 0-9/20").value(), 20u);
  EXPECT_FALSE(TotalFromContentRange("bytes 0-9/*").has_value());
  EXPECT_FALSE(TotalFromContentRange("garbage").has_value());
  EXPECT_EQ(UnquoteEtag("\"abc\""), "abc");
  EXPECT_EQ(UnquoteEtag("W/\"abc\""), "abc");
  EXPECT_EQ(UnquoteEtag("abc"), "abc");
  EXPECT_EQ(StatusFromHttp(503, "u", "").code(), StatusCode::kUnavailable);
  EXPECT_EQ(StatusFromHttp(403, "u", "").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(StatusFromHttp(416, "u", "").code(), StatusCode::kOutOfRange);
  EXPECT_THAT(StatusFromHttp(500, "http://x/y", "Boom").message(),
              HasSubstr("http://x/y: HTTP 500: Boom"));
}

int64_t UnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

TEST(ObjectInfoFromHeaders, ReadsSizeEtagAndMtime) {
  Headers h;
  h.Set("Content-Length", "434234");
  h.Set("ETag", "\"fba9dede5f27731c9771645a39863328\"");
  h.Set("Last-Modified", "Sun, 1 Jan 2006 12:00:00 GMT");
  auto info = ObjectInfoFromHeaders(h, "my-image.jpg", "s3://b/my-image.jpg");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->key, "my-image.jpg");
  EXPECT_EQ(info->size, 434234u);
  EXPECT_EQ(info->etag, "fba9dede5f27731c9771645a39863328");
  ASSERT_TRUE(info->mtime);
  EXPECT_EQ(UnixSeconds(*info->mtime), 1136116800);

  // Azure's etags are quoted hex of another shape; the key may hold '/'.
  h.Set("ETag", "\"0x8DC0123456789AB\"");
  h.Set("Last-Modified", "Tue, 07 Jan 2025 12:34:56 GMT");
  info = ObjectInfoFromHeaders(h, "a/b", "az://data/a/b");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->key, "a/b");
  EXPECT_EQ(info->etag, "0x8DC0123456789AB");
  ASSERT_TRUE(info->mtime);
  EXPECT_EQ(UnixSeconds(*info->mtime), 1736253296);
}

TEST(ObjectInfoFromHeaders, WithoutAValidLengthIsDataLossNamingTheUrl) {
  Headers h;
  h.Set("ETag", "\"e\"");
  for (const char* length : {"12x", "", "-1", " 12"}) {
    h.Set("Content-Length", length);
    auto bad = ObjectInfoFromHeaders(h, "k", "s3://b/k");
    ASSERT_FALSE(bad.ok()) << length;
    EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
    EXPECT_THAT(bad.status().message(), HasSubstr("s3://b/k"));
  }
  h.Remove("Content-Length");
  EXPECT_EQ(ObjectInfoFromHeaders(h, "k", "s3://b/k").status().code(), StatusCode::kDataLoss);
}

TEST(ObjectInfoFromHeaders, AnUnreadableDateLeavesNoMtime) {
  Headers h;
  h.Set("Content-Length", "0");
  h.Set("Last-Modified", "yesterday");
  auto info = ObjectInfoFromHeaders(h, "k", "s3://b/k");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size, 0u);
  EXPECT_FALSE(info->mtime);
  EXPECT_EQ(info->etag, "");
}

TEST(QueryParam, FindsTheNamedParameterDecoded) {
  const std::string url = "https://h/p?comp=block&blockid=ab%2Bc%3D&flag&empty=&x=1";
  EXPECT_EQ(QueryParam(url, "comp"), "block");
  EXPECT_EQ(QueryParam(url, "blockid"), "ab+c=");
  EXPECT_EQ(QueryParam(url, "x"), "1");
  EXPECT_EQ(QueryParam(url, "flag"), "");
  EXPECT_EQ(QueryParam(url, "empty"), "");
  EXPECT_EQ(QueryParam(url, "missing"), "");
  EXPECT_EQ(QueryParam(url, "com"), "");  // names match whole
  EXPECT_EQ(QueryParam("https://h/p", "comp"), "");
}

}  // namespace
}  // namespace ferry::http
