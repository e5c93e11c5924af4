// The credentials half of `ferry doctor`: which sources the URL's credential chain considered, in
// order, which one answered (or why none did), who the cloud says that is, until when, and - with
// --auth - whether listing, reading and writing under the URL work, with the fix to try for
// each failure. Nothing it prints or returns holds a secret: source names, variable and file
// names, identities (ARNs, application ids), times.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ferry/result.h"
#include "storage/credential_trace.h"

namespace ferry::cli {

struct AuthCheck {
  std::string name;    // "list", "read", "write"
  Status status;       // ok, or why it failed
  std::string detail;  // what was done: "3 objects, 1 folder", "wrote and removed KEY"
  std::string fix;     // for a failure: what to try
};

struct AuthReport {
  std::string url;
  std::vector<internal_storage::CredentialTrace::Step> chain;
  std::string answered_by;  // the source that gave credentials; "" when none could
  Status credentials;       // why none could
  std::string fix;          // for that failure
  std::string identity;     // who the cloud says the credentials are, where it can say
  std::optional<std::chrono::system_clock::time_point> expiration;
  std::vector<AuthCheck> checks;

  /// True when credentials came and every check passed.
  bool ok() const;
};

struct AuthOptions {
  bool checks = true;  // list and read
  bool write = true;   // and write (a small object put and removed again)
};

/// The report for `url`. Fails only when the URL itself is wrong; everything else is reported.
Result<AuthReport> CheckAuth(const std::string& url, const AuthOptions& options);

/// The report as text lines, and as JSON.
std::vector<std::string> FormatAuthReport(const AuthReport& report);
nlohmann::ordered_json AuthReportJson(const AuthReport& report);

}  // namespace ferry::cli
