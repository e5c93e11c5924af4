// Percent-encoding of URL components (RFC 3986 section 2.1), one spelling for every store.
//
// SigV4 signs the path and query exactly as UriEncode in its specification writes them, and
// Azure's Shared Key signs the path as sent; both want the RFC 3986 unreserved set kept
// (A-Z a-z 0-9 - . _ ~) and every other byte as %XX with uppercase hex. Encoding is byte-wise:
// UTF-8 text is encoded per byte, and the C locale plays no part.
//
// Thread-safety: reentrant functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferry::http {

/// Every byte but A-Z a-z 0-9 - . _ ~ (and '/', when `keep_slash`) as %XX, uppercase hex.
std::string PercentEncode(std::string_view text, bool keep_slash);

/// %XX escapes (either case) decoded; '+' stays '+'; a '%' without two hex digits after it is
/// kept as written.
std::string PercentDecode(std::string_view text);

/// As PercentDecode, and '+' decodes to a space: application/x-www-form-urlencoded, which S3
/// listings use for keys when asked for encoding-type=url.
std::string FormDecode(std::string_view text);

/// "name=value&name=value", each percent-encoded (nothing kept): an
/// application/x-www-form-urlencoded body, as STS and OAuth token endpoints take.
std::string FormEncode(const std::vector<std::pair<std::string_view, std::string_view>>& fields);

}  // namespace ferry::http
