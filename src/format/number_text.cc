// Python's canonical text for arbitrary-precision numbers: str(int(text)) for str_int columns
// and str(Decimal(text)) for str_decimal columns (General Decimal Arithmetic to-sci-string).
#include <cctype>

#include "format/codecs.h"

namespace ferry::internal_format {
namespace {

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Digits with Python's optional single underscores between them; nullopt otherwise.
std::optional<std::string> DigitsWithUnderscores(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::string digits;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 == s.size() || s[i + 1] == '_') return std::nullopt;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
    digits += s[i];
  }
  return digits;
}

std::string StripLeadingZeros(std::string digits) {
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return "0";
  return digits.substr(first);
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<std::string> CanonicalIntText(std::string_view text) {
  std::string_view s = TrimSpace(text);
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  auto digits = DigitsWithUnderscores(s);
  if (!digits) return std::nullopt;
  std::string out = StripLeadingZeros(std::move(*digits));
  if (negative && out != "0") out.insert(out.begin(), '-');
  return out;
}

std::optional<std::string> CanonicalDecimalText(std::string_view text) {
  std::string_view s = TrimSpace(text);
  std::string sign;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    if (s.front() == '-') sign = "-";
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  if (EqualsIgnoreCase(s, "inf") || EqualsIgnoreCase(s, "infinity")) return sign + "Infinity";
  // NaN and sNaN carry optional diagnostic digits, printed without leading zeros.
  for (std::string_view nan : {std::string_view("snan"), std::string_view("nan")}) {
    if (s.size() >= nan.size() && EqualsIgnoreCase(s.substr(0, nan.size()), nan)) {
      std::string_view payload = s.substr(nan.size());
      std::string out = sign + (nan.size() == 4 ? "sNaN" : "NaN");
      if (payload.empty()) return out;
      auto digits = DigitsWithUnderscores(payload);
      if (!digits) return std::nullopt;
      std::string stripped = StripLeadingZeros(std::move(*digits));
      if (stripped != "0") out += stripped;
      return out;
    }
  }

  // coefficient [. fraction] [e exponent]
  std::string_view mantissa = s;
  std::string_view exponent_text;
  if (const size_t e = s.find_first_of("eE"); e != std::string_view::npos) {
    mantissa = s.substr(0, e);
    exponent_text = s.substr(e + 1);
    if (exponent_text.empty()) return std::nullopt;
  }
  std::string_view int_part = mantissa, frac_part;
  if (const size_t dot = mantissa.find('.'); dot != std::string_view::npos) {
    int_part = mantissa.substr(0, dot);
    frac_part = mantissa.substr(dot + 1);
  }
  if (int_part.empty() && frac_part.empty()) return std::nullopt;
  std::string digits;
  if (!int_part.empty()) {
    auto d = DigitsWithUnderscores(int_part);
    if (!d) return std::nullopt;
    digits += *d;
  }
  if (!frac_part.empty()) {
    auto d = DigitsWithUnderscores(frac_part);
    if (!d) return std::nullopt;
    digits += *d;
  }
  // The exponent may be arbitrarily long in Python; 18 digits is far beyond any real data.
  long long exponent = 0;
  if (!exponent_text.empty()) {
    bool exp_negative = false;
    if (exponent_text.front() == '+' || exponent_text.front() == '-') {
      exp_negative = exponent_text.front() == '-';
      exponent_text.remove_prefix(1);
    }
    auto d = DigitsWithUnderscores(exponent_text);
    if (!d) return std::nullopt;
    const std::string e = StripLeadingZeros(std::move(*d));
    if (e.size() > 18) return std::nullopt;
    exponent = std::stoll(e);
    if (exp_negative) exponent = -exponent;
  }
  exponent -=
      static_cast<long long>(frac_part.empty() ? 0 : DigitsWithUnderscores(frac_part)->size());
  const std::string coefficient = StripLeadingZeros(std::move(digits));

  // to-sci-string (Python's Decimal.__str__ without engineering notation).
  const long long n = static_cast<long long>(coefficient.size());
  const long long leftdigits = exponent + n;
  const long long dotplace = (exponent <= 0 && leftdigits > -6) ? leftdigits : 1;
  std::string out = sign;
  if (dotplace <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-dotplace), '0');
    out += coefficient;
  } else if (dotplace >= n) {
    out += coefficient;
    out.append(static_cast<size_t>(dotplace - n), '0');
  } else {
    out.append(coefficient, 0, static_cast<size_t>(dotplace));
    out += '.';
    out.append(coefficient, static_cast<size_t>(dotplace));
  }
  if (leftdigits != dotplace) {
    const long long e = leftdigits - dotplace;
    out += 'E';
    out += e < 0 ? '-' : '+';
    out += std::to_string(e < 0 ? -e : e);
  }
  return out;
}

}  // namespace ferry::internal_format
