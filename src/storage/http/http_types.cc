#include "storage/http/http_types.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "base/ascii.h"
#include "base/log.h"

namespace ferry::http {
namespace {

// The whole of `name`'s value as a number at least `min`, if it is set and one.
std::optional<uint32_t> EnvNumber(const EnvLookup& env, const char* name, uint32_t min) {
  const std::optional<std::string> text = env(name);
  if (!text) return std::nullopt;
  const std::optional<uint64_t> value = ParseUint(*text);
  if (!value || *value < min || *value > std::numeric_limits<uint32_t>::max()) {
    Log().warn("{}=\"{}\" is not a whole number of at least {}: ignored", name, *text, min);
    return std::nullopt;
  }
  return static_cast<uint32_t>(*value);
}

}  // namespace

Timeouts TimeoutsFromEnvironment(const EnvLookup& env) {
  Timeouts t;
  if (auto v = EnvNumber(env, "FERRY_LOW_SPEED_LIMIT", 0)) t.low_speed_bytes = *v;
  if (auto v = EnvNumber(env, "FERRY_LOW_SPEED_TIME", 1)) t.low_speed_seconds = *v;
  return t;
}

const Timeouts& DefaultTimeouts() {
  static const Timeouts timeouts = TimeoutsFromEnvironment();
  return timeouts;
}

namespace {
thread_local const StallLimitScope* innermost_stall_limit = nullptr;
}  // namespace

StallLimitScope::StallLimitScope(uint32_t seconds)
    : seconds_(std::max<uint32_t>(1, seconds)), outer_(innermost_stall_limit) {
  innermost_stall_limit = this;
}

StallLimitScope::~StallLimitScope() { innermost_stall_limit = outer_; }

Timeouts StallLimitScope::Apply(Timeouts timeouts) {
  for (const StallLimitScope* scope = innermost_stall_limit; scope != nullptr;
       scope = scope->outer_) {
    timeouts.low_speed_seconds = std::min(timeouts.low_speed_seconds, scope->seconds_);
  }
  return timeouts;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::optional<std::string_view> Headers::Get(std::string_view name) const {
  for (const auto& f : fields_) {
    if (EqualsIgnoreCase(f.name, name)) return std::string_view(f.value);
  }
  return std::nullopt;
}

void Headers::Set(std::string_view name, std::string value) {
  Remove(name);
  fields_.push_back({std::string(name), std::move(value)});
}

void Headers::Add(std::string name, std::string value) {
  fields_.push_back({std::move(name), std::move(value)});
}

void Headers::Remove(std::string_view name) {
  std::erase_if(fields_, [&](const Field& f) { return EqualsIgnoreCase(f.name, name); });
}

std::string RedactUrl(std::string_view url) {
  const size_t q = url.find('?');
  if (q == std::string_view::npos) return std::string(url);
  // Every query value whose name looks like a credential is replaced.
  static constexpr std::string_view kSecretNames[] = {
      "sig",   "signature", "x-amz-signature", "x-amz-security-token", "x-amz-credential",
      "token", "sv_token",  "access_token",    "x-goog-signature",     "x-goog-credential"};
  std::string out(url.substr(0, q + 1));
  std::string_view query = url.substr(q + 1);
  bool first = true;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    const std::string_view name = pair.substr(0, eq);
    if (!first) out += '&';
    first = false;
    bool secret = false;
    for (std::string_view s : kSecretNames) secret = secret || EqualsIgnoreCase(name, s);
    if (secret && eq != std::string_view::npos) {
      out += name;
      out += "=REDACTED";
    } else {
      out += pair;
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

}  // namespace ferry::http
