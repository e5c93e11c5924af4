// A profile's credential_process: a program (aws-vault, an SSO or Okta helper, a company's own
// broker) that prints credentials for the job, as the AWS SDKs run it. The command runs through
// /bin/sh -c with no standard input and 60 s to answer, and prints JSON:
//   {"Version": 1, "AccessKeyId": "...", "SecretAccessKey": "...",
//    "SessionToken": "..." (optional), "Expiration": "ISO 8601" (optional: never expires)}
// Temporary credentials are renewed by running it again (storage/refreshing_credentials.h).
//
// Errors name the profile and the program (not its arguments, which may hold a secret), and give
// a failing command's exit status and the first line of its standard error; never what it
// printed on standard output.
//
// Thread-safety: reentrant.
#pragma once

#include <string_view>

#include "ferry/result.h"
#include "storage/s3/s3_credentials.h"

namespace ferry::internal_s3 {

/// Runs `command` and reads its credentials; `where` ("profile dev in ~/.aws/config") prefixes
/// errors and names the source.
Result<AwsCredentials> RunCredentialProcess(std::string_view command, std::string_view where);

/// The credentials in a credential_process's output; `context` prefixes errors.
Result<AwsCredentials> ParseCredentialProcessOutput(std::string_view output,
                                                    std::string_view context);

}  // namespace ferry::internal_s3
