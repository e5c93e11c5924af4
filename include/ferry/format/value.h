// ferry::Value: one field of a sample, as given to the MDS writer or returned by decoding.
//
// The alternatives are explicit about what the bytes mean, so that a C++ caller never has to
// guess which encoding a std::string will get:
//   Bytes       raw bytes. Written to a `bytes` column as is, and - like Mosaic's writer does
//               with Python `bytes` - stored verbatim in a column of ANY encoding: the
//               pre-encoded path for JPEG/PNG files, pickles or payloads encoded elsewhere.
//   std::string text (UTF-8) for `str`, a JSON string for `json`, digits for `str_int`,
//               Decimal text for `str_decimal`.
//   Json        JSON text for a `json` column; re-rendered the way Python's json.dumps would.
//   NumberText  exact numeric text: a `str_int` beyond 64 bits or a `str_decimal`, decoded.
//   NdArray     a C-order little-endian array for `ndarray` columns.
//   PilImage    raw pixels for `pil` (and the elements of `list[pil]`).
//   ValueList   the elements of `list[pil]`, `list[jpeg]`, `list[png]`, `jpeg_array`.
//   int64_t / uint64_t / double / bool / std::monostate (None)   numbers and JSON scalars.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ferry {

/// The 11 element types of MDS `ndarray` columns; the value is the on-disk dtype code.
enum class DType : uint8_t {
  kUInt8 = 8,
  kInt8 = 9,
  kUInt16 = 16,
  kInt16 = 17,
  kFloat16 = 18,
  kUInt32 = 32,
  kInt32 = 33,
  kFloat32 = 34,
  kUInt64 = 64,
  kInt64 = 65,
  kFloat64 = 66,
};

/// numpy's name: "uint8", "float16", ...
std::string_view DTypeName(DType dtype);
/// The inverse of DTypeName; nullopt for anything else.
std::optional<DType> DTypeFromName(std::string_view name);
/// The inverse of the on-disk code; nullopt for an unknown code.
std::optional<DType> DTypeFromCode(uint8_t code);
/// Bytes per element.
size_t DTypeSize(DType dtype);

struct Bytes {
  std::string data;
  friend bool operator==(const Bytes&, const Bytes&) = default;
};

struct Json {
  std::string text;
  friend bool operator==(const Json&, const Json&) = default;
};

struct NumberText {
  std::string text;
  friend bool operator==(const NumberText&, const NumberText&) = default;
};

struct NdArray {
  DType dtype = DType::kUInt8;
  std::vector<uint64_t> shape;
  std::string data;  // prod(shape) * DTypeSize(dtype) bytes, C order, little-endian
  friend bool operator==(const NdArray&, const NdArray&) = default;
};

struct PilImage {
  uint32_t width = 0;
  uint32_t height = 0;
  std::string mode;    // PIL mode: "L", "RGB", "RGBA", ...
  std::string pixels;  // PIL Image.tobytes(): rows top to bottom, channels interleaved
  friend bool operator==(const PilImage&, const PilImage&) = default;
};

struct Value;
using ValueList = std::vector<Value>;

using ValueVariant = std::variant<std::monostate, bool, int64_t, uint64_t, double, std::string,
                                  Bytes, Json, NumberText, NdArray, PilImage, ValueList>;

struct Value : ValueVariant {
  using ValueVariant::ValueVariant;
  using ValueVariant::operator=;
  Value() = default;
  // Integer literals of any width land on int64_t rather than being ambiguous.
  Value(int v) : ValueVariant(static_cast<int64_t>(v)) {}                  // NOLINT
  Value(unsigned v) : ValueVariant(static_cast<uint64_t>(v)) {}            // NOLINT
  Value(long long v) : ValueVariant(static_cast<int64_t>(v)) {}            // NOLINT
  Value(unsigned long long v) : ValueVariant(static_cast<uint64_t>(v)) {}  // NOLINT
  Value(float v) : ValueVariant(static_cast<double>(v)) {}                 // NOLINT
  Value(const char* s) : ValueVariant(std::string(s)) {}                   // NOLINT
  Value(std::string_view s) : ValueVariant(std::string(s)) {}              // NOLINT

  const ValueVariant& variant() const { return *this; }
  friend bool operator==(const Value& a, const Value& b) { return a.variant() == b.variant(); }
};

/// "bytes", "str", "int", "ndarray", ... : the alternative's name, for error messages.
std::string_view ValueKindName(const Value& value);

}  // namespace ferry
