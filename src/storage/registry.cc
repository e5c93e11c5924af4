#include "ferry/storage/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

namespace ferry {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, StoreFactory> factories;  // guarded by mu
};

Registry& TheRegistry() {
  static auto* registry = new Registry();  // never destroyed: registrations are static objects
  return *registry;
}

}  // namespace

std::string UrlScheme(std::string_view url) {
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos || sep == 0) return "file";
  std::string scheme(url.substr(0, sep));
  for (char c : scheme) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
      return "file";  // "a/b://c" is a path, not a URL
    }
  }
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return scheme;
}

StoreRegistration::StoreRegistration(std::string_view scheme, StoreFactory factory) {
  Registry& r = TheRegistry();
  std::lock_guard lock(r.mu);
  if (!r.factories.emplace(std::string(scheme), factory).second) {
    // Two stores claiming one scheme is a build mistake; failing loudly at start-up beats
    // silently picking one.
    std::fprintf(stderr, "ferry: URL scheme '%.*s' is registered twice\n",
                 static_cast<int>(scheme.size()), scheme.data());
    std::abort();
  }
}

std::vector<std::string> RegisteredSchemes() {
  Registry& r = TheRegistry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [scheme, factory] : r.factories) out.push_back(scheme);
  return out;
}

Result<StoreAndKey> OpenUrl(std::string_view url) {
  if (url.empty()) return InvalidArgumentError("empty URL");
  const std::string scheme = UrlScheme(url);
  StoreFactory factory = nullptr;
  {
    Registry& r = TheRegistry();
    std::lock_guard lock(r.mu);
    if (auto it = r.factories.find(scheme); it != r.factories.end()) factory = it->second;
  }
  if (factory == nullptr) {
    return InvalidArgumentError(fmt::format("unsupported URL scheme '{}' in {} (known: {})", scheme,
                                            url.substr(0, url.find('?')),
                                            fmt::join(RegisteredSchemes(), ", ")));
  }
  return factory(url);
}

}  // namespace ferry
