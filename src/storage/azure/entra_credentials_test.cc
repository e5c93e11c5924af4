// The Entra ID sources against a recording transport: which source the environment selects,
// the requests each makes (the form of the client credentials grant, a certificate assertion
// that verifies with the certificate's key, the managed identity headers), the tokens read back,
// and failures that name the source and what to check - never a secret. The identity server of
// scripts/test-servers.sh answers the same calls, and Azurite in OAuth mode takes the tokens, in
// tests/integration/azure_credentials_test.cc.
#include "storage/azure/entra_credentials.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "storage/base64.h"
#include "storage/http/recording_transport.h"
#include "storage/http/url_encoding.h"
#include "storage/jwt.h"
#include "storage/testing/fake_env_testutil.h"
#include "storage/testing/oauth_testutil.h"
#include "storage/testing/test_keys_testutil.h"

namespace ferry::internal_azure {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;
using ::testing::HasSubstr;
using ::testing::Not;

const system_clock::time_point kNow{seconds(1'800'000'000)};

std::string SourceOf(const testing::FakeEnv& env) {
  auto provider = LoadAzureTokenProvider(env);
  if (!provider.ok()) return "error: " + provider.status().message();
  return *provider ? (*provider)->source() : "none";
}

TEST(AzureTokenChain, TheEnvironmentPicksTheSource) {
  EXPECT_EQ(SourceOf({}), "none");
  EXPECT_EQ(SourceOf({{"AZURE_TENANT_ID", "t"}}), "none");
  EXPECT_EQ(SourceOf({{"AZURE_TENANT_ID", "t"},
                      {"AZURE_CLIENT_ID", "app"},
                      {"AZURE_CLIENT_SECRET", "s3cret-value"},
                      {"AZURE_FEDERATED_TOKEN_FILE", "/var/run/token"}}),
            "service principal app (client secret)");
  EXPECT_EQ(SourceOf({{"AZURE_TENANT_ID", "t"},
                      {"AZURE_CLIENT_ID", "app"},
                      {"AZURE_FEDERATED_TOKEN_FILE", "/var/run/token"}}),
            "workload identity app (token file /var/run/token)");
  EXPECT_EQ(
      SourceOf({{"IDENTITY_ENDPOINT", "http://127.0.0.1:41/msi/token"}, {"IDENTITY_HEADER", "h"}}),
      "managed identity (IDENTITY_ENDPOINT at http://127.0.0.1:41/msi/token)");
  // A client id alone is a user-assigned managed identity; the metadata service is asked only
  // when something says the machine has one.
  EXPECT_EQ(SourceOf({{"AZURE_CLIENT_ID", "uami"}}),
            "managed identity uami (instance metadata service at "
            "http://169.254.169.254/metadata/identity/oauth2/token)");
  EXPECT_EQ(SourceOf({{"FERRY_AZURE_MANAGED_IDENTITY", "true"}}),
            "managed identity (instance metadata service at "
            "http://169.254.169.254/metadata/identity/oauth2/token)");
  EXPECT_EQ(SourceOf({{"AZURE_POD_IDENTITY_AUTHORITY_HOST", "http://127.0.0.1:9/"}}),
            "managed identity (instance metadata service at "
            "http://127.0.0.1:9/metadata/identity/oauth2/token)");
}

TEST(AzureTokenChain, HalfASettingIsAnErrorNamingWhatIsMissing) {
  struct Case {
    testing::FakeEnv env;
    const char* says;
  };
  const Case cases[] = {
      {{{"AZURE_CLIENT_SECRET", "s3cret-value"}}, "AZURE_TENANT_ID and AZURE_CLIENT_ID"},
      {{{"AZURE_TENANT_ID", "t"}, {"AZURE_FEDERATED_TOKEN_FILE", "/f"}},
       "AZURE_FEDERATED_TOKEN_FILE is set, but AZURE_TENANT_ID and AZURE_CLIENT_ID"},
      {{{"AZURE_TENANT_ID", "t"},
        {"AZURE_CLIENT_ID", "app"},
        {"AZURE_CLIENT_CERTIFICATE_PATH", "/nonexistent/app.pem"}},
       "AZURE_CLIENT_CERTIFICATE_PATH"},
      {{{"AZURE_TENANT_ID", "t"},
        {"AZURE_CLIENT_ID", "app"},
        {"AZURE_CLIENT_CERTIFICATE_PATH", "/etc/hostname"},
        {"AZURE_CLIENT_CERTIFICATE_PASSWORD", "pfx-password"}},
       "openssl pkcs12"},
      {{{"IDENTITY_ENDPOINT", "http://127.0.0.1:41/msi/token"}}, "IDENTITY_HEADER is not"},
      {{{"AZURE_AUTHORITY_HOST", "http://login.example.com"},
        {"AZURE_TENANT_ID", "t"},
        {"AZURE_CLIENT_ID", "app"},
        {"AZURE_CLIENT_SECRET", "s3cret-value"}},
       "must be an https:// URL"},
  };
  for (const Case& c : cases) {
    auto provider = LoadAzureTokenProvider(c.env);
    ASSERT_FALSE(provider.ok()) << c.says;
    EXPECT_THAT(provider.status().message(), HasSubstr(c.says));
    EXPECT_THAT(provider.status().message(), Not(HasSubstr("s3cret-value")));
    EXPECT_THAT(provider.status().message(), Not(HasSubstr("pfx-password")));
  }
}

using testing::FormFields;

TEST(ServicePrincipalToken, TradesTheSecretForATokenOfTheRepliedLife) {
  http::RecordingTransport entra([](const http::RecordedRequest&) -> Result<http::Response> {
    return testing::JsonReply(
        200, R"({"token_type":"Bearer","expires_in":3599,"access_token":"eyJ.tok.en"})");
  });
  ServicePrincipal p;
  p.authority = "http://127.0.0.1:7";
  p.tenant_id = "tenant-1";
  p.client_id = "app-1";
  p.client_secret = "s3cret value&=";
  auto token = FetchServicePrincipalToken(p, kNow, &entra);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(token->access_token, "eyJ.tok.en");
  EXPECT_EQ(token->expiration, kNow + seconds(3599));
  const auto request = entra.requests().at(0);
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.url, "http://127.0.0.1:7/tenant-1/oauth2/v2.0/token");
  EXPECT_EQ(request.headers.Get("Content-Type").value_or(""), "application/x-www-form-urlencoded");
  const auto form = FormFields(request.body);
  EXPECT_EQ(form.at("grant_type"), "client_credentials");
  EXPECT_EQ(form.at("client_id"), "app-1");
  EXPECT_EQ(form.at("scope"), "https://storage.azure.com/.default");
  EXPECT_EQ(form.at("client_secret"), "s3cret value&=");
}

TEST(ServicePrincipalToken, ACertificateSignsAnAssertionForThisEndpoint) {
  const auto key = testing::TestKey::Rsa();
  ferry::testing::TempDir tmp;
  const auto pem = tmp / "app.pem";
  // Made once: each call signs a new certificate, valid from the second it is made.
  const std::string certificate = key.CertificatePem();
  ASSERT_TRUE(WriteFileAtomically(pem, key.PrivatePem() + certificate).ok());
  http::RecordingTransport entra([](const http::RecordedRequest&) -> Result<http::Response> {
    return testing::JsonReply(200,
                              R"({"token_type":"Bearer","expires_in":"600","access_token":"tok"})");
  });
  ServicePrincipal p;
  p.authority = "http://127.0.0.1:7";
  p.tenant_id = "tenant-1";
  p.client_id = "app-1";
  p.certificate_path = pem.string();
  ASSERT_TRUE(FetchServicePrincipalToken(p, kNow, &entra).ok());
  ASSERT_TRUE(FetchServicePrincipalToken(p, kNow, &entra).ok());
  const auto form = FormFields(entra.requests().at(0).body);
  EXPECT_EQ(form.count("client_secret"), 0u);
  EXPECT_EQ(form.at("client_assertion_type"),
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
  const std::string& assertion = form.at("client_assertion");
  const size_t dot = assertion.rfind('.');
  EXPECT_TRUE(key.VerifiesRs256(assertion.substr(0, dot),
                                Base64UrlDecode(assertion.substr(dot + 1)).value()));
  const auto header =
      nlohmann::json::parse(Base64UrlDecode(assertion.substr(0, assertion.find('.'))).value());
  EXPECT_EQ(header["alg"], "RS256");
  EXPECT_EQ(header["x5t"], CertificateThumbprint(certificate, "x").value_or("?"));
  EXPECT_EQ(header["x5t"].get<std::string>().size(), 27u);  // 20 bytes of SHA-1, base64url
  const auto claims = internal_storage::UnverifiedJwtClaims(assertion).value();
  EXPECT_EQ(claims["aud"], "http://127.0.0.1:7/tenant-1/oauth2/v2.0/token");
  EXPECT_EQ(claims["iss"], "app-1");
  EXPECT_EQ(claims["sub"], "app-1");
  EXPECT_EQ(claims["nbf"], 1'800'000'000);
  EXPECT_EQ(claims["exp"], 1'800'000'600);
  // Each assertion is for one use.
  const auto second = FormFields(entra.requests().at(1).body).at("client_assertion");
  EXPECT_NE(internal_storage::UnverifiedJwtClaims(second).value()["jti"], claims["jti"]);
}

TEST(ServicePrincipalToken, AFileThatIsNotPemSaysHowToConvertIt) {
  ferry::testing::TempDir tmp;
  ASSERT_TRUE(WriteFileAtomically(tmp / "app.pfx", std::string("\x30\x82\x0a\x01", 4)).ok());
  http::RecordingTransport entra;
  ServicePrincipal p;
  p.tenant_id = "t";
  p.client_id = "app";
  p.certificate_path = (tmp / "app.pfx").string();
  auto token = FetchServicePrincipalToken(p, kNow, &entra);
  EXPECT_THAT(token.status().message(), HasSubstr("openssl pkcs12"));
  EXPECT_THAT(token.status().message(), HasSubstr("app.pfx"));
  EXPECT_TRUE(entra.requests().empty());
}

TEST(ServicePrincipalToken, WorkloadIdentitySendsTheFilesTokenReadAtEachFetch) {
  ferry::testing::TempDir tmp;
  const auto file = tmp / "azure-identity-token";
  http::RecordingTransport entra([](const http::RecordedRequest&) -> Result<http::Response> {
    return testing::JsonReply(200, R"({"expires_in":60,"access_token":"tok"})");
  });
  ServicePrincipal p;
  p.tenant_id = "t";
  p.client_id = "app";
  p.federated_token_file = file.string();
  auto missing = FetchServicePrincipalToken(p, kNow, &entra);
  EXPECT_THAT(missing.status().message(), HasSubstr("AZURE_FEDERATED_TOKEN_FILE"));
  ASSERT_TRUE(WriteFileAtomically(file, "oidc-token-1\n").ok());
  ASSERT_TRUE(FetchServicePrincipalToken(p, kNow, &entra).ok());
  ASSERT_TRUE(WriteFileAtomically(file, "oidc-token-2").ok());
  ASSERT_TRUE(FetchServicePrincipalToken(p, kNow, &entra).ok());
  EXPECT_EQ(FormFields(entra.requests().at(0).body).at("client_assertion"), "oidc-token-1");
  EXPECT_EQ(FormFields(entra.requests().at(1).body).at("client_assertion"), "oidc-token-2");
}

TEST(ServicePrincipalToken, ARefusalGivesEntrasCodeAndWhatToCheckNeverTheSecret) {
  http::RecordingTransport entra([](const http::RecordedRequest&) -> Result<http::Response> {
    return testing::JsonReply(
        401, R"({"error":"invalid_client","error_description":"AADSTS7000215: Invalid )"
             R"(client secret provided.\r\nTrace ID: 123"})");
  });
  ServicePrincipal p;
  p.tenant_id = "t";
  p.client_id = "app";
  p.client_secret = "s3cret-value";
  auto token = FetchServicePrincipalToken(p, kNow, &entra);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), StatusCode::kPermissionDenied);
  const std::string message = token.status().message();
  EXPECT_THAT(message, HasSubstr("service principal app (client secret)"));
  EXPECT_THAT(message, HasSubstr("https://login.microsoftonline.com/t/oauth2/v2.0/token"));
  EXPECT_THAT(message, HasSubstr("HTTP 401: invalid_client: AADSTS7000215: Invalid client secret"));
  EXPECT_THAT(message, HasSubstr("check AZURE_TENANT_ID"));
  EXPECT_THAT(message, Not(HasSubstr("Trace ID")));
  EXPECT_THAT(message, Not(HasSubstr("s3cret-value")));

  http::RecordingTransport garbled([](const http::RecordedRequest&) -> Result<http::Response> {
    return testing::JsonReply(200, R"({"token_type":"Bearer"})");
  });
  EXPECT_EQ(FetchServicePrincipalToken(p, kNow, &garbled).status().code(), StatusCode::kDataLoss);
}

TEST(ManagedIdentityToken, AsksTheMetadataServiceAsItExpects) {
  http::RecordingTransport imds([](const http::RecordedRequest&) -> Result<http::Response> {
    // The metadata service sends numbers as strings; expires_in wins over expires_on.
    return testing::JsonReply(
        200,
        R"({"access_token":"tok","expires_in":"86399","expires_on":"1","token_type":"Bearer"})");
  });
  ManagedIdentity identity{"http://127.0.0.1:9/metadata/identity/oauth2/token", "", "uami-1"};
  auto token = FetchManagedIdentityToken(identity, kNow, &imds);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(token->expiration, kNow + seconds(86399));
  const auto request = imds.requests().at(0);
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.headers.Get("Metadata").value_or(""), "true");
  EXPECT_EQ(http::QueryParam(request.url, "api-version"), "2018-02-01");
  EXPECT_EQ(http::QueryParam(request.url, "resource"), "https://storage.azure.com/");
  EXPECT_EQ(http::QueryParam(request.url, "client_id"), "uami-1");
}

TEST(ManagedIdentityToken, AppServiceSendsItsHeaderAndGivesAnAbsoluteExpiry) {
  http::RecordingTransport msi([](const http::RecordedRequest&) -> Result<http::Response> {
    return testing::JsonReply(200, R"({"access_token":"tok","expires_on":"1800000900"})");
  });
  ManagedIdentity identity{"http://127.0.0.1:9/msi/token", "header-value", ""};
  auto token = FetchManagedIdentityToken(identity, kNow, &msi);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(token->expiration, system_clock::time_point(seconds(1'800'000'900)));
  const auto request = msi.requests().at(0);
  EXPECT_EQ(request.headers.Get("X-IDENTITY-HEADER").value_or(""), "header-value");
  EXPECT_FALSE(request.headers.Get("Metadata").has_value());
  EXPECT_EQ(http::QueryParam(request.url, "api-version"), "2019-08-01");
  EXPECT_EQ(http::QueryParam(request.url, "client_id"), "");
}

TEST(ManagedIdentityToken, NoAnswerSaysWhyAndWhatToChange) {
  http::RecordingTransport down([](const http::RecordedRequest&) -> Result<http::Response> {
    return DeadlineExceededError("connect timed out");
  });
  ManagedIdentity identity{"http://169.254.169.254/metadata/identity/oauth2/token", "", ""};
  auto token = FetchManagedIdentityToken(identity, kNow, &down);
  ASSERT_FALSE(token.ok());
  EXPECT_THAT(token.status().message(), HasSubstr("no answer within 1 s"));
  EXPECT_THAT(token.status().message(), HasSubstr("FERRY_AZURE_MANAGED_IDENTITY"));
  EXPECT_EQ(down.requests().at(0).url.find("http://169.254.169.254/"), 0u);
}

}  // namespace
}  // namespace ferry::internal_azure
