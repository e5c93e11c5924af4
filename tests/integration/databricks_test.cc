// Databricks volumes on the loopback workspace of scripts/test-servers.sh (Files API 2.0 and the
// OAuth token endpoint): a service principal's tokens of 6 s life renewed while a store reads,
// and the errors a user meets - a wrong token, a volume without write access, a volume that does
// not exist - each naming the URL and what to check, never a secret. The conformance suite runs
// the same store in store_conformance_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/storage/registry.h"
#include "storage/databricks/databricks_store.h"
#include "storage/testing/fake_env_testutil.h"
#include "tests/integration/server_env.h"
#include "tests/integration/stream_testutil.h"

namespace ferry::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

nlohmann::json WorkspaceStats() {
  auto web = OpenUrl(ServerEnv("DATABRICKS_HOST") + "/_stats");
  EXPECT_TRUE(web.ok());
  return nlohmann::json::parse(web->store->Get(web->key).value_or("{}"));
}

std::string VolumeUrl(const std::string& volume_variable, const std::string& key) {
  return fmt::format("dbfs:{}/{}", ServerEnv(volume_variable), key);
}

FakeEnv ServicePrincipal() {
  return FakeEnv{{"DATABRICKS_HOST", ServerEnv("DATABRICKS_HOST")},
                 {"DATABRICKS_CLIENT_ID", ServerEnv("DATABRICKS_CLIENT_ID")},
                 {"DATABRICKS_CLIENT_SECRET", ServerEnv("DATABRICKS_CLIENT_SECRET")},
                 {"HOME", "/nonexistent"}};
}

TEST(Databricks, OAuthTokensAreRenewedWhileAStoreReads) {
  const std::string base = "oauth/" + RunId() + "/";
  UseDatabricks();
  auto writer = OpenUrl(VolumeUrl("DATABRICKS_VOLUME", base + "x.bin"));
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE(writer->store->Put(writer->key, "payload").ok());

  const int issued_before = WorkspaceStats()["oauth_tokens"].get<int>();
  const int expired_before = WorkspaceStats()["expired"].get<int>();
  auto opened = internal_databricks::OpenDatabricksUrl(VolumeUrl("DATABRICKS_VOLUME", base),
                                                       ServicePrincipal());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  // Tokens live 6 s; reading for 14 s needs at least two renewals, and no read may fail.
  int failures = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(14);
  int reads = 0;
  while (std::chrono::steady_clock::now() < end) {
    auto got = opened->store->Get(opened->key + "x.bin");
    if (!got.ok() || *got != "payload") {
      ++failures;
      ADD_FAILURE() << got.status().ToString();
    }
    ++reads;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(failures, 0);
  EXPECT_GE(WorkspaceStats()["oauth_tokens"].get<int>() - issued_before, 3) << reads << " reads";
  // Renewed ahead of expiry: the workspace never had to refuse an expired token.
  EXPECT_EQ(WorkspaceStats()["expired"].get<int>(), expired_before);
}

TEST(Databricks, AWrongTokenSaysWhatToCheckAndNeverShowsIt) {
  UseDatabricks("dapi-wrong-token-0123456789");
  auto opened = OpenUrl(VolumeUrl("DATABRICKS_VOLUME", "any/x.bin"));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto got = opened->store->Get(opened->key);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(got.status().message(), HasSubstr(VolumeUrl("DATABRICKS_VOLUME", "any/x.bin")));
  EXPECT_THAT(got.status().message(), HasSubstr("Invalid access token"));
  EXPECT_THAT(got.status().message(), HasSubstr("DATABRICKS_TOKEN"));
  EXPECT_THAT(got.status().message(), Not(HasSubstr("dapi-wrong-token")));
}

TEST(Databricks, AWrongClientSecretFailsAtTheTokenEndpoint) {
  FakeEnv env = ServicePrincipal();
  env.Set("DATABRICKS_CLIENT_SECRET", "not-the-secret-42");
  auto opened = internal_databricks::OpenDatabricksUrl(VolumeUrl("DATABRICKS_VOLUME", "x"), env);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto head = opened->store->Head(opened->key);
  ASSERT_FALSE(head.ok());
  EXPECT_EQ(head.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(head.status().message(), HasSubstr("invalid_client"));
  EXPECT_THAT(head.status().message(), HasSubstr(ServerEnv("DATABRICKS_CLIENT_ID")));
  EXPECT_THAT(head.status().message(), Not(HasSubstr("not-the-secret-42")));
}

TEST(Databricks, AReadOnlyVolumeReadsButRefusesWritesNamingThePrivilege) {
  UseDatabricks();
  auto opened = OpenUrl(VolumeUrl("DATABRICKS_READONLY_VOLUME", "x.bin"));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto listing = opened->store->List("", true);
  EXPECT_TRUE(listing.ok()) << listing.status().ToString();
  const Status put = opened->store->Put(opened->key, "x");
  EXPECT_EQ(put.code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(put.message(), HasSubstr("WRITE VOLUME"));
  EXPECT_THAT(put.message(), HasSubstr(VolumeUrl("DATABRICKS_READONLY_VOLUME", "x.bin")));
}

TEST(Databricks, AMissingVolumeIsNotFound) {
  UseDatabricks();
  auto opened = OpenUrl("dbfs:/Volumes/ferry/test/nope/x.bin");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto got = opened->store->Get(opened->key);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(got.status().message(), HasSubstr("dbfs:/Volumes/ferry/test/nope/x.bin"));
}

TEST(Databricks, AnUnreachableWorkspaceFailsInBoundedTime) {
  FakeEnv env{{"DATABRICKS_HOST", "http://127.0.0.1:9"}, {"DATABRICKS_TOKEN", "dapi-x"}};
  internal_databricks::DatabricksStoreOptions options;
  options.retry.max_attempts = 2;
  auto opened = internal_databricks::OpenDatabricksUrl("dbfs:/Volumes/a/b/c/x", env, options);
  ASSERT_TRUE(opened.ok());
  const auto start = std::chrono::steady_clock::now();
  auto head = opened->store->Head(opened->key);
  ASSERT_FALSE(head.ok());
  EXPECT_EQ(head.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(head.status().message(), HasSubstr("127.0.0.1:9"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// The variables of a command run as the service principal, without a configuration file.
std::string DatabricksPrincipalCommandEnv() {
  return fmt::format(
      "env -u DATABRICKS_TOKEN DATABRICKS_HOST={} DATABRICKS_CLIENT_ID={} "
      "DATABRICKS_CONFIG_FILE=/nonexistent FERRY_DATABRICKS_FUSE=false",
      ServerEnv("DATABRICKS_HOST"), ServerEnv("DATABRICKS_CLIENT_ID"));
}

// `ferry cp` up to a volume and back down as the service principal, with a debug log that holds
// neither the secret nor a token.
TEST(Databricks, TheCliCopiesToAndFromAVolumeWithoutLoggingSecrets) {
  TempDir tmp;
  std::filesystem::create_directories(tmp / "in" / "sub");
  ASSERT_TRUE(WriteFileAtomically(tmp / "in" / "a.txt", "alpha").ok());
  ASSERT_TRUE(WriteFileAtomically(tmp / "in" / "sub" / "b.txt", "beta").ok());
  const std::string url = VolumeUrl("DATABRICKS_VOLUME", "cli/" + RunId() + "/");
  const std::string env =
      fmt::format("{} FERRY_LOG=debug DATABRICKS_CLIENT_SECRET={}", DatabricksPrincipalCommandEnv(),
                  ServerEnv("DATABRICKS_CLIENT_SECRET"));
  ASSERT_EQ(Sh(fmt::format("{} {} cp -r -q {} {} > {} 2>&1 && {} {} cp -r -q {} {} >> {} 2>&1", env,
                           FERRY_CLI_PATH, Quote(tmp / "in") + "/", url, Quote(tmp / "log"), env,
                           FERRY_CLI_PATH, url, Quote(tmp / "out"), Quote(tmp / "log"))),
            0)
      << ReadFileToString(tmp / "log").value_or("");
  EXPECT_EQ(ReadFileToString(tmp / "out" / "a.txt").value_or(""), "alpha");
  EXPECT_EQ(ReadFileToString(tmp / "out" / "sub" / "b.txt").value_or(""), "beta");
  const std::string log = ReadFileToString(tmp / "log").value_or("");
  EXPECT_THAT(log, HasSubstr("OAuth machine-to-machine"));
  EXPECT_THAT(log, Not(HasSubstr(ServerEnv("DATABRICKS_CLIENT_SECRET"))));
  EXPECT_THAT(log, Not(HasSubstr("dbx-oauth-")));
}

// `ferry doctor --auth` on a volume: the chain, the service principal the workspace names, and
// list, read and write; on the read-only volume, the write check fails naming the privilege.
TEST(Databricks, DoctorAuthNamesThePrincipalAndWhatItMayDo) {
  TempDir tmp;
  const std::string env =
      fmt::format("{} DATABRICKS_CLIENT_SECRET={}", DatabricksPrincipalCommandEnv(),
                  ServerEnv("DATABRICKS_CLIENT_SECRET"));
  const std::string url = VolumeUrl("DATABRICKS_VOLUME", "doctor/" + RunId() + "/");
  ASSERT_EQ(Sh(fmt::format("{} {} doctor {} --auth --json > {}", env, FERRY_CLI_PATH, url,
                           Quote(tmp / "doctor.json"))),
            0)
      << ReadFileToString(tmp / "doctor.json").value_or("");
  const auto j = nlohmann::json::parse(ReadFileToString(tmp / "doctor.json").value_or("{}"));
  EXPECT_THAT(j["answered_by"].get<std::string>(), HasSubstr("OAuth machine-to-machine"));
  EXPECT_THAT(j["identity"].get<std::string>(),
              HasSubstr("service principal ferry test principal"));
  EXPECT_TRUE(j.contains("expires")) << j.dump();
  ASSERT_EQ(j["checks"].size(), 3u) << j.dump();
  for (const auto& check : j["checks"]) EXPECT_TRUE(check["ok"].get<bool>()) << check.dump();

  const std::string readonly = VolumeUrl("DATABRICKS_READONLY_VOLUME", "");
  EXPECT_EQ(Sh(fmt::format("{} {} doctor {} --auth > {} 2>&1", env, FERRY_CLI_PATH, readonly,
                           Quote(tmp / "readonly.txt"))),
            1);
  const std::string text = ReadFileToString(tmp / "readonly.txt").value_or("");
  EXPECT_THAT(text, HasSubstr("grant the identity WRITE VOLUME"));
  EXPECT_THAT(text, Not(HasSubstr(ServerEnv("DATABRICKS_CLIENT_SECRET"))));
}

}  // namespace
}  // namespace ferry::testing
