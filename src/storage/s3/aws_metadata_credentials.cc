#include "storage/s3/aws_metadata_credentials.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "storage/http/endpoint_error.h"
#include "storage/http/http_date.h"
#include "storage/http/url_host.h"

namespace ferry::internal_s3 {
namespace {

bool AllowedPlainHttpHost(std::string_view host) {
  return http::IsLoopbackHost(host) || host == "169.254.170.2" || host == "169.254.170.23" ||
         host == "fd00:ec2::23";
}

}  // namespace

Result<AwsCredentials> ParseAwsCredentialJson(std::string_view body, std::string_view context) {
  const auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return DataLossError(fmt::format("{}: the reply is not JSON", context));
  auto text = [&](const char* key) {
    const auto it = json.find(key);
    return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (const std::string code = text("Code"); !code.empty() && code != "Success") {
    return UnavailableError(fmt::format("{}: the endpoint answers Code '{}'", context, code));
  }
  AwsCredentials c;
  c.access_key_id = text("AccessKeyId");
  c.secret_access_key = text("SecretAccessKey");
  c.session_token = text("Token");
  const std::string expiration = text("Expiration");
  c.expiration = http::ParseIso8601(expiration);
  if (c.access_key_id.empty() || c.secret_access_key.empty() || !c.expiration) {
    return DataLossError(fmt::format(
        "{}: the reply lacks AccessKeyId, SecretAccessKey or a readable Expiration ('{}')", context,
        expiration.substr(0, 40)));
  }
  return c;
}

Result<std::optional<ContainerCredentialsEndpoint>> ContainerEndpointFromEnv(const EnvLookup& env) {
  ContainerCredentialsEndpoint e;
  if (auto relative = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")) {
    e.url = "http://169.254.170.2" + (relative->starts_with('/') ? *relative : "/" + *relative);
  } else if (auto full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI")) {
    e.url = *full;
    if (!e.url.starts_with("https://")) {
      if (!e.url.starts_with("http://") || !AllowedPlainHttpHost(http::UrlHost(e.url))) {
        return InvalidArgumentError(fmt::format(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI={}: over plain http only a loopback address or "
            "169.254.170.2 / 169.254.170.23 may be given (use https for another host)",
            e.url));
      }
    }
  } else {
    return std::optional<ContainerCredentialsEndpoint>();
  }
  e.token_file = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE").value_or("");
  if (e.token_file.empty()) e.token = env("AWS_CONTAINER_AUTHORIZATION_TOKEN").value_or("");
  return std::optional<ContainerCredentialsEndpoint>(std::move(e));
}

Result<AwsCredentials> FetchContainerCredentials(const ContainerCredentialsEndpoint& endpoint,
                                                 http::Transport* transport) {
  const std::string context = fmt::format("container credentials at {}", endpoint.url);
  std::string token = endpoint.token;
  if (!endpoint.token_file.empty()) {
    auto read = ReadFileToString(endpoint.token_file);
    if (!read) {
      return read.status().WithContext(
          fmt::format("{}: the token file (AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE)", context));
    }
    token = std::move(*read);
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  }
  http::Request request;
  request.url = endpoint.url;
  if (!token.empty()) request.headers.Set("Authorization", token);
  request.timeouts.connect_ms = 2'000;
  request.timeouts.total_ms = 10'000;
  const auto owned = http::DefaultIfNull(transport);
  auto reply = transport->Execute(std::move(request));
  if (!reply) return reply.status().WithContext(context);
  if (reply->status >= 300) {
    return http::EndpointReplyError(
        *reply, context, {},
        " (check AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE] and the task's role)");
  }
  FERRY_ASSIGN_OR_RETURN(AwsCredentials c, ParseAwsCredentialJson(reply->body, context));
  c.source = fmt::format("container credentials ({})", endpoint.url);
  return c;
}

std::string InstanceMetadataEndpoint(const EnvLookup& env) {
  std::string endpoint =
      env("AWS_EC2_METADATA_SERVICE_ENDPOINT").value_or("http://169.254.169.254");
  while (endpoint.ends_with('/')) endpoint.pop_back();
  return endpoint;
}

Result<AwsCredentials> FetchInstanceMetadataCredentials(std::string_view endpoint,
                                                        http::Transport* transport) {
  const std::string context = fmt::format("EC2 instance metadata (IMDSv2) at {}", endpoint);
  const auto owned = http::DefaultIfNull(transport);
  auto request = [&](std::string method, std::string path) {
    http::Request r;
    r.method = std::move(method);
    r.url = fmt::format("{}{}", endpoint, path);
    r.timeouts.connect_ms = 1'000;
    r.timeouts.total_ms = 3'000;
    return r;
  };
  http::Request put = request("PUT", "/latest/api/token");
  put.headers.Set("X-aws-ec2-metadata-token-ttl-seconds", "21600");
  put.body = ByteSource::FromView("");
  auto token = transport->Execute(std::move(put));
  if (!token) {
    return token.status().WithContext(fmt::format(
        "{}: no answer within 1 s (not on EC2, or inside a container whose instance allows one "
        "network hop: raise the hop limit to 2, or set AWS_EC2_METADATA_DISABLED=true)",
        context));
  }
  if (token->status >= 300) {
    return http::EndpointReplyError(*token, context, {},
                                    " (the session token PUT of IMDSv2 was refused)");
  }
  const std::string session = token->body;
  const std::string roles_path = "/latest/meta-data/iam/security-credentials/";
  http::Request list = request("GET", roles_path);
  list.headers.Set("X-aws-ec2-metadata-token", session);
  FERRY_ASSIGN_OR_RETURN(http::Response roles, transport->Execute(std::move(list)));
  if (roles.status >= 300) {
    return http::EndpointReplyError(
        roles, context, {}, roles.status == 404 ? " (the instance has no IAM role attached)" : "");
  }
  std::string role = roles.body.substr(0, roles.body.find_first_of("\r\n"));
  if (role.empty()) {
    return NotFoundError(
        fmt::format("{}: the instance has no IAM role attached (an empty role list)", context));
  }
  http::Request get = request("GET", roles_path + role);
  get.headers.Set("X-aws-ec2-metadata-token", session);
  FERRY_ASSIGN_OR_RETURN(http::Response reply, transport->Execute(std::move(get)));
  if (reply.status >= 300) return http::EndpointReplyError(reply, context);
  FERRY_ASSIGN_OR_RETURN(
      AwsCredentials c,
      ParseAwsCredentialJson(reply.body, fmt::format("{} role {}", context, role)));
  c.source = fmt::format("EC2 instance metadata (role {})", role);
  return c;
}

}  // namespace ferry::internal_s3
