#include "storage/gcs/google_credentials.h"

#include <fmt/format.h>

#include <array>
#include <nlohmann/json.hpp>

#include "base/ascii.h"
#include "base/file_util.h"
#include "storage/http/endpoint_error.h"
#include "storage/http/http_date.h"
#include "storage/http/url_encoding.h"
#include "storage/http/url_host.h"
#include "storage/jwt.h"

namespace ferry::internal_gcs {
namespace {

using internal_storage::AccessToken;
using std::chrono::system_clock;

constexpr std::array<const char*, 5> kVariables = {"GOOGLE_APPLICATION_CREDENTIALS",
                                                   "CLOUDSDK_CONFIG", "HOME", "GCE_METADATA_HOST",
                                                   "FERRY_GCE_METADATA"};

constexpr std::string_view kDefaultTokenUri = "https://oauth2.googleapis.com/token";
constexpr std::string_view kJwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer";
constexpr std::string_view kTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange";
constexpr std::string_view kAccessTokenType = "urn:ietf:params:oauth:token-type:access_token";

// A token endpoint the file names: https, or plain http to this machine only.
Status CheckEndpoint(const std::string& url, std::string_view field, const std::string& path) {
  if (http::IsPrivateEndpoint(url)) {
    return Status::Ok();
  }
  return InvalidArgumentError(
      fmt::format("{}: {} '{}' must be an https:// URL (plain http only to a loopback address)",
                  path, field, url));
}

struct CredentialsFile {
  std::string path;
  nlohmann::json json;
  std::string type;

  // A string field; "" when absent.
  std::string Text(const nlohmann::json& object, const char* key) const {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
  }
  std::string Text(const char* key) const { return Text(json, key); }
  Result<std::string> Require(const char* key) const {
    std::string value = Text(key);
    if (value.empty()) {
      return InvalidArgumentError(
          fmt::format("{}: a {} credentials file needs \"{}\"", path, type, key));
    }
    return value;
  }
};

Result<CredentialsFile> ReadCredentialsFile(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text) return text.status().WithContext("the Google credentials file");
  CredentialsFile f;
  f.path = path;
  f.json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!f.json.is_object()) {
    return InvalidArgumentError(fmt::format("{}: not a JSON credentials file", path));
  }
  f.type = f.Text("type");
  if (f.type != "service_account" && f.type != "authorized_user" && f.type != "external_account") {
    return InvalidArgumentError(
        fmt::format("{}: \"type\" is '{}': ferry reads service_account, authorized_user and "
                    "external_account files",
                    path, f.type.substr(0, 40)));
  }
  return f;
}

std::string Describe(const CredentialsFile& f) {
  if (f.type == "service_account") {
    return fmt::format("service account {} ({})", f.Text("client_email"), f.path);
  }
  if (f.type == "authorized_user") return fmt::format("user credentials ({})", f.path);
  return fmt::format("workload identity federation ({})", f.path);
}

Result<AccessToken> ServiceAccountToken(const CredentialsFile& f, system_clock::time_point now,
                                        const std::string& context, http::Transport* transport) {
  FERRY_ASSIGN_OR_RETURN(const std::string email, f.Require("client_email"));
  FERRY_ASSIGN_OR_RETURN(const std::string key, f.Require("private_key"));
  std::string token_uri = f.Text("token_uri");
  if (token_uri.empty()) token_uri = kDefaultTokenUri;
  FERRY_RETURN_IF_ERROR(CheckEndpoint(token_uri, "token_uri", f.path));
  const int64_t issued =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
  if (const std::string kid = f.Text("private_key_id"); !kid.empty()) header["kid"] = kid;
  const nlohmann::json claims = {{"iss", email},
                                 {"scope", kStorageScope},
                                 {"aud", token_uri},
                                 {"iat", issued},
                                 {"exp", issued + 3600}};
  FERRY_ASSIGN_OR_RETURN(
      const std::string assertion,
      internal_storage::SignJwtRs256(header, claims, key, fmt::format("{}: private_key", f.path)));
  const std::string body = http::FormEncode({{"grant_type", kJwtBearer}, {"assertion", assertion}});
  FERRY_ASSIGN_OR_RETURN(
      const std::string reply,
      internal_storage::PostTokenForm(
          token_uri, body, fmt::format("{} at {}", context, token_uri),
          " (check that the key is not deleted or disabled, and the service account exists)",
          transport));
  return internal_storage::ParseAccessTokenReply(reply, now, context);
}

Result<AccessToken> UserToken(const CredentialsFile& f, system_clock::time_point now,
                              const std::string& context, http::Transport* transport) {
  FERRY_ASSIGN_OR_RETURN(const std::string client_id, f.Require("client_id"));
  FERRY_ASSIGN_OR_RETURN(const std::string client_secret, f.Require("client_secret"));
  FERRY_ASSIGN_OR_RETURN(const std::string refresh_token, f.Require("refresh_token"));
  std::string token_uri = f.Text("token_uri");
  if (token_uri.empty()) token_uri = kDefaultTokenUri;
  FERRY_RETURN_IF_ERROR(CheckEndpoint(token_uri, "token_uri", f.path));
  const std::string body = http::FormEncode({{"grant_type", "refresh_token"},
                                             {"client_id", client_id},
                                             {"client_secret", client_secret},
                                             {"refresh_token", refresh_token}});
  FERRY_ASSIGN_OR_RETURN(const std::string reply,
                         internal_storage::PostTokenForm(
                             token_uri, body, fmt::format("{} at {}", context, token_uri),
                             " (the login may have expired or been revoked: run gcloud auth "
                             "application-default login again)",
                             transport));
  return internal_storage::ParseAccessTokenReply(reply, now, context);
}

Result<AccessToken> ExternalAccountToken(const CredentialsFile& f, system_clock::time_point now,
                                         const std::string& context, http::Transport* transport) {
  FERRY_ASSIGN_OR_RETURN(const std::string audience, f.Require("audience"));
  FERRY_ASSIGN_OR_RETURN(const std::string subject_type, f.Require("subject_token_type"));
  FERRY_ASSIGN_OR_RETURN(const std::string token_url, f.Require("token_url"));
  FERRY_RETURN_IF_ERROR(CheckEndpoint(token_url, "token_url", f.path));
  const auto source = f.json.find("credential_source");
  const std::string file =
      source != f.json.end() && source->is_object() ? f.Text(*source, "file") : std::string();
  if (file.empty()) {
    return InvalidArgumentError(fmt::format(
        "{}: only a credential_source with \"file\" is read (for a URL-, executable- or "
        "AWS-sourced token, write the token to a file and name it there)",
        f.path));
  }
  auto text = ReadFileToString(file);
  if (!text) return text.status().WithContext(fmt::format("{}: credential_source.file", f.path));
  std::string subject(TrimAsciiWhitespace(*text));
  const auto format = source->find("format");
  if (format != source->end() && format->is_object() && f.Text(*format, "type") == "json") {
    const std::string field = f.Text(*format, "subject_token_field_name");
    const auto json = nlohmann::json::parse(subject, nullptr, /*allow_exceptions=*/false);
    const auto it = json.is_object() ? json.find(field) : json.end();
    if (field.empty() || it == json.end() || !it->is_string()) {
      return InvalidArgumentError(fmt::format(
          "{}: credential_source.file {} holds no string field '{}'", f.path, file, field));
    }
    subject = it->get<std::string>();
  }
  if (subject.empty()) {
    return InvalidArgumentError(
        fmt::format("{}: credential_source.file {} is empty", f.path, file));
  }
  const std::string impersonation = f.Text("service_account_impersonation_url");
  const std::string body = http::FormEncode(
      {{"grant_type", kTokenExchange},
       {"audience", audience},
       {"scope",
        impersonation.empty() ? kStorageScope : "https://www.googleapis.com/auth/cloud-platform"},
       {"requested_token_type", kAccessTokenType},
       {"subject_token", subject},
       {"subject_token_type", subject_type}});
  FERRY_ASSIGN_OR_RETURN(
      const std::string reply,
      internal_storage::PostTokenForm(
          token_url, body, fmt::format("{} at {}", context, token_url),
          " (check the workload identity pool provider: the token's issuer, audience and "
          "attribute conditions)",
          transport));
  FERRY_ASSIGN_OR_RETURN(AccessToken federated,
                         internal_storage::ParseAccessTokenReply(reply, now, context));
  if (impersonation.empty()) return federated;

  // The federated token stands for the pool's identity; the service account's comes from IAM.
  FERRY_RETURN_IF_ERROR(CheckEndpoint(impersonation, "service_account_impersonation_url", f.path));
  const std::string impersonation_context =
      fmt::format("{}: generateAccessToken at {}", context, impersonation);
  const std::string request_body =
      nlohmann::json{{"scope", {kStorageScope}}, {"lifetime", "3600s"}}.dump();
  http::Request request;
  request.method = "POST";
  request.url = impersonation;
  request.headers.Set("Content-Type", "application/json");
  request.headers.Set("Authorization", "Bearer " + federated.access_token);
  request.body = ByteSource::FromView(request_body);
  request.timeouts.connect_ms = 5'000;
  request.timeouts.total_ms = 30'000;
  const auto owned = http::DefaultIfNull(transport);
  auto answer = transport->Execute(std::move(request));
  if (!answer) return answer.status().WithContext(impersonation_context);
  if (answer->status >= 300) {
    return internal_storage::TokenEndpointError(
        *answer, impersonation_context,
        " (the pool's identity needs roles/iam.workloadIdentityUser on the service account)");
  }
  const auto json = nlohmann::json::parse(answer->body, nullptr, /*allow_exceptions=*/false);
  AccessToken token;
  token.access_token = json.is_object() ? f.Text(json, "accessToken") : "";
  token.expiration = http::ParseIso8601(json.is_object() ? f.Text(json, "expireTime") : "");
  if (token.access_token.empty() || !token.expiration) {
    return DataLossError(
        fmt::format("{}: the reply lacks accessToken or expireTime", impersonation_context));
  }
  return token;
}

}  // namespace

Result<std::string> DescribeGoogleCredentialsFile(const std::string& path) {
  FERRY_ASSIGN_OR_RETURN(const CredentialsFile f, ReadCredentialsFile(path));
  return Describe(f);
}

Result<AccessToken> FetchGoogleFileToken(const std::string& path, system_clock::time_point now,
                                         http::Transport* transport) {
  FERRY_ASSIGN_OR_RETURN(const CredentialsFile f, ReadCredentialsFile(path));
  const std::string context = fmt::format("Google token for {}", Describe(f));
  if (f.type == "service_account") return ServiceAccountToken(f, now, context, transport);
  if (f.type == "authorized_user") return UserToken(f, now, context, transport);
  return ExternalAccountToken(f, now, context, transport);
}

Result<AccessToken> FetchGoogleMetadataToken(const std::string& host, system_clock::time_point now,
                                             http::Transport* transport) {
  const std::string url =
      fmt::format("http://{}/computeMetadata/v1/instance/service-accounts/default/token", host);
  const std::string context = fmt::format("Google token from the metadata server at {}", url);
  http::Request request;
  request.url = url;
  request.headers.Set("Metadata-Flavor", "Google");
  request.timeouts.connect_ms = 1'000;
  request.timeouts.total_ms = 3'000;
  const auto owned = http::DefaultIfNull(transport);
  auto reply = transport->Execute(std::move(request));
  if (!reply) {
    return reply.status().WithContext(
        fmt::format("{}: no answer within 1 s (not on Google Cloud: unset GCE_METADATA_HOST and "
                    "FERRY_GCE_METADATA, or set GOOGLE_APPLICATION_CREDENTIALS)",
                    context));
  }
  if (reply->status >= 300) {
    return internal_storage::TokenEndpointError(
        *reply, context,
        reply->status == 404 ? " (the instance has no service account attached)" : "");
  }
  return internal_storage::ParseAccessTokenReply(reply->body, now, context);
}

std::span<const char* const> GoogleEnvironmentVariables() { return kVariables; }

Result<std::shared_ptr<internal_storage::AccessTokenProvider>> LoadGoogleTokenProvider(
    const EnvLookup& env, internal_storage::WallClock clock,
    internal_storage::CredentialTrace* trace) {
  using internal_storage::TraceStep;
  if (!clock) clock = [] { return system_clock::now(); };
  auto from_file = [&](const std::string& path)
      -> Result<std::shared_ptr<internal_storage::AccessTokenProvider>> {
    // Read now, so that a wrong path or type fails when the URL is opened.
    FERRY_ASSIGN_OR_RETURN(std::string source, DescribeGoogleCredentialsFile(path));
    return std::make_shared<internal_storage::AccessTokenProvider>(
        std::move(source), [path, clock] { return FetchGoogleFileToken(path, clock()); }, clock);
  };
  if (const auto path = env("GOOGLE_APPLICATION_CREDENTIALS")) {
    TraceStep(trace, "GOOGLE_APPLICATION_CREDENTIALS", *path);
    auto provider = from_file(*path);
    if (!provider) return provider.status().WithContext("GOOGLE_APPLICATION_CREDENTIALS");
    return provider;
  }
  TraceStep(trace, "GOOGLE_APPLICATION_CREDENTIALS", "not set");
  std::string adc;
  if (const auto config = env("CLOUDSDK_CONFIG")) {
    adc = *config + "/application_default_credentials.json";
  } else if (const auto home = env("HOME")) {
    adc = *home + "/.config/gcloud/application_default_credentials.json";
  }
  std::error_code ec;
  if (!adc.empty() && std::filesystem::exists(adc, ec)) {
    TraceStep(trace, "gcloud credentials", adc);
    return from_file(adc);
  }
  TraceStep(trace, "gcloud credentials", adc.empty() ? "no HOME" : adc + " not there");
  std::string host = env("GCE_METADATA_HOST").value_or("");
  if (host.empty()) {
    const std::string flag = AsciiLower(env("FERRY_GCE_METADATA").value_or(""));
    if (flag == "1" || flag == "true" || flag == "yes") host = "metadata.google.internal";
  }
  if (host.empty()) {
    TraceStep(trace, "metadata server",
              "not asked: GCE_METADATA_HOST and FERRY_GCE_METADATA not set");
    return std::shared_ptr<internal_storage::AccessTokenProvider>();
  }
  TraceStep(trace, "metadata server", host);
  return std::make_shared<internal_storage::AccessTokenProvider>(
      fmt::format("metadata server ({})", host),
      [host, clock] { return FetchGoogleMetadataToken(host, clock()); }, clock);
}

}  // namespace ferry::internal_gcs
