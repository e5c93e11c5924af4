#include "base/ascii.h"

#include <gtest/gtest.h>

#include <string>

namespace ferry {
namespace {

TEST(AsciiLower, LowersOnlyAsciiLetters) {
  EXPECT_EQ(AsciiLower("X-Amz-Date: ABC xyz 09[@]"), "x-amz-date: abc xyz 09[@]");
  // Bytes of UTF-8 text (and any byte above 0x7F) are left alone.
  EXPECT_EQ(AsciiLower("\xC3\x89T\xC3\x89"), "\xC3\x89t\xC3\x89");
  EXPECT_EQ(AsciiLower(std::string_view("A\0B", 3)), std::string_view("a\0b", 3));
}

TEST(TrimAsciiWhitespace, TrimsEveryAsciiBlankAtBothEndsOnly) {
  EXPECT_EQ(TrimAsciiWhitespace(" \t\r\n\v\fa b\t\r\n"), "a b");
  EXPECT_EQ(TrimAsciiWhitespace(" \t "), "");
  EXPECT_EQ(TrimAsciiWhitespace(""), "");
  // A no-break space (0xA0) is not ASCII whitespace.
  EXPECT_EQ(TrimAsciiWhitespace("\xA0x\xA0"), "\xA0x\xA0");
}

TEST(CollapseAsciiWhitespace, TrimsAndFoldsInnerRunsToOneSpace) {
  // The SigV4 specification's example of Trimall.
  EXPECT_EQ(CollapseAsciiWhitespace("   value1    value2   "), "value1 value2");
  EXPECT_EQ(CollapseAsciiWhitespace("profile\t \tdev "), "profile dev");
  EXPECT_EQ(CollapseAsciiWhitespace("a\r\n\fb"), "a b");
  EXPECT_EQ(CollapseAsciiWhitespace("\"a   b\""), "\"a b\"");
  EXPECT_EQ(CollapseAsciiWhitespace("  "), "");
  EXPECT_EQ(CollapseAsciiWhitespace("one"), "one");
}

TEST(ParseUint, TakesOnlyAWholeDecimalNumber) {
  EXPECT_EQ(ParseUint("0"), 0u);
  EXPECT_EQ(ParseUint("007"), 7u);
  EXPECT_EQ(ParseUint("434234"), 434234u);
  EXPECT_EQ(ParseUint("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(ParseUint("18446744073709551616"));  // 2^64
  EXPECT_FALSE(ParseUint(""));
  EXPECT_FALSE(ParseUint("12x"));
  EXPECT_FALSE(ParseUint("x12"));
  EXPECT_FALSE(ParseUint(" 12"));
  EXPECT_FALSE(ParseUint("12 "));
  EXPECT_FALSE(ParseUint("-1"));
  EXPECT_FALSE(ParseUint("+1"));
  EXPECT_FALSE(ParseUint("0x10"));
  EXPECT_FALSE(ParseUint("1.5"));
}

}  // namespace
}  // namespace ferry
