// The Google sources against a recording transport: which one the environment selects, the
// requests each makes (a service account's RS256 assertion that verifies with its key, a user's
// refresh, workload identity federation's token exchange and impersonation, the metadata
// server's header), the tokens read back, and failures that name the file and the endpoint -
// never a key or a secret. tests/integration/gcs_credentials_test.cc runs them against the
// identity server of scripts/test-servers.sh.
#include "storage/gcs/google_credentials.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "storage/base64.h"
#include "storage/http/recording_transport.h"
#include "storage/http/url_encoding.h"
#include "storage/jwt.h"
#include "storage/testing/fake_env_testutil.h"
#include "storage/testing/oauth_testutil.h"
#include "storage/testing/test_keys_testutil.h"

namespace ferry::internal_gcs {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;
using ::testing::HasSubstr;
using ::testing::Not;

const system_clock::time_point kNow{seconds(1'800'000'000)};

using testing::FormFields;

class GoogleCredentialsTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const nlohmann::json& json) {
    const auto path = tmp_ / name;
    EXPECT_TRUE(WriteFileAtomically(path, json.dump()).ok());
    return path.string();
  }
  ferry::testing::TempDir tmp_;
};

TEST_F(GoogleCredentialsTest, AServiceAccountSignsAnAssertionForItsTokenUri) {
  const auto key = testing::TestKey::Rsa();
  const std::string path =
      Write("sa.json", {{"type", "service_account"},
                        {"client_email", "trainer@proj.iam.gserviceaccount.com"},
                        {"private_key_id", "kid-1"},
                        {"private_key", key.PrivatePem()},
                        {"token_uri", "http://127.0.0.1:7/token"}});
  http::RecordingTransport google([](const http::RecordedRequest&) -> Result<http::Response> {
    return testing::JsonReply(
        200, R"({"access_token":"ya29.token","expires_in":3599,"token_type":"Bearer"})");
  });
  auto token = FetchGoogleFileToken(path, kNow, &google);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(token->access_token, "ya29.token");
  EXPECT_EQ(token->expiration, kNow + seconds(3599));
  const auto request = google.requests().at(0);
  EXPECT_EQ(request.url, "http://127.0.0.1:7/token");
  const auto form = FormFields(request.body);
  EXPECT_EQ(form.at("grant_type"), "urn:ietf:params:oauth:grant-type:jwt-bearer");
  const std::string& assertion = form.at("assertion");
  const size_t dot = assertion.rfind('.');
  EXPECT_TRUE(key.VerifiesRs256(assertion.substr(0, dot),
                                Base64UrlDecode(assertion.substr(dot + 1)).value()));
  const auto header =
      nlohmann::json::parse(Base64UrlDecode(assertion.substr(0, assertion.find('.'))).value());
  EXPECT_EQ(header["kid"], "kid-1");
  const auto claims = internal_storage::UnverifiedJwtClaims(assertion).value();
  EXPECT_EQ(claims["iss"], "trainer@proj.iam.gserviceaccount.com");
  EXPECT_EQ(claims["aud"], "http://127.0.0.1:7/token");
  EXPECT_EQ(claims["scope"], "https://www.googleapis.com/auth/devstorage.read_write");
  EXPECT_EQ(claims["exp"].get<int64_t>() - claims["iat"].get<int64_t>(), 3600);
  EXPECT_EQ(DescribeGoogleCredentialsFile(path).value(),
            "service account trainer@proj.iam.gserviceaccount.com (" + path + ")");
}

TEST_F(GoogleCredentialsTest, UserCredentialsAreRefreshed) {
  const std::string path = Write("adc.json", {{"type", "authorized_user"},
                                              {"client_id", "client.apps"},
                                              {"client_secret", "user-s3cret"},
                                              {"refresh_token", "1//refresh"},
                                              {"token_uri", "http://127.0.0.1:7/token"}});
  http::RecordingTransport google([](const http::RecordedRequest&) -> Result<http::Response> {
    return testing::JsonReply(
        400,
        R"({"error":"invalid_grant","error_description":"Token has been expired or revoked."})");
  });
  auto token = FetchGoogleFileToken(path, kNow, &google);
  ASSERT_FALSE(token.ok());
  EXPECT_THAT(token.status().message(), HasSubstr("user credentials (" + path + ")"));
  EXPECT_THAT(token.status().message(),
              HasSubstr("HTTP 400: invalid_grant: Token has been expired or revoked."));
  EXPECT_THAT(token.status().message(), HasSubstr("gcloud auth application-default login"));
  EXPECT_THAT(token.status().message(), Not(HasSubstr("user-s3cret")));
  EXPECT_THAT(token.status().message(), Not(HasSubstr("1//refresh")));
  const auto form = FormFields(google.requests().at(0).body);
  EXPECT_EQ(form.at("grant_type"), "refresh_token");
  EXPECT_EQ(form.at("refresh_token"), "1//refresh");
  EXPECT_EQ(form.at("client_secret"), "user-s3cret");
}

TEST_F(GoogleCredentialsTest, WorkloadIdentityFederationExchangesThenImpersonates) {
  ASSERT_TRUE(WriteFileAtomically(tmp_ / "oidc.json", R"({"id_token": "oidc-subject"})").ok());
  const std::string path =
      Write("wif.json",
            {{"type", "external_account"},
             {"audience",
              "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/"
              "providers/aws"},
             {"subject_token_type", "urn:ietf:params:oauth:token-type:jwt"},
             {"token_url", "http://127.0.0.1:7/v1/token"},
             {"service_account_impersonation_url", "http://127.0.0.1:7/v1/sa:generateAccessToken"},
             {"credential_source",
              {{"file", (tmp_ / "oidc.json").string()},
               {"format", {{"type", "json"}, {"subject_token_field_name", "id_token"}}}}}});
  http::RecordingTransport google([](const http::RecordedRequest& r) -> Result<http::Response> {
    if (r.url.ends_with("/v1/token"))
      return testing::JsonReply(200, R"({"access_token":"federated","expires_in":3600})");
    return testing::JsonReply(
        200, R"({"accessToken":"ya29.impersonated","expireTime":"2027-01-15T08:00:00Z"})");
  });
  auto token = FetchGoogleFileToken(path, kNow, &google);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(token->access_token, "ya29.impersonated");
  ASSERT_EQ(google.requests().size(), 2u);
  const auto exchange = FormFields(google.requests()[0].body);
  EXPECT_EQ(exchange.at("grant_type"), "urn:ietf:params:oauth:grant-type:token-exchange");
  EXPECT_EQ(exchange.at("subject_token"), "oidc-subject");
  EXPECT_EQ(exchange.at("subject_token_type"), "urn:ietf:params:oauth:token-type:jwt");
  EXPECT_THAT(exchange.at("audience"), HasSubstr("workloadIdentityPools/p"));
  const auto impersonate = google.requests()[1];
  EXPECT_EQ(impersonate.headers.Get("Authorization").value_or(""), "Bearer federated");
  EXPECT_EQ(nlohmann::json::parse(impersonate.body)["scope"][0],
            "https://www.googleapis.com/auth/devstorage.read_write");

  const std::string url_sourced =
      Write("url.json", {{"type", "external_account"},
                         {"audience", "a"},
                         {"subject_token_type", "t"},
                         {"token_url", "https://sts.googleapis.com/v1/token"},
                         {"credential_source", {{"url", "http://169.254.169.254/token"}}}});
  EXPECT_THAT(FetchGoogleFileToken(url_sourced, kNow, &google).status().message(),
              HasSubstr("write the token to a file"));
}

TEST_F(GoogleCredentialsTest, TheEnvironmentPicksTheSource) {
  auto source = [](const testing::FakeEnv& env) {
    auto provider = LoadGoogleTokenProvider(env);
    if (!provider.ok()) return "error: " + provider.status().message();
    return *provider ? (*provider)->source() : std::string("none");
  };
  EXPECT_EQ(source({{"HOME", tmp_.path().string()}}), "none");
  EXPECT_EQ(source({{"HOME", tmp_.path().string()}, {"GCE_METADATA_HOST", "127.0.0.1:9"}}),
            "metadata server (127.0.0.1:9)");
  EXPECT_EQ(source({{"FERRY_GCE_METADATA", "true"}}), "metadata server (metadata.google.internal)");
  std::filesystem::create_directories(tmp_ / ".config" / "gcloud");
  const std::string adc =
      Write(".config/gcloud/application_default_credentials.json", {{"type", "authorized_user"},
                                                                    {"client_id", "c"},
                                                                    {"client_secret", "s"},
                                                                    {"refresh_token", "r"}});
  EXPECT_EQ(source({{"HOME", tmp_.path().string()}, {"GCE_METADATA_HOST", "127.0.0.1:9"}}),
            "user credentials (" + adc + ")");
  const std::string odd = Write("odd.json", {{"type", "impersonated_service_account"}});
  EXPECT_THAT(source({{"GOOGLE_APPLICATION_CREDENTIALS", odd}}),
              HasSubstr("ferry reads service_account, authorized_user and external_account"));
  EXPECT_THAT(source({{"GOOGLE_APPLICATION_CREDENTIALS", (tmp_ / "missing.json").string()}}),
              HasSubstr("GOOGLE_APPLICATION_CREDENTIALS"));
  const auto key = testing::TestKey::Rsa();
  const std::string remote = Write("remote.json", {{"type", "service_account"},
                                                   {"client_email", "x@y"},
                                                   {"private_key", key.PrivatePem()},
                                                   {"token_uri", "http://tokens.example.com/"}});
  http::RecordingTransport unused;
  auto refused = FetchGoogleFileToken(remote, kNow, &unused);
  EXPECT_THAT(refused.status().message(), HasSubstr("must be an https:// URL"));
  EXPECT_THAT(refused.status().message(), Not(HasSubstr("PRIVATE KEY")));
  EXPECT_TRUE(unused.requests().empty());
}

TEST_F(GoogleCredentialsTest, TheMetadataServerIsAskedAsItExpects) {
  http::RecordingTransport metadata([](const http::RecordedRequest&) -> Result<http::Response> {
    return testing::JsonReply(
        200, R"({"access_token":"ya29.vm","expires_in":1800,"token_type":"Bearer"})");
  });
  auto token = FetchGoogleMetadataToken("127.0.0.1:9", kNow, &metadata);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(token->expiration, kNow + seconds(1800));
  const auto request = metadata.requests().at(0);
  EXPECT_EQ(request.url,
            "http://127.0.0.1:9/computeMetadata/v1/instance/service-accounts/default/token");
  EXPECT_EQ(request.headers.Get("Metadata-Flavor").value_or(""), "Google");
  http::RecordingTransport down([](const http::RecordedRequest&) -> Result<http::Response> {
    return UnavailableError("could not resolve host");
  });
  EXPECT_THAT(FetchGoogleMetadataToken("metadata.google.internal", kNow, &down).status().message(),
              HasSubstr("not on Google Cloud"));
}

}  // namespace
}  // namespace ferry::internal_gcs
