// ndarray payloads (spec §6.8):
//   [dtype code: u8, only when the dtype is dynamic]
//   [shape byte (ndim << 2 | w) + ndim words of 2^w bytes, only when the shape is dynamic]
//   values: prod(shape) elements, C order, little-endian.
#include <fmt/format.h>

#include "base/int128.h"
#include "base/little_endian.h"
#include "format/codecs.h"

namespace ferry::internal_format {
namespace {

std::string ShapeText(const std::vector<uint64_t>& shape) {
  return fmt::format("({})", fmt::join(shape, ", "));
}

// Element count, or nullopt when the product overflows.
std::optional<uint64_t> ElementCount(const std::vector<uint64_t>& shape) {
  UInt128 n = 1;
  for (uint64_t d : shape) {
    n *= d;
    if (n > UINT64_MAX) return std::nullopt;
  }
  return static_cast<uint64_t>(n);
}

}  // namespace

Status EncodeNdArray(const ColumnEncoding& encoding, const NdArray& array, std::string& out) {
  const auto& static_dtype = encoding.static_dtype();
  const auto& static_shape = encoding.static_shape();
  if (static_dtype && *static_dtype != array.dtype) {
    return InvalidArgumentError(fmt::format("wrong dtype for {}: expected {}, got {}",
                                            encoding.text(), DTypeName(*static_dtype),
                                            DTypeName(array.dtype)));
  }
  if (array.shape.empty()) {
    return InvalidArgumentError(
        "a 0-d array cannot be stored in an ndarray column; use a scalar "
        "encoding");
  }
  if (array.shape.size() > 63) {
    return InvalidArgumentError(
        fmt::format("array has too many axes: maximum 63, got {}", array.shape.size()));
  }
  for (uint64_t d : array.shape) {
    if (d == 0) {
      return InvalidArgumentError(
          fmt::format("array of shape {} has no elements", ShapeText(array.shape)));
    }
  }
  const auto count = ElementCount(array.shape);
  const size_t item = DTypeSize(array.dtype);
  if (!count || *count > UINT64_MAX / item || array.data.size() != *count * item) {
    return InvalidArgumentError(fmt::format(
        "array data holds {} bytes but shape {} of {} needs {}", array.data.size(),
        ShapeText(array.shape), DTypeName(array.dtype),
        count && *count <= UINT64_MAX / item ? std::to_string(*count * item) : "too many"));
  }
  if (!static_shape.empty() && static_shape != array.shape) {
    return InvalidArgumentError(fmt::format("wrong shape for {}: expected {}, got {}",
                                            encoding.text(), ShapeText(static_shape),
                                            ShapeText(array.shape)));
  }
  if (!static_dtype) out += static_cast<char>(array.dtype);
  if (static_shape.empty()) {
    uint64_t largest = 0;
    for (uint64_t d : array.shape) largest = std::max(largest, d);
    const int w = largest < (1u << 8)      ? 0
                  : largest < (1u << 16)   ? 1
                  : largest < (1ull << 32) ? 2
                                           : 3;
    out += static_cast<char>((array.shape.size() << 2) | static_cast<size_t>(w));
    for (uint64_t d : array.shape) {
      switch (w) {
        case 0:
          AppendLE<uint8_t>(out, static_cast<uint8_t>(d));
          break;
        case 1:
          AppendLE<uint16_t>(out, static_cast<uint16_t>(d));
          break;
        case 2:
          AppendLE<uint32_t>(out, static_cast<uint32_t>(d));
          break;
        default:
          AppendLE<uint64_t>(out, d);
          break;
      }
    }
  }
  out += array.data;
  return Status::Ok();
}

Result<NdArray> DecodeNdArray(const ColumnEncoding& encoding, std::string_view payload) {
  NdArray array;
  size_t pos = 0;
  if (encoding.static_dtype()) {
    array.dtype = *encoding.static_dtype();
  } else {
    if (payload.empty()) return DataLossError("ndarray payload is empty (no dtype byte)");
    const auto dtype = DTypeFromCode(static_cast<uint8_t>(payload[0]));
    if (!dtype) {
      return DataLossError(fmt::format("ndarray payload has unknown dtype code {}",
                                       static_cast<unsigned>(static_cast<uint8_t>(payload[0]))));
    }
    array.dtype = *dtype;
    pos = 1;
  }
  if (!encoding.static_shape().empty()) {
    array.shape = encoding.static_shape();
  } else {
    if (pos >= payload.size()) return DataLossError("ndarray payload ends before its shape byte");
    const uint8_t shape_byte = static_cast<uint8_t>(payload[pos++]);
    const size_t ndim = shape_byte >> 2;
    const size_t width = size_t{1} << (shape_byte & 3);
    if (ndim == 0) return DataLossError("ndarray payload declares 0 dimensions");
    if (payload.size() - pos < ndim * width) {
      return DataLossError(
          fmt::format("ndarray payload ends inside its shape ({} dimensions of {} "
                      "bytes, {} bytes left)",
                      ndim, width, payload.size() - pos));
    }
    array.shape.resize(ndim);
    for (size_t k = 0; k < ndim; ++k) {
      const char* p = payload.data() + pos + k * width;
      switch (width) {
        case 1:
          array.shape[k] = LoadLE<uint8_t>(p);
          break;
        case 2:
          array.shape[k] = LoadLE<uint16_t>(p);
          break;
        case 4:
          array.shape[k] = LoadLE<uint32_t>(p);
          break;
        default:
          array.shape[k] = LoadLE<uint64_t>(p);
          break;
      }
    }
    pos += ndim * width;
  }
  const size_t item = DTypeSize(array.dtype);
  const size_t values = payload.size() - pos;
  const auto count = ElementCount(array.shape);
  if (!count || *count > values / item || *count * item != values) {
    return DataLossError(
        fmt::format("ndarray payload holds {} value bytes but shape {} of {} "
                    "needs {}",
                    values, ShapeText(array.shape), DTypeName(array.dtype),
                    count && *count <= UINT64_MAX / item ? std::to_string(*count * item)
                                                         : std::string("more than 2^64")));
  }
  array.data.assign(payload.substr(pos));
  return array;
}

}  // namespace ferry::internal_format
