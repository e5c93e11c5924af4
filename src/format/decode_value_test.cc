// Tests of decoding MDS payloads (spec §6): DecodeValue, SplitImageList, and round trips
// DecodeValue(EncodeValue(v)) == v for every encoding. Expected bytes come from the spec's
// worked examples or from Python (numpy, json, decimal) and are hard-coded.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "base/hex.h"
#include "ferry/format/encoding.h"
#include "format/encoding_testutil.h"

namespace ferry {
namespace {

using ::testing::HasSubstr;
using namespace ::ferry::internal_encoding_test;  // NOLINT: test helpers

// ---------------------------------------------------------------------------------------------
// Decoding

Result<Value> Decode(std::string_view encoding, std::string_view payload) {
  return DecodeValue(Enc(encoding), payload);
}

void ExpectDataLoss(std::string_view encoding, std::string_view payload, std::string_view word) {
  auto v = Decode(encoding, payload);
  ASSERT_FALSE(v.has_value()) << encoding << " accepted " << ToHex(payload);
  EXPECT_EQ(v.error().code(), StatusCode::kDataLoss) << encoding << " " << ToHex(payload);
  EXPECT_THAT(v.error().message(), HasSubstr(word)) << encoding << " " << ToHex(payload);
}

TEST(DecodeValue, FixedWidthResultsAndTypes) {
  EXPECT_EQ(Decode("int", HexBytes("ffffffffffffffff")).value(), Value(int64_t{-1}));
  EXPECT_EQ(Decode("int8", HexBytes("80")).value(), Value(int64_t{-128}));
  EXPECT_EQ(Decode("int16", HexBytes("feff")).value(), Value(int64_t{-2}));
  EXPECT_EQ(Decode("int32", HexBytes("00000080")).value(), Value(int64_t{INT32_MIN}));
  EXPECT_EQ(Decode("uint8", HexBytes("ff")).value(), Value(uint64_t{255}));
  EXPECT_EQ(Decode("uint16", HexBytes("ffff")).value(), Value(uint64_t{65535}));
  EXPECT_EQ(Decode("uint32", HexBytes("ffffffff")).value(), Value(uint64_t{UINT32_MAX}));
  EXPECT_EQ(Decode("uint64", HexBytes("ffffffffffffffff")).value(), Value(UINT64_MAX));
  EXPECT_EQ(Decode("float16", HexBytes("662e")).value(), Value(0.0999755859375));
  EXPECT_EQ(Decode("float32", HexBytes("cdcccc3d")).value(), Value(0.10000000149011612));
  EXPECT_EQ(Decode("float16", HexBytes("007c")).value(),
            Value(std::numeric_limits<double>::infinity()));
  const double neg_zero = std::get<double>(Decode("float16", HexBytes("0080")).value());
  EXPECT_TRUE(neg_zero == 0.0 && std::signbit(neg_zero));
  EXPECT_TRUE(std::isnan(std::get<double>(Decode("float16", HexBytes("007e")).value())));
}

TEST(DecodeValue, WrongLengthForAFixedSizeColumnIsDataLoss) {
  ExpectDataLoss("int", HexBytes("01020304050607"), "8 bytes");
  ExpectDataLoss("int", HexBytes("010203040506070809"), "8 bytes");
  ExpectDataLoss("uint8", "", "1 bytes");
  ExpectDataLoss("float32", "abc", "4 bytes");
  ExpectDataLoss("ndarray:int16:3,4", std::string(23, 'x'), "24 bytes");
}

TEST(DecodeValue, TextErrors) {
  ExpectDataLoss("str", "ab\xff", "UTF-8");
  ExpectDataLoss("str", "\xed\xa0\x80", "UTF-8");  // a UTF-16 surrogate
  ExpectDataLoss("json", "\"\xc3\"", "UTF-8");
  ExpectDataLoss("json", "{\"a\": ", "not JSON");
  ExpectDataLoss("json", "", "not JSON");
  ExpectDataLoss("json", "[1] 2", "not JSON");
  ExpectDataLoss("str_int", "12a", "not an integer");
  ExpectDataLoss("str_int", "", "not an integer");
  ExpectDataLoss("str_int", "1.0", "not an integer");
  ExpectDataLoss("str_float", "one", "not a float");
  ExpectDataLoss("str_float", "", "not a float");
  ExpectDataLoss("str_decimal", "1e", "not a decimal");
  ExpectDataLoss("str_decimal", "x", "not a decimal");
}

TEST(DecodeValue, JsonAcceptsWhatPythonWrites) {
  // json.dumps output with Python-only tokens and a repeated key still decodes.
  for (const char* text : {"NaN", R"({"a": [Infinity, -Infinity], "a": 1})", "1e400", "null"}) {
    auto v = DecodeValue(ColumnEncoding::Parse("json").value(), text);
    ASSERT_TRUE(v.has_value()) << text << ": " << v.status().ToString();
    EXPECT_EQ(std::get<Json>(*v).text, text);
  }
}

TEST(DecodeValue, StrIntPicksTheNarrowestType) {
  EXPECT_EQ(Decode("str_int", "-5").value(), Value(int64_t{-5}));
  EXPECT_EQ(Decode("str_int", "9223372036854775807").value(), Value(INT64_MAX));
  EXPECT_EQ(Decode("str_int", "-9223372036854775808").value(), Value(INT64_MIN));
  EXPECT_EQ(Decode("str_int", "9223372036854775808").value(),
            Value(uint64_t{9223372036854775808u}));
  EXPECT_EQ(Decode("str_int", "18446744073709551616").value(),
            Value(NumberText{"18446744073709551616"}));
  EXPECT_EQ(Decode("str_int", "-1267650600228229401496703205376").value(),
            Value(NumberText{"-1267650600228229401496703205376"}));
}

TEST(DecodeValue, NdarrayErrors) {
  ExpectDataLoss("ndarray", "", "empty");
  ExpectDataLoss("ndarray", HexBytes("07 04 01 00"), "unknown dtype code 7");
  ExpectDataLoss("ndarray", HexBytes("01 04 01 00"), "unknown dtype code 1");
  ExpectDataLoss("ndarray", HexBytes("08"), "shape byte");
  ExpectDataLoss("ndarray", HexBytes("08 00"), "0 dimensions");
  ExpectDataLoss("ndarray", HexBytes("08 03 01 02 03"), "0 dimensions");   // ndim 0, u64 words
  ExpectDataLoss("ndarray:uint8", HexBytes("08 01"), "inside its shape");  // 2 u8 dims, 1 byte
  ExpectDataLoss("ndarray", HexBytes("11 0b 0100"), "inside its shape");   // 2 u64 dims, 2 bytes
  // Values too short or too long for the shape.
  ExpectDataLoss("ndarray", HexBytes("11 08 0203 0100020003000400050006"), "needs 12");
  ExpectDataLoss("ndarray", HexBytes("11 08 0203 010002000300040005000600 07"), "needs 12");
  ExpectDataLoss("ndarray:float32", HexBytes("04 02 0000803f"), "needs 8");
  // Not a whole number of elements.
  ExpectDataLoss("ndarray:int32", HexBytes("04 01 0102"), "needs 4");
}

TEST(DecodeValue, NdarrayShapeThatOverflowsOrExceedsThePayloadIsDataLoss) {
  // Two u64 dimensions of 2^40: the product overflows 64 bits.
  ExpectDataLoss("ndarray:uint8", HexBytes("0b 0000000000010000 0000000000010000 00112233"),
                 "more than 2^64");
  // Product exactly 2^64.
  ExpectDataLoss("ndarray:uint8", HexBytes("0b 0000000001000000 0000000001000000 00"),
                 "more than 2^64");
  // Element count fits 64 bits but count * itemsize does not.
  ExpectDataLoss("ndarray:uint64", HexBytes("07 0000000000000020 0011223344556677"), "needs");
  // A large but representable shape with a tiny payload.
  ExpectDataLoss("ndarray:uint8", HexBytes("0a ffffffff ffffffff 00"),
                 "needs 18446744065119617025");
  ExpectDataLoss("ndarray", HexBytes("08 06 ffffffff 0102"), "needs 4294967295");
}

TEST(DecodeValue, PilErrors) {
  ExpectDataLoss("pil", HexBytes("0200000001000000"), "12-byte header");
  ExpectDataLoss("pil", HexBytes("020000000100000000000000"), "mode of 0 bytes");
  ExpectDataLoss("pil", HexBytes("0200000001000000ffffffff 524742"), "mode of 4294967295");
  ExpectDataLoss("pil", HexBytes("020000000100000003000000 524742 ff0010ff00"), "needs 6");
  ExpectDataLoss("pil", HexBytes("ffffffffffffffff03000000 524742 00"), "needs");
  // Width x height x bytes per pixel beyond 64 bits must not wrap around to the payload size:
  // 2^31 x 2^31 RGBA is 2^64 bytes, which wraps to 0 in 64-bit arithmetic.
  ExpectDataLoss("pil", HexBytes("00000080 00000080 04000000 52474241"), "needs");
  ExpectDataLoss("pil", HexBytes("00000080 00000080 01000000 49"), "needs");    // "I", 4 bytes/px
  ExpectDataLoss("pil", HexBytes("00000080 00000080 02000000 4c41"), "needs");  // "LA", 2^63 B
  // A mode we do not know is kept with its bytes (PIL knows more modes than we check).
  auto odd = Decode("pil", HexBytes("010000000100000003000000 585858 0102"));
  ASSERT_TRUE(odd.has_value());
  EXPECT_EQ(std::get<PilImage>(*odd).mode, "XXX");
  EXPECT_EQ(std::get<PilImage>(*odd).pixels, HexBytes("0102"));
}

TEST(DecodeValue, ImageListErrors) {
  // Header shorter than the reserved word + count.
  ExpectDataLoss("list[jpeg]", HexBytes("0000000001"), "header");
  ExpectDataLoss("jpeg_array", HexBytes("010000"), "header");
  // A count whose size table cannot fit.
  ExpectDataLoss("list[png]", HexBytes("00000000 ffffffff 01000000"), "4294967295 elements");
  ExpectDataLoss("jpeg_array", HexBytes("ffffffff 00000000"), "4294967295 elements");
  ExpectDataLoss("jpeg_array", HexBytes("02000000 01000000"), "2 elements");
  // Element sizes that run past the payload.
  ExpectDataLoss("jpeg_array", HexBytes("01000000 ffffffff 4142"), "element 0 of 4294967295");
  ExpectDataLoss("jpeg_array", HexBytes("02000000 01000000 ffffffff 41 42"),
                 "element 1 of 4294967295");
  ExpectDataLoss("list[jpeg]", HexBytes("00000000 02000000 02000000 02000000 414243"), "element 1");
  // Bytes after the last element.
  ExpectDataLoss("jpeg_array", HexBytes("01000000 01000000 41 42"), "after its last element");
  // A broken pil element names its position.
  ExpectDataLoss("list[pil]",
                 HexBytes("00000000 02000000 0e000000 04000000"
                          "010000000100000001000000 4c 7f"
                          "00000000"),
                 "element 1");
}

TEST(SplitImageList, ViewsIntoThePayload) {
  const std::string payload = HexBytes("02000000 02000000 03000000 4142 434445");
  auto parts = SplitImageList(payload, /*with_reserved_word=*/false);
  ASSERT_TRUE(parts.has_value()) << parts.status().ToString();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0], "AB");
  EXPECT_EQ((*parts)[1], "CDE");
  EXPECT_EQ((*parts)[0].data(), payload.data() + 12);  // no copy
  // The same bytes read with a reserved word: count 2 at offset 4 but only one size fits.
  auto shifted = SplitImageList(payload, /*with_reserved_word=*/true);
  ASSERT_FALSE(shifted.has_value());
  EXPECT_EQ(shifted.error().code(), StatusCode::kDataLoss);
  const std::string no_elements = HexBytes("00000000 00000000");
  auto empty = SplitImageList(no_elements, true);
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->empty());
  // An empty element is legal.
  const std::string one_empty = HexBytes("02000000 00000000 01000000 41");
  auto with_empty = SplitImageList(one_empty, false);
  ASSERT_TRUE(with_empty.has_value());
  EXPECT_EQ(with_empty->at(0), "");
  EXPECT_EQ(with_empty->at(1), "A");
}

TEST(DecodeValue, NdarrayWithU64ShapeWords) {
  auto v = Decode("ndarray:uint8", HexBytes("07 0300000000000000 010203"));
  ASSERT_TRUE(v.has_value()) << v.status().ToString();
  EXPECT_EQ(std::get<NdArray>(*v), Array(DType::kUInt8, {3}, HexBytes("010203")));
}

// ---------------------------------------------------------------------------------------------
// Round trips: DecodeValue(EncodeValue(v)) == v for canonical values of every encoding.

struct RoundTripCase {
  std::string encoding;
  Value value;
};

std::vector<RoundTripCase> RoundTripCases() {
  std::vector<RoundTripCase> cases = {
      {"bytes", Bytes{std::string("\0ab\xff", 4)}},
      {"bytes", Bytes{""}},
      {"str", Value(std::string("h\xc3\xa9llo\0 \xf0\x9f\x98\x80", 12))},
      {"str", Value("")},
      {"int", Value(INT64_MIN)},
      {"int", Value(INT64_MAX)},
      {"int8", Value(int64_t{-128})},
      {"int16", Value(int64_t{-32768})},
      {"int32", Value(int64_t{INT32_MAX})},
      {"int64", Value(int64_t{-1})},
      {"uint8", Value(uint64_t{255})},
      {"uint16", Value(uint64_t{65535})},
      {"uint32", Value(uint64_t{UINT32_MAX})},
      {"uint64", Value(UINT64_MAX)},
      {"float16", Value(-1.5)},
      {"float16", Value(65504.0)},
      {"float32", Value(0.5)},
      {"float32", Value(0.10000000149011612)},
      {"float64", Value(0.1)},
      {"float64", Value(-std::numeric_limits<double>::infinity())},
      {"float64", Value(std::numeric_limits<double>::denorm_min())},
      {"str_int", Value(int64_t{-5})},
      {"str_int", Value(UINT64_MAX)},
      {"str_int", Value(NumberText{"1267650600228229401496703205376"})},
      {"str_int", Value(NumberText{"-1180591620717411303424"})},
      {"str_float", Value(0.1)},
      {"str_float", Value(1e16)},
      {"str_float", Value(5e-324)},
      {"str_float", Value(1.7976931348623157e+308)},
      {"str_float", Value(std::numeric_limits<double>::infinity())},
      {"str_decimal", Value(NumberText{"123.4500"})},
      {"str_decimal", Value(NumberText{"-0"})},
      {"str_decimal", Value(NumberText{"1E+3"})},
      {"str_decimal", Value(NumberText{"-Infinity"})},
      {"str_decimal", Value(NumberText{"sNaN"})},
      {"json", Value(Json{R"({"b": [1, 2.5, null, true], "a": "\u00e9"})"})},
      {"json", Value(Json{"null"})},
      {"json", Value(Json{"1180591620717411303424"})},
      {"pkl", Bytes{"\x80\x04K\x01."}},
      {"pil", PilImage{2, 1, "RGB", std::string("\xff\x00\x10\xff\x00\x10", 6)}},
      {"pil", PilImage{3, 2, "RGBA", std::string(24, 'q')}},
      {"pil", PilImage{1, 1, "L", "\x01"}},
      {"jpeg", Bytes{"\xff\xd8 not really a jpeg \xff\xd9"}},
      {"jpeg:90", Bytes{"\xff\xd8\xff\xd9"}},
      {"png", Bytes{"\x89PNG\r\n\x1a\n"}},
      {"list[pil]", ValueList{Value(PilImage{1, 1, "L", "a"}), Value(PilImage{2, 1, "L", "bc"})}},
      {"list[pil]", ValueList{}},
      {"list[jpeg]", ValueList{Value(Bytes{"AB"}), Value(Bytes{""})}},
      {"list[png]", ValueList{Value(Bytes{"P"})}},
      {"jpeg_array", ValueList{Value(Bytes{"AB"}), Value(Bytes{"CDE"})}},
      {"jpegarray", ValueList{Value(Bytes{"X"})}},
      {"ndarray", Array(DType::kUInt8, {1, 70000}, std::string(70000, 'z'))},
      {"ndarray:float32",
       Array(DType::kFloat32, {2}, std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8))},
      {"ndarray:int16:3,4", Array(DType::kInt16, {3, 4}, std::string(24, 'y'))},
      {"ndarray:float64:5", Array(DType::kFloat64, {5}, std::string(40, 'w'))},
  };
  // Every dtype through every ndarray form.
  for (int c = 0; c < 256; ++c) {
    const auto dtype = DTypeFromCode(static_cast<uint8_t>(c));
    if (!dtype) continue;
    const size_t item = DTypeSize(*dtype);
    std::string data(2 * 3 * item, '\0');
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + c);
    const NdArray array = Array(*dtype, {2, 3}, data);
    const std::string name(DTypeName(*dtype));
    cases.push_back({"ndarray", array});
    cases.push_back({"ndarray:" + name, array});
    cases.push_back({"ndarray:" + name + ":2,3", array});
    cases.push_back({"ndarray", Array(*dtype, {1, 2, 1, 3}, data)});
  }
  return cases;
}

TEST(RoundTrip, DecodeOfEncodeIsTheValueForEveryEncoding) {
  for (const auto& c : RoundTripCases()) {
    std::string payload;
    const ColumnEncoding encoding = Enc(c.encoding);
    const Status s = EncodeValue(encoding, c.value, payload);
    ASSERT_TRUE(s.ok()) << c.encoding << ": " << s.ToString();
    if (encoding.fixed_size()) {
      EXPECT_EQ(payload.size(), *encoding.fixed_size()) << c.encoding;
    }
    auto decoded = DecodeValue(encoding, payload);
    ASSERT_TRUE(decoded.has_value()) << c.encoding << ": " << decoded.status().ToString();
    EXPECT_EQ(*decoded, c.value) << c.encoding << " payload " << ToHex(payload.substr(0, 64));
  }
}

TEST(RoundTrip, SpecialFloatsKeepTheirBits) {
  for (const char* enc : {"float16", "float32", "float64", "str_float"}) {
    std::string payload;
    ASSERT_TRUE(EncodeValue(Enc(enc), Value(-0.0), payload).ok());
    const double z = std::get<double>(Decode(enc, payload).value());
    EXPECT_TRUE(z == 0.0 && std::signbit(z)) << enc;
    payload.clear();
    ASSERT_TRUE(
        EncodeValue(Enc(enc), Value(std::numeric_limits<double>::quiet_NaN()), payload).ok());
    EXPECT_TRUE(std::isnan(std::get<double>(Decode(enc, payload).value()))) << enc;
  }
}

}  // namespace
}  // namespace ferry
