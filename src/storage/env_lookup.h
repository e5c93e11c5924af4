// EnvLookup: where every store reads its configuration variables (credentials, endpoints,
// addressing, timeouts). Stores take one as a parameter, defaulting to the process environment,
// so a test or an embedding program hands a store its settings without setenv, which races
// with every other thread that reads the environment.
//
// Unset and empty mean the same: a lookup answers nullopt for both, as shells and the cloud
// SDKs treat an empty variable as no setting.
//
// Thread-safety: ProcessEnv reads the environment (getenv) and must not race with setenv.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ferry {

/// The value of a configuration variable; nullopt when it is unset or empty.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

/// The process environment.
std::optional<std::string> ProcessEnv(std::string_view name);

/// "\nNAME=value" for each of `names` ("" for an unset one): a part of a store-cache key
/// (store_cache.h) that changes whenever one of the settings a store is built from does.
std::string EnvFingerprint(std::span<const char* const> names, const EnvLookup& env);

}  // namespace ferry
