// PNG probe, decode and encode through libpng, giving what Pillow 9.4 gives.
//
// DecodePng reproduces `Image.open(png)` then `.mode` / `.tobytes()` in Pillow 9.4 (its
// PngImagePlugin _MODES table, checked by hand against Pillow for every row below):
//
//   colour type      bit depth  mode    tobytes()
//   gray             1          "1"     packed 8 pixels a byte, MSB first, each row padded to a
//                                       byte with ZERO bits (the PNG's own padding is dropped)
//   gray             2, 4       "L"     one byte a pixel, scaled to 0..255 (x85, x17)
//   gray             8          "L"     as stored
//   gray             16         "I"     4 bytes a pixel: the 16-bit value as a little-endian
//                                       int32 (not "I;16": Pillow 9.4 widens 16-bit gray to I)
//   gray + alpha     8          "LA"    as stored
//   gray + alpha     16         "RGBA"  L, L, L, A from the high bytes (Pillow has no LA;16B->LA
//                                       unpacker, so it widens to RGBA)
//   RGB              8, 16      "RGB"   16-bit samples keep their high byte
//   RGBA             8, 16      "RGBA"  16-bit samples keep their high byte
//   palette          1, 2, 4, 8 "P"     palette indices, one byte each (the palette itself and
//                                       any tRNS are not part of tobytes())
//
// Like Pillow, the decoder applies no gamma, no sBIT shift and no tRNS-to-alpha expansion: a
// tRNS chunk never changes the mode or the pixels. Interlaced (Adam7) images are deinterlaced.
// Chunks after the image data are not read, so a missing IEND is not an error (Pillow ignores
// it too); a CRC error in a critical chunk is.
//
// Errors: kDataLoss for data that is not a decodable PNG (the message carries libpng's text),
// kResourceExhausted above kMaxImagePixels, kInvalidArgument for bad encode arguments. A file
// that declares more pixel data than its size could possibly inflate to (deflate expands at most
// 1032:1) is kDataLoss before any pixel buffer is allocated.
//
// Thread-safety: every function is stateless and may be called from any number of threads at
// once; each call owns its libpng structures. libpng's setjmp/longjmp error path is confined to
// small functions that hold no C++ objects with destructors (see png_codec.cc).
#pragma once

#include <string>
#include <string_view>

#include "ferry/format/value.h"
#include "ferry/result.h"
#include "image/image_info.h"

namespace ferry {

/// Width, height and PIL mode from the chunks before the image data; does not inflate it.
Result<ImageInfo> ProbePng(std::string_view data);

/// The pixels Pillow 9.4's tobytes() gives, in the mode ProbePng reports.
Result<PilImage> DecodePng(std::string_view data);

/// Encodes an 8-bit "L", "LA", "RGB" or "RGBA" image as a non-interlaced PNG with libpng's
/// adaptive filtering.
/// \param compression_level zlib level 0..9; 6 is Pillow's default compress_level.
/// \returns kInvalidArgument for another mode, a pixel buffer of the wrong size, an empty image
///          or a level outside 0..9.
Result<std::string> EncodePng(const PilImage& image, int compression_level = 6);

}  // namespace ferry
