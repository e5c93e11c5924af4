#include "base/python_float.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace ferry {
namespace {

struct ReprCase {
  uint64_t bits;  // the double, as its bit pattern so that no C++ parsing is involved
  std::string_view repr;
};

// Expected strings are CPython's, generated once with Debian's Python 3.11 (and numpy 1.24 for
// the float32/float16 values widened to double):
//   /usr/bin/python3 -c 'import struct; x = <expr>;
//     print(hex(struct.unpack("<Q", struct.pack("<d", x))[0]), repr(x))'
// The comment after each entry is the Python expression.
constexpr ReprCase kReprCases[] = {
    {0x0000000000000000ULL, "0.0"},                      // 0.0
    {0x8000000000000000ULL, "-0.0"},                     // -0.0
    {0x3fb999999999999aULL, "0.1"},                      // 0.1
    {0xbfb999999999999aULL, "-0.1"},                     // -0.1
    {0x3ff0000000000000ULL, "1.0"},                      // 1.0
    {0xbff0000000000000ULL, "-1.0"},                     // -1.0
    {0x3ff8000000000000ULL, "1.5"},                      // 1.5
    {0x4004000000000000ULL, "2.5"},                      // 2.5
    {0x3fe0000000000000ULL, "0.5"},                      // 0.5
    {0x4059000000000000ULL, "100.0"},                    // 100.0
    {0x405edd2f1a9fbe77ULL, "123.456"},                  // 123.456
    {0x3fd5555555555555ULL, "0.3333333333333333"},       // 1/3
    {0x3fe5555555555555ULL, "0.6666666666666666"},       // 2/3
    {0x3fd3333333333334ULL, "0.30000000000000004"},      // 0.1 + 0.2
    {0x400921fb54442d18ULL, "3.141592653589793"},        // math.pi
    {0x4011666666666666ULL, "4.35"},                     // 4.35
    {0x3ff0000000000001ULL, "1.0000000000000002"},       // 1 + 2**-52
    {0x3fefffffffffffffULL, "0.9999999999999999"},       // 1 - 2**-53
    {0x3f1a36e2eb1c432dULL, "0.0001"},                   // 1e-4: the smallest positional exponent
    {0x3f50624dd2f1a9fcULL, "0.001"},                    // 0.001
    {0x3f202e4b6ce5dc68ULL, "0.00012345"},               // 0.00012345
    {0x3ee4f8b588e368f1ULL, "1e-05"},                    // 1e-05: the first scientific one
    {0x3ee9e3abe16fc70dULL, "1.2345e-05"},               // 0.000012345
    {0x3e7ad7f29abcaf48ULL, "1e-07"},                    // 1e-7
    {0x430c6bf526340000ULL, "1000000000000000.0"},       // 1e15
    {0x430c6bf52633ffffULL, "999999999999999.9"},        // 999999999999999.9
    {0x42dc12218377de66ULL, "123456789012345.6"},        // 123456789012345.6
    {0x41678c29dccccccdULL, "12345678.9"},               // 12345678.9
    {0x40f869fffff583a5ULL, "99999.99999"},              // 99999.99999
    {0x4341c37937e07fffULL, "9999999999999998.0"},       // the largest positional double
    {0x4341c37937e08000ULL, "1e+16"},                    // 1e16 (= 9999999999999999.0)
    {0x434aa535d3d0c000ULL, "1.5e+16"},                  // 1.5e+16
    {0x4340000000000000ULL, "9007199254740992.0"},       // 2**53
    {0x43e0000000000000ULL, "9.223372036854776e+18"},    // 2**63
    {0xc3e0000000000000ULL, "-9.223372036854776e+18"},   // -2**63
    {0x437b69b4ba630f35ULL, "1.2345678901234568e+17"},   // 1.2345678901234568e+17
    {0x444b1ae4d6e2ef50ULL, "1e+21"},                    // 1e21
    {0x4480f0cf064dd592ULL, "1e+22"},                    // 1e22
    {0x44b52d02c7e14af6ULL, "1e+23"},                    // 1e23
    {0x54b249ad2594c37dULL, "1e+100"},                   // 1e100: three exponent digits
    {0x0000000000000001ULL, "5e-324"},                   // the smallest subnormal
    {0x8000000000000001ULL, "-5e-324"},                  // -5e-324
    {0x00000000000007e8ULL, "1e-320"},                   // 1e-320 (subnormal)
    {0x0008d83aff3e96b1ULL, "1.23e-308"},                // 123e-310 (subnormal)
    {0x0010000000000000ULL, "2.2250738585072014e-308"},  // the smallest normal
    {0x7fefffffffffffffULL, "1.7976931348623157e+308"},  // the largest finite
    {0xffefffffffffffffULL, "-1.7976931348623157e+308"},
    {0x3fb99999a0000000ULL, "0.10000000149011612"},    // float(np.float32(0.1))
    {0x3fd5555560000000ULL, "0.3333333432674408"},     // float(np.float32(1/3))
    {0x400921fa00000000ULL, "3.141590118408203"},      // float(np.float32(3.14159))
    {0x4170000000000000ULL, "16777216.0"},             // float(np.float32(16777217))
    {0x3fb9980000000000ULL, "0.0999755859375"},        // float(np.float16(0.1))
    {0x3fd5540000000000ULL, "0.333251953125"},         // float(np.float16(1/3))
    {0x40effc0000000000ULL, "65504.0"},                // float(np.float16(65504))
    {0x3e70000000000000ULL, "5.960464477539063e-08"},  // float(np.float16(2**-24))
    // Pseudo-random doubles from Python's random.Random(20240601): 12 raw bit patterns (NaNs
    // skipped), then 24 values 10**uniform(-6, 18) with random sign.
    {0x749882321e35049eULL, "4.492152248019643e+253"},
    {0x79c8c2926b94b5b5ULL, "4.389120112770094e+278"},
    {0x4242aadbc8f429a4ULL, "160351883752.32532"},
    {0xeb7a79959588532dULL, "-5.4399131119142674e+209"},
    {0x3cf3bd58da60fb1cULL, "4.383079907872608e-15"},
    {0x515c61236c88c537ULL, "8.614354442467737e+83"},
    {0xf4b1b64633be40f5ULL, "-1.2985664392816573e+254"},
    {0x88718c966f3d88f7ULL, "-5.314965623006408e-268"},
    {0xda1b195060c40eb7ULL, "-1.146488202889241e+126"},
    {0x5b08acc213a5bf07ULL, "3.420758551378043e+130"},
    {0x6a5d670af9a3638eULL, "2.3046315439163635e+204"},
    {0x4a894db7e48f12b9ULL, "1.1833994934170815e+51"},
    {0xc2ce7c6066327d61ULL, "-67039084176634.76"},
    {0xbef1247a8d2188c3ULL, "-1.6348357185676893e-05"},
    {0xbf51c7309772315fULL, "-0.0010850882079323704"},
    {0x419d38e6613eb237ULL, "122567064.31122671"},
    {0xc310ff363c76c7cbULL, "-1196052008776178.8"},
    {0xbffb8ce2999097b4ULL, "-1.7218957899690226"},
    {0x43a802f775b01d3eULL, "8.651086458508163e+17"},
    {0xc0fe07e2803ab1bcULL, "-123006.15630597522"},
    {0x40005f5be1a88cf6ULL, "2.046561968761689"},
    {0x3f20d488d4eccb72ULL, "0.00012840433415703016"},
    {0xbfcfc8351e32ec27ULL, "-0.24829734777981224"},
    {0x40b4f6224e28b6f9ULL, "5366.134005112334"},
    {0xc0c1ed085d0634afULL, "-9178.065338874554"},
    {0xbf6a244b834e63acULL, "-0.0031911349164599114"},
    {0xbf375ef39c6002dbULL, "-0.0003566117051150682"},
    {0x40d67febab5ec54aULL, "23039.682334606805"},
    {0x3f02dc271debf24cULL, "3.597254157303563e-05"},
    {0xc09286598a6338e3ULL, "-1185.5874419692489"},
    {0x4105eb640752ae6dULL, "179564.5035756709"},
    {0x435980bf31671e12ULL, "2.8713732294867016e+16"},
    {0x42fdb41236c8bb85ULL, "522547790384056.3"},
    {0x41601649036a0b0eULL, "8434248.106694724"},
    {0xc29a0658504feaa2ULL, "-7153638446074.658"},
    {0xc2e0581f8338ef64ULL, "-143765374879611.12"},
};

TEST(FormatPythonFloatTest, MatchesCPythonRepr) {
  for (const ReprCase& c : kReprCases) {
    const double x = std::bit_cast<double>(c.bits);
    EXPECT_EQ(FormatPythonFloat(x), c.repr) << std::hex << "bits 0x" << c.bits;
  }
}

TEST(FormatPythonFloatTest, NonFinite) {
  // repr(float("nan")), repr(float("inf")), repr(float("-inf")); Python prints NaN unsigned.
  EXPECT_EQ(FormatPythonFloat(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(FormatPythonFloat(-std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(FormatPythonFloat(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(FormatPythonFloat(-std::numeric_limits<double>::infinity()), "-inf");
}

TEST(FormatPythonFloatTest, AppendKeepsWhatIsThere) {
  std::string out = "[";
  AppendPythonFloat(out, 1e16);
  out += ", ";
  AppendPythonFloat(out, -0.0);
  out += ", ";
  AppendPythonFloat(out, std::numeric_limits<double>::infinity());
  out += "]";
  EXPECT_EQ(out, "[1e+16, -0.0, inf]");
}

TEST(ParsePythonFloatTest, ParsesWhatFormatWrites) {
  for (const ReprCase& c : kReprCases) {
    const std::optional<double> x = ParsePythonFloat(c.repr);
    ASSERT_TRUE(x.has_value()) << c.repr;
    EXPECT_EQ(std::bit_cast<uint64_t>(*x), c.bits) << c.repr;
  }
}

// Property: for any non-NaN double, the text round-trips to the same bits (sign of zero and
// subnormals included). The generator is std::mt19937_64, whose sequence the standard fixes.
TEST(ParsePythonFloatTest, RoundTripsRandomBitPatterns) {
  std::mt19937_64 rng(0x5eed'f10a7);
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    uint64_t bits = rng();
    // Every fourth value gets a small exponent field so subnormals and tiny values are covered
    // as often as huge ones.
    if (i % 4 == 1) bits &= 0x800f'ffff'ffff'ffffULL;
    // And every fourth lands in the positional range (about 1e-5 .. 1e17).
    if (i % 4 == 2) {
      bits = (bits & 0x800f'ffff'ffff'ffffULL) | ((0x3ec + (bits >> 52) % 0x51) << 52);
    }
    const double x = std::bit_cast<double>(bits);
    if (std::isnan(x)) continue;
    const std::string text = FormatPythonFloat(x);
    const std::optional<double> back = ParsePythonFloat(text);
    ASSERT_TRUE(back.has_value()) << text;
    ASSERT_EQ(std::bit_cast<uint64_t>(*back), bits) << text;
    ++checked;
  }
  EXPECT_GT(checked, 190000);
}

struct ParseCase {
  std::string_view text;
  uint64_t bits;  // of Python's float(text)
};

// Generated with /usr/bin/python3 (3.11):
//   python3 -c 'import struct; print(hex(struct.unpack("<Q", struct.pack("<d", float(t)))[0]))'
constexpr ParseCase kAccepted[] = {
    {" 1.5 ", 0x3ff8000000000000ULL},
    {"\t-2\n", 0xc000000000000000ULL},
    {"+3", 0x4008000000000000ULL},
    {"1_000.5", 0x408f440000000000ULL},
    {"1_0e1_0", 0x42374876e8000000ULL},
    {"inf", 0x7ff0000000000000ULL},
    {"-Infinity", 0xfff0000000000000ULL},
    {"+INF", 0x7ff0000000000000ULL},
    {"iNfInItY", 0x7ff0000000000000ULL},
    {"1e400", 0x7ff0000000000000ULL},  // overflow is inf in Python, not an error
    {"-1e400", 0xfff0000000000000ULL},
    {"1e-400", 0x0000000000000000ULL},  // underflow is a (signed) zero
    {"-1e-400", 0x8000000000000000ULL},
    {".5", 0x3fe0000000000000ULL},
    {"5.", 0x4014000000000000ULL},
    {"1E5", 0x40f86a0000000000ULL},
    {"1e+5", 0x40f86a0000000000ULL},
    {"1e-5", 0x3ee4f8b588e368f1ULL},
    {"-0", 0x8000000000000000ULL},
    {"-0.0", 0x8000000000000000ULL},
    {"0.1", 0x3fb999999999999aULL},
    {"1e-320", 0x00000000000007e8ULL},
    {"5e-324", 0x0000000000000001ULL},
    {"00012", 0x4028000000000000ULL},
    {"1.7976931348623157e+308", 0x7fefffffffffffffULL},
    {"0.10000000149011612", 0x3fb99999a0000000ULL},
    {"123456789012345678901234567890", 0x45f8ee90ff6c373eULL},
};

TEST(ParsePythonFloatTest, AcceptsWhatPythonAccepts) {
  for (const ParseCase& c : kAccepted) {
    const std::optional<double> x = ParsePythonFloat(c.text);
    ASSERT_TRUE(x.has_value()) << "'" << c.text << "'";
    EXPECT_EQ(std::bit_cast<uint64_t>(*x), c.bits) << "'" << c.text << "'";
  }
}

TEST(ParsePythonFloatTest, NanInAnyCaseKeepsItsSign) {
  for (std::string_view text : {"nan", "NaN", "NAN", " nan\n", "+nan"}) {
    const std::optional<double> x = ParsePythonFloat(text);
    ASSERT_TRUE(x.has_value()) << text;
    EXPECT_TRUE(std::isnan(*x)) << text;
    EXPECT_FALSE(std::signbit(*x)) << text;
  }
  // math.copysign(1, float("-nan")) == -1.0 in Python.
  const std::optional<double> negative = ParsePythonFloat("-nan");
  ASSERT_TRUE(negative.has_value());
  EXPECT_TRUE(std::isnan(*negative));
  EXPECT_TRUE(std::signbit(*negative));
}

TEST(ParsePythonFloatTest, RejectsWhatPythonRejects) {
  // Each of these raises ValueError in Python's float().
  constexpr std::string_view kRejected[] = {
      "",     " ",    "abc",     "1__0",      "_1",    "1_",    "1._5",   "1_.5",
      "1e",   "e5",   "--1",     "+-1",       "-+1",   "1.2.3", "0x10",   "1 2",
      "nanx", "in",   "infinit", "1e5.0",     "1,5",   "- 1",   "+",      "-",
      ".",    "1e_5", "1_e5",    "infinityy", "1e+-5", "1-5",   "nan(1)", "1f",
  };
  for (std::string_view text : kRejected) {
    EXPECT_EQ(ParsePythonFloat(text), std::nullopt) << "'" << text << "'";
  }
  // An embedded NUL is not whitespace and not a digit.
  EXPECT_EQ(ParsePythonFloat(std::string_view("1.5\0", 4)), std::nullopt);
}

}  // namespace
}  // namespace ferry
