// ImagePipeline: decode one encoded image and transform it into a fixed-size RGB output, as a
// torchvision pipeline over PIL would (Resize, CenterCrop, RandomResizedCrop,
// RandomHorizontalFlip), then lay it out as uint8 HWC or normalized float32 CHW.
//
// Randomness comes from a per-sample generator seeded by (seed, epoch, sample id): a sample gets
// the same crop and flip whichever thread transforms it, and a resumed run repeats it exactly.
//
// JPEGs use libjpeg's DCT scaling when the first transform is a Resize or RandomResizedCrop that
// shrinks by 2x or more (the decode then does a fraction of the work); `dct_scaling = false`
// decodes at full size, which is what makes the output equal Pillow's bit for bit. A
// RandomResizedCrop first also decodes only the rows and iMCU columns of its crop (the pixels
// are those of a full decode: jpeg_region.h).
//
// Thread-safety: an ImagePipeline is immutable after Create; Apply may run on many threads.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ferry/result.h"
#include "loader/image_ops.h"
#include "order/random.h"

namespace ferry::internal_loader {

struct ImageTransform {
  enum class Kind { kResize, kCenterCrop, kRandomResizedCrop, kRandomHorizontalFlip };
  Kind kind = Kind::kResize;
  // Resize: height 0 means "shorter side = width" (torchvision's Resize(int)).
  uint32_t width = 0;
  uint32_t height = 0;
  std::array<double, 2> scale{0.08, 1.0};         // RandomResizedCrop
  std::array<double, 2> ratio{3.0 / 4, 4.0 / 3};  // RandomResizedCrop
  double p = 0.5;                                 // RandomHorizontalFlip
};

struct ImagePipelineOptions {
  std::vector<ImageTransform> transforms;
  bool to_float = false;                     // float32 in [0, 1] (then normalized) instead of uint8
  bool channels_first = false;               // CHW instead of HWC
  std::optional<std::array<float, 3>> mean;  // Normalize (to_float only)
  std::optional<std::array<float, 3>> std;
  bool dct_scaling = true;
};

/// The generator of one sample's random transforms (order/random.h's, keyed by seed, epoch and
/// sample), with the draws torchvision makes.
class SampleRng {
 public:
  SampleRng(uint64_t seed, uint64_t epoch, uint64_t sample);
  uint64_t Next();
  double Uniform(double lo, double hi);               // [lo, hi)
  int64_t Integer(int64_t lo, int64_t hi_exclusive);  // [lo, hi)

 private:
  internal_order::Rng rng_;
};

class ImagePipeline {
 public:
  /// kInvalidArgument when the transforms do not end in a fixed size (a batch needs one) or a
  /// parameter is out of range.
  static Result<ImagePipeline> Create(ImagePipelineOptions options);

  const ImagePipelineOptions& options() const { return options_; }
  uint32_t out_width() const { return out_width_; }
  uint32_t out_height() const { return out_height_; }
  /// Bytes of one output: width x height x 3 x (1 or 4).
  size_t out_bytes() const;

  /// Decodes `encoded` (JPEG or PNG), transforms it and writes out_bytes() bytes to `out`.
  Status Apply(std::string_view encoded, SampleRng& rng, uint8_t* out) const;

  /// The transforms alone (from the `first`-th), on a decoded image.
  Result<RgbImage> Transform(RgbImage image, SampleRng& rng, size_t first = 0) const;

 private:
  ImagePipeline() = default;
  void Write(const RgbImage& image, uint8_t* out) const;
  // A first RandomResizedCrop done while decoding a JPEG; nullopt for JPEGs it cannot crop.
  Result<std::optional<RgbImage>> CropWhileDecoding(std::string_view encoded, SampleRng& rng) const;

  ImagePipelineOptions options_;
  uint32_t out_width_ = 0;
  uint32_t out_height_ = 0;
};

}  // namespace ferry::internal_loader
