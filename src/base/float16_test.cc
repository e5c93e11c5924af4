#include "base/float16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

namespace ferry {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool IsHalfNan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0; }

// The value of a half from its fields, written independently of the code under test with
// integer arithmetic: (-1)^s * m * 2^(e - 25) with the implicit bit, or m * 2^-24 for subnormals.
double ReferenceHalfValue(uint16_t h) {
  const int e = (h >> 10) & 0x1F;
  const int m = h & 0x3FF;
  double v = e == 0 ? m / 16777216.0 : (1024 + m) * std::pow(2.0, e - 25);
  if (e == 31) v = m == 0 ? kInf : std::numeric_limits<double>::quiet_NaN();
  return (h & 0x8000u) != 0 ? -v : v;
}

TEST(HalfToDoubleTest, KnownValues) {
  // float(np.uint16(bits).view(np.float16)) with numpy 1.24.
  EXPECT_EQ(HalfToDouble(0x0000), 0.0);
  EXPECT_TRUE(std::signbit(HalfToDouble(0x8000)));
  EXPECT_EQ(HalfToDouble(0x8000), 0.0);
  EXPECT_EQ(HalfToDouble(0x0001), 5.960464477539063e-08);  // 2^-24
  EXPECT_EQ(HalfToDouble(0x03FF), 6.097555160522461e-05);  // largest subnormal
  EXPECT_EQ(HalfToDouble(0x0400), 6.103515625e-05);        // 2^-14, smallest normal
  EXPECT_EQ(HalfToDouble(0x3C00), 1.0);
  EXPECT_EQ(HalfToDouble(0x3C01), 1.0009765625);
  EXPECT_EQ(HalfToDouble(0xC000), -2.0);
  EXPECT_EQ(HalfToDouble(0x3555), 0.333251953125);
  EXPECT_EQ(HalfToDouble(0x2E66), 0.0999755859375);
  EXPECT_EQ(HalfToDouble(0x7BFF), 65504.0);
  EXPECT_EQ(HalfToDouble(0xFBFF), -65504.0);
  EXPECT_EQ(HalfToDouble(0x7C00), kInf);
  EXPECT_EQ(HalfToDouble(0xFC00), -kInf);
  EXPECT_TRUE(std::isnan(HalfToDouble(0x7E00)));
  EXPECT_TRUE(std::isnan(HalfToDouble(0x7C01)));
  EXPECT_TRUE(std::isnan(HalfToDouble(0xFFFF)));
}

TEST(HalfToDoubleTest, AllPatternsMatchTheFieldFormula) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const double got = HalfToDouble(bits);
    const double want = ReferenceHalfValue(bits);
    if (IsHalfNan(bits)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << h;
    } else {
      ASSERT_EQ(std::bit_cast<uint64_t>(got), std::bit_cast<uint64_t>(want)) << std::hex << h;
    }
  }
}

TEST(Float16RoundTripTest, EveryHalfSurvivesWideningAndNarrowing) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const uint16_t back = DoubleToHalf(HalfToDouble(bits));
    if (IsHalfNan(bits)) {
      // Any NaN narrows to the canonical quiet NaN, keeping its sign.
      ASSERT_EQ(back, (bits & 0x8000u) | 0x7E00u) << std::hex << h;
    } else {
      ASSERT_EQ(back, bits) << std::hex << h;
    }
  }
}

// Between each pair of neighbouring finite halves of the same sign: values below the midpoint
// go down, above it go up, and the midpoint itself goes to the one with an even fraction.
TEST(DoubleToHalfTest, RoundsToNearestEvenBetweenEveryPairOfNeighbours) {
  for (uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
    for (uint16_t h = 0; h < 0x7BFF; ++h) {
      const uint16_t lo = sign | h;
      const uint16_t hi = sign | static_cast<uint16_t>(h + 1);
      const double a = HalfToDouble(lo);
      const double b = HalfToDouble(hi);
      const double mid = (a + b) / 2;  // exact: halves have few significant bits
      ASSERT_EQ(DoubleToHalf(std::nextafter(mid, a)), lo) << std::hex << lo;
      ASSERT_EQ(DoubleToHalf(std::nextafter(mid, b)), hi) << std::hex << lo;
      ASSERT_EQ(DoubleToHalf(mid), (h & 1) == 0 ? lo : hi) << std::hex << lo;
    }
  }
}

struct NarrowCase {
  double value;
  uint16_t bits;
};

// hex(np.float16(x).view(np.uint16)) with numpy 1.24.2 (Debian's python3-numpy):
//   /usr/bin/python3 -c 'import numpy as np; print(hex(np.float16(x).view(np.uint16)))'
constexpr NarrowCase kNumpyCases[] = {
    {0.0, 0x0000},
    {-0.0, 0x8000},
    {1.0, 0x3c00},
    {-1.0, 0xbc00},
    {0.1, 0x2e66},
    {0.3333333333333333, 0x3555},
    {2049.0, 0x6800},  // tie between 2048 and 2050: the even fraction (2048) wins
    {2050.0, 0x6801},
    {2051.0, 0x6802},  // tie between 2050 and 2052: 2052 is even
    {2053.0, 0x6802},  // tie between 2052 and 2054: 2052 again
    {65504.0, 0x7bff},
    {65503.99, 0x7bff},
    {65519.99, 0x7bff},  // just below the midpoint to the (absent) next half
    {65520.0, 0x7c00},   // the midpoint rounds to even, which is past the largest: inf
    {-65520.0, 0xfc00},
    {65536.0, 0x7c00},
    {1e6, 0x7c00},
    {-1e6, 0xfc00},
    {1.7976931348623157e+308, 0x7c00},
    {5.960464477539063e-08, 0x0001},    // 2**-24, the smallest subnormal
    {-5.960464477539063e-08, 0x8001},   // -2**-24
    {2.9802322387695312e-08, 0x0000},   // 2**-25: the tie goes to the even zero
    {2.9802322388562674e-08, 0x0001},   // 2**-25 + 2**-60: just above half rounds up
    {-2.9802322387695312e-08, 0x8000},  // -2**-25: a signed zero
    {1.4901161193847656e-08, 0x0000},   // 2**-26
    {8.940696716308594e-08, 0x0002},    // 1.5 * 2**-24
    {1.4901161193847656e-07, 0x0002},   // 2.5 * 2**-24
    {6.103515625e-05, 0x0400},          // 2**-14
    {6.1005353927612305e-05, 0x0400},   // 2**-14 - 2**-25: a subnormal rounding up to a normal
    {6.097555160522461e-05, 0x03ff},    // 2**-14 - 2**-24
    {6.1e-05, 0x03ff},
    {1e-08, 0x0000},
    {1e-300, 0x0000},
    {5e-324, 0x0000},
    {3.14159265358979, 0x4248},
    {0.5, 0x3800},
    {1.0009765625, 0x3c01},
    {1.00048828125, 0x3c00},       // 1 + 2**-11: tie, down to the even 1.0
    {1.00146484375, 0x3c02},       // 1 + 3 * 2**-11: tie, up to the even 1 + 2**-9
    {1.0004882812509095, 0x3c01},  // 1 + 2**-11 + 2**-40: above the tie
    {1234.5678, 0x64d3},
    {-0.000123, 0x8808},
    {0.0999755859375, 0x2e66},
    {32784.0, 0x7800},  // 32768 + 16: tie, down to the even 32768
};

TEST(DoubleToHalfTest, MatchesNumpy) {
  for (const NarrowCase& c : kNumpyCases) {
    EXPECT_EQ(DoubleToHalf(c.value), c.bits) << c.value;
  }
}

TEST(DoubleToHalfTest, NonFinite) {
  EXPECT_EQ(DoubleToHalf(kInf), 0x7C00);
  EXPECT_EQ(DoubleToHalf(-kInf), 0xFC00);
  EXPECT_EQ(DoubleToHalf(std::numeric_limits<double>::quiet_NaN()), 0x7E00);
  EXPECT_EQ(DoubleToHalf(-std::numeric_limits<double>::quiet_NaN()), 0xFE00);
  EXPECT_EQ(DoubleToHalf(std::numeric_limits<double>::signaling_NaN()), 0x7E00);
}

TEST(DoubleToHalfTest, TinyValuesKeepTheirSign) {
  EXPECT_EQ(DoubleToHalf(-5e-324), 0x8000);
  EXPECT_EQ(DoubleToHalf(-1e-10), 0x8000);
  EXPECT_EQ(DoubleToHalf(std::ldexp(1.0, -26)), 0x0000);
  EXPECT_EQ(DoubleToHalf(-std::ldexp(1.0, -26)), 0x8000);
}

#if defined(__FLT16_MAX__)
// The compiler's _Float16 (GCC/Clang) converts with correct rounding, which gives a second,
// independent oracle for many more values than the numpy table.
uint16_t CompilerHalf(double v) {
  __extension__ _Float16 h = static_cast<_Float16>(v);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

TEST(DoubleToHalfTest, MatchesTheCompilersConversionOnRandomDoubles) {
  std::mt19937_64 rng(16);
  for (int i = 0; i < 200000; ++i) {
    uint64_t bits = rng();
    // Exponent fields 0x3d0 .. 0x41f cover 2^-31 .. 2^32: under, inside and over half range.
    bits = (bits & 0x800f'ffff'ffff'ffffULL) | ((0x3d0 + (bits >> 52) % 0x50) << 52);
    const double x = std::bit_cast<double>(bits);
    ASSERT_EQ(DoubleToHalf(x), CompilerHalf(x)) << x;
  }
}
#endif

}  // namespace
}  // namespace ferry
