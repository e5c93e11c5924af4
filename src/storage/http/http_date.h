// The dates object stores send and expect: the HTTP date of Last-Modified and x-ms-date, and
// the ISO 8601 times of S3 listings. Every store reads and writes them here.
//
// Parsing needs no locale (strptime's %a and %b follow LC_TIME, which a host process may set)
// and refuses years outside 1900-2200: the clock counts nanoseconds in 64 bits, and a hostile
// date far out would overflow it.
//
// Thread-safety: reentrant functions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace ferry::http {

/// An RFC 7231 IMF-fixdate, "Wed, 12 Oct 2009 17:50:00 GMT" (a one-digit day, as some servers
/// write it, is accepted too); nullopt when malformed or out of range.
std::optional<std::chrono::system_clock::time_point> ParseHttpDate(std::string_view text);

/// The IMF-fixdate of `time` (whole seconds, GMT).
std::string FormatHttpDate(std::chrono::system_clock::time_point time);

/// "2009-10-12T17:50:30.000Z": ISO 8601 in UTC ("Z" or "+00:00"), fractional seconds optional
/// and kept to the millisecond; nullopt when malformed or out of range.
std::optional<std::chrono::system_clock::time_point> ParseIso8601(std::string_view text);

}  // namespace ferry::http
