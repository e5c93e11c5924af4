#include "base/ascii.h"

#include <charconv>

namespace ferry {

std::string AsciiLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view TrimAsciiWhitespace(std::string_view text) {
  while (!text.empty() && IsAsciiWhitespace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsAsciiWhitespace(text.back())) text.remove_suffix(1);
  return text;
}

std::string CollapseAsciiWhitespace(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool gap = false;
  for (char c : TrimAsciiWhitespace(text)) {
    if (IsAsciiWhitespace(c)) {
      gap = true;
      continue;
    }
    if (gap) out += ' ';
    gap = false;
    out += c;
  }
  return out;
}

std::optional<uint64_t> ParseUint(std::string_view text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  // from_chars stops quietly at the first byte that is not a digit: the rest must be empty.
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

}  // namespace ferry
