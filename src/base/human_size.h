// Human-readable byte sizes, as Mosaic Streaming accepts them ("256mb", "1.5kb", "8192").
//
// Parsing follows the reference's rules exactly (spec §5.2): a decimal number, optionally
// fractional before a multi-letter suffix, with an optional case-insensitive suffix
// b/kb/mb/gb/tb/pb/eb/zb/yb in powers of 1024; surrounding whitespace is ignored; exponent forms
// ("1e3") and negative values are rejected. The result is truncated to a whole number of bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ferry/result.h"

namespace ferry {

/// "64mb" -> 67108864. kInvalidArgument names the text when it is not a size or overflows u64.
Result<uint64_t> ParseHumanSize(std::string_view text);

/// 67108864 -> "64.0 MiB"; below 1 KiB -> "512 B".
std::string FormatBytes(uint64_t bytes);

}  // namespace ferry
