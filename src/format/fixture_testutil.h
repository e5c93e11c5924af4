// Helpers for tests that read files and the Mosaic-written MDS fixtures. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "base/file_util.h"

namespace ferry::testing {

/// The fixture datasets: $FERRY_FIXTURES_DIR, else the path CMake was configured with.
inline std::filesystem::path FixturesDir() {
  if (const char* env = std::getenv("FERRY_FIXTURES_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return FERRY_FIXTURES_DIR;
}

/// FixturesDir() as the process started: what the tests of one run read.
inline const std::filesystem::path kFixtures = FixturesDir();

/// The whole file; a test failure (and "") when it cannot be read.
inline std::string FileText(const std::filesystem::path& path) {
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.has_value()) << text.status().ToString();
  return text.value_or("");
}

/// A writable copy of fixture `name` at `to` (the fixtures themselves are read-only).
inline void CopyFixture(const std::string& name, const std::filesystem::path& to) {
  namespace fs = std::filesystem;
  fs::create_directories(to);
  fs::copy(FixturesDir() / name, to,
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  for (const auto& entry : fs::recursive_directory_iterator(to)) {
    fs::permissions(entry.path(), fs::perms::owner_write, fs::perm_options::add);
  }
}

}  // namespace ferry::testing
