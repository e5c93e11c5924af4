// Where a dbfs:/Volumes URL goes and what authorizes its requests: the Unity Catalog volume and
// key it names, the workspace that serves it, and the token each request carries, resolved as
// the Databricks SDKs' unified authentication resolves them.
//
// URLs: dbfs:/Volumes/<catalog>/<schema>/<volume>/<path> (also dbfs:///Volumes/...): the store is
// one volume, the key the path inside it.
//
// Settings, each from the environment, else from a profile of the configuration file
// (DATABRICKS_CONFIG_FILE, else ~/.databrickscfg; the profile DATABRICKS_CONFIG_PROFILE, else
// DEFAULT, which may be missing unless it was named):
//   host           DATABRICKS_HOST            the workspace URL; https:// when no scheme is given.
//                                             Plain http only to this machine (tests).
//   token          DATABRICKS_TOKEN           a personal access token: never expires here
//   client_id      DATABRICKS_CLIENT_ID       OAuth machine-to-machine (a service principal):
//   client_secret  DATABRICKS_CLIENT_SECRET   POST {host}/oidc/v1/token, HTTP Basic with the id
//                                             and secret, grant_type=client_credentials,
//                                             scope=all-apis; the token is renewed before it
//                                             expires (storage/refreshing_credentials.h)
// A token is used before a client id and secret, as the SDKs do. Errors name the setting and the
// file, never a value.
//
// On a Databricks cluster the same volume is a FUSE folder, /Volumes/<catalog>/<schema>/
// <volume>: when it exists, dbfs:/ URLs read it as local files and need no credentials
// (FERRY_DATABRICKS_FUSE=false turns that off; FERRY_DATABRICKS_VOLUMES_ROOT moves the root,
// for tests).
//
// Thread-safety: values and reentrant functions; a provider is safe for concurrent use.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ferry/result.h"
#include "storage/access_token.h"
#include "storage/credential_trace.h"
#include "storage/env_lookup.h"
#include "storage/http/transport.h"

namespace ferry::internal_databricks {

/// A URL split into its volume ("/Volumes/c/s/v") and the key inside it ("a/b"; may be empty).
struct VolumePath {
  std::string volume;
  std::string key;
};

/// kInvalidArgument naming the URL for anything but dbfs:/Volumes/<c>/<s>/<v>[/<path>].
Result<VolumePath> ParseVolumeUrl(std::string_view url);

/// Why `path` ('/'-separated names, one trailing '/' allowed) cannot be a volume path: an empty
/// name, or "." or ".." (which could step out of the volume's folder); nullopt when it can.
std::optional<std::string_view> BadVolumePathName(std::string_view path);

/// "dbfs:/Volumes/c/s/v/key" (no trailing '/' for an empty key).
std::string VolumeUrl(std::string_view volume, std::string_view key);

struct DatabricksConfig {
  std::string host;  // "https://adb-1.2.azuredatabricks.net": scheme, host and port only
  /// Gives the token of every request: a personal access token (no expiry) or OAuth tokens.
  std::shared_ptr<internal_storage::AccessTokenProvider> token_provider;
  /// True for OAuth tokens, which expire: a 401 drops the token it refused.
  bool expiring = false;
  /// Where the settings came from ("DATABRICKS_HOST", "profile DEFAULT of ~/.databrickscfg").
  std::string host_source;
  /// Every credential value the provider was built from (secrets included): part of a store
  /// cache key, which keeps only its hash, so that a token rotated in the file gets a new store.
  std::string credential_identity;
};

/// The workspace and credentials (above). kInvalidArgument / kNotFound naming the setting or
/// file when the host or every credential is missing, or a file or URL is malformed. `trace`,
/// when given, gets a step for each source considered. `transport` (tests) carries the OAuth
/// token requests; null: http::DefaultTransport().
Result<DatabricksConfig> LoadDatabricksConfig(const EnvLookup& env = ProcessEnv,
                                              internal_storage::WallClock clock = {},
                                              internal_storage::CredentialTrace* trace = nullptr,
                                              std::shared_ptr<http::Transport> transport = nullptr);

/// One OAuth machine-to-machine token from `host`'s /oidc/v1/token.
Result<internal_storage::AccessToken> FetchDatabricksOAuthToken(
    const std::string& host, const std::string& client_id, const std::string& client_secret,
    std::chrono::system_clock::time_point now, http::Transport* transport = nullptr);

/// Who the workspace says `config`'s token belongs to (GET /api/2.0/preview/scim/v2/Me): "user
/// NAME" or "service principal NAME (APPLICATION ID)".
Result<std::string> DatabricksCurrentUser(const DatabricksConfig& config,
                                          http::Transport* transport = nullptr);

/// The FUSE folder of `volume` when it exists and is not turned off (above); else nullopt.
std::optional<std::filesystem::path> FuseVolumeFolder(std::string_view volume,
                                                      const EnvLookup& env = ProcessEnv);

/// The variables read here (a store-cache key changes with them).
std::span<const char* const> DatabricksEnvironmentVariables();

}  // namespace ferry::internal_databricks
