// Python's text forms of a float, which MDS stores verbatim (str_float columns, json payloads,
// index files) and which a byte-compatible writer must reproduce exactly.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ferry {

/// Python `repr(float)`: the shortest digits that round-trip; positional notation for
/// decimal exponents -4 <= e < 16 (always with a digit after the point), else scientific with a
/// signed exponent of at least two digits ("1e-05", "1.5e+16"); "nan", "inf", "-inf", "-0.0".
std::string FormatPythonFloat(double value);

/// Appends FormatPythonFloat(value) to `out` without a temporary string.
void AppendPythonFloat(std::string& out, double value);

/// Python `float(text)` for the forms a writer can produce and a user plausibly typed: optional
/// surrounding whitespace, sign, decimal or exponent notation, underscores between digits,
/// "nan"/"inf"/"infinity" in any case. nullopt when the text is not a float.
std::optional<double> ParsePythonFloat(std::string_view text);

}  // namespace ferry
