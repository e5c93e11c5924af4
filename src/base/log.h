// The library's logger: spdlog to stderr, quiet by default.
//
// FERRY_LOG=trace|debug|info|warn|error|off sets the level (default warn). At debug every HTTP
// request is logged with its method, redacted URL, status, bytes and duration; nothing that
// reaches a log line may contain a secret (URLs go through http::RedactUrl, credentials are
// never formatted).
//
// Thread-safety: spdlog loggers are thread-safe.
#pragma once

#include <spdlog/spdlog.h>

namespace ferry {

/// The "ferry" logger (created on first use).
spdlog::logger& Log();

}  // namespace ferry
