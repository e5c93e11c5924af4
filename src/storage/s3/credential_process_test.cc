// A profile's credential_process, run for real through /bin/sh: the chain picks it for a profile
// without keys (and not over keys), its credentials and expiry are read, it runs again once they
// expire, and its failures name the profile and the program with the first line of what it said
// on standard error - never its arguments or what it printed on standard output.
#include "storage/s3/credential_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "storage/s3/aws_credential_chain.h"
#include "storage/testing/fake_env_testutil.h"

namespace ferry::internal_s3 {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class CredentialProcessTest : public ::testing::Test {
 protected:
  CredentialProcessTest() {
    env_.Set("HOME", home_.path().string());
    std::filesystem::create_directories(home_.path() / ".aws");
  }
  // A script that prints credentials numbered by how often it ran, expiring at `expiration`.
  std::string Script(const std::string& expiration) {
    const auto script = home_.path() / "broker.sh";
    const auto count = home_.path() / "runs";
    const std::string extra =
        expiration.empty() ? "" : R"(, "Expiration": ")" + expiration + R"(")";
    const std::string text = "#!/bin/sh\necho x >> '" + count.string() + "'\nn=$(wc -l < '" +
                             count.string() +
                             R"(')
printf '{"Version": 1, "AccessKeyId": "ASIAPROC%s", "SecretAccessKey": "proc-secret", )" +
                             R"("SessionToken": "tok")" + extra + "}' \"$n\"\n";
    EXPECT_TRUE(WriteFileAtomically(script, text).ok());
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
    return script.string();
  }
  void Config(const std::string& text) {
    ASSERT_TRUE(WriteFileAtomically(home_.path() / ".aws" / "config", text).ok());
  }
  testing::TempDir home_;
  testing::FakeEnv env_;
};

TEST_F(CredentialProcessTest, AProfileWithoutKeysRunsItsProgram) {
  Config(fmt::format("[profile sso]\ncredential_process = {} --profile sso\n", Script("")));
  env_.Set("AWS_PROFILE", "sso");
  auto provider = LoadAwsCredentialProvider({}, env_);
  ASSERT_TRUE(provider.ok()) << provider.status().ToString();
  EXPECT_THAT((*provider)->source(), HasSubstr("credential_process ("));
  EXPECT_THAT((*provider)->source(), HasSubstr("config [profile sso])"));
  auto c = (*provider)->Current();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIAPROC1");
  EXPECT_EQ(c->secret_access_key, "proc-secret");
  EXPECT_EQ(c->session_token, "tok");
  EXPECT_FALSE(c->expiration.has_value());
  EXPECT_EQ((*provider)->Current()->access_key_id, "ASIAPROC1") << "no expiry: run once";

  // Keys in the profile come first, as in the SDKs.
  ASSERT_TRUE(WriteFileAtomically(home_.path() / ".aws" / "credentials",
                                  "[sso]\naws_access_key_id = AKIASTATIC\n"
                                  "aws_secret_access_key = static-secret\n")
                  .ok());
  EXPECT_THAT(LoadAwsCredentialProvider({}, env_).value()->source(),
              HasSubstr("credentials [sso]"));
}

TEST_F(CredentialProcessTest, ExpiringCredentialsAreFetchedAgain) {
  // Expired already: every Current() runs the program again.
  Config(fmt::format("[default]\ncredential_process = {}\n", Script("2020-01-01T00:00:00Z")));
  auto provider = LoadAwsCredentialProvider({}, env_).value();
  EXPECT_EQ(provider->Current().value().access_key_id, "ASIAPROC1");
  EXPECT_EQ(provider->Current().value().access_key_id, "ASIAPROC2");
}

TEST_F(CredentialProcessTest, FailuresNameTheProfileAndCommandNeverTheOutput) {
  auto failing = RunCredentialProcess(
      "echo '{\"AccessKeyId\": \"AKIALEAK\", \"SecretAccessKey\": \"leaked-secret\"}'; "
      "echo 'token expired: run aws sso login' >&2; echo second line >&2; exit 2",
      "[profile sso] in config");
  ASSERT_FALSE(failing.ok());
  EXPECT_EQ(failing.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(failing.status().message(),
              HasSubstr("credential_process of [profile sso] in config"));
  EXPECT_THAT(failing.status().message(),
              HasSubstr("exited with status 2: token expired: run aws sso login"));
  EXPECT_THAT(failing.status().message(), Not(HasSubstr("second line")));
  EXPECT_THAT(failing.status().message(), Not(HasSubstr("leaked-secret")));

  for (const char* bad : {"not json", R"({"AccessKeyId": "A", "SecretAccessKey": "s3"})",
                          R"({"Version": 2, "AccessKeyId": "A", "SecretAccessKey": "s3"})",
                          R"({"Version": 1, "AccessKeyId": "A"})",
                          R"({"Version": 1, "AccessKeyId": "A", "SecretAccessKey": "s3cr3t",
                              "Expiration": "tomorrow"})"}) {
    auto parsed = ParseCredentialProcessOutput(bad, "credential_process of p");
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("credential_process of p")) << bad;
    EXPECT_THAT(parsed.status().message(), Not(HasSubstr("s3cr3t"))) << bad;
  }
  EXPECT_EQ(RunCredentialProcess("exit 0", "p").status().code(), StatusCode::kDataLoss);
  // Assignments before the program are not the program: they may hold secrets.
  auto assigned = RunCredentialProcess("API_PASS=s3cret-word exit 3", "p");
  EXPECT_THAT(assigned.status().message(), HasSubstr("credential_process of p (exit)"));
  EXPECT_THAT(assigned.status().message(), Not(HasSubstr("s3cret-word")));
}

}  // namespace
}  // namespace ferry::internal_s3
