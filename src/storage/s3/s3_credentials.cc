#include "storage/s3/s3_credentials.h"

#include <fmt/format.h>

#include <filesystem>
#include <optional>
#include <ostream>

#include "base/file_util.h"
#include "storage/ini_file.h"

namespace ferry::internal_s3 {
namespace {

using internal_storage::IniFile;
using internal_storage::ParseIni;

constexpr std::string_view kDefaultRegion = "us-east-1";

// The file `variable` names, else `home_relative` under $HOME.
std::filesystem::path FilePath(const EnvLookup& env, std::string_view variable,
                               std::string_view home_relative) {
  if (auto path = env(variable)) return std::filesystem::path(*path);
  return std::filesystem::path(env("HOME").value_or("/")) / home_relative;
}

std::filesystem::path CredentialsFilePath(const EnvLookup& env) {
  return FilePath(env, "AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
}

std::filesystem::path ConfigFilePath(const EnvLookup& env) {
  return FilePath(env, "AWS_CONFIG_FILE", ".aws/config");
}

// The parsed file, nullopt when it does not exist.
Result<std::optional<IniFile>> ReadIniFile(const std::filesystem::path& path) {
  auto text = ReadFileToString(path);
  if (!text) {
    if (text.status().code() == StatusCode::kNotFound) return std::optional<IniFile>();
    return text.status();
  }
  FERRY_ASSIGN_OR_RETURN(IniFile file, ParseIni(*text, path.string()));
  return std::optional<IniFile>(std::move(file));
}

// The config file names profiles "[profile NAME]", except the default one, "[default]".
const IniFile::Section* ConfigSection(const IniFile& config, const std::string& profile) {
  if (const auto* s = config.FindSection("profile " + profile)) return s;
  if (profile == "default") return config.FindSection("default");
  return nullptr;
}

std::string Lookup(const IniFile::Section& section, std::string_view name) {
  auto it = section.find(name);
  return it == section.end() ? std::string() : it->second;
}

// Credentials from one file section; an empty result when the section has no key id.
Result<AwsCredentials> FromSection(const IniFile::Section& section, std::string source) {
  AwsCredentials c;
  c.access_key_id = Lookup(section, "aws_access_key_id");
  if (c.access_key_id.empty()) return AwsCredentials();
  c.secret_access_key = Lookup(section, "aws_secret_access_key");
  if (c.secret_access_key.empty()) {
    return InvalidArgumentError(
        fmt::format("{} sets aws_access_key_id but not aws_secret_access_key", source));
  }
  c.session_token = Lookup(section, "aws_session_token");
  c.source = std::move(source);
  return c;
}

}  // namespace

bool IsAwsFlagSet(std::string_view v) {
  return v == "true" || v == "TRUE" || v == "True" || v == "1" || v == "yes";
}

std::string AwsCredentials::ToString() const {
  if (anonymous()) return source.empty() ? "no credentials" : "no credentials (" + source + ")";
  // The key id is not a secret (it travels in every Authorization header), but a short form is
  // enough to tell two apart.
  const std::string id =
      access_key_id.size() > 8
          ? access_key_id.substr(0, 4) + "…" + access_key_id.substr(access_key_id.size() - 4)
          : std::string("…");
  return fmt::format("{} from {} (secret{} redacted)", id, source.empty() ? "?" : source,
                     session_token.empty() ? "" : " and session token");
}

std::ostream& operator<<(std::ostream& os, const AwsCredentials& credentials) {
  return os << credentials.ToString();
}

std::string SelectedAwsProfile(const AwsConfigOptions& options, const EnvLookup& env) {
  if (!options.profile.empty()) return options.profile;
  return env("AWS_PROFILE").value_or("default");
}

Result<AwsCredentials> LoadAwsCredentials(const AwsConfigOptions& options, const EnvLookup& env) {
  if (options.anonymous) return AwsCredentials{{}, {}, {}, "anonymous (requested)"};
  if (IsAwsFlagSet(env("AWS_NO_SIGN_REQUEST").value_or(""))) {
    return AwsCredentials{{}, {}, {}, "anonymous (AWS_NO_SIGN_REQUEST)"};
  }

  AwsCredentials from_env;
  from_env.access_key_id = env("AWS_ACCESS_KEY_ID").value_or("");
  from_env.secret_access_key = env("AWS_SECRET_ACCESS_KEY").value_or("");
  if (!from_env.access_key_id.empty() || !from_env.secret_access_key.empty()) {
    if (from_env.access_key_id.empty() || from_env.secret_access_key.empty()) {
      return InvalidArgumentError(
          from_env.access_key_id.empty()
              ? "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not"
              : "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
    }
    from_env.session_token = env("AWS_SESSION_TOKEN").value_or("");
    from_env.source = "environment";
    return from_env;
  }

  const std::string profile = SelectedAwsProfile(options, env);
  const bool named = profile != "default";
  bool profile_seen = false;

  const std::filesystem::path credentials_path = CredentialsFilePath(env);
  FERRY_ASSIGN_OR_RETURN(auto credentials_file, ReadIniFile(credentials_path));
  if (credentials_file) {
    if (const auto* section = credentials_file->FindSection(profile)) {
      profile_seen = true;
      FERRY_ASSIGN_OR_RETURN(
          AwsCredentials c,
          FromSection(*section, fmt::format("{} [{}]", credentials_path.string(), profile)));
      if (!c.anonymous()) return c;
    }
  }

  const std::filesystem::path config_path = ConfigFilePath(env);
  FERRY_ASSIGN_OR_RETURN(auto config_file, ReadIniFile(config_path));
  if (config_file) {
    if (const auto* section = ConfigSection(*config_file, profile)) {
      profile_seen = true;
      FERRY_ASSIGN_OR_RETURN(
          AwsCredentials c,
          FromSection(*section, fmt::format("{} [profile {}]", config_path.string(), profile)));
      if (!c.anonymous()) return c;
    }
  }

  if (named && !profile_seen) {
    return InvalidArgumentError(fmt::format("AWS profile '{}' is in neither {} nor {}", profile,
                                            credentials_path.string(), config_path.string()));
  }
  return AwsCredentials{{}, {}, {}, "none found"};
}

Result<std::string> LoadAwsRegion(const AwsConfigOptions& options, const EnvLookup& env) {
  for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    if (auto region = env(name)) return *std::move(region);
  }
  FERRY_ASSIGN_OR_RETURN(auto config_file, ReadIniFile(ConfigFilePath(env)));
  if (config_file) {
    if (const auto* section = ConfigSection(*config_file, SelectedAwsProfile(options, env))) {
      std::string region = Lookup(*section, "region");
      if (!region.empty()) return region;
    }
  }
  return std::string(kDefaultRegion);
}

Result<AwsProfileSettings> LoadAwsProfileSettings(const AwsConfigOptions& options,
                                                  const EnvLookup& env) {
  AwsProfileSettings settings;
  const std::string profile = SelectedAwsProfile(options, env);
  const std::filesystem::path config_path = ConfigFilePath(env);
  FERRY_ASSIGN_OR_RETURN(auto config_file, ReadIniFile(config_path));
  if (config_file) {
    if (const auto* section = ConfigSection(*config_file, profile)) {
      for (const auto& [name, value] : *section) settings.values[name] = value;
      settings.where = fmt::format("{} [profile {}]", config_path.string(), profile);
    }
  }
  const std::filesystem::path credentials_path = CredentialsFilePath(env);
  FERRY_ASSIGN_OR_RETURN(auto credentials_file, ReadIniFile(credentials_path));
  if (credentials_file) {
    if (const auto* section = credentials_file->FindSection(profile)) {
      for (const auto& [name, value] : *section) settings.values.emplace(name, value);
      if (settings.where.empty()) {
        settings.where = fmt::format("{} [{}]", credentials_path.string(), profile);
      }
    }
  }
  return settings;
}

}  // namespace ferry::internal_s3
