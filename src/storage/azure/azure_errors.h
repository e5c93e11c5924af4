// Azure Blob error responses -> ferry::Status.
//
// The service answers an error with an HTTP status and, except for HEAD, an XML body
// <Error><Code>BlobNotFound</Code><Message>The specified blob does not exist.\nRequestId:...
// </Message></Error>; the same code is in the x-ms-error-code header (the only place a HEAD
// error carries it). The code is what decides the Status code; the HTTP status decides when
// there is no code or the code is not one we know:
//
//   BlobNotFound, ContainerNotFound, ResourceNotFound, 404      kNotFound
//   AuthenticationFailed, NoAuthenticationInformation,
//     InvalidAuthenticationInfo, 401                            kUnauthenticated (who you are)
//   AuthorizationFailure, AuthorizationPermissionMismatch,
//     AuthorizationSourceIPMismatch, ..., 403                   kPermissionDenied (what you may)
//   AuthorizationFailure with "Server failed to authenticate"   kUnauthenticated (how Azurite
//     as its message                                            says "bad signature"; a HEAD
//                                                               has no message: the store
//                                                               asks again with a GET)
//   ServerBusy, OperationTimedOut, InternalError, 408, 429, 5xx kUnavailable (retried)
//   ConditionNotMet, 412                                        kFailedPrecondition
//   InvalidRange, 416                                           kOutOfRange
//   BlobAlreadyExists, ContainerAlreadyExists                   kAlreadyExists
//   other 400                                                   kInvalidArgument
//
// The message is "<redacted URL>: <Code>: <first line of Message>" (the rest of Message is a
// request id and a time; AuthenticationErrorDetail, which quotes the request's signature, is
// never copied).
//
// Thread-safety: reentrant.
#pragma once

#include <string>
#include <string_view>

#include "ferry/status.h"
#include "storage/http/http_types.h"

namespace ferry::internal_azure {

/// Maps an error response (status >= 300) to a Status naming `url`, which must already be
/// redacted.
Status AzureErrorToStatus(const http::Response& response, std::string_view url);

/// The error code of a response: <Code> of its XML body, else the x-ms-error-code header, else "".
std::string AzureErrorCodeOf(const http::Response& response);

/// The Status code for an Azure error code, with the HTTP status as the fallback.
StatusCode AzureErrorCode(std::string_view error_code, int http_status);

}  // namespace ferry::internal_azure
