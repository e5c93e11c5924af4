// JPEG probe, decode and encode through libjpeg-turbo's TurboJPEG API, giving what Pillow gives.
//
// Decoding must match `Image.open(jpeg)` followed by `.mode` / `.tobytes()` in Pillow 9.4, which
// decodes with libjpeg(-turbo) too:
//   * The mode follows the number of components in the frame header, as Pillow's SOF handler
//     does: 1 -> "L", 3 -> "RGB" (YCbCr or Adobe RGB), 4 -> "CMYK" (CMYK or YCCK). Anything else,
//     and any precision other than 8 bits, is an error, as it is in Pillow.
//   * Pixels use the accurate integer IDCT and fancy upsampling (libjpeg's defaults, which Pillow
//     keeps), so with the same libjpeg-turbo build the bytes are identical to Pillow's.
//   * CMYK pixels are inverted (255 - v): Pillow always reads 4-component JPEGs with its
//     "CMYK;I" raw mode, assuming Adobe's inverted convention, and so do we.
//   * Recoverable corruption that libjpeg only warns about (extraneous bytes, a damaged entropy
//     segment) decodes, as in Pillow; a stream that ends early is kDataLoss, as Pillow's "image
//     file is truncated" is an error.
// Encoding writes a baseline JFIF with libjpeg's default (Annex K) tables scaled by quality and
// the accurate DCT, the settings Pillow's `save(format="JPEG", quality=q)` uses.
//
// Errors: kDataLoss for data that is not a decodable JPEG (the message carries libjpeg's own
// text), kResourceExhausted above kMaxImagePixels, kInvalidArgument for bad encode arguments.
// No input, however malformed, crashes or reads out of bounds.
//
// Thread-safety: every function is stateless and may be called from any number of threads at
// once; each call creates and destroys its own TurboJPEG handle.
#pragma once

#include <string>
#include <string_view>

#include "ferry/format/value.h"
#include "ferry/result.h"
#include "image/image_info.h"

namespace ferry {

/// Chroma subsampling of an RGB JPEG (ignored for "L").
enum class JpegSubsampling {
  k444,  // full-resolution chroma
  k422,  // chroma halved horizontally
  k420,  // chroma halved in both directions: Pillow's and libjpeg's default
};

/// Width, height and PIL mode from the frame header; does not decode the scan.
/// \returns kDataLoss when no valid SOI ... SOF sequence is found.
Result<ImageInfo> ProbeJpeg(std::string_view data);

/// The pixels Pillow's tobytes() gives, in the mode ProbeJpeg reports ("L", "RGB" or "CMYK").
/// With `scale_denominator` 2, 4 or 8 the image is decoded at that fraction of its size by
/// libjpeg's scaled IDCT (each dimension rounded up): far less work when the image is about to
/// be shrunk anyway, and no longer Pillow's pixels. kInvalidArgument for another denominator.
Result<PilImage> DecodeJpeg(std::string_view data, int scale_denominator = 1);

/// Encodes an "L" or "RGB" image as a baseline JPEG.
/// \param quality 1..100, Pillow's scale (its default is 75).
/// \returns kInvalidArgument for another mode, a pixel buffer of the wrong size, an empty image
///          or one wider or taller than JPEG's 65500 limit, or a quality outside 1..100.
Result<std::string> EncodeJpeg(const PilImage& image, int quality = 75,
                               JpegSubsampling subsampling = JpegSubsampling::k420);

}  // namespace ferry
