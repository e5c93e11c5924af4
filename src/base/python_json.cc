#include "base/python_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "base/python_float.h"
#include "base/utf8.h"

namespace ferry {
namespace {

void AppendEscapedUnit(std::string& out, unsigned unit) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\u";
  out += kHex[(unit >> 12) & 0xF];
  out += kHex[(unit >> 8) & 0xF];
  out += kHex[(unit >> 4) & 0xF];
  out += kHex[unit & 0xF];
}

void Dump(std::string& out, const nlohmann::ordered_json& v, JsonKeyOrder order) {
  using Type = nlohmann::ordered_json::value_t;
  switch (v.type()) {
    case Type::null:
    case Type::discarded:
      out += "null";
      return;
    case Type::boolean:
      out += v.get<bool>() ? "true" : "false";
      return;
    case Type::number_integer:
      out += std::to_string(v.get<int64_t>());
      return;
    case Type::number_unsigned:
      out += std::to_string(v.get<uint64_t>());
      return;
    case Type::number_float:
      AppendPythonJsonFloat(out, v.get<double>());
      return;
    case Type::string:
      AppendPythonJsonString(out, v.get_ref<const std::string&>());
      return;
    case Type::binary:
      out += "null";
      return;
    case Type::array: {
      out += '[';
      bool first = true;
      for (const auto& item : v) {
        if (!first) out += ", ";
        first = false;
        Dump(out, item, order);
      }
      out += ']';
      return;
    }
    case Type::object: {
      std::vector<const std::string*> keys;
      keys.reserve(v.size());
      for (const auto& [key, unused] : v.items()) keys.push_back(&key);
      // Byte order of UTF-8 equals code point order, which is what Python sorts by.
      if (order == JsonKeyOrder::kSorted) {
        std::sort(keys.begin(), keys.end(), [](auto* a, auto* b) { return *a < *b; });
      }
      out += '{';
      bool first = true;
      for (const std::string* key : keys) {
        if (!first) out += ", ";
        first = false;
        AppendPythonJsonString(out, *key);
        out += ": ";
        Dump(out, v.at(*key), order);
      }
      out += '}';
      return;
    }
  }
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// True when `t` is exactly one JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool IsJsonNumber(std::string_view t) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t start = i;
    while (i < t.size() && IsDigit(t[i])) ++i;
    return i > start;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < t.size() && t[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == t.size();
}

// Python's text for each number beyond double range, by its ordinal among the numbers of the
// document, in text order (the order in which the parser reports them).
using Replacements = std::vector<std::pair<size_t, std::string>>;

// nlohmann refuses numbers that Python's json module reads: NaN, Infinity and -Infinity, and a
// number whose value overflows a double ("1E400", or an integer of 400 digits), where Python
// reads inf or keeps the exact integer. Such a token is overwritten in `text` by "0" padded
// with spaces, so that the parser accepts it and byte offsets in error messages stay right; the
// renderer writes Python's text in its place. Only whole tokens outside strings are touched, so
// no invalid text becomes valid.
Replacements ReplacePythonOnlyNumbers(std::string& text) {
  Replacements replacements;
  size_t ordinal = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '"') {  // skip the string, escaped quotes included
      ++i;
      while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
      ++i;
      continue;
    }
    bool special = false;
    // "-NaN" (and "--Infinity") must stay invalid: a '-' right before would sign the "0".
    const bool after_minus = i > 0 && text[i - 1] == '-';
    for (std::string_view word : {"NaN", "Infinity", "-Infinity"}) {
      if (!after_minus && std::string_view(text).substr(i, word.size()) == word) {
        replacements.emplace_back(ordinal++, std::string(word));
        text.replace(i, word.size(), "0" + std::string(word.size() - 1, ' '));
        i += word.size();
        special = true;
        break;
      }
    }
    if (special) continue;
    if (text[i] != '-' && !IsDigit(text[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && (IsDigit(text[end]) || text[end] == '-' || text[end] == '+' ||
                                 text[end] == '.' || text[end] == 'e' || text[end] == 'E')) {
      ++end;
    }
    const std::string_view token = std::string_view(text).substr(i, end - i);
    if (IsJsonNumber(token)) {
      // Python's float() of a JSON number: inf on overflow (and never nullopt for this grammar).
      const std::optional<double> value = ParsePythonFloat(token);
      if (value.has_value() && !std::isfinite(*value)) {
        std::string python;
        if (token.find_first_of(".eE") == std::string_view::npos) {
          python = token;  // an integer: Python keeps it exact, and JSON's form is canonical
        } else {
          AppendPythonJsonFloat(python, *value);
        }
        replacements.emplace_back(ordinal, std::move(python));
        text.replace(i, end - i, "0" + std::string(end - i - 1, ' '));
      }
      ++ordinal;
    }
    i = end;
  }
  return replacements;
}

// SAX handler that re-renders the event stream in Python's form. nlohmann reports integers
// that do not fit 64 bits as floats, but hands over the original token, which we keep.
class PythonJsonRenderer {
 public:
  explicit PythonJsonRenderer(Replacements replacements) : replacements_(std::move(replacements)) {}

  using number_integer_t = nlohmann::json::number_integer_t;
  using number_unsigned_t = nlohmann::json::number_unsigned_t;
  using number_float_t = nlohmann::json::number_float_t;
  using string_t = nlohmann::json::string_t;
  using binary_t = nlohmann::json::binary_t;

  std::string out;
  std::string error;

  bool null() {
    Value();
    out += "null";
    return true;
  }
  bool boolean(bool b) {
    Value();
    out += b ? "true" : "false";
    return true;
  }
  bool number_integer(number_integer_t v) {
    Value();
    if (!WroteReplacement()) out += std::to_string(v);
    return true;
  }
  bool number_unsigned(number_unsigned_t v) {
    Value();
    if (!WroteReplacement()) out += std::to_string(v);
    return true;
  }
  bool number_float(number_float_t v, const string_t& token) {
    Value();
    if (WroteReplacement()) return true;
    if (token.find_first_of(".eE") == string_t::npos) {
      // An integer too large for 64 bits: Python keeps it exact. JSON forbids leading zeros,
      // so the token is already canonical.
      out += token;
    } else {
      AppendPythonJsonFloat(out, v);
    }
    return true;
  }
  bool string(string_t& s) {
    Value();
    AppendPythonJsonString(out, s);
    return true;
  }
  bool binary(binary_t&) {
    error = "binary values are not JSON";
    return false;
  }
  bool start_object(std::size_t) {
    Value();
    out += '{';
    stack_.push_back({true, {}});
    return true;
  }
  bool key(string_t& k) {
    Frame& f = stack_.back();
    if (!f.keys.insert(k).second) {
      error = fmt::format("key '{}' appears twice in one object", k);
      return false;
    }
    if (f.keys.size() > 1) out += ", ";
    AppendPythonJsonString(out, k);
    out += ": ";
    expect_key_value_ = true;
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    out += '}';
    return true;
  }
  bool start_array(std::size_t) {
    Value();
    out += '[';
    stack_.push_back({false, {}});
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    out += ']';
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    error = fmt::format("not JSON at byte {}: {}", position, e.what());
    return false;
  }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    size_t items = 0;
  };
  // Writes the separator before an array item (object members get theirs in key()).
  void Value() {
    if (expect_key_value_) {
      expect_key_value_ = false;
      return;
    }
    if (!stack_.empty() && !stack_.back().object) {
      if (stack_.back().items++ > 0) out += ", ";
    }
  }
  // Writes Python's text for the current number when it was replaced before parsing.
  bool WroteReplacement() {
    const size_t ordinal = numbers_++;
    if (next_ == replacements_.size() || replacements_[next_].first != ordinal) return false;
    out += replacements_[next_++].second;
    return true;
  }
  std::vector<Frame> stack_;
  bool expect_key_value_ = false;
  Replacements replacements_;
  size_t next_ = 0;     // the first replacement not yet written
  size_t numbers_ = 0;  // numbers seen so far
};

}  // namespace

// Python renders non-finite floats as bare tokens (not valid strict JSON, but what it stores).
void AppendPythonJsonFloat(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v < 0 ? "-Infinity" : "Infinity";
  } else {
    AppendPythonFloat(out, v);
  }
}

void AppendPythonJsonString(std::string& out, std::string_view utf8) {
  out += '"';
  size_t pos = 0;
  while (pos < utf8.size()) {
    const unsigned char c = static_cast<unsigned char>(utf8[pos]);
    if (c >= 0x20 && c < 0x7F) {
      if (c == '"') {
        out += "\\\"";
      } else if (c == '\\') {
        out += "\\\\";
      } else {
        out += static_cast<char>(c);
      }
      ++pos;
      continue;
    }
    if (c < 0x80) {
      switch (c) {
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          AppendEscapedUnit(out, c);
          break;
      }
      ++pos;
      continue;
    }
    const char32_t cp = NextCodePoint(utf8, &pos);
    if (cp >= 0x10000) {
      const char32_t v = cp - 0x10000;
      AppendEscapedUnit(out, 0xD800 + (v >> 10));
      AppendEscapedUnit(out, 0xDC00 + (v & 0x3FF));
    } else {
      AppendEscapedUnit(out, cp);
    }
  }
  out += '"';
}

std::string DumpPythonJson(const nlohmann::ordered_json& value, JsonKeyOrder order) {
  std::string out;
  Dump(out, value, order);
  return out;
}

Result<std::string> NormalizeJsonText(std::string_view text) {
  std::string parsable(text);
  PythonJsonRenderer renderer(ReplacePythonOnlyNumbers(parsable));
  const bool ok =
      nlohmann::json::sax_parse(parsable, &renderer, nlohmann::json::input_format_t::json,
                                /*strict=*/true, /*ignore_comments=*/false);
  if (!ok) {
    return InvalidArgumentError(renderer.error.empty() ? "not JSON" : renderer.error);
  }
  return std::move(renderer.out);
}

Status ValidatePythonJson(std::string_view text) {
  std::string parsable(text);
  ReplacePythonOnlyNumbers(parsable);
  try {
    const nlohmann::json parsed = nlohmann::json::parse(parsable);
    (void)parsed;
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(fmt::format("not JSON: {}", e.what()));
  }
  return Status::Ok();
}

}  // namespace ferry
