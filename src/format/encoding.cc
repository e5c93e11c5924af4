#include "ferry/format/encoding.h"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>

#include "base/float16.h"
#include "base/int128.h"
#include "base/little_endian.h"
#include "base/python_float.h"
#include "base/python_json.h"
#include "base/utf8.h"
#include "format/codecs.h"

namespace ferry {
namespace {

using internal_format::CanonicalDecimalText;
using internal_format::CanonicalIntText;

struct EncodingName {
  std::string_view name;
  EncodingKind kind;
  std::optional<uint32_t> size;
};

constexpr std::array<EncodingName, 27> kEncodings = {{
    {"bytes", EncodingKind::kBytes, std::nullopt},
    {"str", EncodingKind::kStr, std::nullopt},
    {"int", EncodingKind::kInt, 8},
    {"uint8", EncodingKind::kUInt8, 1},
    {"uint16", EncodingKind::kUInt16, 2},
    {"uint32", EncodingKind::kUInt32, 4},
    {"uint64", EncodingKind::kUInt64, 8},
    {"int8", EncodingKind::kInt8, 1},
    {"int16", EncodingKind::kInt16, 2},
    {"int32", EncodingKind::kInt32, 4},
    {"int64", EncodingKind::kInt64, 8},
    {"float16", EncodingKind::kFloat16, 2},
    {"float32", EncodingKind::kFloat32, 4},
    {"float64", EncodingKind::kFloat64, 8},
    {"str_int", EncodingKind::kStrInt, std::nullopt},
    {"str_float", EncodingKind::kStrFloat, std::nullopt},
    {"str_decimal", EncodingKind::kStrDecimal, std::nullopt},
    {"json", EncodingKind::kJson, std::nullopt},
    {"pkl", EncodingKind::kPkl, std::nullopt},
    {"pil", EncodingKind::kPil, std::nullopt},
    {"jpeg", EncodingKind::kJpeg, std::nullopt},
    {"png", EncodingKind::kPng, std::nullopt},
    {"list[pil]", EncodingKind::kListPil, std::nullopt},
    {"list[jpeg]", EncodingKind::kListJpeg, std::nullopt},
    {"list[png]", EncodingKind::kListPng, std::nullopt},
    {"jpeg_array", EncodingKind::kJpegArray, std::nullopt},
    {"jpegarray", EncodingKind::kJpegArray, std::nullopt},
}};

}  // namespace

bool IsBinaryIntKind(EncodingKind kind) {
  switch (kind) {
    case EncodingKind::kInt:
    case EncodingKind::kUInt8:
    case EncodingKind::kUInt16:
    case EncodingKind::kUInt32:
    case EncodingKind::kUInt64:
    case EncodingKind::kInt8:
    case EncodingKind::kInt16:
    case EncodingKind::kInt32:
    case EncodingKind::kInt64:
      return true;
    default:
      return false;
  }
}

bool IsBinaryFloatKind(EncodingKind kind) {
  return kind == EncodingKind::kFloat16 || kind == EncodingKind::kFloat32 ||
         kind == EncodingKind::kFloat64;
}

std::string_view EncodingKindName(EncodingKind kind) {
  if (kind == EncodingKind::kNdArray) return "ndarray";
  for (const auto& known : kEncodings) {
    if (known.kind == kind) return known.name;
  }
  return "unknown";
}

namespace {

std::string KnownEncodings() {
  std::string out;
  for (const auto& e : kEncodings) {
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out + ", ndarray[:dtype[:d1,d2,...]]";
}

Result<uint64_t> ParseDimension(std::string_view text, std::string_view encoding) {
  uint64_t v = 0;
  const auto res = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || res.ec != std::errc() || res.ptr != text.data() + text.size() || v == 0) {
    return InvalidArgumentError(
        fmt::format("encoding '{}': dimension '{}' is not a whole number >= 1", encoding, text));
  }
  return v;
}

Status WrongKind(const ColumnEncoding& encoding, const Value& value, std::string_view expected) {
  return InvalidArgumentError(
      fmt::format("a {} column takes {}, got {}", encoding.text(), expected, ValueKindName(value)));
}

// The value as a signed/unsigned 128-bit integer, for range checks.
std::optional<Int128> IntegerOf(const Value& value) {
  if (const auto* v = std::get_if<int64_t>(&value)) return *v;
  if (const auto* v = std::get_if<uint64_t>(&value)) return *v;
  if (const auto* v = std::get_if<bool>(&value)) return *v ? 1 : 0;
  return std::nullopt;
}

Status EncodeInteger(const ColumnEncoding& encoding, const Value& value, Int128 lo, Int128 hi,
                     std::string& out) {
  const auto v = IntegerOf(value);
  if (!v) return WrongKind(encoding, value, "an integer");
  if (*v < lo || *v > hi) {
    const std::string text = std::holds_alternative<uint64_t>(value)
                                 ? std::to_string(std::get<uint64_t>(value))
                                 : std::to_string(static_cast<int64_t>(*v));
    return InvalidArgumentError(
        fmt::format("{} is out of range for a {} column", text, encoding.text()));
  }
  const uint64_t bits = static_cast<uint64_t>(*v);
  const size_t n = *encoding.fixed_size();
  for (size_t i = 0; i < n; ++i) out += static_cast<char>((bits >> (8 * i)) & 0xFF);
  return Status::Ok();
}

std::optional<double> FloatOf(const Value& value) {
  if (const auto* v = std::get_if<double>(&value)) return *v;
  if (const auto* v = std::get_if<int64_t>(&value)) return static_cast<double>(*v);
  if (const auto* v = std::get_if<uint64_t>(&value)) return static_cast<double>(*v);
  return std::nullopt;
}

// json.dumps of a Value (objects only arrive as Json text).
Status AppendJson(const ColumnEncoding& encoding, const Value& value, std::string& out) {
  return std::visit(
      [&](const auto& v) -> Status {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          out += "null";
        } else if constexpr (std::is_same_v<T, bool>) {
          out += v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>) {
          out += std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          AppendPythonJsonFloat(out, v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          if (auto bad = FindInvalidUtf8(v)) {
            return InvalidArgumentError(fmt::format("string is not UTF-8 at byte {}", *bad));
          }
          AppendPythonJsonString(out, v);
        } else if constexpr (std::is_same_v<T, Json>) {
          FERRY_ASSIGN_OR_RETURN(std::string text, NormalizeJsonText(v.text));
          out += text;
        } else if constexpr (std::is_same_v<T, ValueList>) {
          out += '[';
          for (size_t i = 0; i < v.size(); ++i) {
            if (i > 0) out += ", ";
            FERRY_RETURN_IF_ERROR(AppendJson(encoding, v[i], out));
          }
          out += ']';
        } else {
          return WrongKind(encoding, value,
                           "JSON text, a string, a number, a bool, None or a list");
        }
        return Status::Ok();
      },
      value.variant());
}

Status EncodeTyped(const ColumnEncoding& encoding, const Value& value, std::string& out) {
  constexpr Int128 kI64Min = std::numeric_limits<int64_t>::min();
  constexpr Int128 kI64Max = std::numeric_limits<int64_t>::max();
  switch (encoding.kind()) {
    case EncodingKind::kBytes:
    case EncodingKind::kPkl:
    case EncodingKind::kJpeg:
    case EncodingKind::kPng:
      // Bytes were handled by the caller (pass-through); nothing else is accepted.
      return WrongKind(encoding, value,
                       encoding.kind() == EncodingKind::kPkl ? "pickled bytes" : "bytes");
    case EncodingKind::kStr: {
      const auto* s = std::get_if<std::string>(&value);
      if (s == nullptr) return WrongKind(encoding, value, "a string");
      if (auto bad = FindInvalidUtf8(*s)) {
        return InvalidArgumentError(fmt::format("string is not UTF-8 at byte {}", *bad));
      }
      out += *s;
      return Status::Ok();
    }
    case EncodingKind::kInt:
    case EncodingKind::kInt64:
      return EncodeInteger(encoding, value, kI64Min, kI64Max, out);
    case EncodingKind::kInt8:
      return EncodeInteger(encoding, value, INT8_MIN, INT8_MAX, out);
    case EncodingKind::kInt16:
      return EncodeInteger(encoding, value, INT16_MIN, INT16_MAX, out);
    case EncodingKind::kInt32:
      return EncodeInteger(encoding, value, INT32_MIN, INT32_MAX, out);
    case EncodingKind::kUInt8:
      return EncodeInteger(encoding, value, 0, UINT8_MAX, out);
    case EncodingKind::kUInt16:
      return EncodeInteger(encoding, value, 0, UINT16_MAX, out);
    case EncodingKind::kUInt32:
      return EncodeInteger(encoding, value, 0, UINT32_MAX, out);
    case EncodingKind::kUInt64:
      return EncodeInteger(encoding, value, 0, UINT64_MAX, out);
    case EncodingKind::kFloat16:
    case EncodingKind::kFloat32:
    case EncodingKind::kFloat64: {
      const auto v = FloatOf(value);
      if (!v) return WrongKind(encoding, value, "a number");
      if (encoding.kind() == EncodingKind::kFloat16) {
        AppendLE<uint16_t>(out, DoubleToHalf(*v));
      } else if (encoding.kind() == EncodingKind::kFloat32) {
        // Python/numpy NaNs are the canonical quiet NaN, whatever the payload bits were.
        AppendLE<float>(
            out, std::isnan(*v) ? std::bit_cast<float>(0x7fc00000u) : static_cast<float>(*v));
      } else {
        AppendLE<double>(out, std::isnan(*v) ? std::bit_cast<double>(0x7ff8000000000000ull) : *v);
      }
      return Status::Ok();
    }
    case EncodingKind::kStrInt: {
      if (auto v = IntegerOf(value); v && !std::holds_alternative<bool>(value)) {
        out += std::holds_alternative<uint64_t>(value) ? std::to_string(std::get<uint64_t>(value))
                                                       : std::to_string(static_cast<int64_t>(*v));
        return Status::Ok();
      }
      const std::string* text = std::get_if<std::string>(&value);
      if (const auto* n = std::get_if<NumberText>(&value)) text = &n->text;
      if (text == nullptr) return WrongKind(encoding, value, "an integer or its decimal digits");
      auto canonical = CanonicalIntText(*text);
      if (!canonical) return InvalidArgumentError(fmt::format("'{}' is not an integer", *text));
      out += *canonical;
      return Status::Ok();
    }
    case EncodingKind::kStrFloat: {
      const auto* v = std::get_if<double>(&value);
      if (v == nullptr) return WrongKind(encoding, value, "a float");
      AppendPythonFloat(out, *v);
      return Status::Ok();
    }
    case EncodingKind::kStrDecimal: {
      const std::string* text = std::get_if<std::string>(&value);
      if (const auto* n = std::get_if<NumberText>(&value)) text = &n->text;
      if (text == nullptr) {
        if (auto v = IntegerOf(value); v && !std::holds_alternative<bool>(value)) {
          out += std::holds_alternative<uint64_t>(value) ? std::to_string(std::get<uint64_t>(value))
                                                         : std::to_string(static_cast<int64_t>(*v));
          return Status::Ok();
        }
        return WrongKind(encoding, value, "decimal text");
      }
      auto canonical = CanonicalDecimalText(*text);
      if (!canonical) return InvalidArgumentError(fmt::format("'{}' is not a decimal", *text));
      out += *canonical;
      return Status::Ok();
    }
    case EncodingKind::kJson:
      return AppendJson(encoding, value, out);
    case EncodingKind::kPil: {
      const auto* image = std::get_if<PilImage>(&value);
      if (image == nullptr) return WrongKind(encoding, value, "a pil image");
      return internal_format::EncodePil(*image, out);
    }
    case EncodingKind::kListPil:
    case EncodingKind::kListJpeg:
    case EncodingKind::kListPng:
    case EncodingKind::kJpegArray: {
      const auto* items = std::get_if<ValueList>(&value);
      if (items == nullptr) return WrongKind(encoding, value, "a list of images");
      return internal_format::EncodeImageList(encoding, *items, out);
    }
    case EncodingKind::kNdArray: {
      const auto* array = std::get_if<NdArray>(&value);
      if (array == nullptr) return WrongKind(encoding, value, "an ndarray");
      return internal_format::EncodeNdArray(encoding, *array, out);
    }
  }
  return InternalError("unhandled encoding kind");
}

template <typename T>
T Load(std::string_view payload) {
  return LoadLE<T>(payload.data());
}

}  // namespace

bool ColumnEncoding::is_image() const {
  switch (kind_) {
    case EncodingKind::kPil:
    case EncodingKind::kJpeg:
    case EncodingKind::kPng:
    case EncodingKind::kListPil:
    case EncodingKind::kListJpeg:
    case EncodingKind::kListPng:
    case EncodingKind::kJpegArray:
      return true;
    default:
      return false;
  }
}

Result<ColumnEncoding> ColumnEncoding::Parse(std::string_view text) {
  ColumnEncoding e;
  e.text_ = std::string(text);
  const size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  if (name == "ndarray") {
    e.kind_ = EncodingKind::kNdArray;
    if (colon == std::string_view::npos || colon + 1 == text.size()) return e;  // "ndarray[:]"
    const std::string_view args = text.substr(colon + 1);
    const size_t colon2 = args.find(':');
    const std::string_view dtype_name = args.substr(0, colon2);
    const auto dtype = DTypeFromName(dtype_name);
    if (!dtype) {
      return InvalidArgumentError(fmt::format(
          "encoding '{}': unknown ndarray dtype '{}' (expected uint8, int8, uint16, int16, "
          "float16, uint32, int32, float32, uint64, int64 or float64)",
          text, dtype_name));
    }
    e.dtype_ = dtype;
    if (colon2 == std::string_view::npos) return e;
    std::string_view dims = args.substr(colon2 + 1);
    if (dims.find(':') != std::string_view::npos) {
      return InvalidArgumentError(
          fmt::format("encoding '{}': ndarray takes at most a dtype and a shape", text));
    }
    UInt128 bytes = DTypeSize(*dtype);
    for (;;) {
      const size_t comma = dims.find(',');
      FERRY_ASSIGN_OR_RETURN(uint64_t d, ParseDimension(dims.substr(0, comma), text));
      e.shape_.push_back(d);
      bytes *= d;
      if (bytes > UINT32_MAX) {
        return InvalidArgumentError(fmt::format(
            "encoding '{}': a fixed-size array of 4 GiB or more cannot be stored", text));
      }
      if (comma == std::string_view::npos) break;
      dims.remove_prefix(comma + 1);
    }
    e.fixed_size_ = static_cast<uint32_t>(bytes);
    return e;
  }
  if (name == "jpeg" && colon != std::string_view::npos) {
    // A later reference version stores "jpeg:<quality>"; the payload is a plain JPEG file.
    int quality = -1;
    const std::string_view q = text.substr(colon + 1);
    const auto res = std::from_chars(q.data(), q.data() + q.size(), quality);
    if (q.empty() || res.ec != std::errc() || res.ptr != q.data() + q.size() || quality < 0 ||
        quality > 100) {
      return InvalidArgumentError(
          fmt::format("encoding '{}': jpeg quality must be a whole number from 0 to 100", text));
    }
    e.kind_ = EncodingKind::kJpeg;
    return e;
  }
  if (colon == std::string_view::npos) {
    for (const auto& known : kEncodings) {
      if (known.name == text) {
        e.kind_ = known.kind;
        e.fixed_size_ = known.size;
        return e;
      }
    }
  }
  return InvalidArgumentError(
      fmt::format("unknown column encoding '{}' (known: {})", text, KnownEncodings()));
}

Status EncodeValue(const ColumnEncoding& encoding, const Value& value, std::string& out) {
  const size_t start = out.size();
  Status status;
  if (const auto* bytes = std::get_if<Bytes>(&value)) {
    out += bytes->data;  // pre-encoded payload, stored verbatim (the reference's bytes rule)
  } else {
    status = EncodeTyped(encoding, value, out);
  }
  if (status.ok() && encoding.fixed_size() && out.size() - start != *encoding.fixed_size()) {
    status = InvalidArgumentError(fmt::format("a {} column holds exactly {} bytes, got {}",
                                              encoding.text(), *encoding.fixed_size(),
                                              out.size() - start));
  }
  if (!status.ok()) out.resize(start);
  return status;
}

Result<Value> DecodeValue(const ColumnEncoding& encoding, std::string_view payload) {
  if (encoding.fixed_size() && payload.size() != *encoding.fixed_size()) {
    return DataLossError(fmt::format("a {} payload must be {} bytes, found {}", encoding.text(),
                                     *encoding.fixed_size(), payload.size()));
  }
  switch (encoding.kind()) {
    case EncodingKind::kBytes:
    case EncodingKind::kPkl:
    case EncodingKind::kJpeg:
    case EncodingKind::kPng:
      return Value(Bytes{std::string(payload)});
    case EncodingKind::kStr:
      if (auto bad = FindInvalidUtf8(payload)) {
        return DataLossError(fmt::format("str payload is not UTF-8 at byte {}", *bad));
      }
      return Value(std::string(payload));
    case EncodingKind::kInt:
    case EncodingKind::kInt64:
      return Value(Load<int64_t>(payload));
    case EncodingKind::kInt8:
      return Value(int64_t{Load<int8_t>(payload)});
    case EncodingKind::kInt16:
      return Value(int64_t{Load<int16_t>(payload)});
    case EncodingKind::kInt32:
      return Value(int64_t{Load<int32_t>(payload)});
    case EncodingKind::kUInt8:
      return Value(uint64_t{Load<uint8_t>(payload)});
    case EncodingKind::kUInt16:
      return Value(uint64_t{Load<uint16_t>(payload)});
    case EncodingKind::kUInt32:
      return Value(uint64_t{Load<uint32_t>(payload)});
    case EncodingKind::kUInt64:
      return Value(Load<uint64_t>(payload));
    case EncodingKind::kFloat16:
      return Value(HalfToDouble(Load<uint16_t>(payload)));
    case EncodingKind::kFloat32:
      return Value(static_cast<double>(Load<float>(payload)));
    case EncodingKind::kFloat64:
      return Value(Load<double>(payload));
    case EncodingKind::kStrInt: {
      auto canonical = internal_format::CanonicalIntText(payload);
      if (!canonical)
        return DataLossError(
            fmt::format("str_int payload '{}' is not an integer", payload.substr(0, 64)));
      int64_t i;
      const auto r = std::from_chars(canonical->data(), canonical->data() + canonical->size(), i);
      if (r.ec == std::errc() && r.ptr == canonical->data() + canonical->size()) return Value(i);
      uint64_t u;
      const auto r2 = std::from_chars(canonical->data(), canonical->data() + canonical->size(), u);
      if (r2.ec == std::errc() && r2.ptr == canonical->data() + canonical->size()) return Value(u);
      return Value(NumberText{std::move(*canonical)});
    }
    case EncodingKind::kStrFloat: {
      auto v = ParsePythonFloat(payload);
      if (!v) {
        return DataLossError(
            fmt::format("str_float payload '{}' is not a float", payload.substr(0, 64)));
      }
      return Value(*v);
    }
    case EncodingKind::kStrDecimal: {
      auto canonical = internal_format::CanonicalDecimalText(payload);
      if (!canonical) {
        return DataLossError(
            fmt::format("str_decimal payload '{}' is not a decimal", payload.substr(0, 64)));
      }
      return Value(NumberText{std::move(*canonical)});
    }
    case EncodingKind::kJson:
      if (auto bad = FindInvalidUtf8(payload)) {
        return DataLossError(fmt::format("json payload is not UTF-8 at byte {}", *bad));
      }
      if (Status s = ValidatePythonJson(payload); !s.ok()) {
        return DataLossError(fmt::format("json payload: {}", s.message()));
      }
      return Value(Json{std::string(payload)});
    case EncodingKind::kPil: {
      FERRY_ASSIGN_OR_RETURN(PilImage image, internal_format::DecodePil(payload));
      return Value(std::move(image));
    }
    case EncodingKind::kListPil:
    case EncodingKind::kListJpeg:
    case EncodingKind::kListPng:
    case EncodingKind::kJpegArray: {
      FERRY_ASSIGN_OR_RETURN(ValueList items, internal_format::DecodeImageList(encoding, payload));
      return Value(std::move(items));
    }
    case EncodingKind::kNdArray: {
      FERRY_ASSIGN_OR_RETURN(NdArray array, internal_format::DecodeNdArray(encoding, payload));
      return Value(std::move(array));
    }
  }
  return InternalError("unhandled encoding kind");
}

}  // namespace ferry
