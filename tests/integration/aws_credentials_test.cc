// Temporary AWS credentials from a real STS (moto's server): the web identity source exchanges a
// token file for a role's credentials of 8 seconds' life, and a store reading objects for 10
// seconds signs every request with credentials that were current - the first ones, then at least
// two renewals made in the background - with no request failing or waiting on a renewal. (A
// `ferry stream` of two epochs over 20-second credentials is the last test here.)
// moto without authentication checks no signature, so a transport between the store and moto
// records the key id and session token each request was signed with.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "base/file_util.h"
#include "base/mutex.h"
#include "base/temp_dir_testutil.h"
#include "ferry/format/mds_writer.h"
#include "ferry/storage/registry.h"
#include "storage/http/transport.h"
#include "storage/s3/s3_store.h"
#include "storage/testing/fake_env_testutil.h"
#include "tests/integration/server_env.h"
#include "tests/integration/stream_testutil.h"

namespace ferry::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Passes requests on to the real transport, noting the key id and session token of each.
class SigningSpy : public http::Transport {
 public:
  void Submit(http::Request request, http::BodySink sink, http::Completion done) override {
    const std::string authorization(request.headers.Get("Authorization").value_or(""));
    std::smatch m;
    std::string key;
    if (std::regex_search(authorization, m, std::regex("Credential=([A-Z0-9]+)/"))) key = m[1];
    {
      MutexLock lock(mu_);
      keys_.push_back(key);
      with_token_ += request.headers.Get("x-amz-security-token").has_value() ? 1 : 0;
    }
    inner_->Submit(std::move(request), std::move(sink), std::move(done));
  }
  std::vector<std::string> keys() const {
    MutexLock lock(mu_);
    return keys_;
  }
  size_t with_token() const {
    MutexLock lock(mu_);
    return with_token_;
  }

 private:
  std::shared_ptr<http::Transport> inner_ = http::DefaultTransport();
  mutable Mutex mu_;
  std::vector<std::string> keys_ GUARDED_BY(mu_);
  size_t with_token_ GUARDED_BY(mu_) = 0;
};

// The store for the moto bucket that OpenUrl would make with `env`, through `transport` (null:
// the default one).
std::shared_ptr<ObjectStore> MotoStore(const FakeEnv& env,
                                       std::shared_ptr<http::Transport> transport = {}) {
  auto config = internal_s3::S3StoreConfigFromEnvironment(ServerEnv("MOTO_BUCKET"), {}, env);
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  if (!config.ok()) return nullptr;
  auto store = internal_s3::MakeS3Store(std::move(*config), std::move(transport));
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? *store : nullptr;
}

TEST(AwsCredentials, WebIdentityCredentialsAreRenewedWhileAStoreReads) {
  TempDir tmp;
  ASSERT_TRUE(
      WriteFileAtomically(tmp / "token", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ0cmFpbmVyIn0.\n").ok());
  const std::string moto = ServerEnv("MOTO_ENDPOINT");
  const FakeEnv env{{"HOME", tmp.path().string()},
                    {"AWS_WEB_IDENTITY_TOKEN_FILE", (tmp / "token").string()},
                    {"AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/ferry-trainer"},
                    {"AWS_ROLE_SESSION_NAME", "ferry-integration"},
                    {"AWS_ENDPOINT_URL", moto},
                    {"AWS_ENDPOINT_URL_STS", moto},
                    {"AWS_REGION", "us-east-1"},
                    {"FERRY_AWS_ROLE_DURATION_SECONDS", "8"}};
  auto config = internal_s3::S3StoreConfigFromEnvironment(ServerEnv("MOTO_BUCKET"), {}, env);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const auto provider = config->credential_provider;
  ASSERT_NE(provider, nullptr);
  EXPECT_THAT(provider->source(), HasSubstr("AssumeRoleWithWebIdentity"));
  auto spy = std::make_shared<SigningSpy>();
  auto store = internal_s3::MakeS3Store(std::move(*config), spy);
  ASSERT_TRUE(store.ok()) << store.status().ToString();

  const std::string key = fmt::format("aws-credentials/{}/object", RunId());
  ASSERT_TRUE((*store)->Put(key, std::string(4096, 'x')).ok());
  std::set<std::string> issued;  // what the provider handed out, seen from outside
  size_t reads = 0;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    auto got = (*store)->Get(key);
    ASSERT_TRUE(got.ok()) << "read " << reads << ": " << got.status().ToString();
    ASSERT_EQ(got->size(), 4096u);
    ++reads;
    issued.insert(provider->Current().value().access_key_id);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  provider->WaitForRefresh();
  const std::vector<std::string> keys = spy->keys();
  ASSERT_EQ(keys.size(), reads + 1);  // the PUT and every GET, none retried
  EXPECT_EQ(spy->with_token(), keys.size());
  const std::set<std::string> signed_with(keys.begin(), keys.end());
  EXPECT_GE(signed_with.size(), 3u) << "the first credentials and at least two renewals";
  for (const std::string& k : signed_with) EXPECT_THAT(k, StartsWith("ASIA"));
  EXPECT_EQ(signed_with, issued);
  EXPECT_TRUE(provider->last_error().ok()) << provider->last_error().ToString();
}

// A role profile (role_arn + source_profile in ~/.aws/config): moto's STS AssumeRole, signed
// with the source profile's keys, gives credentials of 6 s that sign a store's reads and are
// renewed while it reads.
TEST(AwsCredentials, ARoleProfileIsAssumedAndRenewedWhileAStoreReads) {
  TempDir tmp;
  std::filesystem::create_directories(tmp / ".aws");
  ASSERT_TRUE(WriteFileAtomically(tmp / ".aws" / "credentials",
                                  "[base]\naws_access_key_id = testing\n"
                                  "aws_secret_access_key = testing\n")
                  .ok());
  ASSERT_TRUE(WriteFileAtomically(tmp / ".aws" / "config",
                                  "[profile reader]\n"
                                  "role_arn = arn:aws:iam::123456789012:role/ferry-reader\n"
                                  "source_profile = base\nexternal_id = ferry-42\n"
                                  "duration_seconds = 6\nregion = us-east-1\n")
                  .ok());
  const FakeEnv env{{"HOME", tmp.path().string()},
                    {"AWS_PROFILE", "reader"},
                    {"AWS_ENDPOINT_URL", ServerEnv("MOTO_ENDPOINT")}};
  auto config = internal_s3::S3StoreConfigFromEnvironment(ServerEnv("MOTO_BUCKET"), {}, env);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const auto provider = config->credential_provider;
  EXPECT_THAT(provider->source(), HasSubstr("STS AssumeRole"));
  auto spy = std::make_shared<SigningSpy>();
  auto store = internal_s3::MakeS3Store(std::move(*config), spy);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::string key = fmt::format("aws-credentials/{}/role", RunId());
  ASSERT_TRUE((*store)->Put(key, "read through an assumed role").ok());
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(7)) {
    auto got = (*store)->Get(key);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  provider->WaitForRefresh();
  const std::vector<std::string> keys = spy->keys();
  const std::set<std::string> signed_with(keys.begin(), keys.end());
  EXPECT_GE(signed_with.size(), 2u) << "the first credentials and a renewal";
  for (const std::string& k : signed_with) EXPECT_THAT(k, StartsWith("ASIA"));
  EXPECT_EQ(spy->with_token(), keys.size());
  EXPECT_TRUE(provider->last_error().ok()) << provider->last_error().ToString();
}

TEST(AwsCredentials, ARefusedOrUnreachableStsIsAnErrorNamingTheSource) {
  TempDir tmp;
  const FakeEnv env{{"HOME", tmp.path().string()},
                    {"AWS_WEB_IDENTITY_TOKEN_FILE", (tmp / "missing-token").string()},
                    {"AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/ferry-trainer"},
                    {"AWS_ENDPOINT_URL", ServerEnv("MOTO_ENDPOINT")},
                    {"AWS_REGION", "us-east-1"}};
  const auto store = MotoStore(env);
  ASSERT_NE(store, nullptr);
  auto missing = store->Get("anything");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(missing.status().message(), HasSubstr("credentials from web identity"));
  EXPECT_THAT(missing.status().message(), HasSubstr("missing-token"));

  // STS that does not answer: bounded, and named.
  ASSERT_TRUE(WriteFileAtomically(tmp / "token", "t").ok());
  const FakeEnv unreachable{{"HOME", tmp.path().string()},
                            {"AWS_WEB_IDENTITY_TOKEN_FILE", (tmp / "token").string()},
                            {"AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/ferry-trainer"},
                            {"AWS_ENDPOINT_URL", ServerEnv("MOTO_ENDPOINT")},
                            {"AWS_ENDPOINT_URL_STS", "http://127.0.0.1:9"},
                            {"AWS_REGION", "us-east-1"}};
  const auto store2 = MotoStore(unreachable);
  ASSERT_NE(store2, nullptr);
  const auto start = std::chrono::steady_clock::now();
  auto refused = store2->Get("anything");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));  // not retried
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("AssumeRoleWithWebIdentity"));
  EXPECT_THAT(refused.status().message(), HasSubstr("127.0.0.1:9"));
}

// Role profiles whose source is another role (a chain of two), the container endpoint or the
// instance metadata endpoint (credential_source EcsContainer, Ec2InstanceMetadata): each role is
// assumed at moto's STS with credentials from its source, and signs a store's requests.
TEST(AwsCredentials, RoleProfilesTakeTheirSourceFromARoleTheContainerOrTheInstance) {
  TempDir tmp;
  const std::string identity = ServerEnv("IDENTITY_ENDPOINT");
  std::filesystem::create_directories(tmp / ".aws");
  ASSERT_TRUE(WriteFileAtomically(tmp / ".aws" / "credentials",
                                  "[base]\naws_access_key_id = testing\n"
                                  "aws_secret_access_key = testing\n")
                  .ok());
  ASSERT_TRUE(
      WriteFileAtomically(tmp / ".aws" / "config",
                          "[profile first]\nrole_arn = arn:aws:iam::123456789012:role/first\n"
                          "source_profile = base\n"
                          "[profile second]\nrole_arn = arn:aws:iam::123456789012:role/second\n"
                          "source_profile = first\n"
                          "[profile in-task]\nrole_arn = arn:aws:iam::123456789012:role/task\n"
                          "credential_source = EcsContainer\n"
                          "[profile on-host]\nrole_arn = arn:aws:iam::123456789012:role/host\n"
                          "credential_source = Ec2InstanceMetadata\n")
          .ok());
  FakeEnv env{{"HOME", tmp.path().string()},
              {"AWS_ENDPOINT_URL", ServerEnv("MOTO_ENDPOINT")},
              {"AWS_REGION", "us-east-1"},
              {"AWS_CONTAINER_CREDENTIALS_FULL_URI", identity + "/container/credentials"},
              {"AWS_CONTAINER_AUTHORIZATION_TOKEN", ServerEnv("IDENTITY_CONTAINER_TOKEN")},
              {"AWS_EC2_METADATA_SERVICE_ENDPOINT", identity}};
  auto stats = [&]() {
    auto web = OpenUrl(identity + "/_stats");
    EXPECT_TRUE(web.ok());
    return nlohmann::json::parse(web->store->Get(web->key).value_or("{}"));
  };
  const nlohmann::json before = stats();
  const std::string key = fmt::format("aws-credentials/{}/roles", RunId());
  for (const auto& [profile, source] : std::vector<std::pair<std::string, std::string>>{
           {"second", "STS AssumeRole with role arn:aws:iam::123456789012:role/first"},
           {"in-task", "STS AssumeRole with container credentials"},
           {"on-host", "STS AssumeRole with EC2 instance metadata"}}) {
    SCOPED_TRACE(profile);
    env.Set("AWS_PROFILE", profile);
    auto config = internal_s3::S3StoreConfigFromEnvironment(ServerEnv("MOTO_BUCKET"), {}, env);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    EXPECT_THAT(config->credential_provider->source(), HasSubstr(source));
    const auto provider = config->credential_provider;
    auto spy = std::make_shared<SigningSpy>();
    auto store = internal_s3::MakeS3Store(std::move(*config), spy).value();
    ASSERT_TRUE(store->Put(key, profile).ok());
    EXPECT_EQ(store->Get(key).value_or(""), profile);
    for (const std::string& k : spy->keys()) EXPECT_THAT(k, StartsWith("ASIA"));
  }
  const nlohmann::json after = stats();
  EXPECT_EQ(after["container_credentials"].get<int>() - before["container_credentials"].get<int>(),
            1);
  EXPECT_EQ(after["imds_credentials"].get<int>() - before["imds_credentials"].get<int>(), 1);
}

// The platform's endpoints, from the identity server of scripts/test-servers.sh (credentials of
// 6 s life): a container's and an EC2 instance's credentials sign a store's requests and are
// renewed while it reads; the server's counts show each renewal was a new call (IMDSv2: a new
// session token each time).
TEST(AwsCredentials, ContainerAndInstanceMetadataCredentialsSignAndAreRenewed) {
  TempDir tmp;
  const std::string identity = ServerEnv("IDENTITY_ENDPOINT");
  ASSERT_TRUE(
      WriteFileAtomically(tmp / "container-token", ServerEnv("IDENTITY_CONTAINER_TOKEN")).ok());
  const FakeEnv container{
      {"HOME", tmp.path().string()},
      {"AWS_CONTAINER_CREDENTIALS_FULL_URI", identity + "/container/credentials"},
      {"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", (tmp / "container-token").string()},
      {"AWS_ENDPOINT_URL", ServerEnv("MOTO_ENDPOINT")},
      {"AWS_REGION", "us-east-1"}};
  const FakeEnv instance{{"HOME", tmp.path().string()},
                         {"AWS_EC2_METADATA_SERVICE_ENDPOINT", identity},
                         {"AWS_ENDPOINT_URL", ServerEnv("MOTO_ENDPOINT")},
                         {"AWS_REGION", "us-east-1"}};
  struct Reader {
    std::shared_ptr<internal_s3::AwsCredentialProvider> provider;
    std::shared_ptr<SigningSpy> spy = std::make_shared<SigningSpy>();
    std::shared_ptr<ObjectStore> store;
  };
  std::vector<Reader> readers;
  for (const FakeEnv* env : {&container, &instance}) {
    auto config = internal_s3::S3StoreConfigFromEnvironment(ServerEnv("MOTO_BUCKET"), {}, *env);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    Reader r;
    r.provider = config->credential_provider;
    auto store = internal_s3::MakeS3Store(std::move(*config), r.spy);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    r.store = *store;
    readers.push_back(std::move(r));
  }
  EXPECT_THAT(readers[0].provider->source(), HasSubstr("container credentials"));
  EXPECT_THAT(readers[1].provider->source(), HasSubstr("EC2 instance metadata"));
  auto stats = [&]() {
    auto web = OpenUrl(identity + "/_stats");
    EXPECT_TRUE(web.ok());
    return nlohmann::json::parse(web->store->Get(web->key).value_or("{}"));
  };
  const nlohmann::json before = stats();

  const std::string key = fmt::format("aws-credentials/{}/platform", RunId());
  ASSERT_TRUE(readers[0].store->Put(key, "signed by the platform's credentials").ok());
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(7)) {
    for (Reader& r : readers) {
      auto got = r.store->Get(key);
      ASSERT_TRUE(got.ok()) << r.provider->source() << ": " << got.status().ToString();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (Reader& r : readers) {
    r.provider->WaitForRefresh();
    const std::vector<std::string> keys = r.spy->keys();
    const std::set<std::string> signed_with(keys.begin(), keys.end());
    EXPECT_GE(signed_with.size(), 2u) << r.provider->source() << ": renewed at least once";
    for (const std::string& k : signed_with) EXPECT_THAT(k, StartsWith("ASIA"));
    EXPECT_EQ(r.spy->with_token(), keys.size());
    EXPECT_TRUE(r.provider->last_error().ok()) << r.provider->last_error().ToString();
  }
  const nlohmann::json after = stats();
  EXPECT_GE(after["container_credentials"].get<int>() - before["container_credentials"].get<int>(),
            2);
  EXPECT_GE(after["imds_tokens"].get<int>() - before["imds_tokens"].get<int>(), 2);
  EXPECT_GE(after["imds_credentials"].get<int>() - before["imds_credentials"].get<int>(), 2);
}

TEST(AwsCredentials, AnUnreachableInstanceMetadataEndpointFailsWithinThreeSeconds) {
  TempDir tmp;
  const FakeEnv env{{"HOME", tmp.path().string()},
                    // TEST-NET-1: routed nowhere, so the connection times out (or is refused).
                    {"AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://192.0.2.1"},
                    {"AWS_ENDPOINT_URL", ServerEnv("MOTO_ENDPOINT")},
                    {"AWS_REGION", "us-east-1"}};
  const auto store = MotoStore(env);
  ASSERT_NE(store, nullptr);
  const auto start = std::chrono::steady_clock::now();
  auto got = store->Get("anything");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(got.status().message(), HasSubstr("EC2 instance metadata"));
  EXPECT_THAT(got.status().message(), HasSubstr("not on EC2"));
}

// `ferry doctor --auth` names the chain and the source that answered - moto's STS
// AssumeRoleWithWebIdentity - with the role's identity (GetCallerIdentity), and list, read and
// write work; pointed at an instance metadata endpoint that does not answer, it says so within
// 3 s and exits 1.
TEST(AwsCredentials, DoctorAuthNamesTheChainTheSourceAndTheIdentity) {
  TempDir tmp;
  ASSERT_TRUE(
      WriteFileAtomically(tmp / "token", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ0cmFpbmVyIn0.\n").ok());
  const std::string moto = ServerEnv("MOTO_ENDPOINT");
  const std::string prefix = fmt::format("s3://{}/doctor/{}/", ServerEnv("MOTO_BUCKET"), RunId());
  const std::string keys = fmt::format(
      "AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_ENDPOINT_URL={}", moto);
  ASSERT_TRUE(WriteFileAtomically(tmp / "object", "read by the doctor").ok());
  ASSERT_EQ(Sh(fmt::format("env {} {} cp -q {} {}object", keys, FERRY_CLI_PATH,
                           Quote(tmp / "object"), prefix)),
            0);
  const std::string base = fmt::format(
      "env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE "
      "HOME={} AWS_ENDPOINT_URL={} AWS_REGION=us-east-1",
      Quote(tmp.path()), moto);
  ASSERT_EQ(Sh(fmt::format("{} AWS_WEB_IDENTITY_TOKEN_FILE={} "
                           "AWS_ROLE_ARN=arn:aws:iam::123456789012:role/ferry-trainer "
                           "AWS_ROLE_SESSION_NAME=doctor {} doctor {} --auth --json > {}",
                           base, Quote(tmp / "token"), FERRY_CLI_PATH, prefix,
                           Quote(tmp / "doctor.json"))),
            0)
      << ReadFileToString(tmp / "doctor.json").value_or("");
  const auto j = nlohmann::json::parse(ReadFileToString(tmp / "doctor.json").value_or("{}"));
  std::vector<std::string> sources;
  for (const auto& step : j["chain"]) sources.push_back(step["source"]);
  EXPECT_EQ(sources, (std::vector<std::string>{"anonymous", "environment", "web identity"}));
  EXPECT_THAT(j["answered_by"].get<std::string>(), HasSubstr("AssumeRoleWithWebIdentity"));
  EXPECT_EQ(j["identity"], "arn:aws:sts::123456789012:assumed-role/ferry-trainer/doctor");
  EXPECT_TRUE(j.contains("expires"));
  ASSERT_EQ(j["checks"].size(), 3u);
  for (const auto& check : j["checks"]) EXPECT_TRUE(check["ok"].get<bool>()) << check.dump();
  EXPECT_TRUE(j["ok"].get<bool>());

  const auto start = std::chrono::steady_clock::now();
  const int code =
      Sh(fmt::format("{} AWS_EC2_METADATA_SERVICE_ENDPOINT=http://192.0.2.1 {} "
                     "doctor {} --auth > {}",
                     base, FERRY_CLI_PATH, prefix, Quote(tmp / "doctor.txt")));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_EQ(code, 1);
  const std::string text = ReadFileToString(tmp / "doctor.txt").value_or("");
  EXPECT_THAT(text, HasSubstr("6. EC2 instance metadata    http://192.0.2.1"));
  EXPECT_THAT(text, HasSubstr("answered by  none: credentials from EC2 instance metadata"));
  EXPECT_THAT(text, HasSubstr("not on EC2"));
}

// `ferry stream`, 2 epochs, over web identity credentials of 20 s life: the first epoch is slowed
// by ferry-wan (1 MB/s in front of moto, one shard at a time) to last past two renewals, and the
// run completes with no store call failing; the debug log says each renewal's source and never a
// secret.
TEST(AwsCredentials, TwoEpochsStreamOverTwentySecondCredentials) {
  TempDir tmp;
  // ~24 MB in 16 shards, written to moto through the CLI with moto's static keys.
  const auto src = tmp / "src";
  {
    auto writer =
        MdsWriter::Create(
            {.out = src, .columns = {{"id", "int"}, {"blob", "bytes"}}, .size_limit = 1536 << 10})
            .value();
    for (int64_t i = 0; i < 240; ++i) {
      const Value values[] = {Value(Bytes{std::string(100'000, static_cast<char>('a' + i % 26))}),
                              Value(i)};
      ASSERT_TRUE(writer->WriteValues(values).ok());
    }
    ASSERT_TRUE(writer->Finish().ok());
  }
  const std::string moto = ServerEnv("MOTO_ENDPOINT");
  const std::string url =
      fmt::format("s3://{}/aws-credentials/{}/stream", ServerEnv("MOTO_BUCKET"), RunId());
  const std::string moto_keys = fmt::format(
      "env -u AWS_SESSION_TOKEN -u AWS_PROFILE AWS_ENDPOINT_URL={} AWS_ACCESS_KEY_ID=testing "
      "AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1",
      moto);
  ASSERT_EQ(Sh(fmt::format("{} {} cp -r -q {} {}", moto_keys, FERRY_CLI_PATH, Quote(src), url)), 0);

  // ferry-wan in front of moto: 1 MB/s, so that epoch 1 takes ~24 s.
  TempDir wan_dir;
  const std::string target = moto.substr(moto.find("://") + 3);
  ASSERT_EQ(Sh(fmt::format("{}/bench/ferry-wan --target {} --total-mbps 1 --port-file {} > {} 2>&1 "
                           "& echo $! > {}",
                           FERRY_BUILD_DIR, target, Quote(wan_dir / "port"),
                           Quote(wan_dir / "wan.log"), Quote(wan_dir / "wan.pid"))),
            0);
  const WanGuard wan(wan_dir);
  std::string port;
  for (int i = 0; i < 500 && (port.empty() || port.back() != '\n'); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    port = ReadFileToString(wan_dir / "port").value_or("");
  }
  ASSERT_FALSE(port.empty()) << "ferry-wan did not start";
  ASSERT_TRUE(WriteFileAtomically(tmp / "token", "eyJhbGciOiJub25lIn0.e30.").ok());
  const std::string web_identity = fmt::format(
      "env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE "
      "HOME={} AWS_ENDPOINT_URL=http://127.0.0.1:{} AWS_ENDPOINT_URL_STS={} AWS_REGION=us-east-1 "
      "AWS_WEB_IDENTITY_TOKEN_FILE={} AWS_ROLE_ARN=arn:aws:iam::123456789012:role/ferry-trainer "
      "FERRY_AWS_ROLE_DURATION_SECONDS=20 FERRY_LOG=info",
      Quote(tmp.path()), port.substr(0, port.find('\n')), moto, Quote(tmp / "token"));
  const auto start = std::chrono::steady_clock::now();
  // One shard at a time, whole: a request every 1.5 s, so that requests need credentials all
  // through the epoch (a renewal happens when a request asks for credentials past the refresh
  // point).
  const int code =
      Sh(fmt::format("{} {} stream {} --local {} --epochs 2 --concurrency 1 "
                     "--download-parts 1 --json > {} 2> {}",
                     web_identity, FERRY_CLI_PATH, url, Quote(tmp / "cache"), Quote(tmp / "out"),
                     Quote(tmp / "log")));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string log = ReadFileToString(tmp / "log").value_or("");
  ASSERT_EQ(code, 0) << ReadFileToString(tmp / "out").value_or("") << log;
  const auto epochs = JsonLines(tmp / "out");
  ASSERT_EQ(epochs.size(), 2u);
  for (const auto& epoch : epochs) {
    EXPECT_EQ(epoch["samples"], 240);
    EXPECT_EQ(epoch["remote_errors"], 0) << epoch.dump();
  }
  EXPECT_GT(epochs[0]["remote_requests"].get<int>(), 16);
  EXPECT_GT(seconds, 21.0) << "epoch 1 was meant to outlast two renewals";
  // The first credentials and at least two renewals, each logged with its source.
  size_t issued = 0;
  for (size_t at = log.find("credentials: new ones from web identity"); at != std::string::npos;
       at = log.find("credentials: new ones from web identity", at + 1)) {
    ++issued;
  }
  EXPECT_GE(issued, 3u) << log;
  EXPECT_THAT(log, HasSubstr("valid for 20 s"));
  EXPECT_THAT(log, Not(HasSubstr("eyJhbGciOiJub25lIn0")));  // the token
}

}  // namespace
}  // namespace ferry::testing
