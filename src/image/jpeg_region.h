// DecodeJpegRegion: decode only a rectangle of a JPEG, as a random crop needs.
//
// Through libjpeg's own API (TurboJPEG 2.1 cannot crop): rows above the rectangle are skipped
// (jpeg_skip_scanlines: entropy-decoded, not transformed), columns outside it are not
// transformed (jpeg_crop_scanline, which widens the band to whole iMCUs), and decoding stops
// after the last row. Optionally at 1/2, 1/4 or 1/8 scale (the rectangle is then in scaled
// pixels). The pixels are those of a full decode of the same scale, cut to the rectangle.
//
// Grayscale and YCbCr/RGB JPEGs only ("L" and "RGB"); others (CMYK) are kUnimplemented, for the
// caller to fall back to DecodeJpeg. Errors as DecodeJpeg's: kDataLoss for corrupt or
// truncated data (a stream that ends early is an error, as in Pillow), with libjpeg's message.
//
// Thread-safety: stateless; any number of calls at once.
#pragma once

#include <cstdint>
#include <string_view>

#include "ferry/format/value.h"
#include "ferry/result.h"

namespace ferry {

struct JpegRegion {
  uint32_t x = 0;
  uint32_t y = 0;
  uint32_t width = 0;
  uint32_t height = 0;
};

/// The pixels of `region` (in the coordinates of the image scaled by 1/scale_denominator;
/// kInvalidArgument when it is not inside it or empty).
Result<PilImage> DecodeJpegRegion(std::string_view data, JpegRegion region,
                                  int scale_denominator = 1);

}  // namespace ferry
