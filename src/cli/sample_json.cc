#include "cli/sample_json.h"

#include <fmt/format.h>

#include <cmath>

#include "base/float16.h"
#include "base/hex.h"
#include "base/little_endian.h"
#include "base/python_float.h"
#include "base/python_json.h"
#include "format/hash.h"
#include "image/jpeg_codec.h"
#include "image/png_codec.h"

namespace ferry {
namespace {

void AppendFloat(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "\"nan\"";
  } else if (std::isinf(v)) {
    out += v < 0 ? "\"-inf\"" : "\"inf\"";
  } else {
    AppendPythonFloat(out, v);
  }
}

Result<std::string> Sha256(std::string_view data) { return HashHex("sha256", data); }

Status AppendJpegForm(std::string_view data, std::string& out) {
  FERRY_ASSIGN_OR_RETURN(ImageInfo info, ProbeJpeg(data));
  FERRY_ASSIGN_OR_RETURN(std::string digest, Sha256(data));
  out += fmt::format(R"({{"sha256": "{}", "num_bytes": {}, "width": {}, "height": {}, "mode": )",
                     digest, data.size(), info.width, info.height);
  AppendPythonJsonString(out, info.mode);
  out += '}';
  return Status::Ok();
}

Status AppendPngForm(std::string_view data, std::string& out) {
  FERRY_ASSIGN_OR_RETURN(PilImage image, DecodePng(data));
  FERRY_ASSIGN_OR_RETURN(std::string digest, Sha256(data));
  FERRY_ASSIGN_OR_RETURN(std::string pixels, Sha256(image.pixels));
  out += fmt::format(R"({{"sha256": "{}", "num_bytes": {}, "width": {}, "height": {}, "mode": )",
                     digest, data.size(), image.width, image.height);
  AppendPythonJsonString(out, image.mode);
  out += fmt::format(R"(, "pixels_sha256": "{}"}})", pixels);
  return Status::Ok();
}

Status AppendPilForm(const PilImage& image, std::string& out) {
  FERRY_ASSIGN_OR_RETURN(std::string pixels, Sha256(image.pixels));
  out += fmt::format(R"({{"width": {}, "height": {}, "mode": )", image.width, image.height);
  AppendPythonJsonString(out, image.mode);
  out += fmt::format(R"(, "pixels_sha256": "{}"}})", pixels);
  return Status::Ok();
}

void AppendNdArrayForm(const NdArray& array, std::string& out) {
  out += R"({"dtype": ")";
  out += DTypeName(array.dtype);
  out += fmt::format(R"(", "shape": [{}], "data": [)", fmt::join(array.shape, ", "));
  const size_t item = DTypeSize(array.dtype);
  const size_t n = array.data.size() / item;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += ", ";
    const char* p = array.data.data() + i * item;
    switch (array.dtype) {
      case DType::kUInt8:
        out += std::to_string(LoadLE<uint8_t>(p));
        break;
      case DType::kInt8:
        out += std::to_string(LoadLE<int8_t>(p));
        break;
      case DType::kUInt16:
        out += std::to_string(LoadLE<uint16_t>(p));
        break;
      case DType::kInt16:
        out += std::to_string(LoadLE<int16_t>(p));
        break;
      case DType::kUInt32:
        out += std::to_string(LoadLE<uint32_t>(p));
        break;
      case DType::kInt32:
        out += std::to_string(LoadLE<int32_t>(p));
        break;
      case DType::kUInt64:
        out += std::to_string(LoadLE<uint64_t>(p));
        break;
      case DType::kInt64:
        out += std::to_string(LoadLE<int64_t>(p));
        break;
      case DType::kFloat16:
        AppendFloat(out, HalfToDouble(LoadLE<uint16_t>(p)));
        break;
      case DType::kFloat32:
        AppendFloat(out, LoadLE<float>(p));
        break;
      case DType::kFloat64:
        AppendFloat(out, LoadLE<double>(p));
        break;
    }
  }
  out += "]}";
}

}  // namespace

Status AppendFieldJson(const ColumnEncoding& encoding, std::string_view payload, std::string& out) {
  switch (encoding.kind()) {
    case EncodingKind::kJpeg:
      return AppendJpegForm(payload, out);
    case EncodingKind::kPng:
      return AppendPngForm(payload, out);
    case EncodingKind::kPkl:
      out += R"({"pickle_hex": ")" + ToHex(payload) + "\"}";
      return Status::Ok();
    case EncodingKind::kListJpeg:
    case EncodingKind::kListPng:
    case EncodingKind::kJpegArray: {
      FERRY_ASSIGN_OR_RETURN(auto parts,
                             SplitImageList(payload, encoding.kind() != EncodingKind::kJpegArray));
      out += '[';
      for (size_t i = 0; i < parts.size(); ++i) {
        if (i > 0) out += ", ";
        Status s = encoding.kind() == EncodingKind::kListPng ? AppendPngForm(parts[i], out)
                                                             : AppendJpegForm(parts[i], out);
        if (!s.ok()) return s.WithContext(fmt::format("element {}", i));
      }
      out += ']';
      return Status::Ok();
    }
    default:
      break;
  }
  FERRY_ASSIGN_OR_RETURN(Value value, DecodeValue(encoding, payload));
  return std::visit(
      [&](const auto& v) -> Status {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Bytes>) {
          out += '"' + ToHex(v.data) + '"';
        } else if constexpr (std::is_same_v<T, std::string>) {
          AppendPythonJsonString(out, v);
        } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>) {
          // str_int values are strings in this form (they may exceed any JSON number type).
          if (encoding.kind() == EncodingKind::kStrInt) {
            out += '"' + std::to_string(v) + '"';
          } else {
            out += std::to_string(v);
          }
        } else if constexpr (std::is_same_v<T, double>) {
          AppendFloat(out, v);
        } else if constexpr (std::is_same_v<T, NumberText>) {
          AppendPythonJsonString(out, v.text);
        } else if constexpr (std::is_same_v<T, Json>) {
          // The stored text is already Python's json.dumps output; embed it as it is.
          out += v.text;
        } else if constexpr (std::is_same_v<T, NdArray>) {
          AppendNdArrayForm(v, out);
        } else if constexpr (std::is_same_v<T, PilImage>) {
          return AppendPilForm(v, out);
        } else if constexpr (std::is_same_v<T, ValueList>) {
          out += '[';
          for (size_t i = 0; i < v.size(); ++i) {
            if (i > 0) out += ", ";
            FERRY_RETURN_IF_ERROR(AppendPilForm(std::get<PilImage>(v[i]), out));
          }
          out += ']';
        } else {
          return InternalError(fmt::format("no JSON form for a decoded {}", ValueKindName(value)));
        }
        return Status::Ok();
      },
      value.variant());
}

Result<std::string> SampleJsonLine(const ShardConfig& config,
                                   std::span<const std::string_view> fields) {
  std::string out = "{";
  for (size_t c = 0; c < fields.size(); ++c) {
    if (c > 0) out += ", ";
    AppendPythonJsonString(out, config.column_names[c]);
    out += ": ";
    Status s = AppendFieldJson(config.column_encodings[c], fields[c], out);
    if (!s.ok()) return s.WithContext(fmt::format("column '{}'", config.column_names[c]));
  }
  out += '}';
  return out;
}

}  // namespace ferry
