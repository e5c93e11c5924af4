#include "format/shard_pattern.h"

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <regex>
#include <set>

namespace ferry::internal_format {
namespace {

using Names = std::vector<std::string>;

// braceexpand's letter ranges run through this alphabet, upper case first.
constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

Status TooMany(size_t n) {
  return InvalidArgumentError(fmt::format(
      "a shard pattern expands to {} names or more; at most {} are read", n, kMaxPatternNames));
}

Status Unbalanced(std::string_view pattern) {
  return InvalidArgumentError(fmt::format("unbalanced braces in '{}'", pattern));
}

// Every concatenation of one name from each item, the first item varying slowest.
Result<Names> Product(const std::vector<Names>& items) {
  Names out = {""};
  for (const Names& item : items) {
    if (out.size() * item.size() > kMaxPatternNames) return TooMany(out.size() * item.size());
    Names next;
    next.reserve(out.size() * item.size());
    for (const std::string& head : out) {
      for (const std::string& tail : item) next.push_back(head + tail);
    }
    out = std::move(next);
  }
  return out;
}

uint64_t Step(const std::string& text) {
  // braceexpand takes a step of 0 for 1. A step past any range gives its first name alone.
  if (text.size() > 9) return kMaxPatternNames;
  const uint64_t step = text.empty() ? 1 : std::stoull(text);
  return step == 0 ? 1 : step;
}

Result<Names> IntRange(const std::string& left, const std::string& right, const std::string& incr) {
  if (left.size() > 18 || right.size() > 18 || incr.size() > 18) return TooMany(kMaxPatternNames);
  auto padded = [](const std::string& s) {
    return s != "0" && s != "-0" && (s.starts_with('0') || s.starts_with("-0"));
  };
  const size_t width = padded(left) || padded(right) ? std::max(left.size(), right.size()) : 0;
  const int64_t start = std::stoll(left);
  const int64_t end = std::stoll(right);
  const uint64_t step = Step(incr);
  const uint64_t span = static_cast<uint64_t>(start < end ? end - start : start - end);
  if (span / step + 1 > kMaxPatternNames) return TooMany(span / step + 1);
  Names out;
  for (uint64_t i = 0; i * step <= span; ++i) {
    const int64_t v = start < end ? start + static_cast<int64_t>(i * step)
                                  : start - static_cast<int64_t>(i * step);
    // Python's "%0Nd": the width counts the sign, and zeros go after it.
    out.push_back(v < 0 ? fmt::format("-{:0{}}", -v, width > 0 ? width - 1 : 0)
                        : fmt::format("{:0{}}", v, width));
  }
  return out;
}

Names CharRange(char left, char right, const std::string& incr) {
  const auto start = static_cast<int64_t>(kAlphabet.find(left));
  const auto end = static_cast<int64_t>(kAlphabet.find(right));
  const auto step = static_cast<int64_t>(Step(incr));
  Names out;
  for (int64_t i = start; start <= end ? i <= end : i >= end; i += start <= end ? step : -step) {
    out.emplace_back(1, kAlphabet[static_cast<size_t>(i)]);
  }
  return out;
}

Result<Names> Pattern(std::string_view p);

// The alternatives of "a,b,{c,d}", or nullopt when there is no comma at the top level (then the
// braces are not an expression).
std::optional<Result<Names>> Sequence(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  int depth = 0;
  for (size_t pos = 0; pos < s.size(); ++pos) {
    if (s[pos] == '\\') {
      ++pos;
    } else if (s[pos] == '{') {
      ++depth;
    } else if (s[pos] == '}') {
      --depth;
    } else if (s[pos] == ',' && depth == 0) {
      parts.push_back(s.substr(start, pos - start));
      start = pos + 1;
    }
  }
  if (depth != 0) return Result<Names>(Unbalanced(s));
  if (parts.empty()) return std::nullopt;
  parts.push_back(s.substr(start));
  Names out;
  for (std::string_view part : parts) {
    auto names = Pattern(part);
    if (!names) return Result<Names>(names.error());
    if (out.size() + names->size() > kMaxPatternNames) {
      return Result<Names>(TooMany(out.size() + names->size()));
    }
    out.insert(out.end(), names->begin(), names->end());
  }
  return Result<Names>(std::move(out));
}

// What the inside of a pair of braces expands to; nullopt when it is none of braceexpand's
// expressions (the braces are then kept).
std::optional<Result<Names>> Expression(std::string_view expr) {
  static const std::regex int_range(R"(^(-?\d+)\.\.(-?\d+)(?:\.\.-?(\d+))?$)");
  static const std::regex char_range(R"(^([A-Za-z])\.\.([A-Za-z])(?:\.\.-?(\d+))?$)");
  const std::string text(expr);
  std::smatch m;
  if (std::regex_match(text, m, int_range)) return IntRange(m[1], m[2], m[3]);
  if (std::regex_match(text, m, char_range)) {
    return Result<Names>(CharRange(m.str(1)[0], m.str(2)[0], m[3]));
  }
  return Sequence(expr);
}

Result<Names> Pattern(std::string_view p) {
  std::vector<Names> items;
  size_t start = 0;
  int depth = 0;
  for (size_t pos = 0; pos < p.size(); ++pos) {
    if (p[pos] == '\\') {
      ++pos;
    } else if (p[pos] == '{') {
      if (depth == 0 && pos > start) {
        items.push_back({std::string(p.substr(start, pos - start))});
        start = pos;
      }
      ++depth;
    } else if (p[pos] == '}' && --depth == 0) {
      const std::string_view expr = p.substr(start + 1, pos - start - 1);
      if (auto names = Expression(expr)) {
        if (!*names) return names->error();
        items.push_back(std::move(**names));
      } else {
        auto inner = Pattern(expr);
        if (!inner) return inner.error();
        items.push_back({"{"});
        items.push_back(std::move(*inner));
        items.push_back({"}"});
      }
      start = pos + 1;
    }
  }
  if (depth != 0) return Unbalanced(p);
  if (start < p.size()) items.push_back({std::string(p.substr(start))});
  return Product(items);
}

std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) ++i;
    out += s[i];
  }
  return out;
}

// The "::"-separated parts of `url`, not splitting inside an IPv6 host's brackets.
std::vector<std::string_view> ListParts(std::string_view url) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  int brackets = 0;
  for (size_t pos = 0; pos < url.size(); ++pos) {
    if (url[pos] == '[') ++brackets;
    if (url[pos] == ']' && brackets > 0) --brackets;
    if (brackets == 0 && url.substr(pos, 2) == "::") {
      parts.push_back(url.substr(start, pos - start));
      start = pos + 2;
      ++pos;
    }
  }
  parts.push_back(url.substr(start));
  return parts;
}

// Where the last path component of `part` starts: after its last '/' outside braces.
size_t NameStart(std::string_view part) {
  size_t name = 0;
  int depth = 0;
  for (size_t pos = 0; pos < part.size(); ++pos) {
    if (part[pos] == '\\') {
      ++pos;
    } else if (part[pos] == '{') {
      ++depth;
    } else if (part[pos] == '}' && depth > 0) {
      --depth;
    } else if (part[pos] == '/' && depth == 0) {
      name = pos + 1;
    }
  }
  return name;
}

// An unclosed brace counts: the pattern is then refused as unbalanced, not taken for a folder.
bool HasBraces(std::string_view s) {
  for (size_t pos = 0; pos < s.size(); ++pos) {
    if (s[pos] == '\\') {
      ++pos;
    } else if (s[pos] == '{') {
      return true;
    }
  }
  return false;
}

}  // namespace

Result<std::vector<std::string>> ExpandBraces(std::string_view pattern) {
  FERRY_ASSIGN_OR_RETURN(Names names, Pattern(pattern));
  for (std::string& name : names) name = Unescape(name);
  return names;
}

bool IsShardPattern(std::string_view url) {
  if (ListParts(url).size() > 1) return true;
  return HasBraces(url.substr(NameStart(url)));
}

Result<ShardSelection> ParseShardPattern(std::string_view url) {
  ShardSelection out;
  std::set<std::string> seen;
  for (std::string_view part : ListParts(url)) {
    const size_t name_start = NameStart(part);
    const std::string folder = Unescape(part.substr(0, name_start));
    if (HasBraces(part.substr(0, name_start))) {
      return InvalidArgumentError(fmt::format(
          "{}: braces in the folder part; a shard pattern names shards of one folder", url));
    }
    if (out.folder.empty()) out.folder = folder;
    if (folder != out.folder) {
      return InvalidArgumentError(
          fmt::format("{}: the shards are in more than one folder ({} and {}); ferry reads one "
                      "folder per stream (give each folder a Stream)",
                      url, out.folder, folder));
    }
    FERRY_ASSIGN_OR_RETURN(const Names names, ExpandBraces(part.substr(name_start)));
    for (const std::string& name : names) {
      if (name.empty() || name.find('/') != std::string::npos) {
        return InvalidArgumentError(
            fmt::format("{}: '{}' is not a shard name in the folder {}", url, name, out.folder));
      }
      if (!seen.insert(name).second) {
        return InvalidArgumentError(fmt::format(
            "{}: names the shard {} twice; each shard is read once an epoch (to weight a "
            "folder, give it a Stream with `repeat` or `proportion`)",
            url, name));
      }
      out.shards.push_back(name);
    }
  }
  if (out.folder.empty()) {
    return InvalidArgumentError(fmt::format("{}: no folder before the shard names", url));
  }
  return out;
}

}  // namespace ferry::internal_format
