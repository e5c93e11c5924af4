// Base64 (RFC 4648): the standard alphabet with padding, as Azure uses for keys, signatures and
// block ids, and the URL-safe alphabet without padding, as JSON Web Tokens use.
//
// Thread-safety: reentrant.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ferry {

/// Standard base64, with padding.
std::string Base64Encode(std::string_view bytes);
/// nullopt unless `text` is well-formed padded standard base64 (no whitespace).
std::optional<std::string> Base64Decode(std::string_view text);

/// base64url without padding (RFC 7515 §2).
std::string Base64UrlEncode(std::string_view bytes);
/// nullopt unless `text` is base64url, with or without padding.
std::optional<std::string> Base64UrlDecode(std::string_view text);

}  // namespace ferry
