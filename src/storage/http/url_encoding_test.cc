#include "storage/http/url_encoding.h"

#include <gtest/gtest.h>

#include <string>

namespace ferry::http {
namespace {

TEST(PercentEncode, KeepsTheUnreservedSetAndEncodesEveryOtherByte) {
  EXPECT_EQ(PercentEncode("AZaz09-._~", false), "AZaz09-._~");
  EXPECT_EQ(PercentEncode("a b+c%d#e?f=g&h$i", false), "a%20b%2Bc%25d%23e%3Ff%3Dg%26h%24i");
  EXPECT_EQ(PercentEncode("a b/c+d%e#f?g~h_i-j.k", true), "a%20b/c%2Bd%25e%23f%3Fg~h_i-j.k");
  EXPECT_EQ(PercentEncode(std::string_view("\0\x7f\xff", 3), false), "%00%7F%FF");
  // Sub-delimiters SigV4 does not keep, though RFC 3986 allows them in a path.
  EXPECT_EQ(PercentEncode("!*'()", true), "%21%2A%27%28%29");
}

TEST(PercentEncode, KeepsSlashOnlyWhenAsked) {
  EXPECT_EQ(PercentEncode("dir/sub dir/f", true), "dir/sub%20dir/f");
  EXPECT_EQ(PercentEncode("dir/f", false), "dir%2Ff");
}

TEST(PercentEncode, EncodesUtf8PerByteInUppercaseHex) {
  EXPECT_EQ(PercentEncode("données/日本", true), "donn%C3%A9es/%E6%97%A5%E6%9C%AC");
  EXPECT_EQ(PercentEncode("na\xc3\xafve", true), "na%C3%AFve");
}

TEST(PercentDecode, DecodesEitherCaseAndKeepsPlusAndMalformedEscapes) {
  EXPECT_EQ(PercentDecode("a%20b+c%2Bd%2fe"), "a b+c+d/e");
  EXPECT_EQ(PercentDecode("a%20b%2Fc%2bd"), "a b/c+d");
  EXPECT_EQ(PercentDecode("100%"), "100%");
  EXPECT_EQ(PercentDecode("%zz%4"), "%zz%4");
  EXPECT_EQ(PercentDecode("%zz+"), "%zz+");
  EXPECT_EQ(PercentDecode("%41"), "A");
  EXPECT_EQ(PercentDecode("%00"), std::string(1, '\0'));
}

TEST(PercentDecode, UndoesPercentEncode) {
  const std::string awkward = "x y+z%/é#?~=&";
  EXPECT_EQ(PercentDecode(PercentEncode(awkward, false)), awkward);
  EXPECT_EQ(PercentDecode(PercentEncode(awkward, true)), awkward);
}

TEST(FormDecode, DecodesPlusAsSpace) {
  EXPECT_EQ(FormDecode("a+b%2Bc%20d"), "a b+c d");
  EXPECT_EQ(FormDecode("100%"), "100%");
}

}  // namespace
}  // namespace ferry::http
