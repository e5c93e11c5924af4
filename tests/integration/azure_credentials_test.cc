// Microsoft Entra ID tokens against real parts: the identity server of scripts/test-servers.sh
// issues them (it checks what Entra and the managed identity endpoints check: the client secret,
// the certificate assertion's signature, the federated token, the metadata headers), and Azurite
// in OAuth mode over HTTPS (azurite-oauth) accepts or refuses them. Every source of the chain
// reads and lists a container; tokens of 6 s life are renewed while a store reads; a token the
// service calls expired is dropped and the request sent once more; a refusal names the source
// and never a secret. The last test runs the CLI with the variables a cluster would set.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>

#include "base/file_util.h"
#include "base/mutex.h"
#include "base/temp_dir_testutil.h"
#include "ferry/storage/registry.h"
#include "storage/azure/azure_store.h"
#include "storage/azure/entra_credentials.h"
#include "storage/curl/curl_transport.h"
#include "storage/testing/fake_env_testutil.h"
#include "tests/integration/server_env.h"
#include "tests/integration/stream_testutil.h"

namespace ferry::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Passes requests on to a transport that trusts azurite-oauth's certificate, noting the bearer
// token (or the Authorization scheme) of each, and how each was answered.
class BearerSpy : public http::Transport {
 public:
  void Submit(http::Request request, http::BodySink sink, http::Completion done) override {
    {
      MutexLock lock(mu_);
      authorizations_.emplace_back(request.headers.Get("Authorization").value_or(""));
    }
    inner_->Submit(std::move(request), std::move(sink),
                   [this, done = std::move(done)](Result<http::Response> r) {
                     {
                       MutexLock lock(mu_);
                       statuses_.push_back(r.ok() ? r->status : -1);
                     }
                     done(std::move(r));
                   });
  }
  std::vector<std::string> authorizations() const {
    MutexLock lock(mu_);
    return authorizations_;
  }
  std::vector<int> statuses() const {
    MutexLock lock(mu_);
    return statuses_;
  }

 private:
  std::shared_ptr<http::Transport> inner_ =
      http::MakeCurlTransport({.ca_bundle = ServerEnv("AZURITE_OAUTH_CA")});
  mutable Mutex mu_;
  std::vector<std::string> authorizations_ GUARDED_BY(mu_);
  std::vector<int> statuses_ GUARDED_BY(mu_);
};

nlohmann::json IdentityStats() {
  auto web = OpenUrl(ServerEnv("IDENTITY_ENDPOINT") + "/_stats");
  EXPECT_TRUE(web.ok());
  return nlohmann::json::parse(web->store->Get(web->key).value_or("{}"));
}

// The variables of one Entra source, pointed at the identity server and azurite-oauth.
struct Source {
  const char* name;
  const char* counter;  // the identity server's count of tokens issued to this source
  FakeEnv env;
};

std::vector<Source> EverySource(const std::filesystem::path& tmp) {
  const std::string identity = ServerEnv("IDENTITY_ENDPOINT");
  EXPECT_TRUE(
      WriteFileAtomically(tmp / "federated-token", ServerEnv("AZURE_FEDERATED_TOKEN") + "\n").ok());
  const FakeEnv base{{"AZURE_STORAGE_BLOB_ENDPOINT", ServerEnv("AZURITE_OAUTH_ENDPOINT")},
                     {"AZURE_AUTHORITY_HOST", identity}};
  auto with = [&](std::initializer_list<std::pair<const std::string, std::string>> more) {
    FakeEnv env = base;
    for (const auto& [name, value] : more) env.Set(name, value);
    return env;
  };
  const std::string tenant = ServerEnv("AZURE_TENANT");
  const std::string client = ServerEnv("AZURE_CLIENT_ID");
  return {
      {"client secret", "azure_secret",
       with({{"AZURE_TENANT_ID", tenant},
             {"AZURE_CLIENT_ID", client},
             {"AZURE_CLIENT_SECRET", ServerEnv("AZURE_CLIENT_SECRET")}})},
      {"certificate", "azure_certificate",
       with({{"AZURE_TENANT_ID", tenant},
             {"AZURE_CLIENT_ID", client},
             {"AZURE_CLIENT_CERTIFICATE_PATH", ServerEnv("AZURE_CLIENT_CERTIFICATE")}})},
      {"workload identity", "azure_federated",
       with({{"AZURE_TENANT_ID", tenant},
             {"AZURE_CLIENT_ID", client},
             {"AZURE_FEDERATED_TOKEN_FILE", (tmp / "federated-token").string()}})},
      {"managed identity (metadata service)", "azure_imds",
       with({{"AZURE_POD_IDENTITY_AUTHORITY_HOST", identity}, {"AZURE_CLIENT_ID", client}})},
      {"managed identity (App Service)", "azure_app_service",
       with({{"IDENTITY_ENDPOINT", identity + "/msi/token"},
             {"IDENTITY_HEADER", ServerEnv("AZURE_IDENTITY_HEADER")}})},
  };
}

// A blob written with the account key (Shared Key also works on azurite-oauth).
std::string PutWithAccountKey(const std::string& key, const std::string& data) {
  const FakeEnv env{{"AZURE_STORAGE_BLOB_ENDPOINT", ServerEnv("AZURITE_OAUTH_ENDPOINT")},
                    {"AZURE_STORAGE_ACCOUNT", ServerEnv("AZURITE_ACCOUNT")},
                    {"AZURE_STORAGE_KEY", ServerEnv("AZURITE_KEY")}};
  const std::string url = fmt::format("az://{}/{}", ServerEnv("AZURITE_CONTAINER"), key);
  auto opened = internal_azure::OpenAzureUrl(url, env, {}, std::make_shared<BearerSpy>());
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  if (opened.ok()) {
    EXPECT_TRUE(opened->store->Put(opened->key, data).ok());
  }
  return url;
}

TEST(AzureCredentials, EverySourceGetsATokenAzuriteAccepts) {
  TempDir tmp;
  const std::string prefix = fmt::format("entra/{}/", RunId());
  const std::string url = PutWithAccountKey(prefix + "blob", "read with a bearer token");
  const nlohmann::json before = IdentityStats();
  for (const Source& source : EverySource(tmp.path())) {
    SCOPED_TRACE(source.name);
    auto spy = std::make_shared<BearerSpy>();
    auto opened = internal_azure::OpenAzureUrl(url, source.env, {}, spy);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    auto got = opened->store->Get(opened->key);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, "read with a bearer token");
    auto listed = opened->store->List(prefix, /*recursive=*/true);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    EXPECT_EQ(listed->objects.size(), 1u);
    for (const std::string& authorization : spy->authorizations()) {
      EXPECT_THAT(authorization, StartsWith("Bearer eyJ"));
    }
    EXPECT_EQ(spy->authorizations().size(), 2u);
  }
  const nlohmann::json after = IdentityStats();
  for (const Source& source : EverySource(tmp.path())) {
    EXPECT_EQ(after[source.counter].get<int>() - before[source.counter].get<int>(), 1)
        << source.name << ": one token, for both requests";
  }
  EXPECT_EQ(after["refused"], before["refused"]);
}

TEST(AzureCredentials, TokensAreRenewedWhileAStoreReads) {
  TempDir tmp;
  const std::string url = PutWithAccountKey(fmt::format("entra/{}/renewed", RunId()), "x");
  const Source source =
      EverySource(tmp.path()).at(1);  // the certificate: a new assertion each time
  auto location = internal_azure::ParseAzureUrl(url, source.env);
  ASSERT_TRUE(location.ok()) << location.status().ToString();
  const auto provider = location->config.token_provider;
  ASSERT_NE(provider, nullptr);
  auto spy = std::make_shared<BearerSpy>();
  auto store = internal_azure::MakeAzureStore(location->config, {}, spy);
  const auto start = std::chrono::steady_clock::now();
  size_t reads = 0;
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(8)) {
    auto got = store->Get(location->key);
    ASSERT_TRUE(got.ok()) << "read " << reads << ": " << got.status().ToString();
    ++reads;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  provider->WaitForRefresh();
  const auto authorizations = spy->authorizations();
  EXPECT_EQ(authorizations.size(), reads) << "no request was refused and sent again";
  const std::set<std::string> tokens(authorizations.begin(), authorizations.end());
  EXPECT_GE(tokens.size(), 3u) << "the first token and at least two renewals";
  EXPECT_TRUE(provider->last_error().ok()) << provider->last_error().ToString();
}

// A clock that stops after the first token: the provider never sees it age, as with a clock
// behind the service's, so Azurite is the one to say it expired. The store drops it and sends the
// request once more with a new one.
TEST(AzureCredentials, ATokenTheServiceCallsExpiredIsReplacedAndTheRequestSentAgain) {
  TempDir tmp;
  const std::string url = PutWithAccountKey(fmt::format("entra/{}/expired", RunId()), "x");
  const Source source = EverySource(tmp.path()).at(0);
  auto location = internal_azure::ParseAzureUrl(url, source.env);
  ASSERT_TRUE(location.ok()) << location.status().ToString();
  const auto frozen = std::chrono::system_clock::now();
  auto provider = internal_azure::LoadAzureTokenProvider(source.env, [frozen] { return frozen; });
  ASSERT_TRUE(provider.ok() && *provider);
  location->config.token_provider = *provider;
  auto spy = std::make_shared<BearerSpy>();
  auto store = internal_azure::MakeAzureStore(location->config, {}, spy);
  ASSERT_TRUE(store->Get(location->key).ok());
  std::this_thread::sleep_for(std::chrono::seconds(7));  // past the token's 6 s
  auto got = store->Get(location->key);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const auto authorizations = spy->authorizations();
  ASSERT_EQ(authorizations.size(), 3u);
  EXPECT_EQ(authorizations[0], authorizations[1]);
  EXPECT_NE(authorizations[1], authorizations[2]);
  // Azurite refuses an expired token with 403 AuthenticationFailed (Azure: 401
  // InvalidAuthenticationInfo); both say "The token is expired".
  EXPECT_EQ(spy->statuses(), (std::vector<int>{200, 403, 200}));
}

TEST(AzureCredentials, ARefusedSourceIsNamedWithoutItsSecret) {
  TempDir tmp;
  const std::string url = PutWithAccountKey(fmt::format("entra/{}/refused", RunId()), "x");
  FakeEnv env = EverySource(tmp.path()).at(0).env;
  env.Set("AZURE_CLIENT_SECRET", "not-the-secret-0123456789");
  auto opened = internal_azure::OpenAzureUrl(url, env, {}, std::make_shared<BearerSpy>());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto got = opened->store->Get(opened->key);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnauthenticated);
  const std::string message = got.status().message();
  EXPECT_THAT(message, HasSubstr("credentials from service principal"));
  EXPECT_THAT(message, HasSubstr("AADSTS7000215"));
  EXPECT_THAT(message, HasSubstr(url));
  EXPECT_THAT(message, Not(HasSubstr("not-the-secret-0123456789")));

  // A metadata service that does not answer: within 3 s, named, with what to change.
  FakeEnv nowhere{{"AZURE_STORAGE_BLOB_ENDPOINT", ServerEnv("AZURITE_OAUTH_ENDPOINT")},
                  {"AZURE_POD_IDENTITY_AUTHORITY_HOST", "http://192.0.2.1"}};
  auto unreachable = internal_azure::OpenAzureUrl(url, nowhere, {}, std::make_shared<BearerSpy>());
  ASSERT_TRUE(unreachable.ok());
  const auto start = std::chrono::steady_clock::now();
  auto none = unreachable->store->Get(unreachable->key);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_THAT(none.status().message(), HasSubstr("no answer within 1 s"));
}

// `env ...` that runs a command as the identity server's service principal against
// azurite-oauth, all but its secret.
std::string ServicePrincipalCommandEnv() {
  return fmt::format(
      "env -u AZURE_STORAGE_CONNECTION_STRING -u AZURE_STORAGE_KEY FERRY_CA_BUNDLE={} "
      "AZURE_STORAGE_BLOB_ENDPOINT={} AZURE_AUTHORITY_HOST={} AZURE_TENANT_ID={} "
      "AZURE_CLIENT_ID={}",
      ServerEnv("AZURITE_OAUTH_CA"), ServerEnv("AZURITE_OAUTH_ENDPOINT"),
      ServerEnv("IDENTITY_ENDPOINT"), ServerEnv("AZURE_TENANT"), ServerEnv("AZURE_CLIENT_ID"));
}

// The CLI with the variables a cluster sets: a listing and a copy through a service principal,
// and the debug log names the source but holds neither the secret nor a token.
TEST(AzureCredentials, TheCliReadsWithAServicePrincipalAndLogsNoSecret) {
  TempDir tmp;
  const std::string prefix = fmt::format("entra/{}/cli/", RunId());
  const std::string url = PutWithAccountKey(prefix + "one", "first");
  PutWithAccountKey(prefix + "two", "second");
  const std::string env =
      fmt::format("{} FERRY_LOG=debug AZURE_CLIENT_SECRET={}", ServicePrincipalCommandEnv(),
                  ServerEnv("AZURE_CLIENT_SECRET"));
  const std::string dir = fmt::format("az://{}/{}", ServerEnv("AZURITE_CONTAINER"), prefix);
  ASSERT_EQ(Sh(fmt::format("{} {} cp -r -q {} {} > {} 2>&1", env, FERRY_CLI_PATH, dir,
                           Quote(tmp / "copy"), Quote(tmp / "log"))),
            0)
      << ReadFileToString(tmp / "log").value_or("");
  EXPECT_EQ(ReadFileToString(tmp / "copy" / "one").value_or(""), "first");
  EXPECT_EQ(ReadFileToString(tmp / "copy" / "two").value_or(""), "second");
  const std::string log = ReadFileToString(tmp / "log").value_or("");
  EXPECT_THAT(log, HasSubstr("credentials: new ones from service principal"));
  EXPECT_THAT(log, Not(HasSubstr(ServerEnv("AZURE_CLIENT_SECRET"))));
  EXPECT_THAT(log, Not(HasSubstr("Bearer eyJ")));
  EXPECT_THAT(log, Not(HasSubstr(".eyJ")));  // no JWT's claims part
}

// `ferry doctor --auth` on azurite-oauth through a service principal: the chain up to it, the
// token's application and tenant, list, read and write; a wrong secret is Entra's refusal, with
// exit status 1 and no secret in the output.
TEST(AzureCredentials, DoctorAuthNamesTheServicePrincipalAndItsTenant) {
  TempDir tmp;
  const std::string prefix = fmt::format("entra/{}/doctor/", RunId());
  PutWithAccountKey(prefix + "one", "first");
  const std::string env = ServicePrincipalCommandEnv();
  const std::string url = fmt::format("az://{}/{}", ServerEnv("AZURITE_CONTAINER"), prefix);
  ASSERT_EQ(Sh(fmt::format("{} AZURE_CLIENT_SECRET={} {} doctor {} --auth --json > {}", env,
                           ServerEnv("AZURE_CLIENT_SECRET"), FERRY_CLI_PATH, url,
                           Quote(tmp / "doctor.json"))),
            0)
      << ReadFileToString(tmp / "doctor.json").value_or("");
  const auto j = nlohmann::json::parse(ReadFileToString(tmp / "doctor.json").value_or("{}"));
  EXPECT_EQ(j["chain"].size(), 3u) << j["chain"].dump();  // Shared Key, SAS, service principal
  EXPECT_EQ(j["answered_by"], "service principal ferry-client (client secret)");
  EXPECT_THAT(j["identity"].get<std::string>(), HasSubstr("application ferry-client"));
  EXPECT_THAT(j["identity"].get<std::string>(), HasSubstr("tenant ferry-tenant"));
  for (const auto& check : j["checks"]) EXPECT_TRUE(check["ok"].get<bool>()) << check.dump();

  EXPECT_EQ(Sh(fmt::format("{} AZURE_CLIENT_SECRET=wrong-secret-0123456789 {} doctor {} --auth > "
                           "{} 2>&1",
                           env, FERRY_CLI_PATH, url, Quote(tmp / "refused.txt"))),
            1);
  const std::string text = ReadFileToString(tmp / "refused.txt").value_or("");
  EXPECT_THAT(text, HasSubstr("AADSTS7000215"));
  EXPECT_THAT(text, Not(HasSubstr("wrong-secret-0123456789")));
}

}  // namespace
}  // namespace ferry::testing
