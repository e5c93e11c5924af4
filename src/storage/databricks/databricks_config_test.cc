// dbfs:/Volumes URLs, the workspace and credentials as the environment and ~/.databrickscfg give
// them, OAuth machine-to-machine against a recording token endpoint, and the FUSE folder.
// tests/integration/databricks_test.cc runs the same sources against the loopback Files API
// server of scripts/test-servers.sh.
#include "storage/databricks/databricks_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "storage/base64.h"
#include "storage/http/recording_transport.h"
#include "storage/testing/fake_env_testutil.h"
#include "storage/testing/oauth_testutil.h"

namespace ferry::internal_databricks {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;
using ::testing::HasSubstr;
using ::testing::Not;

const system_clock::time_point kNow{seconds(1'800'000'000)};

TEST(ParseVolumeUrl, SplitsTheVolumeFromTheKey) {
  auto p = ParseVolumeUrl("dbfs:/Volumes/main/ml/images/train/shard.00000.mds");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->volume, "/Volumes/main/ml/images");
  EXPECT_EQ(p->key, "train/shard.00000.mds");
  EXPECT_EQ(VolumeUrl(p->volume, p->key), "dbfs:/Volumes/main/ml/images/train/shard.00000.mds");

  auto root = ParseVolumeUrl("dbfs:///Volumes/main/ml/images");
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->volume, "/Volumes/main/ml/images");
  EXPECT_EQ(root->key, "");
  EXPECT_EQ(VolumeUrl(root->volume, root->key), "dbfs:/Volumes/main/ml/images");

  auto folder = ParseVolumeUrl("DBFS:/Volumes/main/ml/images/train/");
  ASSERT_TRUE(folder.ok());
  EXPECT_EQ(folder->key, "train/");
}

TEST(ParseVolumeUrl, RefusesWhatIsNotAVolumePath) {
  for (const char* url :
       {"dbfs:/mnt/data/x", "dbfs:/Volumes/main/ml", "dbfs:/Volumes/main//v/x",
        "dbfs:/Volumes/main/ml/v/../w/x", "dbfs:/Volumes/main/ml/v/./x", "s3://bucket/x"}) {
    auto p = ParseVolumeUrl(url);
    ASSERT_FALSE(p.ok()) << url;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << url;
    EXPECT_THAT(p.status().message(), HasSubstr(url));
  }
  EXPECT_THAT(ParseVolumeUrl("dbfs:/mnt/data/x").status().message(),
              HasSubstr("only Unity Catalog volumes"));
}

TEST(LoadDatabricksConfig, APersonalAccessTokenFromTheEnvironment) {
  testing::FakeEnv env{{"DATABRICKS_HOST", "adb-123.4.azuredatabricks.net/"},
                       {"DATABRICKS_TOKEN", "dapi-secret-123"},
                       {"HOME", "/nonexistent"}};
  internal_storage::CredentialTrace trace;
  auto config = LoadDatabricksConfig(env, {}, &trace);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->host, "https://adb-123.4.azuredatabricks.net");
  EXPECT_FALSE(config->expiring);
  auto token = config->token_provider->Current();
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(token->access_token, "dapi-secret-123");
  EXPECT_FALSE(token->expiration.has_value());
  EXPECT_THAT(config->token_provider->source(), HasSubstr("DATABRICKS_TOKEN"));
  for (const auto& step : trace.steps) EXPECT_THAT(step.found, Not(HasSubstr("dapi-secret")));
}

TEST(LoadDatabricksConfig, MissingSettingsSayWhatToSet) {
  auto no_host = LoadDatabricksConfig(testing::FakeEnv{{"HOME", "/nonexistent"}});
  ASSERT_FALSE(no_host.ok());
  EXPECT_THAT(no_host.status().message(), HasSubstr("DATABRICKS_HOST"));

  auto no_secret = LoadDatabricksConfig(testing::FakeEnv{{"HOME", "/nonexistent"},
                                                         {"DATABRICKS_HOST", "https://w.example"},
                                                         {"DATABRICKS_CLIENT_ID", "sp-1"}});
  ASSERT_FALSE(no_secret.ok());
  EXPECT_THAT(no_secret.status().message(), HasSubstr("DATABRICKS_CLIENT_SECRET is missing"));

  auto plain = LoadDatabricksConfig(
      testing::FakeEnv{{"DATABRICKS_HOST", "http://w.example"}, {"DATABRICKS_TOKEN", "dapi-x"}});
  ASSERT_FALSE(plain.ok());
  EXPECT_THAT(plain.status().message(), HasSubstr("https only"));
  EXPECT_THAT(plain.status().message(), Not(HasSubstr("dapi-x")));

  auto path = LoadDatabricksConfig(
      testing::FakeEnv{{"DATABRICKS_HOST", "https://w.example/x"}, {"DATABRICKS_TOKEN", "dapi-x"}});
  ASSERT_FALSE(path.ok());
  EXPECT_THAT(path.status().message(), HasSubstr("without a path"));
}

class DatabricksProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(WriteFileAtomically(tmp_ / "cfg",
                                    "[DEFAULT]\nhost = https://default.example\ntoken = dapi-d\n"
                                    "\n[sp]\nhost = https://sp.example\nclient_id = sp-7\n"
                                    "client_secret = dose-secret\n")
                    .ok());
    env_.Set("DATABRICKS_CONFIG_FILE", (tmp_ / "cfg").string());
  }
  ferry::testing::TempDir tmp_;
  testing::FakeEnv env_;
};

TEST_F(DatabricksProfileTest, TheDefaultProfileFillsInWhatTheEnvironmentLeavesOut) {
  auto config = LoadDatabricksConfig(env_);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->host, "https://default.example");
  EXPECT_EQ(config->token_provider->Current()->access_token, "dapi-d");
  EXPECT_THAT(config->host_source, HasSubstr("profile DEFAULT of"));
  // The environment's host wins over the file's.
  env_.Set("DATABRICKS_HOST", "https://env.example");
  EXPECT_EQ(LoadDatabricksConfig(env_)->host, "https://env.example");
}

TEST_F(DatabricksProfileTest, ANamedProfileWithAServicePrincipal) {
  env_.Set("DATABRICKS_CONFIG_PROFILE", "sp");
  internal_storage::CredentialTrace trace;
  auto config = LoadDatabricksConfig(
      env_, [] { return kNow; }, &trace);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->host, "https://sp.example");
  EXPECT_TRUE(config->expiring);
  EXPECT_THAT(config->token_provider->source(), HasSubstr("sp-7"));
  for (const auto& step : trace.steps) EXPECT_THAT(step.found, Not(HasSubstr("dose-secret")));

  env_.Set("DATABRICKS_CONFIG_PROFILE", "nope");
  auto missing = LoadDatabricksConfig(env_);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("no profile [nope]"));
}

TEST_F(DatabricksProfileTest, AMalformedFileIsAnErrorNamingItsLineNotItsText) {
  ASSERT_TRUE(
      WriteFileAtomically(tmp_ / "cfg", "[DEFAULT]\nhost = https://w.example\ndapi-secret-9\n")
          .ok());
  auto config = LoadDatabricksConfig(env_);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(config.status().message(), HasSubstr((tmp_ / "cfg").string() + ":3"));
  EXPECT_THAT(config.status().message(), Not(HasSubstr("dapi-secret-9")));
}

TEST_F(DatabricksProfileTest, EnvironmentCredentialsLeaveTheFileUnread) {
  env_.Set("DATABRICKS_HOST", "https://env.example");
  env_.Set("DATABRICKS_TOKEN", "dapi-env");
  ASSERT_TRUE(WriteFileAtomically(tmp_ / "cfg", "[DEFAULT\nbroken").ok());
  auto config = LoadDatabricksConfig(env_);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->token_provider->Current()->access_token, "dapi-env");
}

TEST(FetchDatabricksOAuthToken, PostsTheClientCredentialsGrantWithBasicAuth) {
  http::RecordingTransport workspace([](const http::RecordedRequest&) -> Result<http::Response> {
    return testing::JsonReply(
        200, R"({"access_token":"eyJoauth","token_type":"Bearer","expires_in":3600,)"
             R"("scope":"all-apis"})");
  });
  auto token =
      FetchDatabricksOAuthToken("https://w.example", "sp-1", "dose-s3cret", kNow, &workspace);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(token->access_token, "eyJoauth");
  EXPECT_EQ(token->expiration, kNow + seconds(3600));
  const auto requests = workspace.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].url, "https://w.example/oidc/v1/token");
  EXPECT_EQ(requests[0].headers.Get("Authorization").value_or(""),
            "Basic " + Base64Encode("sp-1:dose-s3cret"));
  const auto form = testing::FormFields(requests[0].body);
  EXPECT_EQ(form.at("grant_type"), "client_credentials");
  EXPECT_EQ(form.at("scope"), "all-apis");
  EXPECT_EQ(form.count("client_secret"), 0u);
}

TEST(FetchDatabricksOAuthToken, ARefusalNamesThePrincipalNeverTheSecret) {
  http::RecordingTransport workspace([](const http::RecordedRequest&) -> Result<http::Response> {
    return testing::JsonReply(
        401, R"({"error":"invalid_client","error_description":"Client authentication failed"})");
  });
  auto token =
      FetchDatabricksOAuthToken("https://w.example", "sp-1", "dose-s3cret", kNow, &workspace);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(token.status().message(), HasSubstr("sp-1"));
  EXPECT_THAT(token.status().message(), HasSubstr("invalid_client"));
  EXPECT_THAT(token.status().message(), HasSubstr("DATABRICKS_CLIENT_SECRET"));
  EXPECT_THAT(token.status().message(), Not(HasSubstr("dose-s3cret")));
}

TEST(FuseVolumeFolder, UsedWhenTheVolumeIsMountedUnlessTurnedOff) {
  ferry::testing::TempDir root;
  std::filesystem::create_directories(root / "main" / "ml" / "images");
  testing::FakeEnv env{{"FERRY_DATABRICKS_VOLUMES_ROOT", root.path().string()}};
  auto folder = FuseVolumeFolder("/Volumes/main/ml/images", env);
  ASSERT_TRUE(folder.has_value());
  EXPECT_EQ(*folder, root / "main" / "ml" / "images");
  EXPECT_FALSE(FuseVolumeFolder("/Volumes/main/ml/other", env).has_value());
  env.Set("FERRY_DATABRICKS_FUSE", "false");
  EXPECT_FALSE(FuseVolumeFolder("/Volumes/main/ml/images", env).has_value());
}

}  // namespace
}  // namespace ferry::internal_databricks
