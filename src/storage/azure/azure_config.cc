#include "storage/azure/azure_config.h"

#include <fmt/format.h>

#include <vector>

#include "base/ascii.h"
#include "storage/http/url_encoding.h"

namespace ferry::internal_azure {
namespace {

constexpr std::string_view kDefaultSuffix = "core.windows.net";

// The emulator's fixed account and key, published in its documentation: not a secret.
constexpr std::string_view kDevAccount = "devstoreaccount1";
constexpr std::string_view kDevKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
constexpr std::string_view kDevEndpoint = "http://127.0.0.1:10000/devstoreaccount1";

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

void ReplaceAll(std::string& text, std::string_view secret) {
  // Short strings would redact innocent text; real keys and signatures are long.
  if (secret.size() < 8) return;
  for (size_t pos = text.find(secret); pos != std::string::npos; pos = text.find(secret, pos + 8)) {
    text.replace(pos, secret.size(), "REDACTED");
  }
}

// Masks the value of every "sig=" query parameter in `text` (a SAS signature we were not given,
// inside a URL quoted in a message), up to the end of the value only, so the rest of the message
// survives (http::RedactUrl would take everything after the '?' for the query).
void MaskSignatureParameters(std::string& text) {
  for (size_t pos = text.find("sig="); pos != std::string::npos; pos = text.find("sig=", pos + 4)) {
    if (pos == 0 || (text[pos - 1] != '?' && text[pos - 1] != '&')) continue;
    const size_t start = pos + 4;
    const size_t end = text.find_first_of("&:,;)]} \t\r\n\"'<>", start);
    text.replace(start, (end == std::string::npos ? text.size() : end) - start, "REDACTED");
  }
}

// What the environment says about the account and its credentials.
struct EnvSettings {
  std::string account;
  std::string account_key;  // base64 text
  std::string key_source;   // names the variable the key came from, for error messages
  std::string sas_token;
  std::string endpoint;  // explicit endpoint, or empty: derived from account and suffix
  std::string protocol = "https";
  std::string suffix = std::string(kDefaultSuffix);
};

// "http(s)://host[:port][/path]" without a trailing '/'.
Result<std::string> NormalizeEndpoint(std::string_view endpoint, std::string_view source) {
  if (!endpoint.starts_with("http://") && !endpoint.starts_with("https://")) {
    return InvalidArgumentError(
        fmt::format("{}: the Blob endpoint must start with http:// or https://", source));
  }
  if (endpoint.find_first_of("?#") != std::string_view::npos) {
    return InvalidArgumentError(
        fmt::format("{}: the Blob endpoint must not have a query or fragment", source));
  }
  while (endpoint.ends_with('/')) endpoint.remove_suffix(1);
  return std::string(endpoint);
}

// The account an endpoint serves: the first path segment of a path-style endpoint
// (http://127.0.0.1:10000/devstoreaccount1), else the first label of the host.
std::string AccountFromEndpoint(std::string_view endpoint) {
  std::string_view rest = endpoint.substr(endpoint.find("://") + 3);
  const size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    std::string_view path = rest.substr(slash + 1);
    return std::string(path.substr(0, path.find('/')));
  }
  return std::string(rest.substr(0, rest.find('.')));
}

Result<EnvSettings> SettingsFromEnv(const EnvLookup& env) {
  EnvSettings s;
  if (auto text = env("AZURE_STORAGE_CONNECTION_STRING")) {
    constexpr std::string_view kSource = "AZURE_STORAGE_CONNECTION_STRING";
    FERRY_ASSIGN_OR_RETURN(ConnectionStringSettings cs, ParseConnectionString(*text));
    s.account = cs.account_name;
    s.account_key = cs.account_key;
    s.key_source = "AccountKey in AZURE_STORAGE_CONNECTION_STRING";
    s.sas_token = cs.sas_token;
    if (!cs.protocol.empty()) s.protocol = AsciiLower(cs.protocol);
    if (!cs.endpoint_suffix.empty()) s.suffix = cs.endpoint_suffix;
    if (!cs.blob_endpoint.empty()) {
      FERRY_ASSIGN_OR_RETURN(s.endpoint, NormalizeEndpoint(cs.blob_endpoint, kSource));
      if (s.account.empty()) s.account = AccountFromEndpoint(s.endpoint);
    }
    if (s.account.empty() && s.endpoint.empty()) {
      // The shortcut the emulator documents; explicit settings above take precedence.
      if (AsciiLower(*text).find("usedevelopmentstorage=true") != std::string::npos) {
        s.account = kDevAccount;
        s.account_key = kDevKey;
        s.key_source = "the emulator's well-known key";
        s.endpoint = kDevEndpoint;
      } else {
        return InvalidArgumentError(fmt::format(
            "{}: has neither AccountName nor BlobEndpoint (nor UseDevelopmentStorage=true)",
            kSource));
      }
    }
  } else {
    s.account = env("AZURE_STORAGE_ACCOUNT").value_or(env("AZURE_ACCOUNT_NAME").value_or(""));
    s.account_key = env("AZURE_STORAGE_KEY").value_or("");
    s.key_source = "AZURE_STORAGE_KEY";
    if (s.account_key.empty()) {
      s.account_key = env("AZURE_ACCOUNT_ACCESS_KEY").value_or("");
      s.key_source = "AZURE_ACCOUNT_ACCESS_KEY";
    }
    s.sas_token = env("AZURE_STORAGE_SAS_TOKEN").value_or("");
  }
  if (auto endpoint = env("AZURE_STORAGE_BLOB_ENDPOINT")) {
    FERRY_ASSIGN_OR_RETURN(s.endpoint, NormalizeEndpoint(*endpoint, "AZURE_STORAGE_BLOB_ENDPOINT"));
    if (s.account.empty()) s.account = AccountFromEndpoint(s.endpoint);
  }
  if (s.protocol != "https" && s.protocol != "http") {
    return InvalidArgumentError(
        "AZURE_STORAGE_CONNECTION_STRING: DefaultEndpointsProtocol must be http or https");
  }
  if (s.sas_token.starts_with('?')) s.sas_token.erase(0, 1);
  return s;
}

Status ValidateContainer(std::string_view container, std::string_view url) {
  if (container == "$root" || container == "$logs" || container == "$web") return Status::Ok();
  bool ok = container.size() >= 3 && container.size() <= 63 && container.front() != '-' &&
            container.back() != '-' && container.find("--") == std::string_view::npos;
  for (char c : container) ok = ok && (IsLowerAlnum(c) || c == '-');
  if (ok) return Status::Ok();
  return InvalidArgumentError(fmt::format(
      "{}: invalid container name '{}' (3-63 lowercase letters, digits and single hyphens)", url,
      container));
}

}  // namespace

std::string AzureConfig::ContainerUrl() const {
  return fmt::format("{}/{}", endpoint, http::PercentEncode(container, false));
}

std::string AzureConfig::BlobUrl(std::string_view key) const {
  return fmt::format("{}/{}", ContainerUrl(), http::PercentEncode(key, true));
}

std::string AzureConfig::ToUrl(std::string_view key) const { return url_prefix + std::string(key); }

std::string AzureConfig::DebugString() const {
  const std::string auth = credentials.has_shared_key() ? "SharedKey(key REDACTED)"
                           : credentials.has_sas()      ? "SAS(token REDACTED)"
                           : token_provider ? fmt::format("Bearer({})", token_provider->source())
                                            : "anonymous";
  return fmt::format("account={} container={} endpoint={} auth={}", account, container, endpoint,
                     auth);
}

std::string AzureConfig::Redact(std::string_view text) const {
  std::string out(text);
  if (credentials.has_shared_key()) ReplaceAll(out, Base64Encode(credentials.account_key));
  if (credentials.has_sas()) {
    ReplaceAll(out, credentials.sas_token);
    // The signature alone, as written in the token and decoded.
    std::string_view token = credentials.sas_token;
    while (!token.empty()) {
      const size_t amp = token.find('&');
      const std::string_view pair = token.substr(0, amp);
      if (pair.starts_with("sig=")) {
        const std::string_view sig = pair.substr(4);
        ReplaceAll(out, sig);
        ReplaceAll(out, http::PercentDecode(sig));
      }
      if (amp == std::string_view::npos) break;
      token.remove_prefix(amp + 1);
    }
  }
  MaskSignatureParameters(out);
  return out;
}

Result<ConnectionStringSettings> ParseConnectionString(std::string_view text) {
  ConnectionStringSettings s;
  int index = 0;
  while (!text.empty()) {
    const size_t semi = text.find(';');
    ++index;
    // Tolerate blanks around entries and a trailing ';'.
    const std::string_view entry = TrimAsciiWhitespace(text.substr(0, semi));
    if (!entry.empty()) {
      const size_t eq = entry.find('=');
      if (eq == std::string_view::npos || eq == 0) {
        // Never quote the entry: it may be (part of) the account key.
        return InvalidArgumentError(fmt::format(
            "AZURE_STORAGE_CONNECTION_STRING: entry {} is not Key=Value (entries are separated by "
            "';')",
            index));
      }
      const std::string name = AsciiLower(entry.substr(0, eq));
      std::string value(entry.substr(eq + 1));  // values (keys, SAS tokens) may contain '='
      if (name == "accountname") {
        s.account_name = std::move(value);
      } else if (name == "accountkey") {
        s.account_key = std::move(value);
      } else if (name == "sharedaccesssignature") {
        s.sas_token = std::move(value);
      } else if (name == "blobendpoint") {
        s.blob_endpoint = std::move(value);
      } else if (name == "defaultendpointsprotocol") {
        s.protocol = std::move(value);
      } else if (name == "endpointsuffix") {
        s.endpoint_suffix = std::move(value);
      }
      // Other keys (QueueEndpoint, TableEndpoint, UseDevelopmentStorage, ...) are not ours.
    }
    if (semi == std::string_view::npos) break;
    text.remove_prefix(semi + 1);
  }
  return s;
}

Result<AzureLocation> ParseAzureUrl(std::string_view url, const EnvLookup& env) {
  const std::string shown = http::RedactUrl(url);
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos) {
    return InvalidArgumentError(fmt::format("{}: not an az:// or abfs[s]:// URL", shown));
  }
  const std::string scheme = AsciiLower(url.substr(0, sep));
  if (scheme != "az" && scheme != "abfs" && scheme != "abfss") {
    return InvalidArgumentError(fmt::format("{}: not an az:// or abfs[s]:// URL", shown));
  }
  std::string_view rest = url.substr(sep + 3);
  const size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  AzureLocation location;
  if (slash != std::string_view::npos) location.key = std::string(rest.substr(slash + 1));

  std::string_view container = authority;
  std::string_view host;
  if (const size_t at = authority.find('@'); at != std::string_view::npos) {
    container = authority.substr(0, at);
    host = authority.substr(at + 1);
  }
  if (container.empty()) {
    return InvalidArgumentError(
        fmt::format("{}: no container (expected {}://<container>/<path> or "
                    "{}://<container>@<account>.dfs.core.windows.net/<path>)",
                    shown, scheme, scheme));
  }
  FERRY_RETURN_IF_ERROR(ValidateContainer(container, shown));

  auto settings_or = SettingsFromEnv(env);
  if (!settings_or) return settings_or.status().WithContext(shown);
  EnvSettings& env_settings = *settings_or;

  AzureConfig& config = location.config;
  config.container = std::string(container);
  bool use_env = true;  // whether the environment's credentials and endpoint apply
  std::string suffix = env_settings.suffix;
  if (!host.empty()) {
    // <account>[.(blob|dfs).<suffix>]
    const size_t dot = host.find('.');
    const std::string_view account = host.substr(0, dot);
    if (dot != std::string_view::npos) {
      std::string_view service_and_suffix = host.substr(dot + 1);
      if (service_and_suffix.starts_with("dfs.")) {
        suffix = std::string(service_and_suffix.substr(4));
      } else if (service_and_suffix.starts_with("blob.")) {
        suffix = std::string(service_and_suffix.substr(5));
      } else {
        return InvalidArgumentError(fmt::format(
            "{}: the account host must be <account>.dfs.<suffix> or <account>.blob.<suffix>",
            shown));
      }
      if (suffix.empty()) {
        return InvalidArgumentError(fmt::format("{}: no domain after the account host", shown));
      }
    }
    bool account_ok = !account.empty();
    for (char c : account) account_ok = account_ok && IsLowerAlnum(c);
    if (!account_ok) {
      return InvalidArgumentError(fmt::format(
          "{}: invalid storage account '{}' (lowercase letters and digits)", shown, account));
    }
    config.account = std::string(account);
    use_env = env_settings.account.empty() || env_settings.account == config.account;
    config.url_prefix = fmt::format("{}://{}@{}/", scheme, container, host);
  } else {
    config.account = env_settings.account;
    config.url_prefix = fmt::format("{}://{}/", scheme, container);
  }

  if (use_env && !env_settings.endpoint.empty() &&
      (host.empty() || env_settings.account == config.account)) {
    config.endpoint = env_settings.endpoint;
  } else if (!config.account.empty()) {
    config.endpoint = fmt::format("{}://{}.blob.{}", host.empty() ? env_settings.protocol : "https",
                                  config.account, suffix);
  } else {
    return InvalidArgumentError(fmt::format(
        "{}: no storage account: set AZURE_STORAGE_ACCOUNT or AZURE_STORAGE_CONNECTION_STRING, "
        "or name it in the URL ({}://<container>@<account>.dfs.core.windows.net/<path>)",
        shown, scheme));
  }

  config.credentials.account = config.account;
  if (use_env) {
    if (!env_settings.account_key.empty()) {
      if (config.account.empty()) {
        return InvalidArgumentError(
            fmt::format("{}: {} is set but no account name (AZURE_STORAGE_ACCOUNT or AccountName)",
                        shown, env_settings.key_source));
      }
      std::optional<std::string> key = Base64Decode(env_settings.account_key);
      if (!key || key->empty()) {
        return InvalidArgumentError(
            fmt::format("{}: {} is not valid base64", shown, env_settings.key_source));
      }
      config.credentials.account_key = std::move(*key);
    }
    config.credentials.sas_token = env_settings.sas_token;
  }
  if (!config.credentials.has_shared_key() && !config.credentials.has_sas()) {
    auto provider = LoadAzureTokenProvider(env);
    if (!provider) return provider.status().WithContext(shown);
    config.token_provider = std::move(*provider);
    if (config.token_provider && !config.endpoint.starts_with("https://")) {
      return InvalidArgumentError(
          fmt::format("{}: Entra ID tokens ({}) are sent only over HTTPS, and the endpoint is {}",
                      shown, config.token_provider->source(), config.endpoint));
    }
  }
  return location;
}

}  // namespace ferry::internal_azure
