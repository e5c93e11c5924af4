// Helpers shared by the encoding tests (encoding_test.cc, decode_value_test.cc). Test-only.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/hex.h"
#include "ferry/format/encoding.h"

namespace ferry::internal_encoding_test {

// "11 08 02" -> the three bytes; spaces are ignored.
inline std::string HexBytes(std::string_view hex) {
  auto bytes = ::ferry::FromHex(hex);
  EXPECT_TRUE(bytes.has_value()) << "bad hex in test: " << hex;
  return bytes.value_or("");
}

inline ColumnEncoding Enc(std::string_view text) {
  auto e = ColumnEncoding::Parse(text);
  EXPECT_TRUE(e.has_value()) << text << ": " << e.status().ToString();
  return e.has_value() ? *e : ColumnEncoding::Parse("bytes").value();
}

// The payload of `value` in an `encoding` column, as lowercase hex ("" and a failure if the
// encoder refused it).
inline std::string EncodeHex(std::string_view encoding, const Value& value) {
  std::string out;
  const Status s = EncodeValue(Enc(encoding), value, out);
  EXPECT_TRUE(s.ok()) << encoding << ": " << s.ToString();
  return ToHex(out);
}

// The payload of `value` as text (for the textual encodings).
inline std::string EncodeText(std::string_view encoding, const Value& value) {
  std::string out;
  const Status s = EncodeValue(Enc(encoding), value, out);
  EXPECT_TRUE(s.ok()) << encoding << ": " << s.ToString();
  return out;
}

// The status of encoding `value`; checks that nothing was appended on error.
inline Status EncodeStatus(std::string_view encoding, const Value& value) {
  std::string out = "prefix";
  Status s = EncodeValue(Enc(encoding), value, out);
  if (!s.ok()) {
    EXPECT_EQ(out, "prefix") << "a refused value must append nothing";
  }
  return s;
}

inline NdArray Array(DType dtype, std::vector<uint64_t> shape, std::string data) {
  return NdArray{dtype, std::move(shape), std::move(data)};
}

}  // namespace ferry::internal_encoding_test
