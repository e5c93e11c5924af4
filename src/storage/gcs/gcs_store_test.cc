#include "storage/gcs/gcs_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "ferry/storage/registry.h"
#include "storage/http/recording_transport.h"
#include "storage/s3/s3_store.h"
#include "storage/testing/fake_env_testutil.h"

namespace ferry::internal_gcs {
namespace {

using http::RecordedRequest;
using http::Response;

constexpr std::string_view kHmacSecret = "bGoa+V7g/yqDXvKRqq+JTFn4uQZbPiQJo4pf9RzJ";

class GcsStoreTest : public ::testing::Test {
 protected:
  GcsStoreTest() { http::SetDefaultTransportForTesting(transport_); }
  ~GcsStoreTest() override { http::SetDefaultTransportForTesting(nullptr); }

  void SetKeys() {
    env_.Set("GCS_HMAC_ACCESS_KEY_ID", "GOOGTS7C7FUP3AIRVJTE2BCD");
    env_.Set("GCS_HMAC_SECRET", std::string(kHmacSecret));
  }

  testing::FakeEnv env_;
  std::shared_ptr<http::RecordingTransport> transport_ =
      std::make_shared<http::RecordingTransport>([](const RecordedRequest& r) -> Result<Response> {
        Response response;
        response.status = 200;
        if (r.method == "HEAD") response.headers.Set("Content-Length", "7");
        if (r.method == "GET") {
          response.body =
              "<ListBucketResult xmlns=\"http://doc.s3.amazonaws.com/2006-03-01\">"
              "<IsTruncated>false</IsTruncated><Contents><Key>a/b</Key><Size>1</Size>"
              "</Contents></ListBucketResult>";
        }
        return response;
      });
};

TEST_F(GcsStoreTest, ConfigFromEnvironment) {
  auto config = GcsStoreConfigFromEnvironment("my_bucket.example.com", env_);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->scheme, "gs");
  EXPECT_EQ(config->region, "auto");
  EXPECT_EQ(config->endpoint.scheme, "https");
  EXPECT_EQ(config->endpoint.authority, "storage.googleapis.com");
  EXPECT_EQ(config->endpoint.style, internal_s3::AddressingStyle::kPath);
  EXPECT_TRUE(config->credentials.anonymous());
  EXPECT_NE(config->credentials.ToString().find("GCS_HMAC_ACCESS_KEY_ID"), std::string::npos);

  SetKeys();
  env_.Set("GCS_ENDPOINT_URL", "http://127.0.0.1:4443");
  config = GcsStoreConfigFromEnvironment("b", env_);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->endpoint.authority, "127.0.0.1:4443");
  EXPECT_EQ(config->credentials.access_key_id, "GOOGTS7C7FUP3AIRVJTE2BCD");
  EXPECT_EQ(config->credentials.secret_access_key, kHmacSecret);
}

// Mosaic Streaming's variable names, read only where ferry's are not set.
TEST_F(GcsStoreTest, MosaicsHmacVariablesAreReadToo) {
  env_.Set("GCS_KEY", "GOOGMOSAIC");
  env_.Set("GCS_SECRET", std::string(kHmacSecret));
  auto config = GcsStoreConfigFromEnvironment("bkt", env_);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->credentials.access_key_id, "GOOGMOSAIC");
  EXPECT_NE(config->credentials.source.find("GCS_KEY"), std::string::npos);
  SetKeys();
  EXPECT_EQ(GcsStoreConfigFromEnvironment("bkt", env_)->credentials.access_key_id,
            "GOOGTS7C7FUP3AIRVJTE2BCD");
  env_.Unset("GCS_HMAC_ACCESS_KEY_ID");
  env_.Unset("GCS_HMAC_SECRET");
  env_.Unset("GCS_SECRET");
  const Status half = GcsStoreConfigFromEnvironment("bkt", env_).status();
  EXPECT_NE(half.message().find("GCS_KEY is set but GCS_SECRET is not"), std::string::npos)
      << half.message();
}

// With Google's credentials the store sends the provider's token instead of a signature; a 401
// drops it and the request goes once more with a new one.
TEST_F(GcsStoreTest, BearerTokensAreSentAndARefusedOneIsReplacedOnce) {
  auto config = GcsStoreConfigFromEnvironment("bkt", env_);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  int fetched = 0;
  config->bearer_token_provider = std::make_shared<internal_storage::AccessTokenProvider>(
      "test tokens", [&fetched]() -> Result<internal_storage::AccessToken> {
        return internal_storage::AccessToken{
            fmt::format("ya29.token-{}", ++fetched),
            std::chrono::system_clock::now() + std::chrono::hours(1)};
      });
  int refused = 0;
  auto transport = std::make_shared<http::RecordingTransport>(
      [&refused](const RecordedRequest& r) -> Result<Response> {
        // The first token is refused once, as a revoked one would be.
        if (r.headers.Get("Authorization").value_or("") == "Bearer ya29.token-1" && refused++ < 5) {
          return Response{401, {}, "<Error><Code>AuthenticationRequired</Code></Error>"};
        }
        return Response{200, {}, ""};
      });
  auto store = internal_s3::MakeS3Store(*config, transport).value();
  EXPECT_TRUE(store->Put("k", "v").ok());
  const auto requests = transport->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].headers.Get("Authorization").value_or(""), "Bearer ya29.token-1");
  EXPECT_EQ(requests[1].headers.Get("Authorization").value_or(""), "Bearer ya29.token-2");
  EXPECT_FALSE(requests[1].headers.Get("x-amz-date").has_value());
  EXPECT_EQ(refused, 1);
}

// A Google token goes over HTTPS, or plain http to this machine only.
TEST_F(GcsStoreTest, BearerTokensStayOffPlainHttpToOtherHosts) {
  env_.Set("GCE_METADATA_HOST", "127.0.0.1:9");
  env_.Set("GCS_ENDPOINT_URL", "http://storage.example.com");
  const Status refused = GcsStoreConfigFromEnvironment("bkt", env_).status();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("sent only over HTTPS"), std::string::npos) << refused.message();
  env_.Set("GCS_ENDPOINT_URL", "http://127.0.0.1:4443");
  EXPECT_TRUE(GcsStoreConfigFromEnvironment("bkt", env_).ok());
}

TEST_F(GcsStoreTest, ConfigErrors) {
  // GCS naming: underscores yes, uppercase no.
  EXPECT_EQ(GcsStoreConfigFromEnvironment("Bad", env_).status().code(),
            StatusCode::kInvalidArgument);
  env_.Set("GCS_HMAC_SECRET", std::string(kHmacSecret));
  Status s = GcsStoreConfigFromEnvironment("b_ok", env_).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().find(kHmacSecret), std::string::npos);
  env_.Unset("GCS_HMAC_SECRET");
  env_.Set("GCS_ENDPOINT_URL", "storage.googleapis.com");
  EXPECT_EQ(GcsStoreConfigFromEnvironment("b_ok", env_).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(GcsStoreTest, BothSchemesAreRegistered) {
  const std::vector<std::string> schemes = RegisteredSchemes();
  EXPECT_NE(std::find(schemes.begin(), schemes.end(), "gs"), schemes.end());
  EXPECT_NE(std::find(schemes.begin(), schemes.end(), "gcs"), schemes.end());
  auto opened = OpenGcsUrl("gcs://public-data/images/cat 1.jpg", env_);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(opened->key, "images/cat 1.jpg");
  EXPECT_EQ(opened->store->scheme(), "gs");
  EXPECT_EQ(opened->store->ToUrl(opened->key), "gs://public-data/images/cat 1.jpg");
  auto same = OpenGcsUrl("gs://public-data/other", env_);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->store.get(), opened->store.get());
}

TEST_F(GcsStoreTest, AnonymousRequestsAreUnsigned) {
  auto opened = OpenGcsUrl("gs://public-data/images/cat 1.jpg", env_);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto info = opened->store->Head(opened->key);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->size, 7u);
  const auto requests = transport_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].url, "https://storage.googleapis.com/public-data/images/cat%201.jpg");
  EXPECT_FALSE(requests[0].headers.Get("Authorization"));
}

TEST_F(GcsStoreTest, HmacRequestsAreSignedForRegionAuto) {
  SetKeys();
  auto opened = OpenGcsUrl("gs://private-data/", env_);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto list = opened->store->List("a/", true);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->objects.size(), 1u);
  EXPECT_EQ(list->objects[0].key, "a/b");
  const auto requests = transport_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].url,
            "https://storage.googleapis.com/private-data?list-type=2&encoding-type=url&"
            "max-keys=1000&prefix=a%2F");
  const std::string auth(requests[0].headers.Get("Authorization").value_or(""));
  EXPECT_TRUE(auth.starts_with("AWS4-HMAC-SHA256 Credential=GOOGTS7C7FUP3AIRVJTE2BCD/")) << auth;
  EXPECT_NE(auth.find("/auto/s3/aws4_request"), std::string::npos) << auth;
  EXPECT_EQ(requests[0].headers.Get("Host").value_or(""), "storage.googleapis.com");
}

TEST_F(GcsStoreTest, ErrorsNameTheGsUrl) {
  transport_ =
      std::make_shared<http::RecordingTransport>([](const RecordedRequest&) -> Result<Response> {
        Response r;
        r.status = 404;
        r.body =
            "<?xml version='1.0' encoding='UTF-8'?><Error><Code>NoSuchKey</Code><Message>The "
            "specified key does not exist.</Message><Details>No such object: b/k</Details>"
            "</Error>";
        return r;
      });
  http::SetDefaultTransportForTesting(transport_);
  auto opened = OpenGcsUrl("gs://bucket-x/missing", env_);
  ASSERT_TRUE(opened.ok());
  auto got = opened->store->Get(opened->key);
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(got.status().message(),
            "gs://bucket-x/missing: NoSuchKey: The specified key does not exist.");
}

}  // namespace
}  // namespace ferry::internal_gcs
