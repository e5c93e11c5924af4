// The AWS credential chain as a provider the S3 store asks on every request (storage/
// refreshing_credentials.h keeps temporary credentials current). The sources, in the AWS SDKs'
// order (the subset ferry supports so far):
//   1. anonymous, when asked for or AWS_NO_SIGN_REQUEST=true;
//   2. the environment: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
//   3. web identity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN (+ AWS_ROLE_SESSION_NAME), the
//      token exchanged at STS for the role's credentials (EKS IRSA; federation from another
//      cloud's identity token), renewed before they expire. Their life is STS's default hour, or
//      FERRY_AWS_ROLE_DURATION_SECONDS (15 minutes to 12 hours on AWS; any on a test server);
//   4. the shared credentials and config files (storage/s3/s3_credentials.h): static keys, a
//      role_arn (assumed with the credentials of its source_profile - keys, or another role -
//      of the environment, the container or instance metadata endpoint per its
//      credential_source, or with its web_identity_token_file), else the profile's
//      credential_process
//      (storage/s3/credential_process.h), run again before what it printed expires;
//   5. container credentials: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI (ECS, EKS Pod
//      Identity; storage/s3/aws_metadata_credentials.h), renewed before they expire;
//   6. EC2 instance metadata (IMDSv2), renewed likewise - for now only where
//      AWS_EC2_METADATA_SERVICE_ENDPOINT names the endpoint (and AWS_EC2_METADATA_DISABLED is
//      not set): the default address is not tried yet, so that a machine off EC2 keeps reading
//      public buckets unsigned without waiting on it;
//   7. none: requests go unsigned.
//
// Thread-safety: reentrant; the provider is safe for concurrent use.
#pragma once

#include <memory>

#include "ferry/result.h"
#include "storage/credential_trace.h"
#include "storage/env_lookup.h"
#include "storage/refreshing_credentials.h"
#include "storage/s3/s3_credentials.h"

namespace ferry::internal_s3 {

using AwsCredentialProvider = internal_storage::RefreshingCredentials<AwsCredentials>;

/// A provider of credentials that never change (static keys, anonymous).
std::shared_ptr<AwsCredentialProvider> FixedAwsCredentials(AwsCredentials credentials);

/// The chain above. Errors of configuration (half-set variables, a profile found nowhere, a
/// malformed file) come now; a source's failure to answer (STS refusing the token) comes from
/// the provider's Current(), naming the source. `trace`, when given, gets a step for each source
/// considered, up to the one chosen.
Result<std::shared_ptr<AwsCredentialProvider>> LoadAwsCredentialProvider(
    const AwsConfigOptions& options = {}, const EnvLookup& env = ProcessEnv,
    internal_storage::WallClock clock = {}, internal_storage::CredentialTrace* trace = nullptr);

}  // namespace ferry::internal_s3
