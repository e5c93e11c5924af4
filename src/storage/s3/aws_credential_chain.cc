#include "storage/s3/aws_credential_chain.h"

#include <fmt/format.h>

#include <charconv>

#include "storage/s3/aws_metadata_credentials.h"
#include "storage/s3/sts_client.h"

namespace ferry::internal_s3 {
namespace {

Result<int> RoleDurationSeconds(const EnvLookup& env) {
  const auto text = env("FERRY_AWS_ROLE_DURATION_SECONDS");
  if (!text || text->empty()) return 3600;
  int seconds = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), seconds);
  if (ec != std::errc() || end != text->data() + text->size() || seconds < 1 ||
      seconds > 12 * 3600) {
    return InvalidArgumentError(fmt::format(
        "FERRY_AWS_ROLE_DURATION_SECONDS='{}': seconds from 1 to 43200", text->substr(0, 20)));
  }
  return seconds;
}

}  // namespace

std::shared_ptr<AwsCredentialProvider> FixedAwsCredentials(AwsCredentials credentials) {
  std::string source = credentials.source;
  return std::make_shared<AwsCredentialProvider>(
      std::move(source), [c = std::move(credentials)]() -> Result<AwsCredentials> { return c; });
}

Result<std::shared_ptr<AwsCredentialProvider>> LoadAwsCredentialProvider(
    const AwsConfigOptions& options, const EnvLookup& env, internal_storage::WallClock clock) {
  const bool anonymous = options.anonymous || IsAwsFlagSet(env("AWS_NO_SIGN_REQUEST").value_or(""));
  const bool keys_in_env = !env("AWS_ACCESS_KEY_ID").value_or("").empty() ||
                           !env("AWS_SECRET_ACCESS_KEY").value_or("").empty();
  const std::string token_file = env("AWS_WEB_IDENTITY_TOKEN_FILE").value_or("");
  const std::string role_arn = env("AWS_ROLE_ARN").value_or("");
  if (anonymous || keys_in_env || (token_file.empty() && role_arn.empty())) {
    FERRY_ASSIGN_OR_RETURN(AwsCredentials fixed, LoadAwsCredentials(options, env));
    if (anonymous || !fixed.anonymous()) return FixedAwsCredentials(std::move(fixed));
    // Nothing configured: the platform's endpoints.
    FERRY_ASSIGN_OR_RETURN(std::optional<ContainerCredentialsEndpoint> container,
                           ContainerEndpointFromEnv(env));
    if (container) {
      return std::make_shared<AwsCredentialProvider>(
          fmt::format("container credentials ({})", container->url),
          [endpoint = *container] { return FetchContainerCredentials(endpoint); },
          std::move(clock));
    }
    if (env("AWS_EC2_METADATA_SERVICE_ENDPOINT") &&
        !IsAwsFlagSet(env("AWS_EC2_METADATA_DISABLED").value_or(""))) {
      std::string endpoint = InstanceMetadataEndpoint(env);
      return std::make_shared<AwsCredentialProvider>(
          fmt::format("EC2 instance metadata ({})", endpoint),
          [endpoint] { return FetchInstanceMetadataCredentials(endpoint); }, std::move(clock));
    }
    return FixedAwsCredentials(std::move(fixed));
  }
  if (token_file.empty() || role_arn.empty()) {
    return InvalidArgumentError(token_file.empty()
                                    ? "AWS_ROLE_ARN is set but AWS_WEB_IDENTITY_TOKEN_FILE is not"
                                    : "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not");
  }
  WebIdentityRole role;
  role.token_file = token_file;
  role.role_arn = role_arn;
  role.session_name = env("AWS_ROLE_SESSION_NAME").value_or("");
  if (role.session_name.empty()) {
    role.session_name =
        fmt::format("ferry-{}", std::chrono::duration_cast<std::chrono::seconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count());
  }
  FERRY_ASSIGN_OR_RETURN(const std::string region, LoadAwsRegion(options, env));
  role.endpoint = StsEndpoint(region, env);
  FERRY_ASSIGN_OR_RETURN(role.duration_seconds, RoleDurationSeconds(env));
  return std::make_shared<AwsCredentialProvider>(
      fmt::format("web identity (STS AssumeRoleWithWebIdentity of {})", role.role_arn),
      [role] { return AssumeRoleWithWebIdentity(role); }, std::move(clock));
}

}  // namespace ferry::internal_s3
