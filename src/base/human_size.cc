#include "base/human_size.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>

#include "base/int128.h"

namespace ferry {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

Status NotASize(std::string_view text, std::string_view why) {
  return InvalidArgumentError(
      fmt::format("'{}' is not a size: {} (expected bytes or a number "
                  "with b, kb, mb, gb, tb, pb, eb, zb or yb)",
                  text, why));
}

}  // namespace

Result<uint64_t> ParseHumanSize(std::string_view text) {
  std::string_view s = Trim(text);
  // Split into number and alphabetic suffix.
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  std::string_view number = s.substr(0, i);
  std::string suffix;
  for (char c : s.substr(i))
    suffix += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (number.empty()) return NotASize(text, "no number");

  static constexpr std::array<std::string_view, 9> kSuffixes = {"b",  "kb", "mb", "gb", "tb",
                                                                "pb", "eb", "zb", "yb"};
  int power = -1;
  if (suffix.empty()) {
    power = 0;
  } else {
    for (size_t k = 0; k < kSuffixes.size(); ++k) {
      if (suffix == kSuffixes[k]) power = static_cast<int>(k);
    }
  }
  if (power < 0) return NotASize(text, fmt::format("unknown suffix '{}'", suffix));

  const size_t dot = number.find('.');
  const bool fractional = dot != std::string_view::npos;
  if (fractional) {
    // The reference only takes a fraction in front of a multi-letter suffix ("1.5kb").
    if (power == 0) return NotASize(text, "a byte count must be a whole number");
    if (number.find('.', dot + 1) != std::string_view::npos || number.size() == 1) {
      return NotASize(text, "malformed number");
    }
  }

  // Integer part, exactly (u64 with overflow checks).
  const std::string_view int_part = number.substr(0, fractional ? dot : number.size());
  UInt128 whole = 0;
  for (char c : int_part) {
    whole = whole * 10 + static_cast<unsigned>(c - '0');
    if (whole > UINT64_MAX) return NotASize(text, "too large");
  }
  UInt128 scale = 1;
  for (int k = 0; k < power; ++k) scale *= 1024;
  UInt128 value = whole * scale;
  if (fractional) {
    // Fraction digits times the scale, truncated: exact for any number of digits we accept.
    const std::string_view frac = number.substr(dot + 1);
    if (frac.size() > 30) return NotASize(text, "too many fraction digits");
    UInt128 numerator = 0, denominator = 1;
    for (char c : frac) {
      numerator = numerator * 10 + static_cast<unsigned>(c - '0');
      denominator *= 10;
    }
    // scale <= 1024^8 = 2^80 and numerator < 10^30 ~ 2^100 would overflow 128 bits: split.
    value += (numerator / denominator) * scale +
             static_cast<UInt128>(static_cast<long double>(numerator % denominator) *
                                  static_cast<long double>(scale) /
                                  static_cast<long double>(denominator));
  }
  if (value > UINT64_MAX) return NotASize(text, "too large");
  return static_cast<uint64_t>(value);
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr std::array<std::string_view, 7> kUnits = {"B",   "KiB", "MiB", "GiB",
                                                             "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  // 1023.95 and up would print as "1024.0": move to the next unit instead.
  while (v >= 1023.95 && unit + 1 < kUnits.size()) {
    v /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

}  // namespace ferry
