// Column encodings of the MDS format: how one field of a sample becomes payload bytes and back.
//
// The encoding string is stored verbatim in index.json ("int", "ndarray:int16:3,4", "jpegarray").
// ColumnEncoding::Parse accepts exactly the names of the reference (spec §6) and the three
// ndarray forms; `jpeg:<quality>` (a later reference version) is accepted too. Every other
// "name:args" is an error.
//
// Payload rules are in docs/format/mds.md; the Value alternatives each encoding accepts are
// listed at EncodeValue. Decoding validates the payload completely: a payload that a correct
// writer cannot have produced is kDataLoss with the reason, never a read past its end.
//
// Thread-safety: all functions are pure; ColumnEncoding is an immutable value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/format/value.h"
#include "ferry/result.h"

namespace ferry {

enum class EncodingKind : uint8_t {
  kBytes,
  kStr,
  kInt,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kFloat16,
  kFloat32,
  kFloat64,
  kStrInt,
  kStrFloat,
  kStrDecimal,
  kJson,
  kPkl,
  kPil,
  kJpeg,
  kPng,
  kListPil,
  kListJpeg,
  kListPng,
  kJpegArray,
  kNdArray,
};

/// The canonical name of a kind: "bytes", "uint8", "list[pil]", "jpeg_array", "ndarray", ...
std::string_view EncodingKindName(EncodingKind kind);

/// The integers stored as fixed-size binary: int, uint8 ... int64 (not str_int).
bool IsBinaryIntKind(EncodingKind kind);
/// The floats stored as fixed-size binary: float16, float32, float64 (not str_float).
bool IsBinaryFloatKind(EncodingKind kind);

class ColumnEncoding {
 public:
  /// kInvalidArgument naming the text for an unknown encoding or malformed ndarray parameters.
  static Result<ColumnEncoding> Parse(std::string_view text);

  EncodingKind kind() const { return kind_; }
  /// The verbatim string, as stored in index.json.
  const std::string& text() const { return text_; }
  /// The payload size of every value, or nullopt for variable-size encodings.
  std::optional<uint32_t> fixed_size() const { return fixed_size_; }
  /// True for `pkl`: decoding it runs arbitrary code in Python, so readers refuse such datasets
  /// unless the caller allows unsafe encodings.
  bool unsafe() const { return kind_ == EncodingKind::kPkl; }
  /// True for jpeg/png/pil and the image lists.
  bool is_image() const;

  /// ndarray: the static dtype and shape, when the encoding string fixes them.
  const std::optional<DType>& static_dtype() const { return dtype_; }
  const std::vector<uint64_t>& static_shape() const { return shape_; }

  friend bool operator==(const ColumnEncoding& a, const ColumnEncoding& b) {
    return a.text_ == b.text_;
  }

 private:
  EncodingKind kind_ = EncodingKind::kBytes;
  std::string text_;
  std::optional<uint32_t> fixed_size_;
  std::optional<DType> dtype_;
  std::vector<uint64_t> shape_;
};

/// Appends the payload of `value` to `out`.
///
/// | encoding                     | accepts                                               |
/// |------------------------------|-------------------------------------------------------|
/// | any                          | Bytes: stored verbatim (pre-encoded payload)          |
/// | bytes, pkl                   | Bytes only                                            |
/// | str                          | std::string (valid UTF-8)                             |
/// | int, (u)int8..64             | int64_t, uint64_t, bool; range-checked, never wrapped |
/// | float16/32/64                | double, int64_t, uint64_t (rounded to nearest-even)   |
/// | str_int                      | int64_t, uint64_t, std::string/NumberText of digits   |
/// | str_float                    | double                                                |
/// | str_decimal                  | std::string/NumberText in Python Decimal syntax       |
/// | json                         | Json text; or std::string, numbers, bool, monostate   |
/// | pil                          | PilImage                                              |
/// | jpeg, png                    | Bytes (an encoded file)                               |
/// | list[pil]                    | ValueList of PilImage or Bytes                        |
/// | list[jpeg], list[png], jpeg_array | ValueList of Bytes                               |
/// | ndarray                      | NdArray (matching the static dtype/shape, if any)     |
///
/// kInvalidArgument explains a value that does not fit (wrong kind, out of range, wrong size
/// for a fixed-size column, ...); nothing is appended then.
Status EncodeValue(const ColumnEncoding& encoding, const Value& value, std::string& out);

/// Decodes one payload. Results: bytes/pkl/jpeg/png -> Bytes; str -> std::string; int and
/// intN -> int64_t; uintN -> uint64_t; floats and str_float -> double; str_int -> int64_t,
/// uint64_t or NumberText (beyond 64 bits); str_decimal -> NumberText; json -> Json (the stored
/// text); pil -> PilImage; lists -> ValueList; ndarray -> NdArray. kDataLoss for a payload
/// that does not parse.
Result<Value> DecodeValue(const ColumnEncoding& encoding, std::string_view payload);

/// Splits a list[...] (with_reserved_word) or jpeg_array payload into its element payloads.
/// The views point into `payload`. kDataLoss when the size table does not match the payload.
Result<std::vector<std::string_view>> SplitImageList(std::string_view payload,
                                                     bool with_reserved_word);

}  // namespace ferry
