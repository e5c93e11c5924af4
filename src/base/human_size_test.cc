#include "base/human_size.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace ferry {
namespace {

using ::testing::HasSubstr;

struct SizeCase {
  std::string_view text;
  uint64_t bytes;
};

// Spec §5.2 (Mosaic Streaming's size strings): powers of 1024, case-insensitive suffix,
// surrounding whitespace ignored, a fraction only before a multi-letter suffix, truncated.
// Fractional expectations computed exactly: python3 -c 'from fractions import Fraction as F;
// print(int(F("1.1") * 1024))'.
constexpr SizeCase kValid[] = {
    {"0", 0},
    {"123", 123},
    {"8192", 8192},
    {"100b", 100},
    {"100B", 100},
    {"0b", 0},
    {"8kb", 8192},
    {"8KB", 8192},
    {"8Kb", 8192},
    {"0kb", 0},
    {"1.5kb", 1536},
    {"1.1kb", 1126},  // 1126.4, truncated
    {"0.001kb", 1},   // 1.024
    {"0.0001kb", 0},  // 0.1024
    {" 64MB ", 67108864},
    {"\t64mb\n", 67108864},
    {"64mb", 67108864},  // the spec's default size_limit, 1 << 26
    {"1.5mb", 1572864},
    {"0.3mb", 314572},
    {"0.5gb", 536870912},
    {"1gb", 1073741824},
    {"2.75tb", 3023656976384},
    {"1tb", uint64_t{1} << 40},
    {"1pb", uint64_t{1} << 50},
    {"1eb", uint64_t{1} << 60},
    {"15eb", uint64_t{15} << 60},
    {"0yb", 0},
    {"0.000000000000000001yb", 1208925},  // 2^80 / 10^18, truncated
    {"18446744073709551615", UINT64_MAX},
    {"18446744073709551615b", UINT64_MAX},
};

TEST(ParseHumanSizeTest, ParsesSizes) {
  for (const SizeCase& c : kValid) {
    const Result<uint64_t> r = ParseHumanSize(c.text);
    ASSERT_TRUE(r.has_value()) << "'" << c.text << "': " << r.error().ToString();
    EXPECT_EQ(*r, c.bytes) << "'" << c.text << "'";
  }
}

TEST(ParseHumanSizeTest, RejectsNonSizes) {
  constexpr std::string_view kInvalid[] = {
      "",         // nothing
      "   ",      // only whitespace
      "kb",       // no number
      "1e3",      // exponent forms are rejected by the spec
      "1e3kb",    // ... also before a suffix
      "-5",       // negative
      "-5kb",     // ... also with a suffix
      "1.5",      // a fraction needs a multi-letter suffix
      "1.5b",     // ... and "b" has one letter
      "1.2.3kb",  // two points
      ".kb",      // a point is not a number
      "1k",       // unknown suffixes
      "1kib",     // ...
      "1x",       // ...
      "1bb",      // ...
      "abc",      // not a number at all
      "0x10",     // no hex
      "1,000",    // no digit grouping
  };
  for (std::string_view text : kInvalid) {
    const Result<uint64_t> r = ParseHumanSize(text);
    ASSERT_FALSE(r.has_value()) << "'" << text << "' parsed as " << *r;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << "'" << text << "'";
    // The message names the text at fault.
    EXPECT_THAT(r.error().message(), HasSubstr("'" + std::string(text) + "'"));
  }
}

TEST(ParseHumanSizeTest, RejectsOverflow) {
  constexpr std::string_view kTooLarge[] = {
      "18446744073709551616",  // 2^64
      "18446744073709551616b",
      "99999999999999999999999999999999999999999",  // would also overflow 128 bits
      "16eb",                                       // 16 * 2^60 = 2^64
      "1zb",
      "1yb",
      "16777216tb",  // 2^24 * 2^40
      "17179869184gb",
      "16.5eb",
  };
  for (std::string_view text : kTooLarge) {
    const Result<uint64_t> r = ParseHumanSize(text);
    ASSERT_FALSE(r.has_value()) << "'" << text << "' parsed as " << *r;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << "'" << text << "'";
    EXPECT_THAT(r.error().message(), HasSubstr(std::string(text)));
  }
}

TEST(FormatBytesTest, BelowOneKibIsWholeBytes) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1), "1 B");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
}

TEST(FormatBytesTest, LargerSizesUseBinaryUnitsWithOneDecimal) {
  EXPECT_EQ(FormatBytes(1024), "1.0 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(10 * 1024 + 300), "10.3 KiB");  // 10.29...
  EXPECT_EQ(FormatBytes(67108864), "64.0 MiB");
  EXPECT_EQ(FormatBytes(uint64_t{1} << 30), "1.0 GiB");
  EXPECT_EQ(FormatBytes(uint64_t{3} << 39), "1.5 TiB");
  EXPECT_EQ(FormatBytes(uint64_t{1} << 50), "1.0 PiB");
  EXPECT_EQ(FormatBytes(uint64_t{1} << 60), "1.0 EiB");
  EXPECT_EQ(FormatBytes(UINT64_MAX), "16.0 EiB");  // EiB is the largest unit
}

TEST(FormatBytesTest, NeverPrints1024OfAUnit) {
  EXPECT_EQ(FormatBytes(1048575), "1.0 MiB");               // 1023.999 KiB
  EXPECT_EQ(FormatBytes(1024 * 1023 + 900), "1023.9 KiB");  // 1023.88 KiB
  EXPECT_EQ(FormatBytes((uint64_t{1} << 30) - 1), "1.0 GiB");
}

TEST(FormatBytesTest, RoundTripsThroughParseForWholeUnits) {
  for (uint64_t bytes : {uint64_t{1} << 10, uint64_t{64} << 20, uint64_t{3} << 30}) {
    const std::string formatted = FormatBytes(bytes);  // "64.0 MiB" -> "64.0Mb"
    const size_t space = formatted.find(' ');
    const std::string text = formatted.substr(0, space) + formatted[space + 1] + "b";
    const Result<uint64_t> parsed = ParseHumanSize(text);
    ASSERT_TRUE(parsed.has_value()) << text;
    EXPECT_EQ(*parsed, bytes) << text;
  }
}

}  // namespace
}  // namespace ferry
