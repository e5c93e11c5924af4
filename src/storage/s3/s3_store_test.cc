#include "storage/s3/s3_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>

#include "ferry/storage/registry.h"
#include "storage/http/recording_transport.h"
#include "storage/http/url_encoding.h"
#include "storage/s3/s3_signer.h"
#include "storage/s3/s3_store_testutil.h"
#include "storage/testing/fake_env_testutil.h"

namespace ferry::internal_s3 {
namespace {

using namespace std::chrono_literals;
using http::QueryParam;
using http::RecordedRequest;
using http::Response;
using s3_test::ExpectNoSecrets;
using s3_test::Reply;
using s3_test::S3StoreTest;
using s3_test::Signature;
using s3_test::SmallParts;

using s3_test::kSecret;
using s3_test::kToken;

TEST_F(S3StoreTest, HeadSignsAndParses) {
  auto store = Make(Config(), [](const RecordedRequest&) -> Result<Response> {
    return Reply(200, "",
                 {{"Content-Length", "1234"},
                  {"ETag", "\"d41d8cd98f00b204e9800998ecf8427e\""},
                  {"Last-Modified", "Sat, 09 Mar 2024 12:00:00 GMT"}});
  });
  auto info = store->Head("dir/my file+1.bin");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->key, "dir/my file+1.bin");
  EXPECT_EQ(info->size, 1234u);
  EXPECT_EQ(info->etag, "d41d8cd98f00b204e9800998ecf8427e");
  ASSERT_TRUE(info->mtime.has_value());

  const auto requests = transport_->requests();
  ASSERT_EQ(requests.size(), 1u);
  const RecordedRequest& r = requests[0];
  EXPECT_EQ(r.method, "HEAD");
  EXPECT_EQ(r.url, "http://127.0.0.1:9000/bucket/dir/my%20file%2B1.bin");
  EXPECT_EQ(r.headers.Get("Host").value_or(""), "127.0.0.1:9000");
  EXPECT_EQ(r.headers.Get("x-amz-date").value_or(""), "20240309T123456Z");
  EXPECT_EQ(r.headers.Get("x-amz-content-sha256").value_or(""), kEmptyPayloadSha256);
  EXPECT_EQ(r.headers.Get("x-amz-security-token").value_or(""), kToken);
  EXPECT_TRUE(r.headers.Get("Authorization")
                  .value_or("")
                  .starts_with("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20240309/"
                               "us-east-1/s3/aws4_request, SignedHeaders=host;"
                               "x-amz-content-sha256;x-amz-date;x-amz-security-token, "
                               "Signature="));

  // The recorded request verifies: signing it again gives the same signature.
  http::Request again;
  again.method = r.method;
  again.url = r.url;
  again.headers = r.headers;
  SigV4Signer signer(Config().credentials, "us-east-1");
  ASSERT_TRUE(signer.Sign(again, kEmptyPayloadSha256, Config().clock()).ok());
  EXPECT_EQ(again.headers.Get("Authorization"), r.headers.Get("Authorization"));
}

TEST_F(S3StoreTest, HeadOfAMissingKeyIsNotFound) {
  auto store = Make(Config(), [](const RecordedRequest&) -> Result<Response> {
    return Reply(404);  // HEAD replies have no body
  });
  auto info = store->Head("nope");
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(info.status().message(), "s3://bucket/nope: HTTP 404 Not Found");
  EXPECT_EQ(transport_->requests().size(), 1u);  // not retried
}

// A HEAD reply has no body: a refused HEAD learns its reason from the same request as a GET.
TEST_F(S3StoreTest, ARefusedHeadNamesTheReasonAGetReplyGives) {
  auto store = Make(Config(), [](const RecordedRequest& r) -> Result<Response> {
    if (r.method == "HEAD") return Reply(403);
    return Reply(403,
                 "<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we "
                 "calculated does not match the signature you provided.</Message>"
                 "<StringToSign>AWS4-HMAC-SHA256</StringToSign></Error>");
  });
  const Status s = store->Head("a/b").status();
  EXPECT_EQ(s.code(), StatusCode::kUnauthenticated) << s.ToString();
  EXPECT_EQ(s.message(),
            "s3://bucket/a/b: SignatureDoesNotMatch: The request signature we calculated does not "
            "match the signature you provided.");
  ExpectNoSecrets(s, transport_->requests());
  const auto requests = transport_->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].method, "GET");
  EXPECT_EQ(requests[1].url, requests[0].url);
  EXPECT_EQ(requests[1].headers.Get("Range").value_or(""), "bytes=0-0");
  EXPECT_FALSE(Signature(requests[1]).empty());
}

// Only a GET refused alike explains a HEAD: a GET that reads (or fails otherwise) leaves the
// HEAD's own status, and a missing key needs no explaining.
TEST_F(S3StoreTest, ARefusedHeadKeepsItsStatusWhenTheGetIsNotRefusedAlike) {
  for (int get_status : {206, 416, 404}) {
    SCOPED_TRACE(get_status);
    auto store = Make(Config(), [&](const RecordedRequest& r) -> Result<Response> {
      if (r.method == "HEAD") return Reply(403);
      return Reply(get_status, get_status == 206 ? "x" : "<Error><Code>X</Code></Error>");
    });
    const Status s = store->Head("k").status();
    EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
    EXPECT_EQ(s.message(), "s3://bucket/k: HTTP 403 Forbidden");
  }
  auto store =
      Make(Config(), [](const RecordedRequest&) -> Result<Response> { return Reply(404); });
  EXPECT_EQ(store->Head("k").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(transport_->requests().size(), 1u);
}

TEST_F(S3StoreTest, TransientErrorsAreRetriedAndResigned) {
  int calls = 0;
  auto store = Make(Config(), [&](const RecordedRequest&) -> Result<Response> {
    if (++calls == 1) return UnavailableError("GET http://127.0.0.1:9000/bucket/k: reset");
    if (calls == 2) {
      return Reply(503,
                   "<Error><Code>SlowDown</Code><Message>Please reduce your request rate."
                   "</Message></Error>");
    }
    return Reply(200, "", {{"Content-Length", "1"}});
  });
  auto info = store->Head("k");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(transport_->requests().size(), 3u);
}

TEST_F(S3StoreTest, TransportFailuresNameTheObjectOnce) {
  S3StoreConfig config = Config();
  config.retry.max_attempts = 2;
  auto store = Make(config, [](const RecordedRequest& r) -> Result<Response> {
    return UnavailableError(r.method + " " + r.url + ": Couldn't connect to server");
  });
  for (const Status& s :
       {store->Head("a b").status(), store->Get("a b").status(), store->Put("a b", "x"),
        store->Remove("a b"), store->List("a b", true).status()}) {
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
    EXPECT_TRUE(s.message().starts_with("s3://bucket/a b: ")) << s.message();
    EXPECT_EQ(s.message().find("s3://bucket/a b", 1), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("gave up after 2 attempts"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("http://127.0.0.1:9000/bucket"), std::string::npos) << s.message();
  }
}

TEST_F(S3StoreTest, ReadUsesRangesAndResumesPinnedToTheEtag) {
  int calls = 0;
  auto store = Make(Config(), [&](const RecordedRequest&) -> Result<Response> {
    if (++calls == 1) {
      // The body stops after 4 of the 10 bytes asked for.
      return Reply(206, "abcd", {{"Content-Range", "bytes 10-19/100"}, {"ETag", "\"v1\""}});
    }
    return Reply(206, "efghij", {{"Content-Range", "bytes 14-19/100"}, {"ETag", "\"v1\""}});
  });
  std::string got;
  auto info = store->Read("data/shard.mds", ByteRange{10, 10}, [&](std::string_view chunk) {
    got.append(chunk);
    return Status::Ok();
  });
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(got, "abcdefghij");
  EXPECT_EQ(info->key, "data/shard.mds");
  EXPECT_EQ(info->size, 100u);
  EXPECT_EQ(info->etag, "v1");

  const auto requests = transport_->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "GET");
  EXPECT_EQ(requests[0].url, "http://127.0.0.1:9000/bucket/data/shard.mds");
  EXPECT_EQ(requests[0].headers.Get("Range").value_or(""), "bytes=10-19");
  EXPECT_FALSE(requests[0].headers.Get("If-Match"));
  EXPECT_EQ(requests[1].headers.Get("Range").value_or(""), "bytes=14-19");
  EXPECT_EQ(requests[1].headers.Get("If-Match").value_or(""), "\"v1\"");
  // Range and If-Match are signed like every other header.
  EXPECT_NE(requests[1].headers.Get("Authorization").value_or("").find("if-match;range"),
            std::string::npos);
}

TEST_F(S3StoreTest, ReadOfAMissingKeyNamesTheUrl) {
  auto store = Make(Config(), [](const RecordedRequest&) -> Result<Response> {
    return Reply(404,
                 "<Error><Code>NoSuchKey</Code><Message>The specified key does not exist."
                 "</Message></Error>");
  });
  auto got = store->Get("missing.bin");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(got.status().message(),
            "s3://bucket/missing.bin: NoSuchKey: The specified key does not exist.");
}

TEST_F(S3StoreTest, SmallWriteIsOnePutWithTheBodyHashOverHttp) {
  auto store = Make(Config(), [](const RecordedRequest&) -> Result<Response> {
    return Reply(200, "", {{"ETag", "\"e\""}});
  });
  ASSERT_TRUE(store->Put("out/a b.txt", "Welcome to Amazon S3.").ok());
  const auto requests = transport_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "PUT");
  EXPECT_EQ(requests[0].url, "http://127.0.0.1:9000/bucket/out/a%20b.txt");
  EXPECT_EQ(requests[0].body, "Welcome to Amazon S3.");
  EXPECT_EQ(requests[0].headers.Get("x-amz-content-sha256").value_or(""),
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
}

TEST_F(S3StoreTest, OverHttpsBodiesAreUnsignedAndHostsVirtual) {
  S3StoreConfig config = Config();
  config.endpoint = AwsEndpoint("eu-west-1");
  config.region = "eu-west-1";
  auto store = Make(config, [](const RecordedRequest&) -> Result<Response> { return Reply(200); });
  ASSERT_TRUE(store->Put("k", "data").ok());
  const auto requests = transport_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].url, "https://bucket.s3.eu-west-1.amazonaws.com/k");
  EXPECT_EQ(requests[0].headers.Get("Host").value_or(""), "bucket.s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(requests[0].headers.Get("x-amz-content-sha256").value_or(""), kUnsignedPayload);
}

// A fake S3 multipart endpoint: records parts, answers Create and Complete.
TEST_F(S3StoreTest, ListFollowsContinuationTokensAcrossThreePages) {
  auto store = Make(Config(), [](const RecordedRequest& r) -> Result<Response> {
    const std::string token = QueryParam(r.url, "continuation-token");
    if (token.empty()) return Reply(200, ListPage({"p/a", "p/b b"}, {}, "tok/1+="));
    if (token == "tok/1+=") return Reply(200, ListPage({"p/c"}, {}, "tok2"));
    if (token == "tok2") return Reply(200, ListPage({"p/d+e"}, {}, ""));
    return Reply(400);
  });
  auto list = store->List("p/", /*recursive=*/true);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  std::vector<std::string> keys;
  for (const auto& o : list->objects) keys.push_back(o.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"p/a", "p/b b", "p/c", "p/d+e"}));
  EXPECT_EQ(list->objects[1].size, 5u);
  EXPECT_EQ(list->objects[1].etag, "p/b b");
  EXPECT_TRUE(list->prefixes.empty());

  const auto requests = transport_->requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].url,
            "http://127.0.0.1:9000/bucket?list-type=2&encoding-type=url&max-keys=1000&prefix=p%2F");
  EXPECT_EQ(requests[1].url,
            "http://127.0.0.1:9000/bucket?list-type=2&continuation-token=tok%2F1%2B%3D&"
            "encoding-type=url&max-keys=1000&prefix=p%2F");
  EXPECT_EQ(QueryParam(requests[2].url, "continuation-token"), "tok2");
}

TEST_F(S3StoreTest, ListWithDelimiterReturnsSortedPrefixes) {
  auto store = Make(Config(), [](const RecordedRequest& r) -> Result<Response> {
    EXPECT_EQ(QueryParam(r.url, "delimiter"), "/");
    if (QueryParam(r.url, "continuation-token").empty()) {
      return Reply(200, ListPage({"z.txt"}, {"b/", "a dir/"}, "t"));
    }
    return Reply(200, ListPage({"a.txt"}, {"c/"}, ""));
  });
  auto list = store->List("", /*recursive=*/false);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->objects.size(), 2u);
  EXPECT_EQ(list->objects[0].key, "a.txt");
  EXPECT_EQ(list->objects[1].key, "z.txt");
  EXPECT_EQ(list->prefixes, (std::vector<std::string>{"a dir/", "b/", "c/"}));
}

TEST_F(S3StoreTest, ListVirtualHostedAndRepeatedTokens) {
  S3StoreConfig config = Config();
  config.endpoint = AwsEndpoint("us-east-1");
  config.list_url_encoding = false;
  config.list_page_size = 2;
  auto store = Make(config, [](const RecordedRequest&) -> Result<Response> {
    return Reply(200, ListPage({"k"}, {}, "same"));
  });
  auto list = store->List("", true);
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().code(), StatusCode::kDataLoss);
  const auto requests = transport_->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].url,
            "https://bucket.s3.us-east-1.amazonaws.com/?list-type=2&max-keys=2&prefix=");
}

TEST_F(S3StoreTest, ListOfAMissingBucket) {
  auto store = Make(Config(), [](const RecordedRequest&) -> Result<Response> {
    return Reply(404,
                 "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not "
                 "exist</Message><BucketName>bucket</BucketName></Error>");
  });
  auto list = store->List("x/", true);
  EXPECT_EQ(list.status().code(), StatusCode::kNotFound);
  EXPECT_NE(list.status().message().find("s3://bucket/x/: NoSuchBucket"), std::string::npos)
      << list.status().message();
}

TEST_F(S3StoreTest, RemoveTreatsMissingAsDone) {
  int status = 204;
  auto store = Make(Config(), [&](const RecordedRequest&) -> Result<Response> {
    return Reply(status, status == 403 ? "<Error><Code>AccessDenied</Code><Message>Access "
                                         "Denied</Message></Error>"
                                       : "");
  });
  ASSERT_TRUE(store->Remove("a/b").ok());
  EXPECT_EQ(transport_->requests()[0].method, "DELETE");
  EXPECT_EQ(transport_->requests()[0].url, "http://127.0.0.1:9000/bucket/a/b");
  status = 404;
  EXPECT_TRUE(store->Remove("a/b").ok());
  status = 403;
  Status s = store->Remove("a/b");
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(),
            "s3://bucket/a/b: AccessDenied: Access Denied (if bucket is a Requester Pays bucket, "
            "name it in FERRY_S3_REQUESTER_PAYS)");
}

TEST_F(S3StoreTest, ErrorsNeverCarrySecrets) {
  // The service echoes the request's signing details in SignatureDoesNotMatch; none of them may
  // reach the Status, whatever the operation.
  auto store = Make(SmallParts(Config()), [](const RecordedRequest& r) -> Result<Response> {
    const std::string auth(r.headers.Get("Authorization").value_or(""));
    return Reply(403, fmt::format("<Error><Code>SignatureDoesNotMatch</Code><Message>The request "
                                  "signature we calculated does not match</Message>"
                                  "<SignatureProvided>{}</SignatureProvided><CanonicalRequest>"
                                  "x-amz-security-token:{}</CanonicalRequest></Error>",
                                  auth, kToken));
  });
  std::vector<Status> errors;
  errors.push_back(store->Head("k").status());
  errors.push_back(store->Get("k").status());
  errors.push_back(store->Put("k", "small"));
  errors.push_back(store->Put("k", "large enough for parts"));
  errors.push_back(store->List("", true).status());
  errors.push_back(store->Remove("k"));
  for (const Status& s : errors) {
    EXPECT_EQ(s.code(), StatusCode::kUnauthenticated) << s.ToString();
    EXPECT_TRUE(s.message().starts_with("s3://bucket/")) << s.message();
    ExpectNoSecrets(s, transport_->requests());
  }
}

TEST_F(S3StoreTest, AnonymousRequestsAreUnsignedAndSaySo) {
  S3StoreConfig config = Config();
  config.credentials = AwsCredentials{{}, {}, {}, "none found"};
  auto store = Make(config, [](const RecordedRequest&) -> Result<Response> {
    return Reply(403, "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>");
  });
  Status s = store->Head("k").status();
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("not signed"), std::string::npos) << s.message();
  const auto requests = transport_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_FALSE(requests[0].headers.Get("Authorization"));
  EXPECT_FALSE(requests[0].headers.Get("x-amz-date"));
}

// A Requester Pays bucket, named by Mosaic's variable or ferry's: every request carries the
// header, signed; a refusal of another bucket says what to set.
TEST_F(S3StoreTest, RequesterPaysBucketsSendTheSignedHeader) {
  for (const auto& [variable, list] : std::vector<std::pair<std::string, std::string>>{
           {"MOSAICML_STREAMING_AWS_REQUESTER_PAYS", "other, bucket"},
           {"FERRY_S3_REQUESTER_PAYS", "*"}}) {
    const testing::FakeEnv env{{"AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE"},
                               {"AWS_SECRET_ACCESS_KEY", std::string(kSecret)},
                               {"AWS_ENDPOINT_URL", "http://127.0.0.1:9000"},
                               {variable, list}};
    auto config = S3StoreConfigFromEnvironment("bucket", {}, env);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    EXPECT_TRUE(config->requester_pays) << variable;
    EXPECT_EQ(S3StoreConfigFromEnvironment("bucke", {}, env)->requester_pays, list == "*")
        << "a name is matched whole";
    auto store = Make(*config, [](const RecordedRequest&) -> Result<Response> {
      return Reply(200, "", {{"Content-Length", "1"}});
    });
    ASSERT_TRUE(store->Head("k").ok());
    const RecordedRequest r = transport_->requests().at(0);
    EXPECT_EQ(r.headers.Get("x-amz-request-payer").value_or(""), "requester");
    EXPECT_NE(r.headers.Get("Authorization").value_or("").find("x-amz-request-payer"),
              std::string_view::npos)
        << "the header is signed";
  }
  auto store = Make(Config(), [](const RecordedRequest&) -> Result<Response> {
    return Reply(403, "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>");
  });
  const Status refused = store->Get("k").status();
  EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(refused.message().find("FERRY_S3_REQUESTER_PAYS"), std::string::npos)
      << refused.message();
  EXPECT_FALSE(transport_->requests().at(0).headers.Get("x-amz-request-payer"));
}

TEST_F(S3StoreTest, UrlsAndKeys) {
  auto store =
      Make(Config(), [](const RecordedRequest&) -> Result<Response> { return Reply(200); });
  EXPECT_EQ(store->scheme(), "s3");
  EXPECT_FALSE(store->read_only());
  EXPECT_EQ(store->ToUrl("a/b c#d?e"), "s3://bucket/a/b c#d?e");
  EXPECT_EQ(store->Head("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Put(std::string(1025, 'k'), "x").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(transport_->requests().empty());
}

TEST(MakeS3StoreTest, RejectsBadConfigs) {
  S3StoreConfig c;
  EXPECT_EQ(MakeS3Store(c).status().code(), StatusCode::kInvalidArgument);
  c.bucket = "b";
  EXPECT_EQ(MakeS3Store(c).status().code(), StatusCode::kInvalidArgument);
  c.endpoint = AwsEndpoint("us-east-1");
  EXPECT_TRUE(MakeS3Store(c).ok());
  c.part_size = 0;
  EXPECT_EQ(MakeS3Store(c).status().code(), StatusCode::kInvalidArgument);
}

class OpenS3UrlTest : public ::testing::Test {
 protected:
  OpenS3UrlTest() {
    env_.Set("HOME", home_);
    env_.Set("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE");
    env_.Set("AWS_SECRET_ACCESS_KEY", std::string(kSecret));
    env_.Set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
    http::SetDefaultTransportForTesting(transport_);
  }
  ~OpenS3UrlTest() override { http::SetDefaultTransportForTesting(nullptr); }

  std::string home_ = "/nonexistent-home-for-tests";
  testing::FakeEnv env_;
  std::shared_ptr<http::RecordingTransport> transport_ =
      std::make_shared<http::RecordingTransport>([](const RecordedRequest&) -> Result<Response> {
        return Reply(200, "", {{"Content-Length", "3"}});
      });
};

TEST_F(OpenS3UrlTest, RegisteredAndCached) {
  auto opened = OpenS3Url("s3://my-bucket/dir/file.bin", env_);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(opened->key, "dir/file.bin");
  EXPECT_EQ(opened->store->scheme(), "s3");
  EXPECT_EQ(opened->store->ToUrl(opened->key), "s3://my-bucket/dir/file.bin");
  ASSERT_TRUE(opened->store->Head(opened->key).ok());
  ASSERT_EQ(transport_->requests().size(), 1u);
  EXPECT_EQ(transport_->requests()[0].url, "http://127.0.0.1:9000/my-bucket/dir/file.bin");
  EXPECT_TRUE(transport_->requests()[0].headers.Get("Authorization"));

  // The same environment gives the same store; a changed one a new store.
  auto again = OpenS3Url("s3://my-bucket/other", env_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->store.get(), opened->store.get());
  env_.Set("AWS_NO_SIGN_REQUEST", "true");
  auto anonymous = OpenS3Url("s3://my-bucket/other", env_);
  ASSERT_TRUE(anonymous.ok());
  EXPECT_NE(anonymous->store.get(), opened->store.get());
  ASSERT_TRUE(anonymous->store->Head("other").ok());
  EXPECT_FALSE(transport_->requests().back().headers.Get("Authorization"));

  EXPECT_NE(std::find(RegisteredSchemes().begin(), RegisteredSchemes().end(), "s3"),
            RegisteredSchemes().end());
}

TEST_F(OpenS3UrlTest, BadUrlsAndBucketNames) {
  EXPECT_EQ(OpenS3Url("s3://", env_).status().code(), StatusCode::kInvalidArgument);
  // AWS itself has stricter bucket rules than custom endpoints.
  EXPECT_TRUE(OpenS3Url("s3://Legacy_Bucket/k", env_).ok());
  env_.Unset("AWS_ENDPOINT_URL");
  Status s = OpenS3Url("s3://Legacy_Bucket/k", env_).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Legacy_Bucket"), std::string::npos);
  env_.Set("AWS_ACCESS_KEY_ID", "");
  s = OpenS3Url("s3://bucket/k", env_).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);  // a secret without a key id
  EXPECT_EQ(s.message().find(kSecret), std::string::npos);
}

}  // namespace
}  // namespace ferry::internal_s3
