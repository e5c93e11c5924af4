// http::Transport: the one seam between object stores and the network.
//
// Submit starts a request and returns at once; `done` runs later, on the transport's I/O thread,
// with the response or with the transport failure (kUnavailable for connection refused / reset
// / DNS, kDeadlineExceeded for timeouts, kFailedPrecondition for TLS verification). An HTTP
// error status is not a transport failure: it comes back as a Response for the store to map.
// Execute is the blocking form. `done` must be quick and must not block: it runs on the thread
// that moves every other request's bytes.
//
// Thread-safety: Submit and Execute may be called from any thread, concurrently.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "ferry/result.h"
#include "storage/http/http_types.h"

namespace ferry::http {

using Completion = std::function<void(Result<Response>)>;

class Transport {
 public:
  virtual ~Transport() = default;

  /// Starts `request`. A successful response's body goes to `sink` when one is given, else into
  /// Response::body. `done` is called exactly once.
  virtual void Submit(Request request, BodySink sink, Completion done) = 0;

  /// Submit and wait.
  Result<Response> Execute(Request request, BodySink sink = {});
};

/// A HEAD's reply has no body, so a refused HEAD names no reason (which S3 and Azure give only
/// in an error document). Executes `get`, the same request as a signed GET of one byte (Range:
/// bytes=0-0), and returns its reply when it is refused with the same `status` and carries a
/// body; otherwise nullopt, and a body that comes instead stops the transfer at its first bytes.
std::optional<Response> FetchErrorDocument(Transport& transport, Request get, int status);

/// The process-wide libcurl transport, created on first use (and again in a forked child).
std::shared_ptr<Transport> DefaultTransport();

/// `transport` when given; else points it at DefaultTransport() and returns that, which the
/// caller keeps alive for as long as it uses `transport`.
std::shared_ptr<Transport> DefaultIfNull(Transport*& transport);

/// Replaces what DefaultTransport returns (tests); nullptr restores the libcurl one.
void SetDefaultTransportForTesting(std::shared_ptr<Transport> transport);

}  // namespace ferry::http
