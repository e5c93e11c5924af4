// JSON Web Tokens (RFC 7519) as cloud identity services use them: a client signs an assertion
// with its private key (RS256: RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 §3.3) and trades it for
// an access token - an Azure service principal's certificate, a Google service account's key.
// Tokens a service issues are read, never verified: only the claims that say who and until
// when, for messages and `ferry doctor`.
//
// Errors never quote a key or a token; they name where the key came from.
//
// Thread-safety: reentrant.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ferry/result.h"

namespace ferry::internal_storage {

/// base64url(header).base64url(claims).base64url(RS256 signature), signed with the RSA private
/// key in `private_key_pem` (PKCS#8 "PRIVATE KEY" or PKCS#1 "RSA PRIVATE KEY"; other PEM blocks,
/// such as a certificate in the same file, are skipped). `key_source` names the key in errors.
Result<std::string> SignJwtRs256(const nlohmann::json& header, const nlohmann::json& claims,
                                 std::string_view private_key_pem, std::string_view key_source);

/// The claims (the middle part) of a JWT, without checking its signature. kInvalidArgument for
/// anything that is not three base64url parts with a JSON object in the middle.
Result<nlohmann::json> UnverifiedJwtClaims(std::string_view token);

}  // namespace ferry::internal_storage
