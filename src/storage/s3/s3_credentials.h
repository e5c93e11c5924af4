// AWS credentials and region: where they come from, and how they are shown (they are not).
//
// The chain, in the order every AWS SDK uses (the subset ferry supports: static keys only; no
// instance metadata, SSO or assume-role yet):
//   1. anonymous, when asked for (AwsConfigOptions::anonymous) or AWS_NO_SIGN_REQUEST=true;
//   2. the environment: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
//   3. the shared credentials file ($AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials),
//      section [PROFILE];
//   4. the config file ($AWS_CONFIG_FILE, else ~/.aws/config), section [profile PROFILE]
//      ([default] for the default profile);
//   5. none: requests go unsigned, which works for public buckets; the store says so when a
//      request is then refused.
// PROFILE is AwsConfigOptions::profile, else $AWS_PROFILE, else "default". A profile named
// explicitly that neither file has is an error; a missing file is not.
//
// The region: $AWS_REGION, $AWS_DEFAULT_REGION, `region` in the config file's profile section,
// else us-east-1.
//
// Secrets never reach a message: AwsCredentials prints (ToString, fmt, operator<<, gtest) as the
// first and last characters of the key id and where it came from; errors about the files name
// the file and line, never the line's text.
//
// Every variable is read through an EnvLookup (storage/env_lookup.h), the process environment
// unless the caller passes another.
//
// Thread-safety: values and reentrant functions (ProcessEnv must not race with setenv).
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "ferry/result.h"
#include "storage/env_lookup.h"

namespace ferry::internal_s3 {

struct AwsCredentials {
  std::string access_key_id;  // empty: no credentials, requests go unsigned
  std::string secret_access_key;
  std::string session_token;  // empty unless temporary credentials
  /// Where they came from, for messages: "environment", "/home/me/.aws/credentials [dev]",
  /// "anonymous (AWS_NO_SIGN_REQUEST)", "none found".
  std::string source;

  /// When temporary credentials (a session token from STS) stop working; none for static keys.
  std::optional<std::chrono::system_clock::time_point> expiration;

  bool anonymous() const { return access_key_id.empty(); }
  friend bool operator==(const AwsCredentials&, const AwsCredentials&) = default;
  /// "AKIA…MPLE from environment (secret redacted)": safe for any message or log line.
  std::string ToString() const;
};

/// Prints ToString(): keeps secrets out of gtest failure messages and stream logging.
std::ostream& operator<<(std::ostream& os, const AwsCredentials& credentials);

struct AwsConfigOptions {
  std::string profile;     // empty: $AWS_PROFILE, else "default"
  bool anonymous = false;  // sign nothing (as AWS_NO_SIGN_REQUEST=true)
};

/// The first static credentials the chain above finds (they never expire; the whole chain, with
/// the sources of temporary credentials, is LoadAwsCredentialProvider in
/// storage/s3/aws_credential_chain.h). Errors: kInvalidArgument for half-set
/// environment variables, a profile named but found nowhere, or a profile with a key id and no
/// secret; kDataLoss for a malformed file; kPermissionDenied for an unreadable one.
Result<AwsCredentials> LoadAwsCredentials(const AwsConfigOptions& options = {},
                                          const EnvLookup& env = ProcessEnv);

/// The settings of the selected profile: its config file section, then what its credentials
/// file section adds. `where` names the section for messages ("" when neither file has it).
struct AwsProfileSettings {
  std::map<std::string, std::string, std::less<>> values;
  std::string where;
  std::string Get(std::string_view name) const {
    auto it = values.find(name);
    return it == values.end() ? std::string() : it->second;
  }
};
Result<AwsProfileSettings> LoadAwsProfileSettings(const AwsConfigOptions& options = {},
                                                  const EnvLookup& env = ProcessEnv);

/// True for the values AWS reads as a set flag (AWS_NO_SIGN_REQUEST=true): true, 1, yes.
bool IsAwsFlagSet(std::string_view value);

/// The region, per the order above.
Result<std::string> LoadAwsRegion(const AwsConfigOptions& options = {},
                                  const EnvLookup& env = ProcessEnv);

/// The profile `options` selects (options.profile, $AWS_PROFILE, "default").
std::string SelectedAwsProfile(const AwsConfigOptions& options, const EnvLookup& env = ProcessEnv);

}  // namespace ferry::internal_s3

template <>
struct fmt::formatter<ferry::internal_s3::AwsCredentials> : fmt::formatter<std::string_view> {
  auto format(const ferry::internal_s3::AwsCredentials& c, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(c.ToString(), ctx);
  }
};
