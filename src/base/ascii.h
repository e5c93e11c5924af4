// ASCII text as protocols and configuration files write it (HTTP headers, signatures, INI files,
// connection strings, sizes in listings): byte-wise and independent of the C locale, which the
// <cctype> functions consult. Python sets LC_CTYPE from the environment at start-up; under a
// single-byte locale such as Latin-1, std::isspace(0xA0) and std::tolower(0xC9) change bytes a
// signature covers. Bytes >= 0x80 pass through every function here unchanged.
//
// Thread-safety: reentrant functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ferry {

/// ' ', '\t', '\n', '\v', '\f' or '\r'.
constexpr bool IsAsciiWhitespace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/// 'A'-'Z' lowered; every other byte as it is.
std::string AsciiLower(std::string_view text);

/// `text` without leading and trailing whitespace.
std::string_view TrimAsciiWhitespace(std::string_view text);

/// Trimmed, with every inner run of whitespace replaced by one space: the "Trimall" of SigV4
/// canonical header values, and the form INI section names are compared in.
std::string CollapseAsciiWhitespace(std::string_view text);

/// The whole of `text` as a decimal number: digits only (no sign, blank or "0x") and nothing
/// after them; nullopt for anything else, the empty text, or a value above 2^64 - 1.
std::optional<uint64_t> ParseUint(std::string_view text);

}  // namespace ferry
