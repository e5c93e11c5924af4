// The container and instance metadata sources against a recording transport: the requests they
// make (IMDSv2's token PUT before every read, the Authorization value from its file), the
// credentials they read back, and their failures named with what to check - without a token
// in any message. The identity server of scripts/test-servers.sh answers the same calls in the
// integration tests (tests/integration/aws_credentials_test.cc).
#include "storage/s3/aws_metadata_credentials.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "storage/http/recording_transport.h"
#include "storage/testing/fake_env_testutil.h"

namespace ferry::internal_s3 {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kCredentialJson[] =
    R"({"Code": "Success", "AccessKeyId": "ASIAMETADATA00000001", "SecretAccessKey": "md-secret",
        "Token": "md-session-token", "Expiration": "2026-12-03T18:00:00Z"})";

TEST(ContainerCredentials, TheVariablesNameTheEndpointAndPlainHttpStaysLocal) {
  EXPECT_FALSE(ContainerEndpointFromEnv(testing::FakeEnv{}).value().has_value());
  auto relative = ContainerEndpointFromEnv(
      testing::FakeEnv{{"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/abc"},
                       {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "inline"}});
  ASSERT_TRUE(relative.ok() && relative->has_value());
  EXPECT_EQ((*relative)->url, "http://169.254.170.2/v2/credentials/abc");
  EXPECT_EQ((*relative)->token, "inline");
  for (const char* ok : {"http://127.0.0.1:8080/creds", "http://169.254.170.23/v1/credentials",
                         "http://localhost/x", "https://creds.example.com/x"}) {
    EXPECT_TRUE(
        ContainerEndpointFromEnv(testing::FakeEnv{{"AWS_CONTAINER_CREDENTIALS_FULL_URI", ok}}).ok())
        << ok;
  }
  auto remote = ContainerEndpointFromEnv(
      testing::FakeEnv{{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://203.0.113.5/creds"}});
  EXPECT_EQ(remote.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(remote.status().message(), HasSubstr("use https"));
}

TEST(ContainerCredentials, SendsTheTokenFromItsFileAndReadsTheCredentials) {
  testing::TempDir tmp;
  ASSERT_TRUE(WriteFileAtomically(tmp / "token", "rotating-token\n").ok());
  http::RecordingTransport endpoint([](const http::RecordedRequest&) -> Result<http::Response> {
    return http::Response{200, {}, kCredentialJson};
  });
  const ContainerCredentialsEndpoint e{"http://127.0.0.1:1/creds", "", (tmp / "token").string()};
  auto c = FetchContainerCredentials(e, &endpoint);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIAMETADATA00000001");
  EXPECT_EQ(c->session_token, "md-session-token");
  EXPECT_TRUE(c->expiration.has_value());
  EXPECT_EQ(c->source, "container credentials (http://127.0.0.1:1/creds)");
  EXPECT_EQ(endpoint.requests().at(0).headers.Get("Authorization").value_or(""), "rotating-token");

  http::RecordingTransport refusing([](const http::RecordedRequest&) -> Result<http::Response> {
    return http::Response{401, {}, "wrong or missing Authorization"};
  });
  auto refused = FetchContainerCredentials(e, &refusing);
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(refused.status().message(), HasSubstr("AWS_CONTAINER_AUTHORIZATION_TOKEN"));
  EXPECT_THAT(refused.status().message(), Not(HasSubstr("rotating-token")));
}

TEST(InstanceMetadataCredentials, PutsForASessionTokenThenReadsTheRolesCredentials) {
  http::RecordingTransport imds([](const http::RecordedRequest& r) -> Result<http::Response> {
    if (r.method == "PUT") return http::Response{200, {}, "session-token-1"};
    if (r.headers.Get("X-aws-ec2-metadata-token").value_or("") != "session-token-1") {
      return http::Response{401, {}, ""};
    }
    if (r.url.ends_with("/security-credentials/")) return http::Response{200, {}, "trainer\n"};
    return http::Response{200, {}, kCredentialJson};
  });
  auto c = FetchInstanceMetadataCredentials("http://127.0.0.1:1", &imds);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIAMETADATA00000001");
  EXPECT_EQ(c->source, "EC2 instance metadata (role trainer)");
  const auto requests = imds.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].method, "PUT");
  EXPECT_EQ(requests[0].url, "http://127.0.0.1:1/latest/api/token");
  EXPECT_EQ(requests[0].headers.Get("X-aws-ec2-metadata-token-ttl-seconds").value_or(""), "21600");
  EXPECT_EQ(requests[2].url,
            "http://127.0.0.1:1/latest/meta-data/iam/security-credentials/trainer");
}

TEST(InstanceMetadataCredentials, NoRoleOrNoAnswerSaysWhatToCheck) {
  http::RecordingTransport no_role([](const http::RecordedRequest& r) -> Result<http::Response> {
    if (r.method == "PUT") return http::Response{200, {}, "t"};
    return http::Response{404, {}, ""};
  });
  auto none = FetchInstanceMetadataCredentials("http://127.0.0.1:1", &no_role);
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr("no IAM role attached"));

  http::RecordingTransport silent([](const http::RecordedRequest&) -> Result<http::Response> {
    return UnavailableError("connect timed out");
  });
  auto unreachable = FetchInstanceMetadataCredentials("http://127.0.0.1:1", &silent);
  EXPECT_EQ(unreachable.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(unreachable.status().message(), HasSubstr("not on EC2"));
  EXPECT_THAT(unreachable.status().message(), HasSubstr("hop limit"));

  auto bad = ParseAwsCredentialJson(R"({"Code": "Success", "AccessKeyId": "A"})", "here");
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(bad.status().message(), HasSubstr("here: the reply lacks"));
}

}  // namespace
}  // namespace ferry::internal_s3
