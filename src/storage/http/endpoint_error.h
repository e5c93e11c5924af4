// The refusal of an identity or metadata endpoint (STS's siblings: a container credentials URL,
// IMDS, Entra's token endpoint, Google's) as a Status a caller can act on.
//
// Thread-safety: reentrant.
#pragma once

#include <string>
#include <string_view>

#include "ferry/result.h"
#include "storage/http/http_types.h"

namespace ferry::http {

/// "CONTEXT: HTTP STATUS: DETAIL HINT" with the code the status calls for: 401/403
/// kPermissionDenied, 404 kNotFound, 429 and 5xx kUnavailable, others kInvalidArgument.
/// `detail` empty: the body's first 200 characters, on one line. The caller makes sure that
/// neither holds a secret (a token endpoint's error body never echoes the client's).
Status EndpointReplyError(const Response& reply, std::string_view context,
                          std::string_view detail = {}, std::string_view hint = {});

}  // namespace ferry::http
