#include "base/float16.h"

#include <bit>
#include <cmath>

namespace ferry {

double HalfToDouble(uint16_t bits) {
  const bool negative = (bits & 0x8000u) != 0;
  const int exponent = (bits >> 10) & 0x1F;
  const int fraction = bits & 0x3FF;
  double magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(fraction), -24);  // subnormal
  } else if (exponent == 31) {
    magnitude = fraction == 0 ? HUGE_VAL : std::nan("");
  } else {
    magnitude = std::ldexp(static_cast<double>(fraction | 0x400), exponent - 25);
  }
  return negative ? -magnitude : magnitude;
}

uint16_t DoubleToHalf(double value) {
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 48) & 0x8000u);
  if (std::isnan(value)) return sign | 0x7E00u;  // the canonical quiet NaN
  const double a = std::fabs(value);
  if (std::isinf(a)) return sign | 0x7C00u;
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  // Unit in the last place of the half result: 2^(e-11) for normals, 2^-24 for subnormals.
  const int ulp_exp = e - 1 >= -14 ? e - 11 : -24;
  const double scaled = std::ldexp(a, -ulp_exp);  // exact: just an exponent change
  const double units = std::nearbyint(scaled);    // default rounding mode: nearest-even
  // Rebuild from the integer number of ulps (which may have carried into the next binade).
  const double rounded = std::ldexp(units, ulp_exp);
  if (rounded > 65504.0) return sign | 0x7C00u;  // past the largest half: +-inf
  if (rounded < std::ldexp(1.0, -14)) {
    return sign | static_cast<uint16_t>(units);  // subnormal: fraction = units of 2^-24
  }
  int re;
  const double m = std::frexp(rounded, &re);  // rounded = m * 2^re
  const uint16_t exponent_field = static_cast<uint16_t>(re - 1 + 15);
  const uint16_t fraction = static_cast<uint16_t>(std::ldexp(m, 11)) & 0x3FFu;
  return sign | static_cast<uint16_t>(exponent_field << 10) | fraction;
}

}  // namespace ferry
