#include "storage/azure/azure_errors.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace ferry::internal_azure {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::string_view kBlobUrl = "https://myaccount.blob.core.windows.net/data/a.bin";

http::Response Xml(int status, std::string body) {
  http::Response r;
  r.status = status;
  r.headers.Set("Content-Type", "application/xml");
  r.body = std::move(body);
  return r;
}

// The service's bodies start with a UTF-8 byte order mark and put a request id and a time on
// the lines after the message.
std::string AzureError(std::string_view code, std::string_view message,
                       std::string_view extra = "") {
  return fmt::format(
      "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{}</Code><Message>{}\n"
      "RequestId:2d0c1ec4-901e-0050-5b5a-6a1b39000000\nTime:2025-01-07T12:34:56.7890123Z"
      "</Message>{}</Error>",
      code, message, extra);
}

TEST(AzureErrorToStatus, MapsServiceErrorBodies) {
  struct Case {
    int status;
    const char* code;
    const char* message;
    StatusCode expected;
  };
  const Case cases[] = {
      {404, "BlobNotFound", "The specified blob does not exist.", StatusCode::kNotFound},
      {404, "ContainerNotFound", "The specified container does not exist.", StatusCode::kNotFound},
      {403, "AuthenticationFailed",
       "Server failed to authenticate the request. Make sure the value of Authorization header is "
       "formed correctly including the signature.",
       StatusCode::kUnauthenticated},
      {403, "AuthorizationPermissionMismatch",
       "This request is not authorized to perform this operation using this permission.",
       StatusCode::kPermissionDenied},
      {403, "AuthorizationFailure", "This request is not authorized to perform this operation.",
       StatusCode::kPermissionDenied},
      {401, "NoAuthenticationInformation",
       "Server failed to authenticate the request. Please refer to the information in the "
       "www-authenticate header.",
       StatusCode::kUnauthenticated},
      {503, "ServerBusy", "Operations per second is over the account limit.",
       StatusCode::kUnavailable},
      {500, "OperationTimedOut", "Operation could not be completed within the specified time.",
       StatusCode::kUnavailable},
      {500, "InternalError", "The server encountered an internal error. Please retry the request.",
       StatusCode::kUnavailable},
      {412, "ConditionNotMet",
       "The condition specified using HTTP conditional header(s) is not met.",
       StatusCode::kFailedPrecondition},
      {416, "InvalidRange", "The range specified is invalid for the current size of the resource.",
       StatusCode::kOutOfRange},
      {409, "BlobAlreadyExists", "The specified blob already exists.", StatusCode::kAlreadyExists},
      {400, "InvalidBlockList", "The specified block list is invalid.",
       StatusCode::kInvalidArgument},
      {409, "LeaseIdMissing",
       "There is currently a lease on the blob and no lease ID was specified in the request.",
       StatusCode::kFailedPrecondition},  // an unlisted code falls back to the HTTP status
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.code);
    const Status s = AzureErrorToStatus(Xml(c.status, AzureError(c.code, c.message)), kBlobUrl);
    EXPECT_EQ(s.code(), c.expected);
    EXPECT_EQ(s.message(), fmt::format("{}: {}: {}", kBlobUrl, c.code, c.message));
  }
}

TEST(AzureErrorToStatus, NeverCopiesTheAuthenticationDetail) {
  // The detail quotes the request's signature and the server's string to sign.
  const std::string body =
      AzureError("AuthenticationFailed", "Server failed to authenticate the request.",
                 "<AuthenticationErrorDetail>The MAC signature found in the HTTP request "
                 "'Ergtzcit5hECO3kWPJeL9ulchOZV4h2QLisM3Vg6yC4=' is not the same as any computed "
                 "signature.</AuthenticationErrorDetail>");
  const Status s = AzureErrorToStatus(Xml(403, body), kBlobUrl);
  EXPECT_EQ(s.code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(s.message(), Not(HasSubstr("Ergtzcit5")));
  EXPECT_THAT(s.message(), Not(HasSubstr("RequestId")));
}

TEST(AzureErrorToStatus, HeadErrorsCarryTheCodeInAHeader) {
  http::Response r;
  r.status = 404;
  r.headers.Set("x-ms-error-code", "BlobNotFound");
  Status s = AzureErrorToStatus(r, kBlobUrl);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), fmt::format("{}: BlobNotFound (HTTP 404)", kBlobUrl));
  EXPECT_EQ(AzureErrorCodeOf(r), "BlobNotFound");

  r.status = 403;
  r.headers.Set("x-ms-error-code", "AuthenticationFailed");
  EXPECT_EQ(AzureErrorToStatus(r, kBlobUrl).code(), StatusCode::kUnauthenticated);
  r.headers.Set("x-ms-error-code", "AuthorizationPermissionMismatch");
  EXPECT_EQ(AzureErrorToStatus(r, kBlobUrl).code(), StatusCode::kPermissionDenied);
}

// What Azurite 3.35 answers (whitespace and XML declaration differ from the service's).
TEST(AzureErrorToStatus, AzuriteBody) {
  const Status s = AzureErrorToStatus(
      Xml(404,
          "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<Error>\n  "
          "<Code>ContainerNotFound</Code>\n  <Message>The specified container does not exist.\n"
          "RequestId:6f1a4b7e-2a0d-4d8c-9a51-0c3e8e2c1d11\nTime:2025-01-07T12:34:56.789Z"
          "</Message>\n</Error>"),
      kBlobUrl);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(
      s.message(),
      fmt::format("{}: ContainerNotFound: The specified container does not exist.", kBlobUrl));
}

TEST(AzureErrorToStatus, AzuriteBadSignatureIsUnauthenticated) {
  // Azurite 3.35's answer to a wrong account key (the service says AuthenticationFailed).
  const Status s = AzureErrorToStatus(
      Xml(403,
          "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<Error>\n  "
          "<Code>AuthorizationFailure</Code>\n  <Message>Server failed to authenticate the "
          "request. "
          "Make sure the value of the Authorization header is formed correctly including the "
          "signature.\nRequestId:0\nTime:2025-01-07T12:34:56.789Z</Message>\n</Error>"),
      kBlobUrl);
  EXPECT_EQ(s.code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(s.message(), HasSubstr("AuthorizationFailure: Server failed to authenticate"));
}

TEST(AzureErrorToStatus, FallsBackToTheHttpStatus) {
  http::Response html;
  html.status = 502;
  html.body = "<html><body>Bad Gateway</body></html>";
  Status s = AzureErrorToStatus(html, kBlobUrl);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), fmt::format("{}: HTTP 502", kBlobUrl));

  http::Response empty;
  for (auto [status, code] : {std::pair{404, StatusCode::kNotFound},
                              {401, StatusCode::kUnauthenticated},
                              {403, StatusCode::kPermissionDenied},
                              {412, StatusCode::kFailedPrecondition},
                              {416, StatusCode::kOutOfRange},
                              {429, StatusCode::kUnavailable},
                              {503, StatusCode::kUnavailable},
                              {400, StatusCode::kInvalidArgument},
                              {418, StatusCode::kUnknown},
                              {304, StatusCode::kUnknown}}) {
    empty.status = status;
    EXPECT_EQ(AzureErrorToStatus(empty, kBlobUrl).code(), code) << status;
  }
  EXPECT_EQ(AzureErrorCodeOf(empty), "");
}

}  // namespace
}  // namespace ferry::internal_azure
