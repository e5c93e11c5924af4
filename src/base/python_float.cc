#include "base/python_float.h"

#include <locale.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace ferry {

void AppendPythonFloat(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "nan";
    return;
  }
  if (std::isinf(value)) {
    out += value < 0 ? "-inf" : "inf";
    return;
  }
  // Shortest round-trip digits in scientific form, e.g. "-1.2345e+17" or "5e-324".
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  const bool negative = sci.front() == '-';
  if (negative) sci.remove_prefix(1);
  const size_t e_pos = sci.find('e');
  const std::string_view mantissa = sci.substr(0, e_pos);
  int exponent = 0;
  std::from_chars(sci.data() + e_pos + 1 + (sci[e_pos + 1] == '+' ? 1 : 0), sci.data() + sci.size(),
                  exponent);
  std::string digits;  // mantissa without the point
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }

  if (negative) out += '-';
  if (exponent >= -4 && exponent < 16) {
    const int point = exponent + 1;  // digits before the decimal point
    if (point <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-point), '0');
      out += digits;
    } else if (static_cast<size_t>(point) >= digits.size()) {
      out += digits;
      out.append(static_cast<size_t>(point) - digits.size(), '0');
      out += ".0";
    } else {
      out.append(digits, 0, static_cast<size_t>(point));
      out += '.';
      out.append(digits, static_cast<size_t>(point));
    }
    return;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += '.';
    out.append(digits, 1);
  }
  out += 'e';
  out += exponent < 0 ? '-' : '+';
  const int magnitude = std::abs(exponent);
  if (magnitude < 10) out += '0';
  out += std::to_string(magnitude);
}

std::string FormatPythonFloat(double value) {
  std::string out;
  AppendPythonFloat(out, value);
  return out;
}

std::optional<double> ParsePythonFloat(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  if (text.empty()) return std::nullopt;
  bool negative = false;
  std::string_view body = text;
  if (body.front() == '+' || body.front() == '-') {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  std::string lower;
  for (char c : body) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "nan") return negative ? -std::nan("") : std::nan("");
  if (lower == "inf" || lower == "infinity") {
    return negative ? -HUGE_VAL : HUGE_VAL;
  }
  // Python allows single underscores between digits; drop them after checking placement.
  std::string cleaned;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c == '_') {
      const bool ok = i > 0 && i + 1 < body.size() &&
                      std::isdigit(static_cast<unsigned char>(body[i - 1])) &&
                      std::isdigit(static_cast<unsigned char>(body[i + 1]));
      if (!ok) return std::nullopt;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != 'E' &&
        c != '+' && c != '-') {
      return std::nullopt;
    }
    cleaned += c;
  }
  if (cleaned.empty() || cleaned.front() == '+' || cleaned.front() == '-') return std::nullopt;
  double value = 0;
  const auto res = std::from_chars(cleaned.data(), cleaned.data() + cleaned.size(), value,
                                   std::chars_format::general);
  if (res.ec == std::errc::result_out_of_range) {
    // Python gives inf for overflow and 0.0 for underflow instead of failing.
    // strtod_l with the "C" locale: plain strtod would read "1.5" as 1 under a comma locale.
    static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", locale_t{});
    value = strtod_l(cleaned.c_str(), nullptr, c_locale);
  } else if (res.ec != std::errc() || res.ptr != cleaned.data() + cleaned.size()) {
    return std::nullopt;
  }
  return negative ? -value : value;
}

}  // namespace ferry
