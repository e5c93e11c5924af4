// ResumableGet: the GET loop shared by every HTTP-based store (S3, GCS, Azure, HTTP).
//
// It streams a byte range of one object to a sink, retrying transient failures with the store's
// RetryPolicy. When a transfer breaks in the middle, the next attempt asks only for the bytes
// not yet delivered (Range: bytes=<next>-<end>), pinned with If-Match to the etag of the first
// response, so the sink sees every byte exactly once and a replaced object is an error
// (kFailedPrecondition), never a splice of two versions. A server that gives no etag (the
// Databricks Files API) is pinned with If-Unmodified-Since to the first response's
// Last-Modified instead: whole seconds, so only a replacement in the same second goes unseen. A
// response that ends early without an error is treated like a break. A server that sends more than
// the range (a wider 206, or a 200 with the whole object when the range starts at 0) has the excess
// cut off.
//
// The store supplies how to build (and sign) a request for a given range, and how to turn an
// error response into a Status (its XML error codes); everything else is common.
//
// Thread-safety: reentrant; the callbacks are called on the calling thread or the transport's.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "ferry/result.h"
#include "ferry/storage/object_store.h"
#include "storage/http/transport.h"
#include "storage/retry_policy.h"

namespace ferry::http {

/// What one attempt asks for.
struct GetAttempt {
  uint64_t offset = 0;
  std::optional<uint64_t> length;  // nullopt: to the end
  std::string if_match;            // etag (unquoted) to pin, or empty
  int attempt = 1;
};

struct ResumableGetOptions {
  /// Builds the request for an attempt. The store sets method, URL, auth; ResumableGet adds
  /// Range and If-Match headers from the attempt before calling it (they are in `headers`).
  std::function<Result<Request>(const GetAttempt& attempt, Headers headers)> build;
  /// Maps a response with status >= 300 to a Status naming `url`.
  std::function<Status(const Response& response)> map_error;
  std::string url;  // for error messages; already redacted
  RetryPolicy retry;
  /// Reads what the store's headers say of the whole object beyond size and etag (its free
  /// checksum: ObjectInfo::md5) from the first good response (`status` 200 or 206). Optional.
  std::function<void(int status, const Headers& headers, ObjectInfo& info)> describe;
};

/// Streams `range` of the object to `sink`. Returns the object's size and etag (key empty). A
/// range of length 0 makes no request and returns an empty info.
Result<ObjectInfo> ResumableGet(Transport& transport, const ResumableGetOptions& options,
                                ByteRange range, const ByteSink& sink);

/// The code of an HTTP status, for a reply whose body says nothing more the caller knows:
/// 400 -> kInvalidArgument, 401 -> kUnauthenticated, 403 -> kPermissionDenied, 404 -> kNotFound,
/// 408/429/5xx -> kUnavailable, 412 -> kFailedPrecondition, 416 -> kOutOfRange, else kUnknown
/// (409 too: what a conflict means is the service's to say).
StatusCode StatusCodeFromHttp(int status);

/// StatusCodeFromHttp's code with a message that starts with `url`.
Status StatusFromHttp(int status, std::string_view url, std::string_view detail);

/// "bytes a-b/total" -> total (nullopt when absent or "*").
std::optional<uint64_t> TotalFromContentRange(std::string_view content_range);

/// "bytes a-b/total" -> a.
std::optional<uint64_t> StartFromContentRange(std::string_view content_range);

/// Whether `status` is ResumableGet's word that the object changed while it was read (412 to a
/// resume pinned with If-Match or If-Unmodified-Since): a reader may start over and read the
/// new version whole; other kFailedPrecondition errors (an archived object) are not this.
bool IsObjectChanged(const Status& status);

/// `"abc"` -> `abc`; W/"abc" -> abc.
std::string UnquoteEtag(std::string_view etag);

/// `key` with the size (Content-Length), etag (unquoted ETag) and mtime (Last-Modified, when it
/// parses) of a HEAD response. kDataLoss naming `url` when Content-Length is missing or not a
/// number: S3 and Azure always send it, so its absence means a broken reply.
Result<ObjectInfo> ObjectInfoFromHeaders(const Headers& headers, std::string_view key,
                                         std::string_view url);

}  // namespace ferry::http
