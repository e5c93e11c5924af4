#include "storage/s3/s3_errors.h"

#include <gtest/gtest.h>

namespace ferry::internal_s3 {
namespace {

constexpr std::string_view kObjectUrl = "s3://examplebucket/photos/cat.jpg";

http::Response ErrorReply(int status, std::string body) {
  http::Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

// Error bodies as S3 sends them (request and host ids shortened).
constexpr std::string_view kNoSuchKey =
    R"(<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>photos/cat.jpg</Key><RequestId>4442587FB7D0A2F9</RequestId><HostId>xnzLfHEfhQ==</HostId></Error>)";

constexpr std::string_view kSignatureDoesNotMatch =
    R"(<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided. Check your key and signing method.</Message><AWSAccessKeyId>AKIAIOSFODNN7EXAMPLE</AWSAccessKeyId><StringToSign>AWS4-HMAC-SHA256
20130524T000000Z
20130524/us-east-1/s3/aws4_request
7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972</StringToSign><SignatureProvided>f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41</SignatureProvided><StringToSignBytes>41 57 53</StringToSignBytes><CanonicalRequest>GET
/test.txt

host:examplebucket.s3.amazonaws.com
x-amz-security-token:FwoGZXIvYXdzEBYaDExampleSessionToken
</CanonicalRequest><RequestId>7ABC</RequestId><HostId>h0</HostId></Error>)";

constexpr std::string_view kPermanentRedirect =
    R"(<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be addressed using the specified endpoint. Please send all future requests to this endpoint.</Message><Endpoint>examplebucket.s3.eu-west-1.amazonaws.com</Endpoint><Bucket>examplebucket</Bucket><RequestId>X</RequestId><HostId>Y</HostId></Error>)";

constexpr std::string_view kAuthorizationHeaderMalformed =
    R"(<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>AuthorizationHeaderMalformed</Code><Message>The authorization header is malformed; the region 'us-east-1' is wrong; expecting 'eu-central-1'</Message><Region>eu-central-1</Region><RequestId>X</RequestId><HostId>Y</HostId></Error>)";

TEST(S3ErrorsTest, ParsesTheErrorDocument) {
  auto e = ParseS3ErrorBody(kNoSuchKey);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, "NoSuchKey");
  EXPECT_EQ(e->message, "The specified key does not exist.");
  EXPECT_FALSE(ParseS3ErrorBody("").has_value());
  EXPECT_FALSE(ParseS3ErrorBody("<html><body>Bad Gateway</body></html>").has_value());
  EXPECT_FALSE(ParseS3ErrorBody("<Error><Code>broken").has_value());
}

TEST(S3ErrorsTest, MessageIsUrlCodeAndMessage) {
  Status s = S3ErrorToStatus(ErrorReply(404, std::string(kNoSuchKey)), kObjectUrl);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(),
            "s3://examplebucket/photos/cat.jpg: NoSuchKey: The specified key does not exist.");
}

struct CodeCase {
  int status;
  std::string_view code;  // empty: no body (HEAD)
  StatusCode expected;
};

TEST(S3ErrorsTest, CodesAndStatuses) {
  const CodeCase cases[] = {
      {404, "NoSuchKey", StatusCode::kNotFound},
      {404, "NoSuchBucket", StatusCode::kNotFound},
      {404, "NoSuchUpload", StatusCode::kNotFound},
      {404, "", StatusCode::kNotFound},
      {403, "AccessDenied", StatusCode::kPermissionDenied},
      {403, "", StatusCode::kPermissionDenied},
      {403, "InvalidAccessKeyId", StatusCode::kUnauthenticated},
      {403, "SignatureDoesNotMatch", StatusCode::kUnauthenticated},
      {400, "ExpiredToken", StatusCode::kUnauthenticated},
      {403, "RequestTimeTooSkewed", StatusCode::kUnauthenticated},
      {503, "SlowDown", StatusCode::kUnavailable},
      {500, "InternalError", StatusCode::kUnavailable},
      {503, "ServiceUnavailable", StatusCode::kUnavailable},
      {400, "RequestTimeout", StatusCode::kUnavailable},
      {500, "", StatusCode::kUnavailable},
      {503, "", StatusCode::kUnavailable},
      {429, "", StatusCode::kUnavailable},
      {409, "OperationAborted", StatusCode::kAborted},
      {412, "PreconditionFailed", StatusCode::kFailedPrecondition},
      {412, "", StatusCode::kFailedPrecondition},
      {416, "InvalidRange", StatusCode::kOutOfRange},
      {416, "", StatusCode::kOutOfRange},
      {400, "InvalidArgument", StatusCode::kInvalidArgument},
      {400, "MalformedXML", StatusCode::kInvalidArgument},
      {409, "BucketNotEmpty", StatusCode::kUnknown},
      {200, "SomethingNew", StatusCode::kUnknown},
  };
  for (const CodeCase& c : cases) {
    std::string body;
    if (!c.code.empty()) {
      body = "<Error><Code>" + std::string(c.code) + "</Code><Message>m</Message></Error>";
    }
    Status s = S3ErrorToStatus(ErrorReply(c.status, body), kObjectUrl);
    EXPECT_EQ(s.code(), c.expected) << c.status << " " << c.code << ": " << s.ToString();
    EXPECT_TRUE(s.message().starts_with(kObjectUrl)) << s.message();
    if (c.code.empty()) {
      EXPECT_NE(s.message().find("HTTP " + std::to_string(c.status)), std::string::npos);
    } else {
      EXPECT_NE(s.message().find(std::string(c.code) + ": m"), std::string::npos);
    }
  }
}

TEST(S3ErrorsTest, EmptyBodiesSayTheStatus) {
  EXPECT_EQ(S3ErrorToStatus(ErrorReply(404, ""), kObjectUrl).message(),
            "s3://examplebucket/photos/cat.jpg: HTTP 404 Not Found");
  // A proxy's HTML page is not an S3 error: the status decides.
  Status s = S3ErrorToStatus(ErrorReply(502, "<html>Bad Gateway</html>"), kObjectUrl);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "s3://examplebucket/photos/cat.jpg: HTTP 502");
}

TEST(S3ErrorsTest, SignatureDetailsNeverReachTheMessage) {
  Status s = S3ErrorToStatus(ErrorReply(403, std::string(kSignatureDoesNotMatch)), kObjectUrl);
  EXPECT_EQ(s.code(), StatusCode::kUnauthenticated);
  for (std::string_view leak : {"f0e8bdb87c", "7344ae5b7e", "AKIAIOSFODNN7EXAMPLE",
                                "FwoGZXIvYXdzEBYaDExampleSessionToken", "StringToSign"}) {
    EXPECT_EQ(s.message().find(leak), std::string::npos) << leak << " in " << s.message();
  }
  EXPECT_NE(s.message().find("SignatureDoesNotMatch"), std::string::npos);
}

TEST(S3ErrorsTest, WrongRegionHints) {
  http::Response r = ErrorReply(301, std::string(kPermanentRedirect));
  r.headers.Set("x-amz-bucket-region", "eu-west-1");
  Status s = S3ErrorToStatus(r, kObjectUrl);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("set AWS_REGION=eu-west-1"), std::string::npos) << s.message();

  s = S3ErrorToStatus(ErrorReply(400, std::string(kAuthorizationHeaderMalformed)), kObjectUrl);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("set AWS_REGION=eu-central-1"), std::string::npos) << s.message();

  // HEAD: no body, only the header.
  r = ErrorReply(301, "");
  r.headers.Set("x-amz-bucket-region", "ap-northeast-1");
  s = S3ErrorToStatus(r, kObjectUrl);
  EXPECT_NE(s.message().find("HTTP 301"), std::string::npos);
  EXPECT_NE(s.message().find("ap-northeast-1"), std::string::npos);
}

TEST(S3ErrorsTest, LongMessagesAreCut) {
  const std::string body =
      "<Error><Code>InternalError</Code><Message>" + std::string(5000, 'x') + "</Message></Error>";
  Status s = S3ErrorToStatus(ErrorReply(500, body), kObjectUrl);
  EXPECT_LT(s.message().size(), 700u);
}

}  // namespace
}  // namespace ferry::internal_s3
