// The S3 store's multipart uploads against a recording transport: create, parts in parallel,
// complete with the parts in order; abort when a part fails; an error inside a 200 Complete,
// retried or fatal; and a Complete whose reply was lost.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "base/mutex.h"
#include "storage/http/url_encoding.h"
#include "storage/s3/s3_store_testutil.h"
#include "storage/sha256.h"

namespace ferry::internal_s3 {
namespace {

using http::QueryParam;
using http::RecordedRequest;
using http::Response;
using s3_test::ExpectNoSecrets;
using s3_test::Reply;
using s3_test::S3StoreTest;
using s3_test::SmallParts;

struct MultipartServer {
  Mutex mu;
  std::map<int, std::string> parts GUARDED_BY(mu);  // part number -> body
  std::string complete_body GUARDED_BY(mu);
  int aborts GUARDED_BY(mu) = 0;
  int fail_part = 0;  // answer this part with 403; set before the store runs

  Result<Response> Handle(const RecordedRequest& r) EXCLUDES(mu) {
    MutexLock lock(mu);
    if (r.method == "POST" && r.url.ends_with("?uploads")) {
      return Reply(200,
                   "<InitiateMultipartUploadResult><Bucket>bucket</Bucket><Key>big</Key>"
                   "<UploadId>up/1+2=</UploadId></InitiateMultipartUploadResult>");
    }
    if (r.method == "PUT") {
      EXPECT_EQ(QueryParam(r.url, "uploadId"), "up/1+2=");
      const int number = std::stoi(QueryParam(r.url, "partNumber"));
      if (number == fail_part) {
        return Reply(403,
                     "<Error><Code>AccessDenied</Code><Message>Access Denied</Message>"
                     "</Error>");
      }
      parts[number] = r.body;
      return Reply(200, "", {{"ETag", fmt::format("\"etag{}\"", number)}});
    }
    if (r.method == "POST") {
      complete_body = r.body;
      return Reply(200,
                   "<CompleteMultipartUploadResult><ETag>\"x-3\"</ETag>"
                   "</CompleteMultipartUploadResult>");
    }
    if (r.method == "DELETE") {
      ++aborts;
      return Reply(204);
    }
    return Reply(400);
  }
};

TEST_F(S3StoreTest, MultipartCreatePartsComplete) {
  MultipartServer server;
  auto store =
      Make(SmallParts(Config()), [&](const RecordedRequest& r) { return server.Handle(r); });
  ASSERT_TRUE(store->Put("big", "0123456789A").ok());  // 11 bytes: parts of 4, 4, 3

  MutexLock lock(server.mu);
  EXPECT_EQ(server.parts, (std::map<int, std::string>{{1, "0123"}, {2, "4567"}, {3, "89A"}}));
  EXPECT_EQ(server.complete_body,
            "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
            "<Part><PartNumber>1</PartNumber><ETag>&quot;etag1&quot;</ETag></Part>"
            "<Part><PartNumber>2</PartNumber><ETag>&quot;etag2&quot;</ETag></Part>"
            "<Part><PartNumber>3</PartNumber><ETag>&quot;etag3&quot;</ETag></Part>"
            "</CompleteMultipartUpload>");
  EXPECT_EQ(server.aborts, 0);

  const auto requests = transport_->requests();
  ASSERT_EQ(requests.size(), 5u);
  EXPECT_EQ(requests.front().method, "POST");
  EXPECT_EQ(requests.front().url, "http://127.0.0.1:9000/bucket/big?uploads");
  EXPECT_EQ(requests.back().method, "POST");
  EXPECT_EQ(requests.back().url, "http://127.0.0.1:9000/bucket/big?uploadId=up%2F1%2B2%3D");
  std::set<std::string> part_urls;
  for (size_t i = 1; i + 1 < requests.size(); ++i) {
    EXPECT_EQ(requests[i].method, "PUT");
    // Over http each part's body is hashed and signed.
    EXPECT_EQ(requests[i].headers.Get("x-amz-content-sha256").value_or(""),
              Sha256Hex(requests[i].body));
    part_urls.insert(requests[i].url);
  }
  EXPECT_EQ(part_urls,
            (std::set<std::string>{
                "http://127.0.0.1:9000/bucket/big?partNumber=1&uploadId=up%2F1%2B2%3D",
                "http://127.0.0.1:9000/bucket/big?partNumber=2&uploadId=up%2F1%2B2%3D",
                "http://127.0.0.1:9000/bucket/big?partNumber=3&uploadId=up%2F1%2B2%3D"}));
}

TEST_F(S3StoreTest, MultipartAbortsWhenAPartFails) {
  MultipartServer server;
  server.fail_part = 2;
  auto store =
      Make(SmallParts(Config()), [&](const RecordedRequest& r) { return server.Handle(r); });
  Status s = store->Put("big", "0123456789A");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(),
            "s3://bucket/big: part 2 of 3: AccessDenied: Access Denied (if bucket is a Requester "
            "Pays bucket, name it in FERRY_S3_REQUESTER_PAYS)");
  MutexLock lock(server.mu);
  EXPECT_EQ(server.aborts, 1);
  EXPECT_TRUE(server.complete_body.empty());
  const auto requests = transport_->requests();
  EXPECT_EQ(requests.back().method, "DELETE");
  EXPECT_EQ(requests.back().url, "http://127.0.0.1:9000/bucket/big?uploadId=up%2F1%2B2%3D");
  ExpectNoSecrets(s, requests);
}

TEST_F(S3StoreTest, MultipartErrorInsideA200CompleteIsRetried) {
  MultipartServer server;
  int completes = 0;
  auto store = Make(SmallParts(Config()), [&](const RecordedRequest& r) -> Result<Response> {
    if (r.method == "POST" && r.url.find("uploadId=") != std::string::npos && ++completes == 1) {
      return Reply(200,
                   "<Error><Code>InternalError</Code><Message>We encountered an internal "
                   "error. Please try again.</Message></Error>");
    }
    return server.Handle(r);
  });
  ASSERT_TRUE(store->Put("big", "0123456789A").ok());
  EXPECT_EQ(completes, 2);
  MutexLock lock(server.mu);
  EXPECT_EQ(server.aborts, 0);
}

TEST_F(S3StoreTest, MultipartPermanentErrorInsideA200CompleteAborts) {
  MultipartServer server;
  auto store = Make(SmallParts(Config()), [&](const RecordedRequest& r) -> Result<Response> {
    if (r.method == "POST" && r.url.find("uploadId=") != std::string::npos) {
      return Reply(200,
                   "<Error><Code>InvalidPart</Code><Message>One or more of the specified "
                   "parts could not be found.</Message></Error>");
    }
    return server.Handle(r);
  });
  Status s = store->Put("big", "0123456789A");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("InvalidPart"), std::string::npos) << s.message();
  MutexLock lock(server.mu);
  EXPECT_EQ(server.aborts, 1);
}

TEST_F(S3StoreTest, MultipartCompleteWhoseReplyWasLost) {
  // The first Complete reached the server but its reply did not come back; the retry then finds
  // no such upload. The object is there, with our size and part count: the write succeeded.
  MultipartServer server;
  int completes = 0;
  auto store = Make(SmallParts(Config()), [&](const RecordedRequest& r) -> Result<Response> {
    if (r.method == "POST" && r.url.find("uploadId=") != std::string::npos) {
      if (++completes == 1) return UnavailableError("connection reset");
      return Reply(404, "<Error><Code>NoSuchUpload</Code><Message>gone</Message></Error>");
    }
    if (r.method == "HEAD") {
      return Reply(200, "", {{"Content-Length", "11"}, {"ETag", "\"abc-3\""}});
    }
    return server.Handle(r);
  });
  EXPECT_TRUE(store->Put("big", "0123456789A").ok());
  MutexLock lock(server.mu);
  EXPECT_EQ(server.aborts, 0);
}

std::string ListPage(const std::vector<std::string>& keys, const std::vector<std::string>& prefixes,
                     const std::string& next_token) {
  std::string xml = "<ListBucketResult><EncodingType>url</EncodingType>";
  xml += fmt::format("<IsTruncated>{}</IsTruncated>", next_token.empty() ? "false" : "true");
  if (!next_token.empty())
    xml += "<NextContinuationToken>" + next_token + "</NextContinuationToken>";
  for (const auto& k : keys) {
    xml += "<Contents><Key>" + http::PercentEncode(k, true) + "</Key><Size>" +
           std::to_string(k.size()) + "</Size><ETag>&quot;" + k +
           "&quot;</ETag>"
           "<LastModified>2024-01-01T00:00:00.000Z</LastModified></Contents>";
  }
  for (const auto& p : prefixes) {
    xml += "<CommonPrefixes><Prefix>" + http::PercentEncode(p, true) + "</Prefix></CommonPrefixes>";
  }
  return xml + "</ListBucketResult>";
}

}  // namespace
}  // namespace ferry::internal_s3
