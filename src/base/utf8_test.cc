#include "base/utf8.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferry {
namespace {

using namespace std::string_view_literals;  // "\0"sv keeps embedded NULs

TEST(Utf8Test, ValidText) {
  EXPECT_EQ(FindInvalidUtf8(""), std::nullopt);
  EXPECT_EQ(FindInvalidUtf8("plain ASCII ~"), std::nullopt);
  EXPECT_EQ(FindInvalidUtf8("\0\x7f"sv), std::nullopt);  // NUL and DEL are valid code points
  EXPECT_EQ(FindInvalidUtf8("\xC2\x80"), std::nullopt);  // U+0080, smallest 2-byte form
  EXPECT_EQ(FindInvalidUtf8("\xC3\xA9t\xC3\xA9"), std::nullopt);         // "été"
  EXPECT_EQ(FindInvalidUtf8("\xDF\xBF"), std::nullopt);                  // U+07FF
  EXPECT_EQ(FindInvalidUtf8("\xE0\xA0\x80"), std::nullopt);              // U+0800, smallest 3-byte
  EXPECT_EQ(FindInvalidUtf8("\xE4\xB8\xAD\xE6\x96\x87"), std::nullopt);  // "中文"
  EXPECT_EQ(FindInvalidUtf8("\xED\x9F\xBF"), std::nullopt);      // U+D7FF, just below surrogates
  EXPECT_EQ(FindInvalidUtf8("\xEE\x80\x80"), std::nullopt);      // U+E000, just above them
  EXPECT_EQ(FindInvalidUtf8("\xEF\xBB\xBF"), std::nullopt);      // U+FEFF (BOM)
  EXPECT_EQ(FindInvalidUtf8("\xEF\xBF\xBF"), std::nullopt);      // U+FFFF
  EXPECT_EQ(FindInvalidUtf8("\xF0\x90\x80\x80"), std::nullopt);  // U+10000, smallest 4-byte
  EXPECT_EQ(FindInvalidUtf8("\xF0\x9F\x98\x80"), std::nullopt);  // U+1F600
  EXPECT_EQ(FindInvalidUtf8("\xF4\x8F\xBF\xBF"), std::nullopt);  // U+10FFFF, the largest
  EXPECT_TRUE(IsValidUtf8("a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80z"));
}

struct InvalidCase {
  std::string_view bytes;
  size_t offset;  // of the first byte of the offending sequence
  std::string_view why;
};

// Each of these also fails Python's bytes.decode("utf-8") at the same start offset
// (UnicodeDecodeError.start).
const std::vector<InvalidCase>& InvalidCases() {
  static const auto* cases = new std::vector<InvalidCase>{
      {"\x80", 0, "stray continuation byte"},
      {"ab\xBF", 2, "stray continuation byte after ASCII"},
      {"\xC3\xA9\x80", 2, "continuation byte after a complete sequence"},
      {"\xC0\x80", 0, "overlong NUL"},
      {"\xC1\xBF", 0, "overlong 2-byte form"},
      {"\xE0\x80\x80", 0, "overlong 3-byte NUL"},
      {"\xE0\x9F\xBF", 0, "overlong 3-byte form of U+07FF"},
      {"\xF0\x80\x80\x80", 0, "overlong 4-byte NUL"},
      {"\xF0\x8F\xBF\xBF", 0, "overlong 4-byte form of U+FFFF"},
      {"\xED\xA0\x80", 0, "high surrogate U+D800"},
      {"\xED\xBF\xBF", 0, "low surrogate U+DFFF"},
      {"x\xED\xA0\xBD\xED\xB8\x80", 1, "CESU-8 surrogate pair"},
      {"\xF4\x90\x80\x80", 0, "U+110000, past the last code point"},
      {"\xF5\x80\x80\x80", 0, "lead byte F5"},
      {"\xF8\x88\x80\x80\x80", 0, "5-byte form"},
      {"\xFE", 0, "byte FE"},
      {"\xFF", 0, "byte FF"},
      {"\xC3", 0, "truncated 2-byte sequence at the end"},
      {"abc\xE4\xB8", 3, "truncated 3-byte sequence at the end"},
      {"\xF0\x9F\x98", 0, "truncated 4-byte sequence at the end"},
      {"\xC3"
       "A",
       0, "2-byte sequence cut by ASCII"},
      {"\xE4\xB8"
       "A",
       0, "3-byte sequence cut by ASCII"},
      {"\xF0\x9F\x98"
       "A",
       0, "4-byte sequence cut by ASCII"},
      {"\xE4\xC3\xA9", 0, "3-byte sequence cut by a new lead byte"},
      {"ok \xC3\xA9 \xF0\x9F\x98\x80 \xE4\xB8\xAD \xC0\xAF", 15, "overlong '/' after valid text"},
  };
  return *cases;
}

TEST(Utf8Test, InvalidSequencesReportTheirOffset) {
  for (const InvalidCase& c : InvalidCases()) {
    EXPECT_EQ(FindInvalidUtf8(c.bytes), std::optional<size_t>(c.offset)) << c.why;
    EXPECT_FALSE(IsValidUtf8(c.bytes)) << c.why;
  }
}

TEST(Utf8Test, ReportsTheFirstOfSeveralErrors) {
  EXPECT_EQ(FindInvalidUtf8("a\xC3\xA9\xFF\x80"), std::optional<size_t>(3));
}

TEST(Utf8Test, DoesNotReadPastTheView) {
  // The view ends inside a sequence whose remaining bytes do exist in memory: still truncated.
  const std::string buffer = "\xF0\x9F\x98\x80";
  EXPECT_EQ(FindInvalidUtf8(std::string_view(buffer).substr(0, 3)), std::optional<size_t>(0));
  EXPECT_EQ(FindInvalidUtf8(std::string_view(buffer).substr(0, 4)), std::nullopt);
}

TEST(NextCodePointTest, DecodesEachLength) {
  struct Case {
    std::string_view bytes;
    char32_t cp;
  };
  constexpr Case kCases[] = {
      {"\0"sv, 0x0},
      {"A", 0x41},
      {"\x7F", 0x7F},
      {"\xC2\x80", 0x80},
      {"\xC3\xA9", 0xE9},
      {"\xDF\xBF", 0x7FF},
      {"\xE0\xA0\x80", 0x800},
      {"\xE2\x80\xA8", 0x2028},
      {"\xE4\xB8\xAD", 0x4E2D},
      {"\xEF\xBB\xBF", 0xFEFF},
      {"\xEF\xBF\xBF", 0xFFFF},
      {"\xF0\x90\x80\x80", 0x10000},
      {"\xF0\x9F\x98\x80", 0x1F600},
      {"\xF4\x8F\xBF\xBF", 0x10FFFF},
  };
  for (const Case& c : kCases) {
    size_t pos = 0;
    EXPECT_EQ(NextCodePoint(c.bytes, &pos), c.cp) << std::hex << static_cast<uint32_t>(c.cp);
    EXPECT_EQ(pos, c.bytes.size()) << std::hex << static_cast<uint32_t>(c.cp);
  }
}

TEST(NextCodePointTest, WalksAMixedString) {
  const std::string_view s = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80z";
  std::vector<char32_t> cps;
  std::vector<size_t> starts;
  size_t pos = 0;
  while (pos < s.size()) {
    starts.push_back(pos);
    cps.push_back(NextCodePoint(s, &pos));
  }
  EXPECT_EQ(cps, (std::vector<char32_t>{U'a', 0xE9, 0x4E2D, 0x1F600, U'z'}));
  EXPECT_EQ(starts, (std::vector<size_t>{0, 1, 3, 6, 10}));
  EXPECT_EQ(pos, s.size());
}

}  // namespace
}  // namespace ferry
