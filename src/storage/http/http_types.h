// Values that cross the HTTP seam: a request a store builds, the response the transport returns.
//
// Stores never see libcurl: they fill a Request (method, full URL, headers, body source) and
// get back a Response (status, headers, and the body unless a sink consumed it). Header names
// compare case-insensitively; the transport sends them as given.
//
// Thread-safety: plain values. A BodySource's read function may be called from the transport's
// I/O thread, and again from the start on a retry.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/result.h"
#include "ferry/storage/object_store.h"
#include "storage/env_lookup.h"

namespace ferry::http {

class Headers {
 public:
  struct Field {
    std::string name;
    std::string value;
  };

  /// The value of the first field named `name` (any case), or nullopt.
  std::optional<std::string_view> Get(std::string_view name) const;
  /// Replaces every field named `name` with one field.
  void Set(std::string_view name, std::string value);
  void Add(std::string name, std::string value);
  void Remove(std::string_view name);

  const std::vector<Field>& fields() const { return fields_; }
  bool empty() const { return fields_.empty(); }

 private:
  std::vector<Field> fields_;
};

/// Case-insensitive ASCII comparison (HTTP header names).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

/// A request body read in pieces (random access, so a transport can restart it on a retry and
/// uploads stream from files): the same type the ObjectStore interface uploads from.
using BodySource = ::ferry::ByteSource;

struct Timeouts {
  uint32_t connect_ms = 10'000;
  /// Abort when fewer than `low_speed_bytes` arrive per second, on average, for
  /// `low_speed_seconds`: a stalled connection, or one trickling so slowly that the job would
  /// sit on it for days (a read resumes on a new connection). A slow link is not what this
  /// catches: 1 KiB/s is far below any link worth streaming over.
  uint32_t low_speed_bytes = 1024;
  uint32_t low_speed_seconds = 30;
  uint32_t total_ms = 0;  // 0: no limit on the whole transfer
};

/// Timeouts{} with the stall limits the environment sets: FERRY_LOW_SPEED_LIMIT (bytes per
/// second) and FERRY_LOW_SPEED_TIME (seconds, at least 1). A value that is not a number is
/// ignored with a warning.
Timeouts TimeoutsFromEnvironment(const EnvLookup& env = ProcessEnv);

/// TimeoutsFromEnvironment(), read once per process: what every request starts with.
const Timeouts& DefaultTimeouts();

/// While one lives, requests made on this thread wait at most `seconds` for a stalled transfer
/// (Timeouts::low_speed_seconds, capped): for a caller with somewhere better to go (MirrorStore,
/// for a mirror with another behind it). Scopes nest; the least limit applies.
class StallLimitScope {
 public:
  explicit StallLimitScope(uint32_t seconds);
  ~StallLimitScope();
  StallLimitScope(const StallLimitScope&) = delete;
  StallLimitScope& operator=(const StallLimitScope&) = delete;

  /// `timeouts` with this thread's stall limit applied.
  static Timeouts Apply(Timeouts timeouts);

 private:
  uint32_t seconds_;
  const StallLimitScope* outer_;
};

struct Request {
  std::string method = "GET";
  std::string url;  // absolute and already percent-encoded
  Headers headers;
  std::optional<BodySource> body;
  Timeouts timeouts = StallLimitScope::Apply(DefaultTimeouts());
  /// Called once the final response's status and headers have arrived, before its body (and so
  /// even when the body later breaks off): how a resumed read learns the etag and size of what
  /// it was reading. Runs on the transport's I/O thread; must be quick.
  std::function<void(int status, const Headers& headers)> on_headers;
};

struct Response {
  int status = 0;
  Headers headers;
  /// The body, unless a sink consumed it. Bodies of error responses (status >= 300) are always
  /// collected here (up to 64 KiB), never sent to a sink.
  std::string body;
};

/// Receives a successful response's body as it arrives. Returning an error aborts the transfer
/// and becomes the request's result. It is also called with an empty chunk at any time while the
/// transfer runs (often while bytes move, about once a second while none do: before the
/// headers, on a stalled connection, after the last byte), so that a sink told to stop can end a
/// transfer that brings no bytes.
using BodySink = std::function<Status(std::string_view chunk)>;

/// The URL with its query string's credentials masked (SAS signatures, X-Amz-Signature, tokens):
/// the form every log line and error message uses.
std::string RedactUrl(std::string_view url);

}  // namespace ferry::http
