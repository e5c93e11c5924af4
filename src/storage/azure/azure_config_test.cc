#include "storage/azure/azure_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "storage/azure/azure_store_testutil.h"
#include "storage/testing/fake_env_testutil.h"

namespace ferry::internal_azure {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using azure_test::kDevKey;
using azure_test::kKey;
using azure_test::kSig;
constexpr std::string_view kSigDecoded = "s3cr3tS1gnature+value=";

std::string SasToken() {
  return "sv=2021-08-06&ss=b&srt=sco&sp=rwdlac&se=2030-01-01T00:00:00Z&sig=" + std::string(kSig);
}

TEST(ConnectionString, ParsesKeysInAnyCaseAndValuesWithEquals) {
  auto s = ParseConnectionString(
      "DefaultEndpointsProtocol=https; accountname=myaccount;ACCOUNTKEY=" + std::string(kKey) +
      ";EndpointSuffix=core.chinacloudapi.cn;QueueEndpoint=http://x;");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->account_name, "myaccount");
  EXPECT_EQ(s->account_key, kKey);
  EXPECT_EQ(s->protocol, "https");
  EXPECT_EQ(s->endpoint_suffix, "core.chinacloudapi.cn");
  EXPECT_EQ(s->blob_endpoint, "");
}

TEST(ConnectionString, MalformedEntryIsNotQuoted) {
  auto s = ParseConnectionString("AccountName=a;" + std::string(kKey).substr(0, 20));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("entry 2"));
  EXPECT_THAT(s.status().message(), Not(HasSubstr(std::string(kKey).substr(0, 20))));
}

TEST(ParseAzureUrl, CloudConnectionString) {
  auto loc = ParseAzureUrl(
      "az://data/shards/index.json",
      testing::FakeEnv({{"AZURE_STORAGE_CONNECTION_STRING",
                         "DefaultEndpointsProtocol=https;AccountName=myaccount;AccountKey=" +
                             std::string(kKey) + ";EndpointSuffix=core.windows.net"}}));
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  EXPECT_EQ(loc->key, "shards/index.json");
  EXPECT_EQ(loc->config.account, "myaccount");
  EXPECT_EQ(loc->config.container, "data");
  EXPECT_EQ(loc->config.endpoint, "https://myaccount.blob.core.windows.net");
  EXPECT_EQ(loc->config.credentials.account, "myaccount");
  EXPECT_EQ(loc->config.credentials.account_key, Base64Decode(kKey).value());
  EXPECT_FALSE(loc->config.credentials.has_sas());
  EXPECT_EQ(loc->config.BlobUrl(loc->key),
            "https://myaccount.blob.core.windows.net/data/shards/index.json");
  EXPECT_EQ(loc->config.ToUrl(loc->key), "az://data/shards/index.json");
}

TEST(ParseAzureUrl, EmulatorConnectionStringIsPathStyle) {
  auto loc = ParseAzureUrl(
      "az://test/a b.txt",
      testing::FakeEnv(
          {{"AZURE_STORAGE_CONNECTION_STRING",
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" +
                std::string(kDevKey) + ";BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"}}));
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  EXPECT_EQ(loc->config.account, "devstoreaccount1");
  EXPECT_EQ(loc->config.endpoint, "http://127.0.0.1:10000/devstoreaccount1");
  EXPECT_EQ(loc->config.ContainerUrl(), "http://127.0.0.1:10000/devstoreaccount1/test");
  EXPECT_EQ(loc->config.BlobUrl(loc->key),
            "http://127.0.0.1:10000/devstoreaccount1/test/a%20b.txt");
  EXPECT_TRUE(loc->config.credentials.has_shared_key());
}

TEST(ParseAzureUrl, EmulatorShortcut) {
  auto loc = ParseAzureUrl(
      "az://test/k",
      testing::FakeEnv({{"AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true"}}));
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  EXPECT_EQ(loc->config.account, "devstoreaccount1");
  EXPECT_EQ(loc->config.endpoint, "http://127.0.0.1:10000/devstoreaccount1");
  EXPECT_EQ(loc->config.credentials.account_key, Base64Decode(kDevKey).value());
}

TEST(ParseAzureUrl, SasOnlyConnectionString) {
  auto loc = ParseAzureUrl(
      "az://data/x", testing::FakeEnv({{"AZURE_STORAGE_CONNECTION_STRING",
                                        "BlobEndpoint=https://myaccount.blob.core.windows.net/;"
                                        "SharedAccessSignature=" +
                                            SasToken()}}));
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  EXPECT_EQ(loc->config.account, "myaccount");  // from the endpoint's host
  EXPECT_EQ(loc->config.endpoint, "https://myaccount.blob.core.windows.net");
  EXPECT_FALSE(loc->config.credentials.has_shared_key());
  EXPECT_EQ(loc->config.credentials.sas_token, SasToken());
}

TEST(ParseAzureUrl, ConnectionStringWithoutAccountOrEndpointIsAnError) {
  auto loc = ParseAzureUrl(
      "az://data/x",
      testing::FakeEnv({{"AZURE_STORAGE_CONNECTION_STRING", "AccountKey=" + std::string(kKey)}}));
  ASSERT_FALSE(loc.ok());
  EXPECT_EQ(loc.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(loc.status().message(), HasSubstr("az://data/x"));
  EXPECT_THAT(loc.status().message(), Not(HasSubstr(std::string(kKey))));
}

TEST(ParseAzureUrl, AccountAndKeyVariables) {
  auto loc =
      ParseAzureUrl("az://data/x", testing::FakeEnv({{"AZURE_STORAGE_ACCOUNT", "myaccount"},
                                                     {"AZURE_STORAGE_KEY", std::string(kKey)}}));
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  EXPECT_EQ(loc->config.endpoint, "https://myaccount.blob.core.windows.net");
  EXPECT_TRUE(loc->config.credentials.has_shared_key());
}

TEST(ParseAzureUrl, SasTokenVariableWithLeadingQuestionMark) {
  auto loc = ParseAzureUrl("az://data/x",
                           testing::FakeEnv({{"AZURE_STORAGE_ACCOUNT", "myaccount"},
                                             {"AZURE_STORAGE_SAS_TOKEN", "?" + SasToken()}}));
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  EXPECT_EQ(loc->config.credentials.sas_token, SasToken());
}

TEST(ParseAzureUrl, BlobEndpointOverride) {
  auto loc = ParseAzureUrl("az://data/x",
                           testing::FakeEnv({{"AZURE_STORAGE_ACCOUNT", "devstoreaccount1"},
                                             {"AZURE_STORAGE_KEY", std::string(kDevKey)},
                                             {"AZURE_STORAGE_BLOB_ENDPOINT",
                                              "http://127.0.0.1:10555/devstoreaccount1/"}}));
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  EXPECT_EQ(loc->config.endpoint, "http://127.0.0.1:10555/devstoreaccount1");
  EXPECT_EQ(loc->config.BlobUrl("x"), "http://127.0.0.1:10555/devstoreaccount1/data/x");

  auto bad =
      ParseAzureUrl("az://data/x", testing::FakeEnv({{"AZURE_STORAGE_ACCOUNT", "a"},
                                                     {"AZURE_STORAGE_BLOB_ENDPOINT", "ftp://x"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("AZURE_STORAGE_BLOB_ENDPOINT"));
}

TEST(ParseAzureUrl, NoAccountIsAnErrorThatSaysWhatToSet) {
  auto loc = ParseAzureUrl("az://data/x", testing::FakeEnv({}));
  ASSERT_FALSE(loc.ok());
  EXPECT_EQ(loc.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(loc.status().message(), HasSubstr("AZURE_STORAGE_ACCOUNT"));
}

TEST(ParseAzureUrl, BadKeyIsNamedButNotQuoted) {
  const std::string bad_key = "not-base64-but-still-a-secret!";
  auto loc = ParseAzureUrl("az://data/x", testing::FakeEnv({{"AZURE_STORAGE_ACCOUNT", "myaccount"},
                                                            {"AZURE_STORAGE_KEY", bad_key}}));
  ASSERT_FALSE(loc.ok());
  EXPECT_THAT(loc.status().message(), HasSubstr("AZURE_STORAGE_KEY is not valid base64"));
  EXPECT_THAT(loc.status().message(), Not(HasSubstr(bad_key)));
}

TEST(ParseAzureUrl, AbfsForms) {
  for (const char* url :
       {"abfs://data@myaccount.dfs.core.windows.net/a/b",
        "abfss://data@myaccount.dfs.core.windows.net/a/b",
        "az://data@myaccount.blob.core.windows.net/a/b", "abfss://data@myaccount/a/b"}) {
    SCOPED_TRACE(url);
    auto loc = ParseAzureUrl(url, testing::FakeEnv({}));
    ASSERT_TRUE(loc.ok()) << loc.status().ToString();
    EXPECT_EQ(loc->config.account, "myaccount");
    EXPECT_EQ(loc->config.container, "data");
    EXPECT_EQ(loc->key, "a/b");
    EXPECT_EQ(loc->config.endpoint, "https://myaccount.blob.core.windows.net");
    EXPECT_FALSE(loc->config.credentials.has_shared_key());  // nothing in the environment
    EXPECT_EQ(loc->config.ToUrl("a/b"), url);
  }
  auto china = ParseAzureUrl("abfss://data@acct.dfs.core.chinacloudapi.cn/k", testing::FakeEnv({}));
  ASSERT_TRUE(china.ok());
  EXPECT_EQ(china->config.endpoint, "https://acct.blob.core.chinacloudapi.cn");
}

TEST(ParseAzureUrl, AbfsWithoutAccountUsesTheEnvironment) {
  auto loc =
      ParseAzureUrl("abfss://data/k", testing::FakeEnv({{"AZURE_STORAGE_ACCOUNT", "myaccount"}}));
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  EXPECT_EQ(loc->config.endpoint, "https://myaccount.blob.core.windows.net");
  EXPECT_EQ(loc->config.ToUrl("k"), "abfss://data/k");
}

TEST(ParseAzureUrl, EnvironmentCredentialsApplyOnlyToTheirAccount) {
  auto env = testing::FakeEnv({{"AZURE_STORAGE_CONNECTION_STRING",
                                "AccountName=devstoreaccount1;AccountKey=" + std::string(kDevKey) +
                                    ";BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1"}});
  auto same = ParseAzureUrl("abfs://data@devstoreaccount1.dfs.core.windows.net/k", env);
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(same->config.endpoint, "http://127.0.0.1:10000/devstoreaccount1");
  EXPECT_TRUE(same->config.credentials.has_shared_key());

  auto other = ParseAzureUrl("abfs://data@otheraccount.dfs.core.windows.net/k", env);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(other->config.endpoint, "https://otheraccount.blob.core.windows.net");
  EXPECT_FALSE(other->config.credentials.has_shared_key());
}

TEST(ParseAzureUrl, KeysAreLiteralAndMayBeEmpty) {
  auto env = testing::FakeEnv({{"AZURE_STORAGE_ACCOUNT", "myaccount"}});
  auto root = ParseAzureUrl("az://data", env);
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->key, "");
  auto slash = ParseAzureUrl("az://data/", env);
  ASSERT_TRUE(slash.ok());
  EXPECT_EQ(slash->key, "");
  auto odd = ParseAzureUrl("AZ://data/a%20b?c#d", env);
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->key, "a%20b?c#d");  // taken as written: '%', '?' and '#' are part of the key
}

TEST(ParseAzureUrl, RejectsBadContainersHostsAndSchemes) {
  auto env = testing::FakeEnv({{"AZURE_STORAGE_ACCOUNT", "myaccount"}});
  for (const char* url :
       {"az:///k", "az://Data/k", "az://ab/k", "az://-data/k", "az://da--ta/k",
        "az://data@my_account/k", "abfs://data@myaccount.queue.core.windows.net/k",
        "abfs://data@myaccount.dfs./k", "s3://data/k", "data/k"}) {
    SCOPED_TRACE(url);
    auto loc = ParseAzureUrl(url, env);
    ASSERT_FALSE(loc.ok());
    EXPECT_EQ(loc.status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(ParseAzureUrl("az://$root/k", env).ok());
}

TEST(ParseAzureUrl, ToUrlRoundTrips) {
  auto env = testing::FakeEnv({{"AZURE_STORAGE_ACCOUNT", "myaccount"}});
  for (const char* url :
       {"az://data/a/b c/ü+%#?.bin", "abfss://data@myaccount.dfs.core.windows.net/x/y"}) {
    SCOPED_TRACE(url);
    auto first = ParseAzureUrl(url, env);
    ASSERT_TRUE(first.ok());
    auto second = ParseAzureUrl(first->config.ToUrl(first->key), env);
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(second->key, first->key);
    EXPECT_EQ(second->config.container, first->config.container);
    EXPECT_EQ(second->config.endpoint, first->config.endpoint);
    EXPECT_EQ(second->config.ToUrl(second->key), url);
  }
}

// The URLs azure-storage-blob 12.15 builds for the same names, printed by
//   /usr/bin/python3 -c 'from azure.storage.blob import BlobClient;
//     print(BlobClient("https://myaccount.blob.core.windows.net", "mycontainer", NAME).url)'
TEST(BlobUrl, EncodesEachSegmentLikeTheSdk) {
  AzureConfig config;
  config.container = "mycontainer";
  config.endpoint = "https://myaccount.blob.core.windows.net";
  EXPECT_EQ(config.BlobUrl("dir one/na\xc3\xafve \xe6\x96\x87\xe4\xbb\xb6.txt"),
            "https://myaccount.blob.core.windows.net/mycontainer/dir%20one/"
            "na%C3%AFve%20%E6%96%87%E4%BB%B6.txt");
  EXPECT_EQ(config.BlobUrl("a+b%c#d?e"),
            "https://myaccount.blob.core.windows.net/mycontainer/a%2Bb%25c%23d%3Fe");
  EXPECT_EQ(config.BlobUrl("x/y~z_-.!$&'()*,;=:@"),
            "https://myaccount.blob.core.windows.net/mycontainer/"
            "x/y~z_-.%21%24%26%27%28%29%2A%2C%3B%3D%3A%40");
  EXPECT_EQ(config.BlobUrl("a//b/"), "https://myaccount.blob.core.windows.net/mycontainer/a//b/");
}

TEST(Secrets, NeverInDebugStringAndRedacted) {
  auto env = testing::FakeEnv({{"AZURE_STORAGE_ACCOUNT", "myaccount"},
                               {"AZURE_STORAGE_KEY", std::string(kKey)},
                               {"AZURE_STORAGE_SAS_TOKEN", SasToken()}});
  auto loc = ParseAzureUrl("az://data/k", env);
  ASSERT_TRUE(loc.ok());
  const AzureConfig& config = loc->config;
  const std::string debug = config.DebugString();
  EXPECT_THAT(debug, HasSubstr("account=myaccount"));
  EXPECT_THAT(debug, HasSubstr("SharedKey(key REDACTED)"));
  EXPECT_THAT(debug, Not(HasSubstr(std::string(kKey))));
  EXPECT_THAT(debug, Not(HasSubstr("s3cr3t")));

  const std::string leaky = "key " + std::string(kKey) + " url https://x/c/b?" + SasToken() +
                            " decoded " + std::string(kSigDecoded);
  const std::string redacted = config.Redact(leaky);
  EXPECT_THAT(redacted, Not(HasSubstr(std::string(kKey))));
  EXPECT_THAT(redacted, Not(HasSubstr("s3cr3t")));
  EXPECT_THAT(redacted, HasSubstr("REDACTED"));

  // A SAS-only config redacts the signature wherever it shows up, alone too.
  AzureConfig sas_only = config;
  sas_only.credentials.account_key.clear();
  EXPECT_THAT(sas_only.Redact("sig=" + std::string(kSig)), Not(HasSubstr("s3cr3t")));
  EXPECT_EQ(sas_only.Redact("GET https://x/c/b?sv=1&sig=anything: connection refused"),
            "GET https://x/c/b?sv=1&sig=REDACTED: connection refused");
  EXPECT_THAT(sas_only.DebugString(), HasSubstr("SAS(token REDACTED)"));
}

}  // namespace
}  // namespace ferry::internal_azure
