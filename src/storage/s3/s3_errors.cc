#include "storage/s3/s3_errors.h"

#include <fmt/format.h>

#include <utility>

#include "storage/http/resumable_get.h"
#include "storage/xml/xml_tree.h"

namespace ferry::internal_s3 {
namespace {

// Server messages are short; a long one is cut so that a misbehaving proxy cannot flood a log.
constexpr size_t kMaxMessage = 512;

struct CodeMapping {
  std::string_view s3_code;
  StatusCode code;
};

constexpr CodeMapping kCodes[] = {
    {"NoSuchKey", StatusCode::kNotFound},
    {"NoSuchBucket", StatusCode::kNotFound},
    {"NoSuchUpload", StatusCode::kNotFound},
    {"NoSuchVersion", StatusCode::kNotFound},
    {"AccessDenied", StatusCode::kPermissionDenied},
    {"AllAccessDisabled", StatusCode::kPermissionDenied},
    {"AccountProblem", StatusCode::kPermissionDenied},
    {"InvalidAccessKeyId", StatusCode::kUnauthenticated},
    {"SignatureDoesNotMatch", StatusCode::kUnauthenticated},
    {"ExpiredToken", StatusCode::kUnauthenticated},
    {"InvalidToken", StatusCode::kUnauthenticated},
    {"TokenRefreshRequired", StatusCode::kUnauthenticated},
    {"MissingSecurityHeader", StatusCode::kUnauthenticated},
    {"RequestTimeTooSkewed", StatusCode::kUnauthenticated},
    {"SlowDown", StatusCode::kUnavailable},
    {"InternalError", StatusCode::kUnavailable},
    {"ServiceUnavailable", StatusCode::kUnavailable},
    {"RequestTimeout", StatusCode::kUnavailable},
    {"Throttling", StatusCode::kUnavailable},
    {"ThrottlingException", StatusCode::kUnavailable},
    {"RequestLimitExceeded", StatusCode::kUnavailable},
    {"TooManyRequests", StatusCode::kUnavailable},
    {"OperationAborted", StatusCode::kAborted},
    {"PreconditionFailed", StatusCode::kFailedPrecondition},
    {"InvalidObjectState", StatusCode::kFailedPrecondition},
    {"InvalidRange", StatusCode::kOutOfRange},
    {"PermanentRedirect", StatusCode::kInvalidArgument},
    {"AuthorizationHeaderMalformed", StatusCode::kInvalidArgument},
    {"IllegalLocationConstraintException", StatusCode::kInvalidArgument},
};

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 301:
      return " Moved Permanently";
    case 307:
      return " Temporary Redirect";
    case 400:
      return " Bad Request";
    case 401:
      return " Unauthorized";
    case 403:
      return " Forbidden";
    case 404:
      return " Not Found";
    case 409:
      return " Conflict";
    case 412:
      return " Precondition Failed";
    case 416:
      return " Range Not Satisfiable";
    case 500:
      return " Internal Server Error";
    case 503:
      return " Service Unavailable";
    default:
      return "";
  }
}

StatusCode CodeForHttpStatus(int status) {
  // The same table every HTTP store uses; only the code of its Status matters here.
  return http::StatusFromHttp(status, "", "").code();
}

}  // namespace

std::optional<S3ErrorBody> ParseS3ErrorBody(std::string_view body) {
  if (body.find("<Error") == std::string_view::npos) return std::nullopt;
  auto root = ParseXml(body);
  if (!root || root->name != "Error") return std::nullopt;
  S3ErrorBody out;
  out.code = root->ChildText("Code");
  out.message = root->ChildText("Message");
  out.region = root->ChildText("Region");
  if (out.code.empty()) return std::nullopt;
  return out;
}

StatusCode StatusCodeForS3Error(std::string_view code, int http_status) {
  for (const auto& m : kCodes) {
    if (m.s3_code == code) return m.code;
  }
  return CodeForHttpStatus(http_status);
}

Status S3ErrorToStatus(const http::Response& response, std::string_view url) {
  const std::optional<S3ErrorBody> error = ParseS3ErrorBody(response.body);
  std::string message;
  if (error) {
    std::string text = error->message;
    if (text.size() > kMaxMessage) text = text.substr(0, kMaxMessage) + "…";
    message = text.empty() ? fmt::format("{}: {}", url, error->code)
                           : fmt::format("{}: {}: {}", url, error->code, text);
  } else {
    // HEAD replies have no body: the status is all there is.
    message = fmt::format("{}: HTTP {}{}", url, response.status, ReasonPhrase(response.status));
  }
  // A request sent to the wrong region says which one the bucket lives in.
  std::string region(response.headers.Get("x-amz-bucket-region").value_or(""));
  if (region.empty() && error) region = error->region;
  if (!region.empty() && (response.status == 301 || response.status == 400 ||
                          (error && (error->code == "PermanentRedirect" ||
                                     error->code == "AuthorizationHeaderMalformed")))) {
    message += fmt::format(" (the bucket is in region {}: set AWS_REGION={})", region, region);
  }
  StatusCode code = StatusCodeForS3Error(error ? error->code : "", response.status);
  if (code == StatusCode::kOk) code = StatusCode::kUnknown;
  return Status(code, std::move(message));
}

}  // namespace ferry::internal_s3
