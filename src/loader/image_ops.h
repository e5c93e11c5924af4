// Pixel operations of the native loader, on 8-bit RGB images, with Pillow's and torchvision's
// semantics where a Python pipeline would use them:
//   * ToRgb is PIL's convert("RGB") for the modes the decoders return (L, LA, RGB, RGBA, CMYK;
//     alpha is dropped, CMYK as Pillow's cmyk2rgb);
//   * Resize is PIL's Image.resize(size, BILINEAR, box=...): a separable, antialiased triangle
//     filter (support scaled by the shrink factor), horizontal pass then vertical, weights in
//     22-bit fixed point and an 8-bit intermediate - the same arithmetic as Pillow 9's
//     ImagingResample, so results match it to the last bit or within one unit;
//   * Crop is PIL's crop: a box partly outside the image is filled with zeros, as torchvision's
//     CenterCrop pads a small image;
//   * FlipHorizontal mirrors each row.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <vector>

#include "ferry/format/value.h"
#include "ferry/result.h"

namespace ferry::internal_loader {

struct RgbImage {
  uint32_t width = 0;
  uint32_t height = 0;
  std::vector<uint8_t> pixels;  // height rows of width x 3 bytes

  const uint8_t* row(uint32_t y) const { return pixels.data() + size_t{y} * width * 3; }
  uint8_t* row(uint32_t y) { return pixels.data() + size_t{y} * width * 3; }
};

/// A decoded image as RGB; kInvalidArgument naming a mode it cannot convert.
Result<RgbImage> ToRgb(const PilImage& image);

/// Pixels [x, x + w) x [y, y + h) of `image`; what lies outside is black.
RgbImage Crop(const RgbImage& image, int64_t x, int64_t y, uint32_t w, uint32_t h);

/// The region [x0, x1) x [y0, y1) of `image` (fractional bounds allowed) resized to
/// out_w x out_h with Pillow's BILINEAR filter.
RgbImage Resize(const RgbImage& image, uint32_t out_w, uint32_t out_h, double x0, double y0,
                double x1, double y1);
inline RgbImage Resize(const RgbImage& image, uint32_t out_w, uint32_t out_h) {
  return Resize(image, out_w, out_h, 0, 0, image.width, image.height);
}

void FlipHorizontal(RgbImage& image);

}  // namespace ferry::internal_loader
