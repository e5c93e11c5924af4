// The JSON form of decoded sample values that `ferry cat` prints, which is the form the MDS
// fixtures' expected.json uses (shared/fixtures/mds/README.md):
//   bytes -> lowercase hex; str -> string; integers -> numbers; floats -> Python repr widened to
//   double, non-finite as "nan"/"inf"/"-inf"; str_int -> decimal string; str_decimal -> its
//   text; json -> the stored JSON itself; ndarray -> {"dtype", "shape", "data"};
//   jpeg -> {"sha256", "num_bytes", "width", "height", "mode"}; png -> the same plus
//   "pixels_sha256"; pil -> {"width", "height", "mode", "pixels_sha256"}; image lists -> arrays
//   of those; pkl -> {"pickle_hex"} (never unpickled).
// Keys and separators follow Python's json.dumps with ensure_ascii.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "ferry/format/encoding.h"
#include "ferry/format/index.h"
#include "ferry/result.h"

namespace ferry {

/// Appends the JSON form of one stored payload.
Status AppendFieldJson(const ColumnEncoding& encoding, std::string_view payload, std::string& out);

/// {"column": value, ...} in column order, one line without a trailing newline.
Result<std::string> SampleJsonLine(const ShardConfig& config,
                                   std::span<const std::string_view> fields);

}  // namespace ferry
