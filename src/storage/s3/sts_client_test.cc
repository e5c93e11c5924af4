// The STS call behind the web identity source, against a recording transport: the form it
// posts (the token read afresh from its file, trimmed), the credentials it reads back, and every
// failure - a missing or empty token file, STS refusing the token or the role, a reply that is
// not STS's - named without the token. moto's STS answers the same call in the integration
// tests (tests/integration/aws_credentials_test.cc).
#include "storage/s3/sts_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "storage/http/http_date.h"
#include "storage/http/recording_transport.h"
#include "storage/http/url_encoding.h"
#include "storage/testing/fake_env_testutil.h"

namespace ferry::internal_s3 {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kIdentityToken[] = "eyJhbGciOiJSUzI1NiJ9.secret-web-identity-token.c2lnbmF0dXJl";
constexpr char kRoleArn[] = "arn:aws:iam::123456789012:role/trainer";

constexpr char kReply[] =
    R"(<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <AccessKeyId>ASIAEXAMPLEKEY000001</AccessKeyId>
      <SecretAccessKey>temporary-secret</SecretAccessKey>
      <SessionToken>temporary-session-token</SessionToken>
      <Expiration>2026-12-03T17:00:20.000Z</Expiration>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
</AssumeRoleWithWebIdentityResponse>)";

std::map<std::string, std::string> Form(const std::string& body) {
  std::map<std::string, std::string> fields;
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find('&', start);
    if (end == std::string::npos) end = body.size();
    const std::string pair = body.substr(start, end - start);
    const size_t eq = pair.find('=');
    fields[http::FormDecode(pair.substr(0, eq))] = http::FormDecode(pair.substr(eq + 1));
    start = end + 1;
  }
  return fields;
}

class StsClientTest : public ::testing::Test {
 protected:
  StsClientTest() {
    role_.token_file = (tmp_.path() / "token").string();
    role_.role_arn = kRoleArn;
    role_.session_name = "ferry-test";
    role_.endpoint = "http://127.0.0.1:1";
    role_.duration_seconds = 20;
    EXPECT_TRUE(WriteFileAtomically(role_.token_file, std::string(kIdentityToken) + "\n").ok());
  }

  testing::TempDir tmp_;
  WebIdentityRole role_;
};

TEST_F(StsClientTest, PostsTheTokenAndReadsTheTemporaryCredentials) {
  http::RecordingTransport sts([](const http::RecordedRequest&) -> Result<http::Response> {
    return http::Response{200, {}, kReply};
  });
  auto c = AssumeRoleWithWebIdentity(role_, &sts);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIAEXAMPLEKEY000001");
  EXPECT_EQ(c->secret_access_key, "temporary-secret");
  EXPECT_EQ(c->session_token, "temporary-session-token");
  ASSERT_TRUE(c->expiration.has_value());
  EXPECT_EQ(*c->expiration, http::ParseIso8601("2026-12-03T17:00:20Z").value());
  EXPECT_THAT(c->source, HasSubstr(kRoleArn));
  EXPECT_THAT(c->ToString(), Not(HasSubstr("temporary-secret")));

  const std::vector<http::RecordedRequest> requests = sts.requests();
  ASSERT_EQ(requests.size(), 1u);
  const http::RecordedRequest& r = requests[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.url, "http://127.0.0.1:1/");
  EXPECT_FALSE(r.headers.Get("Authorization"));  // the token is the proof, nothing is signed
  const auto form = Form(r.body);
  EXPECT_EQ(form.at("Action"), "AssumeRoleWithWebIdentity");
  EXPECT_EQ(form.at("Version"), "2011-06-15");
  EXPECT_EQ(form.at("RoleArn"), kRoleArn);
  EXPECT_EQ(form.at("RoleSessionName"), "ferry-test");
  EXPECT_EQ(form.at("WebIdentityToken"), kIdentityToken);  // without the file's newline
  EXPECT_EQ(form.at("DurationSeconds"), "20");

  // The platform rotates the token: the next call reads the file again.
  ASSERT_TRUE(WriteFileAtomically(role_.token_file, "rotated-token").ok());
  ASSERT_TRUE(AssumeRoleWithWebIdentity(role_, &sts).ok());
  EXPECT_EQ(Form(sts.requests()[1].body).at("WebIdentityToken"), "rotated-token");
}

TEST_F(StsClientTest, RefusalsAreNamedAndCarryNoToken) {
  struct Case {
    int status;
    std::string code;
    StatusCode expected;
  };
  for (const Case& c : {Case{400, "InvalidIdentityToken", StatusCode::kUnauthenticated},
                        Case{400, "ExpiredTokenException", StatusCode::kUnauthenticated},
                        Case{403, "AccessDenied", StatusCode::kPermissionDenied},
                        Case{503, "ServiceUnavailable", StatusCode::kUnavailable},
                        Case{400, "Throttling", StatusCode::kUnavailable}}) {
    http::RecordingTransport sts([&](const http::RecordedRequest&) -> Result<http::Response> {
      return http::Response{
          c.status,
          {},
          fmt::format("<ErrorResponse><Error><Code>{}</Code><Message>token {} refused</Message>"
                      "</Error></ErrorResponse>",
                      c.code, "[redacted by STS]")};
    });
    auto refused = AssumeRoleWithWebIdentity(role_, &sts);
    ASSERT_FALSE(refused.ok()) << c.code;
    EXPECT_EQ(refused.status().code(), c.expected) << refused.status().ToString();
    EXPECT_THAT(refused.status().message(), HasSubstr(c.code));
    EXPECT_THAT(refused.status().message(), HasSubstr(kRoleArn));
    EXPECT_THAT(refused.status().message(), HasSubstr("AssumeRoleWithWebIdentity"));
    EXPECT_THAT(refused.status().message(), Not(HasSubstr(kIdentityToken)));
  }
}

TEST_F(StsClientTest, ATokenFileMissingEmptyOrHugeAndABadReplyAreErrorsNamingThem) {
  http::RecordingTransport sts([](const http::RecordedRequest&) -> Result<http::Response> {
    return http::Response{200, {}, "<html>captive portal</html>"};
  });
  auto bad_reply = AssumeRoleWithWebIdentity(role_, &sts);
  EXPECT_EQ(bad_reply.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(bad_reply.status().message(), HasSubstr("holds no AssumeRoleWithWebIdentityResult"));

  ASSERT_TRUE(WriteFileAtomically(role_.token_file, "\n").ok());
  auto empty = AssumeRoleWithWebIdentity(role_, &sts);
  EXPECT_THAT(empty.status().message(), HasSubstr("is empty"));
  ASSERT_TRUE(WriteFileAtomically(role_.token_file, std::string(100'000, 'x')).ok());
  auto huge = AssumeRoleWithWebIdentity(role_, &sts);
  EXPECT_THAT(huge.status().message(), HasSubstr("not a token"));
  role_.token_file = (tmp_.path() / "missing").string();
  auto missing = AssumeRoleWithWebIdentity(role_, &sts);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(role_.token_file));
  EXPECT_THAT(missing.status().message(), HasSubstr("AWS_WEB_IDENTITY_TOKEN_FILE"));
  EXPECT_EQ(sts.requests().size(), 1u);  // only the first reached STS
}

TEST(StsAssumeRole, SignsTheCallWithTheSourceKeysForSts) {
  http::RecordingTransport sts([](const http::RecordedRequest&) -> Result<http::Response> {
    return http::Response{200, {}, R"(<AssumeRoleResponse><AssumeRoleResult><Credentials>
      <AccessKeyId>ASIAEXAMPLEKEY000001</AccessKeyId><SecretAccessKey>s</SecretAccessKey>
      <SessionToken>t</SessionToken><Expiration>2026-12-03T17:00:20Z</Expiration>
      </Credentials></AssumeRoleResult></AssumeRoleResponse>)"};
  });
  const AwsCredentials source{"AKIASOURCEKEY0000001", "source-secret", "source-session", "base"};
  const AssumedRole role{kRoleArn,    "ferry-test", "external-42", "http://127.0.0.1:1",
                         "eu-west-1", 900};
  auto c = AssumeRole(role, source, &sts);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIAEXAMPLEKEY000001");
  EXPECT_THAT(c->source, HasSubstr("STS AssumeRole with base"));
  const auto requests = sts.requests();
  ASSERT_EQ(requests.size(), 1u);
  const auto form = Form(requests[0].body);
  EXPECT_EQ(form.at("Action"), "AssumeRole");
  EXPECT_EQ(form.at("RoleArn"), kRoleArn);
  EXPECT_EQ(form.at("ExternalId"), "external-42");
  EXPECT_EQ(form.at("DurationSeconds"), "900");
  const std::string authorization(requests[0].headers.Get("Authorization").value_or(""));
  EXPECT_THAT(authorization, HasSubstr("Credential=AKIASOURCEKEY0000001/"));
  EXPECT_THAT(authorization, HasSubstr("/eu-west-1/sts/aws4_request"));
  EXPECT_EQ(requests[0].headers.Get("x-amz-security-token").value_or(""), "source-session");

  http::RecordingTransport refusing([](const http::RecordedRequest&) -> Result<http::Response> {
    return http::Response{403,
                          {},
                          "<ErrorResponse><Error><Code>AccessDenied</Code>"
                          "<Message>not trusted</Message></Error></ErrorResponse>"};
  });
  auto refused = AssumeRole(role, source, &refusing);
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(refused.status().message(), HasSubstr("STS AssumeRole of"));
  EXPECT_THAT(refused.status().message(), Not(HasSubstr("source-secret")));
  EXPECT_THAT(refused.status().message(), Not(HasSubstr("source-session")));
}

TEST(StsEndpoint, TheVariablesThenTheRegionalEndpoint) {
  EXPECT_EQ(StsEndpoint("eu-west-1", testing::FakeEnv{}), "https://sts.eu-west-1.amazonaws.com");
  EXPECT_EQ(StsEndpoint("eu-west-1", testing::FakeEnv{{"AWS_ENDPOINT_URL", "http://h:1/"}}),
            "http://h:1");
  EXPECT_EQ(StsEndpoint("eu-west-1", testing::FakeEnv{{"AWS_ENDPOINT_URL", "http://h:1"},
                                                      {"AWS_ENDPOINT_URL_STS", "http://s:2"}}),
            "http://s:2");
}

}  // namespace
}  // namespace ferry::internal_s3
