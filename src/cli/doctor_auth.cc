#include "cli/doctor_auth.h"

#include <fmt/format.h>

#include <random>

#include "ferry/storage/registry.h"
#include "storage/azure/azure_config.h"
#include "storage/databricks/databricks_config.h"
#include "storage/gcs/gcs_store.h"
#include "storage/gcs/google_credentials.h"
#include "storage/http/http_date.h"
#include "storage/http/http_types.h"
#include "storage/http/url_encoding.h"
#include "storage/jwt.h"
#include "storage/s3/aws_credential_chain.h"
#include "storage/s3/s3_endpoint.h"
#include "storage/s3/sts_client.h"

namespace ferry::cli {
namespace {

using internal_storage::CredentialTrace;
using std::chrono::system_clock;

std::string Iso8601(system_clock::time_point t) {
  const std::time_t seconds = system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// Where the answer to a refusal lies, per store and operation.
std::string FixFor(std::string_view scheme, std::string_view check, const Status& s) {
  const bool aws = scheme == "s3";
  const bool azure = scheme == "az" || scheme == "abfs" || scheme == "abfss";
  const bool gcs = scheme == "gs" || scheme == "gcs";
  const bool databricks = scheme == "dbfs";
  switch (s.code()) {
    case StatusCode::kPermissionDenied:
      if (aws) {
        return check == "list"   ? "the identity needs s3:ListBucket on the bucket"
               : check == "read" ? "the identity needs s3:GetObject on the objects"
                                 : "the identity needs s3:PutObject and s3:DeleteObject";
      }
      if (azure) {
        return check == "write"
                   ? "give the identity Storage Blob Data Contributor on the container"
                   : "give the identity Storage Blob Data Reader (or Contributor) on the "
                     "container or the account";
      }
      if (databricks) {
        return check == "write" ? "grant the identity WRITE VOLUME on the volume"
                                : "grant the identity USE CATALOG, USE SCHEMA and READ VOLUME "
                                  "on the volume";
      }
      if (gcs) {
        return check == "write" ? "the HMAC key's service account needs storage.objects.create"
                                : "the HMAC key's service account needs storage.objects.list "
                                  "and storage.objects.get";
      }
      return "the credentials do not allow this here";
    case StatusCode::kUnauthenticated:
      return "the store refused the credentials: a wrong or revoked key, an expired token, or a "
             "clock more than 5 minutes off";
    case StatusCode::kNotFound:
      if (databricks) return "no such volume (or no permission to see it): check the name";
      return "no such bucket or container (or no permission to see it): check the name";
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      return "the endpoint did not answer: check the network, a proxy, and the endpoint variables";
    default:
      return "";
  }
}

void DescribeAws(const std::string& url, AuthReport& r) {
  auto location = internal_s3::ParseBucketUrl(url, "s3");
  CredentialTrace trace;
  auto provider = internal_s3::LoadAwsCredentialProvider({}, ProcessEnv, {}, &trace);
  r.chain = std::move(trace.steps);
  if (!location || !provider) {
    r.credentials = !location ? location.status() : provider.status();
    r.fix = "fix the setting the message names";
    return;
  }
  auto current = (*provider)->Current();
  if (!current) {
    r.credentials = current.status();
    r.fix = "the source that was chosen could not give credentials: see the message for why";
    return;
  }
  r.answered_by = (*provider)->source();
  r.expiration = current->expiration;
  if (current->anonymous()) {
    r.identity = "none: requests go unsigned";
    return;
  }
  const std::string region = internal_s3::LoadAwsRegion({}, ProcessEnv).value_or("us-east-1");
  auto arn = internal_s3::GetCallerIdentity(internal_s3::StsEndpoint(region), region, *current);
  r.identity = arn ? *arn : fmt::format("not known ({})", arn.status().message());
}

// The claims of an Entra ID token that say who it is for; never the token.
std::string TokenIdentity(const std::string& token) {
  auto claims = internal_storage::UnverifiedJwtClaims(token);
  if (!claims) return "not known (the token is not a JWT)";
  auto text = [&](const char* key) {
    const auto it = claims->find(key);
    return it != claims->end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::string who = text("appid");
  if (who.empty()) who = text("upn");
  return fmt::format("application {} (object {}) in tenant {}", who.empty() ? "?" : who,
                     text("oid").empty() ? "?" : text("oid"),
                     text("tid").empty() ? "?" : text("tid"));
}

// A SAS token's permissions and expiry (sp, se): not secrets, unlike its signature.
void DescribeSas(const std::string& token, AuthReport& r) {
  std::string sp;
  std::string se;
  std::string_view rest = token;
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    if (pair.starts_with("sp=")) sp = http::PercentDecode(pair.substr(3));
    if (pair.starts_with("se=")) se = http::PercentDecode(pair.substr(3));
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  r.identity = fmt::format("a SAS token with permissions '{}'", sp.empty() ? "?" : sp);
  if (!se.empty()) {
    if (auto when = http::ParseIso8601(se)) r.expiration = *when;
  }
}

void DescribeAzure(const std::string& url, AuthReport& r) {
  auto location = internal_azure::ParseAzureUrl(url);
  if (!location) {
    r.credentials = location.status();
    r.fix = "fix the setting the message names";
    return;
  }
  const internal_azure::AzureConfig& c = location->config;
  if (c.credentials.has_shared_key()) {
    r.chain.push_back({"Shared Key", fmt::format("the account key of {}", c.account)});
    r.answered_by = fmt::format("Shared Key (account {})", c.account);
    r.identity = fmt::format("the account {} itself (its key allows everything)", c.account);
    return;
  }
  r.chain.push_back({"Shared Key", fmt::format("no key for account {}", c.account)});
  if (c.credentials.has_sas()) {
    r.chain.push_back({"SAS", "a SAS token"});
    r.answered_by = "SAS token";
    DescribeSas(c.credentials.sas_token, r);
    return;
  }
  r.chain.push_back({"SAS", "no SAS token"});
  CredentialTrace trace;
  (void)internal_azure::LoadAzureTokenProvider(ProcessEnv, {}, &trace);
  for (auto& step : trace.steps) r.chain.push_back(std::move(step));
  if (!c.token_provider) {
    r.chain.push_back({"none", "requests go anonymous (public containers only)"});
    r.answered_by = "anonymous";
    r.identity = "none: requests are anonymous";
    return;
  }
  auto token = c.token_provider->Current();
  if (!token) {
    r.credentials = token.status();
    r.fix = "the identity that was chosen could not get a token: see the message for why";
    return;
  }
  r.answered_by = c.token_provider->source();
  r.expiration = token->expiration;
  r.identity = TokenIdentity(token->access_token);
}

void DescribeGcs(const std::string& url, AuthReport& r) {
  auto location = internal_s3::ParseBucketUrl(url, UrlScheme(url));
  if (!location) {
    r.credentials = location.status();
    return;
  }
  auto config = internal_gcs::GcsStoreConfigFromEnvironment(location->bucket);
  if (!config) {
    r.credentials = config.status();
    r.fix = "fix the setting the message names";
    return;
  }
  const auto& c = config->credentials;
  r.chain.push_back(
      {"HMAC keys", c.anonymous() ? "GCS_HMAC_ACCESS_KEY_ID (or GCS_KEY) not set" : c.source});
  if (!c.anonymous()) {
    r.answered_by = c.source;
    r.identity = fmt::format("the service account of HMAC key {}", c.access_key_id);
    return;
  }
  CredentialTrace trace;
  (void)internal_gcs::LoadGoogleTokenProvider(ProcessEnv, {}, &trace);
  for (auto& step : trace.steps) r.chain.push_back(std::move(step));
  const auto& provider = config->bearer_token_provider;
  if (!provider) {
    r.chain.push_back({"none", "requests go unsigned (public buckets only)"});
    r.answered_by = "anonymous";
    r.identity = "none: requests go unsigned";
    return;
  }
  auto token = provider->Current();
  if (!token) {
    r.credentials = token.status();
    r.fix = "the source that was chosen could not give a token: see the message for why";
    return;
  }
  r.answered_by = provider->source();
  r.expiration = token->expiration;
  r.identity = "as the source says (Google's tokens do not name their holder)";
}

void DescribeDatabricks(const std::string& url, AuthReport& r) {
  auto path = internal_databricks::ParseVolumeUrl(url);
  if (!path) {
    r.credentials = path.status();
    return;
  }
  if (auto folder = internal_databricks::FuseVolumeFolder(path->volume)) {
    r.chain.push_back({"FUSE folder", folder->string()});
    r.answered_by = "none needed: the volume is mounted here and read as local files";
    r.identity = "this process's user, as the mount allows";
    return;
  }
  r.chain.push_back({"FUSE folder", fmt::format("{} is not mounted here (or FERRY_DATABRICKS_FUSE "
                                                "is false)",
                                                path->volume)});
  CredentialTrace trace;
  auto config = internal_databricks::LoadDatabricksConfig(ProcessEnv, {}, &trace);
  for (auto& step : trace.steps) r.chain.push_back(std::move(step));
  if (!config) {
    r.credentials = config.status();
    r.fix = "fix the setting the message names";
    return;
  }
  auto token = config->token_provider->Current();
  if (!token) {
    r.credentials = token.status();
    r.fix = "the source that was chosen could not give a token: see the message for why";
    return;
  }
  r.answered_by = config->token_provider->source();
  r.expiration = token->expiration;
  auto who = internal_databricks::DatabricksCurrentUser(*config);
  r.identity = who ? *who : fmt::format("not known ({})", who.status().message());
}

AuthCheck Check(std::string name, std::string_view scheme, const Status& status,
                std::string detail) {
  AuthCheck c{std::move(name), status, std::move(detail), ""};
  if (!status.ok()) c.fix = FixFor(scheme, c.name, status);
  return c;
}

void RunChecks(const std::string& url, const AuthOptions& options, AuthReport& r) {
  auto target = OpenUrl(url);
  if (!target) {
    r.checks.push_back(Check("list", UrlScheme(url), target.status(), ""));
    return;
  }
  ObjectStore& store = *target->store;
  const std::string scheme(store.scheme());
  const std::string& key = target->key;
  // The URL names one object, or a folder whose first object is read.
  std::optional<std::string> object;
  if (!key.empty() && !key.ends_with('/') && store.Head(key).ok()) object = key;
  const std::string folder = object                              ? key.substr(0, key.rfind('/') + 1)
                             : key.empty() || key.ends_with('/') ? key
                                                                 : key + "/";
  auto listing = store.List(object ? key : folder, /*recursive=*/false);
  if (listing) {
    if (!object && !listing->objects.empty()) object = listing->objects.front().key;
    r.checks.push_back(
        Check("list", scheme, Status::Ok(),
              fmt::format("{} object{}, {} folder{} at {}", listing->objects.size(),
                          listing->objects.size() == 1 ? "" : "s", listing->prefixes.size(),
                          listing->prefixes.size() == 1 ? "" : "s",
                          store.ToUrl(object && *object == key ? key : folder))));
  } else if (listing.status().code() == StatusCode::kUnimplemented) {
    r.checks.push_back(Check("list", scheme, Status::Ok(), "not tried: the store cannot list"));
  } else {
    r.checks.push_back(Check("list", scheme, listing.status(), ""));
  }
  if (object) {
    uint64_t bytes = 0;
    auto read = store.Read(*object, ByteRange{0, 1}, [&](std::string_view chunk) {
      bytes += chunk.size();
      return Status::Ok();
    });
    r.checks.push_back(Check("read", scheme, read.status(),
                             fmt::format("{} ({} byte)", store.ToUrl(*object), bytes)));
  } else {
    r.checks.push_back(Check("read", scheme, Status::Ok(), "not tried: no object there"));
  }
  if (!options.write) return;
  if (store.read_only()) {
    r.checks.push_back(Check("write", scheme, Status::Ok(), "not tried: the store is read-only"));
    return;
  }
  std::mt19937_64 random(std::random_device{}());
  const std::string probe = fmt::format("{}.ferry-doctor-{:016x}", folder, random());
  Status wrote = store.Put(probe, "ferry doctor --auth: a probe, removed at once\n");
  if (wrote.ok()) wrote = store.Remove(probe);
  r.checks.push_back(
      Check("write", scheme, wrote, fmt::format("wrote and removed {}", store.ToUrl(probe))));
}

}  // namespace

bool AuthReport::ok() const {
  if (!credentials.ok()) return false;
  for (const AuthCheck& c : checks) {
    if (!c.status.ok()) return false;
  }
  return true;
}

Result<AuthReport> CheckAuth(const std::string& url, const AuthOptions& options) {
  FERRY_RETURN_IF_ERROR(CheckUrlSyntax(url));
  AuthReport r;
  r.url = http::RedactUrl(url);  // a presigned or SAS URL carries its signature
  const std::string scheme = UrlScheme(url);
  if (scheme == "s3") {
    DescribeAws(url, r);
  } else if (scheme == "az" || scheme == "abfs" || scheme == "abfss") {
    DescribeAzure(url, r);
  } else if (scheme == "gs" || scheme == "gcs") {
    DescribeGcs(url, r);
  } else if (scheme == "dbfs") {
    DescribeDatabricks(url, r);
  } else {
    r.chain.push_back({"none", scheme == "file" ? "local files need no credentials"
                                                : "plain HTTP(S) is read without credentials"});
    r.answered_by = "none needed";
  }
  if (options.checks && r.credentials.ok()) RunChecks(url, options, r);
  return r;
}

std::vector<std::string> FormatAuthReport(const AuthReport& r) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("credentials for {}", r.url));
  for (size_t i = 0; i < r.chain.size(); ++i) {
    lines.push_back(fmt::format("  {}. {:<24} {}", i + 1, r.chain[i].source, r.chain[i].found));
  }
  if (!r.credentials.ok()) {
    lines.push_back(fmt::format("  answered by  none: {}", r.credentials.message()));
    if (!r.fix.empty()) lines.push_back(fmt::format("  fix          {}", r.fix));
    return lines;
  }
  lines.push_back(fmt::format("  answered by  {}", r.answered_by));
  if (!r.identity.empty()) lines.push_back(fmt::format("  identity     {}", r.identity));
  if (r.expiration) {
    const auto left =
        std::chrono::duration_cast<std::chrono::seconds>(*r.expiration - system_clock::now());
    lines.push_back(fmt::format("  expires      {} (in {} s; renewed in the background)",
                                Iso8601(*r.expiration), left.count()));
  }
  for (const AuthCheck& c : r.checks) {
    if (c.status.ok()) {
      lines.push_back(fmt::format("  {:<12} ok: {}", c.name, c.detail));
    } else {
      lines.push_back(fmt::format("  {:<12} failed: {}", c.name, c.status.message()));
      if (!c.fix.empty()) lines.push_back(fmt::format("  {:<12} fix: {}", "", c.fix));
    }
  }
  return lines;
}

nlohmann::ordered_json AuthReportJson(const AuthReport& r) {
  nlohmann::ordered_json j;
  j["url"] = r.url;
  j["chain"] = nlohmann::ordered_json::array();
  for (const auto& step : r.chain) {
    j["chain"].push_back({{"source", step.source}, {"found", step.found}});
  }
  if (r.credentials.ok()) {
    j["answered_by"] = r.answered_by;
    j["identity"] = r.identity;
    if (r.expiration) j["expires"] = Iso8601(*r.expiration);
  } else {
    j["answered_by"] = nullptr;
    j["error"] = r.credentials.message();
    j["fix"] = r.fix;
  }
  j["checks"] = nlohmann::ordered_json::array();
  for (const AuthCheck& c : r.checks) {
    nlohmann::ordered_json check = {{"name", c.name}, {"ok", c.status.ok()}, {"detail", c.detail}};
    if (!c.status.ok()) {
      check["error"] = c.status.message();
      check["fix"] = c.fix;
    }
    j["checks"].push_back(std::move(check));
  }
  j["ok"] = r.ok();
  return j;
}

}  // namespace ferry::cli
