// Image payloads (spec §6.6, §6.7):
//   pil:                  u32 width, u32 height, u32 mode_len, mode, raw pixels (PIL tobytes)
//   list[pil|jpeg|png]:   u32 reserved (0), u32 count, u32 size[count], element payloads
//   jpeg_array/jpegarray: u32 count, u32 size[count], element payloads
// JPEG and PNG files are stored as they are; decoding pixels belongs to the image layer.
#include <fmt/format.h>

#include "base/int128.h"
#include "base/little_endian.h"
#include "format/codecs.h"

namespace ferry::internal_format {

std::optional<uint64_t> PilPixelBytes(std::string_view mode, uint32_t width, uint32_t height) {
  // In 128 bits: 4 x (2^32-1)^2 overflows 64, and a wrapped size could match a tiny payload.
  // A size past 2^64 saturates to UINT64_MAX, which no payload can have.
  const UInt128 w = width, h = height;
  const auto bytes = [](UInt128 n) -> uint64_t {
    return n > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(n);
  };
  if (mode == "1") return bytes((w + 7) / 8 * h);  // packed, each row padded to a whole byte
  if (mode == "L" || mode == "P") return bytes(w * h);
  if (mode == "LA" || mode == "La" || mode == "PA" || mode == "I;16" || mode == "I;16L" ||
      mode == "I;16B" || mode == "I;16N") {
    return bytes(2 * w * h);
  }
  if (mode == "RGB" || mode == "YCbCr" || mode == "LAB" || mode == "HSV") return bytes(3 * w * h);
  if (mode == "RGBA" || mode == "RGBa" || mode == "RGBX" || mode == "CMYK" || mode == "I" ||
      mode == "F") {
    return bytes(4 * w * h);
  }
  return std::nullopt;
}

Status EncodePil(const PilImage& image, std::string& out) {
  if (image.mode.empty()) return InvalidArgumentError("pil image has an empty mode");
  const auto expected = PilPixelBytes(image.mode, image.width, image.height);
  if (expected && *expected != image.pixels.size()) {
    return InvalidArgumentError(
        fmt::format("pil image {}x{} in mode {} needs {} pixel bytes, got {}", image.width,
                    image.height, image.mode, *expected, image.pixels.size()));
  }
  AppendLE<uint32_t>(out, image.width);
  AppendLE<uint32_t>(out, image.height);
  AppendLE<uint32_t>(out, static_cast<uint32_t>(image.mode.size()));
  out += image.mode;
  out += image.pixels;
  return Status::Ok();
}

Result<PilImage> DecodePil(std::string_view payload) {
  if (payload.size() < 12) {
    return DataLossError(
        fmt::format("pil payload of {} bytes is shorter than its 12-byte header", payload.size()));
  }
  PilImage image;
  image.width = LoadU32LE(payload.data());
  image.height = LoadU32LE(payload.data() + 4);
  const uint32_t mode_len = LoadU32LE(payload.data() + 8);
  if (mode_len == 0 || mode_len > payload.size() - 12) {
    return DataLossError(fmt::format("pil payload declares a mode of {} bytes in {} bytes",
                                     mode_len, payload.size()));
  }
  image.mode.assign(payload.substr(12, mode_len));
  image.pixels.assign(payload.substr(12 + mode_len));
  const auto expected = PilPixelBytes(image.mode, image.width, image.height);
  if (expected && *expected != image.pixels.size()) {
    return DataLossError(
        fmt::format("pil image {}x{} in mode {} needs {} pixel bytes, payload has {}", image.width,
                    image.height, image.mode, *expected, image.pixels.size()));
  }
  return image;
}

Status EncodeImageList(const ColumnEncoding& encoding, const ValueList& items, std::string& out) {
  const bool reserved = encoding.kind() != EncodingKind::kJpegArray;
  std::vector<std::string> payloads;
  payloads.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const Value& item = items[i];
    std::string payload;
    if (const auto* bytes = std::get_if<Bytes>(&item)) {
      payload = bytes->data;
    } else if (const auto* image = std::get_if<PilImage>(&item);
               image != nullptr && encoding.kind() == EncodingKind::kListPil) {
      FERRY_RETURN_IF_ERROR(EncodePil(*image, payload).WithContext(fmt::format("element {}", i)));
    } else {
      return InvalidArgumentError(fmt::format(
          "element {} of a {} value is {}; expected {}", i, encoding.text(), ValueKindName(item),
          encoding.kind() == EncodingKind::kListPil ? "pil image or bytes" : "encoded bytes"));
    }
    if (payload.size() > UINT32_MAX) {
      return InvalidArgumentError(fmt::format("element {} is larger than 4 GiB", i));
    }
    payloads.push_back(std::move(payload));
  }
  if (reserved) AppendLE<uint32_t>(out, 0);
  AppendLE<uint32_t>(out, static_cast<uint32_t>(payloads.size()));
  for (const auto& p : payloads) AppendLE<uint32_t>(out, static_cast<uint32_t>(p.size()));
  for (const auto& p : payloads) out += p;
  return Status::Ok();
}

namespace {

Result<std::vector<std::string_view>> SplitImageListImpl(std::string_view payload, bool reserved) {
  const size_t header = reserved ? 8 : 4;
  if (payload.size() < header) {
    return DataLossError(
        fmt::format("image list payload of {} bytes is shorter than its header", payload.size()));
  }
  const uint32_t count = LoadU32LE(payload.data() + header - 4);
  if (count > (payload.size() - header) / 4) {
    return DataLossError(
        fmt::format("image list declares {} elements but {} bytes cannot hold "
                    "their size table",
                    count, payload.size()));
  }
  size_t pos = header + 4 * size_t{count};
  std::vector<std::string_view> parts;
  parts.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t size = LoadU32LE(payload.data() + header + 4 * size_t{i});
    if (size > payload.size() - pos) {
      return DataLossError(
          fmt::format("image list element {} of {} bytes runs past the payload "
                      "({} bytes left)",
                      i, size, payload.size() - pos));
    }
    parts.push_back(payload.substr(pos, size));
    pos += size;
  }
  if (pos != payload.size()) {
    return DataLossError(fmt::format("image list payload has {} bytes after its last element",
                                     payload.size() - pos));
  }
  return parts;
}

}  // namespace

Result<ValueList> DecodeImageList(const ColumnEncoding& encoding, std::string_view payload) {
  const bool reserved = encoding.kind() != EncodingKind::kJpegArray;
  FERRY_ASSIGN_OR_RETURN(auto parts, SplitImageListImpl(payload, reserved));
  ValueList items;
  items.reserve(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    if (encoding.kind() == EncodingKind::kListPil) {
      auto image = DecodePil(parts[i]);
      if (!image) return image.error().WithContext(fmt::format("element {}", i));
      items.emplace_back(std::move(*image));
    } else {
      items.emplace_back(Bytes{std::string(parts[i])});
    }
  }
  return items;
}

}  // namespace ferry::internal_format

namespace ferry {
Result<std::vector<std::string_view>> SplitImageList(std::string_view payload,
                                                     bool with_reserved_word) {
  return internal_format::SplitImageListImpl(payload, with_reserved_word);
}
}  // namespace ferry
