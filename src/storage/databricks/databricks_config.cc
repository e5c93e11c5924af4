#include "storage/databricks/databricks_config.h"

#include <fmt/format.h>

#include <array>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/ascii.h"
#include "base/file_util.h"
#include "storage/base64.h"
#include "storage/http/endpoint_error.h"
#include "storage/http/url_encoding.h"
#include "storage/http/url_host.h"
#include "storage/ini_file.h"

namespace ferry::internal_databricks {
namespace {

using internal_storage::AccessToken;
using internal_storage::AccessTokenProvider;
using internal_storage::TraceStep;

constexpr std::array<const char*, 9> kVariables = {
    "DATABRICKS_HOST",
    "DATABRICKS_TOKEN",
    "DATABRICKS_CLIENT_ID",
    "DATABRICKS_CLIENT_SECRET",
    "DATABRICKS_CONFIG_FILE",
    "DATABRICKS_CONFIG_PROFILE",
    "FERRY_DATABRICKS_FUSE",
    "FERRY_DATABRICKS_VOLUMES_ROOT",
    "HOME",
};

constexpr std::string_view kVolumes = "/Volumes/";

bool IsFalse(std::string_view text) {
  const std::string lower = AsciiLower(text);
  return lower == "0" || lower == "false" || lower == "no" || lower == "off";
}

// One setting, from the environment or else the profile, with where it came from.
struct Setting {
  std::string value;
  std::string source;
};

// The profile of the configuration file that applies, when there is one.
struct Profile {
  std::string description;  // "profile DEFAULT of /home/u/.databrickscfg"
  internal_storage::IniFile::Section settings;
};

Result<std::optional<Profile>> LoadProfile(const EnvLookup& env,
                                           internal_storage::CredentialTrace* trace) {
  const auto named = env("DATABRICKS_CONFIG_PROFILE");
  std::string path;
  if (const auto file = env("DATABRICKS_CONFIG_FILE")) {
    path = *file;
  } else if (const auto home = env("HOME")) {
    path = *home + "/.databrickscfg";
  }
  const std::string profile = named.value_or("DEFAULT");
  if (path.empty()) {
    TraceStep(trace, "configuration file", "no HOME and no DATABRICKS_CONFIG_FILE");
    if (named) {
      return InvalidArgumentError(fmt::format(
          "DATABRICKS_CONFIG_PROFILE names profile {} but there is no configuration file "
          "(set DATABRICKS_CONFIG_FILE or HOME)",
          profile));
    }
    return std::optional<Profile>();
  }
  auto text = ReadFileToString(path);
  if (!text) {
    if (text.status().code() == StatusCode::kNotFound && !named) {
      TraceStep(trace, "configuration file", path + " not there");
      return std::optional<Profile>();
    }
    return text.status().WithContext("Databricks configuration file");
  }
  FERRY_ASSIGN_OR_RETURN(internal_storage::IniFile ini, internal_storage::ParseIni(*text, path));
  const auto* section = ini.FindSection(profile);
  if (section == nullptr) {
    if (named) {
      return NotFoundError(
          fmt::format("{}: no profile [{}] (named by DATABRICKS_CONFIG_PROFILE)", path, profile));
    }
    TraceStep(trace, "configuration file", fmt::format("{} has no profile [{}]", path, profile));
    return std::optional<Profile>();
  }
  std::vector<std::string> names;
  for (const auto& [name, value] : *section) names.push_back(name);
  TraceStep(trace, "configuration file",
            fmt::format("profile [{}] of {}: {}", profile, path, fmt::join(names, ", ")));
  return std::optional<Profile>(Profile{fmt::format("profile {} of {}", profile, path), *section});
}

std::optional<Setting> Lookup(const EnvLookup& env, const char* variable,
                              const std::optional<Profile>& profile, const char* name) {
  if (auto value = env(variable)) return Setting{*value, variable};
  if (profile) {
    if (auto it = profile->settings.find(name);
        it != profile->settings.end() && !it->second.empty()) {
      return Setting{it->second, fmt::format("{} in {}", name, profile->description)};
    }
  }
  return std::nullopt;
}

// "adb-1.azuredatabricks.net/" -> "https://adb-1.azuredatabricks.net".
Result<std::string> NormalizeHost(const Setting& host) {
  std::string url = host.value;
  if (url.find("://") == std::string::npos) url = "https://" + url;
  while (url.ends_with('/')) url.pop_back();
  const size_t authority = url.find("://") + 3;
  if (url.find_first_of("/?#", authority) != std::string::npos || url.size() == authority) {
    return InvalidArgumentError(
        fmt::format("{} ({}): the workspace URL must be scheme://host[:port], without a path",
                    host.source, url));
  }
  const std::string scheme = AsciiLower(url.substr(0, authority - 3));
  if (scheme != "https" && scheme != "http") {
    return InvalidArgumentError(
        fmt::format("{} ({}): the workspace URL must be https://", host.source, url));
  }
  if (!http::IsPrivateEndpoint(url)) {
    return InvalidArgumentError(fmt::format(
        "{} ({}): tokens go to a workspace over https only (plain http only to this machine)",
        host.source, url));
  }
  return url;
}

}  // namespace

std::optional<std::string_view> BadVolumePathName(std::string_view path) {
  if (path.ends_with('/')) path.remove_suffix(1);
  for (size_t start = 0; start <= path.size();) {
    const size_t slash = std::min(path.find('/', start), path.size());
    const std::string_view name = path.substr(start, slash - start);
    if (name.empty()) return "an empty name between slashes";
    if (name == "." || name == "..") return "'.' and '..' are not allowed in the path";
    start = slash + 1;
  }
  return std::nullopt;
}

Result<VolumePath> ParseVolumeUrl(std::string_view url) {
  std::string_view rest = url;
  if (rest.size() < 5 || AsciiLower(rest.substr(0, 5)) != "dbfs:") {
    return InvalidArgumentError(fmt::format("{}: not a dbfs: URL", url));
  }
  rest.remove_prefix(5);
  if (rest.starts_with("///")) rest.remove_prefix(2);
  auto malformed = [&](std::string_view why) {
    return InvalidArgumentError(fmt::format(
        "{}: {} (expected dbfs:/Volumes/<catalog>/<schema>/<volume>/<path>)", url, why));
  };
  if (!rest.starts_with(kVolumes)) {
    return malformed("only Unity Catalog volumes are supported, not the legacy DBFS root");
  }
  std::string_view path = rest.substr(kVolumes.size());
  if (!path.empty()) {
    if (auto why = BadVolumePathName(path)) return malformed(*why);
  }
  const bool folder = path.ends_with('/');
  if (folder) path.remove_suffix(1);
  std::vector<std::string_view> parts;
  for (size_t start = 0; start < path.size();) {
    const size_t slash = std::min(path.find('/', start), path.size());
    parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  if (parts.size() < 3) return malformed("no catalog, schema and volume");
  VolumePath out;
  out.volume = fmt::format("/Volumes/{}/{}/{}", parts[0], parts[1], parts[2]);
  std::vector<std::string_view> key(parts.begin() + 3, parts.end());
  out.key = fmt::format("{}", fmt::join(key, "/"));
  if (folder && !out.key.empty()) out.key += '/';
  return out;
}

std::string VolumeUrl(std::string_view volume, std::string_view key) {
  return key.empty() ? fmt::format("dbfs:{}", volume) : fmt::format("dbfs:{}/{}", volume, key);
}

Result<AccessToken> FetchDatabricksOAuthToken(const std::string& host, const std::string& client_id,
                                              const std::string& client_secret,
                                              std::chrono::system_clock::time_point now,
                                              http::Transport* transport) {
  const std::string url = host + "/oidc/v1/token";
  const std::string context =
      fmt::format("Databricks OAuth (service principal {} at {})", client_id, url);
  http::Headers headers;
  headers.Set("Authorization", "Basic " + Base64Encode(client_id + ":" + client_secret));
  const std::string body =
      http::FormEncode({{"grant_type", "client_credentials"}, {"scope", "all-apis"}});
  FERRY_ASSIGN_OR_RETURN(
      std::string reply,
      internal_storage::PostTokenForm(
          url, body, context,
          "(check DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET: the service principal's "
          "OAuth secret, and that the principal belongs to this workspace)",
          transport, headers));
  return internal_storage::ParseAccessTokenReply(reply, now, context);
}

Result<DatabricksConfig> LoadDatabricksConfig(const EnvLookup& env,
                                              internal_storage::WallClock clock,
                                              internal_storage::CredentialTrace* trace,
                                              std::shared_ptr<http::Transport> transport) {
  if (!clock) clock = [] { return std::chrono::system_clock::now(); };
  const bool env_credentials = env("DATABRICKS_TOKEN") || env("DATABRICKS_CLIENT_ID");
  std::optional<Profile> profile;
  // The file fills in what the environment leaves out, unless the environment has credentials
  // of its own and names no profile: then a token from the file could be another workspace's.
  if (!env_credentials || env("DATABRICKS_CONFIG_PROFILE")) {
    FERRY_ASSIGN_OR_RETURN(profile, LoadProfile(env, trace));
  } else {
    TraceStep(trace, "configuration file", "not read: the environment has the credentials");
  }

  const auto host = Lookup(env, "DATABRICKS_HOST", profile, "host");
  if (!host) {
    TraceStep(trace, "workspace", "DATABRICKS_HOST not set");
    return InvalidArgumentError(
        "dbfs:/Volumes URLs need the workspace: set DATABRICKS_HOST (https://<workspace>) and "
        "DATABRICKS_TOKEN, or DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET, or a profile in "
        "~/.databrickscfg");
  }
  DatabricksConfig config;
  FERRY_ASSIGN_OR_RETURN(config.host, NormalizeHost(*host));
  config.host_source = host->source;
  TraceStep(trace, "workspace", fmt::format("{} from {}", config.host, host->source));

  if (const auto token = Lookup(env, "DATABRICKS_TOKEN", profile, "token")) {
    TraceStep(trace, "personal access token", token->source);
    const AccessToken pat{token->value, std::nullopt};
    config.credential_identity = "pat\n" + token->value;
    config.token_provider = std::make_shared<AccessTokenProvider>(
        fmt::format("personal access token ({})", token->source),
        [pat]() -> Result<AccessToken> { return pat; }, clock);
    return config;
  }
  TraceStep(trace, "personal access token", "DATABRICKS_TOKEN not set");

  const auto id = Lookup(env, "DATABRICKS_CLIENT_ID", profile, "client_id");
  const auto secret = Lookup(env, "DATABRICKS_CLIENT_SECRET", profile, "client_secret");
  if (!id || !secret) {
    TraceStep(trace, "OAuth machine-to-machine",
              id ? "DATABRICKS_CLIENT_SECRET not set" : "DATABRICKS_CLIENT_ID not set");
    return InvalidArgumentError(fmt::format(
        "{}: no Databricks credentials: set DATABRICKS_TOKEN (a personal access token), or "
        "DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET (a service principal){}",
        config.host, id ? " (DATABRICKS_CLIENT_SECRET is missing)" : ""));
  }
  TraceStep(trace, "OAuth machine-to-machine",
            fmt::format("service principal {} ({}, {})", id->value, id->source, secret->source));
  config.expiring = true;
  config.credential_identity = fmt::format("m2m\n{}\n{}", id->value, secret->value);
  config.token_provider = std::make_shared<AccessTokenProvider>(
      fmt::format("OAuth machine-to-machine (service principal {})", id->value),
      [host = config.host, id = id->value, secret = secret->value, clock, transport] {
        return FetchDatabricksOAuthToken(host, id, secret, clock(), transport.get());
      },
      clock);
  return config;
}

Result<std::string> DatabricksCurrentUser(const DatabricksConfig& config,
                                          http::Transport* transport) {
  FERRY_ASSIGN_OR_RETURN(AccessToken token, config.token_provider->Current());
  http::Request request;
  request.url = config.host + "/api/2.0/preview/scim/v2/Me";
  request.headers.Set("Authorization", "Bearer " + token.access_token);
  request.timeouts.connect_ms = 5'000;
  request.timeouts.total_ms = 30'000;
  const auto owned = http::DefaultIfNull(transport);
  const std::string context = fmt::format("{} (who the token belongs to)", request.url);
  auto reply = transport->Execute(std::move(request));
  if (!reply) return reply.status().WithContext(context);
  if (reply->status >= 300) return http::EndpointReplyError(*reply, context);
  const auto json = nlohmann::json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return DataLossError(fmt::format("{}: the reply is not a JSON object", context));
  }
  auto text = [&](const char* key) {
    const auto it = json.find(key);
    return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (!text("applicationId").empty()) {
    return fmt::format("service principal {} ({})", text("displayName"), text("applicationId"));
  }
  return fmt::format("user {}", text("userName").empty() ? "?" : text("userName"));
}

std::optional<std::filesystem::path> FuseVolumeFolder(std::string_view volume,
                                                      const EnvLookup& env) {
  if (const auto flag = env("FERRY_DATABRICKS_FUSE"); flag && IsFalse(*flag)) return std::nullopt;
  const std::filesystem::path root = env("FERRY_DATABRICKS_VOLUMES_ROOT").value_or("/Volumes");
  if (!volume.starts_with(kVolumes)) return std::nullopt;
  std::filesystem::path folder = root / std::string(volume.substr(kVolumes.size()));
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec)) return std::nullopt;
  return folder;
}

std::span<const char* const> DatabricksEnvironmentVariables() { return kVariables; }

}  // namespace ferry::internal_databricks
