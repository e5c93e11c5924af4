// The lies of ferry-wan's lying-server faults (wan_proxy.h): the honest reply to a GET,
// rewritten into what a broken server, load balancer or captive portal answers instead.
//   short  the body cut short, with a Content-Length that says so (a 206 keeps the
//          Content-Range of the whole range: the lie is in the length);
//   range  a 206 for another range than asked: its first bytes dropped and a Content-Range
//          that says so (a 200 becomes a 206 starting past byte 0);
//   whole  a 200 with "the whole object" for a range request: the range's bytes in their place,
//          zeros around them (a client that used bytes outside its range would be caught);
//   html   a 200 with an HTML error page, whatever was asked;
//   etag   the object changed since it was first read: another ETag on the reply, and to a
//          request pinned with If-Match, 412 Precondition Failed as the store answers then.
// A lie that does not fit a reply (a range lie to an empty body, a whole object for a reply that
// is not a 206, an error reply) is not told: Lie returns nullopt and the reply goes out honest.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/wan/wan_proxy.h"
#include "ferry/result.h"

namespace ferry::wan {

/// One HTTP/1.1 reply with its whole body.
struct HttpReply {
  std::string status_line;  // "HTTP/1.1 200 OK"
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  int status() const;
  /// The value of header `name` (any case); nullopt when absent.
  std::optional<std::string_view> Header(std::string_view name) const;
  void SetHeader(std::string_view name, std::string value);
  void RemoveHeader(std::string_view name);
  /// Status line, headers and body, as they go on the wire.
  std::string Serialize() const;
};

/// The reply at the start of `bytes`: nullopt while its headers or its Content-Length body are
/// incomplete; kInvalidArgument when it is not an HTTP reply or has no Content-Length (a
/// chunked body is not rewritten).
Result<std::optional<HttpReply>> ParseReply(std::string_view bytes);

/// Reads one reply from `fd` (a connection the request was sent on), giving up after `timeout`.
Result<HttpReply> ReadReply(int fd, std::chrono::milliseconds timeout);

/// The value of header `name` (any case) in the request `request`; nullopt when absent.
std::optional<std::string_view> RequestHeader(std::string_view request, std::string_view name);

/// True for the kinds that are lies (short, range, whole, html, etag).
bool IsLie(FaultKind kind);

/// The page a load balancer or captive portal answers with "200 OK".
HttpReply HtmlErrorPage();

/// `reply` (the honest answer to `request`) told as the lie `kind`, using `random` where the
/// lie has a free choice (where to cut, how much to skip); nullopt when the lie does not fit.
std::optional<HttpReply> Lie(FaultKind kind, std::string_view request, HttpReply reply,
                             uint64_t random);

}  // namespace ferry::wan
