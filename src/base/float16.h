// IEEE-754 binary16 conversions, done in software so that results do not depend on the CPU:
// widening is exact; narrowing rounds to nearest-even, overflows to +-inf and keeps NaN quiet,
// as numpy does when the reference writer stores a float16 column.
#pragma once

#include <cstdint>

namespace ferry {

double HalfToDouble(uint16_t bits);
uint16_t DoubleToHalf(double value);

}  // namespace ferry
