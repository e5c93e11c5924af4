// ImageInfo: what a codec's Probe* learns from an encoded image's header, without decoding it.
//
// The mode is the PIL mode string Pillow 9.4 reports after Image.open() ("L", "RGB", "P", ...),
// and it is exactly the mode the matching Decode* returns, so a caller can size buffers or
// route by mode before paying for the decode.
//
// Both codecs refuse images above kMaxImagePixels, as Pillow's decompression-bomb check does, so
// a few hundred corrupt bytes can never make a decoder allocate gigabytes.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>

namespace ferry {

struct ImageInfo {
  uint32_t width = 0;
  uint32_t height = 0;
  std::string mode;  // PIL mode: "1", "L", "LA", "P", "I", "RGB", "RGBA", "CMYK"
  friend bool operator==(const ImageInfo&, const ImageInfo&) = default;
};

/// Pillow raises DecompressionBombError above 2 * Image.MAX_IMAGE_PIXELS (2 * 89478485) pixels;
/// we refuse the same images (kResourceExhausted) before allocating anything.
inline constexpr uint64_t kMaxImagePixels = 2 * uint64_t{89478485};

}  // namespace ferry
