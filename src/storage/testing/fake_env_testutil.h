// FakeEnv: the settings a test hands a store, as an EnvLookup (storage/env_lookup.h), instead of
// setenv, which races with every thread that reads the environment and leaks between tests.
// Passed where an EnvLookup is taken, it is copied: the store sees the values of that moment.
// Test-only.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ferry::testing {

class FakeEnv {
 public:
  FakeEnv() = default;
  FakeEnv(std::initializer_list<std::pair<const std::string, std::string>> values)
      : values_(values) {}

  void Set(std::string name, std::string value) { values_[std::move(name)] = std::move(value); }
  void Unset(std::string_view name) {
    if (auto it = values_.find(name); it != values_.end()) values_.erase(it);
  }

  /// As ProcessEnv: nullopt for a name that is not set or is set to "".
  std::optional<std::string> operator()(std::string_view name) const {
    const auto it = values_.find(name);
    if (it == values_.end() || it->second.empty()) return std::nullopt;
    return it->second;
  }

 private:
  std::map<std::string, std::string, std::less<>> values_;
};

}  // namespace ferry::testing
