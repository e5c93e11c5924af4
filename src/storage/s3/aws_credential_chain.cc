#include "storage/s3/aws_credential_chain.h"

#include <fmt/format.h>

#include <charconv>

#include "storage/s3/aws_metadata_credentials.h"
#include "storage/s3/credential_process.h"
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

std::string DefaultSessionName() {
  return fmt::format("ferry-{}", std::chrono::duration_cast<std::chrono::seconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
}

// A profile with role_arn: the role assumed with the credentials of its source_profile (its
// static keys; or, when that profile has a role_arn of its own, that role's credentials: a chain
// of roles), of the environment (credential_source = Environment), of the container or instance
// metadata endpoint (EcsContainer, Ec2InstanceMetadata), or by its web_identity_token_file.
// `depth` counts the roles above this one in a chain.
Result<std::shared_ptr<AwsCredentialProvider>> RoleProfileProvider(
    const AwsProfileSettings& profile, const AwsConfigOptions& options, const EnvLookup& env,
    internal_storage::WallClock clock, int depth = 0) {
  FERRY_ASSIGN_OR_RETURN(const std::string region, LoadAwsRegion(options, env));
  int duration = 3600;
  if (const std::string text = profile.Get("duration_seconds"); !text.empty()) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), duration);
    if (ec != std::errc() || end != text.data() + text.size() || duration < 1) {
      return InvalidArgumentError(
          fmt::format("{}: duration_seconds = '{}' is not a number of seconds", profile.where,
                      text.substr(0, 20)));
    }
  }
  std::string session_name = profile.Get("role_session_name");
  if (session_name.empty()) session_name = DefaultSessionName();
  if (const std::string token_file = profile.Get("web_identity_token_file"); !token_file.empty()) {
    WebIdentityRole role{token_file, profile.Get("role_arn"), session_name,
                         StsEndpoint(region, env), duration};
    return std::make_shared<AwsCredentialProvider>(
        fmt::format("web identity (STS AssumeRoleWithWebIdentity of {}, {})", role.role_arn,
                    profile.where),
        [role] { return AssumeRoleWithWebIdentity(role); }, std::move(clock));
  }
  // The source: static keys, or a provider of temporary credentials.
  AwsCredentials source;
  std::shared_ptr<AwsCredentialProvider> source_provider;
  const std::string source_profile = profile.Get("source_profile");
  const std::string credential_source = profile.Get("credential_source");
  if (!source_profile.empty()) {
    AwsConfigOptions of_source = options;
    of_source.profile = source_profile;
    FERRY_ASSIGN_OR_RETURN(const AwsProfileSettings source_settings,
                           LoadAwsProfileSettings(of_source, env));
    // As the SDKs do: the source profile's keys when it has them; else its own role (a chain),
    // unless it names itself; else its credential_process.
    FERRY_ASSIGN_OR_RETURN(source, LoadAwsCredentials(of_source, env));
    const std::string command = source_settings.Get("credential_process");
    if (!source.anonymous()) {
      // Its keys sign the AssumeRole.
    } else if (!source_settings.Get("role_arn").empty() &&
               source_profile != SelectedAwsProfile(options, env)) {
      if (depth >= 4) {
        return InvalidArgumentError(
            fmt::format("{}: source_profile '{}' starts a chain of more than 4 roles (a loop?)",
                        profile.where, source_profile));
      }
      FERRY_ASSIGN_OR_RETURN(
          source_provider, RoleProfileProvider(source_settings, of_source, env, clock, depth + 1));
    } else if (!command.empty()) {
      source_provider = std::make_shared<AwsCredentialProvider>(
          fmt::format("credential_process ({})", source_settings.where),
          [command, where = source_settings.where] { return RunCredentialProcess(command, where); },
          clock);
    } else {
      return InvalidArgumentError(fmt::format(
          "{}: its source_profile '{}' has no aws_access_key_id, role_arn or credential_process",
          profile.where, source_profile));
    }
  } else if (credential_source == "Environment") {
    AwsConfigOptions none;
    FERRY_ASSIGN_OR_RETURN(source, LoadAwsCredentials(none, env));
    if (source.source != "environment") {
      return InvalidArgumentError(
          fmt::format("{}: credential_source = Environment, but AWS_ACCESS_KEY_ID and "
                      "AWS_SECRET_ACCESS_KEY are not set",
                      profile.where));
    }
  } else if (credential_source == "EcsContainer") {
    FERRY_ASSIGN_OR_RETURN(std::optional<ContainerCredentialsEndpoint> container,
                           ContainerEndpointFromEnv(env));
    if (!container) {
      return InvalidArgumentError(fmt::format(
          "{}: credential_source = EcsContainer, but AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and "
          "_FULL_URI are not set",
          profile.where));
    }
    source_provider = std::make_shared<AwsCredentialProvider>(
        fmt::format("container credentials ({})", container->url),
        [endpoint = *container] { return FetchContainerCredentials(endpoint); }, clock);
  } else if (credential_source == "Ec2InstanceMetadata") {
    // Asked for by name: the default address too.
    std::string endpoint = InstanceMetadataEndpoint(env);
    source_provider = std::make_shared<AwsCredentialProvider>(
        fmt::format("EC2 instance metadata ({})", endpoint),
        [endpoint] { return FetchInstanceMetadataCredentials(endpoint); }, clock);
  } else {
    return InvalidArgumentError(fmt::format(
        "{}: role_arn needs source_profile, credential_source (Environment, EcsContainer or "
        "Ec2InstanceMetadata) or web_identity_token_file{}",
        profile.where,
        credential_source.empty()
            ? ""
            : fmt::format(" (credential_source = {} is not one of them)", credential_source)));
  }
  AssumedRole role{profile.Get("role_arn"),  session_name, profile.Get("external_id"),
                   StsEndpoint(region, env), region,       duration};
  if (source_provider) {
    std::string name = fmt::format("role {} (STS AssumeRole with {}, {})", role.role_arn,
                                   source_provider->source(), profile.where);
    return std::make_shared<AwsCredentialProvider>(
        std::move(name),
        [role, source_provider]() -> Result<AwsCredentials> {
          FERRY_ASSIGN_OR_RETURN(const AwsCredentials from, source_provider->Current());
          return AssumeRole(role, from);
        },
        std::move(clock));
  }
  std::string name = fmt::format("role {} (STS AssumeRole, {})", role.role_arn, profile.where);
  return std::make_shared<AwsCredentialProvider>(
      std::move(name), [role, source] { return AssumeRole(role, source); }, std::move(clock));
}

}  // namespace

std::shared_ptr<AwsCredentialProvider> FixedAwsCredentials(AwsCredentials credentials) {
  std::string source = credentials.source;
  return std::make_shared<AwsCredentialProvider>(
      std::move(source), [c = std::move(credentials)]() -> Result<AwsCredentials> { return c; });
}

Result<std::shared_ptr<AwsCredentialProvider>> LoadAwsCredentialProvider(
    const AwsConfigOptions& options, const EnvLookup& env, internal_storage::WallClock clock,
    internal_storage::CredentialTrace* trace) {
  using internal_storage::TraceStep;
  const bool anonymous = options.anonymous || IsAwsFlagSet(env("AWS_NO_SIGN_REQUEST").value_or(""));
  TraceStep(trace, "anonymous",
            options.anonymous ? "asked for"
            : anonymous       ? "AWS_NO_SIGN_REQUEST is set"
                              : "AWS_NO_SIGN_REQUEST not set");
  if (anonymous) return FixedAwsCredentials(LoadAwsCredentials(options, env).value());
  const bool keys_in_env = !env("AWS_ACCESS_KEY_ID").value_or("").empty() ||
                           !env("AWS_SECRET_ACCESS_KEY").value_or("").empty();
  TraceStep(trace, "environment",
            keys_in_env ? "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
                        : "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY not set");
  const std::string token_file = env("AWS_WEB_IDENTITY_TOKEN_FILE").value_or("");
  const std::string role_arn = env("AWS_ROLE_ARN").value_or("");
  if (keys_in_env || (token_file.empty() && role_arn.empty())) {
    if (!keys_in_env) {
      TraceStep(trace, "web identity", "AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN not set");
    }
    AwsProfileSettings profile;
    if (!keys_in_env) {
      FERRY_ASSIGN_OR_RETURN(profile, LoadAwsProfileSettings(options, env));
      if (!profile.Get("role_arn").empty()) {
        TraceStep(trace, "shared files",
                  fmt::format("{}: role_arn {}", profile.where, profile.Get("role_arn")));
        return RoleProfileProvider(profile, options, env, clock);
      }
    }
    FERRY_ASSIGN_OR_RETURN(AwsCredentials fixed, LoadAwsCredentials(options, env));
    if (!fixed.anonymous()) {
      if (!keys_in_env) TraceStep(trace, "shared files", fmt::format("{}: keys", fixed.source));
      return FixedAwsCredentials(std::move(fixed));
    }
    // The profile's own program, where it has no keys (the SDKs' order).
    if (const std::string command = profile.Get("credential_process"); !command.empty()) {
      TraceStep(trace, "shared files", fmt::format("{}: credential_process", profile.where));
      return std::make_shared<AwsCredentialProvider>(
          fmt::format("credential_process ({})", profile.where),
          [command, where = profile.where] { return RunCredentialProcess(command, where); },
          std::move(clock));
    }
    TraceStep(trace, "shared files",
              fmt::format("no keys, role_arn or credential_process for profile '{}'",
                          SelectedAwsProfile(options, env)));
    // Nothing configured: the platform's endpoints.
    FERRY_ASSIGN_OR_RETURN(std::optional<ContainerCredentialsEndpoint> container,
                           ContainerEndpointFromEnv(env));
    if (container) {
      TraceStep(trace, "container credentials", container->url);
      return std::make_shared<AwsCredentialProvider>(
          fmt::format("container credentials ({})", container->url),
          [endpoint = *container] { return FetchContainerCredentials(endpoint); },
          std::move(clock));
    }
    TraceStep(trace, "container credentials",
              "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI not set");
    const bool disabled = IsAwsFlagSet(env("AWS_EC2_METADATA_DISABLED").value_or(""));
    if (env("AWS_EC2_METADATA_SERVICE_ENDPOINT") && !disabled) {
      std::string endpoint = InstanceMetadataEndpoint(env);
      TraceStep(trace, "EC2 instance metadata", endpoint);
      return std::make_shared<AwsCredentialProvider>(
          fmt::format("EC2 instance metadata ({})", endpoint),
          [endpoint] { return FetchInstanceMetadataCredentials(endpoint); }, std::move(clock));
    }
    TraceStep(trace, "EC2 instance metadata",
              disabled ? "AWS_EC2_METADATA_DISABLED is set"
                       : "not asked: AWS_EC2_METADATA_SERVICE_ENDPOINT not set (the default "
                         "address is not tried)");
    TraceStep(trace, "none", "requests go unsigned (public buckets only)");
    return FixedAwsCredentials(std::move(fixed));
  }
  if (token_file.empty() || role_arn.empty()) {
    return InvalidArgumentError(token_file.empty()
                                    ? "AWS_ROLE_ARN is set but AWS_WEB_IDENTITY_TOKEN_FILE is not"
                                    : "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not");
  }
  TraceStep(trace, "web identity", fmt::format("role {}, token file {}", role_arn, token_file));
  WebIdentityRole role;
  role.token_file = token_file;
  role.role_arn = role_arn;
  role.session_name = env("AWS_ROLE_SESSION_NAME").value_or("");
  if (role.session_name.empty()) role.session_name = DefaultSessionName();
  FERRY_ASSIGN_OR_RETURN(const std::string region, LoadAwsRegion(options, env));
  role.endpoint = StsEndpoint(region, env);
  FERRY_ASSIGN_OR_RETURN(role.duration_seconds, RoleDurationSeconds(env));
  return std::make_shared<AwsCredentialProvider>(
      fmt::format("web identity (STS AssumeRoleWithWebIdentity of {})", role.role_arn),
      [role] { return AssumeRoleWithWebIdentity(role); }, std::move(clock));
}

}  // namespace ferry::internal_s3
