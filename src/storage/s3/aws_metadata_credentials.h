// AWS credentials from the platform's own endpoints, the last sources of the credential chain
// (storage/s3/aws_credential_chain.h):
//   - container credentials (ECS tasks, EKS Pod Identity): a GET of
//     $AWS_CONTAINER_CREDENTIALS_FULL_URI, or of http://169.254.170.2 +
//     $AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, with the Authorization value read from
//     $AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (at every call: the platform rotates it) or
//     $AWS_CONTAINER_AUTHORIZATION_TOKEN. As in the SDKs, a full URI over plain http must name a
//     loopback address or the ECS/EKS ones (169.254.170.2, 169.254.170.23): credentials never go
//     to another host in the clear.
//   - EC2 instance metadata, IMDSv2 only: PUT /latest/api/token for a session token, then GET
//     /latest/meta-data/iam/security-credentials/ (the role) and .../ROLE, both with the token.
//     $AWS_EC2_METADATA_SERVICE_ENDPOINT, else http://169.254.169.254; 1 s to connect and 3 s a
//     request, so that a machine that is not on EC2 learns it at once.
// Both answer JSON with AccessKeyId, SecretAccessKey, Token and Expiration (ISO 8601).
//
// Errors name the source and the URL, never a token or a key; a refusal says what to check.
//
// Thread-safety: reentrant.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ferry/result.h"
#include "storage/env_lookup.h"
#include "storage/http/transport.h"
#include "storage/s3/s3_credentials.h"

namespace ferry::internal_s3 {

/// The credentials in a container or instance metadata reply; `context` prefixes errors.
Result<AwsCredentials> ParseAwsCredentialJson(std::string_view body, std::string_view context);

struct ContainerCredentialsEndpoint {
  std::string url;
  std::string token;       // the Authorization value, when given inline
  std::string token_file;  // read at every call when set
};

/// The endpoint the variables above name; nullopt when neither URI variable is set;
/// kInvalidArgument for a plain-http full URI to a host that is not allowed.
Result<std::optional<ContainerCredentialsEndpoint>> ContainerEndpointFromEnv(
    const EnvLookup& env = ProcessEnv);

/// One call of the container endpoint. `transport` null: http::DefaultTransport().
Result<AwsCredentials> FetchContainerCredentials(const ContainerCredentialsEndpoint& endpoint,
                                                 http::Transport* transport = nullptr);

/// $AWS_EC2_METADATA_SERVICE_ENDPOINT without a trailing '/', else "http://169.254.169.254".
std::string InstanceMetadataEndpoint(const EnvLookup& env = ProcessEnv);

/// The three IMDSv2 calls above. `transport` null: http::DefaultTransport().
Result<AwsCredentials> FetchInstanceMetadataCredentials(std::string_view endpoint,
                                                        http::Transport* transport = nullptr);

}  // namespace ferry::internal_s3
