// S3 error responses -> ferry::Status.
//
// S3 (and every S3-compatible server) answers a failed request with an HTTP status and, except
// for HEAD, an XML body:
//   <Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message>...</Error>
// The code decides the StatusCode when it is one we know, else the HTTP status does:
//   NoSuchKey, NoSuchBucket, NoSuchUpload, 404                      -> kNotFound
//   AccessDenied, AllAccessDisabled, 403                              -> kPermissionDenied
//   InvalidAccessKeyId, SignatureDoesNotMatch, ExpiredToken,
//   InvalidToken, TokenRefreshRequired, 401                          -> kUnauthenticated
//   SlowDown, InternalError, ServiceUnavailable, RequestTimeout,
//   Throttling, RequestLimitExceeded, TooManyRequests, 408, 429, 5xx -> kUnavailable
//   OperationAborted (a conflicting operation in progress)            -> kAborted (retried)
//   PreconditionFailed, 412                                           -> kFailedPrecondition
//   InvalidRange, 416                                                 -> kOutOfRange
//   PermanentRedirect, AuthorizationHeaderMalformed (wrong region)    -> kInvalidArgument
// The message is "<url>: <Code>: <Message>" (or "<url>: HTTP <status>" without a body), plus a
// hint naming the bucket's region when the service says the request went to the wrong one. Only
// Code and Message are taken from the body: the other fields a SignatureDoesNotMatch reply
// carries (StringToSign, CanonicalRequest, SignatureProvided) never reach the message.
//
// Thread-safety: reentrant functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ferry/result.h"
#include "storage/http/http_types.h"

namespace ferry::internal_s3 {

struct S3ErrorBody {
  std::string code;
  std::string message;
  std::string region;  // <Region>, sent with some wrong-region errors
};

/// The Code and Message of an <Error> document; nullopt when `body` is not one.
std::optional<S3ErrorBody> ParseS3ErrorBody(std::string_view body);

/// The StatusCode for an S3 error code (may be empty) and HTTP status.
StatusCode StatusCodeForS3Error(std::string_view code, int http_status);

/// The Status for an error response about `url` (already redacted).
Status S3ErrorToStatus(const http::Response& response, std::string_view url);

}  // namespace ferry::internal_s3
