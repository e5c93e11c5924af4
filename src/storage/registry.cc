#include "ferry/storage/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>

#include "base/ascii.h"
#include "base/mutex.h"

namespace ferry {
namespace {

struct Entry {
  StoreFactory factory = nullptr;
  UrlForm form = UrlForm::kAuthority;
};

struct Registry {
  Mutex mu;
  std::map<std::string, Entry> factories GUARDED_BY(mu);
};

Registry& TheRegistry() {
  static auto* registry = new Registry();  // never destroyed: registrations are static objects
  return *registry;
}

// The scheme `url` starts with, as RFC 3986 spells one (a letter, then letters, digits, '+', '-'
// or '.', then ':'), whether or not "//" follows; nullopt when there is none, which makes `url` a
// plain path ("/a:b", "./a:b" and "a/b://c" are paths).
std::optional<std::string_view> LeadingScheme(std::string_view url) {
  if (url.empty() || !std::isalpha(static_cast<unsigned char>(url[0]))) return std::nullopt;
  for (size_t i = 1; i < url.size(); ++i) {
    const auto c = static_cast<unsigned char>(url[i]);
    if (c == ':') return url.substr(0, i);
    if (!std::isalnum(c) && c != '+' && c != '-' && c != '.') return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::string UrlScheme(std::string_view url) {
  const auto scheme = LeadingScheme(url);
  return scheme ? AsciiLower(*scheme) : "file";
}

StoreRegistration::StoreRegistration(std::string_view scheme, StoreFactory factory, UrlForm form) {
  Registry& r = TheRegistry();
  MutexLock lock(r.mu);
  if (!r.factories.emplace(std::string(scheme), Entry{factory, form}).second) {
    // Two stores claiming one scheme is a build mistake; failing loudly at start-up beats
    // silently picking one.
    std::fprintf(stderr, "ferry: URL scheme '%.*s' is registered twice\n",
                 static_cast<int>(scheme.size()), scheme.data());
    std::abort();
  }
}

std::vector<std::string> RegisteredSchemes() {
  Registry& r = TheRegistry();
  MutexLock lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [scheme, factory] : r.factories) out.push_back(scheme);
  return out;
}

Result<StoreAndKey> OpenUrl(std::string_view url) {
  FERRY_RETURN_IF_ERROR(CheckUrlSyntax(url));
  StoreFactory factory = nullptr;
  {
    Registry& r = TheRegistry();
    MutexLock lock(r.mu);
    factory = r.factories.at(UrlScheme(url)).factory;  // CheckUrlSyntax found it
  }
  return factory(url);
}

Status CheckUrlSyntax(std::string_view url) {
  if (url.empty()) return InvalidArgumentError("empty URL");
  const std::string scheme = UrlScheme(url);
  StoreFactory factory = nullptr;
  UrlForm form = UrlForm::kAuthority;
  {
    Registry& r = TheRegistry();
    MutexLock lock(r.mu);
    if (auto it = r.factories.find(scheme); it != r.factories.end()) {
      factory = it->second.factory;
      form = it->second.form;
    }
  }
  // Only the part before '?' is shown: a query may hold a SAS token.
  const std::string_view shown = url.substr(0, url.find('?'));
  auto known = [] { return fmt::format("{}", fmt::join(RegisteredSchemes(), ", ")); };
  // A "scheme:" without "//" is refused rather than read as a local path: "s3:/bucket/x" would
  // otherwise silently become a local folder named "s3:". A path with such a name is written
  // "./s3:/bucket/x".
  const std::string_view rest = LeadingScheme(url) ? url.substr(scheme.size() + 1) : "//";
  if (factory != nullptr && form == UrlForm::kAbsolutePath) {
    if (!rest.starts_with("/")) {
      return InvalidArgumentError(
          fmt::format("{}: malformed URL: '{}:' must be followed by an absolute path ({}:/...)",
                      shown, scheme, scheme));
    }
    return Status::Ok();
  }
  if (LeadingScheme(url) && !rest.starts_with("//")) {
    return InvalidArgumentError(fmt::format(
        "{}: {} (known: {}); a local path whose first name has a ':' is written ./{}", shown,
        factory != nullptr ? fmt::format("malformed URL: '{}:' must be followed by '//' ({}://...)",
                                         scheme, scheme)
                           : fmt::format("'{}' is not a known URL scheme", scheme),
        known(), shown));
  }
  if (factory == nullptr) {
    return InvalidArgumentError(
        fmt::format("unsupported URL scheme '{}' in {} (known: {})", scheme, shown, known()));
  }
  return Status::Ok();
}

}  // namespace ferry
