#include "storage/env_lookup.h"

#include <cstdlib>

namespace ferry {

std::optional<std::string> ProcessEnv(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string EnvFingerprint(std::span<const char* const> names, const EnvLookup& env) {
  std::string out;
  for (const char* name : names) {
    out += '\n';
    out += name;
    out += '=';
    out += env(name).value_or("");
  }
  return out;
}

}  // namespace ferry
