// ScopedEnv: sets and unsets environment variables for one test and puts every one it touched
// back as it was when it goes out of scope. Test-only; not thread-safe (nor is setenv).
#pragma once

#include <cstdlib>
#include <map>
#include <optional>
#include <span>
#include <string>

namespace ferry::testing {

class ScopedEnv {
 public:
  /// Unsets `clear` for the test (their values are restored afterwards).
  explicit ScopedEnv(std::span<const char* const> clear = {}) {
    for (const char* name : clear) Unset(name);
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

  void Set(const std::string& name, const std::string& value) {
    Save(name);
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  void Unset(const std::string& name) {
    Save(name);
    ::unsetenv(name.c_str());
  }

 private:
  void Save(const std::string& name) {
    if (saved_.count(name) != 0) return;
    const char* v = std::getenv(name.c_str());
    saved_[name] = v == nullptr ? std::nullopt : std::optional<std::string>(v);
  }

  std::map<std::string, std::optional<std::string>> saved_;
};

/// Every variable the S3 and GCS configuration reads: tests start with all of them unset.
inline constexpr const char* kStoreEnvironment[] = {"HOME",
                                                    "AWS_ACCESS_KEY_ID",
                                                    "AWS_SECRET_ACCESS_KEY",
                                                    "AWS_SESSION_TOKEN",
                                                    "AWS_PROFILE",
                                                    "AWS_SHARED_CREDENTIALS_FILE",
                                                    "AWS_CONFIG_FILE",
                                                    "AWS_REGION",
                                                    "AWS_DEFAULT_REGION",
                                                    "AWS_NO_SIGN_REQUEST",
                                                    "AWS_ENDPOINT_URL_S3",
                                                    "AWS_ENDPOINT_URL",
                                                    "S3_ENDPOINT_URL",
                                                    "FERRY_S3_ADDRESSING",
                                                    "GCS_ENDPOINT_URL",
                                                    "GCS_HMAC_ACCESS_KEY_ID",
                                                    "GCS_HMAC_SECRET"};

}  // namespace ferry::testing
