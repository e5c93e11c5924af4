// Google OAuth tokens from the identity server of scripts/test-servers.sh, which checks what
// Google's endpoints check (the service account's assertion against its key, the user's refresh
// token and secret, the federated subject token, the impersonation's bearer, the metadata
// server's header): every source gives a gs:// store its token, which goes out as "Authorization:
// Bearer" instead of a SigV4 signature (GCS's XML API takes it; no emulator here checks it, so a
// recording transport stands in for the bucket), and tokens of 6 s life are renewed while the
// store reads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/storage/registry.h"
#include "storage/gcs/gcs_store.h"
#include "storage/gcs/google_credentials.h"
#include "storage/http/recording_transport.h"
#include "storage/s3/s3_store.h"
#include "storage/testing/fake_env_testutil.h"
#include "tests/integration/server_env.h"

namespace ferry::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

nlohmann::json GoogleStats() {
  auto web = OpenUrl(ServerEnv("IDENTITY_ENDPOINT") + "/_stats");
  EXPECT_TRUE(web.ok());
  return nlohmann::json::parse(web->store->Get(web->key).value_or("{}"));
}

struct GoogleSource {
  const char* counter;
  FakeEnv env;
};

std::vector<GoogleSource> EveryGoogleSource(const TempDir& tmp) {
  const std::string identity = ServerEnv("IDENTITY_ENDPOINT");
  EXPECT_TRUE(WriteFileAtomically(tmp / "subject", ServerEnv("GOOGLE_SUBJECT_TOKEN")).ok());
  auto external = [&](const char* name, bool impersonate) {
    nlohmann::json file = {
        {"type", "external_account"},
        {"audience",
         "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/"
         "ferry/providers/ferry"},
        {"subject_token_type", "urn:ietf:params:oauth:token-type:jwt"},
        {"token_url", identity + "/google/token"},
        {"credential_source", {{"file", (tmp / "subject").string()}}}};
    if (impersonate) {
      file["service_account_impersonation_url"] = identity + "/google/generateAccessToken";
    }
    EXPECT_TRUE(WriteFileAtomically(tmp / name, file.dump()).ok());
    return (tmp / name).string();
  };
  const std::string home = tmp.path().string();
  return {
      {"google_service_account",
       {{"HOME", home}, {"GOOGLE_APPLICATION_CREDENTIALS", ServerEnv("GOOGLE_KEY")}}},
      {"google_user",
       {{"HOME", home}, {"GOOGLE_APPLICATION_CREDENTIALS", ServerEnv("GOOGLE_USER")}}},
      {"google_federated",
       {{"HOME", home}, {"GOOGLE_APPLICATION_CREDENTIALS", external("wif.json", false)}}},
      {"google_impersonated",
       {{"HOME", home}, {"GOOGLE_APPLICATION_CREDENTIALS", external("wif-sa.json", true)}}},
      {"google_metadata",
       {{"HOME", home}, {"GCE_METADATA_HOST", identity.substr(identity.find("://") + 3)}}},
  };
}

// A bucket that answers everything, recording the Authorization each request carried.
std::shared_ptr<http::RecordingTransport> Bucket() {
  return std::make_shared<http::RecordingTransport>(
      [](const http::RecordedRequest&) -> Result<http::Response> {
        http::Response r{200, {}, ""};
        r.headers.Set("Content-Length", "7");
        r.headers.Set("ETag", "\"e\"");
        return r;
      });
}

TEST(GcsCredentials, EverySourceGivesABearerTokenTheStoreSends) {
  TempDir tmp;
  const nlohmann::json before = GoogleStats();
  for (const GoogleSource& source : EveryGoogleSource(tmp)) {
    SCOPED_TRACE(source.counter);
    auto config = internal_gcs::GcsStoreConfigFromEnvironment("ferry-test", source.env);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    ASSERT_NE(config->bearer_token_provider, nullptr);
    auto bucket = Bucket();
    auto store = internal_s3::MakeS3Store(*config, bucket);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto info = (*store)->Head("some/object");
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    ASSERT_TRUE((*store)->Head("another").ok());
    for (const auto& request : bucket->requests()) {
      EXPECT_THAT(std::string(request.headers.Get("Authorization").value_or("")),
                  StartsWith("Bearer ya29."));
      EXPECT_FALSE(request.headers.Get("x-amz-date").has_value()) << "no SigV4 as well";
    }
  }
  const nlohmann::json after = GoogleStats();
  for (const char* counter :
       {"google_service_account", "google_user", "google_metadata", "google_impersonated"}) {
    EXPECT_EQ(after[counter].get<int>() - before[counter].get<int>(), 1)
        << counter << ": one token, for both requests";
  }
  // The federated token: once alone, once on the way to impersonation.
  EXPECT_EQ(after["google_federated"].get<int>() - before["google_federated"].get<int>(), 2);
  EXPECT_EQ(after["refused"], before["refused"]);
}

TEST(GcsCredentials, TokensAreRenewedWhileAStoreReads) {
  TempDir tmp;
  const GoogleSource source = EveryGoogleSource(tmp).at(0);
  auto config = internal_gcs::GcsStoreConfigFromEnvironment("ferry-test", source.env);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const auto provider = config->bearer_token_provider;
  EXPECT_THAT(provider->source(), HasSubstr("service account ferry-trainer@"));
  auto bucket = Bucket();
  auto store = internal_s3::MakeS3Store(*config, bucket).value();
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(8)) {
    ASSERT_TRUE(store->Head("k").ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  provider->WaitForRefresh();
  std::set<std::string> tokens;
  for (const auto& request : bucket->requests()) {
    tokens.insert(std::string(request.headers.Get("Authorization").value_or("")));
  }
  EXPECT_GE(tokens.size(), 3u) << "the first token and at least two renewals";
  EXPECT_TRUE(provider->last_error().ok()) << provider->last_error().ToString();
}

TEST(GcsCredentials, ARefusedSourceIsNamedWithoutItsSecret) {
  TempDir tmp;
  const auto user = nlohmann::json::parse(ReadFileToString(ServerEnv("GOOGLE_USER")).value());
  nlohmann::json revoked = user;
  revoked["refresh_token"] = "1//revoked-0123456789";
  ASSERT_TRUE(WriteFileAtomically(tmp / "revoked.json", revoked.dump()).ok());
  const FakeEnv env{{"HOME", tmp.path().string()},
                    {"GOOGLE_APPLICATION_CREDENTIALS", (tmp / "revoked.json").string()}};
  auto config = internal_gcs::GcsStoreConfigFromEnvironment("ferry-test", env);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto store = internal_s3::MakeS3Store(*config, Bucket()).value();
  const Status refused = store->Head("k").status();
  EXPECT_EQ(refused.code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(refused.message(), HasSubstr("invalid_grant: Token has been expired or revoked."));
  EXPECT_THAT(refused.message(), HasSubstr("user credentials"));
  EXPECT_EQ(refused.message().find("1//revoked-0123456789"), std::string::npos);
  EXPECT_EQ(refused.message().find(user["client_secret"].get<std::string>()), std::string::npos);
}

}  // namespace
}  // namespace ferry::testing
