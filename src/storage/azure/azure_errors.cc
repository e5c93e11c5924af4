#include "storage/azure/azure_errors.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "storage/http/resumable_get.h"
#include "storage/xml/xml_tree.h"

namespace ferry::internal_azure {
namespace {

bool In(std::string_view code, std::initializer_list<std::string_view> codes) {
  for (std::string_view c : codes) {
    if (code == c) return true;
  }
  return false;
}

std::string_view FirstLine(std::string_view text) {
  text = text.substr(0, text.find_first_of("\r\n"));
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

}  // namespace

StatusCode AzureErrorCode(std::string_view code, int http_status) {
  if (In(code, {"BlobNotFound", "ContainerNotFound", "ResourceNotFound"})) {
    return StatusCode::kNotFound;
  }
  // Authentication: the request's identity did not check out (wrong key, expired or malformed
  // SAS, no credentials at all). Authorization: the identity is fine but may not do this.
  if (In(code,
         {"AuthenticationFailed", "NoAuthenticationInformation", "InvalidAuthenticationInfo"})) {
    return StatusCode::kUnauthenticated;
  }
  if (In(code, {"AuthorizationFailure", "AuthorizationPermissionMismatch",
                "AuthorizationSourceIPMismatch", "AuthorizationProtocolMismatch",
                "AuthorizationResourceTypeMismatch", "AuthorizationServiceMismatch",
                "InsufficientAccountPermissions", "AccountIsDisabled",
                "KeyBasedAuthenticationNotPermitted"})) {
    return StatusCode::kPermissionDenied;
  }
  if (In(code, {"ServerBusy", "OperationTimedOut", "InternalError"})) {
    return StatusCode::kUnavailable;
  }
  if (In(code, {"ConditionNotMet"})) return StatusCode::kFailedPrecondition;
  if (In(code, {"InvalidRange"})) return StatusCode::kOutOfRange;
  if (In(code, {"BlobAlreadyExists", "ContainerAlreadyExists"})) {
    return StatusCode::kAlreadyExists;
  }
  if (In(code, {"InvalidBlockList", "InvalidBlockId", "InvalidBlobOrBlock", "InvalidResourceName",
                "InvalidHeaderValue", "InvalidQueryParameterValue", "MissingRequiredHeader",
                "RequestBodyTooLarge", "InvalidUri"})) {
    return StatusCode::kInvalidArgument;
  }
  // Azure's conflicts (a lease, a blob being copied) are states to change first.
  if (http_status == 409) return StatusCode::kFailedPrecondition;
  return http::StatusCodeFromHttp(http_status);
}

namespace {

// <Code> and the first line of <Message> from an XML error body; empty when there is none. A body
// that is not the XML we expect (a proxy's HTML page, say) yields nothing.
std::pair<std::string, std::string> ParseErrorBody(std::string_view body) {
  if (body.empty()) return {};
  auto root = ParseXml(body);
  if (!root || root->name != "Error") return {};
  return {root->ChildText("Code"), std::string(FirstLine(root->ChildText("Message")))};
}

}  // namespace

std::string AzureErrorCodeOf(const http::Response& response) {
  std::string code = ParseErrorBody(response.body).first;
  if (code.empty()) {
    if (auto header = response.headers.Get("x-ms-error-code")) code = std::string(*header);
  }
  return code;
}

Status AzureErrorToStatus(const http::Response& response, std::string_view url) {
  auto [code, message] = ParseErrorBody(response.body);
  if (code.empty()) {
    if (auto header = response.headers.Get("x-ms-error-code")) code = std::string(*header);
  }
  StatusCode status_code = AzureErrorCode(code, response.status);
  // Azurite answers a bad signature, an expired SAS or a SAS for another container with
  // AuthorizationFailure and the service's "Server failed to authenticate the request" message;
  // the service itself says AuthenticationFailed for those, and its own AuthorizationFailure
  // reads "This request is not authorized ...". The message tells the two apart.
  if (code == "AuthorizationFailure" && message.starts_with("Server failed to authenticate")) {
    status_code = StatusCode::kUnauthenticated;
  }
  std::string text;
  if (code.empty()) {
    text = fmt::format("{}: HTTP {}", url, response.status);
  } else if (message.empty()) {
    text = fmt::format("{}: {} (HTTP {})", url, code, response.status);
  } else {
    text = fmt::format("{}: {}: {}", url, code, message);
  }
  // A 3xx (never expected: redirects are not followed) must still be an error.
  return Status(status_code == StatusCode::kOk ? StatusCode::kUnknown : status_code,
                std::move(text));
}

}  // namespace ferry::internal_azure
