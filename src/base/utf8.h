// UTF-8 validation and decoding (strict: no overlongs, no surrogates, nothing above U+10FFFF),
// matching Python's strict `bytes.decode("utf-8")`.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace ferry {

/// Byte offset of the first invalid sequence, or nullopt when `s` is valid UTF-8.
std::optional<size_t> FindInvalidUtf8(std::string_view s);

inline bool IsValidUtf8(std::string_view s) { return !FindInvalidUtf8(s).has_value(); }

/// Decodes one code point at `*pos` and advances `*pos`. \pre the text is valid UTF-8.
char32_t NextCodePoint(std::string_view s, size_t* pos);

}  // namespace ferry
