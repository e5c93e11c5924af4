// OAuth 2.0 access tokens, as the token endpoints of Microsoft Entra ID and Google issue them:
// the credentials of a bearer-token store (Azure Blob, GCS), kept current by
// RefreshingCredentials (storage/refreshing_credentials.h).
//
// Thread-safety: values and reentrant functions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "ferry/result.h"
#include "storage/http/http_types.h"
#include "storage/http/transport.h"
#include "storage/refreshing_credentials.h"

namespace ferry::internal_storage {

struct AccessToken {
  std::string access_token;
  std::optional<std::chrono::system_clock::time_point> expiration;

  bool operator==(const AccessToken&) const = default;
};

using AccessTokenProvider = RefreshingCredentials<AccessToken>;

/// The token in a token endpoint's reply: access_token, and its life as expires_in (seconds from
/// `now`, a number or a string of digits, as metadata services send it) or else expires_on
/// (seconds since 1970). kDataLoss, prefixed by `context`, for a reply without both.
Result<AccessToken> ParseAccessTokenReply(std::string_view body,
                                          std::chrono::system_clock::time_point now,
                                          std::string_view context);

/// An OAuth error reply's "error" and the first line of its "error_description" (or "message"),
/// joined by ": "; "" when the body is not such a reply. These never echo the client's secret.
std::string OAuthErrorDetail(std::string_view body);

/// A refusal by a token endpoint, with OAuthErrorDetail as its detail
/// (http::EndpointReplyError).
Status TokenEndpointError(const http::Response& reply, std::string_view context,
                          std::string_view hint);

/// POSTs the form `body` to the token endpoint `url` (5 s to connect, 30 s in all), with
/// `headers` besides the form's (an Authorization: Basic for client_secret_basic), and returns
/// the reply's body; a refusal is TokenEndpointError with `hint`, and every error is prefixed by
/// `context`. `transport` null: http::DefaultTransport().
Result<std::string> PostTokenForm(const std::string& url, const std::string& body,
                                  std::string_view context, std::string_view hint,
                                  http::Transport* transport = nullptr,
                                  const http::Headers& headers = {});

}  // namespace ferry::internal_storage
