#include "storage/s3/sts_client.h"

#include <fmt/format.h>

#include <vector>

#include "base/file_util.h"
#include "storage/http/http_date.h"
#include "storage/http/url_encoding.h"
#include "storage/s3/s3_signer.h"
#include "storage/sha256.h"
#include "storage/xml/xml_tree.h"

namespace ferry::internal_s3 {
namespace {

// A web identity token is a JWT of a few KiB; anything far larger is not one.
constexpr uint64_t kMaxTokenBytes = 64 * 1024;

// STS's error document: <ErrorResponse><Error><Code/><Message/></Error></ErrorResponse>.
Status StsError(const http::Response& r, std::string_view context) {
  std::string code, message;
  if (auto xml = ParseXml(r.body)) {
    if (const XmlElement* error = xml->Child("Error")) {
      code = error->ChildText("Code");
      message = error->ChildText("Message");
    }
  }
  const std::string text =
      fmt::format("{}: HTTP {}{}{}", context, r.status, code.empty() ? "" : " " + code,
                  message.empty() ? "" : ": " + message);
  if (r.status >= 500 || code == "Throttling" || code == "IDPCommunicationError") {
    return UnavailableError(text);
  }
  if (code == "AccessDenied" || r.status == 403) return PermissionDeniedError(text);
  if (code == "InvalidIdentityToken" || code == "ExpiredTokenException" ||
      code == "IDPRejectedClaim" || r.status == 401) {
    return UnauthenticatedError(text);
  }
  return InvalidArgumentError(text);
}

}  // namespace

std::string StsEndpoint(std::string_view region, const EnvLookup& env) {
  for (const char* name : {"AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL"}) {
    if (auto url = env(name); url && !url->empty()) {
      std::string endpoint = *url;
      while (endpoint.ends_with('/')) endpoint.pop_back();
      return endpoint;
    }
  }
  return fmt::format("https://sts.{}.amazonaws.com", region);
}

Result<AwsCredentials> ParseStsCredentials(std::string_view body, std::string_view action,
                                           std::string_view context) {
  auto xml = ParseXml(body);
  if (!xml) return DataLossError(fmt::format("{}: the reply is not XML", context));
  const XmlElement* result = xml->Child(fmt::format("{}Result", action));
  const XmlElement* credentials = result ? result->Child("Credentials") : nullptr;
  if (credentials == nullptr) {
    return DataLossError(fmt::format("{}: the reply ({}) holds no {}Result/Credentials", context,
                                     xml->name, action));
  }
  AwsCredentials c;
  c.access_key_id = credentials->ChildText("AccessKeyId");
  c.secret_access_key = credentials->ChildText("SecretAccessKey");
  c.session_token = credentials->ChildText("SessionToken");
  const std::string expiration = credentials->ChildText("Expiration");
  c.expiration = http::ParseIso8601(expiration);
  if (c.access_key_id.empty() || c.secret_access_key.empty() || c.session_token.empty() ||
      !c.expiration) {
    return DataLossError(fmt::format(
        "{}: the reply's credentials lack an access key id, a secret, a session token or a "
        "readable Expiration ('{}')",
        context, expiration.substr(0, 40)));
  }
  return c;
}

namespace {

// POSTs `body` to STS, signed with `signer` when given; the body of a successful reply.
Result<std::string> PostSts(const std::string& endpoint, const std::string& body,
                            const std::string& context, const SigV4Signer* signer,
                            http::Transport* transport) {
  http::Request request;
  request.method = "POST";
  request.url = endpoint + "/";
  request.headers.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8");
  request.body = ByteSource::FromView(body);
  // A token endpoint answers in seconds or not at all: a training job must not hang on it.
  request.timeouts.connect_ms = 5'000;
  request.timeouts.total_ms = 30'000;
  if (signer != nullptr) {
    FERRY_RETURN_IF_ERROR(signer->Sign(request, Sha256Hex(body), std::chrono::system_clock::now()));
  }
  const auto owned = http::DefaultIfNull(transport);
  auto reply = transport->Execute(std::move(request));
  if (!reply) return reply.status().WithContext(context);
  if (reply->status >= 300) return StsError(*reply, context);
  return std::move(reply->body);
}

// The credentials STS gives back for `action`.
Result<AwsCredentials> CallSts(const std::string& endpoint, const std::string& body,
                               std::string_view action, const std::string& context,
                               const SigV4Signer* signer, http::Transport* transport) {
  FERRY_ASSIGN_OR_RETURN(const std::string reply,
                         PostSts(endpoint, body, context, signer, transport));
  return ParseStsCredentials(reply, action, context);
}

}  // namespace

Result<AwsCredentials> AssumeRole(const AssumedRole& role, const AwsCredentials& source,
                                  http::Transport* transport) {
  const std::string context = fmt::format("STS AssumeRole of {} at {} with {}", role.role_arn,
                                          role.endpoint, source.ToString());
  std::vector<std::pair<std::string_view, std::string_view>> fields = {
      {"Action", "AssumeRole"},
      {"Version", "2011-06-15"},
      {"RoleArn", role.role_arn},
      {"RoleSessionName", role.session_name}};
  const std::string duration = std::to_string(role.duration_seconds);
  fields.emplace_back("DurationSeconds", duration);
  if (!role.external_id.empty()) fields.emplace_back("ExternalId", role.external_id);
  const SigV4Signer signer(source, role.region, "sts");
  FERRY_ASSIGN_OR_RETURN(AwsCredentials c, CallSts(role.endpoint, http::FormEncode(fields),
                                                   "AssumeRole", context, &signer, transport));
  c.source = fmt::format("role {} (STS AssumeRole with {})", role.role_arn, source.source);
  return c;
}

Result<AwsCredentials> AssumeRoleWithWebIdentity(const WebIdentityRole& role,
                                                 http::Transport* transport) {
  const std::string context =
      fmt::format("STS AssumeRoleWithWebIdentity of {} at {}", role.role_arn, role.endpoint);
  auto read = ReadFileToString(role.token_file);
  if (!read) {
    return read.status().WithContext(
        fmt::format("{}: the web identity token file (AWS_WEB_IDENTITY_TOKEN_FILE)", context));
  }
  std::string token = std::move(*read);
  if (token.size() > kMaxTokenBytes) {
    return InvalidArgumentError(
        fmt::format("{}: the web identity token file {} holds {} bytes, not a token", context,
                    role.token_file, token.size()));
  }
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  if (token.empty()) {
    return InvalidArgumentError(
        fmt::format("{}: the web identity token file {} is empty", context, role.token_file));
  }
  const std::string body =
      http::FormEncode({{"Action", "AssumeRoleWithWebIdentity"},
                        {"Version", "2011-06-15"},
                        {"RoleArn", role.role_arn},
                        {"RoleSessionName", role.session_name},
                        {"WebIdentityToken", token},
                        {"DurationSeconds", std::to_string(role.duration_seconds)}});
  FERRY_ASSIGN_OR_RETURN(AwsCredentials c,
                         CallSts(role.endpoint, body, "AssumeRoleWithWebIdentity", context,
                                 /*signer=*/nullptr, transport));
  c.source = fmt::format("web identity (STS AssumeRoleWithWebIdentity of {})", role.role_arn);
  return c;
}

Result<std::string> GetCallerIdentity(const std::string& endpoint, std::string_view region,
                                      const AwsCredentials& credentials,
                                      http::Transport* transport) {
  const std::string context =
      fmt::format("STS GetCallerIdentity at {} with {}", endpoint, credentials.ToString());
  const SigV4Signer signer(credentials, std::string(region), "sts");
  FERRY_ASSIGN_OR_RETURN(
      const std::string reply,
      PostSts(endpoint,
              http::FormEncode({{"Action", "GetCallerIdentity"}, {"Version", "2011-06-15"}}),
              context, &signer, transport));
  auto xml = ParseXml(reply);
  const XmlElement* result = xml ? xml->Child("GetCallerIdentityResult") : nullptr;
  const std::string arn = result ? result->ChildText("Arn") : "";
  if (arn.empty()) return DataLossError(fmt::format("{}: the reply holds no Arn", context));
  return arn;
}

}  // namespace ferry::internal_s3
