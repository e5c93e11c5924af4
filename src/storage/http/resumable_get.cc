#include "storage/http/resumable_get.h"

#include <fmt/format.h>

#include "base/ascii.h"
#include "storage/http/http_date.h"
#include "storage/http/request_throttle.h"

namespace ferry::http {

std::optional<uint64_t> TotalFromContentRange(std::string_view content_range) {
  const size_t slash = content_range.rfind('/');
  if (slash == std::string_view::npos) return std::nullopt;
  return ParseUint(content_range.substr(slash + 1));
}

std::optional<uint64_t> StartFromContentRange(std::string_view content_range) {
  // "bytes a-b/total"
  const size_t space = content_range.find(' ');
  const size_t dash = content_range.find('-');
  if (space == std::string_view::npos || dash == std::string_view::npos || dash < space) {
    return std::nullopt;
  }
  return ParseUint(content_range.substr(space + 1, dash - space - 1));
}

namespace {
constexpr std::string_view kObjectChanged = "the object changed while it was being read";
}  // namespace

bool IsObjectChanged(const Status& status) {
  return status.code() == StatusCode::kFailedPrecondition &&
         status.message().find(kObjectChanged) != std::string::npos;
}

std::string UnquoteEtag(std::string_view etag) {
  if (etag.starts_with("W/")) etag.remove_prefix(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return std::string(etag);
}

Result<ObjectInfo> ObjectInfoFromHeaders(const Headers& headers, std::string_view key,
                                         std::string_view url) {
  ObjectInfo info;
  info.key = std::string(key);
  const auto length = headers.Get("Content-Length");
  const auto size = length ? ParseUint(*length) : std::nullopt;
  if (!size) {
    return DataLossError(fmt::format("{}: the response has no valid Content-Length", url));
  }
  info.size = *size;
  if (auto etag = headers.Get("ETag")) info.etag = UnquoteEtag(*etag);
  if (auto modified = headers.Get("Last-Modified")) info.mtime = ParseHttpDate(*modified);
  return info;
}

StatusCode StatusCodeFromHttp(int status) {
  switch (status) {
    case 400:
      return StatusCode::kInvalidArgument;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kNotFound;
    case 408:
    case 429:
      return StatusCode::kUnavailable;
    case 412:
      return StatusCode::kFailedPrecondition;
    case 416:
      return StatusCode::kOutOfRange;
    default:
      return status >= 500 ? StatusCode::kUnavailable : StatusCode::kUnknown;
  }
}

Status StatusFromHttp(int status, std::string_view url, std::string_view detail) {
  std::string message = fmt::format("{}: HTTP {}", url, status);
  if (!detail.empty()) message += fmt::format(": {}", detail);
  return Status(StatusCodeFromHttp(status), std::move(message));
}

Result<ObjectInfo> ResumableGet(Transport& transport, const ResumableGetOptions& options,
                                ByteRange range, const ByteSink& sink) {
  ObjectInfo info;
  if (range.length && *range.length == 0) return info;  // nothing to fetch; size unknown (0)
  uint64_t delivered = 0;     // bytes of the range already handed to the sink
  std::string last_modified;  // of the first response: the pin when the server gives no etag
  std::optional<uint64_t> expected = range.length;  // bytes the whole range holds, once known
  int attempt_number = 0;
  const auto deadline = std::chrono::steady_clock::now() + options.retry.total_budget;
  RequestThrottle* gate = nullptr;  // the target's, found at the first attempt
  // A reply that is not the range asked for: not a byte of it is used.
  const auto another_range = [&](const GetAttempt& a, const std::string& what_came) {
    return DataLossError(fmt::format("{}: asked for the bytes from {}, the server sent {}",
                                     options.url, a.offset, what_came));
  };

  auto attempt = [&]() -> Status {
    ++attempt_number;
    GetAttempt a;
    a.offset = range.offset + delivered;
    if (range.length) a.length = *range.length - delivered;
    a.if_match = info.etag;
    a.attempt = attempt_number;
    Headers headers;
    if (a.offset > 0 || a.length) {
      headers.Set("Range", a.length ? fmt::format("bytes={}-{}", a.offset, a.offset + *a.length - 1)
                                    : fmt::format("bytes={}-", a.offset));
    }
    if (!a.if_match.empty()) {
      headers.Set("If-Match", "\"" + a.if_match + "\"");
    } else if (!last_modified.empty()) {
      headers.Set("If-Unmodified-Since", last_modified);
    }
    // Learn the object's etag and size as soon as a good response's headers arrive, so that a
    // body that breaks off later still resumes pinned to this version and knows where it ends.
    bool ignored_range = false;
    std::string what_came;  // when the reply is not the range asked for, what it is
    const auto on_headers = [&](int status, const Headers& h) {
      if (status >= 300) return;
      if (info.etag.empty()) {
        if (auto etag = h.Get("ETag")) info.etag = UnquoteEtag(*etag);
        if (options.describe) options.describe(status, h, info);
      }
      if (last_modified.empty()) {
        if (auto modified = h.Get("Last-Modified")) last_modified = std::string(*modified);
      }
      std::optional<uint64_t> total;
      if (status == 206) {
        if (auto cr = h.Get("Content-Range")) {
          total = TotalFromContentRange(*cr);
          // The body must start where we asked; a server may send more than asked for at the
          // end (s3rver answers "bytes=0-0" with the whole object), which we cut off below.
          ignored_range = StartFromContentRange(*cr) != a.offset;
          if (ignored_range) what_came = fmt::format("another range ({})", *cr);
        }
      } else if (auto cl = h.Get("Content-Length")) {
        total = ParseUint(*cl);
        // The server ignored the Range header and sends the whole object: usable only when we
        // wanted to start at byte 0 (the rest is cut off), not to resume mid-object.
        ignored_range = a.offset > 0;
        if (ignored_range) what_came = fmt::format("a 200 of {} bytes, not the range", *cl);
      }
      if (total && !ignored_range) {
        info.size = *total;
        const uint64_t end = range.length ? std::min(*total, range.offset + *range.length) : *total;
        const uint64_t want = end > range.offset ? end - range.offset : 0;
        if (!expected || *expected > want) expected = want;
      }
    };

    const auto build = [&]() -> Result<Request> {
      FERRY_ASSIGN_OR_RETURN(Request request, options.build(a, headers));
      request.on_headers = on_headers;
      return request;
    };
    bool have_enough = false;  // the range is complete; the rest of the body is not wanted
    // A throttle reply is waited out at the target's gate and asked again, for as long as the
    // retry budget lasts, without spending one of its attempts (request_throttle.h).
    auto result = ExecuteThroughGate(
        transport, build,
        [&](std::string_view chunk) -> Status {
          if (chunk.empty()) return sink(chunk);  // the transport asking whether to go on
          if (ignored_range) return another_range(a, what_came);
          // Never hand the sink more than the range asked for, whatever the server sends.
          if (expected && delivered + chunk.size() > *expected) {
            chunk = chunk.substr(0, *expected - delivered);
            have_enough = true;
          }
          if (!chunk.empty()) FERRY_RETURN_IF_ERROR(sink(chunk));
          delivered += chunk.size();
          // Stopping the transfer is how extra bytes are refused; it is not an error.
          return have_enough ? CancelledError("range complete") : Status::Ok();
        },
        deadline, [&] { return sink(std::string_view()); }, &gate);
    // Every byte of the range arrived and only the end of the exchange broke (a stall or reset
    // after the last byte): asking again would ask for nothing, which a server refuses (416).
    if (!result && (have_enough || (expected && delivered == *expected))) return Status::Ok();
    if (!result) return result.status();
    const Response& response = *result;
    if (response.status == 412 && !info.etag.empty()) {
      return FailedPreconditionError(
          fmt::format("{}: {} (etag was {})", options.url, kObjectChanged, info.etag));
    }
    if (response.status == 412 && !last_modified.empty()) {
      return FailedPreconditionError(fmt::format("{}: {} (it was last modified {})", options.url,
                                                 kObjectChanged, last_modified));
    }
    if (response.status >= 300) return options.map_error(response);
    if (ignored_range) return another_range(a, what_came);
    if (expected && delivered < *expected) {
      // The body ended early without a transport error: resume from where it stopped.
      return UnavailableError(fmt::format("{}: the response ended after {} of {} bytes",
                                          options.url, delivered, *expected));
    }
    return Status::Ok();
  };

  FERRY_RETURN_IF_ERROR(Retry(options.retry, attempt));
  if (!expected) info.size = range.offset + delivered;
  return info;
}

}  // namespace ferry::http
