// Access to the loopback test servers started by scripts/test-servers.sh (make test starts and
// stops them around ctest). Tests read the FERRY_TEST_* variables; a missing one fails the test
// with instructions rather than skipping it.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

namespace ferry::testing {

/// The value of FERRY_TEST_<name>; a test failure (and "") when the servers are not running.
inline std::string ServerEnv(const std::string& name) {
  const std::string var = "FERRY_TEST_" + name;
  const char* v = std::getenv(var.c_str());
  if (v == nullptr || *v == '\0') {
    ADD_FAILURE() << var << " is not set: the test servers are not running. Run the tests with "
                  << "`make test`, or `eval \"$(scripts/test-servers.sh start)\"` first.";
    return "";
  }
  return v;
}

/// A fresh name for keys of one test run.
inline std::string RunId() {
  static std::mt19937_64 rng(std::random_device{}());
  return fmt::format("{:016x}", rng());
}

/// Points the AWS_* variables at one of the S3 test servers ("S3RVER", "MOTO", "MOTO_AUTH").
inline void UseS3Server(const std::string& server, const std::string& secret_override = "") {
  ::setenv("AWS_ENDPOINT_URL", ServerEnv(server + "_ENDPOINT").c_str(), 1);
  ::setenv("AWS_ACCESS_KEY_ID", ServerEnv(server + "_ACCESS_KEY").c_str(), 1);
  const std::string secret =
      secret_override.empty() ? ServerEnv(server + "_SECRET_KEY") : secret_override;
  ::setenv("AWS_SECRET_ACCESS_KEY", secret.c_str(), 1);
  ::setenv("AWS_REGION", "us-east-1", 1);
  for (const char* v : {"AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3",
                        "S3_ENDPOINT_URL", "AWS_NO_SIGN_REQUEST"}) {
    ::unsetenv(v);
  }
}

/// Points the Azure variables at Azurite (through its connection string).
inline void UseAzurite(const std::string& key_override = "") {
  std::string cs = ServerEnv("AZURITE_CONNECTION_STRING");
  if (!key_override.empty()) {
    const std::string key = ServerEnv("AZURITE_KEY");
    cs.replace(cs.find(key), key.size(), key_override);
  }
  ::setenv("AZURE_STORAGE_CONNECTION_STRING", cs.c_str(), 1);
  for (const char* v : {"AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN",
                        "AZURE_STORAGE_BLOB_ENDPOINT"}) {
    ::unsetenv(v);
  }
}

/// Points the DATABRICKS_* variables at the loopback workspace, with its personal access token
/// (or `token_override`); no configuration file, no FUSE folder.
inline void UseDatabricks(const std::string& token_override = "") {
  ::setenv("DATABRICKS_HOST", ServerEnv("DATABRICKS_HOST").c_str(), 1);
  const std::string token = token_override.empty() ? ServerEnv("DATABRICKS_TOKEN") : token_override;
  ::setenv("DATABRICKS_TOKEN", token.c_str(), 1);
  ::setenv("DATABRICKS_CONFIG_FILE", "/nonexistent/.databrickscfg", 1);
  ::setenv("FERRY_DATABRICKS_FUSE", "false", 1);
  for (const char* v :
       {"DATABRICKS_CLIENT_ID", "DATABRICKS_CLIENT_SECRET", "DATABRICKS_CONFIG_PROFILE"}) {
    ::unsetenv(v);
  }
}

}  // namespace ferry::testing
