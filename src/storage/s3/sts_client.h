// Temporary AWS credentials from STS (the Security Token Service's query API): the calls behind
// the web identity and role-profile sources of the credential chain
// (storage/s3/aws_credential_chain.h). AssumeRole is signed with the source profile's keys.
//
// AssumeRoleWithWebIdentity is unsigned: the caller proves who it is with an OIDC token (EKS's
// service account token, another cloud's identity token) read from a file at every call, since
// the platform rotates it. The reply's AccessKeyId, SecretAccessKey, SessionToken and Expiration
// become AwsCredentials. The endpoint: $AWS_ENDPOINT_URL_STS, else $AWS_ENDPOINT_URL, else the
// regional https://sts.REGION.amazonaws.com.
//
// Errors name the call, the role and the endpoint, and STS's code and message; never the token
// or a key. kPermissionDenied for AccessDenied, kUnauthenticated for a refused or expired token,
// kUnavailable for a 5xx or a throttle (retried by the caller's refresh), kDataLoss for a reply
// that is not STS's.
//
// Thread-safety: reentrant.
#pragma once

#include <chrono>
#include <string>

#include "ferry/result.h"
#include "storage/env_lookup.h"
#include "storage/http/transport.h"
#include "storage/s3/s3_credentials.h"

namespace ferry::internal_s3 {

/// The STS endpoint for `region`, per the order above ("https://sts.eu-west-1.amazonaws.com").
std::string StsEndpoint(std::string_view region, const EnvLookup& env = ProcessEnv);

struct WebIdentityRole {
  std::string token_file;    // $AWS_WEB_IDENTITY_TOKEN_FILE
  std::string role_arn;      // $AWS_ROLE_ARN
  std::string session_name;  // $AWS_ROLE_SESSION_NAME, else "ferry-<seconds since 1970>"
  std::string endpoint;      // StsEndpoint
  int duration_seconds = 3600;
};

/// Reads the token file and exchanges it for the role's credentials, their `source` naming the
/// role. `transport` null: http::DefaultTransport().
Result<AwsCredentials> AssumeRoleWithWebIdentity(const WebIdentityRole& role,
                                                 http::Transport* transport = nullptr);

struct AssumedRole {
  std::string role_arn;
  std::string session_name;
  std::string external_id;  // empty: none
  std::string endpoint;     // StsEndpoint
  std::string region;       // of the signature
  int duration_seconds = 3600;
};

/// STS AssumeRole, signed (SigV4, service "sts") with `source`: the credentials of a profile's
/// role_arn. `transport` null: http::DefaultTransport().
Result<AwsCredentials> AssumeRole(const AssumedRole& role, const AwsCredentials& source,
                                  http::Transport* transport = nullptr);

/// STS GetCallerIdentity, signed with `credentials`: the ARN they act as (`ferry doctor --auth`).
Result<std::string> GetCallerIdentity(const std::string& endpoint, std::string_view region,
                                      const AwsCredentials& credentials,
                                      http::Transport* transport = nullptr);

/// The credentials in an STS reply `body` to `action` (AssumeRole, AssumeRoleWithWebIdentity);
/// `context` prefixes errors.
Result<AwsCredentials> ParseStsCredentials(std::string_view body, std::string_view action,
                                           std::string_view context);

}  // namespace ferry::internal_s3
