// Tests of the MDS column encodings (spec §6): ColumnEncoding::Parse and EncodeValue
// (decode_value_test.cc has DecodeValue, SplitImageList and round trips). Expected bytes come from
// the spec's worked examples or from Python (numpy, json, decimal) and are hard-coded.
#include "ferry/format/encoding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "base/hex.h"
#include "format/encoding_testutil.h"

namespace ferry {
namespace {

using ::testing::HasSubstr;
using namespace ::ferry::internal_encoding_test;  // NOLINT: test helpers

// ---------------------------------------------------------------------------------------------
// ColumnEncoding::Parse

TEST(ColumnEncodingParse, AcceptsEveryNameOfTheSpecWithItsFixedSize) {
  const std::vector<std::pair<std::string, std::optional<uint32_t>>> names = {
      {"bytes", std::nullopt},
      {"str", std::nullopt},
      {"int", 8},
      {"uint8", 1},
      {"uint16", 2},
      {"uint32", 4},
      {"uint64", 8},
      {"int8", 1},
      {"int16", 2},
      {"int32", 4},
      {"int64", 8},
      {"float16", 2},
      {"float32", 4},
      {"float64", 8},
      {"str_int", std::nullopt},
      {"str_float", std::nullopt},
      {"str_decimal", std::nullopt},
      {"json", std::nullopt},
      {"pkl", std::nullopt},
      {"pil", std::nullopt},
      {"jpeg", std::nullopt},
      {"png", std::nullopt},
      {"list[pil]", std::nullopt},
      {"list[jpeg]", std::nullopt},
      {"list[png]", std::nullopt},
      {"jpeg_array", std::nullopt},
      {"jpegarray", std::nullopt},
      {"ndarray", std::nullopt},
      {"ndarray:", std::nullopt},
  };
  for (const auto& [name, size] : names) {
    auto e = ColumnEncoding::Parse(name);
    ASSERT_TRUE(e.has_value()) << name << ": " << e.status().ToString();
    EXPECT_EQ(e->text(), name);
    EXPECT_EQ(e->fixed_size(), size) << name;
  }
}

TEST(ColumnEncodingParse, KindsAndFlags) {
  EXPECT_EQ(Enc("jpegarray").kind(), EncodingKind::kJpegArray);
  EXPECT_EQ(Enc("jpeg_array").kind(), EncodingKind::kJpegArray);
  EXPECT_EQ(Enc("int").kind(), EncodingKind::kInt);
  EXPECT_EQ(Enc("int64").kind(), EncodingKind::kInt64);
  EXPECT_EQ(Enc("list[png]").kind(), EncodingKind::kListPng);
  EXPECT_TRUE(Enc("pkl").unsafe());
  for (const char* name : {"bytes", "str", "json", "ndarray", "jpeg", "str_int"}) {
    EXPECT_FALSE(Enc(name).unsafe()) << name;
  }
  for (const char* name : {"pil", "jpeg", "png", "list[pil]", "list[jpeg]", "list[png]",
                           "jpeg_array", "jpegarray", "jpeg:90"}) {
    EXPECT_TRUE(Enc(name).is_image()) << name;
  }
  for (const char* name : {"bytes", "ndarray", "pkl", "str"}) EXPECT_FALSE(Enc(name).is_image());
}

TEST(ColumnEncodingParse, JpegWithQualityIsAJpegColumn) {
  for (const char* name : {"jpeg:0", "jpeg:75", "jpeg:100"}) {
    auto e = ColumnEncoding::Parse(name);
    ASSERT_TRUE(e.has_value()) << name;
    EXPECT_EQ(e->kind(), EncodingKind::kJpeg);
    EXPECT_EQ(e->text(), name);
    EXPECT_FALSE(e->fixed_size().has_value());
  }
  for (const char* name : {"jpeg:", "jpeg:101", "jpeg:-1", "jpeg:x", "jpeg:7:5", "jpeg:1.5"}) {
    auto e = ColumnEncoding::Parse(name);
    ASSERT_FALSE(e.has_value()) << name;
    EXPECT_EQ(e.error().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(e.error().message(), HasSubstr(name));
  }
}

TEST(ColumnEncodingParse, NdarrayForms) {
  const ColumnEncoding dynamic = Enc("ndarray");
  EXPECT_EQ(dynamic.kind(), EncodingKind::kNdArray);
  EXPECT_FALSE(dynamic.static_dtype().has_value());
  EXPECT_TRUE(dynamic.static_shape().empty());

  const ColumnEncoding dtype_only = Enc("ndarray:float32");
  EXPECT_EQ(dtype_only.static_dtype(), DType::kFloat32);
  EXPECT_TRUE(dtype_only.static_shape().empty());
  EXPECT_FALSE(dtype_only.fixed_size().has_value());

  const ColumnEncoding fixed = Enc("ndarray:int16:3,4");
  EXPECT_EQ(fixed.static_dtype(), DType::kInt16);
  EXPECT_EQ(fixed.static_shape(), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(fixed.fixed_size(), 24u);

  EXPECT_EQ(Enc("ndarray:uint8:2,2").fixed_size(), 4u);
  EXPECT_EQ(Enc("ndarray:float64:5").fixed_size(), 40u);
  EXPECT_EQ(Enc("ndarray:uint8:2,2,2").fixed_size(), 8u);
  EXPECT_EQ(Enc("ndarray:uint64:1,1,1,1").fixed_size(), 8u);
}

TEST(ColumnEncodingParse, RejectsWhatTheSpecRejects) {
  for (const char* text : {"str:x",
                           "ndarray:bool",
                           "ndarray:int16:0",
                           "ndarray:int16:3,",
                           "foo",
                           "",
                           "Int",
                           " str",
                           "str ",
                           "bytes:",
                           "int:8",
                           "list[pil]:1",
                           "ndarray:int16:3,4:5",
                           "ndarray:int16:,3",
                           "ndarray:int16:-1",
                           "ndarray:int16:3x4",
                           "ndarray:complex64",
                           "ndarray::3",
                           "ndarray:int16:",
                           "list[bytes]",
                           "jpegarray:1",
                           "pickle"}) {
    auto e = ColumnEncoding::Parse(text);
    ASSERT_FALSE(e.has_value()) << "'" << text << "' was accepted";
    EXPECT_EQ(e.error().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(e.error().message(), HasSubstr(std::string("'") + text)) << text;
  }
}

TEST(ColumnEncodingParse, RejectsAFixedArrayOf4GiBOrMore) {
  auto e = ColumnEncoding::Parse("ndarray:uint8:65536,65536");
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().code(), StatusCode::kInvalidArgument);
  // Dimensions whose product overflows 64 bits must not wrap around to a small size.
  auto wrap = ColumnEncoding::Parse("ndarray:uint8:4294967296,4294967296,16");
  ASSERT_FALSE(wrap.has_value());
  EXPECT_EQ(wrap.error().code(), StatusCode::kInvalidArgument);
  // Just under the limit is fine.
  EXPECT_EQ(Enc("ndarray:uint8:65535,65537").fixed_size(), 4294967295u);
}

TEST(DType, NamesCodesAndSizes) {
  const std::vector<std::tuple<DType, std::string, uint8_t, size_t>> all = {
      {DType::kUInt8, "uint8", 8, 1},      {DType::kInt8, "int8", 9, 1},
      {DType::kUInt16, "uint16", 16, 2},   {DType::kInt16, "int16", 17, 2},
      {DType::kFloat16, "float16", 18, 2}, {DType::kUInt32, "uint32", 32, 4},
      {DType::kInt32, "int32", 33, 4},     {DType::kFloat32, "float32", 34, 4},
      {DType::kUInt64, "uint64", 64, 8},   {DType::kInt64, "int64", 65, 8},
      {DType::kFloat64, "float64", 66, 8},
  };
  int known_codes = 0;
  for (const auto& [dtype, name, code, size] : all) {
    EXPECT_EQ(DTypeName(dtype), name);
    EXPECT_EQ(DTypeFromName(name), dtype);
    EXPECT_EQ(DTypeFromCode(code), dtype);
    EXPECT_EQ(static_cast<uint8_t>(dtype), code);
    EXPECT_EQ(DTypeSize(dtype), size);
  }
  for (int c = 0; c < 256; ++c) known_codes += DTypeFromCode(static_cast<uint8_t>(c)).has_value();
  EXPECT_EQ(known_codes, 11);
  EXPECT_FALSE(DTypeFromName("bool").has_value());
  EXPECT_FALSE(DTypeFromName("float128").has_value());
}

// ---------------------------------------------------------------------------------------------
// The spec's worked examples (§4, §6.6, §6.7, §6.8)

TEST(SpecExamples, NdarrayInt16TwoByThree) {
  std::string data = HexBytes("0100 0200 0300 0400 0500 0600");
  EXPECT_EQ(EncodeHex("ndarray", Array(DType::kInt16, {2, 3}, data)),
            "1108020301000200030004000500"
            "0600");
}

TEST(SpecExamples, NdarrayUint8OfLength300UsesU16ShapeWords) {
  std::string data(300, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i);
  const std::string hex = EncodeHex("ndarray", Array(DType::kUInt8, {300}, data));
  EXPECT_EQ(hex.substr(0, 8), "08052c01");
  EXPECT_EQ(hex.size(), 2 * (4 + 300));
  EXPECT_EQ(hex.substr(8), ToHex(data));
}

TEST(SpecExamples, NdarrayFloat32WithStaticDtype) {
  std::string data = HexBytes("0000803f 000000c0");  // 1.0, -2.0
  EXPECT_EQ(EncodeHex("ndarray:float32", Array(DType::kFloat32, {2}, data)),
            "04020000803f000000c0");
}

TEST(SpecExamples, NdarrayUint8FixedShapeHasNoHeader) {
  EXPECT_EQ(EncodeHex("ndarray:uint8:2,2", Array(DType::kUInt8, {2, 2}, HexBytes("01020304"))),
            "01020304");
}

TEST(SpecExamples, NdarrayShapeWordWidths) {
  // Largest dimension 65536 -> u32 words; the writer picks the width of the LARGEST dimension.
  NdArray wide = Array(DType::kUInt8, {1, 65536}, std::string(65536, 'x'));
  const std::string hex = EncodeHex("ndarray:uint8", wide);
  EXPECT_EQ(hex.substr(0, 2 + 16),
            "0a"
            "01000000"
            "00000100");
  // 255 still fits u8, 256 needs u16.
  EXPECT_EQ(
      EncodeHex("ndarray:uint8", Array(DType::kUInt8, {255}, std::string(255, 'a'))).substr(0, 4),
      "04ff");
  EXPECT_EQ(
      EncodeHex("ndarray:uint8", Array(DType::kUInt8, {256}, std::string(256, 'a'))).substr(0, 6),
      "050001");
}

TEST(SpecExamples, PilTwoByOneRgb) {
  PilImage image{2, 1, "RGB", HexBytes("ff0010 ff0010")};
  EXPECT_EQ(EncodeHex("pil", image), "020000000100000003000000524742ff0010ff0010");
}

TEST(SpecExamples, JpegArrayOfTwoElements) {
  ValueList items{Value(Bytes{"AB"}), Value(Bytes{"CDE"})};
  EXPECT_EQ(EncodeHex("jpeg_array", items),
            "020000000200000003000000"
            "4142434445");
  EXPECT_EQ(EncodeHex("jpegarray", items),
            "020000000200000003000000"
            "4142434445");
  // The list[...] container has the reserved word in front.
  EXPECT_EQ(EncodeHex("list[jpeg]", items),
            "00000000020000000200000003000000"
            "4142434445");
  EXPECT_EQ(EncodeHex("list[png]", ValueList{}), "0000000000000000");
}

TEST(SpecExamples, IntColumnOfTheWorkedShard) {
  EXPECT_EQ(EncodeHex("int", Value(5)), "0500000000000000");
  EXPECT_EQ(EncodeHex("int", Value(-1)), "ffffffffffffffff");
  EXPECT_EQ(EncodeText("str", Value("hi")), "hi");
  EXPECT_EQ(EncodeText("str", Value("")), "");
}

TEST(SpecExamples, JsonUsesPythonSeparatorsAndAsciiEscapesWithoutSortingKeys) {
  EXPECT_EQ(EncodeText("json", Json{R"({"b":[1,2.5,null,true],"a":"é"})"}),
            R"({"b": [1, 2.5, null, true], "a": "\u00e9"})");
}

// ---------------------------------------------------------------------------------------------
// Fixed-width numbers (§6.2)

TEST(EncodeIntegers, LittleEndianTwosComplement) {
  EXPECT_EQ(EncodeHex("uint8", Value(255)), "ff");
  EXPECT_EQ(EncodeHex("uint8", Value(uint64_t{0})), "00");
  EXPECT_EQ(EncodeHex("uint16", Value(0x1234)), "3412");
  EXPECT_EQ(EncodeHex("uint32", Value(uint64_t{0xdeadbeef})), "efbeadde");
  EXPECT_EQ(EncodeHex("uint64", Value(std::numeric_limits<uint64_t>::max())), "ffffffffffffffff");
  EXPECT_EQ(EncodeHex("int8", Value(-128)), "80");
  EXPECT_EQ(EncodeHex("int8", Value(127)), "7f");
  EXPECT_EQ(EncodeHex("int16", Value(-2)), "feff");
  EXPECT_EQ(EncodeHex("int32", Value(std::numeric_limits<int32_t>::min())), "00000080");
  EXPECT_EQ(EncodeHex("int64", Value(std::numeric_limits<int64_t>::min())), "0000000000000080");
  EXPECT_EQ(EncodeHex("int", Value(std::numeric_limits<int64_t>::max())), "ffffffffffffff7f");
  // An unsigned value that fits a signed column, and a bool (Python counts it as 0/1).
  EXPECT_EQ(EncodeHex("int", Value(uint64_t{7})), "0700000000000000");
  EXPECT_EQ(EncodeHex("uint8", Value(true)), "01");
  EXPECT_EQ(EncodeHex("int", Value(false)), "0000000000000000");
}

TEST(EncodeIntegers, OutOfRangeIsRejectedNeverWrapped) {
  struct Case {
    const char* encoding;
    Value value;
  };
  const std::vector<Case> cases = {
      {"uint8", Value(256)},
      {"uint8", Value(-1)},
      {"uint16", Value(65536)},
      {"uint32", Value(int64_t{1} << 32)},
      {"uint64", Value(-1)},
      {"int8", Value(-129)},
      {"int8", Value(128)},
      {"int16", Value(32768)},
      {"int32", Value(int64_t{1} << 31)},
      {"int64", Value(uint64_t{1} << 63)},
      {"int", Value(std::numeric_limits<uint64_t>::max())},
  };
  for (const auto& c : cases) {
    const Status s = EncodeStatus(c.encoding, c.value);
    ASSERT_FALSE(s.ok()) << c.encoding;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("out of range")) << c.encoding;
    EXPECT_THAT(s.message(), HasSubstr(c.encoding));
  }
  // The message prints the unsigned value as given, not a wrapped negative number.
  EXPECT_THAT(EncodeStatus("int", Value(std::numeric_limits<uint64_t>::max())).message(),
              HasSubstr("18446744073709551615"));
}

TEST(EncodeIntegers, WrongKindIsRejected) {
  for (const Value& v : {Value(1.5), Value("7"), Value(), Value(NumberText{"7"})}) {
    const Status s = EncodeStatus("int32", v);
    ASSERT_FALSE(s.ok()) << ValueKindName(v);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr(ValueKindName(v)));
  }
}

TEST(EncodeFloats, RoundToNearestEvenAndOverflowToInfinity) {
  EXPECT_EQ(EncodeHex("float16", Value(1e6)), "007c");
  EXPECT_EQ(EncodeHex("float16", Value(-1e6)), "00fc");
  EXPECT_EQ(EncodeHex("float16", Value(65504.0)), "ff7b");
  EXPECT_EQ(EncodeHex("float16", Value(65519.99)), "ff7b");
  EXPECT_EQ(EncodeHex("float16", Value(65520.0)), "007c");
  EXPECT_EQ(EncodeHex("float16", Value(1.5)), "003e");
  EXPECT_EQ(EncodeHex("float16", Value(0.1)), "662e");
  EXPECT_EQ(EncodeHex("float16", Value(std::ldexp(1.0, -24))), "0100");  // smallest subnormal
  EXPECT_EQ(EncodeHex("float16", Value(std::ldexp(1.0, -25))), "0000");  // tie rounds to even
  EXPECT_EQ(EncodeHex("float16", Value(std::ldexp(1.0000001, -25))), "0100");
  EXPECT_EQ(EncodeHex("float32", Value(0.1)), "cdcccc3d");
  EXPECT_EQ(EncodeHex("float32", Value(16777217.0)), "0000804b");  // tie to even
  EXPECT_EQ(EncodeHex("float32", Value(1e39)), "0000807f");
  EXPECT_EQ(EncodeHex("float64", Value(3.0)), "0000000000000840");
  // Integers are accepted and converted.
  EXPECT_EQ(EncodeHex("float64", Value(3)), "0000000000000840");
  EXPECT_EQ(EncodeHex("float32", Value(uint64_t{16777217})), "0000804b");
}

TEST(EncodeFloats, NanIsCanonicalAndNegativeZeroIsKept) {
  const double quiet = std::numeric_limits<double>::quiet_NaN();
  const double payload_nan = std::bit_cast<double>(uint64_t{0x7ff8000000000123});
  const double signaling = std::bit_cast<double>(uint64_t{0x7ff0000000000001});
  for (double nan : {quiet, payload_nan, signaling}) {
    EXPECT_EQ(EncodeHex("float16", Value(nan)), "007e");
    EXPECT_EQ(EncodeHex("float32", Value(nan)), "0000c07f");
    EXPECT_EQ(EncodeHex("float64", Value(nan)), "000000000000f87f");
  }
  EXPECT_EQ(EncodeHex("float16", Value(-0.0)), "0080");
  EXPECT_EQ(EncodeHex("float32", Value(-0.0)), "00000080");
  EXPECT_EQ(EncodeHex("float64", Value(-0.0)), "0000000000000080");
}

TEST(EncodeFloats, WrongKindIsRejected) {
  for (const char* enc : {"float16", "float32", "float64"}) {
    const Status s = EncodeStatus(enc, Value("1.0"));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << enc;
  }
}

// ---------------------------------------------------------------------------------------------
// Bytes pass-through and fixed sizes

TEST(BytesPassThrough, StoredVerbatimInAnyColumn) {
  const std::string odd("\xff\xfe\x00zz", 5);  // not UTF-8, not JSON, not a number
  for (const char* enc :
       {"bytes", "str", "json", "pkl", "str_int", "str_float", "str_decimal", "pil", "jpeg", "png",
        "list[pil]", "list[jpeg]", "jpeg_array", "ndarray", "ndarray:float32"}) {
    EXPECT_EQ(EncodeText(enc, Bytes{odd}), odd) << enc;
  }
  EXPECT_EQ(EncodeText("bytes", Bytes{""}), "");
}

TEST(BytesPassThrough, FixedSizeColumnsStillCheckTheLength) {
  EXPECT_EQ(EncodeHex("int", Bytes{std::string(8, '\x01')}), "0101010101010101");
  EXPECT_EQ(EncodeHex("ndarray:uint8:2,2", Bytes{"abcd"}), "61626364");
  struct Case {
    const char* encoding;
    size_t size;
  };
  for (const Case& c : {Case{"int", 7}, Case{"int", 9}, Case{"uint8", 0}, Case{"float16", 3},
                        Case{"ndarray:uint8:2,2", 3}, Case{"ndarray:int16:3,4", 25}}) {
    const Status s = EncodeStatus(c.encoding, Bytes{std::string(c.size, 'x')});
    ASSERT_FALSE(s.ok()) << c.encoding << " " << c.size;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr(std::to_string(c.size)));
    EXPECT_THAT(s.message(), HasSubstr(c.encoding));
  }
}

TEST(BytesColumns, TakeOnlyBytes) {
  for (const char* enc : {"bytes", "pkl", "jpeg", "png"}) {
    EXPECT_EQ(EncodeStatus(enc, Value("text")).code(), StatusCode::kInvalidArgument) << enc;
  }
}

// ---------------------------------------------------------------------------------------------
// Text encodings (§6.3, §6.4)

TEST(EncodeStr, StoresUtf8AndRejectsInvalidUtf8) {
  EXPECT_EQ(EncodeText("str", Value(std::string("a\0b\xc3\xa9\xf0\x9f\x98\x80", 9))),
            std::string("a\0b\xc3\xa9\xf0\x9f\x98\x80", 9));
  for (const std::string& bad :
       {std::string("\xff"), std::string("ab\xc3"), std::string("\xc0\x80"),
        std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"), std::string("\x80")}) {
    const Status s = EncodeStatus("str", Value(bad));
    ASSERT_FALSE(s.ok()) << ToHex(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("UTF-8"));
  }
  EXPECT_EQ(EncodeStatus("str", Value(5)).code(), StatusCode::kInvalidArgument);
}

TEST(EncodeStrInt, IntegersAndCanonicalDigitStrings) {
  EXPECT_EQ(EncodeText("str_int", Value(0)), "0");
  EXPECT_EQ(EncodeText("str_int", Value(-5)), "-5");
  EXPECT_EQ(EncodeText("str_int", Value(std::numeric_limits<int64_t>::min())),
            "-9223372036854775808");
  EXPECT_EQ(EncodeText("str_int", Value(std::numeric_limits<uint64_t>::max())),
            "18446744073709551615");
  // Python str(int(text)).
  const std::vector<std::pair<std::string, std::string>> texts = {
      {"007", "7"},
      {"-0", "0"},
      {"-00", "0"},
      {"+5", "5"},
      {" 12 ", "12"},
      {"1_000", "1000"},
      {"0_0", "0"},
      {"1267650600228229401496703205376", "1267650600228229401496703205376"},
      {"-0001267650600228229401496703205376", "-1267650600228229401496703205376"},
  };
  for (const auto& [in, out] : texts) {
    EXPECT_EQ(EncodeText("str_int", Value(in)), out) << in;
    EXPECT_EQ(EncodeText("str_int", Value(NumberText{in})), out) << in;
  }
  for (const char* bad : {"", "-", "1.5", "abc", "1__0", "_1", "1_", "0x10", "1e5", "+-1", "1 2"}) {
    const Status s = EncodeStatus("str_int", Value(bad));
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(EncodeStatus("str_int", Value(1.0)).code(), StatusCode::kInvalidArgument);
}

TEST(EncodeStrFloat, PythonRepr) {
  const std::vector<std::pair<double, std::string>> cases = {
      {0.0001, "0.0001"},
      {0.1, "0.1"},
      {1.0, "1.0"},
      {100.0, "100.0"},
      {123456789012345.6, "123456789012345.6"},
      {9999999999999998.0, "9999999999999998.0"},
      {1e-05, "1e-05"},
      {1e16, "1e+16"},
      {1.5e16, "1.5e+16"},
      {1.2345678901234568e+17, "1.2345678901234568e+17"},
      {5e-324, "5e-324"},
      {1.7976931348623157e+308, "1.7976931348623157e+308"},
      {0.30000000000000004, "0.30000000000000004"},
      {1e22, "1e+22"},
      {-0.0, "-0.0"},
      {std::numeric_limits<double>::infinity(), "inf"},
      {-std::numeric_limits<double>::infinity(), "-inf"},
      {std::numeric_limits<double>::quiet_NaN(), "nan"},
  };
  for (const auto& [v, text] : cases) EXPECT_EQ(EncodeText("str_float", Value(v)), text);
  EXPECT_EQ(EncodeStatus("str_float", Value("1.0")).code(), StatusCode::kInvalidArgument);
}

TEST(EncodeStrDecimal, MatchesPythonStrOfDecimal) {
  // Expectations computed with Python 3.11: str(Decimal(text)).
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"123.4500", "123.4500"},
      {"1e3", "1E+3"},
      {"1E+3", "1E+3"},
      {"1e-7", "1E-7"},
      {"-0", "-0"},
      {"0E-10", "0E-10"},
      {"1.5e5", "1.5E+5"},
      {"nan", "NaN"},
      {"-nan", "-NaN"},
      {"snan", "sNaN"},
      {"inf", "Infinity"},
      {"-Infinity", "-Infinity"},
      {"+inf", "Infinity"},
      {"NaN123", "NaN123"},
      {"nan0", "NaN"},
      {"sNaN007", "sNaN7"},
      {"0.000001", "0.000001"},
      {"0.0000001", "1E-7"},
      {"1234567890123456789012345678901234567890", "1234567890123456789012345678901234567890"},
      {"007.50", "7.50"},
      {"-007", "-7"},
      {"+1.0", "1.0"},
      {"  42  ", "42"},
      {"1_000", "1000"},
      {"1_000.000_1", "1000.0001"},
      {".5", "0.5"},
      {"5.", "5"},
      {"-.5", "-0.5"},
      {"0.0", "0.0"},
      {"00.00", "0.00"},
      {"1e-6", "0.000001"},
      {"12e-8", "1.2E-7"},
      {"0.00000123", "0.00000123"},
      {"123e5", "1.23E+7"},
      {"1.23e+20", "1.23E+20"},
      {"-1.5E-3", "-0.0015"},
      {"0e5", "0E+5"},
      {"0e-7", "0E-7"},
      {"-0.000", "-0.000"},
      {"1E+0", "1"},
      {"10E-1", "1.0"},
      {"0.0e0", "0.0"},
      {"1E+999999999999999999", "1E+999999999999999999"},
      {"1E-999999999999999999", "1E-999999999999999999"},
  };
  for (const auto& [in, out] : cases) {
    EXPECT_EQ(EncodeText("str_decimal", Value(in)), out) << in;
    EXPECT_EQ(EncodeText("str_decimal", Value(NumberText{in})), out) << in;
  }
  // Integers are their own Decimal text.
  EXPECT_EQ(EncodeText("str_decimal", Value(-12)), "-12");
  EXPECT_EQ(EncodeText("str_decimal", Value(std::numeric_limits<uint64_t>::max())),
            "18446744073709551615");
  // Python raises InvalidOperation for all of these.
  for (const char* bad : {"1e", "e5", "1..2", "1.2.3", "abc", "", "-", "1e+", "0x10", "1 2",
                          "infinit", "nan.5", "--1", "."}) {
    const Status s = EncodeStatus("str_decimal", Value(bad));
    ASSERT_FALSE(s.ok()) << "'" << bad << "' was accepted";
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(EncodeStatus("str_decimal", Value(1.5)).code(), StatusCode::kInvalidArgument);
}

TEST(EncodeJson, FromEveryAcceptedKind) {
  EXPECT_EQ(EncodeText("json", Json{"1E-7"}), "1e-07");
  EXPECT_EQ(
      EncodeText("json", Json{R"([1e16,-0.0,1180591620717411303424,"\ud83d\ude00","\u007f"])"}),
      R"([1e+16, -0.0, 1180591620717411303424, "\ud83d\ude00", "\u007f"])");
  EXPECT_EQ(EncodeText("json", Json{"{}"}), "{}");
  EXPECT_EQ(EncodeText("json", Json{"\"\""}), "\"\"");
  EXPECT_EQ(EncodeText("json", Value("\xf0\x9f\x98\x80\xc3\xa9")), R"("\ud83d\ude00\u00e9")");
  EXPECT_EQ(EncodeText("json", Value(std::string("a\0\n\xe2\x80\xa8", 6))), R"("a\u0000\n\u2028")");
  EXPECT_EQ(EncodeText("json", Value(-3)), "-3");
  EXPECT_EQ(EncodeText("json", Value(std::numeric_limits<uint64_t>::max())),
            "18446744073709551615");
  EXPECT_EQ(EncodeText("json", Value(0.1)), "0.1");
  EXPECT_EQ(EncodeText("json", Value(100.0)), "100.0");
  EXPECT_EQ(EncodeText("json", Value(1e22)), "1e+22");
  EXPECT_EQ(EncodeText("json", Value(std::numeric_limits<double>::quiet_NaN())), "NaN");
  EXPECT_EQ(EncodeText("json", Value(std::numeric_limits<double>::infinity())), "Infinity");
  EXPECT_EQ(EncodeText("json", Value(-std::numeric_limits<double>::infinity())), "-Infinity");
  EXPECT_EQ(EncodeText("json", Value(true)), "true");
  EXPECT_EQ(EncodeText("json", Value(false)), "false");
  EXPECT_EQ(EncodeText("json", Value()), "null");
  EXPECT_EQ(EncodeText("json", ValueList{Value(1), Value("a"), Value(), Value(2.5),
                                         Value(ValueList{Value(true)}), Value(Json{R"({"k":1})"})}),
            R"([1, "a", null, 2.5, [true], {"k": 1}])");
  EXPECT_EQ(EncodeText("json", ValueList{}), "[]");
}

TEST(EncodeJson, DeeplyNestedJsonDoesNotCrash) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::string out;
  const Status s = EncodeValue(Enc("json"), Json{deep}, out);
  if (s.ok()) {
    EXPECT_EQ(out.size(), deep.size());
  } else {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  }
}

TEST(EncodeJson, RejectsInvalidInput) {
  for (const Value& v :
       {Value(Json{"{"}), Value(Json{"[1,]"}), Value(Json{""}), Value(Json{R"({"a": 1, "a": 2})"}),
        Value(std::string("\xff")), Value(Array(DType::kUInt8, {1}, "x")), Value(NumberText{"1"}),
        Value(ValueList{Value(std::string("\xc3"))})}) {
    const Status s = EncodeStatus("json", v);
    ASSERT_FALSE(s.ok()) << ValueKindName(v);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  }
}

// ---------------------------------------------------------------------------------------------
// Structured encodings

TEST(EncodeNdarray, RejectsArraysTheWriterRejects) {
  struct Case {
    const char* encoding;
    NdArray array;
    const char* why;
  };
  const std::vector<Case> cases = {
      {"ndarray", Array(DType::kUInt8, {}, "x"), "0-d"},
      {"ndarray", Array(DType::kUInt8, {2, 0}, ""), "no elements"},
      {"ndarray", Array(DType::kInt16, {2}, "abc"), "needs 4"},
      {"ndarray", Array(DType::kUInt8, std::vector<uint64_t>(64, 1), "x"), "axes"},
      {"ndarray:int16", Array(DType::kUInt16, {1}, "ab"), "dtype"},
      {"ndarray:int16:3,4", Array(DType::kInt16, {4, 3}, std::string(24, 'x')), "shape"},
      {"ndarray:int16:3,4", Array(DType::kInt16, {12}, std::string(24, 'x')), "shape"},
      {"ndarray:int16:3,4", Array(DType::kInt32, {3, 4}, std::string(48, 'x')), "dtype"},
      // A shape whose element count overflows must not be accepted because of wrap-around.
      {"ndarray", Array(DType::kUInt8, {uint64_t{1} << 32, uint64_t{1} << 32}, ""), "too many"},
      {"ndarray", Array(DType::kUInt64, {uint64_t{1} << 61}, ""), "too many"},
  };
  for (const auto& c : cases) {
    const Status s = EncodeStatus(c.encoding, c.array);
    ASSERT_FALSE(s.ok()) << c.why;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.why;
    EXPECT_THAT(s.message(), HasSubstr(c.why));
  }
  // Only NdArray (or Bytes) goes into an ndarray column.
  EXPECT_EQ(EncodeStatus("ndarray", Value(1)).code(), StatusCode::kInvalidArgument);
}

TEST(EncodePil, ChecksThePixelCount) {
  EXPECT_EQ(EncodeStatus("pil", PilImage{2, 2, "RGB", std::string(11, 'x')}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeStatus("pil", PilImage{1, 1, "", ""}).code(), StatusCode::kInvalidArgument);
  // Mode "1" packs 8 pixels per byte, rows padded: 9x2 -> 2 bytes per row.
  EXPECT_EQ(EncodeHex("pil", PilImage{9, 2, "1", "abcd"}),
            "090000000200000001000000"
            "31"
            "61626364");
  EXPECT_EQ(EncodeStatus("pil", PilImage{9, 2, "1", "abc"}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeStatus("pil", Value(Bytes{"x"})).code(), StatusCode::kOk);  // pass-through
  // 2^31 x 2^31 RGBA needs 2^64 bytes; an empty pixel string must not pass as that.
  EXPECT_EQ(EncodeStatus("pil", PilImage{1u << 31, 1u << 31, "RGBA", ""}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeStatus("pil", Value(1)).code(), StatusCode::kInvalidArgument);
}

TEST(EncodeImageLists, ElementKinds) {
  PilImage pixel{1, 1, "L", "\x7f"};
  EXPECT_EQ(EncodeHex("list[pil]", ValueList{Value(pixel)}),
            "00000000"
            "01000000"
            "0e000000"
            "010000000100000001000000"
            "4c"
            "7f");
  // A pil image is only an element of list[pil]; the other lists take encoded bytes.
  EXPECT_EQ(EncodeStatus("list[jpeg]", ValueList{Value(pixel)}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeStatus("jpeg_array", ValueList{Value("text")}).code(),
            StatusCode::kInvalidArgument);
  const Status bad_element =
      EncodeStatus("list[pil]", ValueList{Value(pixel), Value(PilImage{2, 2, "L", "x"})});
  EXPECT_EQ(bad_element.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_element.message(), HasSubstr("element 1"));
  EXPECT_EQ(EncodeStatus("list[png]", Value(Bytes{"x"})).code(), StatusCode::kOk);
  EXPECT_EQ(EncodeStatus("list[png]", Value("x")).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ferry
