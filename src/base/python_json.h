// JSON text exactly as Python's `json.dumps` writes it, which MDS stores byte for byte in
// index.json, in every shard's config block and in `json` columns:
//   - separators ", " and ": ", no indentation, no trailing newline;
//   - ensure_ascii: every character outside U+0020..U+007E becomes \uXXXX with lowercase hex
//     (a UTF-16 surrogate pair above U+FFFF); \" \\ \b \f \n \r \t where they apply;
//   - floats as Python repr (NaN, Infinity, -Infinity for the non-finite ones);
//   - keys in insertion order, or sorted by code point when asked (sort_keys=True).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ferry/result.h"

namespace ferry {

enum class JsonKeyOrder { kInsertion, kSorted };

/// Appends `utf8` as a quoted, ASCII-only JSON string. \pre `utf8` is valid UTF-8.
void AppendPythonJsonString(std::string& out, std::string_view utf8);

/// Appends a float as json.dumps writes it: Python's repr, or NaN / Infinity / -Infinity.
void AppendPythonJsonFloat(std::string& out, double value);

/// Python `json.dumps(value, sort_keys=...)`.
std::string DumpPythonJson(const nlohmann::ordered_json& value, JsonKeyOrder order);

/// Python `json.dumps(json.loads(text))`: re-renders any JSON text in Python's form, keeping
/// key order, integers of any size exactly, floats by value, and Python's NaN / Infinity /
/// -Infinity tokens. kInvalidArgument for text that is not JSON or holds one key twice in an
/// object (Python would silently keep the last one).
Result<std::string> NormalizeJsonText(std::string_view text);

/// OK when Python's `json.loads` would accept `text` (NaN / Infinity tokens, numbers of any size
/// and repeated keys included), else kInvalidArgument saying where it fails. Lone UTF-16
/// surrogate escapes, which Python accepts, are refused.
Status ValidatePythonJson(std::string_view text);

}  // namespace ferry
