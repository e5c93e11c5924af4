// The order of the AWS credential chain with web identity in it: keys in the environment come
// first, web identity next (both variables, or an error saying which is missing), the files
// after; and the provider's source names the role without fetching anything at load time.
#include "storage/s3/aws_credential_chain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "storage/testing/fake_env_testutil.h"

namespace ferry::internal_s3 {
namespace {

using ::testing::HasSubstr;

class CredentialChainTest : public ::testing::Test {
 protected:
  CredentialChainTest() { env_.Set("HOME", home_.path().string()); }
  testing::TempDir home_;
  testing::FakeEnv env_;
};

TEST_F(CredentialChainTest, KeysInTheEnvironmentComeBeforeWebIdentity) {
  env_.Set("AWS_WEB_IDENTITY_TOKEN_FILE", (home_.path() / "token").string());
  env_.Set("AWS_ROLE_ARN", "arn:aws:iam::1:role/r");
  env_.Set("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE");
  env_.Set("AWS_SECRET_ACCESS_KEY", "secret");
  auto p = LoadAwsCredentialProvider({}, env_);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)->source(), "environment");
  EXPECT_EQ((*p)->Current().value().access_key_id, "AKIAIOSFODNN7EXAMPLE");
}

TEST_F(CredentialChainTest, WebIdentityIsTheSourceWhenBothVariablesAreSet) {
  env_.Set("AWS_WEB_IDENTITY_TOKEN_FILE", (home_.path() / "token").string());
  env_.Set("AWS_ROLE_ARN", "arn:aws:iam::1:role/r");
  env_.Set("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1");
  auto p = LoadAwsCredentialProvider({}, env_);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)->source(),
            "web identity (STS AssumeRoleWithWebIdentity of arn:aws:iam::1:role/r)");
  // Nothing was fetched yet; the missing token file is the first request's error, named.
  auto first = (*p)->Current();
  ASSERT_FALSE(first.ok());
  EXPECT_THAT(first.status().message(), HasSubstr("credentials from web identity"));
  EXPECT_THAT(first.status().message(), HasSubstr("AWS_WEB_IDENTITY_TOKEN_FILE"));
}

TEST_F(CredentialChainTest, HalfAWebIdentityOrABadDurationIsAnError) {
  env_.Set("AWS_ROLE_ARN", "arn:aws:iam::1:role/r");
  EXPECT_THAT(LoadAwsCredentialProvider({}, env_).status().message(),
              HasSubstr("AWS_WEB_IDENTITY_TOKEN_FILE is not"));
  env_.Unset("AWS_ROLE_ARN");
  env_.Set("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/token");
  EXPECT_THAT(LoadAwsCredentialProvider({}, env_).status().message(),
              HasSubstr("AWS_ROLE_ARN is not"));
  env_.Set("AWS_ROLE_ARN", "arn:aws:iam::1:role/r");
  env_.Set("FERRY_AWS_ROLE_DURATION_SECONDS", "forever");
  EXPECT_THAT(LoadAwsCredentialProvider({}, env_).status().message(),
              HasSubstr("FERRY_AWS_ROLE_DURATION_SECONDS"));
}

TEST_F(CredentialChainTest, WithoutWebIdentityTheStaticChainAnswers) {
  auto none = LoadAwsCredentialProvider({}, env_);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE((*none)->Current().value().anonymous());
  env_.Set("AWS_NO_SIGN_REQUEST", "true");
  env_.Set("AWS_ROLE_ARN", "arn:aws:iam::1:role/r");  // anonymous wins, as in the SDKs
  auto anonymous = LoadAwsCredentialProvider({}, env_);
  ASSERT_TRUE(anonymous.ok());
  EXPECT_EQ((*anonymous)->source(), "anonymous (AWS_NO_SIGN_REQUEST)");
}

TEST_F(CredentialChainTest, ARoleProfileIsAssumedWithItsSourceProfileKeys) {
  std::filesystem::create_directories(home_.path() / ".aws");
  ASSERT_TRUE(WriteFileAtomically(home_.path() / ".aws" / "credentials",
                                  "[base]\naws_access_key_id = AKIABASE\n"
                                  "aws_secret_access_key = base-secret\n")
                  .ok());
  ASSERT_TRUE(WriteFileAtomically(home_.path() / ".aws" / "config",
                                  "[profile cross]\nrole_arn = arn:aws:iam::2:role/reader\n"
                                  "source_profile = base\nduration_seconds = 900\n"
                                  "[profile lonely]\nrole_arn = arn:aws:iam::2:role/reader\n"
                                  "[profile keyless]\nrole_arn = arn:aws:iam::2:role/reader\n"
                                  "source_profile = nothing\n[profile nothing]\nregion = x\n")
                  .ok());
  env_.Set("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1");
  env_.Set("AWS_PROFILE", "cross");
  auto p = LoadAwsCredentialProvider({}, env_);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_THAT((*p)->source(), HasSubstr("role arn:aws:iam::2:role/reader (STS AssumeRole"));
  EXPECT_THAT((*p)->source(), HasSubstr("[profile cross]"));

  env_.Set("AWS_PROFILE", "lonely");
  EXPECT_THAT(LoadAwsCredentialProvider({}, env_).status().message(),
              HasSubstr("role_arn needs source_profile"));
  env_.Set("AWS_PROFILE", "keyless");
  EXPECT_THAT(LoadAwsCredentialProvider({}, env_).status().message(),
              HasSubstr("source_profile 'nothing' has no aws_access_key_id"));
}

TEST_F(CredentialChainTest, RoleProfilesNameTheirSourceAndRefuseALoop) {
  std::filesystem::create_directories(home_.path() / ".aws");
  ASSERT_TRUE(
      WriteFileAtomically(home_.path() / ".aws" / "config",
                          "[profile a]\nrole_arn = arn:aws:iam::2:role/a\nsource_profile = b\n"
                          "[profile b]\nrole_arn = arn:aws:iam::2:role/b\nsource_profile = a\n"
                          "[profile odd]\nrole_arn = arn:aws:iam::2:role/o\n"
                          "credential_source = Bogus\n"
                          "[profile task]\nrole_arn = arn:aws:iam::2:role/t\n"
                          "credential_source = EcsContainer\n"
                          "[profile host]\nrole_arn = arn:aws:iam::2:role/h\n"
                          "credential_source = Ec2InstanceMetadata\n")
          .ok());
  env_.Set("AWS_PROFILE", "a");
  EXPECT_THAT(LoadAwsCredentialProvider({}, env_).status().message(),
              HasSubstr("a chain of more than 4 roles (a loop?)"));
  env_.Set("AWS_PROFILE", "odd");
  EXPECT_THAT(LoadAwsCredentialProvider({}, env_).status().message(),
              HasSubstr("credential_source = Bogus is not one of them"));
  env_.Set("AWS_PROFILE", "task");
  EXPECT_THAT(LoadAwsCredentialProvider({}, env_).status().message(),
              HasSubstr("credential_source = EcsContainer, but AWS_CONTAINER_CREDENTIALS"));
  env_.Set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/x");
  EXPECT_THAT(LoadAwsCredentialProvider({}, env_).value()->source(),
              HasSubstr("with container credentials (http://169.254.170.2/v2/credentials/x)"));
  // Named as the source, the instance metadata service is asked at its default address.
  env_.Set("AWS_PROFILE", "host");
  EXPECT_THAT(LoadAwsCredentialProvider({}, env_).value()->source(),
              HasSubstr("with EC2 instance metadata (http://169.254.169.254)"));
}

// A source profile's keys win over its own role_arn; without keys, its credential_process is
// the source.
TEST_F(CredentialChainTest, ASourceProfilesKeysComeBeforeItsRoleThenItsProcess) {
  std::filesystem::create_directories(home_.path() / ".aws");
  ASSERT_TRUE(WriteFileAtomically(home_.path() / ".aws" / "credentials",
                                  "[keyed]\naws_access_key_id = AKIAKEYED\n"
                                  "aws_secret_access_key = keyed-secret\n")
                  .ok());
  ASSERT_TRUE(WriteFileAtomically(home_.path() / ".aws" / "config",
                                  "[profile keyed]\nrole_arn = arn:aws:iam::2:role/k\n"
                                  "[profile via-keys]\nrole_arn = arn:aws:iam::2:role/v\n"
                                  "source_profile = keyed\n"
                                  "[profile broker]\ncredential_process = /bin/true\n"
                                  "[profile via-broker]\nrole_arn = arn:aws:iam::2:role/b\n"
                                  "source_profile = broker\n")
                  .ok());
  env_.Set("AWS_PROFILE", "via-keys");
  const std::string keys = LoadAwsCredentialProvider({}, env_).value()->source();
  EXPECT_THAT(keys, HasSubstr("role arn:aws:iam::2:role/v (STS AssumeRole, "));
  EXPECT_EQ(keys.find("role/k"), std::string::npos) << "keys, not the source's own role";
  env_.Set("AWS_PROFILE", "via-broker");
  EXPECT_THAT(LoadAwsCredentialProvider({}, env_).value()->source(),
              HasSubstr("STS AssumeRole with credential_process ("));
}

}  // namespace
}  // namespace ferry::internal_s3
