// The structured payload codecs behind EncodeValue/DecodeValue: ndarray (spec §6.8), pil
// (§6.6) and the image lists (§6.7), plus Python's Decimal and int text forms (§6.3).
// Internal to the format layer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ferry/format/encoding.h"
#include "ferry/format/value.h"
#include "ferry/result.h"

namespace ferry::internal_format {

Status EncodeNdArray(const ColumnEncoding& encoding, const NdArray& array, std::string& out);
Result<NdArray> DecodeNdArray(const ColumnEncoding& encoding, std::string_view payload);

/// Bytes of PIL's tobytes() for a known mode, or nullopt for a mode we do not know.
std::optional<uint64_t> PilPixelBytes(std::string_view mode, uint32_t width, uint32_t height);
Status EncodePil(const PilImage& image, std::string& out);
Result<PilImage> DecodePil(std::string_view payload);

Status EncodeImageList(const ColumnEncoding& encoding, const ValueList& items, std::string& out);
Result<ValueList> DecodeImageList(const ColumnEncoding& encoding, std::string_view payload);

/// Python `str(Decimal(text))`, or nullopt when `text` is not Decimal syntax.
std::optional<std::string> CanonicalDecimalText(std::string_view text);

/// Python `str(int(text))` (sign, digits, underscores, surrounding whitespace), or nullopt.
std::optional<std::string> CanonicalIntText(std::string_view text);

}  // namespace ferry::internal_format
