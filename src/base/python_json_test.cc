#include "base/python_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ferry {
namespace {

using ::testing::HasSubstr;
using namespace std::string_view_literals;  // "\0"sv keeps embedded NULs

// Every expected string in this file was produced once with Debian's Python 3.11 and pasted in:
//   /usr/bin/python3 -c 'import json; print(json.dumps(<value>))'                  (strings, Dump)
//   /usr/bin/python3 -c 'import json; print(json.dumps(<value>, sort_keys=True))'  (kSorted)
//   /usr/bin/python3 -c 'import json, sys; print(json.dumps(json.loads(sys.argv[1])))' '<text>'

std::string JsonString(std::string_view utf8) {
  std::string out;
  AppendPythonJsonString(out, utf8);
  return out;
}

TEST(AppendPythonJsonStringTest, Ascii) {
  EXPECT_EQ(JsonString(""), R"("")");
  EXPECT_EQ(JsonString("hello world"), R"("hello world")");
  EXPECT_EQ(JsonString("a/b"), R"("a/b")");  // '/' is not escaped
  EXPECT_EQ(JsonString(" ~"), R"(" ~")");    // the printable range ends are kept
}

TEST(AppendPythonJsonStringTest, QuotesAndBackslash) {
  EXPECT_EQ(JsonString(R"(say "hi")"), R"("say \"hi\"")");
  EXPECT_EQ(JsonString(R"(back\slash)"), R"("back\\slash")");
}

TEST(AppendPythonJsonStringTest, ControlCharacters) {
  EXPECT_EQ(JsonString("\0"sv), R"("\u0000")");
  EXPECT_EQ(JsonString("\x1f"), R"("\u001f")");
  EXPECT_EQ(JsonString("\x7f"), R"("\u007f")");  // DEL is escaped too
  EXPECT_EQ(JsonString("\b\f\n\r\t"), R"("\b\f\n\r\t")");
  EXPECT_EQ(JsonString("\x01\x0b\x0e"), R"("\u0001\u000b\u000e")");
}

TEST(AppendPythonJsonStringTest, NonAsciiBecomesLowercaseEscapes) {
  EXPECT_EQ(JsonString("\xC3\xA9"), R"("\u00e9")");                                // é
  EXPECT_EQ(JsonString("na\xC3\xAFve caf\xC3\xA9"), R"("na\u00efve caf\u00e9")");  // naïve café
  EXPECT_EQ(JsonString("\xC2\x80"), R"("\u0080")");
  EXPECT_EQ(JsonString("\xDF\xBF"), R"("\u07ff")");
  EXPECT_EQ(JsonString("\xE0\xA0\x80"), R"("\u0800")");
  EXPECT_EQ(JsonString("\xE4\xB8\xAD\xE6\x96\x87"), R"("\u4e2d\u6587")");  // 中文
  EXPECT_EQ(JsonString("\xE2\x80\xA8\xE2\x80\xA9"), R"("\u2028\u2029")");
  EXPECT_EQ(JsonString("\xEF\xBB\xBF"), R"("\ufeff")");  // BOM
  EXPECT_EQ(JsonString("\xEF\xBF\xBF"), R"("\uffff")");
  EXPECT_EQ(JsonString("~\x7f\xC2\x80"), R"("~\u007f\u0080")");
}

TEST(AppendPythonJsonStringTest, AstralCharactersBecomeSurrogatePairs) {
  EXPECT_EQ(JsonString("\xF0\x9F\x98\x80"), R"("\ud83d\ude00")");  // 😀
  EXPECT_EQ(JsonString("a\xF0\x9F\x98\x80"
                       "b"),
            R"("a\ud83d\ude00b")");
  EXPECT_EQ(JsonString("\xF0\x90\x80\x80"), R"("\ud800\udc00")");  // U+10000
  EXPECT_EQ(JsonString("\xF4\x8F\xBF\xBF"), R"("\udbff\udfff")");  // U+10FFFF
}

TEST(AppendPythonJsonStringTest, AppendsToExistingText) {
  std::string out = "[";
  AppendPythonJsonString(out, "a");
  out += ", ";
  AppendPythonJsonString(out, "\n");
  out += "]";
  EXPECT_EQ(out, R"(["a", "\n"])");
}

// A nested object with every kind of value, in the insertion order below; NaN and the
// infinities cannot come from JSON text, so they are appended afterwards (as the Python
// generator did: obj["nan"] = float("nan"), ...).
nlohmann::ordered_json NestedObject() {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(R"json({
    "zeta": 1,
    "alpha": [1, 2.5, "x", null, true, false, {"b": -1, "a": {}, "A": [[]]}],
    "mid": {"y": 1e16, "x": -0.0, "\u00e9": "\u00fc", "\uff21": 0, "\ud83d\ude00": [],
            "E": 1e-07, "e": 100.0},
    "B": [],
    "a b": 18446744073709551615,
    "neg": -9223372036854775808,
    "f32": 0.10000000149011612,
    "emoji\ud83d\ude00": "\ud83d\ude00\n",
    "": "",
    "big": 12345678901234567890
  })json");
  j["nan"] = std::numeric_limits<double>::quiet_NaN();
  j["inf"] = std::numeric_limits<double>::infinity();
  j["ninf"] = -std::numeric_limits<double>::infinity();
  j["alpha"].push_back(std::numeric_limits<double>::quiet_NaN());
  return j;
}

TEST(DumpPythonJsonTest, InsertionOrderMatchesJsonDumps) {
  EXPECT_EQ(
      DumpPythonJson(NestedObject(), JsonKeyOrder::kInsertion),
      R"({"zeta": 1, )"
      R"("alpha": [1, 2.5, "x", null, true, false, {"b": -1, "a": {}, "A": [[]]}, NaN], )"
      R"("mid": {"y": 1e+16, "x": -0.0, "\u00e9": "\u00fc", "\uff21": 0, "\ud83d\ude00": [], )"
      R"("E": 1e-07, "e": 100.0}, "B": [], "a b": 18446744073709551615, )"
      R"("neg": -9223372036854775808, "f32": 0.10000000149011612, )"
      R"("emoji\ud83d\ude00": "\ud83d\ude00\n", "": "", "big": 12345678901234567890, )"
      R"("nan": NaN, "inf": Infinity, "ninf": -Infinity})");
}

TEST(DumpPythonJsonTest, SortedKeysMatchJsonDumpsSortKeys) {
  // Sorted by code point at every level: U+FF21 before U+1F600 (UTF-16 order would differ).
  EXPECT_EQ(
      DumpPythonJson(NestedObject(), JsonKeyOrder::kSorted),
      R"({"": "", "B": [], "a b": 18446744073709551615, )"
      R"("alpha": [1, 2.5, "x", null, true, false, {"A": [[]], "a": {}, "b": -1}, NaN], )"
      R"("big": 12345678901234567890, "emoji\ud83d\ude00": "\ud83d\ude00\n", )"
      R"("f32": 0.10000000149011612, "inf": Infinity, )"
      R"("mid": {"E": 1e-07, "e": 100.0, "x": -0.0, "y": 1e+16, "\u00e9": "\u00fc", "\uff21": 0, )"
      R"("\ud83d\ude00": []}, "nan": NaN, "neg": -9223372036854775808, "ninf": -Infinity, )"
      R"("zeta": 1})");
}

TEST(DumpPythonJsonTest, Scalars) {
  using J = nlohmann::ordered_json;
  EXPECT_EQ(DumpPythonJson(J(), JsonKeyOrder::kSorted), "null");
  EXPECT_EQ(DumpPythonJson(J(true), JsonKeyOrder::kSorted), "true");
  EXPECT_EQ(DumpPythonJson(J(false), JsonKeyOrder::kSorted), "false");
  EXPECT_EQ(DumpPythonJson(J(0), JsonKeyOrder::kSorted), "0");
  EXPECT_EQ(DumpPythonJson(J(std::numeric_limits<int64_t>::min()), JsonKeyOrder::kSorted),
            "-9223372036854775808");
  EXPECT_EQ(DumpPythonJson(J(std::numeric_limits<uint64_t>::max()), JsonKeyOrder::kSorted),
            "18446744073709551615");
  EXPECT_EQ(DumpPythonJson(J(1.0), JsonKeyOrder::kSorted), "1.0");
  EXPECT_EQ(DumpPythonJson(J(1e16), JsonKeyOrder::kSorted), "1e+16");
  EXPECT_EQ(DumpPythonJson(J(-0.0), JsonKeyOrder::kSorted), "-0.0");
  EXPECT_EQ(DumpPythonJson(J(5e-324), JsonKeyOrder::kSorted), "5e-324");
  EXPECT_EQ(DumpPythonJson(J(-std::numeric_limits<double>::infinity()), JsonKeyOrder::kSorted),
            "-Infinity");
  EXPECT_EQ(DumpPythonJson(J("\xC3\xA9\"\\"), JsonKeyOrder::kSorted), R"("\u00e9\"\\")");
  EXPECT_EQ(DumpPythonJson(J::array(), JsonKeyOrder::kSorted), "[]");
  EXPECT_EQ(DumpPythonJson(J::object(), JsonKeyOrder::kSorted), "{}");
}

TEST(DumpPythonJsonTest, KeysAreEscapedLikeStrings) {
  nlohmann::ordered_json j;
  j["line\nbreak"] = 1;
  j["quote\""] = 2;
  EXPECT_EQ(DumpPythonJson(j, JsonKeyOrder::kInsertion), R"({"line\nbreak": 1, "quote\"": 2})");
  EXPECT_EQ(DumpPythonJson(j, JsonKeyOrder::kSorted), R"({"line\nbreak": 1, "quote\"": 2})");
}

struct NormalizeCase {
  std::string_view text;
  std::string_view python;  // json.dumps(json.loads(text))
};

constexpr NormalizeCase kNormalizeCases[] = {
    // Integers of any size stay exact.
    {"1180591620717411303424", "1180591620717411303424"},                      // 2**70
    {"-1267650600228229401496703205376", "-1267650600228229401496703205376"},  // -2**100
    {"[18446744073709551615, 18446744073709551616, -9223372036854775808, -9223372036854775809]",
     "[18446744073709551615, 18446744073709551616, -9223372036854775808, -9223372036854775809]"},
    {"10", "10"},
    {"-0", "0"},
    // Floats by value, written as repr.
    {"1e-07", "1e-07"},
    {"1E400", "Infinity"},
    {"-1E400", "-Infinity"},
    {"[1e-400, -1e-400]", "[0.0, -0.0]"},
    {"-0.0", "-0.0"},
    {"1.0e5", "100000.0"},
    {"1E2", "100.0"},
    {"0.1e1", "1.0"},
    {"1e16", "1e+16"},
    {"2.5E-3", "0.0025"},
    {"123456789012345.6", "123456789012345.6"},
    {"[0.000001, 0.0001, 123456789.0, 1e22, 5e-324]",
     "[1e-06, 0.0001, 123456789.0, 1e+22, 5e-324]"},
    // Key order is kept, containers nest, empty containers stay empty.
    {R"({"b": 1, "a": 2, "c": {"z": [], "y": {}}})",
     R"({"b": 1, "a": 2, "c": {"z": [], "y": {}}})"},
    {R"([[[]], [{}], {"x": [1, {"y": [2, 3]}]}])", R"([[[]], [{}], {"x": [1, {"y": [2, 3]}]}])"},
    {R"({"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}]})",
     R"({"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}]})"},
    {R"([1, "two", 3.0, [4], {"five": 5}, null, true])",
     R"([1, "two", 3.0, [4], {"five": 5}, null, true])"},
    {"[]", "[]"},
    {"{}", "{}"},
    // Top-level scalars.
    {R"("")", R"("")"},
    {"null", "null"},
    {"true", "true"},
    {"false", "false"},
    {"1e+16", "1e+16"},
    // Escapes in the input are decoded and re-escaped the Python way.
    {R"("\u00e9")", R"("\u00e9")"},
    {R"("\u00E9t\u00e9")", R"("\u00e9t\u00e9")"},
    {R"("\ud83d\ude00")", R"("\ud83d\ude00")"},
    {R"("\uD83D\uDE00")", R"("\ud83d\ude00")"},
    {"\"\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80\"", R"("\u00e9\u4e2d\ud83d\ude00")"},  // raw UTF-8
    {R"("\/\b\f\n\r\t\"\\")", R"("/\b\f\n\r\t\"\\")"},
    {R"("\u0000\u001f\u007f")", R"("\u0000\u001f\u007f")"},
    {R"({"\u00e9": 1, "e": 2})", R"({"\u00e9": 1, "e": 2})"},
    // Whitespace between tokens goes, Python's separators come in.
    {" \n\t{ \"a\" : [ 1 , 2 ] , \"b\":{\"c\":null} }\r\n ", R"({"a": [1, 2], "b": {"c": null}})"},
};

TEST(NormalizeJsonTextTest, MatchesPythonRoundTrip) {
  for (const NormalizeCase& c : kNormalizeCases) {
    const Result<std::string> r = NormalizeJsonText(c.text);
    ASSERT_TRUE(r.has_value()) << c.text << ": " << r.error().ToString();
    EXPECT_EQ(*r, c.python) << c.text;
  }
}

TEST(NormalizeJsonTextTest, NumbersBeyondDoubleRange) {
  // Python keeps a 401-digit integer exact, and reads a 401-digit float as inf.
  const std::string huge = "1" + std::string(400, '0');
  const std::string negative_huge = "-" + std::string(330, '9');
  struct Case {
    std::string text;
    std::string python;
  };
  const Case cases[] = {
      {huge, huge},
      {negative_huge, negative_huge},
      {"[" + huge + ", 1]", "[" + huge + ", 1]"},
      {huge + ".0", "Infinity"},
      {"[" + huge + "e0]", "[Infinity]"},
      {R"({"a": -)" + huge + R"(.5, "b": 1E400, "c": [2, 1e999]})",
       R"({"a": -Infinity, "b": Infinity, "c": [2, Infinity]})"},
      // Look-alikes inside strings and keys stay strings, escaped quotes included.
      {R"({"1E400": "1e999", "x": [1e999]})", R"({"1E400": "1e999", "x": [Infinity]})"},
      {R"(["a\"1e999", 1e999, "\\", -1e999])", R"(["a\"1e999", Infinity, "\\", -Infinity])"},
  };
  for (const Case& c : cases) {
    const Result<std::string> r = NormalizeJsonText(c.text);
    ASSERT_TRUE(r.has_value()) << c.text << ": " << r.error().ToString();
    EXPECT_EQ(*r, c.python) << c.text;
  }
}

TEST(NormalizeJsonTextTest, ErrorOffsetsAreThoseOfTheOriginalText) {
  // A number beyond double range before the error must not shift the reported byte.
  const Result<std::string> huge = NormalizeJsonText("[1E400, x]");
  const Result<std::string> small = NormalizeJsonText("[12345, x]");
  ASSERT_FALSE(huge.has_value());
  ASSERT_FALSE(small.has_value());
  EXPECT_EQ(huge.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(huge.error().message(), HasSubstr("at byte 9:"));
  EXPECT_THAT(small.error().message(), HasSubstr("at byte 9:"));
}

TEST(NormalizeJsonTextTest, RejectsInvalidJson) {
  // Each of these raises in Python's json.loads.
  constexpr std::string_view kInvalid[] = {
      "",           " ",       "{",      "[1,]",
      R"({"a" 1})", "tru",     "1 2",    "[1] x",
      "'a'",        "{a:1}",   "01",     "1.",
      ".5",         "-",       "+1",     R"({"a":1,})",
      R"("\x")",    R"("abc)", "[1 2]",  R"({"a":1 "b":2})",
      "\"\t\"",     "\0"sv,    "[1E400", "[1E400 2]",
  };
  for (std::string_view text : kInvalid) {
    const Result<std::string> r = NormalizeJsonText(text);
    ASSERT_FALSE(r.has_value()) << "'" << text << "' gave " << *r;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << "'" << text << "'";
  }
}

// Python's json.loads keeps the last of two equal keys; ferry's contract refuses the ambiguity
// instead, since a writer that silently drops a value would corrupt the record.
TEST(NormalizeJsonTextTest, RejectsDuplicateKeys) {
  for (std::string_view text : {R"({"a": 1, "a": 2})", R"({"a": 1, "b": {"c": 1, "c": 1}})",
                                R"([{"x": 1}, {"y": 1, "x": 2, "y": 3}])",
                                R"({"a": 1, "\u0061": 2})"}) {  // the same key, spelled twice
    const Result<std::string> r = NormalizeJsonText(text);
    ASSERT_FALSE(r.has_value()) << text << " gave " << *r;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(r.error().message(), HasSubstr("twice")) << text;
  }
}

TEST(NormalizeJsonTextTest, AgreesWithDumpPythonJson) {
  // What ferry writes for finite values is a fixed point of the normalization.
  nlohmann::ordered_json j = NestedObject();
  j.erase("nan");
  j.erase("inf");
  j.erase("ninf");
  j["alpha"].erase(j["alpha"].size() - 1);
  const std::string dumped = DumpPythonJson(j, JsonKeyOrder::kInsertion);
  const Result<std::string> normalized = NormalizeJsonText(dumped);
  ASSERT_TRUE(normalized.has_value()) << normalized.error().ToString();
  EXPECT_EQ(*normalized, dumped);
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

TEST(NormalizeJsonTextPythonTokens, KeepsNaNAndInfinityAsPythonWritesThem) {
  // json.dumps(json.loads(x)) in CPython 3.11.
  EXPECT_EQ(NormalizeJsonText("[NaN,Infinity,-Infinity]").value(), "[NaN, Infinity, -Infinity]");
  EXPECT_EQ(NormalizeJsonText(R"({"a":NaN, "NaN": "NaN"})").value(), R"({"a": NaN, "NaN": "NaN"})");
  EXPECT_EQ(NormalizeJsonText("NaN").value(), "NaN");
  EXPECT_FALSE(NormalizeJsonText("[NaN1]").has_value());
  EXPECT_FALSE(NormalizeJsonText("[nan]").has_value());
  EXPECT_FALSE(NormalizeJsonText("[-NaN]").has_value());
}

TEST(ValidatePythonJson, AcceptsWhatJsonLoadsAccepts) {
  for (const char* ok : {"{}", "[1, 2]", R"({"a": 1, "a": 2})", "NaN", "[-Infinity]", "1e400",
                         "123456789012345678901234567890", R"("\u00e9")", " null "}) {
    EXPECT_TRUE(ValidatePythonJson(ok).ok()) << ok;
  }
  for (const char* bad : {"", "{", "[1,]", "{'a': 1}", "nan", "[1] [2]", "01", "\"\x01\""}) {
    const Status s = ValidatePythonJson(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace ferry
