// Object stores against the real loopback servers, cross-checked with independent clients
// (Debian's boto3 and azure-storage-blob, through tests/interop/*.py):
//   - what ferry writes the other client reads intact, and the other way round;
//   - wrong credentials are an authentication error where the server checks signatures;
//   - a server stopped and restarted in the middle of a download: the download completes
//     through retries, or fails with a clear kUnavailable once the retry budget is spent;
//   - `ferry cp -r` of a prefix from s3rver to Azurite, verified object by object;
//   - no secret appears in any error message or in the debug log of the CLI.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <thread>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/storage/registry.h"
#include "format/hash.h"
#include "storage/s3/s3_store.h"
#include "storage/testing/store_conformance.h"
#include "tests/integration/server_env.h"

namespace ferry::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Command {
  int code = -1;
  std::string out;
};

// Runs a shell command from the repository root; stdout and stderr together.
Command Shell(const std::string& command) {
  TempDir tmp;
  const std::string full =
      fmt::format("cd '{}' && {} >'{}' 2>&1", FERRY_SOURCE_DIR, command, (tmp / "out").string());
  const int status = std::system(full.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFileToString(tmp / "out").value_or("")};
}

std::string Python(const std::string& script, const std::string& args) {
  return fmt::format("/usr/bin/python3 tests/interop/{} {}", script, args);
}

std::string Sha(std::string_view data) { return HashHex("sha256", data).value(); }

TEST(S3Interop, Boto3ReadsWhatFerryWritesAndFerryReadsWhatBoto3Writes) {
  for (const std::string server : {"S3RVER", "MOTO"}) {
    SCOPED_TRACE(server);
    UseS3Server(server);
    const std::string bucket = ServerEnv(server + "_BUCKET");
    const std::string lower = server == "S3RVER" ? "s3rver" : "moto";
    const std::string prefix = "interop/" + RunId() + "/";
    TempDir tmp;
    // ferry -> boto3, one small object and one multipart object.
    const std::string small = TestBytes(1000, 1);
    const std::string big = TestBytes((5 << 20) * 2 + 777, 2);
    auto config = internal_s3::S3StoreConfigFromEnvironment(bucket);
    ASSERT_TRUE(config.has_value()) << config.status().ToString();
    config->multipart_threshold = config->part_size = 5 << 20;
    auto store = internal_s3::MakeS3Store(*config).value();
    ASSERT_TRUE(store->Put(prefix + "small one.bin", small).ok());
    ASSERT_TRUE(store->Put(prefix + "big.bin", big).ok());
    for (const auto& [name, data] :
         {std::pair{"small one.bin", &small}, std::pair{"big.bin", &big}}) {
      const auto file = tmp / "got";
      auto r = Shell(Python("s3_client.py", fmt::format("--server {} get {} '{}' '{}'", lower,
                                                        bucket, prefix + name, file.string())));
      ASSERT_EQ(r.code, 0) << r.out;
      EXPECT_EQ(Sha(ReadFileToString(file).value()), Sha(*data)) << name;
    }
    // boto3 -> ferry.
    const std::string theirs = TestBytes(300000, 3);
    ASSERT_TRUE(WriteFileAtomically(tmp / "theirs", theirs).ok());
    auto r = Shell(Python("s3_client.py", fmt::format("--server {} put {} '{}' '{}'", lower, bucket,
                                                      prefix + "from boto3 \xc3\xa9.bin",
                                                      (tmp / "theirs").string())));
    ASSERT_EQ(r.code, 0) << r.out;
    auto opened = OpenUrl(fmt::format("s3://{}/{}from boto3 \xc3\xa9.bin", bucket, prefix));
    ASSERT_TRUE(opened.has_value()) << opened.status().ToString();
    auto got = opened->store->Get(opened->key);
    ASSERT_TRUE(got.has_value()) << got.status().ToString();
    EXPECT_EQ(Sha(*got), Sha(theirs));
    EXPECT_EQ(opened->store->GetRange(opened->key, 299990, 100).value(), theirs.substr(299990));
  }
}

TEST(AzureInterop, AzureSdkReadsWhatFerryWritesAndFerryReadsWhatItWrites) {
  UseAzurite();
  const std::string container = ServerEnv("AZURITE_CONTAINER");
  const std::string prefix = "interop/" + RunId() + "/";
  TempDir tmp;
  auto opened = OpenUrl(fmt::format("az://{}/{}", container, prefix));
  ASSERT_TRUE(opened.has_value()) << opened.status().ToString();
  auto& store = *opened->store;
  const std::string data = TestBytes(2 << 20, 4);
  ASSERT_TRUE(store.Put(opened->key + "ferry wrote \xc3\xa9.bin", data).ok());
  const auto file = tmp / "got";
  auto r = Shell(Python("azure_client.py",
                        fmt::format("get {} '{}' '{}'", container,
                                    opened->key + "ferry wrote \xc3\xa9.bin", file.string())));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Sha(ReadFileToString(file).value()), Sha(data));

  const std::string theirs = TestBytes(123457, 5);
  ASSERT_TRUE(WriteFileAtomically(tmp / "theirs", theirs).ok());
  r = Shell(Python("azure_client.py",
                   fmt::format("put {} '{}' '{}'", container, opened->key + "sdk wrote.bin",
                               (tmp / "theirs").string())));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Sha(store.Get(opened->key + "sdk wrote.bin").value_or("")), Sha(theirs));
  auto listing = store.List(opened->key, true);
  ASSERT_TRUE(listing.has_value());
  EXPECT_EQ(listing->objects.size(), 2u);
}

TEST(Credentials, AWrongSecretIsAnAuthenticationErrorThatNamesNoSecret) {
  const std::string wrong = "wRoNgSeCrEt0123456789abcdefGHIJKLmnopqrs";
  UseS3Server("MOTO_AUTH");
  const std::string bucket = ServerEnv("MOTO_AUTH_BUCKET");
  const std::string right = ServerEnv("MOTO_AUTH_SECRET_KEY");
  const std::string key = "creds/" + RunId();
  {
    auto opened = OpenUrl(fmt::format("s3://{}/{}", bucket, key));
    ASSERT_TRUE(opened.has_value());
    ASSERT_TRUE(opened->store->Put(opened->key, "signed right").ok());
    EXPECT_EQ(opened->store->Get(opened->key).value_or(""), "signed right");
  }
  UseS3Server("MOTO_AUTH", wrong);
  auto opened = OpenUrl(fmt::format("s3://{}/{}", bucket, key));
  ASSERT_TRUE(opened.has_value());
  auto got = opened->store->Get(opened->key);
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().code(), StatusCode::kUnauthenticated) << got.error().ToString();
  EXPECT_THAT(got.error().message(), HasSubstr(key));
  EXPECT_THAT(got.error().message(), Not(HasSubstr(wrong)));
  EXPECT_THAT(got.error().message(), Not(HasSubstr(right)));
  EXPECT_THAT(got.error().message(), Not(HasSubstr("Signature=")));

  const std::string wrong_key =
      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==";
  UseAzurite(wrong_key);
  auto az = OpenUrl(fmt::format("az://{}/creds/{}", ServerEnv("AZURITE_CONTAINER"), RunId()));
  ASSERT_TRUE(az.has_value());
  const Status put = az->store->Put(az->key, "x");
  ASSERT_FALSE(put.ok());
  EXPECT_TRUE(put.code() == StatusCode::kUnauthenticated ||
              put.code() == StatusCode::kPermissionDenied)
      << put.ToString();
  EXPECT_THAT(put.message(), Not(HasSubstr(wrong_key)));
  EXPECT_THAT(put.message(), Not(HasSubstr(ServerEnv("AZURITE_KEY"))));
  UseAzurite();
}

// S3 sends no body with a HEAD reply: the store learns the reason of a refused HEAD from a GET,
// so that it names SignatureDoesNotMatch as a GET's error does, not a bare "HTTP 403".
TEST(Credentials, AHeadWithAWrongSecretNamesTheReason) {
  const std::string wrong = "wRoNgSeCrEt0123456789abcdefGHIJKLmnopqrs";
  UseS3Server("MOTO_AUTH");
  const std::string bucket = ServerEnv("MOTO_AUTH_BUCKET");
  const std::string key = "creds/head-" + RunId();
  {
    auto opened = OpenUrl(fmt::format("s3://{}/{}", bucket, key));
    ASSERT_TRUE(opened.has_value());
    ASSERT_TRUE(opened->store->Put(opened->key, "signed right").ok());
  }
  UseS3Server("MOTO_AUTH", wrong);
  auto opened = OpenUrl(fmt::format("s3://{}/{}", bucket, key));
  ASSERT_TRUE(opened.has_value());
  auto head = opened->store->Head(opened->key);
  UseS3Server("MOTO_AUTH");
  ASSERT_FALSE(head.has_value());
  EXPECT_EQ(head.error().code(), StatusCode::kUnauthenticated) << head.error().ToString();
  EXPECT_THAT(head.error().message(),
              ::testing::StartsWith(fmt::format("s3://{}/{}: SignatureDoesNotMatch", bucket, key)));
  EXPECT_THAT(head.error().message(), Not(HasSubstr(wrong)));
  EXPECT_THAT(head.error().message(), Not(HasSubstr(ServerEnv("MOTO_AUTH_SECRET_KEY"))));

  // Azurite's HEAD reply carries only the code; the message says it is the key.
  const std::string container = ServerEnv("AZURITE_CONTAINER");
  const std::string url = fmt::format("az://{}/creds/{}", container, RunId());
  UseAzurite(
      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==");
  auto az = OpenUrl(url);
  UseAzurite();
  ASSERT_TRUE(az.has_value());
  auto az_head = az->store->Head(az->key);
  ASSERT_FALSE(az_head.has_value());
  EXPECT_EQ(az_head.error().code(), StatusCode::kUnauthenticated) << az_head.error().ToString();
  EXPECT_THAT(az_head.error().message(),
              ::testing::StartsWith(url + ": AuthorizationFailure: Server failed to authenticate"));
}

// Errors name the blob by the az:// URL the user gave, not the endpoint URL it was sent to.
TEST(Messages, AzureErrorsNameTheAzUrl) {
  UseAzurite();
  const std::string url =
      fmt::format("az://{}/missing/{}", ServerEnv("AZURITE_CONTAINER"), RunId());
  auto right = OpenUrl(url);
  ASSERT_TRUE(right.has_value());
  for (const Status& s :
       {right->store->Head(right->key).status(), right->store->Get(right->key).status()}) {
    SCOPED_TRACE(s.ToString());
    EXPECT_EQ(s.code(), StatusCode::kNotFound);
    EXPECT_THAT(s.message(), ::testing::StartsWith(url + ": BlobNotFound"));
    EXPECT_THAT(s.message(), Not(HasSubstr(ServerEnv("AZURITE_ENDPOINT"))));
  }
  const std::string container = fmt::format("az://no-such-{}/", RunId());
  auto missing = OpenUrl(container + "a");
  ASSERT_TRUE(missing.has_value());
  for (const Status& s : {missing->store->List("", true).status(), missing->store->Put("a", "x")}) {
    SCOPED_TRACE(s.ToString());
    EXPECT_EQ(s.code(), StatusCode::kNotFound);
    EXPECT_THAT(s.message(), HasSubstr(container));
    EXPECT_THAT(s.message(), HasSubstr("ContainerNotFound"));
    EXPECT_THAT(s.message(), Not(HasSubstr(ServerEnv("AZURITE_ENDPOINT"))));
  }
}

// The server goes away in the middle of a 64 MiB download and comes back a second later.
TEST(Faults, ADownloadSurvivesAServerRestart) {
  UseS3Server("S3RVER");
  const std::string bucket = ServerEnv("S3RVER_BUCKET");
  auto opened = OpenUrl(fmt::format("s3://{}/restart/{}.bin", bucket, RunId()));
  ASSERT_TRUE(opened.has_value());
  const std::string data = TestBytes(64 << 20, 6);
  ASSERT_TRUE(opened->store->Put(opened->key, data).ok());
  std::string got;
  bool restarted = false;
  Command restart;
  auto info = opened->store->Read(opened->key, ByteRange{}, [&](std::string_view chunk) {
    got.append(chunk);
    if (!restarted && got.size() > (8 << 20)) {
      restarted = true;  // kill the server under the transfer, then bring it back
      restart = Shell("scripts/test-servers.sh restart s3rver --down 1");
    }
    return Status::Ok();
  });
  ASSERT_EQ(restart.code, 0) << restart.out;
  ASSERT_TRUE(info.has_value()) << info.status().ToString();
  EXPECT_EQ(got.size(), data.size());
  EXPECT_TRUE(got == data);
}

TEST(Faults, AServerThatStaysDownIsUnavailableOnceTheBudgetIsSpent) {
  UseS3Server("S3RVER");
  const std::string bucket = ServerEnv("S3RVER_BUCKET");
  auto config = internal_s3::S3StoreConfigFromEnvironment(bucket).value();
  config.retry = RetryPolicy{.max_attempts = 100,
                             .initial_backoff = std::chrono::milliseconds(50),
                             .max_backoff = std::chrono::milliseconds(200),
                             .total_budget = std::chrono::milliseconds(1500)};
  auto store = internal_s3::MakeS3Store(config).value();
  const std::string key = "down/" + RunId();
  ASSERT_TRUE(store->Put(key, "still here later").ok());
  auto stop = Shell("scripts/test-servers.sh stop s3rver");
  ASSERT_EQ(stop.code, 0) << stop.out;
  const auto start = std::chrono::steady_clock::now();
  auto got = store->Get(key);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  auto again = Shell("scripts/test-servers.sh start s3rver");
  ASSERT_EQ(again.code, 0) << again.out;
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().code(), StatusCode::kUnavailable);
  EXPECT_THAT(got.error().message(), HasSubstr("gave up after"));
  EXPECT_THAT(got.error().message(), HasSubstr(key));
  EXPECT_LT(elapsed, std::chrono::seconds(10));
  EXPECT_EQ(store->Get(key).value_or(""), "still here later");  // and back once it is up
}

// ferry cp -r from s3rver to Azurite; every object checked with the Azure SDK.
TEST(Cli, CopiesAPrefixFromS3rverToAzuriteIntact) {
  UseS3Server("S3RVER");
  UseAzurite();
  const std::string bucket = ServerEnv("S3RVER_BUCKET");
  const std::string container = ServerEnv("AZURITE_CONTAINER");
  const std::string run = RunId();
  TempDir tmp;
  std::vector<std::pair<std::string, std::string>> objects;
  for (int i = 0; i < 10; ++i) {
    std::string name = fmt::format("dir{}/obj {:02}.bin", i % 3, i);
    objects.emplace_back(name, TestBytes(1000 * i + (i == 7 ? (9 << 20) : 0), 100 + i));
  }
  for (const auto& [name, data] : objects) {
    ASSERT_TRUE(WriteFileAtomically(tmp / "src", data).ok());
    auto r = Shell(Python("s3_client.py", fmt::format("--server s3rver put {} 'cp/{}/{}' '{}'",
                                                      bucket, run, name, (tmp / "src").string())));
    ASSERT_EQ(r.code, 0) << r.out;
  }
  auto cp = Shell(fmt::format("{} cp -r -q s3://{}/cp/{} az://{}/copied/{}", FERRY_CLI_PATH, bucket,
                              run, container, run));
  ASSERT_EQ(cp.code, 0) << cp.out;
  EXPECT_THAT(cp.out, HasSubstr("copied 10 of 10 objects"));
  auto list = Shell(Python("azure_client.py", fmt::format("list {} copied/{}/", container, run)));
  ASSERT_EQ(list.code, 0) << list.out;
  for (const auto& [name, data] : objects) {
    EXPECT_THAT(list.out, HasSubstr(fmt::format("copied/{}/{} {}", run, name, data.size())));
    auto r = Shell(Python("azure_client.py", fmt::format("get {} 'copied/{}/{}' '{}'", container,
                                                         run, name, (tmp / "got").string())));
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(Sha(ReadFileToString(tmp / "got").value()), Sha(data)) << name;
  }
  // A second run copies nothing new with sync.
  auto sync = Shell(fmt::format("{} sync -q s3://{}/cp/{} az://{}/copied/{}", FERRY_CLI_PATH,
                                bucket, run, container, run));
  ASSERT_EQ(sync.code, 0) << sync.out;
  EXPECT_THAT(sync.out, HasSubstr("copied 0 objects"));
}

TEST(Cli, DebugLogsAndErrorsNeverShowSecrets) {
  UseS3Server("MOTO_AUTH");
  UseAzurite();
  const std::string secret = ServerEnv("MOTO_AUTH_SECRET_KEY");
  const std::string azure_key = ServerEnv("AZURITE_KEY");
  const std::string bucket = ServerEnv("MOTO_AUTH_BUCKET");
  const std::string container = ServerEnv("AZURITE_CONTAINER");
  const std::string run = RunId();
  TempDir tmp;
  ASSERT_TRUE(WriteFileAtomically(tmp / "f", "secret-free payload").ok());
  std::string all;
  auto run_cli = [&](const std::string& args, const std::string& env = "") {
    auto r = Shell(fmt::format("{} FERRY_LOG=debug {} {}", env, FERRY_CLI_PATH, args));
    all += r.out;
    return r;
  };
  EXPECT_EQ(
      run_cli(fmt::format("cp -q {} s3://{}/log/{}/f", (tmp / "f").string(), bucket, run)).code, 0);
  EXPECT_EQ(run_cli(fmt::format("stat s3://{}/log/{}/f", bucket, run)).code, 0);
  EXPECT_EQ(
      run_cli(fmt::format("cp -q s3://{}/log/{}/f az://{}/log/{}/f", bucket, run, container, run))
          .code,
      0);
  EXPECT_EQ(run_cli(fmt::format("ls -l az://{}/log/{}/", container, run)).code, 0);
  // Failures too: a wrong secret and a wrong account key.
  EXPECT_NE(run_cli(fmt::format("stat s3://{}/log/{}/f", bucket, run),
                    "AWS_SECRET_ACCESS_KEY=" + std::string(40, 'Q'))
                .code,
            0);
  const std::string bad_cs =
      "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
      "AccountKey=" +
      std::string(86, 'Z') + "==;BlobEndpoint=" + ServerEnv("AZURITE_ENDPOINT") + ";";
  EXPECT_NE(run_cli(fmt::format("stat az://{}/log/{}/f", container, run),
                    "AZURE_STORAGE_CONNECTION_STRING='" + bad_cs + "'")
                .code,
            0);
  EXPECT_THAT(all, HasSubstr("[debug] PUT"));  // the log did show the requests
  for (const std::string& s : {secret, azure_key, std::string(40, 'Q'), std::string(86, 'Z')}) {
    EXPECT_THAT(all, Not(HasSubstr(s)));
  }
  EXPECT_THAT(all, Not(HasSubstr("Signature=")));
  EXPECT_THAT(all, Not(HasSubstr("SharedKey devstoreaccount1:")));
}

}  // namespace
}  // namespace ferry::testing

namespace ferry::testing {
namespace {

// http(s):// URLs read through the same GET loop; s3rver serves objects to plain GETs.
TEST(HttpStore, ReadsObjectsAndRangesFromAPlainHttpServer) {
  UseS3Server("S3RVER");
  const std::string bucket = ServerEnv("S3RVER_BUCKET");
  const std::string key = "http/" + RunId() + ".bin";
  const std::string data = TestBytes(300000, 8);
  auto s3 = OpenUrl(fmt::format("s3://{}/{}", bucket, key));
  ASSERT_TRUE(s3.has_value());
  ASSERT_TRUE(s3->store->Put(s3->key, data).ok());

  const std::string url = fmt::format("{}/{}/{}", ServerEnv("S3RVER_ENDPOINT"), bucket, key);
  auto opened = OpenUrl(url);
  ASSERT_TRUE(opened.has_value()) << opened.status().ToString();
  auto& store = *opened->store;
  EXPECT_TRUE(store.read_only());
  EXPECT_EQ(store.ToUrl(opened->key), url);
  auto info = store.Head(opened->key);
  ASSERT_TRUE(info.has_value()) << info.status().ToString();
  EXPECT_EQ(info->size, data.size());
  EXPECT_FALSE(info->etag.empty());
  EXPECT_TRUE(store.Get(opened->key).value_or("") == data);
  EXPECT_EQ(store.GetRange(opened->key, 1000, 10).value_or(""), data.substr(1000, 10));
  auto missing = store.Get(opened->key + ".missing");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_EQ(store.Put(opened->key, "no").code(), StatusCode::kUnimplemented);
  EXPECT_EQ(store.List("", true).status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace ferry::testing
