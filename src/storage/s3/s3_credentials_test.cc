#include "storage/s3/s3_credentials.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "storage/s3/s3_testutil.h"
#include "storage/testing/fake_env_testutil.h"

namespace ferry::internal_s3 {
namespace {

using s3_test::kSecret;
using s3_test::kToken;

// Every test runs with a fresh HOME and none of the AWS variables set.
class CredentialsTest : public ::testing::Test {
 protected:
  CredentialsTest() {
    env_.Set("HOME", home_.path().string());
    std::filesystem::create_directories(home_.path() / ".aws");
  }

  void WriteAwsFile(const std::string& name, std::string_view text) {
    ASSERT_TRUE(WriteFileAtomically(home_.path() / ".aws" / name, text).ok());
  }

  testing::TempDir home_;
  testing::FakeEnv env_;
};

TEST_F(CredentialsTest, EnvironmentComesFirst) {
  env_.Set("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE");
  env_.Set("AWS_SECRET_ACCESS_KEY", std::string(kSecret));
  env_.Set("AWS_SESSION_TOKEN", std::string(kToken));
  WriteAwsFile("credentials",
               "[default]\naws_access_key_id = FROMFILE\n"
               "aws_secret_access_key = filesecret\n");
  auto c = LoadAwsCredentials({}, env_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "AKIAIOSFODNN7EXAMPLE");
  EXPECT_EQ(c->secret_access_key, kSecret);
  EXPECT_EQ(c->session_token, kToken);
  EXPECT_EQ(c->source, "environment");
  EXPECT_FALSE(c->anonymous());
}

TEST_F(CredentialsTest, HalfSetEnvironmentIsAnErrorWithoutTheSecret) {
  env_.Set("AWS_SECRET_ACCESS_KEY", std::string(kSecret));
  auto c = LoadAwsCredentials({}, env_);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message().find(kSecret), std::string::npos);

  env_.Unset("AWS_SECRET_ACCESS_KEY");
  env_.Set("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE");
  EXPECT_EQ(LoadAwsCredentials({}, env_).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(CredentialsTest, SharedCredentialsFileDefaultProfile) {
  WriteAwsFile("credentials",
               fmt::format("# comment\n[default]\n  aws_access_key_id = AKIDDEFAULT  \n"
                           "aws_secret_access_key = {}\n\n[dev]\naws_access_key_id = AKIDDEV\n"
                           "aws_secret_access_key = devsecret\naws_session_token = devtoken\n",
                           kSecret));
  auto c = LoadAwsCredentials({}, env_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "AKIDDEFAULT");
  EXPECT_EQ(c->secret_access_key, kSecret);
  EXPECT_EQ(c->session_token, "");
  EXPECT_NE(c->source.find(".aws/credentials [default]"), std::string::npos) << c->source;

  env_.Set("AWS_PROFILE", "dev");
  c = LoadAwsCredentials({}, env_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "AKIDDEV");
  EXPECT_EQ(c->session_token, "devtoken");

  // An explicit option beats AWS_PROFILE.
  c = LoadAwsCredentials({.profile = "default"}, env_);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->access_key_id, "AKIDDEFAULT");
}

TEST_F(CredentialsTest, FileLocationsFromTheEnvironment) {
  testing::TempDir elsewhere;
  ASSERT_TRUE(WriteFileAtomically(elsewhere / "creds",
                                  "[default]\naws_access_key_id=AKIDOTHER\n"
                                  "aws_secret_access_key=other\n")
                  .ok());
  ASSERT_TRUE(WriteFileAtomically(elsewhere / "conf", "[default]\nregion = ap-south-1\n").ok());
  env_.Set("AWS_SHARED_CREDENTIALS_FILE", (elsewhere / "creds").string());
  env_.Set("AWS_CONFIG_FILE", (elsewhere / "conf").string());
  auto c = LoadAwsCredentials({}, env_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "AKIDOTHER");
  EXPECT_EQ(LoadAwsRegion({}, env_).value_or(""), "ap-south-1");
}

TEST_F(CredentialsTest, ConfigFileProfileSections) {
  WriteAwsFile("config",
               "[default]\nregion = eu-north-1\n"
               "[profile ci]\nregion = us-west-1\naws_access_key_id = AKIDCI\n"
               "aws_secret_access_key = cisecret\n");
  auto c = LoadAwsCredentials({.profile = "ci"}, env_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "AKIDCI");
  EXPECT_NE(c->source.find("[profile ci]"), std::string::npos);
  EXPECT_EQ(LoadAwsRegion({.profile = "ci"}, env_).value_or(""), "us-west-1");
  EXPECT_EQ(LoadAwsRegion({}, env_).value_or(""), "eu-north-1");
}

TEST_F(CredentialsTest, NamedProfileThatExistsNowhereIsAnError) {
  WriteAwsFile("credentials", "[default]\naws_access_key_id=A\naws_secret_access_key=B\n");
  env_.Set("AWS_PROFILE", "missing");
  auto c = LoadAwsCredentials({}, env_);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("'missing'"), std::string::npos);
}

TEST_F(CredentialsTest, KeyIdWithoutSecretInAFileIsAnError) {
  WriteAwsFile("credentials", "[default]\naws_access_key_id=AKIDLONELY\n");
  auto c = LoadAwsCredentials({}, env_);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(CredentialsTest, MalformedFileErrorNamesTheLineNotTheSecret) {
  WriteAwsFile("credentials", fmt::format("[default]\naws_access_key_id=A\n{}\n", kSecret));
  auto c = LoadAwsCredentials({}, env_);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(c.status().message().find("credentials:3"), std::string::npos);
  EXPECT_EQ(c.status().message().find(kSecret), std::string::npos);
}

TEST_F(CredentialsTest, NothingFoundMeansUnsigned) {
  auto c = LoadAwsCredentials({}, env_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->anonymous());
  EXPECT_EQ(c->source, "none found");
}

TEST_F(CredentialsTest, AnonymousOnRequest) {
  env_.Set("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE");
  env_.Set("AWS_SECRET_ACCESS_KEY", std::string(kSecret));
  auto c = LoadAwsCredentials({.anonymous = true}, env_);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->anonymous());

  env_.Set("AWS_NO_SIGN_REQUEST", "true");
  c = LoadAwsCredentials({}, env_);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->anonymous());
  EXPECT_NE(c->source.find("AWS_NO_SIGN_REQUEST"), std::string::npos);

  env_.Set("AWS_NO_SIGN_REQUEST", "false");
  c = LoadAwsCredentials({}, env_);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->anonymous());
}

TEST_F(CredentialsTest, RegionOrder) {
  EXPECT_EQ(LoadAwsRegion({}, env_).value_or(""), "us-east-1");
  WriteAwsFile("config", "[default]\nregion = eu-west-3\n");
  EXPECT_EQ(LoadAwsRegion({}, env_).value_or(""), "eu-west-3");
  env_.Set("AWS_DEFAULT_REGION", "ca-central-1");
  EXPECT_EQ(LoadAwsRegion({}, env_).value_or(""), "ca-central-1");
  env_.Set("AWS_REGION", "sa-east-1");
  EXPECT_EQ(LoadAwsRegion({}, env_).value_or(""), "sa-east-1");
}

TEST(AwsCredentialsTest, EveryPrintedFormIsRedacted) {
  AwsCredentials c{"AKIAIOSFODNN7EXAMPLE", std::string(kSecret), std::string(kToken),
                   "environment"};
  std::ostringstream os;
  os << c;
  const std::string forms[] = {
      c.ToString(), fmt::format("{}", c), os.str(), ::testing::PrintToString(c),
      Status(StatusCode::kUnauthenticated, fmt::format("bad: {}", c)).ToString()};
  for (const std::string& s : forms) {
    EXPECT_EQ(s.find(kSecret), std::string::npos) << s;
    EXPECT_EQ(s.find(kToken), std::string::npos) << s;
    EXPECT_EQ(s.find("AKIAIOSFODNN7EXAMPLE"), std::string::npos) << s;
    EXPECT_NE(s.find("AKIA"), std::string::npos) << s;  // enough to tell keys apart
    EXPECT_NE(s.find("environment"), std::string::npos) << s;
  }
  EXPECT_EQ(AwsCredentials{}.ToString(), "no credentials");
}

}  // namespace
}  // namespace ferry::internal_s3
